// parallel_for (core/tensor/parallel.h): every index is visited exactly once
// whatever the range, grain and thread count; the first exception comes back
// to the caller; and on the OpenMP team a thread that is held up does not
// hold up the chunks after its first (the others take them).
#include <QtTest>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/tensor/parallel.h"

using namespace kiln;

class TestParallel : public QObject {
  Q_OBJECT

 private slots:
  void cleanup() { set_num_threads(0); }

  void every_index_once() {
    for (int threads : {1, 2, 3, 8})
      for (int64_t n : {int64_t(1), int64_t(7), int64_t(1000), int64_t(100003)})
        for (int64_t grain : {int64_t(1), int64_t(64), int64_t(50000)}) {
          set_num_threads(threads);
          std::vector<std::atomic<int>> seen(size_t(n + 10));
          std::atomic<bool> empty_chunk{false};
          parallel_for(10, 10 + n, grain, [&](int64_t b, int64_t e) {
            if (b >= e) empty_chunk = true;
            for (int64_t i = b; i < e; ++i) seen[size_t(i)].fetch_add(1);
          });
          QVERIFY(!empty_chunk.load());
          for (int64_t i = 0; i < n + 10; ++i)
            QVERIFY2(seen[size_t(i)].load() == (i >= 10 ? 1 : 0),
                     qPrintable(QString("threads %1 n %2 grain %3: index %4 seen %5 times")
                                    .arg(threads).arg(n).arg(grain).arg(i).arg(seen[size_t(i)].load())));
        }
  }

  void first_exception_reaches_the_caller() {
    set_num_threads(4);
    std::atomic<int64_t> ran{0};
    bool caught = false;
    try {
      parallel_for(0, 1 << 20, 1024, [&](int64_t b, int64_t) {
        ran.fetch_add(1);
        if (b == 0) throw std::runtime_error("chunk 0 failed");
      });
    } catch (const std::runtime_error& e) {
      caught = std::string(e.what()) == "chunk 0 failed";
    }
    QVERIFY(caught);
    QVERIFY(ran.load() >= 1);
  }

  // Four threads, four chunks each; the first chunk of thread 0's block
  // sleeps far longer than everything else takes. The three chunks after it
  // must be run by the other threads.
  void a_held_up_thread_is_helped() {
    if (std::string(parallel_backend_name()) != "OpenMP (libgomp)")
      QSKIP("the loops run on TBB here (KILN_PARALLEL=tbb or no libgomp): its static partitioner does not rebalance");
    set_num_threads(4);
    std::mutex mutex;
    std::vector<std::thread::id> by_chunk(16);
    parallel_for(0, 16, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        std::this_thread::sleep_for(std::chrono::milliseconds(c == 0 ? 600 : 5));
        std::lock_guard lock(mutex);
        by_chunk[size_t(c)] = std::this_thread::get_id();
      }
    });
    std::set<std::thread::id> helpers;
    for (int c = 1; c < 4; ++c) {
      QVERIFY2(by_chunk[size_t(c)] != by_chunk[0], qPrintable(QString("chunk %1 waited for the held-up thread").arg(c)));
      helpers.insert(by_chunk[size_t(c)]);
    }
    QVERIFY(!helpers.empty());
  }
};

QTEST_MAIN(TestParallel)
#include "test_parallel.moc"
