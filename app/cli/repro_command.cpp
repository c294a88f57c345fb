// `kiln-cli repro run REPRO [--check C] [--tolerance T] [--timeout S] [--oracle CMD ...] [--json]`:
// replays a repro (a Kiln repro folder or zip; PyTorch's repro.py and
// minifier_launcher.py and graph text files too) with the predicate stored in
// it, in a child process (minifier/evaluator.h) so a crashing or hanging
// compile is reported rather than taking kiln-cli down.
#include <CLI/CLI.hpp>

#include <algorithm>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/oracle_options.h"
#include "minifier/candidate.h"
#include "minifier/evaluator.h"
#include "minifier/predicate.h"
#include "minifier/repro.h"
#include "core/util/limits.h"
#include "core/util/output_text.h"

namespace kiln::cli {
namespace {

struct Options {
  std::string repro;
  std::string check;
  double tolerance = -1;  // < 0: the repro's own
  double timeout_s = 120;
  bool json = false;
  OracleOptions oracle;  // --check oracle, as kiln-cli minify takes it
  std::string max_input_bytes;  // "2G": what the repro may declare before anything is allocated
};

}  // namespace

std::string read_timeout_text(const std::string& command, const std::string& file, double timeout_s) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g", timeout_s);
  std::string text = command;
  text.append(": ").append(file).append(": timed out before a verdict: reading it and drawing the inputs it declares took more than --timeout (");
  text.append(seconds).append(" s); raise --timeout, or lower --max-input-bytes to refuse inputs that large\n");
  return text;
}

namespace {

int bad_input(const Status& s) {
  std::fprintf(stderr, "kiln-cli: %s\n", s.to_string().c_str());
  return kExitBadInput;
}

std::string origins_summary(const minify::Repro& r) {
  std::map<std::string, int> counts;
  for (const std::string& o : r.input_origins) ++counts[o];
  std::string out;
  for (const auto& [origin, n] : counts) out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + origin;
  return out;
}

// {"s0": 6}: the SymInt inputs replayed at their recorded values.
nlohmann::json specialized_json(const minify::Repro& r) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, value] : r.specialized) out[name] = value;
  return out;
}

int run(const Options& o) {
  auto start = std::chrono::steady_clock::now();
  if (!o.max_input_bytes.empty()) {
    Expected<int64_t> limit = parse_byte_size(o.max_input_bytes);
    if (!limit) {
      std::fprintf(stderr, "kiln-cli repro run: --max-input-bytes: %s\n", limit.status().message().c_str());
      return kExitUsage;
    }
    set_input_byte_limit(*limit);
  }
  // Reading the file and drawing the inputs it declares count against
  // --timeout too: a repro declaring gigabytes of inputs took minutes here.
  std::optional<PhaseWatchdog> reading;
  const std::string timed_out_text = read_timeout_text("kiln-cli repro run", o.repro, o.timeout_s);
  std::string timed_out_json;
  if (o.json)
    timed_out_json = kiln::json_text(nlohmann::json{{"repro", o.repro},
                                                    {"verdict", "timed out before a verdict"},
                                                    {"failed", false},
                                                    {"same_failure", false},
                                                    {"kind", "timeout"},
                                                    {"detail", timed_out_text.substr(0, timed_out_text.size() - 1)}},
                                     1) +
                     "\n";
  reading.emplace(o.timeout_s, timed_out_text, kExitFailures, timed_out_json);
  Expected<minify::Repro> repro = minify::read_repro(o.repro);
  if (!repro) return bad_input(repro.status());
  minify::PredicateOptions predicate;
  std::string recorded_signature;
  bool check_was_chosen = false;
  if (!repro->predicate_json.empty()) {
    Expected<minify::PredicateOptions> p = minify::predicate_from_json(repro->predicate_json, &recorded_signature);
    if (!p) return bad_input(Status::error(p.status().message(), {o.repro + "/predicate.json", 0}));
    predicate = *p;
  } else if (o.check.empty()) {
    // A PyTorch repro.py or launcher names no Kiln check. accuracy is the one
    // that finds everything its run_repro looks for (an exception while
    // compiling or running) and wrong numbers too; the output says it was chosen.
    predicate.kind = minify::CheckKind::Accuracy;
    check_was_chosen = true;
  }
  if (!o.check.empty()) {
    Expected<minify::CheckKind> kind = minify::check_from_name(o.check);
    if (!kind) {
      std::fprintf(stderr, "kiln-cli repro run: %s\n", kind.status().message().c_str());
      return kExitUsage;
    }
    // Another check than the recorded one looks for another failure.
    if (*kind != predicate.kind) recorded_signature.clear();
    predicate.kind = *kind;
  }
  if (o.tolerance >= 0) predicate.tolerance = o.tolerance;
  if (std::string usage = apply_oracle_options(o.oracle, predicate); !usage.empty()) {
    std::fprintf(stderr, "kiln-cli repro run: %s\n", usage.c_str());
    return kExitUsage;
  }

  Expected<minify::Candidate> candidate = minify::candidate_of(*repro, predicate.kind != minify::CheckKind::Oracle);
  if (!candidate) return bad_input(candidate.status());
  reading.reset();
  minify::Limits limits;
  limits.timeout_s = o.timeout_s;
  minify::Evaluator evaluator(predicate, limits, 1);
  minify::Verdict v = evaluator.evaluate(*candidate);
  double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // A failure counts as the recorded one when its signature matches (or the
  // predicate allows drift, or none was recorded); a different one is still a
  // failure, named as such.
  // A timeout says nothing about the failure unless the failure was one.
  const bool timed_out = v.failed() && v.kind == "timeout" && v.signature != recorded_signature;
  bool same = !timed_out &&
              (!v.failed() || recorded_signature.empty() || predicate.allow_drift || v.signature == recorded_signature);
  std::string verdict = v.outcome == minify::Verdict::Outcome::Invalid ? "cannot replay"
                        : !v.failed()                                  ? "no longer fails"
                        : timed_out                                    ? "timed out before a verdict"
                        : same                                         ? "still fails"
                                                                       : "fails differently";
  int code = v.outcome == minify::Verdict::Outcome::Invalid ? kExitBadInput : v.failed() ? kExitFailures : kExitOk;
  if (o.json) {
    nlohmann::json inputs = nlohmann::json::array();
    std::vector<NodeId> ph = minify::placeholders(repro->graph);
    for (size_t k = 0; k < ph.size() && k < repro->input_origins.size(); ++k)
      inputs.push_back({{"name", repro->graph[ph[k]].name}, {"origin", repro->input_origins[k]}});
    nlohmann::json j = {{"repro", o.repro},
                        {"ops", minify::op_count(repro->graph)},
                        {"inputs", inputs},
                        {"symbols", specialized_json(*repro)},
                        {"lowered_from_torch", repro->lowered_from_torch},
                        {"check", minify::check_name(predicate.kind)},
                        {"check_chosen_by_kiln", check_was_chosen},
                        {"predicate", minify::describe(predicate)},
                        {"verdict", verdict},
                        {"failed", v.failed()},
                        {"same_failure", v.failed() && same},
                        {"kind", v.kind},
                        {"signature", v.signature},
                        {"recorded_signature", recorded_signature},
                        {"detail", v.detail},
                        {"wall_s", wall_s}};
    std::printf("%s\n", kiln::json_text(j, 1).c_str());
  } else {
    size_t ops = minify::op_count(repro->graph);
    std::printf("repro: %s (%zu op%s; inputs: %s)\n", o.repro.c_str(), ops, ops == 1 ? "" : "s",
                origins_summary(*repro).c_str());
    if (repro->lowered_from_torch)
      std::printf("graph: torch-level (after-dynamo), lowered to ATen by Kiln's to_aten; the oracle and every check run "
                  "that ATen graph\n");
    if (!repro->specialized.empty()) {
      std::string symbols;
      for (const auto& [name, value] : repro->specialized) symbols += (symbols.empty() ? "" : ", ") + name + " = " + std::to_string(value);
      std::printf("symbolic sizes replayed at the values load_args recorded: %s\n", symbols.c_str());
    }
    std::printf("check: %s%s\n", minify::describe(predicate).c_str(),
                check_was_chosen ? " (the file names no check; --check chooses another)" : "");
    std::string line = verdict;
    if (v.failed()) line += ": " + v.kind + ": " + v.detail;
    else if (!v.detail.empty()) line += " (" + v.detail + ")";
    std::printf("%s\n", line.c_str());
    if (v.failed() && !same)
      std::printf("recorded failure: %s\n", recorded_signature.empty() ? "(none recorded)" : recorded_signature.c_str());
  }
  if (code == kExitBadInput && !o.json) {
    std::fprintf(stderr, "kiln-cli: %s: %s\n", o.repro.c_str(), v.detail.c_str());
    // A graph whose shapes follow its values (a boolean mask's count of True)
    // may not run on inputs drawn at random: say which inputs were.
    const bool random = std::any_of(repro->input_origins.begin(), repro->input_origins.end(),
                                    [](const std::string& origin) { return origin.rfind("random", 0) == 0; });
    if (v.kind == "eager-error" && random)
      std::fprintf(stderr, "kiln-cli: note: the inputs are drawn at random (%s): the file holds no values for them, and a "
                           "graph whose shapes depend on its input values (a boolean mask) may not run on random ones\n",
                   origins_summary(*repro).c_str());
  }
  return code;
}

}  // namespace

void add_repro_command(CLI::App& app, int& exit_code) {
  CLI::App* repro = app.add_subcommand("repro", "Replay repro files");
  repro->require_subcommand(1);
  auto opts = std::make_shared<Options>();
  CLI::App* run_cmd = repro->add_subcommand(
      "run", "Replay a repro and say whether it still fails (exit 1: it does; 0: it no longer fails)");
  run_cmd->add_option("REPRO", opts->repro,
                      "a Kiln repro folder or .zip; also PyTorch's repro.py / minifier_launcher.py or a graph text file")
      ->required();
  run_cmd->add_option("--check", opts->check,
                      "the check instead of predicate.json's: accuracy, compile-error, crash, cpu-gpu-mismatch, oracle");
  run_cmd->add_option("--tolerance", opts->tolerance, "accuracy tolerance instead of predicate.json's");
  run_cmd->add_option("--timeout", opts->timeout_s, "seconds the replay may take before it counts as a hang")
      ->capture_default_str();
  run_cmd->add_flag("--json", opts->json, "print one JSON document");
  run_cmd->add_option("--max-input-bytes", opts->max_input_bytes,
                      "refuse a repro whose inputs declare more (K/M/G suffixes; default: the memory budget, 3/4 of the machine's memory)");
  add_oracle_options(run_cmd, opts->oracle);
  run_cmd->callback([opts, &exit_code] { exit_code = run(*opts); });
}

}  // namespace kiln::cli
