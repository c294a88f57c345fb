#include "minifier/minify.h"

#include <algorithm>
#include <chrono>

#include "minifier/strategies/strategies.h"
#include "minifier/strategy.h"

namespace kiln::minify {

namespace {

using Clock = std::chrono::steady_clock;

// Cancel reaches into the children too: a long candidate is killed, not waited for.
Limits limits_with_cancel(const MinifyOptions& o) {
  Limits l = o.limits;
  l.cancel = o.cancel;
  return l;
}

class Driver : public ReductionContext {
 public:
  Driver(Candidate start, const MinifyOptions& o, Verdict original)
      : options_(o),
        evaluator_(o.predicate, limits_with_cancel(o), o.jobs),
        current_(std::move(start)),
        original_(std::move(original)),
        t0_(Clock::now()) {
    evaluator_.set_in_process(o.in_process);
    if (o.check) evaluator_.set_check(o.check);
  }

  Evaluator& evaluator() { return evaluator_; }
  void set_original(Verdict v) { original_ = std::move(v); }
  const Verdict& original() const { return original_; }
  std::vector<Step>& steps() { return steps_; }
  Status journal_status() const { return journal_status_; }
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }

  void set_strategy(const std::string& name) {
    strategy_ = name;
    report(nullptr);
  }

  const Candidate& current() const override { return current_; }

  int first_interesting(std::vector<std::optional<Candidate>>& candidates) override {
    const CandidateSize current_size = size_of(current_);
    std::vector<const Candidate*> valid;
    std::vector<size_t> index;
    for (size_t i = 0; i < candidates.size(); ++i) {
      std::optional<Candidate>& c = candidates[i];
      if (!c) continue;
      // No ops left: nothing to compile, nothing can fail. Only a smaller
      // candidate is a step (CandidateSize).
      if (op_count(c->graph) == 0 || !(size_of(*c) < current_size) || !annotate(*c).ok()) {
        c.reset();
        continue;
      }
      valid.push_back(&*c);
      index.push_back(i);
    }
    if (valid.empty() || cancelled()) return -1;
    int k = evaluator_.first_interesting(valid, original_, options_.predicate.allow_drift);
    report(nullptr);
    return k < 0 ? -1 : int(index[size_t(k)]);
  }

  void accept(Candidate c, const std::string& what) override {
    Step s;
    s.index = steps_.empty() ? 1 : steps_.back().index + 1;
    s.strategy = strategy_;
    s.description = what;
    s.nodes_before = op_count(current_.graph);
    s.nodes_after = op_count(c.graph);
    s.at_s = elapsed();
    current_ = std::move(c);
    steps_.push_back(s);
    if (options_.journal && journal_status_.ok()) journal_status_ = options_.journal->add_step(s, current_);
    report(&steps_.back());
  }

  bool cancelled() const override { return options_.cancel && options_.cancel->load(); }
  int jobs() const override { return evaluator_.jobs(); }
  const PredicateOptions& predicate() const override { return options_.predicate; }

  const Recording* recording(bool fp64, bool compiled) override {
    const uint64_t key = candidate_key(current_);
    bool fresh = recording_ && recording_->key == key && (!fp64 || !recording_->fp64.empty()) &&
                 (!compiled || !recording_->compiled.empty() || !recording_->compiled_error.empty());
    if (fresh) return &*recording_;
    if (failed_recording_ == key) return nullptr;
    Expected<Recording> r = evaluator_.record(current_, fp64, compiled);
    if (!r) {
      failed_recording_ = key;
      return nullptr;
    }
    recording_ = std::move(*r);
    return &*recording_;
  }

 private:
  void report(const Step* step) {
    if (!options_.progress) return;
    Progress p;
    p.nodes = op_count(current_.graph);
    p.strategy = strategy_;
    p.oracle_calls = evaluator_.stats().oracle_calls;
    p.cache_hits = evaluator_.stats().cache_hits;
    p.accepted_steps = int(steps_.size());
    p.elapsed_s = elapsed();
    p.step = step;
    options_.progress(p);
  }

  const MinifyOptions& options_;
  Evaluator evaluator_;
  Candidate current_;
  Verdict original_;
  std::vector<Step> steps_;
  std::string strategy_ = "input";
  std::optional<Recording> recording_;
  uint64_t failed_recording_ = 0;
  Status journal_status_;
  Clock::time_point t0_;
};

std::string kind_expected(CheckKind k) {
  switch (k) {
    case CheckKind::CompileError: return "compile-error";
    case CheckKind::Crash: return "crash";
    case CheckKind::Accuracy: return "accuracy";
    case CheckKind::CpuGpuMismatch: return "mismatch";
    case CheckKind::Oracle: return "oracle";
  }
  return "";
}

}  // namespace

Expected<MinifyResult> minify(Candidate input, const MinifyOptions& options) {
  if (options.predicate.kind == CheckKind::Oracle) remove_stale_oracle_folders();
  if (Status s = annotate(input); !s) return Status::error("the input graph is not valid: " + s.message());
  if (op_count(input.graph) == 0) return Status::error("the input graph has no ops to minify");
  std::vector<std::unique_ptr<Strategy>> strategies;
  if (options.strategies.empty()) {
    strategies = default_strategies();
  } else {
    for (const std::string& name : options.strategies) {
      std::unique_ptr<Strategy> s = make_strategy(name);
      if (!s) return Status::error("unknown strategy '" + name + "'");
      strategies.push_back(std::move(s));
    }
  }
  Driver driver(input, options, Verdict{});
  driver.steps() = options.resume_steps;
  driver.evaluator().size_oracle_workers_for(op_count(input.graph));
  // The input's own verdict: the failure to keep. When resuming, the
  // journal's original is the reference, and the last candidate must still show it.
  // With persistent oracle workers, the workers start now (importing torch
  // while Kiln records the reference values), and the idle ones judge
  // probe-ops' one-op candidates while the input's own verdict is made: with
  // real PyTorch the input's compile dominates (25 s for a ResNet-18 forward
  // with cold caches), and a one-op bug is found in that time.
  std::vector<Candidate> probes;
  const bool probing = std::any_of(strategies.begin(), strategies.end(),
                                   [](const std::unique_ptr<Strategy>& s) { return std::string(s->name()) == "probe-ops"; });
  if (!options.resume_original && probing && driver.evaluator().uses_oracle_workers() && driver.evaluator().jobs() > 1 &&
      op_count(input.graph) >= 2) {
    driver.evaluator().start_oracle_workers();
    if (const Recording* rec = driver.recording(false, false)) probes = probe_candidates(input, *rec);
  }
  std::vector<const Candidate*> probe_ptrs;
  for (const Candidate& c : probes) probe_ptrs.push_back(&c);
  Verdict first = driver.evaluator().evaluate_speculating(input, probe_ptrs, options.predicate.allow_drift);
  if (first.kind == "setup") return Status::error(first.detail);
  if (first.kind == "cancelled") {
    MinifyResult stopped;
    stopped.result = input;
    stopped.steps = driver.steps();
    stopped.initial_nodes = op_count(input.graph);
    stopped.cancelled = true;
    stopped.wall_s = driver.elapsed();
    return stopped;
  }
  Verdict original = options.resume_original ? *options.resume_original : first;
  if (!first.failed())
    return Status::error(std::string(options.resume_original ? "the journal's last candidate" : "the input") +
                         " does not fail --check " + describe(options.predicate) + ": " +
                         (first.detail.empty() ? "it passes the check" : first.detail) + "; nothing to minify");
  if (!options.resume_original && (first.kind == "timeout" || first.kind == "oom") && !options.predicate.allow_drift)
    return Status::error("the input's own evaluation hit a limit (" + first.detail + "): raise " +
                         (first.kind == "timeout" ? "--timeout" : "--memory-mb") +
                         " to check it, or pass --allow-drift to minify the " +
                         (first.kind == "timeout" ? "hang" : "out-of-memory") + " itself");
  if (!options.resume_original && first.kind != kind_expected(options.predicate.kind) && !options.predicate.allow_drift)
    return Status::error("the input fails differently from what --check " + std::string(check_name(options.predicate.kind)) +
                         " looks for: " + first.kind + ": " + first.detail + " (--allow-drift minifies it anyway)");
  // An oracle's repro.py names the half that failed: an exception in eager is
  // PyTorch's (or the repro's) problem, not the compiler's.
  if (!options.resume_original && options.predicate.kind == CheckKind::Oracle && !options.predicate.allow_eager_failure &&
      first.signature.find("(eager-exception") != std::string::npos)
    return Status::error("the input fails in PyTorch's eager half, before anything is compiled (" + first.signature +
                         "): minifying it would chase that failure, not the compiler's; the oracle said: " + first.detail +
                         " (--allow-eager-failure minifies it anyway)");
  if (options.resume_original && !is_interesting(first, original, options.predicate.allow_drift))
    return Status::error("the journal's last candidate now fails differently (" + first.signature +
                         ") from the original failure (" + original.signature + ")");
  driver.set_original(original);
  if (options.on_original) options.on_original(original);
  if (options.journal && !options.resume_original) {
    if (Status s = options.journal->begin_run(options.input_name, predicate_to_json(options.predicate, original.signature),
                                              input, original);
        !s)
      return s;
  }
  MinifyResult result;
  result.initial_nodes = op_count(input.graph);
  for (int round = 0; round < options.max_rounds && !driver.cancelled(); ++round) {
    bool progressed = false;
    for (const std::unique_ptr<Strategy>& s : strategies) {
      if (driver.cancelled()) break;
      driver.set_strategy(s->name());
      progressed |= s->run(driver);
    }
    if (!driver.journal_status().ok()) return driver.journal_status();
    if (!progressed) break;
  }
  result.cancelled = driver.cancelled();
  if (options.journal && !result.cancelled) (void)options.journal->finish_run(true);
  result.result = driver.current();
  result.original = original;
  result.steps = driver.steps();
  result.stats = driver.evaluator().stats();
  result.wall_s = driver.elapsed();
  return result;
}

}  // namespace kiln::minify
