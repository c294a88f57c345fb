// Stopping work from the workbench, timed: closing the window while a
// program loads, Cancel in the numerics panel, Cancel in the minifier panel.
// Each must leave the workbench idle (or gone) within half a second, at
// several points of the work. CTest runs this program alone (RUN_SERIAL):
// the figures are wall-clock times, which other tests running beside it
// on two cores would stretch.
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QtTest/QtTest>

#include "test_support.h"
#include "workbench_test_util.h"
#include "viewer/graph_view.h"
#include "viewer/minifier_panel.h"
#include "viewer/workbench.h"

using namespace kiln;
using namespace kiln::viewer;
using namespace kiln::session;

using test::example;
using test::settle;
using test::trace_dir;

class TestCancelGui : public QObject {
  Q_OBJECT

 private slots:
  // Cancel while every candidate hangs (a test hook): the hanging children are
  // killed and the panel is idle again within half a second, with no repro.
  void cancelStopsTheMinifierWithinHalfASecond() {
    Workbench w;
    MinifierPanel* m = test::example_ready_to_minify(w);
    QVERIFY(m);
    qputenv("KILN_MINIFY_TEST_HOOK", "hang:*");
    QSignalSpy done(m, &MinifierPanel::finished);
    m->start();
    QTest::qWait(700);  // the input's own evaluation is running, and hangs
    QVERIFY(m->isRunning());
    QVERIFY(done.isEmpty());
    QElapsedTimer t;
    t.start();
    m->cancel();
    const bool finished = done.wait(10000);
    const qint64 ms = t.elapsed();
    qunsetenv("KILN_MINIFY_TEST_HOOK");
    QVERIFY(finished);
    qInfo("cancel to idle: %lld ms", ms);
    QVERIFY2(ms < 500, qPrintable(QString("cancel took %1 ms").arg(ms)));
    QVERIFY(!done.front().at(0).toBool());
    QVERIFY(!m->isRunning());
    QVERIFY(m->torchRepro().isEmpty());
  }

  // Closing the window while resnet18_train.py loads (its program running,
  // its regions compiling): the window closes and the workbench is destroyed,
  // its workers joined, within half a second, at several points of the load.
  void closingDuringALoadEndsQuickly_data() {
    QTest::addColumn<int>("after_ms");
    for (int ms : {300, 800, 1100, 1300, 1500, 2500}) QTest::newRow(qPrintable(QString("at %1 ms").arg(ms))) << ms;
  }

  void closingDuringALoadEndsQuickly() {
    QFETCH(int, after_ms);
    auto* w = new Workbench;
    w->show();
    QSignalSpy opened(w, &Workbench::sessionOpened);
    w->open({QString(KILN_SOURCE_DIR) + "/resources/examples/resnet18_train.py"});
    QTest::qWait(after_ms);
    if (!opened.isEmpty()) {
      delete w;
      QSKIP(qPrintable(QString("the load ended before %1 ms").arg(after_ms)));
    }
    QElapsedTimer t;
    t.start();
    w->close();
    delete w;
    const qint64 ms = t.elapsed();
    qInfo("closed at %d ms: the workbench was gone %lld ms later", after_ms, ms);
    QVERIFY2(ms < 500, qPrintable(QString("%1 ms").arg(ms)));
  }

  // Cancel in the numerics panel on ResNet-18's joint graph (1,422 nodes;
  // the ladder runs it five times, then compiles it unfused): the worker is
  // idle again within half a second, at several points of the run.
  void numericsCancelIsQuick_data() {
    QTest::addColumn<int>("after_ms");
    for (int ms : {200, 1000, 2500, 5000, 8000}) QTest::newRow(qPrintable(QString("at %1 ms").arg(ms))) << ms;
  }

  void numericsCancelIsQuick() {
    QFETCH(int, after_ms);
    Workbench w;
    QSignalSpy opened(&w, &Workbench::sessionOpened);
    w.open({QString::fromStdString(trace_dir("s05_resnet18_train"))});
    QVERIFY(opened.wait(60000));
    QVERIFY(settle(w));
    QVERIFY(w.selectCompile("0/0"));
    QVERIFY(w.selectStage("aot_joint_graph"));
    QVERIFY(QTest::qWaitFor([&] { return w.graphView()->graph() && w.graphView()->graph()->size() == 1422; }, 30000));
    QSignalSpy done(&w, &Workbench::numericsDone);
    w.measureNumerics();
    QTest::qWait(after_ms);
    if (!w.numericsRunning()) QSKIP(qPrintable(QString("the ladder ended before %1 ms").arg(after_ms)));
    QElapsedTimer t;
    t.start();
    w.cancelNumerics();
    QVERIFY(QTest::qWaitFor([&] { return !w.numericsRunning(); }, 10000));
    const qint64 ms = t.elapsed();
    qInfo("cancelled at %d ms: idle %lld ms later", after_ms, ms);
    QVERIFY2(ms < 500, qPrintable(QString("%1 ms").arg(ms)));
    QVERIFY(done.isEmpty());  // a cancelled run shows nothing
  }
};

QTEST_MAIN(TestCancelGui)
#include "test_cancel_gui.moc"
