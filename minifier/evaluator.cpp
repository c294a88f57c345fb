#include "minifier/evaluator.h"

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <optional>
#include <span>

#include <unistd.h>

#include "core/io/safetensors.h"
#include "minifier/predicate_util.h"

namespace kiln::minify {

namespace {

constexpr char kSep = '\x1f';

std::string encode(const Verdict& v) {
  return std::to_string(int(v.outcome)) + kSep + v.kind + kSep + v.signature + kSep + v.detail;
}

Verdict decode(const std::string& s) {
  Verdict v;
  size_t a = s.find(kSep), b = a == std::string::npos ? a : s.find(kSep, a + 1),
         c = b == std::string::npos ? b : s.find(kSep, b + 1);
  if (c == std::string::npos) return {Verdict::Outcome::Invalid, "setup", "", "unreadable verdict from the child"};
  v.outcome = Verdict::Outcome(std::atoi(s.substr(0, a).c_str()));
  v.kind = s.substr(a + 1, b - a - 1);
  v.signature = s.substr(b + 1, c - b - 1);
  v.detail = s.substr(c + 1);
  return v;
}

std::vector<std::pair<std::string, std::string>> read_hooks() {
  std::vector<std::pair<std::string, std::string>> hooks;
  const char* env = std::getenv("KILN_MINIFY_TEST_HOOK");
  if (!env) return hooks;
  std::string s = env;
  for (size_t start = 0; start < s.size();) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(start, end - start);
    size_t colon = item.find(':');
    if (colon != std::string::npos) hooks.emplace_back(item.substr(0, colon), item.substr(colon + 1));
    start = end + 1;
  }
  return hooks;
}

[[maybe_unused]] void run_hook(const std::string& action) {
  if (action == "segfault") {
    volatile int* p = nullptr;
    *p = 1;
    std::raise(SIGSEGV);
  } else if (action == "abort") {
    std::abort();
  } else if (action == "hang") {
    volatile unsigned long spins = 0;
    for (;;) spins = spins + 1;
  } else if (action == "sleep") {
    ::usleep(300000);
  } else if (action == "oom") {
    std::vector<char*> blocks;
    for (;;) {
      char* b = new char[64 << 20];
      std::memset(b, 1, 64 << 20);
      blocks.push_back(b);
    }
  }
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

double EvalStats::median_oracle_wall_s() const { return median(oracle_wall_s); }

double EvalStats::median_oracle_overhead_s() const {
  std::vector<double> overhead;
  for (size_t i = 0; i < oracle_wall_s.size() && i < oracle_run_s.size(); ++i)
    if (oracle_run_s[i] >= 0) overhead.push_back(oracle_wall_s[i] - oracle_run_s[i]);
  return median(std::move(overhead));
}

Evaluator::Evaluator(PredicateOptions predicate, Limits limits, int jobs)
    : predicate_(std::move(predicate)), limits_(limits), jobs_(std::max(jobs, 1)), hooks_(read_hooks()) {}

Evaluator::~Evaluator() = default;

bool Evaluator::uses_oracle_workers() const {
  return predicate_.kind == CheckKind::Oracle && !predicate_.oracle_python.empty() && !check_ && !in_process_;
}

void Evaluator::start_oracle_workers() {
  if (!uses_oracle_workers()) return;
  make_pool();
  pool_->start_all();
}

void Evaluator::make_pool() {
  if (!pool_) {
    OraclePoolOptions o = oracle_pool_options(predicate_);
    o.parallel = jobs_;
    // Each of Inductor's compile processes imports torch again while every
    // worker starts; a small graph's few kernels compile as fast in the worker.
    constexpr size_t kSerialCompileOps = 64;
    if (input_ops_ > 0 && input_ops_ <= kSerialCompileOps) o.compile_threads = 1;
    o.timeout_s = limits_.timeout_s;
    o.cancel = limits_.cancel;
    pool_ = std::make_unique<OraclePool>(o);
  }
}

void Evaluator::count_worker_verdict(const Verdict& v) {
  stats_.timeouts += v.kind == "timeout";
  stats_.crashes += v.kind == "oracle" && v.signature.rfind("oracle: signal", 0) == 0;
  stats_.invalid += v.outcome == Verdict::Outcome::Invalid && v.kind != "cancelled" && v.kind != "not run";
}

std::vector<Verdict> Evaluator::run_on_workers(const std::vector<const Candidate*>& batch,
                                               const std::function<bool(size_t, const Verdict&)>& enough) {
  namespace fs = std::filesystem;
  make_pool();
  std::vector<Verdict> out(batch.size());
  std::vector<OracleJob> jobs;
  std::vector<size_t> where;
  std::vector<std::string> folders;
  for (size_t i = 0; i < batch.size(); ++i) {
    const std::string folder = make_oracle_folder();
    if (folder.empty()) {
      out[i] = {Verdict::Outcome::Invalid, "setup", "", "cannot make a temporary folder"};
      continue;
    }
    folders.push_back(folder);
    // Written here, in the parent: writing a file runs no kernel and starts no thread.
    if (Status st = write_oracle_repro(predicate_, *batch[i], folder + "/repro.py"); !st) {
      out[i] = {Verdict::Outcome::Invalid, "setup", "", "cannot write repro.py: " + st.message()};
      continue;
    }
    jobs.push_back({folder + "/repro.py", folder + "/output.txt"});
    where.push_back(i);
  }
  // Each finished run is judged once, when the pool reports it (`enough` sees the verdict).
  std::vector<std::optional<Verdict>> judged(jobs.size());
  std::function<bool(size_t, const OracleRun&)> pool_enough;
  if (enough)
    pool_enough = [&](size_t k, const OracleRun& r) {
      judged[k] = oracle_verdict(predicate_, r);
      return enough(where[k], *judged[k]);
    };
  std::vector<OracleRun> runs = pool_->run(jobs, pool_enough);
  for (size_t k = 0; k < runs.size(); ++k) {
    if (runs[k].end == OracleRun::End::Cancelled && runs[k].detail == "not run") {
      out[where[k]] = {Verdict::Outcome::Invalid, "not run", "", "not run"};
      continue;
    }
    out[where[k]] = judged[k] ? std::move(*judged[k]) : oracle_verdict(predicate_, runs[k]);
    if (runs[k].end == OracleRun::End::Exited || runs[k].end == OracleRun::End::Signaled) {
      stats_.oracle_wall_s.push_back(runs[k].wall_s);
      stats_.oracle_run_s.push_back(oracle_run_seconds(runs[k].output));
    }
  }
  stats_.pool = pool_->stats();
  for (const std::string& folder : folders) {
    std::error_code ec;
    fs::remove_all(folder, ec);
  }
  return out;
}

Verdict Evaluator::verdict_of(const ChildOutcome& o) const {
  switch (o.end) {
    case ChildOutcome::End::Exited:
      if (o.exit_code == 0) return decode(o.payload);
      if (o.exit_code == kOomExitCode)
        return {Verdict::Outcome::Fail, "oom", "oom", "out of memory (limit " + std::to_string(limits_.memory_mb) + " MB)"};
      return {Verdict::Outcome::Fail, "exception", "exception", o.payload};
    case ChildOutcome::End::Signaled:
      if (o.signal == SIGXCPU) return {Verdict::Outcome::Fail, "timeout", "timeout", "CPU time limit"};
      return {Verdict::Outcome::Fail, "crash", "crash: " + signal_name(o.signal),
              "killed by " + signal_name(o.signal)};
    case ChildOutcome::End::TimedOut: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "no verdict within %g s", limits_.timeout_s);
      return {Verdict::Outcome::Fail, "timeout", "timeout", buf};
    }
    case ChildOutcome::End::ForkFailed: break;
    case ChildOutcome::End::Cancelled: return {Verdict::Outcome::Invalid, "cancelled", "", "cancelled"};
  }
  return {Verdict::Outcome::Invalid, "setup", "", "could not start a child process"};
}

std::vector<Verdict> Evaluator::run_batch(const std::vector<const Candidate*>& batch) {
  if (uses_oracle_workers()) {
    std::vector<Verdict> out = run_on_workers(batch);
    for (const Verdict& v : out) count_worker_verdict(v);
    return out;
  }
  std::vector<Verdict> out(batch.size());
  std::vector<ChildJob> jobs;
  std::vector<size_t> where;
  for (size_t i = 0; i < batch.size(); ++i) {
    const Candidate* c = batch[i];
    auto job = [this, c]() -> std::string {
      for (const auto& [action, target] : hooks_)
        for (const Node& n : c->graph.nodes)
          if (n.op == OpKind::CallFunction && (n.target == target || target == "*")) {
            run_hook(action);
            break;
          }
      return encode(check_ ? check_(*c) : run_check(predicate_, *c));
    };
    if (in_process_) {
      out[i] = decode(job());
      continue;
    }
    jobs.push_back(job);
    where.push_back(i);
  }
  if (!jobs.empty()) {
    std::vector<ChildOutcome> outcomes = run_in_children(jobs, limits_, jobs_);
    for (size_t k = 0; k < outcomes.size(); ++k) out[where[k]] = verdict_of(outcomes[k]);
  }
  for (const Verdict& v : out) {
    stats_.timeouts += v.kind == "timeout";
    stats_.crashes += v.kind == "crash";
    stats_.invalid += v.outcome == Verdict::Outcome::Invalid && v.kind != "cancelled";
  }
  return out;
}

Verdict Evaluator::evaluate_speculating(const Candidate& first, const std::vector<const Candidate*>& then,
                                        bool allow_drift) {
  if (!uses_oracle_workers() || then.empty()) return evaluate(first);
  std::vector<const Candidate*> batch = {&first};
  std::vector<uint64_t> keys = {candidate_key(first)};
  for (const Candidate* c : then) {
    const uint64_t key = candidate_key(*c);
    if (cache_.count(key) || std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
    batch.push_back(c);
    keys.push_back(key);
  }
  std::optional<Verdict> original;
  bool hit = false;
  std::vector<std::optional<Verdict>> early(batch.size());
  auto enough = [&](size_t i, const Verdict& v) {
    early[i] = v;
    if (i == 0) {
      original = v;
      for (size_t k = 1; k < early.size() && !hit; ++k) hit = early[k] && is_interesting(*early[k], v, allow_drift);
    } else if (original) {
      hit = hit || is_interesting(v, *original, allow_drift);
    }
    // A first candidate that passes or cannot run makes the rest moot.
    return original && (hit || !original->failed());
  };
  std::vector<Verdict> verdicts = run_on_workers(batch, enough);
  for (size_t k = 0; k < batch.size(); ++k) {
    const Verdict& v = verdicts[k];
    count_worker_verdict(v);
    if (v.kind == "not run" || v.kind == "cancelled") continue;
    ++stats_.oracle_calls;
    cache_[keys[k]] = v;
  }
  auto it = cache_.find(keys[0]);
  if (it == cache_.end()) return {Verdict::Outcome::Invalid, "cancelled", "", "cancelled"};
  return it->second;
}

Verdict Evaluator::evaluate(const Candidate& c) {
  const Candidate* one = &c;
  first_interesting({one}, Verdict{}, false);
  auto it = cache_.find(candidate_key(c));
  if (it == cache_.end()) return {Verdict::Outcome::Invalid, "cancelled", "", "cancelled"};
  return it->second;
}

int Evaluator::first_interesting(const std::vector<const Candidate*>& candidates, const Verdict& original,
                                 bool allow_drift) {
  std::vector<uint64_t> keys(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) keys[i] = candidate_key(*candidates[i]);
  std::vector<bool> ran(candidates.size(), false);
  for (size_t at = 0; at < candidates.size();) {
    if (auto it = cache_.find(keys[at]); it != cache_.end()) {
      stats_.cache_hits += !ran[at];
      if (is_interesting(it->second, original, allow_drift)) return int(at);
      ++at;
      continue;
    }
    // The next `jobs` candidates not answered yet run together.
    std::vector<const Candidate*> batch;
    std::vector<uint64_t> batch_keys;
    for (size_t i = at; i < candidates.size() && int(batch.size()) < jobs_; ++i) {
      if (cache_.count(keys[i]) || std::find(batch_keys.begin(), batch_keys.end(), keys[i]) != batch_keys.end()) continue;
      batch.push_back(candidates[i]);
      batch_keys.push_back(keys[i]);
      ran[i] = true;
    }
    std::vector<Verdict> verdicts = run_batch(batch);
    stats_.oracle_calls += int(batch.size());
    // A cancelled run says nothing about its candidate: never cached, never a step.
    for (const Verdict& v : verdicts)
      if (v.kind == "cancelled") return -1;
    for (size_t k = 0; k < batch.size(); ++k) cache_[batch_keys[k]] = verdicts[k];
  }
  return -1;
}

namespace {

void serialize(const std::map<std::string, Tensor>& values, const std::string& prefix, NamedTensors& into) {
  for (const auto& [name, t] : values) into.emplace_back(prefix + name, t);
}

std::string to_payload(const NamedTensors& tensors) {
  Expected<std::vector<std::byte>> bytes = serialize_safetensors(tensors);
  if (!bytes) throw Error(bytes.status().message());
  return std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size());
}

}  // namespace

Expected<Recording> Evaluator::record(const Candidate& c, bool fp64, bool compiled) {
  ++stats_.reference_runs;
  auto eager_job = [&c, fp64]() -> std::string {
    NamedTensors out;
    Expected<std::map<std::string, Tensor>> e = run_eager_all(c, false);
    if (!e) return "!" + e.status().message();
    serialize(*e, "eager:", out);
    if (fp64) {
      Expected<std::map<std::string, Tensor>> f = run_eager_all(c, true);
      if (f) serialize(*f, "fp64:", out);
    }
    return to_payload(out);
  };
  std::string inject = predicate_.inject_bug;
  auto compiled_job = [&c, inject]() -> std::string {
    CpuCompile cc = compile_cpu(c.graph, inject, /*fuse=*/false);
    if (!cc.error.empty()) return "!" + cc.error;
    Expected<std::map<std::string, Tensor>> values = cc.code->run_with_intermediates(c.inputs);
    if (!values) return "!" + values.status().message();
    NamedTensors out;
    serialize(*values, "compiled:", out);
    return to_payload(out);
  };
  std::vector<ChildJob> jobs = {eager_job};
  if (compiled) jobs.push_back(compiled_job);
  std::vector<ChildOutcome> outcomes;
  if (in_process_) {
    for (const ChildJob& j : jobs) outcomes.push_back({ChildOutcome::End::Exited, 0, 0, j(), 0});
  } else {
    outcomes = run_in_children(jobs, limits_, jobs_);
  }
  Recording r;
  r.key = candidate_key(c);
  auto parse = [this](const ChildOutcome& o, std::string& error) -> std::optional<SafetensorsFile> {
    if (o.end != ChildOutcome::End::Exited || o.exit_code != 0) {
      error = verdict_of(o).detail;
      return std::nullopt;
    }
    if (!o.payload.empty() && o.payload[0] == '!') {
      error = o.payload.substr(1);
      return std::nullopt;
    }
    auto bytes = std::span<const std::byte>(reinterpret_cast<const std::byte*>(o.payload.data()), o.payload.size());
    Expected<SafetensorsFile> f = parse_safetensors(bytes, "recording");
    if (!f) {
      error = f.status().message();
      return std::nullopt;
    }
    return std::move(*f);
  };
  std::string error;
  std::optional<SafetensorsFile> eager = parse(outcomes[0], error);
  if (!eager) return Status::error("the eager reference run failed: " + error);
  for (auto& [name, t] : eager->tensors) {
    if (name.rfind("eager:", 0) == 0) r.eager[name.substr(6)] = t;
    else if (name.rfind("fp64:", 0) == 0) r.fp64[name.substr(5)] = t;
  }
  if (compiled) {
    std::optional<SafetensorsFile> comp = parse(outcomes[1], r.compiled_error);
    if (comp)
      for (auto& [name, t] : comp->tensors) r.compiled[name.substr(9)] = t;
  }
  return r;
}

}  // namespace kiln::minify
