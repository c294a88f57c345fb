// node_mappings and kernel_spans (core/trace/provenance.h), and `kiln-cli
// trace provenance`: which nodes each kernel was made from and where it lies
// in the generated code, for Python wrappers, AOTInductor's C++ wrapper and
// kernels with debug handles; a training compile's forward and backward kept
// apart; damaged mappings named by their line. Our own logs and code.
#include "test_support.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>

#include <fstream>

#include "core/trace/provenance.h"
#include "core/trace/reader.h"
#include "trace_log_util.h"

using namespace kiln;
using namespace kiln::trace;

namespace {

using test::kPythonCode;
using test::training_log;

const std::string kCppWrapper =
    "extern \"C\" void cpp_fused_add_0(float* out);\n"                            // 1: a declaration
    "/*\n"                                                                        // 2
    "def cpp_fused_add_0(x):\n"                                                   // 3: quoted source
    "*/\n"                                                                        // 4
    "static inline void call_triton_poi_fused_mul_1(int n) {\n"                   // 5
    "    launchKernel(kernels_.triton_poi_fused_mul_1, n);\n"                     // 6
    "}\n"                                                                         // 7
    "void AOTInductorModel::run_impl(AtenTensorHandle* inputs) {\n"              // 8
    "    cpp_fused_add_0(buf0);\n"                                                // 9
    "    call_triton_poi_fused_mul_1(200);\n"                                     // 10
    "}\n";                                                                        // 11

}  // namespace

class TestTraceProvenance : public QObject {
  Q_OBJECT
 private slots:
  void python_wrapper_lines() {
    auto spans = kernel_spans(kPythonCode, {"triton_poi_fused_relu_0", "triton_poi_fused_relu_0:2", "extern_kernels.mm"});
    const KernelSpan& relu = spans.at("triton_poi_fused_relu_0");
    QCOMPARE(relu.def_first, 2);
    QCOMPARE(relu.def_last, 7);
    QCOMPARE(relu.launches, std::vector<int>({10, 12}));  // not 11 (a comment), not 13 (another kernel)
    QCOMPARE(spans.at("triton_poi_fused_relu_0:2").launches, std::vector<int>({12}));  // the launch after its handle
    const KernelSpan& mm = spans.at("extern_kernels.mm");
    QCOMPARE(mm.def_first, 0);
    QCOMPARE(mm.launches, std::vector<int>({9}));
    QCOMPARE(relu.lines(), std::vector<int>({2, 3, 4, 5, 6, 7, 10, 12}));
    QCOMPARE(kernels_at(spans, 5), std::vector<std::string>({"triton_poi_fused_relu_0", "triton_poi_fused_relu_0:2"}));
    QCOMPARE(kernels_at(spans, 9), std::vector<std::string>({"extern_kernels.mm"}));
    QVERIFY(kernels_at(spans, 1).empty());
  }

  void cpp_wrapper_lines() {
    auto spans = kernel_spans(kCppWrapper, {"cpp_fused_add_0", "triton_poi_fused_mul_1"});
    const KernelSpan& add = spans.at("cpp_fused_add_0");
    QCOMPARE(add.def_first, 0);  // line 1 declares it; line 3 is inside a comment
    QCOMPARE(add.launches, std::vector<int>({9}));
    const KernelSpan& mul = spans.at("triton_poi_fused_mul_1");
    QCOMPARE(mul.def_first, 5);  // the call_ launcher and its body
    QCOMPARE(mul.def_last, 7);
    QCOMPARE(mul.launches, std::vector<int>({10}));  // from run_impl on
  }

  void forward_and_backward_apart() {
    QTemporaryDir tmp;
    const std::string path = tmp.path().toStdString() + "/train.log";
    std::ofstream(path) << training_log();
    auto t = open_trace(path);
    QVERIFY2(t.ok(), t.status().to_string().c_str());
    QVERIFY(t->diagnostics.empty());
    auto m = node_mappings(*t, t->entries.front());
    QVERIFY2(m.ok(), m.status().to_string().c_str());
    QCOMPARE(m->size(), size_t(2));
    const NodeMappings& fw = (*m)[0];
    const NodeMappings& bw = (*m)[1];
    QCOMPARE(fw.output_code, std::string("inductor_output_code"));
    QCOMPARE(bw.output_code, std::string("inductor_output_code#2"));
    QCOMPARE(fw.post_grad_graph, std::string("after_post_grad_graph"));
    QCOMPARE(bw.post_grad_graph, std::string("after_post_grad_graph#2"));
    QCOMPARE(fw.pre_grad_graph, std::string("before_pre_grad_graph"));
    QCOMPARE(fw.kernel_to_post.at("triton_poi_fused_relu_0"), std::vector<std::string>({"relu"}));
    QVERIFY(!fw.kernel_to_post.count("extern_kernels.mm"));
    QCOMPARE(bw.post_to_pre.at("mm"), std::vector<std::string>({"linear"}));
  }

  // The older artifacts: a kernel map, and post-grad nodes with objects for
  // their pre-grad nodes; the missing directions are derived.
  void older_artifacts() {
    const std::string at = test::compile_ids(0, 0);
    const std::string log = test::log_record("{\"dynamo_start\": {\"stack\": []}, " + at + "}") +
                            test::artifact_record("inductor_triton_kernel_to_post_grad_nodes", "json", "{\"k0\": [\"relu\", \"relu\"]}", at) +
                            test::artifact_record("inductor_post_to_pre_grad_nodes", "json",
                                                  "{\"relu\": [{\"name\": \"x\", \"target\": \"aten.relu\"}, 7]}", at);
    Trace t = read_trace_text(log, "old.log");
    auto m = node_mappings(t, t.entries.front());
    QVERIFY(m.ok());
    QCOMPARE(m->size(), size_t(1));
    const NodeMappings& g = m->front();
    QCOMPARE(g.kernel_to_post.at("k0"), std::vector<std::string>({"relu"}));  // named twice, kept once
    QCOMPARE(g.post_to_kernel.at("relu"), std::vector<std::string>({"k0"}));
    QCOMPARE(g.post_to_pre.at("relu"), std::vector<std::string>({"x", "7"}));
    QCOMPARE(g.pre_to_post.at("x"), std::vector<std::string>({"relu"}));
  }

  void damaged_mapping_is_named() {
    const std::string at = test::compile_ids(0, 0);
    const std::string log = test::log_record("{\"dynamo_start\": {\"stack\": []}, " + at + "}") +
                            test::artifact_record("inductor_provenance_tracking_node_mappings", "json", "{\"preToPost\": [1, 2]}", at);
    Trace t = read_trace_text(log, "bad.log");
    auto m = node_mappings(t, t.entries.front());
    QVERIFY(!m.ok());
    QCOMPARE(m.status().where().file, std::string("bad.log"));
    QCOMPARE(m.status().where().line, 2);
  }

  void cli() {
    QTemporaryDir tmp;
    const QString path = tmp.path() + "/train.log";
    std::ofstream(path.toStdString()) << training_log();
    test::CliRun text = test::run_cli({"trace", "provenance", path, "--compile-id", "0/0"}, 120000);
    QCOMPARE(text.code, 0);
    QVERIFY2(text.out.contains("triton_poi_fused_relu_0: definition 2-7; launches 10, 12"), text.out.constData());
    QVERIFY(text.out.contains("extern_kernels.mm: no definition in it; launches 9"));
    test::CliRun json = test::run_cli({"trace", "provenance", path, "--compile-id", "0/0", "--json"}, 120000);
    QCOMPARE(json.code, 0);
    const QJsonArray groups = QJsonDocument::fromJson(json.out).object()["mappings"].toArray();
    QCOMPARE(groups.size(), 2);
    const QJsonObject k = groups[0].toObject()["kernels"].toArray()[0].toObject();
    QCOMPARE(k["kernel"].toString(), QString("triton_poi_fused_relu_0"));
    QCOMPARE(k["definition"].toArray()[1].toInt(), 7);
    QCOMPARE(k["pre_grad_nodes"].toArray()[0].toString(), QString("x"));
    QCOMPARE(groups[1].toObject()["output_code"].toString(), QString("inductor_output_code#2"));

    const QString plain = tmp.path() + "/plain.log";
    std::ofstream(plain.toStdString()) << test::log_record("{\"dynamo_start\": {\"stack\": []}, " + test::compile_ids(0, 0) + "}");
    test::CliRun none = test::run_cli({"trace", "provenance", plain, "--compile-id", "0/0"}, 120000);
    QCOMPARE(none.code, 3);
    QVERIFY(none.err.contains("logs no provenance"));
  }
};

QTEST_GUILESS_MAIN(TestTraceProvenance)
#include "test_trace_provenance.moc"
