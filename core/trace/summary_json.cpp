#include "core/trace/summary_json.h"

#include <map>
#include <set>

#include "core/trace/summary.h"

namespace kiln::trace {
namespace {

std::string_view kind_name(TraceKind k) {
  switch (k) {
    case TraceKind::TraceLog: return "trace_log";
    case TraceKind::CompileDebug: return "compile_debug";
    case TraceKind::Minifier: return "minifier";
  }
  return "";
}

// The metrics object without the configuration dumps, which are most of its bytes.
nlohmann::json metrics_json(const Trace& t, const CompileEntry& e) {
  nlohmann::json m = nlohmann::json::object();
  if (!e.metrics) return m;
  std::string text = t.metrics_json(e);
  m = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (m.is_discarded()) {  // NaN and Infinity are Python's, not JSON's; keep what Kiln read
    const CompilationMetrics& cm = *e.metrics;
    m = {{"compile_id", cm.compile_id}, {"co_name", cm.co_name}, {"co_filename", cm.co_filename}};
    if (cm.graph_op_count) m["graph_op_count"] = *cm.graph_op_count;
    if (cm.graph_node_count) m["graph_node_count"] = *cm.graph_node_count;
    if (cm.guard_count) m["guard_count"] = *cm.guard_count;
    if (cm.fail_type) m["fail_type"] = *cm.fail_type;
    if (cm.fail_reason) m["fail_reason"] = *cm.fail_reason;
    m["restart_reasons"] = cm.restart_reasons;
  }
  for (const char* big : {"dynamo_config", "inductor_config", "compiler_config"}) m.erase(big);
  return m;
}

nlohmann::json entry_json(const Trace& t, const CompileEntry& e) {
  nlohmann::json stages = nlohmann::json::object();
  nlohmann::json artifacts = nlohmann::json::array();
  for (const StageSummary& s : stage_summaries(t, e)) {
    if (!s.graph) {
      artifacts.push_back(s.name);
      continue;
    }
    nlohmann::json st = {{"nodes", s.nodes}, {"ops", s.ops}};
    if (!s.error.empty()) st["parse_error"] = s.error;
    stages[s.name] = st;
  }
  nlohmann::json breaks = nlohmann::json::array();
  for (const GraphBreak& gb : e.graph_breaks)
    breaks.push_back({{"reason", gb.reason}, {"file", gb.file}, {"line", gb.line}, {"detail", gb.detail},
                      {"failure", gb.failure}, {"log_line", gb.record_line}});
  nlohmann::json j = {{"id", e.id.known() ? e.id.str() : e.label},
                      {"label", e.label},
                      {"occurrence", e.occurrence},
                      {"attempt", e.attempt},
                      {"function", e.function()},
                      {"file", e.function_file()},
                      {"line", e.function_line()},
                      {"status", entry_status(e)},
                      {"log", t.files.empty() ? std::string() : t.files[e.file].path},
                      {"log_line", e.first_line},
                      {"stages", stages},
                      {"artifacts", artifacts},
                      {"graph_breaks", breaks},
                      {"recompile_reasons", e.recompile_reasons},
                      {"metrics", metrics_json(t, e)}};
  // Restarts and the failure, as tlparse's failures_and_restarts lists them.
  j["restart_reasons"] = e.metrics ? e.metrics->restart_reasons : std::vector<std::string>{};
  j["failure"] = nullptr;
  for (const GraphBreak& gb : e.graph_breaks)
    if (gb.failure)
      j["failure"] = {{"type", gb.reason}, {"reason", gb.detail}, {"file", gb.file}, {"line", gb.line}, {"log_line", gb.record_line}};
  nlohmann::json cache = nlohmann::json::array();
  for (const CacheOutcome& c : cache_outcomes(e)) cache.push_back({{"cache", c.cache}, {"state", c.state}, {"artifact", c.artifact}});
  j["cache"] = cache;
  auto guards = guard_count(t, e);
  j["guard_count"] = guards ? nlohmann::json(*guards) : nlohmann::json(nullptr);
  if (e.rank) j["rank"] = *e.rank;
  nlohmann::json shapes = nlohmann::json::array();
  for (const ShapeEvent& ev : e.shape_events) {
    nlohmann::json x = {{"kind", ev.kind}, {"log_line", ev.line}};
    for (auto [key, value] : {std::pair{"symbol", &ev.symbol}, {"value", &ev.value}, {"range", &ev.range},
                              {"source", &ev.source}, {"expr", &ev.expr}, {"reason", &ev.reason}, {"user_file", &ev.user_file}})
      if (!value->empty()) x[key] = *value;
    if (ev.user_line) x["user_line"] = ev.user_line;
    if (!ev.prefix.empty()) x["prefix"] = ev.prefix;
    if (!ev.method.empty()) x["method"] = ev.method, x["arguments"] = ev.arguments;
    if (!ev.symbol_sources.empty()) {
      nlohmann::json sources = nlohmann::json::object();
      for (const auto& [symbol, source] : ev.symbol_sources) sources[symbol] = source;
      x["symbol_to_sources"] = sources;
    }
    if (!ev.user_stack.empty()) {
      nlohmann::json stack = nlohmann::json::array();
      for (const StackFrame& f : ev.user_stack)
        stack.push_back({{"file", f.file}, {"line", f.line}, {"function", f.function}, {"code", f.code}});
      x["user_stack"] = stack;
    }
    shapes.push_back(x);
  }
  j["shape_events"] = shapes;
  j["chromium_events"] = e.chromium_events.size();
  if (!e.inputs.empty()) {
    nlohmann::json inputs = nlohmann::json::array();
    for (const ReproInput& in : e.inputs)
      inputs.push_back({{"name", in.name}, {"kind", in.kind}, {"shape", in.shape}, {"stride", in.stride},
                        {"dtype", in.dtype}, {"device", in.device}, {"value", in.value}});
    j["inputs"] = inputs;
  }
  return j;
}

// Per rank (from the file names, else the envelopes): its files and compile ids.
nlohmann::json ranks_json(const Trace& t) {
  std::map<int64_t, std::pair<std::set<std::string>, std::vector<std::string>>> ranks;
  for (const CompileEntry& e : t.entries) {
    if (!e.rank) continue;
    auto& [files, ids] = ranks[*e.rank];
    if (e.file < t.files.size()) files.insert(t.files[e.file].path);
    ids.push_back(e.label);
  }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [rank, r] : ranks) out.push_back({{"rank", rank}, {"files", r.first}, {"compile_ids", r.second}});
  return out;
}

}  // namespace

nlohmann::json summary_json(const Trace& t) {
  const TraceTotals totals = trace_totals(t);
  nlohmann::json ids = nlohmann::json::array();
  for (const CompileEntry& e : t.entries) ids.push_back(entry_json(t, e));
  nlohmann::json diags = nlohmann::json::array();
  for (const Diagnostic& d : t.diagnostics) diags.push_back({{"file", d.file}, {"line", d.line}, {"message", d.message}});
  return {{"trace", t.path},
          {"kind", kind_name(t.kind)},
          {"compile_ids", ids},
          {"totals", {{"compile_ids", t.entries.size()}, {"graphs", totals.graphs}, {"graph_breaks", totals.graph_breaks},
                      {"compile_failures", totals.compile_failures}, {"restarts", totals.restarts},
                      {"recompiles", totals.recompiles},
                      {"records", t.records}, {"bytes", t.bytes}}},
          {"ranks", ranks_json(t)},
          {"unknown_tags", t.unknown_tags},
          {"diagnostics", diags}};
}

}  // namespace kiln::trace
