// Indexing speed: a 100 MB TORCH_TRACE log, made by concatenating the
// reference logs with renumbered frame ids (as `kiln-cli bench trace` does),
// must index in well under 1.5 s (the bound, on 2 cores). The check
// is on the process's CPU time, which a busy shared machine does not inflate;
// the wall time is reported beside it.
#include "test_support.h"

#include <QElapsedTimer>
#include <QTemporaryDir>

#include <cctype>
#include <ctime>
#include <fstream>
#include <iterator>

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

  // The indexer hashes payloads and lets go of the file's pages every 64 MB:
  // damage on either side of a window is still found, in line order, and
  // payloads from released windows still read back whole.
  void damage_on_both_sides_of_a_window() {
    QTemporaryDir tmp;
    std::string path = tmp.path().toStdString() + "/big.log";
    uint64_t written = 0;
    QVERIFY(trace::write_concatenated_log(test::reference_dir(), path, uint64_t(72) << 20, &written).ok());
    std::string text;
    {
      std::ifstream in(path, std::ios::binary);
      text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    // Flip a letter in the first payload line after each offset.
    std::vector<size_t> flipped;
    for (size_t at : {size_t(10) << 20, size_t(70) << 20}) {
      size_t line = text.find("\n\t", at) + 2;
      while (!std::isalpha(static_cast<unsigned char>(text[line]))) ++line;
      text[line] = text[line] == 'a' ? 'b' : 'a';
      flipped.push_back(line);
    }
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    auto t = trace::read_trace_log(path);
    QVERIFY(t.ok());
    QCOMPARE(t->diagnostics.size(), size_t(2));
    QVERIFY(t->diagnostics[0].line < t->diagnostics[1].line);
    for (const auto& d : t->diagnostics) QVERIFY2(d.message.find("md5 mismatch") != std::string::npos, d.message.c_str());
    const trace::Artifact& first = t->entries.front().artifacts.front();
    auto payload = t->text(first.payload);
    QVERIFY(payload.ok());
    QVERIFY(!payload->empty());
    // Read from memory, nothing is released: the same bytes.
    trace::Trace in_memory = trace::read_trace_text(text, path);
    QCOMPARE(*payload, *in_memory.text(in_memory.entries.front().artifacts.front().payload));
  }
};

QTEST_APPLESS_MAIN(TestTraceSpeed)
#include "test_trace_speed.moc"
