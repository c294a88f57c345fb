#pragma once
// The persistent PyTorch oracle: long-lived Python workers that import torch
// once and then judge one repro.py after another.
//
// Why: a fresh `python3 repro.py` pays about 10 s of torch import, CUDA
// initialisation and Inductor warm-up per candidate, which dominates a
// minify of a real graph. A worker pays that once per -j slot.
//
// Protocol (oracle_worker_script() is the real worker; tests use a fake that
// speaks the same lines). The worker is started as `PYTHON WORKER_SCRIPT`
// through /bin/sh, in its own process group, with
//   stdin   one JSON request per line:
//           {"id": N, "repro": "/abs/repro.py", "output": "/abs/output.txt"}
//   fd 3    one JSON reply per line:
//           first {"ready": true, "pid": P, "torch": "2.11.0"} or
//                 {"ready": false, "error": "why"} (the pool gives up);
//           then per request {"id": N, "exit": CODE} with CODE what
//           `python repro.py` would have exited with, and optionally
//           "restart": true when the worker knows it is no longer usable
//           (a CUDA context broken by the candidate);
//   stdout/stderr  the worker's own log; a candidate's output goes to the
//           request's "output" file (the worker redirects fds 1 and 2).
// The pool kills and restarts a worker that dies, hangs past the timeout or
// holds more resident memory than the bound; the candidate it was running
// gets the matching outcome. Everything is driven by one poll() loop in the
// calling thread: the minifier's parent stays single-threaded (isolation.h).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kiln::minify {

// ${XDG_CACHE_HOME:-$HOME/.cache}/kiln/pycache, or "" without a home.
std::string default_pycache_dir();

struct OraclePoolOptions {
  std::string python = "python3";  // a shell word list: "python3", "env X=1 /opt/venv/bin/python -X dev"
  std::string worker_script;       // empty: the built-in worker (oracle_worker_script())
  int parallel = 1;  // workers, one per -j slot
  double timeout_s = 60;           // per candidate, from the request to the reply
  double startup_timeout_s = 300;  // from start to the ready line (import torch, CUDA)
  // Resident memory bound per worker (0: physical memory / (parallel + 1)).
  // A worker holding more after a candidate is replaced (a leak); one passing
  // twice the bound while running is killed, its candidate out of memory.
  int64_t memory_mb = 0;
  std::string warm_up_device;      // "cpu", "cuda": one tiny compile there before the ready line
  // Inductor's compile threads per worker (TORCHINDUCTOR_COMPILE_THREADS);
  // 0: the machine's cores shared out over the workers. Above 1 every worker
  // starts that many compile processes, each importing torch.
  int compile_threads = 0;
  // PYTHONPYCACHEPREFIX for the workers (their bytecode is written there even
  // under PYTHONDONTWRITEBYTECODE), unless the environment sets one; empty:
  // Python's own way (the packages' __pycache__).
  std::string pycache_dir = default_pycache_dir();
  std::vector<std::string> env;    // "NAME=value" set in the workers' environment
  const std::atomic<bool>* cancel = nullptr;
};

struct OracleJob {
  std::string repro;   // absolute path of the repro.py
  std::string output;  // absolute path the worker writes the candidate's output to
};

struct OracleRun {
  enum class End { Exited, Signaled, TimedOut, OutOfMemory, Cancelled, Failed };
  End end = End::Failed;
  int exit_code = 0;
  int signal = 0;
  std::string output;  // the candidate's output (bounded: the first 8 MB and the last 64 KB)
  std::string detail;  // Failed: why the pool could not run it
  double wall_s = 0;   // from the request to the reply
  int worker_pid = 0;
};

struct OraclePoolStats {
  int worker_starts = 0;
  int restarts_crash = 0, restarts_hang = 0, restarts_memory = 0, restarts_asked = 0;
  double startup_s = 0;  // the longest start to ready
  double import_s = 0, warm_up_s = 0;  // of that, the longest torch import and warm-up compile (the worker says)
};

std::string_view oracle_worker_script();

class OraclePool {
 public:
  explicit OraclePool(OraclePoolOptions options);
  ~OraclePool();
  OraclePool(const OraclePool&) = delete;
  OraclePool& operator=(const OraclePool&) = delete;

  // Runs the jobs over the workers, in parallel, dispatched in order;
  // outcomes in job order. When `enough` (told each finished job) returns
  // true, no further job is dispatched: those end Cancelled with detail "not
  // run", while the running ones finish (killing them would cost a worker
  // start).
  std::vector<OracleRun> run(const std::vector<OracleJob>& jobs,
                             const std::function<bool(size_t, const OracleRun&)>& enough = {});
  // Starts every worker now, without waiting for them: they import torch
  // while the caller does other work. (Starting one first and the rest once
  // it was ready was measured on the H200 machine: the import took as long
  // alone, 11 s, and the minify got slower, 23 -> 33 s.)
  void start_all();

  const OraclePoolStats& stats() const { return stats_; }
  // Set when the workers cannot start at all (no torch, a bad PYTHON): every
  // run then ends Failed with this message.
  const std::string& fatal_error() const { return fatal_; }

 private:
  struct Worker;
  bool start(Worker& w);
  void stop(Worker& w, bool kill_now);

  OraclePoolOptions options_;
  std::string folder_;  // the worker script and the workers' logs
  std::vector<std::unique_ptr<Worker>> workers_;
  OraclePoolStats stats_;
  std::string fatal_;
};

// A candidate's output is kept bounded, whatever it prints (`yes` prints
// forever until the timeout): its first kOracleOutputKeep bytes and its last
// kOracleTailKeep, joined by cut_oracle_output with a line saying so.
inline constexpr size_t kOracleOutputKeep = size_t(8) << 20;
inline constexpr size_t kOracleTailKeep = size_t(64) << 10;
std::string cut_oracle_output(const std::string& head, const std::string& tail);
// Reads a file's text, bounded as above.
std::string read_bounded_output(const std::string& path);

// `s` as one single-quoted word for /bin/sh.
std::string shell_quote(const std::string& s);

}  // namespace kiln::minify
