#pragma once
// Runs work in child processes, so that a crash, hang or runaway allocation
// in the compiler or in generated code never takes the minifier down.
//
// Why fork and not exec: a child made by fork starts with the candidate and
// the predicate already in memory and costs about a millisecond, where
// exec'ing kiln-cli would pay process start, LLVM initialisation and a
// serialisation round trip per candidate. fork is only unsafe when the parent
// has other threads that may hold locks (TBB's pool, LLVM's, OpenBLAS's): the
// minifier's parent therefore never runs a kernel or the compiler itself (see
// candidate.h); all of that happens in children, which may start any threads
// they like because they exit right after. Parallelism (-j N) is N children
// at once, watched by one poll() loop: the parent needs no threads either.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kiln::minify {

struct Limits {
  double timeout_s = 60;    // wall clock per child; killed (its whole process group) past it
  int64_t memory_mb = 8192;  // address space a child may add to what it inherits
  // Set from another thread: running children are killed within the poll
  // interval (50 ms) and jobs not started end as Cancelled.
  const std::atomic<bool>* cancel = nullptr;
};

struct ChildOutcome {
  enum class End { Exited, Signaled, TimedOut, ForkFailed, Cancelled };
  End end = End::ForkFailed;
  int exit_code = 0;
  int signal = 0;
  std::string payload;  // what the job returned (written to a pipe by the child)
  double wall_s = 0;
};

// A job runs in the child; its return value travels back to the parent.
using ChildJob = std::function<std::string()>;

// Runs every job in its own child, at most `parallel` at a time; outcomes in
// job order. A job that throws std::bad_alloc exits with kOomExitCode; any
// other exception with kExceptionExitCode and its message as the payload.
std::vector<ChildOutcome> run_in_children(const std::vector<ChildJob>& jobs, const Limits& limits, int parallel);

inline constexpr int kOomExitCode = 86;
inline constexpr int kExceptionExitCode = 87;

// "SIGSEGV" for 11.
std::string signal_name(int sig);

}  // namespace kiln::minify
