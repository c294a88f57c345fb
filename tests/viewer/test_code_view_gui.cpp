// Issue 25, item 4: the generated code is a tab of the centre (or stands
// beside the graph), not a narrow side panel: a QScintilla view with line
// numbers, folding, no wrapping and search (matches counted, next and previous
// wrapping round); a node's kernel lines are scrolled to and marked, and a
// click on a kernel line selects its nodes, for Kiln's own program (fusion
// groups) and for a real TORCH_COMPILE_DEBUG folder (Inductor's provenance).
#include "workbench_test_util.h"

#include <QAbstractItemModelTester>
#include <QAction>
#include <QDockWidget>
#include <QLineEdit>
#include <QMenuBar>

#include "viewer/code_editor.h"
#include "viewer/code_view.h"
#include "viewer/graph_view.h"
#include "viewer/session_model.h"

using namespace kiln;
using namespace kiln::viewer;

namespace {

// A real click on a line of the editor (1-based), as the user makes it.
void click_line(CodeEditor* e, int line) {
  e->goToLine(line);
  const long pos = e->SendScintilla(QsciScintilla::SCI_POSITIONFROMLINE, line - 1);
  const int x = int(e->SendScintilla(QsciScintilla::SCI_POINTXFROMPOSITION, 0, pos)) + 4;
  const int y = int(e->SendScintilla(QsciScintilla::SCI_POINTYFROMPOSITION, 0, pos)) + 3;
  QTest::mouseClick(e->viewport(), Qt::LeftButton, Qt::NoModifier, QPoint(x, y));
}

bool line_on_screen(const CodeEditor* e, int line) {
  const int first = e->firstVisibleLineNumber();
  const int rows = int(e->SendScintilla(QsciScintilla::SCI_LINESONSCREEN));
  return line >= first && line < first + rows;
}

QAction* menu_action(QMainWindow& w, const QString& text) {
  for (QAction* a : w.menuBar()->findChildren<QAction*>())
    if (a->text() == text) return a;
  return nullptr;
}

bool open_and_settle(Workbench& w, const QString& path) {
  QSignalSpy opened(&w, &Workbench::sessionOpened);
  w.open({path});
  return opened.wait(60000) && test::settle(w);
}

}  // namespace

class TestCodeViewGui : public QObject {
  Q_OBJECT
 private slots:
  void code_is_a_centre_tab_with_search_and_line_numbers() {
    Workbench w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QAbstractItemModelTester tester(w.sessionModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QVERIFY(open_and_settle(w, test::example()));
    QVERIFY(w.selectCompile("0/0"));
    QVERIFY(w.selectStage("forward llvm_ir"));
    QVERIFY(test::settle(w));

    // In the centre, in place of the graph; no dock holds code any more.
    QCOMPARE(w.centreTab(), QString("code"));
    QVERIFY(w.codePanel()->isVisible());
    QVERIFY(!w.findChild<QDockWidget*>("code"));
    for (QWidget* p = w.codePanel(); p; p = p->parentWidget()) QVERIFY(!qobject_cast<QDockWidget*>(p));
    QVERIFY2(w.codePanel()->width() > 600, qPrintable(QString::number(w.codePanel()->width())));
    CodeEditor* code = w.codeView();
    QVERIFY(code->toPlainText().contains("define"));
    QVERIFY(!code->wrapsLines());
    QVERIFY(code->hasLineNumbers());
    QVERIFY(code->foldPoints() >= 2);  // the kernel functions
    int define = -1;  // a kernel function's first line folds its body away
    for (int i = 0; i < code->lines() && define < 0; ++i)
      if (code->text(i).startsWith("define")) define = i;
    QVERIFY(define >= 0);
    QVERIFY(code->SendScintilla(QsciScintilla::SCI_GETFOLDLEVEL, define) & QsciScintilla::SC_FOLDLEVELHEADERFLAG);
    code->foldAllPoints(true);
    QVERIFY(code->SendScintilla(QsciScintilla::SCI_GETLINEVISIBLE, define));
    QVERIFY(!code->SendScintilla(QsciScintilla::SCI_GETLINEVISIBLE, define + 1));
    code->foldAllPoints(false);
    QVERIFY(code->SendScintilla(QsciScintilla::SCI_GETLINEVISIBLE, define + 1));

    // Search: every match counted, next and previous wrap round.
    const int defines = int(code->toPlainText().count("define", Qt::CaseInsensitive));
    QVERIFY(defines >= 2);
    w.codePanel()->find("DEFINE");
    QCOMPARE(code->searchCount(), defines);
    QCOMPARE(w.codePanel()->matchText(), QString("1 of %1").arg(defines));
    QCOMPARE(code->selectedText().toLower(), QString("define"));
    const int first_line = code->currentLineNumber();
    w.codePanel()->findNext(true);
    QCOMPARE(w.codePanel()->matchText(), QString("2 of %1").arg(defines));
    QVERIFY(code->currentLineNumber() > first_line);
    w.codePanel()->findNext(false);
    w.codePanel()->findNext(false);
    QCOMPARE(w.codePanel()->matchText(), QString("%1 of %1").arg(defines));
    w.codePanel()->find("no such text anywhere");
    QCOMPARE(w.codePanel()->matchText(), QString("no match"));

    // Ctrl+F (Stage > Find...) searches the code when the Code tab is shown, the graph otherwise.
    w.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    QVERIFY(menu_action(w, "&Find..."));
    QTest::keyClick(&w, Qt::Key_F, Qt::ControlModifier);
    QTRY_COMPARE(QApplication::focusWidget(), static_cast<QWidget*>(w.codePanel()->findField()));
    QVERIFY(w.selectStage("aot_forward_graph"));
    QVERIFY(test::settle(w));
    QCOMPARE(w.centreTab(), QString("graph"));
    QVERIFY(!w.codePanel()->isVisible());
  }

  void kiln_program_nodes_and_lines_both_ways() {
    Workbench w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(open_and_settle(w, test::example()));
    QVERIFY(w.selectCompile("0/0"));
    const SessionCompile* c = w.currentCompile();
    int scheduled = -1;
    for (int i = 0; i < int(c->stages.size()); ++i)
      if (c->stages[size_t(i)].group == "forward" && !c->stages[size_t(i)].fusion_groups.empty()) scheduled = i;
    QVERIFY(scheduled >= 0);
    QVERIFY(w.selectStageAt(scheduled));
    QVERIFY(w.showPanel("graph+code"));
    QVERIFY(test::settle(w));
    QVERIFY(w.graphView()->isVisible() && w.codePanel()->isVisible());

    // Node -> lines: marked, and the first in view with the cursor on it.
    QVERIFY(w.selectNodeByName("relu"));
    const std::vector<int> lines = test::marked_lines(w.codeView());
    QVERIFY(!lines.empty());
    QVERIFY(w.codeView()->toPlainText().split('\n')[lines.front() - 1].contains("kiln_g"));
    QCOMPARE(w.codeView()->currentLineNumber(), lines.front());
    QTRY_VERIFY(line_on_screen(w.codeView(), lines.front()));

    // Line -> nodes, by a click in the editor.
    QVERIFY(w.selectNodeByName("primals_1"));
    click_line(w.codeView(), lines.front() + 1);
    const std::vector<std::string> nodes = w.selectedNodeNames();
    QVERIFY(std::find(nodes.begin(), nodes.end(), "relu") != nodes.end());
    QCOMPARE(w.graphView()->selectedNodes().size(), nodes.size());

    // In the Code tab alone, a click selects the nodes without leaving the code.
    w.setCodeBesideGraph(false);
    QVERIFY(w.showCentre("code"));
    QVERIFY(w.selectStage("aot_forward_graph"));  // another graph on screen: the kernel's own loads behind
    QVERIFY(w.showCentre("code"));
    QVERIFY(test::settle(w));
    click_line(w.codeView(), lines.front() + 1);
    QVERIFY(test::settle(w));
    QCOMPARE(w.centreTab(), QString("code"));
    QCOMPARE(w.currentStageIndex(), scheduled);
    const std::vector<std::string> again = w.selectedNodeNames();
    QVERIFY(std::find(again.begin(), again.end(), "relu") != again.end());
  }

  void debug_folder_nodes_and_lines_both_ways() {
    const QString dir = QString::fromStdString(test::reference_dir()) + "/compile_debug/s02_linear_relu";
    if (!QFileInfo::exists(dir)) QSKIP("no reference data");
    Workbench w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(open_and_settle(w, dir));
    QVERIFY(w.selectCompile("model__0"));
    QVERIFY(w.selectStage("fx_graph_transformed"));
    QVERIFY(w.showPanel("graph+code"));
    QVERIFY(test::settle(w));

    // Inductor's mapping: relu went into the fused C++ kernel (its definition and its launch).
    QVERIFY(w.selectNodeByName("relu"));
    const std::vector<int> lines = test::marked_lines(w.codeView());
    QVERIFY(lines.size() > 5);
    const QStringList text = w.codeView()->toPlainText().split('\n');
    QVERIFY(text[0].startsWith("# AOT ID"));
    QVERIFY(text[lines.front() - 1].contains("cpp_fused_relu_threshold_backward_0"));
    QVERIFY(std::any_of(lines.begin(), lines.end(), [&](int l) { return text[l - 1].trimmed().startsWith("cpp_fused_relu_threshold_backward_0(buf"); }));
    QTRY_VERIFY(line_on_screen(w.codeView(), lines.front()));

    // The addmm launch line selects addmm.
    int launch = 0;
    for (int i = 0; i < text.size() && !launch; ++i)
      if (text[i].trimmed().startsWith("extern_kernels.addmm(")) launch = i + 1;
    QVERIFY(launch > 0);
    click_line(w.codeView(), launch);
    QCOMPARE(w.selectedNodeNames(), std::vector<std::string>({"addmm"}));
    QCOMPARE(w.graphView()->selectedNodes().size(), size_t(1));
  }
};

QTEST_MAIN(TestCodeViewGui)
#include "test_code_view_gui.moc"
