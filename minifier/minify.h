#pragma once
// The minifier's driver: evaluates the input once to learn how it fails
// (the signature every later candidate must keep, unless drift is allowed),
// then runs the strategies (strategy.h) round after round until a whole
// round accepts nothing. Every accepted step is reported to the progress
// callback and written to the journal; cancellation is polled between
// evaluations.
#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "minifier/candidate.h"
#include "minifier/evaluator.h"
#include "minifier/isolation.h"
#include "minifier/journal.h"
#include "minifier/predicate.h"

namespace kiln::minify {

struct Progress {
  size_t nodes = 0;          // call nodes of the current candidate
  std::string strategy;      // the strategy running
  int oracle_calls = 0;
  int cache_hits = 0;
  int accepted_steps = 0;
  double elapsed_s = 0;
  const Step* step = nullptr;  // set when this report is an accepted step
};

struct MinifyOptions {
  PredicateOptions predicate;
  int jobs = 1;
  Limits limits;
  std::function<void(const Progress&)> progress;
  // Told the original failure (its class: "oracle: exit 1 (accuracy failure)")
  // once the input is judged, before any strategy runs.
  std::function<void(const Verdict&)> on_original;
  const std::atomic<bool>* cancel = nullptr;
  Journal* journal = nullptr;   // null: no journal
  std::string input_name;       // what the journal records as the input
  // Resuming: the original failure and the steps already taken (from the
  // journal); the input candidate is then the last accepted one.
  std::optional<Verdict> resume_original;
  std::vector<Step> resume_steps;
  std::vector<std::string> strategies;  // empty: default_strategies()
  int max_rounds = 50;
  bool in_process = false;  // tests of the driver logic only: no child processes
  Evaluator::CheckFn check;  // replaces the predicate's check (tests)
};

struct MinifyResult {
  Candidate result;
  Verdict original;
  std::vector<Step> steps;  // resumed ones first
  size_t initial_nodes = 0;
  EvalStats stats;
  double wall_s = 0;
  bool cancelled = false;
};

// Errors: a candidate the meta functions reject, an input that does not fail
// (its verdict says how it ran), a failure of another kind than the check
// asks for, a predicate that cannot run here (cpu-gpu-mismatch without a GPU).
Expected<MinifyResult> minify(Candidate input, const MinifyOptions& options);

}  // namespace kiln::minify
