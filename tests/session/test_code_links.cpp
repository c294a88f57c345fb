// code_links (session/code_links.h): graph nodes to the lines of generated
// code and back. A dump: our own training log with provenance (forward and
// backward apart, pre-grad nodes through post-grad ones). Kiln's own
// pipeline: the bundled example, whose fused groups are kiln_groupN in LLVM
// IR and kiln_gN_... in CUDA C++.
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

#include "core/trace_log_util.h"
#include "session/code_links.h"
#include "test_support.h"

using namespace kiln;
using namespace kiln::session;

class TestCodeLinks : public QObject {
  Q_OBJECT
 private slots:
  void dump_provenance_both_ways() {
    QTemporaryDir tmp;
    const std::string path = tmp.path().toStdString() + "/train.log";
    std::ofstream(path) << test::training_log();
    LoadOptions o;
    o.kiln_stages = false;
    auto s = load_trace(path, o);
    QVERIFY2(s.ok(), s.status().to_string().c_str());
    const SessionCompile& c = (*s)->compiles.front();
    const std::vector<CodeLinkGroup> links = code_links(**s, c);
    QCOMPARE(links.size(), size_t(2));  // the forward's code, the backward's
    const int post = c.stage_index("after_post_grad_graph");
    const int pre = c.stage_index("before_pre_grad_graph");
    const int fw_code = c.stage_index("inductor_output_code");
    const int bw_code = c.stage_index("inductor_output_code#2");
    QVERIFY(post >= 0 && pre >= 0 && fw_code >= 0 && bw_code >= 0);

    auto spot = code_of_node(links, post, "relu");
    QVERIFY(spot);
    QCOMPARE(spot->code_stage, fw_code);
    QCOMPARE(spot->lines, std::vector<int>({2, 3, 4, 5, 6, 7, 10, 12}));
    QCOMPARE(spot->kernels, std::vector<std::string>({"triton_poi_fused_relu_0"}));
    auto through_pre = code_of_node(links, pre, "x");  // x became relu
    QVERIFY(through_pre);
    QCOMPARE(through_pre->lines, spot->lines);
    QVERIFY(!code_of_node(links, post, "arg0_1"));  // an input is in no kernel

    auto nodes = nodes_of_line(links, fw_code, 10);
    QVERIFY(nodes);
    QCOMPARE(nodes->graph_stage, post);
    QCOMPARE(nodes->nodes, std::vector<std::string>({"relu"}));
    auto pre_nodes = nodes_of_line(links, fw_code, 10, pre);
    QVERIFY(pre_nodes);
    QCOMPARE(pre_nodes->graph_stage, pre);
    QCOMPARE(pre_nodes->nodes, std::vector<std::string>({"x"}));
    auto backward = nodes_of_line(links, bw_code, 9);  // the backward's mm
    QVERIFY(backward);
    QCOMPARE(backward->nodes, std::vector<std::string>({"mm"}));
    QCOMPARE(backward->graph_stage, c.stage_index("after_post_grad_graph#2"));
    QVERIFY(!nodes_of_line(links, fw_code, 1));  // a comment belongs to no kernel
  }

  void kiln_pipeline_both_ways() {
    auto s = load_session(std::string(KILN_SOURCE_DIR) + "/resources/examples/workbench_demo.py");
    QVERIFY2(s.ok(), s.status().to_string().c_str());
    const SessionCompile& c = (*s)->compiles.front();
    const std::vector<CodeLinkGroup> links = code_links(**s, c);
    QVERIFY(!links.empty());
    const int llvm = c.stage_index("forward llvm_ir");
    QVERIFY(llvm >= 0);
    const CodeLinkGroup* g = nullptr;
    for (const CodeLinkGroup& x : links)
      if (x.code_stage == llvm) g = &x;
    QVERIFY(g);
    const SessionStage& graph = c.stages[size_t(g->graph_stage)];
    QCOMPARE(QString::fromStdString(graph.group), QString("forward"));
    // relu is fused into a kernel of its own: its lines are that function's.
    const NodeId relu = graph.graph->find("relu");
    QVERIFY(relu != kNoNode);
    const int group = graph.fusion_groups[size_t(relu)];
    QVERIFY(group >= 0);
    auto spot = code_of_node(links, g->graph_stage, "relu", llvm);
    QVERIFY(spot);
    QCOMPARE(spot->code_stage, llvm);
    const std::string kernel = "kiln_group" + std::to_string(group);
    QVERIFY(std::find(spot->kernels.begin(), spot->kernels.end(), kernel) != spot->kernels.end());
    const std::vector<std::string_view> lines = [&] {
      std::vector<std::string_view> out;
      std::string_view text = c.stages[size_t(llvm)].text;
      for (size_t pos = 0; pos < text.size();) {
        size_t eol = std::min(text.find('\n', pos), text.size());
        out.push_back(text.substr(pos, eol - pos));
        pos = eol + 1;
      }
      return out;
    }();
    const std::string_view first = lines[size_t(spot->lines.front()) - 1];
    QVERIFY2(first.starts_with("define ") && first.find("@kiln_group" + std::to_string(group)) != std::string_view::npos,
             std::string(first).c_str());
    auto back = nodes_of_line(links, llvm, spot->lines.front() + 1);
    QVERIFY(back);
    QCOMPARE(back->graph_stage, g->graph_stage);
    QVERIFY(std::find(back->nodes.begin(), back->nodes.end(), "relu") != back->nodes.end());
  }
};

QTEST_GUILESS_MAIN(TestCodeLinks)
#include "test_code_links.moc"
