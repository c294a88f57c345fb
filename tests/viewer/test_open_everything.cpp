// Every input the workbench claims to open, opened in the real window
// offscreen through the Workbench API: each reference TORCH_TRACE log, each
// TORCH_COMPILE_DEBUG folder, each PyTorch minifier file, a Kiln repro, and
// every example program in resources/examples. For each compile id, its first
// shown stage must show a graph, and every stage must be selectable (graphs
// parsed and laid out, code stages in the code view) without an error.
// Damaged and wrong inputs must end in a clear message that names the file,
// never a crash.
#include <QSignalSpy>
#include <QtTest/QtTest>

#include <chrono>

#include "minifier/repro.h"
#include "test_support.h"
#include "viewer/code_editor.h"
#include "viewer/graph_view.h"
#include "viewer/session_model.h"
#include "viewer/workbench.h"

using namespace kiln;
using namespace kiln::viewer;
using namespace kiln::session;

namespace {

QString ref(const QString& rel) { return QString::fromStdString(test::reference_dir()) + "/" + rel; }

QStringList subfolders(const QString& dir) {
  QStringList out;
  for (const QFileInfo& f : QDir(dir).entryInfoList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) out << f.absoluteFilePath();
  return out;
}

enum class Outcome { Opened, Failed, TimedOut };

// Opens `path` and waits for the session or the error; `error` gets the message.
Outcome open_and_wait(Workbench& w, const QString& path, QString* error, int ms = 60000) {
  QSignalSpy opened(&w, &Workbench::sessionOpened), failed(&w, &Workbench::openFailed);
  w.open({path});
  if (!QTest::qWaitFor([&] { return opened.count() || failed.count(); }, ms)) return Outcome::TimedOut;
  if (failed.count()) {
    *error = failed.front().at(1).toString();
    return Outcome::Failed;
  }
  return QTest::qWaitFor([&] { return w.isSettled(); }, ms) ? Outcome::Opened : Outcome::TimedOut;
}

bool stage_settled(Workbench& w, int stage) {
  return QTest::qWaitFor([&] { return w.currentStageIndex() == stage && w.isSettled(); }, 30000);
}

// Selects every compile and every stage of the session just opened. Returns
// what went wrong, one line each; empty when all is well.
QStringList walk_every_stage(Workbench& w, int* stages_seen) {
  QStringList problems;
  auto s = w.currentSession();
  for (const SessionCompile& c : s->compiles) {
    QString id = QString::fromStdString(c.id);
    if (!w.selectCompile(id) || w.currentCompile() != &c) {
      problems << id + ": cannot select the compile";
      continue;
    }
    if (!QTest::qWaitFor([&] { return w.isSettled(); }, 30000)) {
      problems << id + ": never settled (" + w.busyReason() + ")";
      continue;
    }
    bool has_graph_stage = false;
    for (const SessionStage& st : c.stages) has_graph_stage |= st.kind == StageKind::Graph;
    // The stage a compile opens on shows a graph, laid out.
    if (has_graph_stage) {
      if (!w.graphView()->graph() || !w.graphView()->isLayoutReady())
        problems << id + ": no graph shown on selecting it: " + w.stageInfoText();
      else if (w.stageInfoText().startsWith("Cannot show"))
        problems << id + ": " + w.stageInfoText();
    }
    for (int i = 0; i < int(c.stages.size()); ++i) {
      const SessionStage& st = c.stages[size_t(i)];
      QString where = id + " " + QString::fromStdString(st.name);
      if (!w.selectStageAt(i) || !stage_settled(w, i)) {
        problems << where + ": not shown (" + w.busyReason() + ")";
        continue;
      }
      ++*stages_seen;
      if (w.stageInfoText().startsWith("Cannot show")) {
        problems << where + ": " + w.stageInfoText();
      } else if (st.kind == StageKind::Graph) {
        if (!w.graphView()->graph() || !w.graphView()->isLayoutReady() || w.graphView()->visibleBoxCount() == 0)
          problems << where + ": no graph on screen";
        else if (st.nodes >= 0 && int(w.graphView()->graph()->size()) != st.nodes)
          problems << where + QString(": the tree says %1 nodes, the graph has %2").arg(st.nodes).arg(w.graphView()->graph()->size());
      } else if (w.codeView()->toPlainText().isEmpty()) {
        problems << where + ": empty code view";
      }
    }
  }
  return problems;
}

}  // namespace

class TestOpenEverything : public QObject {
  Q_OBJECT
  QTemporaryDir scratch_;

  // A Kiln repro: PyTorch's minifier launcher rewritten in Kiln's form, as kiln-cli minify writes it.
  QString kilnRepro() {
    QString dir = scratch_.filePath("kiln_repro");
    if (QFileInfo::exists(dir + "/graph.txt")) return dir;
    auto r = minify::read_repro(ref("minifier/accuracy_cpu/minifier_launcher.py").toStdString());
    if (!r) qFatal("cannot read the reference launcher: %s", r.status().message().c_str());
    Status written = minify::write_kiln_repro(dir.toStdString(), *r);
    if (!written.ok()) qFatal("cannot write a Kiln repro: %s", written.message().c_str());
    return dir;
  }

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName("kiln-tests");
    QVERIFY(scratch_.isValid());
    // A fresh workspace, so every trace is indexed from its log here.
    qputenv("KILN_WORKSPACE", scratch_.filePath("workspace.kiln").toUtf8());
  }

  void opens_data() {
    QTest::addColumn<QString>("path");
    for (const QString& d : subfolders(ref("traces"))) QTest::newRow(qPrintable("trace " + QFileInfo(d).fileName())) << d;
    // TORCH_COMPILE_DEBUG: the torch_compile_debug folder (here one per scenario) and one run_* folder inside.
    for (const QString& d : subfolders(ref("compile_debug"))) {
      QTest::newRow(qPrintable("compile_debug " + QFileInfo(d).fileName())) << d;
      QStringList runs = subfolders(d);
      if (!runs.isEmpty()) QTest::newRow(qPrintable("compile_debug run " + QFileInfo(d).fileName())) << runs.front();
    }
    for (const QString& d : subfolders(ref("minifier"))) {
      QString name = QFileInfo(d).fileName();
      for (const char* file : {"minifier_launcher.py", "repro.py"})
        if (QFileInfo::exists(d + "/" + file)) QTest::newRow(qPrintable(QString("minifier %1 %2").arg(name, file))) << d + "/" + file;
      if (QFileInfo::exists(d + "/trace")) QTest::newRow(qPrintable("minifier trace " + name)) << d + "/trace";
    }
    QTest::newRow("kiln repro") << kilnRepro();
    QDir examples(QString(KILN_SOURCE_DIR) + "/resources/examples");
    for (const QFileInfo& f : examples.entryInfoList({"*.py"}, QDir::Files, QDir::Name))
      QTest::newRow(qPrintable("example " + f.fileName())) << f.absoluteFilePath();
  }

  void opens() {
    QFETCH(QString, path);
    auto t0 = std::chrono::steady_clock::now();
    Workbench w;
    w.show();
    QString error;
    Outcome o = open_and_wait(w, path, &error);
    QVERIFY2(o != Outcome::TimedOut, qPrintable("still busy: " + w.busyReason()));
    QVERIFY2(o == Outcome::Opened, qPrintable(error));
    auto s = w.currentSession();
    QVERIFY(s);
    QVERIFY2(!s->compiles.empty(), qPrintable(path + " opened with no compile in it"));
    int stages = 0;
    QStringList problems = walk_every_stage(w, &stages);
    QVERIFY2(problems.isEmpty(), qPrintable(problems.join("\n")));
    QVERIFY(stages > 0);
    qInfo("%s: %zu compile(s), %d stage(s) shown in %.2f s", qPrintable(QFileInfo(path).fileName()), s->compiles.size(),
          stages, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }

  // Wrong and damaged inputs: a message that names the file, no crash, and
  // the window keeps working. Inputs that do open (a damaged log keeps what it
  // can read) must still show every stage they have.
  void badInputs_data() {
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("named");  // what the message must mention
    QDir dir(scratch_.path());
    auto write = [&](const QString& name, const QByteArray& bytes) {
      QFile f(dir.filePath(name));
      if (!f.open(QIODevice::WriteOnly)) qFatal("cannot write %s", qPrintable(f.fileName()));
      f.write(bytes);
      return f.fileName();
    };
    QTest::newRow("missing") << dir.filePath("no_such_trace.log") << "no_such_trace.log";
    QTest::newRow("empty log") << write("empty.log", {}) << "empty.log";
    QByteArray noise;
    for (int i = 0; i < 4096; ++i) noise.append(char((i * 7919) % 256));
    QTest::newRow("binary noise") << write("noise.log", noise) << "noise.log";
    QTest::newRow("text, not a log") << write("notes.log", "hello\nthis is not a trace\n") << "notes.log";
    // A real log cut in the middle of a record.
    QFile log(QDir(ref("traces/s02_linear_relu")).entryInfoList({"*.log"}).value(0).absoluteFilePath());
    if (!log.open(QIODevice::ReadOnly)) qFatal("no s02 log");
    QTest::newRow("truncated log") << write("dedicated_log_torch_trace_cut.log", log.read(log.size() / 3)) << "";
    QTest::newRow("syntax error") << write("bad_syntax.py", "import torch\ndef f(x):\n    return x +\n") << "bad_syntax.py:3";
    // A program that fails after compiling: what it compiled opens, the failure is in the log.
    QTest::newRow("program fails at run time") << write("fails.py",
                                                       "import torch\n@torch.compile\ndef f(x):\n    return x.sin()\n"
                                                       "f(torch.ones(3))\ny = [1, 2][5]\n")
                                               << "";
    QTest::newRow("unsupported construct") << write("matches.py", "import torch\nmatch 1:\n    case 1:\n        pass\n") << "matches.py:2";
    QTest::newRow("broken repro.py") << write("repro.py", "import torch\nclass Repro(torch.nn.Module):\n    def forward(self, x\n")
                                     << "repro.py:3";
    // torch.export's archive is not among the inputs the workbench reads: it must say so, not guess.
    QTest::newRow("torch.export .pt2") << ref("export/block.pt2") << "block.pt2";
    dir.mkpath("empty_folder");
    QTest::newRow("empty folder") << dir.filePath("empty_folder") << "empty_folder";
    // A Kiln repro whose graph.txt was damaged (opens_data wrote the good one).
    dir.mkpath("bad_kiln_repro");
    for (const char* f : {"inputs.safetensors", "predicate.json"})
      QFile::copy(kilnRepro() + "/" + f, dir.filePath(QString("bad_kiln_repro/") + f));
    write("bad_kiln_repro/graph.txt", "class Repro(torch.nn.Module):\n    def forward(self, x: \"f32[2]\"):\n        y = ???\n");
    QTest::newRow("broken Kiln repro") << dir.filePath("bad_kiln_repro") << "graph.txt";
    dir.mkpath("half_kiln_repro");
    write("half_kiln_repro/graph.txt", "class Repro(torch.nn.Module):\n    def forward(self, x: \"f32[2]\"):\n        return (x,)\n");
    QTest::newRow("Kiln repro without inputs") << dir.filePath("half_kiln_repro") << "inputs.safetensors";
  }

  void badInputs() {
    QFETCH(QString, path);
    QFETCH(QString, named);
    Workbench w;
    w.show();
    QString error;
    Outcome o = open_and_wait(w, path, &error, 30000);
    QVERIFY2(o != Outcome::TimedOut, qPrintable("still busy: " + w.busyReason()));
    if (o == Outcome::Failed) {
      qInfo("%s", qPrintable(error));
      QVERIFY2(!named.isEmpty() && error.contains(named), qPrintable(error));
      QVERIFY(w.lastError() == error);
      QCOMPARE(w.sessionModel()->rowCount(), 0);
    } else {
      // It opened: what it read must be showable, and what it could not read
      // is said where it would have been shown, naming the file and line.
      QVERIFY(w.currentSession() && !w.currentSession()->compiles.empty());
      int stages = 0;
      QStringList problems = walk_every_stage(w, &stages);
      if (named.isEmpty()) QVERIFY2(problems.isEmpty(), qPrintable(problems.join("\n")));
      QVERIFY2(named.isEmpty() || !problems.isEmpty(), qPrintable(path + " opened cleanly; expected an error naming " + named));
      for (const QString& p : problems) {
        qInfo("%s", qPrintable(p));
        QVERIFY2(p.contains(named) && p.contains("Cannot show"), qPrintable(p));
      }
    }
    // The window still opens good input afterwards.
    Outcome again = open_and_wait(w, ref("traces/s01_sin_cos"), &error, 30000);
    QVERIFY2(again == Outcome::Opened, qPrintable(error));
  }
};

QTEST_MAIN(TestOpenEverything)
#include "test_open_everything.moc"
