// `kiln-cli trace summary TRACE [--json]` and
// `kiln-cli trace graph TRACE --compile-id ID --stage S [--raw]` (CLI.md).
//
// Exit codes: 3 when TRACE cannot be opened (missing, unreadable, not a dump
// Kiln knows), or, for `graph`, when the compile id or stage does not exist or
// the stage does not parse. A trace that opens but has damaged lines still
// exits 0: its diagnostics are printed after the summary (and listed under
// "diagnostics" with --json), so one bad line does not hide a whole log.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "app/cli/commands.h"
#include "core/graph/printer.h"
#include "core/store/workspace.h"
#include "core/trace/indexed_open.h"
#include "core/trace/ranks.h"
#include "core/trace/reader.h"
#include "core/trace/report.h"
#include "core/trace/summary.h"
#include "core/trace/summary_json.h"
#include "core/trace/timeline.h"
#include "core/util/output_text.h"

namespace kiln::cli {
namespace {

using trace::CompileEntry;
using trace::Trace;

struct Options {
  std::string path;
  std::string compile_id;
  std::string stage;
  bool json = false;
  bool raw = false;
  std::string workspace;  // reopen from (and store into) this workspace
  std::string out;        // timeline: the file to write; report: the folder
  bool overwrite = false; // report: replace an existing folder
};

Expected<Trace> open(const Options& o) {
  Expected<Trace> t = Status::error("");
  if (o.workspace.empty()) {
    t = trace::open_trace(o.path);
  } else if (auto ws = Workspace::open(o.workspace); !ws) {
    // A read-only folder, a full disk, a damaged file: the trace itself can
    // still be read, so it is, and the user is told why it was not stored.
    std::fprintf(stderr, "kiln-cli: warning: %s; reading the trace without it\n", ws.status().to_string().c_str());
    t = trace::open_trace(o.path);
  } else {
    t = trace::open_trace_cached(o.path, ws->get());
  }
  if (!t) std::fprintf(stderr, "kiln-cli: %s\n", t.status().to_string().c_str());
  return t;
}

// The first line of a possibly long, multi-line text.
std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// A multi-line message on one line (its non-blank lines joined), at most `limit`
// characters: a failure's reason often puts the exception on its second line.
std::string one_line(const std::string& s, size_t limit = 300) {
  std::string out;
  size_t pos = 0;
  while (pos <= s.size() && out.size() < limit) {
    size_t end = std::min(s.find('\n', pos), s.size());
    std::string line = s.substr(pos, end - pos);
    line.erase(0, std::min(line.find_first_not_of(" \t"), line.size()));
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
    if (!line.empty()) out += (out.empty() ? "" : " ") + line;
    pos = end + 1;
  }
  return out.size() > limit ? out.substr(0, limit) + "..." : out;
}

void print_entry(const Trace& t, const CompileEntry& e) {
  std::string where = e.function_file().empty() ? "" : "  " + e.function_file() + ":" + std::to_string(e.function_line());
  std::string heading = e.id.known() ? trace::display_id(e.id, e.attempt) : "[" + e.label + "]";
  if (std::string_view rank = trace::rank_part(e.label); !rank.empty()) heading = std::string(rank) + heading;
  std::printf("%s %s%s  status=%s\n", heading.c_str(),
              e.function().empty() ? "-" : e.function().c_str(), where.c_str(), trace::entry_status(e).c_str());
  if (e.id.known() && (e.label != e.id.str() || t.files.size() > 1))
    std::printf("  label %s  log %s:%d\n", e.label.c_str(), t.files[e.file].path.c_str(), e.first_line);
  std::string artifacts;
  for (const trace::StageSummary& s : trace::stage_summaries(t, e)) {
    if (s.graph)
      std::printf("  stage %-28s %5d nodes %5d ops%s\n", s.name.c_str(), s.nodes, s.ops,
                  s.error.empty() ? "" : ("  (does not parse: " + s.error + ")").c_str());
    else
      artifacts += (artifacts.empty() ? "" : ", ") + s.name;
  }
  if (!artifacts.empty()) std::printf("  artifacts: %s\n", artifacts.c_str());
  if (e.artifacts.empty() && !e.tag_counts.empty()) {
    std::string records;
    for (const auto& [tag, n] : e.tag_counts) records += (records.empty() ? "" : ", ") + tag + " " + std::to_string(n);
    std::printf("  records: %s\n", records.c_str());
  }
  for (const trace::GraphBreak& gb : e.graph_breaks) {
    const std::string where = gb.file.empty() ? "no user frame" : gb.file + ":" + std::to_string(gb.line);
    if (gb.failure)  // the exception, not a break: the frame ran eagerly
      std::printf("  compile failure: %s: %s (%s; log line %d)\n", first_line(gb.reason).c_str(),
                  gb.detail.empty() ? "(no reason logged)" : one_line(gb.detail).c_str(), where.c_str(), gb.record_line);
    else
      std::printf("  graph break: %s at %s\n", first_line(gb.reason).c_str(), where.c_str());
  }
  if (e.metrics)
    for (const std::string& r : e.metrics->restart_reasons) std::printf("  restart: %s\n", first_line(r).c_str());
  if (std::vector<trace::CacheOutcome> cache = trace::cache_outcomes(e); !cache.empty()) {
    std::string line;
    for (const trace::CacheOutcome& c : cache) line += (line.empty() ? "" : ", ") + c.cache + " " + c.state;
    std::printf("  cache: %s\n", line.c_str());
  }
  for (const std::string& r : e.recompile_reasons) std::printf("  recompile reason: %s\n", first_line(r).c_str());
  for (const trace::ShapeEvent& ev : e.shape_events) {
    if (ev.kind == "create_symbol")
      std::printf("  symbol %s = %s (%s) at %s:%d\n", ev.symbol.c_str(), ev.source.c_str(), ev.value.c_str(),
                  ev.user_file.c_str(), ev.user_line);
    if (ev.kind != "guard_added" && ev.kind != "propagate_real_tensors_provenance") continue;
    // torch.export's guards: where each came from, and the ones export had to evaluate (its failures).
    std::string sources;
    for (const auto& [symbol, source] : ev.symbol_sources) sources += (sources.empty() ? "; " : ", ") + symbol + " = " + source;
    std::printf("  %s: %s at %s:%d%s%s\n", ev.kind == "guard_added" ? "guard added" : "data-dependent", ev.expr.c_str(),
                ev.user_file.c_str(), ev.user_line, ev.prefix == "eval" ? " (evaluated by export: a failure)" : "",
                sources.c_str());
  }
  if (auto g = trace::guard_count(t, e)) std::printf("  guards: %lld\n", static_cast<long long>(*g));
  if (e.metrics) {
    const trace::CompilationMetrics& m = *e.metrics;
    std::printf("  compile time: %s (backend %s, inductor %s, code gen %s)\n", trace::seconds_text(m.entire_frame_compile_time_s).c_str(),
                trace::seconds_text(m.backend_compile_time_s).c_str(), trace::seconds_text(m.inductor_compile_time_s).c_str(),
                trace::seconds_text(m.code_gen_time_s).c_str());
  }
  for (const trace::ReproInput& in : e.inputs) {
    std::string shape;
    for (const std::string& d : in.shape) shape += (shape.empty() ? "" : ", ") + d;
    std::printf("  input %s: %s %s[%s] %s\n", in.name.c_str(), in.kind.c_str(), in.dtype.c_str(), shape.c_str(), in.device.c_str());
  }
}

// Written beside the target and renamed, so a failed write never leaves half a file.
int run_timeline(const Options& o) {
  auto t = open(o);
  if (!t) return kExitBadInput;
  trace::TimelineStats stats;
  const std::string text = kiln::json_text(trace::chrome_trace(*t, &stats));
  const std::string tmp = o.out + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f << text;
    if (!f.flush()) {
      std::fprintf(stderr, "kiln-cli: %s: cannot write\n", o.out.c_str());
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      return kExitFailures;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, o.out, ec);
  if (ec) {
    std::fprintf(stderr, "kiln-cli: %s: %s\n", o.out.c_str(), ec.message().c_str());
    std::filesystem::remove(tmp, ec);
    return kExitFailures;
  }
  std::printf("wrote %zu events of %zu compile ids on %zu rank(s) to %s\n", stats.events, stats.compiles, stats.ranks,
              o.out.c_str());
  if (stats.skipped) std::printf("%zu chromium_event payloads are not JSON objects and were left out\n", stats.skipped);
  for (const trace::Diagnostic& d : t->diagnostics) std::fprintf(stderr, "kiln-cli: %s:%d: %s\n", d.file.c_str(), d.line, d.message.c_str());
  if (!stats.events) std::printf("the trace has no chromium_event records: the timeline is empty\n");
  return kExitOk;
}

// Exit 0 whether or not the ranks diverge: the report is the answer, and
// `--json`'s "diverges" is there for scripts that want to fail on it.
int run_ranks(const Options& o) {
  auto t = open(o);
  if (!t) return kExitBadInput;
  const trace::RankReport report = trace::rank_report(*t);
  if (o.json) {
    nlohmann::json doc = trace::rank_report_json(report);
    nlohmann::json diagnostics = nlohmann::json::array();
    for (const trace::Diagnostic& d : t->diagnostics) diagnostics.push_back({{"file", d.file}, {"line", d.line}, {"message", d.message}});
    doc["trace_diagnostics"] = std::move(diagnostics);
    std::cout << kiln::json_text(doc, 1) << "\n";
    return kExitOk;
  }
  std::fputs(trace::rank_report_text(report).c_str(), stdout);
  for (const trace::Diagnostic& d : t->diagnostics) std::printf("%s:%d: %s\n", d.file.c_str(), d.line, d.message.c_str());
  return kExitOk;
}

int run_report(const Options& o) {
  std::error_code ec;
  if (std::filesystem::exists(o.out, ec) && !o.overwrite) {  // the caller's to decide about, before any work
    std::fprintf(stderr, "kiln-cli: %s: the folder exists; --overwrite replaces it\n", o.out.c_str());
    return kExitUsage;
  }
  auto t = open(o);
  if (!t) return kExitBadInput;
  trace::ReportOptions ro;
  ro.overwrite = o.overwrite;
  trace::ReportStats stats;
  if (Status s = trace::write_report(*t, o.out, ro, &stats); !s.ok()) {
    std::fprintf(stderr, "kiln-cli: %s\n", s.to_string().c_str());
    return kExitFailures;
  }
  std::printf("wrote %zu pages (%zu compile ids, %zu payloads) to %s/index.html\n", stats.pages, stats.compiles, stats.payloads,
              o.out.c_str());
  if (stats.truncated) std::printf("%zu payloads over 8 MB were cut (their pages say where the whole text lies)\n", stats.truncated);
  if (stats.unreadable) std::printf("%zu payloads could not be read (their pages say why)\n", stats.unreadable);
  for (const trace::Diagnostic& d : t->diagnostics) std::fprintf(stderr, "kiln-cli: %s:%d: %s\n", d.file.c_str(), d.line, d.message.c_str());
  return kExitOk;
}

int run_provenance(const Options& o) {
  auto t = open(o);
  if (!t) return kExitBadInput;
  return run_trace_provenance(*t, o.compile_id, o.json);
}

int run_summary(const Options& o) {
  auto t = open(o);
  if (!t) return kExitBadInput;
  if (o.json) {
    const nlohmann::json doc = trace::summary_json(*t);
    std::cout << kiln::json_text(doc, 1) << "\n";
    return kExitOk;
  }
  for (const CompileEntry& e : t->entries) print_entry(*t, e);
  const trace::TraceTotals totals = trace::trace_totals(*t);
  std::printf("%zu compile ids, %d graphs, %d graph breaks, %d compile failures, %d restarts, %d recompiles, %lld records\n",
              t->entries.size(), totals.graphs, totals.graph_breaks, totals.compile_failures, totals.restarts,
              totals.recompiles, static_cast<long long>(t->records));
  // Per rank, when there are several: how many compile ids each compiled.
  std::map<int64_t, int> per_rank;
  for (const CompileEntry& e : t->entries)
    if (e.rank) ++per_rank[*e.rank];
  if (per_rank.size() > 1) {
    std::string ranks;
    for (const auto& [rank, n] : per_rank) ranks += (ranks.empty() ? "" : ", ") + std::string("rank ") + std::to_string(rank) + ": " + std::to_string(n);
    std::printf("compile ids per rank: %s\n", ranks.c_str());
  }
  for (const auto& [tag, n] : t->unknown_tags) std::printf("unknown tag %s: %lld records\n", tag.c_str(), static_cast<long long>(n));
  for (const trace::Diagnostic& d : t->diagnostics) std::printf("%s:%d: %s\n", d.file.c_str(), d.line, d.message.c_str());
  std::printf("%zu diagnostics\n", t->diagnostics.size());
  return kExitOk;
}

int run_graph(const Options& o) {
  auto t = open(o);
  if (!t) return kExitBadInput;
  const CompileEntry* e = t->find(o.compile_id);
  if (!e) {
    std::string have;
    for (const CompileEntry& x : t->entries) have += (have.empty() ? "" : ", ") + x.label;
    std::fprintf(stderr, "kiln-cli: %s: no compile id '%s' (it has: %s)\n", o.path.c_str(), o.compile_id.c_str(), have.c_str());
    return kExitBadInput;
  }
  const trace::Artifact* a = e->artifact(o.stage);
  if (o.raw || (a && !a->graph)) {
    auto text = t->payload_text(*e, o.stage);
    if (!text) {
      std::fprintf(stderr, "kiln-cli: %s: %s\n", o.path.c_str(), text.status().to_string().c_str());
      return kExitBadInput;
    }
    std::fwrite(text->data(), 1, text->size(), stdout);
    if (!text->empty() && text->back() != '\n') std::fputc('\n', stdout);
    return kExitOk;
  }
  auto g = t->graph(*e, o.stage);
  if (!g) {
    std::fprintf(stderr, "kiln-cli: %s\n", g.status().to_string().c_str());
    return kExitBadInput;
  }
  std::fputs(print_graph_module(**g).c_str(), stdout);
  return kExitOk;
}

}  // namespace

void add_trace_command(CLI::App& app, int& exit_code) {
  CLI::App* trace_cmd = app.add_subcommand("trace", "Read a TORCH_TRACE log, TORCH_COMPILE_DEBUG folder or minifier repro");
  trace_cmd->require_subcommand(1);

  auto to = std::make_shared<Options>();
  CLI::App* timeline = trace_cmd->add_subcommand(
      "timeline", "Write the trace's chromium events as a Chrome/Perfetto trace (ui.perfetto.dev opens it)");
  timeline->add_option("TRACE", to->path, "log file, folder of logs (one process per rank)")->required();
  timeline->add_option("--out", to->out, "the JSON file to write")->required();
  timeline->callback([to, &exit_code] { exit_code = run_timeline(*to); });

  auto po = std::make_shared<Options>();
  CLI::App* report = trace_cmd->add_subcommand("report", "Write a static HTML report of the trace to attach to a bug report");
  report->add_option("TRACE", po->path, "log file, folder of logs, debug folder or repro.py")->required();
  report->add_option("--out", po->out, "the folder to write (index.html and a page per compile id and payload)")->required();
  report->add_flag("--overwrite", po->overwrite, "replace the folder if it exists");
  report->add_option("--workspace", po->workspace, "workspace file: a trace indexed once reopens from it");
  report->callback([po, &exit_code] { exit_code = run_report(*po); });

  auto vo = std::make_shared<Options>();
  CLI::App* provenance = trace_cmd->add_subcommand(
      "provenance", "Where each kernel of a compile's output code lies, and the nodes it was made from");
  provenance->add_option("TRACE", vo->path, "log file or folder of logs")->required();
  provenance->add_option("--compile-id", vo->compile_id, "compile id (0/1, [0/1_1]) or label (r1:0/1)")->required();
  provenance->add_flag("--json", vo->json, "print one JSON document");
  provenance->add_option("--workspace", vo->workspace, "workspace file: a trace indexed once reopens from it");
  provenance->callback([vo, &exit_code] { exit_code = run_provenance(*vo); });

  auto ro = std::make_shared<Options>();
  CLI::App* ranks = trace_cmd->add_subcommand(
      "ranks", "Compare the ranks of a multi-process trace: where they compiled, cached or scheduled collectives differently");
  ranks->add_option("TRACE", ro->path, "folder of per-rank logs (dedicated_log_torch_trace_rank_N*.log), or one log")->required();
  ranks->add_flag("--json", ro->json, "print one JSON document");
  ranks->add_option("--workspace", ro->workspace, "workspace file: a trace indexed once reopens from it");
  ranks->callback([ro, &exit_code] { exit_code = run_ranks(*ro); });

  auto so = std::make_shared<Options>();
  CLI::App* summary = trace_cmd->add_subcommand("summary", "Per compile id: function, status, stage graphs, breaks, recompiles");
  summary->add_option("TRACE", so->path, "log file, folder of logs, debug folder or repro.py")->required();
  summary->add_flag("--json", so->json, "print one JSON document");
  summary->add_option("--workspace", so->workspace, "workspace file: a trace indexed once reopens from it");
  summary->callback([so, &exit_code] { exit_code = run_summary(*so); });

  auto go = std::make_shared<Options>();
  CLI::App* graph = trace_cmd->add_subcommand("graph", "Print one stage graph of a compile id in print_readable form");
  graph->add_option("TRACE", go->path, "log file, folder of logs, debug folder or repro.py")->required();
  graph->add_option("--compile-id", go->compile_id, "compile id (\"0/0\", \"[0/1_1]\") or label (\"0/0#2\", \"model__0\")")->required();
  graph->add_option("--stage", go->stage, "dynamo_output_graph, aot_forward_graph, inductor_post_grad_graph, ...")->required();
  graph->add_option("--workspace", go->workspace, "workspace file: a trace indexed once reopens from it");
  graph->add_flag("--raw", go->raw, "print the payload as the dump has it instead of re-printing the parsed graph");
  graph->callback([go, &exit_code] { exit_code = run_graph(*go); });
}

}  // namespace kiln::cli
