// `kiln-cli bench trace`: how fast Kiln opens what distributed runs leave
// behind, each row against a plain sequential read of the same bytes in the
// same run (the ceiling) and a target:
//   - one ~100 MB log (the reference logs concatenated, frame ids renumbered):
//     indexing it, and reopening it from a workspace;
//   - a folder of 1,000 rank files (the reference logs, each rank's envelopes
//     rewritten to say its rank): indexed in parallel into an empty SQLite
//     workspace under 10 s, reopened from it under 0.5 s;
//   - a 1 GB log indexed in a fresh process under 5 s with peak resident
//     memory (mapped file pages included) under 1 GB.
#include "app/cli/bench_trace.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

#include "app/cli/bench_util.h"
#include "app/cli/commands.h"
#include "core/store/workspace.h"
#include "core/tensor/parallel.h"
#include "core/trace/index_codec.h"
#include "core/trace/indexed_open.h"
#include "core/trace/reader.h"
#include "core/trace/synthetic_log.h"
#include "core/util/output_text.h"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;

// A temporary folder removed on every way out.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("kiln-bench-trace-" + std::to_string(::getpid()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// The ceiling: the files' bytes read front to back with plain read() calls.
void read_all(const std::vector<std::string>& paths, uint64_t expected) {
  static std::vector<char> buf(size_t(1) << 20);
  uint64_t total = 0;
  for (const std::string& path : paths) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error("cannot open " + path);
    ssize_t n = 0;
    while ((n = ::read(fd, buf.data(), buf.size())) > 0) total += uint64_t(n);
    ::close(fd);
    if (n < 0) throw Error("cannot read " + path);
  }
  if (total != expected) throw Error("short read");
}

template <class T>
T must(Expected<T> e) {
  if (!e) throw Error(e.status().to_string());
  return std::move(*e);
}

struct Row {
  std::string name;
  double bytes = 0;        // over which a rate is given; 0: no rate (reopen rows read an index, not the log)
  double target_ms = 0;    // 0: the ceiling row
  std::function<void()> run;
  std::vector<double> ms;
  double peak_rss_bytes = 0, peak_anon_bytes = 0;  // rows timed in a fresh process
};

// Peak resident memory of this process from /proc/self/status: the kernel's
// high-water mark (VmHWM, mapped file pages included), and the anonymous
// part sampled every 2 ms, since the mark does not split them.
class MemorySampler {
 public:
  MemorySampler() : thread_([this] { loop(); }) {}
  ~MemorySampler() {
    stop_ = true;
    thread_.join();
  }
  void sample() {
    std::ifstream in("/proc/self/status");
    std::string line;
    int64_t anon = 0, file = 0, shmem = 0, hwm = 0;
    auto field = [&](const char* key, int64_t& kb) {
      if (line.rfind(key, 0) == 0) kb = std::atoll(line.c_str() + std::strlen(key));
    };
    while (std::getline(in, line)) {
      field("RssAnon:", anon);
      field("RssFile:", file);
      field("RssShmem:", shmem);
      field("VmHWM:", hwm);
    }
    peak_anon_kb = std::max(peak_anon_kb.load(), anon);
    peak_rss_kb = std::max({peak_rss_kb.load(), anon + file + shmem, hwm});
  }
  std::atomic<int64_t> peak_anon_kb{0}, peak_rss_kb{0};

 private:
  void loop() {
    while (!stop_) {
      sample();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

void print_rows(const std::vector<Row>& rows, const char* heading) {
  std::printf("%s\n%-20s %10s %10s %10s %8s %12s\n", heading, "name", "ms", "MB/s", "target_ms", "ratio", "peak_MB");
  const double ceiling_mbps = rows[0].bytes / 1e6 / (median(rows[0].ms) * 1e-3);
  for (const Row& r : rows) {
    const double ms = median(r.ms);
    std::string rate = "-", ratio = "-", target = "-", peak = "-";
    if (r.bytes > 0) {
      const double mbps = r.bytes / 1e6 / (ms * 1e-3);
      rate = std::to_string(int64_t(mbps));
      ratio = std::to_string(int64_t(100 * mbps / ceiling_mbps)) + "%";
    }
    if (r.target_ms > 0) target = std::to_string(int64_t(r.target_ms));
    if (r.peak_rss_bytes > 0) peak = std::to_string(int64_t(r.peak_rss_bytes / 1e6)) + " (anon " + std::to_string(int64_t(r.peak_anon_bytes / 1e6)) + ")";
    std::printf("%-20s %10.1f %10s %10s %8s %12s%s\n", r.name.c_str(), ms, rate.c_str(), target.c_str(), ratio.c_str(), peak.c_str(),
                r.target_ms > 0 && ms >= r.target_ms ? "  (over target)" : "");
  }
}

nlohmann::json rows_json(const std::vector<Row>& rows) {
  nlohmann::json out = nlohmann::json::array();
  const double ceiling_mbps = rows[0].bytes / 1e6 / (median(rows[0].ms) * 1e-3);
  for (const Row& r : rows) {
    const double ms = median(r.ms);
    nlohmann::json row = {{"name", r.name}, {"ms", ms}, {"runs", r.ms.size()}};
    if (r.bytes > 0) row.update({{"MBps", r.bytes / 1e6 / (ms * 1e-3)}, {"ratio_to_ceiling", r.bytes / 1e6 / (ms * 1e-3) / ceiling_mbps}});
    if (r.target_ms > 0) row.update({{"target_ms", r.target_ms}, {"meets_target", ms < r.target_ms}});
    if (r.peak_rss_bytes > 0) row.update({{"peak_rss_bytes", r.peak_rss_bytes}, {"peak_anon_bytes", r.peak_anon_bytes}});
    out.push_back(std::move(row));
  }
  return out;
}

void run_rows(std::vector<Row>& rows, int reps) {
  for (auto& r : rows) r.run();  // warm up: the files in the page cache, the database open
  for (int rep = 0; rep < reps; ++rep)
    for (auto& r : rows) r.ms.push_back(time_ms(r.run));
}

}  // namespace

int run_trace_index_child(const std::string& log) {
  MemorySampler memory;
  const auto t0 = std::chrono::steady_clock::now();
  trace::Trace t = must(trace::open_trace(log));
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  memory.sample();
  nlohmann::json out = {{"ms", ms},
                        {"peak_rss_bytes", double(memory.peak_rss_kb.load()) * 1024},
                        {"peak_anon_bytes", double(memory.peak_anon_kb.load()) * 1024},
                        {"entries", t.entries.size()},
                        {"diagnostics", t.diagnostics.size()}};
  std::cout << out.dump() << "\n";
  return kExitOk;
}

int run_trace_bench(const TraceBenchOptions& options) {
  TraceBenchOptions o = options;
  if (o.reps == 0) o.reps = 7;
  if (o.threads > 0) set_num_threads(o.threads);
  TempDir tmp;
  nlohmann::json doc = {{"threads", num_threads()}, {"reps", o.reps}};

  // One ~100 MB log.
  const std::string log = (tmp.path / "big.log").string();
  uint64_t bytes = 0;
  if (Status s = trace::write_concatenated_log(o.reference, log, o.trace_mb << 20, &bytes); !s) throw Error(s.to_string());
  auto ws = must(Workspace::open((tmp.path / "workspace.kiln").string()));
  bool from_store = false;
  trace::Trace first = must(trace::open_trace_cached(log, ws.get(), &from_store));  // indexes and stores
  if (!first.diagnostics.empty()) throw Error("the synthetic log has diagnostics: " + first.diagnostics[0].message);
  std::vector<Row> one = {
      {"read", double(bytes), 0, [&] { read_all({log}, bytes); }, {}},
      {"index_100MB", double(bytes), 1500, [&] { must(trace::open_trace(log)); }, {}},
      {"reopen_100MB", 0, 200,
       [&] {
         must(trace::open_trace_cached(log, ws.get(), &from_store));
         if (!from_store) throw Error("reopen did not come from the workspace");
       },
       {}},
  };
  run_rows(one, o.reps);
  char heading[256];
  std::snprintf(heading, sizeof heading, "one log: %.1f MB, %zu compile entries, %d threads, median of %d", bytes / 1e6,
                first.entries.size(), num_threads(), o.reps);
  if (!o.json) print_rows(one, heading);
  doc["single_log"] = {{"rows", rows_json(one)}, {"bytes", bytes}, {"index_bytes", trace::encode_index(first).size()},
                       {"compile_entries", first.entries.size()}};

  // A folder of rank files, indexed into an empty workspace each time.
  if (o.ranks > 0) {
    const std::string dir = (tmp.path / "ranks").string();
    uint64_t folder_bytes = 0;
    if (Status s = trace::write_rank_folder(o.reference, dir, o.ranks, &folder_bytes); !s) throw Error(s.to_string());
    std::vector<std::string> files;
    for (const auto& de : fs::directory_iterator(dir)) files.push_back(de.path().string());
    int fresh = 0;
    size_t entries = 0, diagnostics = 0;
    auto rank_ws = must(Workspace::open((tmp.path / "ranks.kiln").string()));
    std::vector<Row> folder = {
        {"read_ranks", double(folder_bytes), 0, [&] { read_all(files, folder_bytes); }, {}},
        {"index_ranks", double(folder_bytes), 10000,
         [&] {
           const fs::path path = tmp.path / ("fresh-" + std::to_string(fresh++) + ".kiln");
           auto empty = must(Workspace::open(path.string()));
           trace::Trace t = must(trace::open_trace_cached(dir, empty.get(), &from_store));
           if (from_store) throw Error("a fresh workspace already held the folder");
           entries = t.entries.size();
           diagnostics = t.diagnostics.size();
           empty.reset();
           std::error_code ec;
           for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(fs::path(path).concat(suffix), ec);
         },
         {}},
        {"reopen_ranks", 0, 500,
         [&] {
           must(trace::open_trace_cached(dir, rank_ws.get(), &from_store));
           if (!from_store) throw Error("reopen did not come from the workspace");
         },
         {}},
    };
    must(trace::open_trace_cached(dir, rank_ws.get(), &from_store));  // what reopen_ranks reads
    run_rows(folder, o.reps);
    if (diagnostics) throw Error("the rank folder has " + std::to_string(diagnostics) + " diagnostics");
    std::snprintf(heading, sizeof heading, "\nrank folder: %d files, %.1f MB, %zu compile entries, median of %d", o.ranks,
                  folder_bytes / 1e6, entries, o.reps);
    if (!o.json) print_rows(folder, heading);
    doc["rank_folder"] = {{"rows", rows_json(folder)}, {"files", o.ranks}, {"bytes", folder_bytes}, {"compile_entries", entries}};
  }

  // A big log, each run in a fresh process so its peak memory is its own.
  if (o.big_mb > 0) {
    const std::string big = (tmp.path / "huge.log").string();
    uint64_t big_bytes = 0;
    if (Status s = trace::write_concatenated_log(o.reference, big, o.big_mb << 20, &big_bytes); !s) throw Error(s.to_string());
    // Appended piece by piece: GCC 12 warns (-Wrestrict, wrongly) about chains of +.
    std::string command = "'";
    command += self_exe();
    command += "' bench trace --index-child '";
    command += big;
    command += "'";
    if (o.threads > 0) {
      command += " --threads ";
      command += std::to_string(o.threads);
    }
    const int runs = std::min(o.reps, 3);
    std::vector<Row> rows = {{"read_big", double(big_bytes), 0, [&] { read_all({big}, big_bytes); }, {}},
                             {"index_big_fresh", double(big_bytes), 5000, {}, {}}};
    rows[0].run();
    nlohmann::json last;
    for (int i = 0; i < runs; ++i) {
      rows[0].ms.push_back(time_ms(rows[0].run));
      last = run_child_json(command, "bench trace: the index child");
      rows[1].ms.push_back(last["ms"].get<double>());
      rows[1].peak_rss_bytes = std::max(rows[1].peak_rss_bytes, last["peak_rss_bytes"].get<double>());
      rows[1].peak_anon_bytes = std::max(rows[1].peak_anon_bytes, last["peak_anon_bytes"].get<double>());
    }
    if (last["diagnostics"].get<size_t>()) throw Error("the big log has diagnostics");
    std::snprintf(heading, sizeof heading, "\nbig log in a fresh process: %.1f MB, %zu compile entries, median of %d, peak memory target 1000 MB",
                  big_bytes / 1e6, last["entries"].get<size_t>(), runs);
    if (!o.json) print_rows(rows, heading);
    const bool memory_ok = rows[1].peak_rss_bytes < 1e9;
    if (!o.json && !memory_ok) std::printf("peak memory over the 1000 MB target\n");
    doc["big_log"] = {{"rows", rows_json(rows)}, {"bytes", big_bytes}, {"peak_memory_target_bytes", 1e9}, {"meets_memory_target", memory_ok}};
  }
  if (o.json) std::cout << kiln::json_text(doc, 1) << "\n";
  return kExitOk;
}

}  // namespace kiln::cli
