// Clicking a node moves the source view to the line that made it, for every
// kind of session (session/source_links.h): a dump's graphs name their user
// lines in `# File: path:line` comments, also in files other than the
// user's (an exported block's in torch's linear.py: the view then lists that
// file's quoted lines); a PyTorch repro.py is its own source, so a
// node's line is the line that defines it there, and a Kiln stage made from
// it reaches one through provenance; a dump stage without comments
// (fx_graph_runnable) through the same-named node of the stage before it.
#include <QDockWidget>
#include <QFile>
#include <QSignalSpy>
#include <QTextBlock>
#include <QtTest/QtTest>

#include "test_support.h"
#include "workbench_test_util.h"
#include "viewer/code_editor.h"
#include "viewer/graph_view.h"
#include "viewer/workbench.h"

using namespace kiln;
using namespace kiln::viewer;
using namespace kiln::session;

using test::settle;
using test::trace_dir;

namespace {

bool open_at(Workbench& w, const QString& path, const QString& compile, const QString& stage) {
  QSignalSpy opened(&w, &Workbench::sessionOpened);
  w.setPendingSelection(compile, stage);
  w.open({path});
  return opened.wait(60000) && settle(w, 120000) && w.currentStage() && w.currentStage()->name == stage.toStdString();
}

QString current_line_text(Workbench& w) { return w.sourceView()->currentLineText(); }

// The 1-based line of `file` that starts with `prefix` after its indentation.
int line_of(const QString& file, const QString& prefix) {
  QFile f(file);
  if (!f.open(QIODevice::ReadOnly)) return -1;
  const QStringList lines = QString::fromUtf8(f.readAll()).split('\n');
  for (int i = 0; i < lines.size(); ++i)
    if (lines[i].trimmed().startsWith(prefix)) return i + 1;
  return -1;
}

}  // namespace

class TestSourceLinksGui : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    test::isolate_settings("kiln_test_source_links.kiln");
  }

  // A repro.py: each node goes to the line that defines it, and a Kiln stage's
  // nodes (made by the passes, some with new names) to a line of theirs.
  void aReproNodeGoesToItsLine() {
    const QString repro = QString::fromStdString(test::reference_dir() + "/minifier/accuracy_cpu/repro.py");
    Workbench w;
    w.show();
    QVERIFY(open_at(w, repro, "repro", "repro"));
    const int addmm = line_of(repro, "addmm = torch.ops.aten.addmm.default(");
    const int relu = line_of(repro, "relu = torch.ops.aten.relu.default(");
    QVERIFY(addmm > 0 && relu > addmm);
    QVERIFY(w.selectNodeByName("addmm"));
    QCOMPARE(w.sourceView()->currentLineNumber(), addmm);
    QVERIFY(w.selectNodeByName("relu"));
    QCOMPARE(w.sourceView()->currentLineNumber(), relu);
    QVERIFY2(current_line_text(w).trimmed().startsWith("relu = "), qPrintable(current_line_text(w)));
    // Kiln's decomposition of it: every call node reaches a defining line.
    const SessionCompile* c = w.currentCompile();
    int decomposed = -1;
    for (int i = 0; i < int(c->stages.size()); ++i)
      if (c->stages[size_t(i)].name.starts_with("kiln ") && c->stages[size_t(i)].pass == "decompose") decomposed = i;
    QVERIFY(decomposed >= 0);
    QVERIFY(w.selectStageAt(decomposed));
    QVERIFY(settle(w));
    int calls = 0, new_names = 0;
    for (const Node& n : w.graphView()->graph()->nodes) {
      if (!is_call(n)) continue;
      ++calls;
      new_names += line_of(repro, QString::fromStdString(n.name) + " = ") < 0;
      w.sourceView()->goToLine(1);
      QVERIFY(w.selectNodeByName(QString::fromStdString(n.name)));
      QVERIFY2(current_line_text(w).contains(" = torch.ops.aten."), qPrintable(QString::fromStdString(n.name) + ": " + current_line_text(w)));
    }
    QVERIFY(calls > 20);
    QVERIFY2(new_names > 0, "the decomposition made nodes the file does not name");
  }

  // A dump's fx_graph_runnable has no `# File:` comments: the same node of the stage before it has.
  void aDumpStageWithoutCommentsUsesTheNodeBeforeIt() {
    Workbench w;
    w.show();
    QVERIFY(open_at(w, QString::fromStdString(trace_dir("s02_linear_relu")), "0/0", "fx_graph_runnable"));
    const Node* relu = nullptr;
    for (const Node& n : w.graphView()->graph()->nodes)
      if (n.target == "aten::relu.default") relu = &n;
    QVERIFY(relu);
    QVERIFY(relu->meta.stack.empty());
    // Away from line 7 first (the compile's own line, where the view starts).
    int other = -1;
    for (const SourceLine& l : w.currentSession()->known_lines)
      if (l.line != 7) other = l.line;
    QVERIFY(other > 0);
    w.sourceView()->goToLine(other);
    QCOMPARE(w.sourceView()->currentLineNumber(), other);
    QVERIFY(w.selectNodeByName(QString::fromStdString(relu->name)));
    // s02_linear_relu.py:7, as the dump quotes it (once the stages before are parsed).
    QTRY_COMPARE_WITH_TIMEOUT(w.sourceView()->currentLineNumber(), 7, 30000);
    QVERIFY(current_line_text(w).contains("relu"));
  }

  // The export's log names no compiled function's file, and its graph
  // quotes torch's linear.py and conv.py beside the user's file: a node
  // shows the quoted lines of its own file, at its line.
  void aNodeInAnotherFileShowsThatFilesLines() {
    Workbench w;
    w.show();
    QSignalSpy opened(&w, &Workbench::sessionOpened);
    w.open({QString::fromStdString(trace_dir("s07_export"))});
    QVERIFY(opened.wait(60000));
    QVERIFY(settle(w, 120000));
    auto s = w.currentSession();
    QVERIFY(s->source_file.empty());  // the log names no compiled function's file
    auto* source = w.findChild<QDockWidget*>("source");
    bool found = false;
    for (const SessionCompile& c : s->compiles) {
      QVERIFY(w.selectCompile(QString::fromStdString(c.id)));
      for (int i = 0; i < int(c.stages.size()) && !found; ++i) {
        if (c.stages[size_t(i)].kind != StageKind::Graph) continue;
        QVERIFY(w.selectStageAt(i));
        QVERIFY(settle(w));
        if (!w.graphView()->graph()) continue;
        for (const Node& n : w.graphView()->graph()->nodes) {
          if (n.meta.stack.empty() || !QString::fromStdString(n.meta.stack.back().file).endsWith("/linear.py")) continue;
          const StackFrame& frame = n.meta.stack.back();
          QVERIFY(w.selectNodeByName(QString::fromStdString(n.name)));
          QCOMPARE(w.sourceView()->currentLineNumber(), frame.line);
          QVERIFY2(current_line_text(w).contains(QString::fromStdString(frame.code).trimmed()),
                   qPrintable(current_line_text(w) + " / " + QString::fromStdString(frame.code)));
          QVERIFY2(source->windowTitle().contains("linear.py"), qPrintable(source->windowTitle()));
          found = true;
          break;
        }
      }
      if (found) break;
    }
    QVERIFY2(found, "no node of the export quotes linear.py");
    // A node of the user's file: that file's lines.
    bool user = false;
    for (const Node& n : w.graphView()->graph()->nodes)
      if (!n.meta.stack.empty() && QString::fromStdString(n.meta.stack.back().file).endsWith("s07_export.py")) {
        QVERIFY(w.selectNodeByName(QString::fromStdString(n.name)));
        QCOMPARE(w.sourceView()->currentLineNumber(), n.meta.stack.back().line);
        QVERIFY2(source->windowTitle().contains("s07_export.py"), qPrintable(source->windowTitle()));
        user = true;
        break;
      }
    QVERIFY(user);
  }
};

QTEST_MAIN(TestSourceLinksGui)
#include "test_source_links_gui.moc"
