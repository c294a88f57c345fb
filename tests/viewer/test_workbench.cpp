// The workbench end to end, offscreen: open a reference trace and the bundled
// example, select compile ids, step through stages, carry a node selection
// across stages, diff a pass, check an input signature, measure numerics; the
// `kiln` binary's --screenshot writes a picture that is not blank; and the
// figure the issue asks for (opening s05_resnet18_train up to its graph).
#include <QAbstractItemModelTester>
#include <QDropEvent>
#include <QImage>
#include <QMimeData>
#include <QSignalSpy>
#include <QtTest/QtTest>

#include <chrono>

#include "test_support.h"
#include "workbench_test_util.h"
#include "viewer/code_editor.h"
#include "viewer/graph_view.h"
#include "viewer/guard_models.h"
#include "viewer/minifier_panel.h"
#include "viewer/numerics_model.h"
#include "viewer/session_model.h"
#include "viewer/workbench.h"

using namespace kiln;
using namespace kiln::viewer;
using namespace kiln::session;

namespace {

using test::example;
using test::settle;
using test::trace_dir;

// Waits for the stage job to come back (the graph may still be laying out).
bool stage_loaded(Workbench& w, int stage, int ms = 30000) {
  return QTest::qWaitFor([&] { return w.currentStageIndex() == stage && w.isSettled(); }, ms);
}

}  // namespace

class TestWorkbench : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    test::isolate_settings("kiln_test_workbench.kiln");
  }

  void traceOpenSelectStep() {
    Workbench w;
    QAbstractItemModelTester tester(w.sessionModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    w.show();
    QSignalSpy opened(&w, &Workbench::sessionOpened);
    w.open({QString::fromStdString(trace_dir("s03_graph_breaks"))});
    QVERIFY(opened.wait(30000));
    QVERIFY(settle(w));
    QVERIFY(w.currentCompile());
    QVERIFY(w.selectCompile("2/0"));
    QCOMPARE(w.currentCompile()->function, std::string("f_data_dep"));
    QVERIFY(settle(w));
    QVERIFY(w.graphView()->graph());
    // The source of the dump is elsewhere: the quoted line of the break is marked and explained.
    QVERIFY(w.sourceView()->markTooltips().count(8));
    QVERIFY(w.sourceView()->markTooltips().at(8).contains("Data-dependent branching"));
    // Guards of the compile.
    QVERIFY(w.guardModel()->rowCount() > 0);
    // Step through every stage: the graph follows, code stages land in the code view.
    int start = w.currentStageIndex();
    int steps = 0, kiln_stages = 0;
    while (true) {
      int before = w.currentStageIndex();
      w.stepStage(1);
      if (w.currentStageIndex() == before) break;
      QVERIFY(stage_loaded(w, w.currentStageIndex()));
      const SessionStage* st = w.currentStage();
      QVERIFY(st);
      if (st->kind == StageKind::Graph) {
        QVERIFY2(w.graphView()->graph(), st->name.c_str());
        QVERIFY(w.stageInfoText().startsWith(QString::fromStdString(st->name)));
      } else if (st->name.starts_with(kKilnStagePrefix)) {
        // Kiln's code from the dump's graph: loop IR, LLVM IR, assembly, CUDA source.
        QCOMPARE(w.codeView()->language(), QString::fromStdString(st->language));
        QVERIFY(!w.codeView()->toPlainText().isEmpty());
      } else {
        QCOMPARE(w.codeView()->language(), QString("python"));
        QVERIFY(w.codeView()->toPlainText().contains("def "));
      }
      kiln_stages += st->name.starts_with(kKilnStagePrefix);
      ++steps;
    }
    QVERIFY2(steps >= 5, qPrintable(QString::number(steps)));
    // PyTorch's stages, then Kiln's pipeline from the dump's inference graph (added after the open).
    QVERIFY2(kiln_stages >= 8, qPrintable(QString::number(kiln_stages)));
    w.stepStage(-(steps));
    QVERIFY(stage_loaded(w, start));
    QVERIFY(w.selectStage("inductor_post_grad_graph"));
    QVERIFY(settle(w));
    QCOMPARE(w.currentStage()->name, std::string("inductor_post_grad_graph"));
    // A compile id that is not there.
    QVERIFY(!w.selectCompile("9/9"));
  }

  void programSelectionDiffAndSignature() {
    Workbench w;
    w.show();
    QSignalSpy opened(&w, &Workbench::sessionOpened);
    w.setPendingSelection("0/0", "aot_forward_graph");
    w.open({example()});
    QVERIFY(opened.wait(60000));
    QVERIFY(settle(w));
    QCOMPARE(w.currentStage()->name, std::string("aot_forward_graph"));
    // Select the linear node, then step to the decomposition: its pieces are selected there.
    const Graph& fg = *w.graphView()->graph();
    QString linear;
    for (const Node& n : fg.nodes)
      if (n.target.find("linear") != std::string::npos) linear = QString::fromStdString(n.name);
    QVERIFY(!linear.isEmpty());
    QVERIFY(w.selectNodeByName(linear));
    QCOMPARE(w.selectedNodeNames(), std::vector<std::string>{linear.toStdString()});
    // The source view went to the line that made it (self.fc1(x) on line 14).
    QCOMPARE(w.sourceView()->currentLineNumber(), 14);
    w.setChangedOnly(true);
    w.setDiffMode(true);
    w.stepStage(1);
    QVERIFY(settle(w));
    QCOMPARE(w.currentStage()->name, std::string("forward decompose #2"));
    QVERIFY2(w.graphView()->selectedNodes().size() >= 2, "the decomposed linear is selected");
    QVERIFY2(w.stageInfoText().contains("diff: +"), qPrintable(w.stageInfoText()));
    QVERIFY(!w.stageInfoText().contains("+0 added"));
    // The signature check: a batch of 12 misses entry 0/0 and hits the recompiled 0/1.
    SignatureModel* sig = w.signatureModel();
    QCOMPARE(sig->rowCount(), 1);
    QVERIFY(sig->setData(sig->index(0, SignatureModel::Shape), "12, 16"));
    QVERIFY2(w.signatureVerdict().contains("size mismatch at index 0. expected 8, actual 12"), qPrintable(w.signatureVerdict()));
    QVERIFY2(w.signatureVerdict().contains("would run entry 0/1"), qPrintable(w.signatureVerdict()));
    QVERIFY(sig->setData(sig->index(0, SignatureModel::Shape), "8, 17"));
    QVERIFY(w.signatureVerdict().contains("would recompile"));
    // Numerics of the shown stage.
    QSignalSpy numerics(&w, &Workbench::numericsDone);
    w.measureNumerics();
    QVERIFY(numerics.wait(60000));
    QVERIFY(w.numericsModel()->rowCount() > 0);
    QCOMPARE(w.numericsModel()->result().first_divergent, -1);
    // The code stages of the compile are in the code view.
    QVERIFY(w.selectStage("forward llvm_ir"));
    QCOMPARE(w.codeView()->language(), QString("llvm"));
    QVERIFY(w.codeView()->toPlainText().contains("define"));
  }

  // Numerics on a PyTorch repro whose forward reads a SymInt and a constant
  // of Repro.__init__ (issue 25's first point: "input ... is not a tensor
  // with known meta"): measured as `repro run` replays it, with a note.
  void numericsOnADynamicShapeRepro() {
    const QString path = QString(KILN_SOURCE_DIR) + "/tests/data/repros/symint_constant_repro.py";
    Workbench w;
    QSignalSpy opened(&w, &Workbench::sessionOpened);
    w.setPendingSelection("symint_constant_repro", "repro");
    w.open({path});
    QVERIFY(opened.wait(60000));
    QVERIFY(settle(w));
    QCOMPARE(w.currentStage()->name, std::string("repro"));
    QSignalSpy numerics(&w, &Workbench::numericsDone);
    w.measureNumerics();
    QVERIFY(numerics.wait(60000));
    QCOMPARE(w.numericsModel()->rowCount(), 3);
    QCOMPARE(w.numericsModel()->result().first_divergent, -1);
    QVERIFY2(w.numericsModel()->result().notes.front().find("its SymInts at the values the file recorded") != std::string::npos,
             w.numericsModel()->result().notes.front().c_str());
  }

  // Minify the forward graph with relu miscompiled on purpose: the repro is written and opens as an entry.
  void minifyFromThePanel() {
    Workbench w;
    QSignalSpy opened(&w, &Workbench::sessionOpened);
    MinifierPanel* m = test::example_ready_to_minify(w);
    QVERIFY(m);
    QSignalSpy done(m, &MinifierPanel::finished);
    m->start();
    QVERIFY(m->isRunning());
    QVERIFY(done.wait(180000));
    QVERIFY2(done.front().at(0).toBool(), qPrintable(m->log()));
    QVERIFY(m->log().contains("step 1 ["));
    QVERIFY(QFileInfo::exists(m->torchRepro()));
    QVERIFY(QFileInfo::exists(m->reproPath()));
    QVERIFY(opened.wait(30000));  // the repro.py, as a new entry
    QCOMPARE(w.sessionModel()->rowCount(), 2);
    QVERIFY(QString::fromStdString(w.sessionModel()->session(1)->path).endsWith("repro.py"));
    QDir(QFileInfo(m->torchRepro()).absolutePath()).removeRecursively();
  }

  // The oracle from the panel: persistent PyTorch workers judge the
  // candidates (here the fake worker of tests/data/oracle, which fails on relu).
  void minifyWithTheOracleFromThePanel() {
    Workbench w;
    MinifierPanel* m = test::example_ready_to_minify(w);
    QVERIFY(m);
    m->setCheck("oracle");
    m->setInjectBug("none");
    m->setOraclePython("python3", QString(KILN_SOURCE_DIR) + "/tests/data/oracle/fake_oracle_worker.py");
    QSignalSpy done(m, &MinifierPanel::finished);
    m->start();
    QVERIFY(done.wait(180000));
    QVERIFY2(done.front().at(0).toBool(), qPrintable(m->log()));
    QVERIFY2(m->log().contains("[probe-ops] aten::relu.default fails alone"), qPrintable(m->log()));
    QVERIFY2(m->log().contains("original failure: oracle: exit 1 (accuracy)"), qPrintable(m->log()));
    QFile repro(m->torchRepro());
    QVERIFY(repro.open(QIODevice::ReadOnly));
    QVERIFY(repro.readAll().contains("torch.ops.aten.relu.default("));
    QDir(QFileInfo(m->torchRepro()).absolutePath()).removeRecursively();
    // Without a Python the panel says what is missing.
    m->setOraclePython("");
    QSignalSpy again(m, &MinifierPanel::finished);
    m->start();
    QVERIFY(again.wait(60000));
    QVERIFY(!again.front().at(0).toBool());
  }

  // The end-to-end run on a dump: open a reference trace, select a
  // compile id, step through its stages, minify its forward graph (relu
  // miscompiled on purpose) and check that the repro is written and opens.
  void traceStepsThenMinifies() {
    Workbench w;
    w.show();
    QSignalSpy opened(&w, &Workbench::sessionOpened);
    w.open({QString::fromStdString(trace_dir("s02_linear_relu"))});
    QVERIFY(opened.wait(30000));
    QVERIFY(settle(w));
    QVERIFY(w.selectCompile("0/0"));
    QVERIFY(settle(w));
    const SessionCompile* c = w.currentCompile();
    QVERIFY(c);
    for (int i = 0; i < int(c->stages.size()); ++i) {
      QVERIFY(w.selectStageAt(i));
      QVERIFY(stage_loaded(w, i));
      QVERIFY2(!w.stageInfoText().startsWith("Cannot show"), qPrintable(w.stageInfoText()));
    }
    QVERIFY(w.selectStage("aot_forward_graph"));
    QVERIFY(settle(w));
    bool has_relu = false;
    for (const Node& n : w.graphView()->graph()->nodes) has_relu |= n.target == "aten::relu.default";
    QVERIFY(has_relu);
    opened.clear();
    MinifierPanel* m = w.minifierPanel();
    m->setCheck("accuracy");
    m->setInjectBug("relu:accuracy");
    QSignalSpy done(m, &MinifierPanel::finished);
    m->start();
    QVERIFY(m->isRunning());
    QVERIFY(done.wait(180000));
    QVERIFY2(done.front().at(0).toBool(), qPrintable(m->log()));
    QVERIFY(QFileInfo::exists(m->reproPath() + "/graph.txt"));
    QVERIFY(QFileInfo::exists(m->torchRepro()));
    QVERIFY(opened.wait(30000));  // the repro.py, as a new entry
    auto repro = w.currentSession();
    QVERIFY(QString::fromStdString(repro->path).endsWith("repro.py"));
    // What is left is the relu, alone.
    QVERIFY(settle(w));
    int calls = 0;
    for (const Node& n : w.graphView()->graph()->nodes) calls += n.op == OpKind::CallFunction;
    QCOMPARE(calls, 1);
    QDir(QFileInfo(m->torchRepro()).absolutePath()).removeRecursively();
  }

  void dropAndRecentFiles() {
    Workbench w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QSignalSpy opened(&w, &Workbench::sessionOpened);
    QString path = QFileInfo(QString::fromStdString(trace_dir("s03_graph_breaks"))).absoluteFilePath();
    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(path)});
    // As a real drag delivers it: the drop goes where the accepted enter went.
    QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&w, &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&w, &drop);
    QVERIFY(opened.wait(30000));
    QCOMPARE(w.sessionModel()->rowCount(), 1);
    QCOMPARE(QSettings().value("recent").toStringList().value(0), path);
  }

  void badPathReportsAndKeepsRunning() {
    Workbench w;
    QSignalSpy failed(&w, &Workbench::openFailed);
    w.open({"/nonexistent/kiln/trace.log"});
    QVERIFY(failed.wait(10000));
    QVERIFY(failed.front().at(1).toString().contains("/nonexistent/kiln/trace.log"));
    QCOMPARE(w.sessionModel()->rowCount(), 0);
  }

  // The figures: opening s05_resnet18_train until its graphs are shown,
  // first with a new workspace (the log is indexed), then again (the index is reused).
  void resnetOpensFast() {
    QFile::remove(QString::fromLocal8Bit(qgetenv("KILN_WORKSPACE")));
    for (const char* pass : {"cold", "warm"}) {
      Workbench w;
      w.show();
      auto t0 = std::chrono::steady_clock::now();
      auto since = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
      w.setPendingSelection("0/0", "aot_forward_graph");
      QSignalSpy opened(&w, &Workbench::sessionOpened);
      w.open({QString::fromStdString(trace_dir("s05_resnet18_train"))});
      QVERIFY(opened.wait(30000));
      double open_s = since();
      QVERIFY(QTest::qWaitFor([&] { return w.graphView()->graph() && w.graphView()->isLayoutReady(); }, 30000));
      double forward_s = since();
      QCOMPARE(int(w.graphView()->graph()->size()), 777);
      auto t1 = std::chrono::steady_clock::now();
      QVERIFY(w.selectStage("aot_joint_graph"));
      QVERIFY(QTest::qWaitFor([&] { return w.graphView()->graph() && w.graphView()->graph()->size() == 1422 && w.graphView()->isLayoutReady(); }, 30000));
      double joint_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
      qInfo("s05_resnet18_train (%s): indexed in %.3f s; forward graph (777 nodes) laid out at %.3f s (%s); "
            "joint graph (1422 nodes) %.3f s after selecting it",
            pass, open_s, forward_s, qPrintable(w.graphView()->lastLayoutEngine()), joint_s);
      QVERIFY2(forward_s < 2.0, qPrintable(QString::number(forward_s)));
      QVERIFY2(joint_s < 2.0, qPrintable(QString::number(joint_s)));
    }
  }

  void screenshotOption() {
    QString exe = QFileInfo(QString(KILN_CLI_PATH)).dir().filePath("kiln");
    QVERIFY2(QFileInfo::exists(exe), qPrintable(exe));
    QTemporaryDir dir;
    QString png = dir.filePath("shot.png");
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("QT_QPA_PLATFORM", "offscreen");
    p.setProcessEnvironment(env);
    p.start(exe, {QString::fromStdString(trace_dir("s03_graph_breaks")), "--select", "2/0", "--stage", "aot_inference_graph",
                  "--screenshot", png, "--quit"});
    QVERIFY(p.waitForFinished(120000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    QImage img(png);
    QVERIFY(!img.isNull());
    QVERIFY(img.width() >= 1200 && img.height() >= 800);
    // Not blank: many distinct colours (text, the graph, the coloured status squares).
    QSet<QRgb> colours;
    for (int y = 0; y < img.height(); y += 3)
      for (int x = 0; x < img.width(); x += 3) colours.insert(img.pixel(x, y));
    QVERIFY2(colours.size() > 50, qPrintable(QString::number(colours.size())));
  }
};

QTEST_MAIN(TestWorkbench)
#include "test_workbench.moc"
