// Indexing speed: a 100 MB TORCH_TRACE log, made by concatenating the
// reference logs with renumbered frame ids (as `kiln-cli bench trace` does),
// must index in well under 1.5 s (the bound, on 2 cores). The check
// is on the process's CPU time, which a busy shared machine does not inflate;
// the wall time is reported beside it.
#include "test_support.h"

#include <QElapsedTimer>
#include <QTemporaryDir>

#include <ctime>

#include <filesystem>
#include <fstream>

#include "core/trace/reader.h"

using namespace kiln;
namespace fs = std::filesystem;

namespace {

// Adds `offset` to every "frame_id" of the envelopes (payload lines are left alone).
std::string renumber(const std::string& log, int64_t offset) {
  static const std::string kKey = "\"frame_id\": ";
  std::string out;
  out.reserve(log.size() + log.size() / 64);
  size_t pos = 0;
  while (pos < log.size()) {
    size_t eol = log.find('\n', pos);
    if (eol == std::string::npos) eol = log.size() - 1;
    std::string_view line(log.data() + pos, eol + 1 - pos);
    size_t k = line[0] == '\t' ? std::string_view::npos : line.find(kKey);
    if (k == std::string_view::npos) {
      out.append(line);
    } else {
      size_t d = k + kKey.size(), e = d;
      while (e < line.size() && std::isdigit(static_cast<unsigned char>(line[e]))) ++e;
      out.append(line.substr(0, d));
      out += std::to_string(std::stoll(std::string(line.substr(d, e - d))) + offset);
      out.append(line.substr(e));
    }
    pos = eol + 1;
  }
  return out;
}

}  // namespace

class TestTraceSpeed : public QObject {
  Q_OBJECT
 private slots:
  void index_100mb() {
    std::vector<std::string> logs;
    for (const auto& dir : fs::directory_iterator(test::reference_dir() + "/traces"))
      for (const auto& f : fs::directory_iterator(dir.path())) {
        std::ifstream in(f.path(), std::ios::binary);
        logs.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      }
    QVERIFY(!logs.empty());
    QTemporaryDir tmp;
    std::string path = tmp.path().toStdString() + "/big.log";
    uint64_t written = 0;
    {
      std::ofstream out(path, std::ios::binary);
      for (int64_t round = 0; written < (uint64_t(100) << 20); ++round)
        for (const std::string& log : logs) {
          std::string part = renumber(log, round * 1000);
          out << part;
          written += part.size();
        }
    }
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
