#pragma once
// Evaluates candidates with the predicate, each in a child process
// (isolation.h), `jobs` at a time, with verdicts cached by candidate_key:
// strategies often rebuild a candidate already tried, and those cost nothing.
// Also makes the reference recordings strategies feed replaced nodes from.
//
// Test hook: KILN_MINIFY_TEST_HOOK="ACTION:TARGET[,ACTION:TARGET...]" makes a
// child that evaluates a candidate containing a node with that target
// segfault, abort, hang, allocate without bound or sleep 300 ms (ACTION =
// segfault, abort, hang, oom, sleep; TARGET * matches any candidate) before
// the check runs. The containment tests use it; it is read
// once, when the evaluator is made.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "minifier/candidate.h"
#include "minifier/isolation.h"
#include "minifier/predicate.h"

namespace kiln::minify {

struct EvalStats {
  int oracle_calls = 0;    // candidates evaluated (children run for a verdict)
  int cache_hits = 0;      // candidates answered from the cache
  int reference_runs = 0;  // recordings made
  int timeouts = 0, crashes = 0, invalid = 0;
  // The persistent oracle (--oracle-python): its workers, and per candidate
  // the wall time from request to reply and what repro.py itself spent
  // running eager and compiled (KILN_TIMING); the difference is the overhead.
  OraclePoolStats pool;
  std::vector<double> oracle_wall_s, oracle_run_s;
  double median_oracle_wall_s() const;
  double median_oracle_overhead_s() const;  // of the candidates whose repro.py said its run time
};

// Values of a candidate's call nodes, by node name.
struct Recording {
  uint64_t key = 0;                          // candidate_key of what was recorded
  std::map<std::string, Tensor> eager;       // in each node's own dtype
  std::map<std::string, Tensor> fp64;        // floating inputs widened to float64 (when asked)
  std::map<std::string, Tensor> compiled;    // the compiled code's intermediates, unfused (when asked)
  std::string compiled_error;                // why `compiled` is empty
};

class Evaluator {
 public:
  Evaluator(PredicateOptions predicate, Limits limits, int jobs);
  ~Evaluator();

  // Tests of the checks themselves: evaluate in this process (no containment).
  void set_in_process(bool in_process) { in_process_ = in_process; }
  // Replaces run_check (tests of the strategies use predicates made up for them).
  using CheckFn = std::function<Verdict(const Candidate&)>;
  void set_check(CheckFn check) { check_ = std::move(check); }

  Verdict evaluate(const Candidate& c);
  // With persistent oracle workers: `first`'s verdict, while the other
  // workers judge `then` in order, until first's verdict is known and one of
  // `then` is interesting against it (or all are judged). Every verdict made
  // is cached, so the strategy that built `then` finds them. Without the
  // workers, evaluate(first) alone.
  Verdict evaluate_speculating(const Candidate& first, const std::vector<const Candidate*>& then, bool allow_drift);
  // Starts the persistent oracle's workers (when the predicate has them), so
  // they import torch while the caller records the reference values.
  void start_oracle_workers();
  // The input's size decides how the workers compile: a small graph has a
  // handful of kernels, and Inductor's compile processes would cost more to
  // start (each imports torch, all workers at once) than they save.
  void size_oracle_workers_for(size_t input_ops) { input_ops_ = input_ops; }
  bool uses_oracle_workers() const;

  // Verdicts in order, `jobs` candidates at a time, stopping after the first
  // batch that holds an interesting one; returns its index or -1.
  int first_interesting(const std::vector<const Candidate*>& candidates, const Verdict& original, bool allow_drift);

  // Eager values of every node (and fp64 ones, and the compiled code's
  // unfused intermediates, when asked), made in children.
  Expected<Recording> record(const Candidate& c, bool fp64, bool compiled);

  const EvalStats& stats() const { return stats_; }
  const PredicateOptions& predicate() const { return predicate_; }
  int jobs() const { return jobs_; }

 private:
  std::vector<Verdict> run_batch(const std::vector<const Candidate*>& batch);
  Verdict verdict_of(const ChildOutcome& o) const;
  // --oracle-python: the candidates' repro.py files judged by the pool's workers.
  std::vector<Verdict> run_on_workers(const std::vector<const Candidate*>& batch,
                                      const std::function<bool(size_t, const Verdict&)>& enough = {});
  void make_pool();
  void count_worker_verdict(const Verdict& v);  // into stats_: timeouts, crashes, invalid
  std::unique_ptr<OraclePool> pool_;

  PredicateOptions predicate_;
  Limits limits_;
  int jobs_;
  size_t input_ops_ = 0;
  bool in_process_ = false;
  CheckFn check_;
  std::vector<std::pair<std::string, std::string>> hooks_;  // (action, target)
  std::unordered_map<uint64_t, Verdict> cache_;
  EvalStats stats_;
};

}  // namespace kiln::minify
