// Issue 25, item 5: compare mode, any two stages side by side rather than a
// diff against the stage before only. Two graph stages of one compile: nodes
// matched by name, the added, removed and rewritten ones outlined, a click
// selecting the match (or what provenance made of it) on the other side, and a
// text diff of the printed graphs; two code stages: a side-by-side diff of the
// generated code with its changed lines marked; two sessions: PyTorch's
// minifier launcher against its minimized repro.
#include "workbench_test_util.h"

#include <QAbstractItemModelTester>
#include <QLabel>

#include <algorithm>

#include "viewer/code_editor.h"
#include "viewer/compare_view.h"
#include "viewer/graph_view.h"
#include "viewer/session_model.h"

using namespace kiln;
using namespace kiln::viewer;
using kiln::session::DiffRowKind;

namespace {

bool open_and_settle(Workbench& w, const QStringList& paths) {
  QSignalSpy opened(&w, &Workbench::sessionOpened);
  w.open(paths);
  return QTest::qWaitFor([&] { return opened.count() >= paths.size(); }, 60000) && test::settle(w);
}

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

std::vector<std::string> names(const GraphView* g, const std::vector<NodeId>& ids) {
  std::vector<std::string> out;
  for (NodeId id : ids) out.push_back((*g->graph())[id].name);
  return out;
}

}  // namespace

class TestCompareGui : public QObject {
  Q_OBJECT
 private slots:
  void two_graph_stages_matched_nodes_and_text_diff() {
    Workbench w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(open_and_settle(w, {test::example()}));
    QVERIFY(w.selectCompile("0/0"));
    QVERIFY(w.compare("aot_forward_graph", "forward decompose #2"));
    QVERIFY(test::settle(w));
    QCOMPARE(w.centreTab(), QString("compare"));
    CompareView* cv = w.compareView();
    QVERIFY(cv->isVisible());
    QVERIFY(cv->graphView(0)->isVisible() && cv->graphView(1)->isVisible());
    QVERIFY(cv->graphView(0)->isLayoutReady() && cv->graphView(1)->isLayoutReady());
    QVERIFY(cv->graphDiff());
    // linear became permute, mm and add; relu now reads add.
    QCOMPARE(names(cv->graphView(0), cv->graphDiff()->removed), std::vector<std::string>({"linear"}));
    const std::vector<std::string> added = names(cv->graphView(1), cv->graphDiff()->added);
    QVERIFY(has(added, "mm") && has(added, "permute") && has(added, "add"));
    QCOMPARE(names(cv->graphView(1), cv->graphDiff()->rewritten), std::vector<std::string>({"relu"}));
    QCOMPARE(cv->matchedNodes(), int(cv->graphView(1)->graph()->size() - added.size()));
    QVERIFY2(cv->summary().contains("+3 added"), qPrintable(cv->summary()));

    // A click matches by name, else by provenance.
    QCOMPARE(cv->selectNode(0, "relu"), std::vector<std::string>({"relu"}));
    QCOMPARE(names(cv->graphView(1), cv->graphView(1)->selectedNodes()), std::vector<std::string>({"relu"}));
    std::vector<std::string> from_linear = cv->selectNode(0, "linear");
    std::sort(from_linear.begin(), from_linear.end());
    QCOMPARE(from_linear, std::vector<std::string>({"add", "mm", "permute"}));

    // The printed graphs' text diff: the rows line up, changed lines marked on both sides.
    const auto& rows = cv->textDiff().rows;
    QVERIFY(!cv->textDiff().identical());
    QCOMPARE(cv->textView(0)->lines(), int(rows.size()));
    QCOMPARE(cv->textView(1)->lines(), int(rows.size()));
    QVERIFY(cv->textView(1)->toPlainText().contains("torch.ops.aten.mm.default"));
    for (const auto& row : rows) {
      if (row.kind == DiffRowKind::Added) QVERIFY(cv->textView(1)->markTooltips().count(row.right));
      if (row.kind == DiffRowKind::Removed) QVERIFY(cv->textView(0)->markTooltips().count(row.left));
    }

    // Swapping the sides swaps what was added and removed.
    cv->swapSides();
    QVERIFY(test::settle(w));
    QCOMPARE(names(cv->graphView(1), cv->graphDiff()->added), std::vector<std::string>({"linear"}));
  }

  void two_code_stages_side_by_side_diff() {
    Workbench w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(open_and_settle(w, {test::example()}));
    QVERIFY(w.selectCompile("0/0"));
    QVERIFY(w.compare("forward llvm_ir", "forward llvm_ir_optimized"));
    QVERIFY(test::settle(w));
    CompareView* cv = w.compareView();
    QVERIFY(!cv->graphDiff());
    QVERIFY(!cv->graphView(0)->isVisible());  // code has no graph: the diff takes the tab
    const auto& d = cv->textDiff();
    QVERIFY(d.changed + d.added + d.removed > 10);
    QVERIFY(cv->textView(0)->toPlainText().contains("define"));
    QVERIFY(!cv->textView(0)->wrapsLines());
    int same = 0;
    for (const auto& row : d.rows) {
      same += row.kind == DiffRowKind::Same;
      // Each side's line is the line of its own text, fillers unnumbered.
      if (row.kind == DiffRowKind::Added) QVERIFY(cv->textView(1)->markTooltips().at(row.right).contains("only on the right"));
      if (row.kind == DiffRowKind::Changed) QVERIFY(cv->textView(0)->markTooltips().count(row.left));
    }
    QVERIFY(same > 0);  // the module header is the same
    QVERIFY(cv->summary().contains("changed"));

    // Stage > Compare with previous: the code stage before of the same kind.
    QVERIFY(w.selectStage("forward llvm_ir_optimized"));
    w.compareWithPrevious();
    QVERIFY(test::settle(w));
    const SessionCompile* c = w.currentCompile();
    QCOMPARE(QString::fromStdString(c->stages[size_t(cv->side(0).stage)].name), QString("forward llvm_ir"));
    QCOMPARE(QString::fromStdString(c->stages[size_t(cv->side(1).stage)].name), QString("forward llvm_ir_optimized"));

    QVERIFY(!w.compare("forward llvm_ir", "no such stage"));
    QVERIFY(w.lastError().contains("no such stage"));
  }

  void two_sessions_before_and_after_minification() {
    const QString dir = QString::fromStdString(test::reference_dir()) + "/minifier/accuracy_cuda";
    if (!QFileInfo::exists(dir + "/repro.py")) QSKIP("no reference data");
    Workbench w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QAbstractItemModelTester tester(w.sessionModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QVERIFY(open_and_settle(w, {dir + "/minifier_launcher.py", dir + "/repro.py"}));
    QCOMPARE(w.sessionModel()->sessionCount(), 2);
    QVERIFY(w.compare("#1:repro", "#2:repro"));
    QVERIFY(test::settle(w));
    CompareView* cv = w.compareView();
    QCOMPARE(cv->side(0).session, 0);
    QCOMPARE(cv->side(1).session, 1);
    QVERIFY(cv->graphDiff());
    QVERIFY(cv->graphView(0)->graph()->size() > 20);
    QVERIFY(cv->graphView(1)->graph()->size() < 5);
    // The minimized repro keeps relu; most of the launcher's graph is gone.
    QCOMPARE(cv->selectNode(1, "relu"), std::vector<std::string>({"relu"}));
    QVERIFY(cv->graphDiff()->removed.size() > 15);
    QVERIFY(cv->matchedNodes() >= 2);
    QVERIFY(!cv->textDiff().identical());
  }
};

QTEST_MAIN(TestCompareGui)
#include "test_compare_gui.moc"
