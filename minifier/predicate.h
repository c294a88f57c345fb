#pragma once
// Predicates: whether a candidate still shows the failure being minified.
//
//   compile-error     Kiln's pipeline or code generator refuses the graph
//                     (optionally only at `stage`, and only when the message
//                     matches `message_regex`);
//   crash             the compiled code dies by a signal (the evaluator sees
//                     it from outside: checks run in a child process);
//   accuracy          compiled output vs an fp64 eager reference, judged as
//                     torch._dynamo's same(): allclose to the eager result, or
//                     RMSE(compiled - fp64) <= 3 * RMSE(eager - fp64) + tol/10;
//                     non-float outputs are ignored unless check_non_float;
//   cpu-gpu-mismatch  backend kiln against kiln-cuda, the same rule;
//   oracle            a user command run on a PyTorch repro.py of the
//                     candidate ({repro} in it is the path): interesting on a
//                     non-zero exit, or when `oracle_match` matches its output.
//
// Each check returns a Verdict with a signature (the failure's class: which
// stage and message, which signal, "accuracy"); the driver accepts a
// candidate only when its signature is the original's, unless allow_drift.
#include <cstdint>
#include <string>

#include "minifier/candidate.h"
#include "minifier/oracle_pool.h"

namespace kiln::minify {

enum class CheckKind { CompileError, Crash, Accuracy, CpuGpuMismatch, Oracle };
const char* check_name(CheckKind k);
Expected<CheckKind> check_from_name(const std::string& name);

struct PredicateOptions {
  CheckKind kind = CheckKind::Accuracy;
  std::string stage;          // compile-error: "passes", a pass name, or "codegen"; empty: any
  std::string message_regex;  // compile-error: ECMAScript regex searched in the message
  double tolerance = 1e-3;
  bool check_non_float = false;
  std::string oracle_command;  // oracle: shell command with {repro}
  // oracle: the persistent PyTorch oracle (oracle_pool.h) instead of a
  // command per candidate: the Python to start one worker per -j slot with,
  // the worker script ("" = Kiln's own) and the workers' resident memory bound.
  std::string oracle_python;
  std::string oracle_worker;
  int64_t oracle_memory_mb = 0;
  // oracle: KILN_REPRO_INJECT for the repro.py (Inductor's own injected relu
  // bug, "relu:accuracy"); "" leaves the environment as it is.
  std::string repro_inject;
  std::string oracle_match;    // oracle: regex searched in stdout+stderr; empty: non-zero exit
  std::string torch_device = "cpu";  // oracle: where repro.py puts its inputs
  std::string torch_check = "accuracy";  // oracle: what repro.py's run block checks (repro.h)
  bool allow_drift = false;
  // oracle: minify an input whose failure is in PyTorch's eager half (not the compiler's).
  bool allow_eager_failure = false;
  // KILN_INJECT_BUG for the compiles ("" takes the environment, "none" ignores it).
  std::string inject_bug;
};

// JSON text for Repro::predicate_json, and back (errors name the bad field).
std::string predicate_to_json(const PredicateOptions& p, const std::string& signature = "");
Expected<PredicateOptions> predicate_from_json(const std::string& json, std::string* signature = nullptr);
// "accuracy (tolerance 0.001)", "compile-error at codegen matching 'relu'".
std::string describe(const PredicateOptions& p);

struct Verdict {
  enum class Outcome {
    Pass,     // no failure
    Fail,     // a failure, described by kind and signature
    Invalid,  // not a program: the eager reference or the meta functions reject it
  };
  Outcome outcome = Outcome::Pass;
  std::string kind;       // "compile-error", "crash", "accuracy", "mismatch", "oracle", "timeout", "oom", "setup"
  std::string signature;  // compared with the original failure's
  std::string detail;     // for people: the message, the numbers

  bool failed() const { return outcome == Outcome::Fail; }
};

// Whether `v` shows the original failure (or any failure, with allow_drift).
bool is_interesting(const Verdict& v, const Verdict& original, bool allow_drift);

// Runs the check on the candidate in this process. It may crash or hang:
// the evaluator calls it in a child process only (evaluator.h).
Verdict run_check(const PredicateOptions& p, const Candidate& c);

// A compile error's signature: where, and the message with its specifics
// (numbers, quoted names) blanked, so "node 'relu_2'" and "node 'relu'" match.
std::string error_signature(const std::string& stage, const std::string& message);

// Per-check halves, one file each.
Verdict check_compile_error(const PredicateOptions& p, const Candidate& c);  // predicate_compile.cpp
Verdict check_crash(const PredicateOptions& p, const Candidate& c);          // predicate_compile.cpp
Verdict check_accuracy(const PredicateOptions& p, const Candidate& c);       // predicate_accuracy.cpp
Verdict check_cpu_gpu(const PredicateOptions& p, const Candidate& c);        // predicate_accuracy.cpp
Verdict check_oracle(const PredicateOptions& p, const Candidate& c);         // predicate_oracle.cpp
// The oracle's halves, shared by the command (check_oracle) and the
// persistent workers (the evaluator's pool): a temporary folder (named so
// remove_stale_oracle_folders knows it), the candidate's repro.py in it,
// and the verdict from how the repro.py's run ended and what it printed.
std::string make_oracle_folder();
Status write_oracle_repro(const PredicateOptions& p, const Candidate& c, const std::string& repro_path);
Verdict oracle_verdict(const PredicateOptions& p, const OracleRun& run);
// The persistent workers' options the predicate sets (Python, worker script,
// memory bound, warm-up device, KILN_REPRO_INJECT); the caller adds how many,
// the timeout and cancel.
OraclePoolOptions oracle_pool_options(const PredicateOptions& p);
// The seconds repro.py itself spent on eager and compiled runs ("KILN_TIMING
// run_s=..." in its output); negative when it did not say.
double oracle_run_seconds(const std::string& output);
// Removes the temporary folders of oracle runs whose process is gone (a
// minify killed with -9 leaves them); called when a minify starts.
void remove_stale_oracle_folders();

}  // namespace kiln::minify
