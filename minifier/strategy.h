#pragma once
// A reduction strategy, in the manner of llvm-reduce's deltas/: each knows one
// kind of thing it can take out of a candidate (nodes, inputs, outputs,
// dims...) and builds the candidate without a chosen subset; the driver
// (minify.cpp) owns the evaluation, the cache, parallelism and the journal.
// Most strategies are a count and a builder handed to reduce_by_ddmin; a few
// (truncate, localize) search their own way.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "minifier/candidate.h"
#include "minifier/evaluator.h"
#include "minifier/predicate.h"

namespace kiln::minify {

// What a strategy sees of the driver.
class ReductionContext {
 public:
  virtual ~ReductionContext() = default;
  virtual const Candidate& current() const = 0;
  // Annotates each candidate (those the meta functions reject are skipped,
  // as are copies of the current one) and evaluates them in order, `jobs`
  // at a time; the index of the first interesting one, or -1.
  virtual int first_interesting(std::vector<std::optional<Candidate>>& candidates) = 0;
  // Makes `c` (interesting, annotated) the current candidate: a journaled step.
  virtual void accept(Candidate c, const std::string& what) = 0;
  virtual bool cancelled() const = 0;
  virtual int jobs() const = 0;
  virtual const PredicateOptions& predicate() const = 0;
  // Eager values of the current candidate's nodes (fp64 and compiled
  // intermediates when asked), recorded once per candidate; null when the
  // eager run fails.
  virtual const Recording* recording(bool fp64 = false, bool compiled = false) = 0;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual const char* name() const = 0;
  // Tries to reduce ctx.current(); true when it accepted a step.
  virtual bool run(ReductionContext& ctx) = 0;
};

// Builds the candidate that keeps the things listed in `keep` (indices into
// the strategy's list for `base`, ascending); nullopt when that is no program.
using KeepFn = std::function<std::optional<Candidate>(const Candidate& base, const std::vector<size_t>& keep)>;

// ddmin over `n` things of the current candidate: each interesting removal
// is accepted as a step described by `what` ("removed 3 of 11 outputs").
bool reduce_by_ddmin(ReductionContext& ctx, size_t n, const KeepFn& build,
                     const std::function<std::string(size_t removed, size_t of)>& what);

// The strategies, in the order the driver runs them each round.
std::vector<std::unique_ptr<Strategy>> default_strategies();
// One by name ("truncate", "replace-with-inputs", ...); null when unknown.
std::unique_ptr<Strategy> make_strategy(const std::string& name);
std::vector<std::string> strategy_names();

// Shared by the strategies that turn computed nodes into inputs: the
// candidate where every call node not in `keep_nodes` (node ids of `base`)
// that has a recorded value becomes a placeholder fed with it, pruned of
// what the output no longer needs. nullopt when nothing would change.
std::optional<Candidate> replace_nodes_by_inputs(const Candidate& base, const std::vector<bool>& keep_node,
                                                 const Recording& values);

}  // namespace kiln::minify
