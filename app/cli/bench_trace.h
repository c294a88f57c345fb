#pragma once
// `kiln-cli bench trace` (bench_trace.cpp).
#include <cstdint>
#include <string>

namespace kiln::cli {

struct TraceBenchOptions {
  int reps = 0;  // 0: 7
  int threads = 0;
  uint64_t trace_mb = 100;  // the single log of the index and reopen rows
  int ranks = 1000;         // rank files of the folder rows; 0 leaves them out
  uint64_t big_mb = 1024;   // the log indexed in a fresh process; 0 leaves it out
  std::string reference;
  bool json = false;
};
int run_trace_bench(const TraceBenchOptions& o);
// The fresh process of the big-log row: indexes `log` and prints one JSON line
// with the wall time and the peak resident memory, file pages and anonymous.
int run_trace_index_child(const std::string& log);

}  // namespace kiln::cli
