// The other dumps: TORCH_COMPILE_DEBUG folders, minifier repro files and
// their load_args(), and open_trace() telling the kinds apart.
#include "test_support.h"

#include <QTemporaryDir>

#include <filesystem>
#include <fstream>

#include "core/graph/graph.h"
#include "core/trace/reader.h"
#include "core/trace/summary.h"

using namespace kiln;
using namespace kiln::trace;
namespace fs = std::filesystem;

namespace {

Trace open_ok(const std::string& path) {
  auto t = open_trace(path);
  if (!t) qFatal("%s", t.status().to_string().c_str());
  return std::move(*t);
}

std::string debug_run(const std::string& scenario) {
  for (const auto& de : fs::directory_iterator(test::reference_dir() + "/compile_debug/" + scenario)) return de.path().string();
  qFatal("no run folder in %s", scenario.c_str());
}

std::vector<std::string> names(const CompileEntry& e) {
  std::vector<std::string> out;
  for (const Artifact& a : e.artifacts) out.push_back(a.name);
  return out;
}

size_t ops(const Graph& g) {
  return count_nodes(g, OpKind::CallFunction) + count_nodes(g, OpKind::CallMethod) + count_nodes(g, OpKind::CallModule);
}

QString q(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

class TestTraceDumps : public QObject {
  Q_OBJECT
 private slots:
  void every_reference_debug_folder_reads_cleanly() {
    for (const auto& de : fs::directory_iterator(test::reference_dir() + "/compile_debug")) {
      Trace t = open_ok(de.path().string());
      QCOMPARE(int(t.kind), int(TraceKind::CompileDebug));
      QVERIFY(t.diagnostics.empty());
      QVERIFY(!t.entries.empty());
      for (const CompileEntry& e : t.entries)
        for (const Artifact& a : e.artifacts) {
          if (!a.graph) continue;
          auto g = t.graph(e, a.name);
          QVERIFY2(g.ok(), qPrintable(q(e.label + " " + a.name + ": " + g.status().to_string())));
        }
    }
  }

  void s02_debug_folder() {
    // The scenario folder, the run folder and its parent all open the same way.
    Trace t = open_ok(test::reference_dir() + "/compile_debug/s02_linear_relu");
    Trace run = open_ok(debug_run("s02_linear_relu"));
    QCOMPARE(t.entries.size(), size_t(1));
    QCOMPARE(run.entries.size(), size_t(1));
    const CompileEntry& e = t.entries[0];
    QCOMPARE(q(e.label), QString("model__0"));
    QVERIFY(t.find("model__0") == &e);
    std::vector<std::string> want = {"fx_graph_readable", "fx_graph_transformed", "ir_pre_fusion", "ir_post_fusion",
                                     "output_code", "fx_graph_runnable", "inductor_provenance_tracking_node_mappings"};
    QVERIFY(names(e) == want);
    auto readable = t.graph(e, "fx_graph_readable");
    QVERIFY(readable.ok());
    QCOMPARE(ops(**readable), size_t(4));  // permute, addmm, relu, le
    QCOMPARE(count_nodes(**readable, OpKind::Placeholder), size_t(3));
    auto runnable = t.graph(e, "fx_graph_runnable");
    QVERIFY(runnable.ok());
    QCOMPARE(ops(**runnable), size_t(4));
    QVERIFY(t.payload_text(e, "ir_post_fusion")->rfind("op0: ExternKernelSchedulerNode(ExternKernelOut)", 0) == 0);
    QVERIFY(t.payload_text(e, "output_code")->rfind("# AOT ID: ['0_forward']", 0) == 0);
    // The inputs come from fx_graph_runnable.py's load_args().
    QCOMPARE(e.inputs.size(), size_t(3));
    QCOMPARE(q(e.inputs[0].name), QString("primals_1"));
    QVERIFY((e.inputs[0].shape == std::vector<std::string>{"10", "100"}));
    QVERIFY((e.inputs[0].stride == std::vector<std::string>{"100", "1"}));
    QCOMPARE(q(e.inputs[0].dtype), QString("float32"));
    QVERIFY(e.inputs[0].is_leaf && !e.inputs[0].requires_grad);
    QCOMPARE(q(e.inputs[1].storage_bytes), QString("40"));
  }

  void s04_debug_folder_one_entry_per_compile() {
    Trace t = open_ok(test::reference_dir() + "/compile_debug/s04_recompiles");
    QCOMPARE(t.entries.size(), size_t(8));
    for (int i = 0; i < 8; ++i) QCOMPARE(q(t.entries[size_t(i)].label), QString("model__%1").arg(i));
    // model__1 was compiled with a dynamic first size.
    const CompileEntry* e = t.find("model__1");
    QCOMPARE(e->inputs.size(), size_t(2));
    QCOMPARE(q(e->inputs[0].kind), QString("symint"));
    QCOMPARE(q(e->inputs[0].value), QString("6"));
    QCOMPARE(q(e->inputs[1].kind), QString("tensor"));
    QVERIFY((e->inputs[1].shape == std::vector<std::string>{"s77", "8"}));
    QVERIFY((e->inputs[1].stride == std::vector<std::string>{"8", "1"}));
    QCOMPARE(q(e->inputs[1].storage_bytes), QString("32*s77"));
    auto g = t.graph(*e, "fx_graph_readable");
    QVERIFY(g.ok());
    QVERIFY(ops(**g) > 0);
  }

  void minifier_repro_files() {
    std::string ref = test::reference_dir() + "/minifier";
    Trace cuda = open_ok(ref + "/accuracy_cuda/repro.py");
    QCOMPARE(int(cuda.kind), int(TraceKind::Minifier));
    QVERIFY(cuda.diagnostics.empty());
    QCOMPARE(cuda.entries.size(), size_t(1));
    const CompileEntry& e = cuda.entries[0];
    QCOMPARE(q(e.label), QString("repro"));
    const Artifact* a = e.artifact("repro");
    QVERIFY(a);
    QCOMPARE(a->payload.first_line, 68);
    QVERIFY(cuda.payload_text(e, "repro")->rfind("class Repro(torch.nn.Module):\n", 0) == 0);
    auto g = cuda.graph(e, "repro");
    QVERIFY2(g.ok(), qPrintable(q(g.status().to_string())));
    QCOMPARE(ops(**g), size_t(1));
    QCOMPARE(q((*g)->nodes[1].target), QString("aten::relu.default"));
    QCOMPARE(e.inputs.size(), size_t(1));
    const ReproInput& in = e.inputs[0];
    QCOMPARE(q(in.name), QString("addmm_1"));
    QCOMPARE(q(in.kind), QString("tensor"));
    QVERIFY((in.shape == std::vector<std::string>{"8", "64"}));
    QVERIFY((in.stride == std::vector<std::string>{"64", "1"}));
    QCOMPARE(q(in.device), QString("cuda:0"));
    QCOMPARE(q(in.dtype), QString("float32"));
    QCOMPARE(q(in.storage), QString("buf0"));
    QCOMPARE(q(in.storage_bytes), QString("2048"));
    QCOMPARE(q(in.storage_hash), QString("b4ea7a6a45c9f1a650198bac8a4d6e23c69a3d31"));
    QVERIFY(in.is_leaf && !in.requires_grad);
    QCOMPARE(in.line, 80);

    Trace launcher = open_ok(ref + "/compile_error_cpu/minifier_launcher.py");
    QCOMPARE(q(launcher.entries[0].label), QString("minifier_launcher"));
    QCOMPARE(launcher.entries[0].inputs.size(), size_t(7));
    QVERIFY(launcher.entries[0].inputs[0].storage_hash.empty());  // reader.storage(None, 8192)
    auto lg = launcher.graph(launcher.entries[0], "repro");
    QVERIFY(lg.ok());
    QCOMPARE(ops(**lg), size_t(27));

    Trace cpu = open_ok(ref + "/accuracy_cpu/repro.py");
    QCOMPARE(cpu.entries[0].inputs.size(), size_t(7));
    QVERIFY(cpu.entries[0].inputs[0].requires_grad);
    QVERIFY(!cpu.entries[0].inputs[2].requires_grad);
    // A minifier case folder opens its repro.py.
    Trace folder = open_ok(ref + "/accuracy_cuda");
    QCOMPARE(int(folder.kind), int(TraceKind::Minifier));
    QCOMPARE(q(folder.files[0].path), q(ref + "/accuracy_cuda/repro.py"));
  }

  // Every argument InputWriter writes.
  void load_args_forms() {
    std::string src =
        "import torch\n"
        "def load_args(reader):\n"
        "    buf0 = reader.storage('abc', 4096, device=device(type='cuda', index=1), dtype_hint=torch.float16)\n"
        "    reader.tensor(buf0, (4, 8), (1, 4), dtype=torch.float16, storage_offset=16, requires_grad=True)  # x\n"
        "    reader.tensor(buf0, (), dtype=torch.int64)  # scalar\n"
        "    reader.symint(12)  # s0\n"
        "    reader.const('alpha')  # alpha, filtered out during compilation\n"
        "    # big was unsupported type for dumping: <class 'list'>\n"
        "    \"\"\"\n"
        "    reader.tensor(buf0, (2,))  # big[0]\n"
        "    \"\"\"\n"
        "    buf1 = reader.storage(None, 8*s0)\n"
        "    reader.tensor(buf1, (s0, 2, 3))  # y\n"
        "    reader.tensor(buf9, (2,))  # z\n"
        "    something_else()\n"
        "load_args._version = 0\n";
    std::vector<Diagnostic> diags;
    std::vector<ReproInput> in = parse_load_args(src, "r.py", &diags);
    QCOMPARE(in.size(), size_t(6));
    QCOMPARE(q(in[0].name), QString("x"));
    QVERIFY((in[0].shape == std::vector<std::string>{"4", "8"}));
    QVERIFY((in[0].stride == std::vector<std::string>{"1", "4"}));
    QCOMPARE(q(in[0].dtype), QString("float16"));
    QCOMPARE(q(in[0].device), QString("cuda:1"));
    QCOMPARE(q(in[0].storage_offset), QString("16"));
    QVERIFY(in[0].requires_grad && !in[0].is_leaf);
    QCOMPARE(in[0].line, 4);
    QVERIFY(in[1].shape.empty() && in[1].stride.empty());
    QCOMPARE(q(in[1].dtype), QString("int64"));
    QCOMPARE(q(in[2].kind), QString("symint"));
    QCOMPARE(q(in[2].value), QString("12"));
    QCOMPARE(q(in[3].kind), QString("const"));
    QCOMPARE(q(in[3].name), QString("alpha"));
    QCOMPARE(q(in[3].value), QString("alpha"));
    QVERIFY((in[4].stride == std::vector<std::string>{"6", "3", "1"}));
    QCOMPARE(q(in[4].device), QString("cpu"));
    QCOMPARE(q(in[4].storage_bytes), QString("8*s0"));
    QCOMPARE(q(in[5].name), QString("z"));
    QCOMPARE(diags.size(), size_t(2));
    QCOMPARE(diags[0].line, 14);
    QCOMPARE(q(diags[0].message), QString("reader.tensor uses storage 'buf9', which load_args did not create"));
    QCOMPARE(diags[1].line, 15);
    QCOMPARE(q(diags[1].message), QString("cannot read this load_args line: something_else()"));
    // Symbolic leading sizes give symbolic strides.
    std::vector<ReproInput> sym = parse_load_args("def load_args(reader):\n    b = reader.storage(None, 4)\n    reader.tensor(b, (2, s0, s1))  # t\n", "s.py");
    QVERIFY((sym[0].stride == std::vector<std::string>{"s0*s1", "s1", "1"}));
  }

  void not_a_repro() {
    QTemporaryDir tmp;
    std::string py = tmp.path().toStdString() + "/prog.py";
    std::ofstream(py) << "import torch\nprint(1)\n";
    auto t = open_trace(py);
    QVERIFY(!t.ok());
    QCOMPARE(q(t.status().to_string()), q(py + ": not a minifier repro: no 'class Repro(torch.nn.Module)' in it"));
  }

  void open_tells_kinds_apart() {
    std::string ref = test::reference_dir();
    QCOMPARE(int(open_ok(ref + "/traces/s01_sin_cos").kind), int(TraceKind::TraceLog));
    for (const auto& de : fs::directory_iterator(ref + "/traces/s01_sin_cos"))
      QCOMPARE(int(open_ok(de.path().string()).kind), int(TraceKind::TraceLog));
    QCOMPARE(int(open_ok(ref + "/compile_debug/s01_sin_cos").kind), int(TraceKind::CompileDebug));
    QCOMPARE(int(open_ok(debug_run("s01_sin_cos")).kind), int(TraceKind::CompileDebug));
    QCOMPARE(int(open_ok(ref + "/minifier/accuracy_cpu/minifier_launcher.py").kind), int(TraceKind::Minifier));
    // A debug folder's torch_compile_debug parent.
    QTemporaryDir tmp;
    fs::path root = fs::path(tmp.path().toStdString()) / "torch_compile_debug";
    fs::create_directories(root);
    fs::copy(debug_run("s02_linear_relu"), root / fs::path(debug_run("s02_linear_relu")).filename(), fs::copy_options::recursive);
    Trace parent = open_ok(tmp.path().toStdString());
    QCOMPARE(int(parent.kind), int(TraceKind::CompileDebug));
    QCOMPARE(parent.entries.size(), size_t(1));
  }
};

QTEST_APPLESS_MAIN(TestTraceDumps)
#include "test_trace_dumps.moc"
