// Cancelling a session load: the workbench's window closing sets the load's
// cancel flag and waits for its worker, so the process ends only as fast as
// the load notices. resnet18_train.py (a training loop of ResNet-18 steps,
// each compiled by Kiln) is cancelled at several points of its load, inside
// the interpreter and inside the compiles; every one must stop within 0.5 s.
// CTest runs this program alone (RUN_SERIAL): the figures are wall-clock.
#include <QtTest>

#include <atomic>
#include <chrono>
#include <thread>

#include "session/session.h"
#include "test_support.h"

using namespace kiln::session;
using Clock = std::chrono::steady_clock;

class TestSessionCancel : public QObject {
  Q_OBJECT

 private slots:
  void cancelStopsALoadWithinHalfASecond_data() {
    QTest::addColumn<int>("after_ms");
    for (int ms : {200, 450, 700, 950, 1200, 1500, 2000, 2500, 3000, 4000}) QTest::newRow(qPrintable(QString("at %1 ms").arg(ms))) << ms;
  }

  void cancelStopsALoadWithinHalfASecond() {
    QFETCH(int, after_ms);
    const std::string program = std::string(KILN_SOURCE_DIR) + "/resources/examples/resnet18_train.py";
    std::atomic<bool> cancel{false}, finished{false};
    std::string outcome;
    Clock::time_point ended;
    std::thread loader([&] {
      LoadOptions o;
      o.cancel = &cancel;
      auto s = load_program(program, o);
      outcome = s ? "loaded" : s.status().message();
      ended = Clock::now();
      finished = true;
    });
    const auto started = Clock::now();
    while (!finished && Clock::now() - started < std::chrono::milliseconds(after_ms))
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const bool was_running = !finished;
    const auto asked = Clock::now();
    cancel = true;
    loader.join();
    if (!was_running) QSKIP(qPrintable(QString("the load ended before %1 ms (%2)").arg(after_ms).arg(QString::fromStdString(outcome))));
    const double stop_ms = std::chrono::duration<double, std::milli>(ended - asked).count();
    qInfo("cancelled at %d ms: stopped %.1f ms later (%s)", after_ms, stop_ms, outcome.c_str());
    QCOMPARE(QString::fromStdString(outcome), QString("cancelled"));
    QVERIFY2(stop_ms < 500, qPrintable(QString("%1 ms").arg(stop_ms)));
  }
};

QTEST_GUILESS_MAIN(TestSessionCancel)
#include "test_session_cancel.moc"
