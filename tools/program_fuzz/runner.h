#pragma once
// Runs programs in child processes, one per (program, backend), so that a
// crash, a hang or an abort in one run is a finding rather than the end of
// the fuzzer. Each child is a fresh VM wired as `kiln-cli run` wires it.
#include <functional>
#include <string>
#include <vector>

namespace kiln::fuzz {

struct RunRequest {
  std::string source;
  std::string backend;  // "none": torch.compile returns its argument (plain eager)
  int timeout_s = 120;
};

struct RunResult {
  int code = 0;          // the program's exit code (1: an uncaught Python error)
  int signal = 0;        // the signal that ended the child, 0 when it exited
  bool timed_out = false;
  std::string out, err;  // what the program printed, and its error output
  double seconds = 0;

  // "exit 1", "signal 11", "timeout after 120 s", or "ok".
  std::string status() const;
};

// Every request, at most `jobs` children at a time; results in request order.
// `on_done` is called (in the parent) as each run finishes.
std::vector<RunResult> run_all(const std::vector<RunRequest>& requests, int jobs,
                               const std::function<void(size_t, const RunResult&)>& on_done = {});

// Whether the CUDA driver and a GPU are usable, asked in a child process
// (a parent that initialized CUDA could not fork children that use it).
bool cuda_usable();

}  // namespace kiln::fuzz
