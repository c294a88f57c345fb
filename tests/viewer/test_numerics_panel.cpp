// The numerics panel as the stage changes under it: a run started on one
// stage keeps its result for that stage when the user moves on meanwhile, the
// panel never stays at "Measuring ..." with nothing running, and a stage or
// session shows only its own table and colours.
#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QProgressBar>
#include <QSignalSpy>
#include <QtTest/QtTest>

#include "test_support.h"
#include "workbench_test_util.h"
#include "viewer/graph_view.h"
#include "viewer/numerics_model.h"
#include "viewer/workbench.h"

using namespace kiln;
using namespace kiln::viewer;
using namespace kiln::session;

using test::settle;
using test::trace_dir;

class TestNumericsPanel : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    test::isolate_settings("kiln_test_numerics_panel.kiln");
  }

  // The user's report: Ctrl+M on ResNet-18's forward graph, then another
  // stage within a second. The run finishes, its result is kept for the
  // forward graph and shown on returning there; nothing says "Measuring".
  void aRunOutlivesAStageChange() {
    Workbench w;
    QAbstractItemModelTester tester(w.numericsModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    w.show();
    QSignalSpy opened(&w, &Workbench::sessionOpened);
    w.setPendingSelection("0/0", "aot_forward_graph");
    w.open({QString::fromStdString(trace_dir("s05_resnet18_train"))});
    QVERIFY(opened.wait(60000));
    QVERIFY(settle(w, 300000));
    QCOMPARE(w.currentStage()->name, std::string("aot_forward_graph"));
    w.measureNumerics();
    QVERIFY(w.numericsRunning());
    QTest::qWait(300);
    QVERIFY(w.selectStage("aot_backward_graph"));
    QTRY_VERIFY_WITH_TIMEOUT(!w.numericsRunning(), 300000);
    QVERIFY(settle(w));
    auto* progress = w.findChild<QProgressBar*>("busy_progress");
    QVERIFY(progress);
    QVERIFY2(!progress->isVisible(), qPrintable(QString::number(progress->value()) + " " + w.busyReason()));
    QVERIFY2(!w.numericsNotes().contains("Measuring"), qPrintable(w.numericsNotes()));
    // The backward graph was not measured: its table is empty.
    QCOMPARE(w.numericsModel()->rowCount(), 0);
    QVERIFY(w.selectStage("aot_forward_graph"));
    QVERIFY(settle(w));
    QVERIFY2(w.numericsModel()->rowCount() > 0, qPrintable(w.numericsNotes()));
    QVERIFY2(w.numericsNotes().contains("nodes measured"), qPrintable(w.numericsNotes()));
  }
  // A stage shows only its own numerics table and error colours; the fusion
  // colours only where the stage has fusion groups; the user's pick comes
  // back where it applies; another session starts clean.
  void aStageShowsOnlyItsOwnNumericsAndColours() {
    Workbench w;
    QAbstractItemModelTester tester(w.numericsModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    w.show();
    QSignalSpy opened(&w, &Workbench::sessionOpened);
    w.setPendingSelection("0/0", "aot_forward_graph");
    w.open({test::example()});
    QVERIFY(opened.wait(60000));
    QVERIFY(settle(w));
    const int forward = w.currentStageIndex();
    QSignalSpy done(&w, &Workbench::numericsDone);
    w.measureNumerics();
    QVERIFY(done.wait(120000));
    QVERIFY(settle(w));
    QVERIFY(w.numericsModel()->rowCount() > 0);
    QCOMPARE(w.graphView()->colorMode(), GraphColorMode::Numerics);
    // The next graph stage was not measured: no table, no error colours.
    w.setChangedOnly(true);
    w.stepStage(1);
    QVERIFY(settle(w));
    QVERIFY(w.currentStageIndex() != forward);
    QCOMPARE(w.numericsModel()->rowCount(), 0);
    QVERIFY2(!w.numericsNotes().contains("nodes measured"), qPrintable(w.numericsNotes()));
    QCOMPARE(w.graphView()->colorMode(), GraphColorMode::OpKind);
    // Back: the forward graph's own result and colours again.
    QVERIFY(w.selectStageAt(forward));
    QVERIFY(settle(w));
    QVERIFY(w.numericsModel()->rowCount() > 0);
    QCOMPARE(w.graphView()->colorMode(), GraphColorMode::Numerics);

    // Fusion groups: picked on the stage the scheduler coloured, kept off the stages without.
    const SessionCompile* c = w.currentCompile();
    int fused = -1, plain = -1;
    for (int i = 0; i < int(c->stages.size()); ++i) {
      const SessionStage& st = c->stages[size_t(i)];
      if (st.kind != StageKind::Graph || i == forward) continue;
      if (!st.fusion_groups.empty() && fused < 0) fused = i;
      if (st.fusion_groups.empty() && st.changed && plain < 0) plain = i;
    }
    QVERIFY(fused >= 0 && plain >= 0);
    auto* mode = w.findChild<QComboBox*>("colour_mode");
    QVERIFY(mode);
    QVERIFY(w.selectStageAt(fused));
    QVERIFY(settle(w));
    mode->setCurrentIndex(1);  // as the user picks it
    QCOMPARE(w.graphView()->colorMode(), GraphColorMode::FusionGroup);
    QVERIFY(w.selectStageAt(plain));
    QVERIFY(settle(w));
    QCOMPARE(w.graphView()->colorMode(), GraphColorMode::OpKind);
    QVERIFY(w.selectStageAt(fused));
    QVERIFY(settle(w));
    QCOMPARE(w.graphView()->colorMode(), GraphColorMode::FusionGroup);
    mode->setCurrentIndex(0);

    // Another session: nothing of the program's numerics.
    QVERIFY(w.selectStageAt(forward));
    QVERIFY(settle(w));
    QVERIFY(w.numericsModel()->rowCount() > 0);
    w.open({QString::fromStdString(trace_dir("s02_linear_relu"))});
    QVERIFY(opened.wait(60000));
    QVERIFY(settle(w));
    QVERIFY(QString::fromStdString(w.currentSession()->path).contains("s02_linear_relu"));
    QCOMPARE(w.numericsModel()->rowCount(), 0);
    QCOMPARE(w.graphView()->colorMode(), GraphColorMode::OpKind);
  }
  // PyTorch's repro.py and minifier_launcher.py (the reference minifier
  // runs): every graph stage measures, its inputs made from load_args'
  // shapes and dtypes. (Already so since f15e643; kept as a guard on the
  // user's report that none of them ran.)
  void numericsRunOnPyTorchReprosAndLaunchers_data() {
    QTest::addColumn<QString>("file");
    for (const char* f : {"accuracy_cpu/repro.py", "accuracy_cpu/minifier_launcher.py", "accuracy_cuda/repro.py",
                          "accuracy_cuda/minifier_launcher.py", "compile_error_cpu/minifier_launcher.py"})
      QTest::newRow(f) << QString::fromStdString(test::reference_dir() + "/minifier/" + f);
  }

  void numericsRunOnPyTorchReprosAndLaunchers() {
    QFETCH(QString, file);
    Workbench w;
    QSignalSpy opened(&w, &Workbench::sessionOpened);
    w.open({file});
    QVERIFY(opened.wait(60000));
    QVERIFY(settle(w, 120000));
    const SessionCompile* c = w.currentCompile();
    QVERIFY(c);
    int measured = 0;
    for (int i = 0; i < int(c->stages.size()); ++i) {
      if (c->stages[size_t(i)].kind != StageKind::Graph || !c->stages[size_t(i)].changed) continue;
      QVERIFY(w.selectStageAt(i));
      QVERIFY(settle(w));
      QSignalSpy done(&w, &Workbench::numericsDone);
      w.measureNumerics();
      QVERIFY(done.wait(120000));
      QVERIFY2(w.numericsModel()->rowCount() > 0,
               qPrintable(QString::fromStdString(c->stages[size_t(i)].name) + ": " + w.numericsNotes()));
      QVERIFY2(!w.numericsNotes().contains("could not run"), qPrintable(w.numericsNotes()));
      ++measured;
    }
    QVERIFY(measured >= 1);
  }
};

QTEST_MAIN(TestNumericsPanel)
#include "test_numerics_panel.moc"
