// Indexing speed: a 100 MB TORCH_TRACE log, made by concatenating the
// reference logs with renumbered frame ids (as `kiln-cli bench trace` does),
// must index in well under 1.5 s (the bound, on 2 cores). The check
// is on the process's CPU time, which a busy shared machine does not inflate;
// the wall time is reported beside it.
#include "test_support.h"

#include <QElapsedTimer>
#include <QTemporaryDir>

#include <ctime>

#include "core/trace/reader.h"
#include "core/trace/synthetic_log.h"

using namespace kiln;

class TestTraceSpeed : public QObject {
  Q_OBJECT
 private slots:
  void index_100mb() {
    QTemporaryDir tmp;
    std::string path = tmp.path().toStdString() + "/big.log";
    uint64_t written = 0;
    Status made = trace::write_concatenated_log(test::reference_dir(), path, uint64_t(100) << 20, &written);
    QVERIFY2(made.ok(), made.message().c_str());
    auto cpu_seconds = [] {
      timespec ts{};
      clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
      return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
    };
    double best_wall = 1e9, best_cpu = 1e9;
    size_t entries = 0;
    for (int rep = 0; rep < 3; ++rep) {
      QElapsedTimer timer;
      timer.start();
      double cpu0 = cpu_seconds();
      auto t = trace::read_trace_log(path);
      double cpu = cpu_seconds() - cpu0;
      double wall = double(timer.nsecsElapsed()) * 1e-9;
      QVERIFY(t.ok());
      QVERIFY(t->diagnostics.empty());
      QCOMPARE(t->bytes, written);
      entries = t->entries.size();
      best_wall = std::min(best_wall, wall);
      best_cpu = std::min(best_cpu, cpu);
    }
    qInfo("indexed %.1f MB: wall %.3f s (%.0f MB/s), cpu %.3f s (%.0f MB/s per core), %zu compile entries",
          double(written) / 1e6, best_wall, double(written) / 1e6 / best_wall, best_cpu, double(written) / 1e6 / best_cpu,
          entries);
    QVERIFY2(best_cpu < 1.5, qPrintable(QString("%1 s of CPU").arg(best_cpu)));
  }
};

QTEST_APPLESS_MAIN(TestTraceSpeed)
#include "test_trace_speed.moc"
