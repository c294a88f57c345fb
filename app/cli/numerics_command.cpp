// `kiln-cli numerics TARGET --compile-id ID --stage NAME` (docs/cli.md): the
// workbench's numerics panel without the window. TARGET opens as the
// workbench opens it (session/session.h: a program, a trace, a debug folder,
// a Kiln repro); the stage's graph runs on every rung of the ladder
// (session/numerics.h) against float64 eager, one line per node.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <iostream>

#include "app/cli/commands.h"
#include "core/util/output_text.h"
#include "session/numerics.h"
#include "session/session.h"

namespace kiln::cli {

namespace {

struct Options {
  std::string target, compile_id, stage;
  double tolerance = 1e-4;
  bool json = false;
};

std::atomic<bool> g_cancel{false};
extern "C" void on_numerics_interrupt(int) { g_cancel = true; }

int fail(int code, const std::string& message) {
  std::fprintf(stderr, "kiln-cli: numerics: %s\n", message.c_str());
  return code;
}

std::string cell(double v) {
  if (std::isnan(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// JSON has no NaN or Inf: those are strings ("nan", "inf", "-inf").
nlohmann::json number(double v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
}

nlohmann::json errors_json(const kiln::session::TensorErrors& e) {
  using kiln::session::ErrorHistogram;
  nlohmann::json histogram = nlohmann::json::array(), worst = nlohmann::json::array();
  for (int b = 0; b < ErrorHistogram::kBuckets; ++b)
    histogram.push_back({{"bucket", ErrorHistogram::label(b)}, {"count", e.histogram.counts[b]}});
  for (const kiln::session::WorstElement& w : e.worst)
    worst.push_back({{"index", w.index}, {"reference", number(w.reference)}, {"value", number(w.value)}, {"error", number(w.error)}});
  return {{"over", e.over},         {"share", e.share()},           {"non_finite", e.non_finite},
          {"exact", e.exact},       {"max_error", number(e.max_error)}, {"histogram", histogram},
          {"worst", worst}};
}

// "12/4096 (0.29%)": the elements over on the rung with most of them.
std::string over_cell(const kiln::session::NodeNumerics& n) {
  int k = n.worst_rung();
  if (k < 0) return "-";
  char buf[96];
  if (n.errors[k].over == 0) {
    std::snprintf(buf, sizeof buf, "0/%lld", (long long)n.errors[k].elements);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "%lld/%lld (%.3g%%) %s", (long long)n.errors[k].over, (long long)n.errors[k].elements,
                100 * n.errors[k].share(), kiln::session::rung_name(k));
  return buf;
}

int run_numerics(const Options& o) {
  using namespace kiln::session;
  std::signal(SIGINT, on_numerics_interrupt);
  std::signal(SIGTERM, on_numerics_interrupt);
  LoadOptions lo;
  lo.codegen = false;  // the stage graphs are what is measured, not their code
  lo.cancel = &g_cancel;
  Expected<std::shared_ptr<Session>> s = load_session(o.target, lo);
  if (!s) return fail(g_cancel ? kExitFailures : kExitBadInput, o.target + ": " + s.status().to_string());
  const SessionCompile* c = (*s)->find(o.compile_id);
  if (!c) {
    std::string ids;
    for (const SessionCompile& sc : (*s)->compiles) ids += (ids.empty() ? "" : ", ") + sc.id;
    return fail(kExitUsage, o.target + " has no compile id " + o.compile_id + " (it has: " + ids + ")");
  }
  const SessionStage* st = c->stage(o.stage);
  if (!st || st->kind != StageKind::Graph) {
    std::string names;
    for (const SessionStage& x : c->stages)
      if (x.kind == StageKind::Graph) names += (names.empty() ? "" : ", ") + x.name;
    return fail(kExitUsage, "compile " + o.compile_id + " has no graph stage " + o.stage + " (it has: " + names + ")");
  }
  std::string replayed;
  Expected<std::shared_ptr<const Graph>> g = numerics_graph(**s, *c, *st, &replayed);
  if (!g) return fail(kExitBadInput, o.stage + ": " + g.status().to_string());
  Expected<NumericsResult> r = measure_numerics(**g, o.tolerance, &g_cancel);
  if (!r) return fail(g_cancel ? kExitFailures : kExitBadInput, r.status().message());
  if (!replayed.empty()) r->notes.insert(r->notes.begin(), replayed);

  if (o.json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const NodeNumerics& n : r->rows) {
      nlohmann::json rel = nlohmann::json::object(), abs = nlohmann::json::object();
      for (int k = 0; k < kRungs; ++k) {
        rel[rung_name(k)] = std::isnan(n.rel[k]) ? nlohmann::json(nullptr) : nlohmann::json(n.rel[k]);
        abs[rung_name(k)] = std::isnan(n.abs[k]) ? nlohmann::json(nullptr) : nlohmann::json(n.abs[k]);
      }
      nlohmann::json over = nlohmann::json::object(), share = nlohmann::json::object(), errors = nlohmann::json::object();
      for (int k = 0; k < kRungs; ++k) {
        if (!n.errors[k].measured) continue;
        over[rung_name(k)] = n.errors[k].over;
        share[rung_name(k)] = n.errors[k].share();
        errors[rung_name(k)] = errors_json(n.errors[k]);
      }
      rows.push_back({{"node", n.name}, {"target", n.target}, {"dtype", n.dtype}, {"shape", n.sizes},
                      {"elements", n.elements()}, {"rel", rel}, {"abs", abs}, {"over", over}, {"share", share},
                      {"errors", errors}});
    }
    nlohmann::json doc = {{"target", o.target},           {"compile_id", o.compile_id},
                          {"stage", o.stage},             {"tolerance", r->tolerance},
                          {"error_rule", error_rule()},
                          {"rows", rows},                 {"notes", r->notes},
                          {"first_divergent", r->first_divergent < 0 ? nlohmann::json(nullptr)
                                                                     : nlohmann::json(r->rows[size_t(r->first_divergent)].name)},
                          {"first_divergent_rung", r->first_divergent_rung < 0 ? nlohmann::json(nullptr)
                                                                               : nlohmann::json(rung_name(r->first_divergent_rung))}};
    std::cout << kiln::json_text(doc, 1) << "\n";
  } else {
    std::printf("numerics of [%s] %s: %zu nodes against float64 eager, tolerance %g (relative error per rung)\n",
                o.compile_id.c_str(), o.stage.c_str(), r->rows.size(), r->tolerance);
    std::printf("%-28s %-36s", "node", "target");
    for (int k = 0; k < kRungs; ++k) std::printf(" %12s", rung_name(k));
    std::printf("  %s\n", "over (most on)");
    for (size_t i = 0; i < r->rows.size(); ++i) {
      const NodeNumerics& n = r->rows[i];
      std::printf("%-28s %-36s", n.name.c_str(), n.target.c_str());
      for (int k = 0; k < kRungs; ++k) std::printf(" %12s", cell(n.rel[k]).c_str());
      std::printf("  %s%s\n", over_cell(n).c_str(), int(i) == r->first_divergent ? "  <- first divergent" : "");
    }
    for (const std::string& note : r->notes) std::printf("note: %s\n", note.c_str());
    if (r->first_divergent < 0)
      std::printf("result: every node within %g on every rung\n", r->tolerance);
    else {
      const NodeNumerics& n = r->rows[size_t(r->first_divergent)];
      const TensorErrors& e = n.errors[r->first_divergent_rung];
      std::printf("result: first divergent node %s (%s), first over the tolerance on rung %s: %lld of %lld elements "
                  "(%.3g%%)%s\n",
                  n.name.c_str(), n.target.c_str(), rung_name(r->first_divergent_rung), (long long)e.over,
                  (long long)e.elements, 100 * e.share(), e.exact ? " differ" : " over");
      for (const WorstElement& w : e.worst) {
        std::string index;
        for (int64_t i : w.index) index += (index.empty() ? "" : ", ") + std::to_string(i);
        std::printf("  worst [%s]: reference %.9g, %s %.9g, error %s\n", index.c_str(), w.reference,
                    rung_name(r->first_divergent_rung), w.value, cell(w.error).c_str());
      }
    }
    std::printf("error: %s\n", error_rule());
  }
  return r->first_divergent < 0 ? kExitOk : kExitFailures;
}

}  // namespace

void add_numerics_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("numerics", "Per-node error of a stage graph on each rung against float64 eager");
  sub->add_option("target", o->target, "program, TORCH_TRACE log or folder, debug folder, or Kiln repro")->required();
  sub->add_option("--compile-id", o->compile_id, "the compile id, as kiln-cli stages prints it")->required();
  sub->add_option("--stage", o->stage, "a graph stage of that compile (aot_forward_graph, forward cse #6, ...)")->required();
  sub->add_option("--tolerance", o->tolerance, "relative tolerance")->check(CLI::Range(0.0, 1e6));
  sub->add_flag("--json", o->json, "print one JSON document");
  sub->callback([o, &exit_code] {
    try {
      exit_code = run_numerics(*o);
    } catch (const Error& e) {
      exit_code = fail(kExitBadInput, e.what());
    }
  });
}

}  // namespace kiln::cli
