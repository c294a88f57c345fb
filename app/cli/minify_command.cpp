// `kiln-cli minify INPUT --check C [...]` (CLI.md): delta-minifies a failing
// graph with Kiln's minifier (minifier/minify.h), printing one line per
// accepted step, then the result and the repro paths. INPUT is a Kiln repro,
// a PyTorch repro.py / minifier_launcher.py, a graph text file, or a trace
// with --compile-id and --stage. Every step is journaled in OUT/minify.db;
// --resume continues the latest run there.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "app/cli/commands.h"
#include "app/cli/oracle_options.h"
#include "core/util/limits.h"
#include "minifier/minify.h"
#include "minifier/minify_outputs.h"
#include "minifier/repro.h"
#include "core/util/output_text.h"

namespace kiln::cli {

namespace {

namespace fs = std::filesystem;
using namespace kiln::minify;

struct Options {
  std::string input, check = "accuracy", out = "minify_out", compile_id, stage;
  std::string error_stage, error_match;
  OracleOptions oracle;
  int jobs = 1;
  double timeout_s = 60, tolerance = 1e-3;
  int64_t memory_mb = 8192;
  bool resume = false, allow_drift = false, json = false, check_non_float = false;
  std::string max_input_bytes;  // "2G": what the input may declare before anything is allocated
};

std::atomic<bool> g_cancel{false};
extern "C" void on_interrupt(int) { g_cancel = true; }

nlohmann::json oracle_json(const EvalStats& s) {
  const OraclePoolStats& p = s.pool;
  return {{"worker_starts", p.worker_starts},
          {"restarts", {{"crash", p.restarts_crash}, {"hang", p.restarts_hang}, {"memory", p.restarts_memory}, {"asked", p.restarts_asked}}},
          {"startup_s", p.startup_s},
          {"import_s", p.import_s},
          {"warm_up_s", p.warm_up_s},
          {"candidates", s.oracle_wall_s.size()},
          {"median_wall_s", s.median_oracle_wall_s()},
          {"median_overhead_s", s.median_oracle_overhead_s()}};
}

std::string oracle_summary(const EvalStats& s) {
  const OraclePoolStats& p = s.pool;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "oracle workers: %d started (slowest start %.1f s: torch import %.1f s, warm-up compile %.1f s), restarted after %d crashes, %d hangs, %d memory, %d asked; "
                "%zu candidates, median %.2f s each, of which %.2f s outside repro.py's own runs",
                p.worker_starts, p.startup_s, p.import_s, p.warm_up_s, p.restarts_crash, p.restarts_hang, p.restarts_memory, p.restarts_asked,
                s.oracle_wall_s.size(), s.median_oracle_wall_s(), s.median_oracle_overhead_s());
  return buf;
}

int fail(int code, const std::string& message) {
  std::fprintf(stderr, "kiln-cli: minify: %s\n", message.c_str());
  return code;
}

int run_minify(const Options& o) {
  if (!o.max_input_bytes.empty()) {
    Expected<int64_t> limit = parse_byte_size(o.max_input_bytes);
    if (!limit) return fail(kExitUsage, "--max-input-bytes: " + limit.status().message());
    set_input_byte_limit(*limit);
  }
  PredicateOptions p;
  Expected<CheckKind> kind = check_from_name(o.check);
  if (!kind) return fail(kExitUsage, kind.status().message());
  p.kind = *kind;
  p.tolerance = o.tolerance;
  p.check_non_float = o.check_non_float;
  p.allow_drift = o.allow_drift;
  p.stage = o.error_stage;
  p.message_regex = o.error_match;
  if (std::string usage = apply_oracle_options(o.oracle, p); !usage.empty()) return fail(kExitUsage, usage);
  if (o.compile_id.empty() != o.stage.empty()) return fail(kExitUsage, "--compile-id and --stage go together");

  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (ec) return fail(kExitBadInput, "cannot make " + o.out + ": " + ec.message());
  Expected<std::unique_ptr<Journal>> journal = Journal::open((fs::path(o.out) / "minify.db").string());
  if (!journal) return fail(kExitBadInput, journal.status().message());

  MinifyOptions mo;
  mo.jobs = o.jobs;
  mo.limits.timeout_s = o.timeout_s;
  mo.limits.memory_mb = o.memory_mb;
  mo.journal = journal->get();
  mo.input_name = o.input;
  mo.cancel = &g_cancel;
  Candidate start;
  std::vector<std::string> origins;
  size_t initial_nodes = 0;
  bool resuming = false;
  Expected<std::optional<Journal::Resumed>> last = std::optional<Journal::Resumed>();
  if (o.resume) {
    last = (*journal)->latest_run();
    if (!last) return fail(kExitBadInput, last.status().message());
    // A run killed before its first accepted step left nothing to continue:
    // with INPUT given, --resume starts it.
    if (!*last && o.input.empty()) return fail(kExitBadInput, (fs::path(o.out) / "minify.db").string() + ": no run to resume");
    resuming = last->has_value();
    if (!resuming && !o.json) std::printf("nothing to resume in %s: starting the run\n", o.out.c_str());
  }
  if (resuming) {
    Journal::Resumed& r = **last;
    Expected<PredicateOptions> jp = predicate_from_json(r.predicate_json);
    if (!jp) return fail(kExitBadInput, "minify journal: " + jp.status().message());
    p = *jp;
    (*journal)->continue_run(r.run);
    start = std::move(r.last);
    mo.resume_original = r.original;
    mo.resume_steps = r.steps;
    mo.input_name = r.input;
    initial_nodes = r.initial_nodes;
    if (!o.json)
      std::printf("resuming run %lld of %s: %zu steps done, %zu ops left\n", (long long)r.run, r.input.c_str(),
                  r.steps.size(), op_count(start.graph));
  } else {
    // Reading the input and drawing the inputs it declares count against
    // --timeout, as the input's own evaluation does; the watchdog's thread is
    // gone before the minifier forks.
    std::optional<PhaseWatchdog> reading;
    reading.emplace(o.timeout_s, read_timeout_text("kiln-cli minify", o.input, o.timeout_s), kExitFailures);
    Expected<Repro> repro = o.compile_id.empty() ? read_repro(o.input) : read_trace_stage(o.input, o.compile_id, o.stage);
    if (!repro) return fail(kExitBadInput, repro.status().to_string());
    Expected<Candidate> candidate = candidate_of(*repro, p.kind != CheckKind::Oracle);
    if (!candidate) return fail(kExitBadInput, candidate.status().to_string());
    reading.reset();
    start = std::move(*candidate);
    origins = repro->input_origins;
    initial_nodes = op_count(start.graph);
    if (!o.json) {
      std::printf("minify %s: %zu ops, %zu inputs, check %s\n", o.input.c_str(), initial_nodes, start.inputs.size(),
                  describe(p).c_str());
      for (size_t i = 0; i < origins.size(); ++i)
        if (origins[i] != "stored") std::printf("  input %zu: %s\n", i, origins[i].c_str());
    }
  }
  mo.predicate = p;
  if (!o.json)
    mo.progress = [](const Progress& pr) {
      if (!pr.step) return;
      std::printf("step %d [%s] %s: %zu -> %zu ops (%.2f s, %d oracle calls)\n", pr.step->index, pr.step->strategy.c_str(),
                  pr.step->description.c_str(), pr.step->nodes_before, pr.step->nodes_after, pr.elapsed_s, pr.oracle_calls);
      std::fflush(stdout);
    };
  if (!o.json)
    mo.on_original = [](const Verdict& v) {
      // The class first (the signature every candidate must keep), then what it said.
      std::printf("original failure: %s\n%s\n", v.signature.c_str(), v.detail.c_str());
      std::fflush(stdout);
    };
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  Expected<MinifyResult> r = minify::minify(start, mo);
  if (!r) return fail(kExitFailures, r.status().message());

  Expected<MinifyOutputs> written = write_minify_outputs(o.out, *r, p);
  if (!written) return fail(kExitFailures, written.status().to_string());
  const std::string& repro_dir = written->repro_dir;
  const std::string& torch_repro = written->torch_repro;
  const size_t final_ops = op_count(r->result.graph);
  if (o.json) {
    nlohmann::json steps = nlohmann::json::array();
    for (const Step& s : r->steps)
      steps.push_back({{"index", s.index}, {"strategy", s.strategy}, {"description", s.description},
                       {"nodes_before", s.nodes_before}, {"nodes_after", s.nodes_after}, {"at_s", s.at_s}});
    nlohmann::json doc = {{"initial_nodes", initial_nodes},
                          {"final_nodes", final_ops},
                          {"final_ops", final_ops},
                          {"oracle_calls", r->stats.oracle_calls},
                          {"cache_hits", r->stats.cache_hits},
                          {"reference_runs", r->stats.reference_runs},
                          {"timeouts", r->stats.timeouts},
                          {"crashes", r->stats.crashes},
                          {"wall_s", r->wall_s},
                          {"cancelled", r->cancelled},
                          {"check", describe(p)},
                          {"original", {{"kind", r->original.kind}, {"signature", r->original.signature}, {"detail", r->original.detail}}},
                          {"steps", steps},
                          {"oracle", oracle_json(r->stats)},
                          {"repro", repro_dir},
                          {"torch_repro", torch_repro},
                          {"journal", (fs::path(o.out) / "minify.db").string()}};
    std::cout << kiln::json_text(doc, 1) << "\n";
  } else {
    std::printf("%s: %zu -> %zu ops, %zu inputs, %d oracle calls, %d cache hits, %d reference runs, wall %.2f s\n",
                r->cancelled ? "cancelled" : "done", initial_nodes, final_ops, r->result.inputs.size(),
                r->stats.oracle_calls, r->stats.cache_hits, r->stats.reference_runs, r->wall_s);
    if (r->stats.timeouts || r->stats.crashes)
      std::printf("contained: %d timeouts, %d crashes\n", r->stats.timeouts, r->stats.crashes);
    if (r->stats.pool.worker_starts) std::printf("%s\n", oracle_summary(r->stats).c_str());
    std::printf("repro: %s\ntorch repro: %s\n", repro_dir.c_str(), torch_repro.c_str());
  }
  return r->cancelled ? kExitFailures : kExitOk;
}

}  // namespace

void add_minify_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("minify", "Delta-minify a failing graph into a small repro");
  sub->add_option("input", o->input, "Kiln repro, PyTorch repro.py / minifier_launcher.py, graph text, or trace");
  sub->add_option("--check", o->check, "accuracy, compile-error, crash, cpu-gpu-mismatch or oracle");
  add_oracle_options(sub, o->oracle);
  sub->add_option("--max-input-bytes", o->max_input_bytes,
                  "refuse an input whose tensors declare more (K/M/G suffixes; default: the memory budget, 3/4 of the machine's memory)");
  sub->add_option("--error-stage", o->error_stage, "compile-error: only at this stage (passes, a pass name, codegen)");
  sub->add_option("--error-match", o->error_match, "compile-error: only when the message matches this regex");
  sub->add_option("-j,--jobs", o->jobs, "candidates evaluated in parallel")->check(CLI::Range(1, 256));
  sub->add_option("--timeout", o->timeout_s, "seconds per candidate before it is killed")->check(CLI::Range(0.1, 86400.0));
  sub->add_option("--memory-mb", o->memory_mb, "address space a candidate's process may add")->check(CLI::Range(int64_t(64), int64_t(1) << 30));
  sub->add_option("--tolerance", o->tolerance, "accuracy tolerance")->check(CLI::Range(0.0, 1e6));
  sub->add_flag("--check-non-float", o->check_non_float, "accuracy: compare integer and bool outputs too");
  sub->add_option("--out", o->out, "output folder: repro/, repro.py and the journal minify.db (default minify_out)");
  sub->add_flag("--resume", o->resume, "continue the latest run journaled in --out");
  sub->add_flag("--allow-drift", o->allow_drift, "accept candidates that fail differently from the input");
  sub->add_option("--compile-id", o->compile_id, "INPUT is a trace: this compile id");
  sub->add_option("--stage", o->stage, "INPUT is a trace: this stage graph");
  sub->add_flag("--json", o->json, "print one JSON document");
  sub->callback([o, &exit_code] {
    if (o->input.empty() && !o->resume) {
      std::fprintf(stderr, "kiln-cli: minify: INPUT is required (or --resume)\n");
      exit_code = kExitUsage;
      return;
    }
    try {
      exit_code = run_minify(*o);
    } catch (const Error& e) {
      exit_code = fail(kExitBadInput, e.what());
    } catch (const std::filesystem::filesystem_error& e) {
      exit_code = fail(kExitFailures, e.what());
    }
  });
}

}  // namespace kiln::cli
