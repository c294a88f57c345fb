// The workbench's links between nodes and generated code, offscreen: a click
// on a node marks its kernel's lines in the Code panel; a click on a kernel
// line selects the nodes it was made from, in the graph shown (a dump's
// pre-grad graph too) or after switching to theirs. For a dump (our own
// training log with provenance) and for Kiln's own pipeline (the example).
#include "workbench_test_util.h"

#include <QTemporaryDir>

#include <fstream>

#include "core/trace_log_util.h"
#include "viewer/code_editor.h"

using namespace kiln;
using namespace kiln::viewer;

class TestCodeLinksGui : public QObject {
  Q_OBJECT
 private slots:
  void dump_nodes_and_kernel_lines() {
    QTemporaryDir tmp;
    const QString path = tmp.path() + "/train.log";
    std::ofstream(path.toStdString()) << test::training_log();
    Workbench w;
    QSignalSpy opened(&w, &Workbench::sessionOpened);
    w.open({path});
    QVERIFY(opened.wait(60000));
    QVERIFY(test::settle(w));
    QVERIFY(w.selectCompile("0/0"));
    QVERIFY(w.selectStage("after_post_grad_graph"));
    QVERIFY(test::settle(w));
    QVERIFY(w.selectNodeByName("relu"));
    QCOMPARE(test::marked_lines(w.codeView()), std::vector<int>({2, 3, 4, 5, 6, 7, 10, 12}));
    QVERIFY(w.codeView()->toPlainText().startsWith("# AOT ID"));

    // A kernel line back to its node, in the graph shown.
    QVERIFY(w.selectNodeByName("arg0_1"));
    emit w.codeView()->lineClicked(12);
    QCOMPARE(w.selectedNodeNames(), std::vector<std::string>({"relu"}));

    // From the pre-grad graph: the node that became relu.
    QVERIFY(w.selectStage("before_pre_grad_graph"));
    QVERIFY(test::settle(w));
    emit w.codeView()->lineClicked(10);
    QCOMPARE(w.selectedNodeNames(), std::vector<std::string>({"x"}));

    // The backward's code: its line selects the backward's post-grad graph.
    QVERIFY(w.selectStage("inductor_output_code#2"));
    emit w.codeView()->lineClicked(9);
    QVERIFY(test::settle(w));
    QCOMPARE(QString::fromStdString(w.currentStage()->name), QString("after_post_grad_graph#2"));
    QCOMPARE(w.selectedNodeNames(), std::vector<std::string>({"mm"}));
  }

  void kiln_pipeline_nodes_and_kernel_lines() {
    Workbench w;
    QSignalSpy opened(&w, &Workbench::sessionOpened);
    w.open({test::example()});
    QVERIFY(opened.wait(60000));
    QVERIFY(test::settle(w));
    QVERIFY(w.selectCompile("0/0"));
    const SessionCompile* c = w.currentCompile();
    int scheduled = -1;
    for (int i = 0; i < int(c->stages.size()); ++i)
      if (c->stages[size_t(i)].group == "forward" && !c->stages[size_t(i)].fusion_groups.empty()) scheduled = i;
    QVERIFY(scheduled >= 0);
    QVERIFY(w.selectStageAt(scheduled));
    QVERIFY(test::settle(w));
    QVERIFY(w.selectNodeByName("relu"));
    const std::vector<int> lines = test::marked_lines(w.codeView());
    QVERIFY(!lines.empty());
    const QStringList text = w.codeView()->toPlainText().split('\n');
    QVERIFY2(text[lines.front() - 1].contains("kiln_g"), qPrintable(text[lines.front() - 1]));
    QVERIFY(w.selectNodeByName("primals_1"));
    emit w.codeView()->lineClicked(lines.front() + 1);
    const std::vector<std::string> nodes = w.selectedNodeNames();
    QVERIFY(std::find(nodes.begin(), nodes.end(), "relu") != nodes.end());

    // A later pass that changed nothing shows the same graph: the same links.
    int unchanged = -1;
    for (int i = scheduled + 1; i < int(c->stages.size()) && unchanged < 0; ++i)
      if (c->stages[size_t(i)].group == "forward" && c->stages[size_t(i)].kind == StageKind::Graph && !c->stages[size_t(i)].changed)
        unchanged = i;
    if (unchanged < 0) QSKIP("the example's forward has no unchanged pass after the scheduled graph");
    QVERIFY(w.selectStageAt(unchanged));
    QVERIFY(test::settle(w));
    QVERIFY(w.selectNodeByName("relu"));
    QCOMPARE(test::marked_lines(w.codeView()), lines);
  }
};

QTEST_MAIN(TestCodeLinksGui)
#include "test_code_links_gui.moc"
