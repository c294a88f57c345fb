#pragma once
// What `kiln-cli trace summary` and the GUI's compile-id list show for an
// entry: its status, guard count and the size of each stage graph.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/trace/trace.h"

namespace kiln::trace {

struct GraphCounts {
  int nodes = 0;         // every node: placeholders, get_attr, calls and the output
  int ops = 0;           // call nodes (call_function / call_method / call_module)
  int placeholders = 0;
};

// Counts the nodes of a graph in print_readable form by its lines, without
// parsing it: one statement per node in the top-level forward(). Stands in
// until the payload goes through the graph parser.
GraphCounts count_graph_text(std::string_view text);

// One payload of an entry as the summary lists it. For graph stages the counts
// come from the parsed graph (Trace::graph); when the payload does not parse,
// from count_graph_text, and `error` says why.
struct StageSummary {
  std::string name;
  bool graph = false;  // an FX graph stage (Artifact::graph)
  int nodes = 0;
  int ops = 0;
  std::string error;
};
std::vector<StageSummary> stage_summaries(const Trace& trace, const CompileEntry& entry);

// tlparse's status of a compile: "error" (the compile failed), "empty" (no
// ops), "break" (a graph break or restart), "ok", "missing" (no metrics).
std::string entry_status(const CompileEntry& entry);

// compilation_metrics.guard_count, else the guards in dynamo_cpp_guards_str.
std::optional<int64_t> guard_count(const Trace& trace, const CompileEntry& entry);
// The guards (not the guard managers) in a dynamo_cpp_guards_str tree: one
// per "+- KIND: text" line whose KIND is an upper-case guard kind.
struct CppGuardLine {
  std::string_view kind;  // "TENSOR_MATCH"
  std::string_view text;  // after the colon
};
std::vector<CppGuardLine> cpp_guard_lines(std::string_view text);
int count_cpp_guards(std::string_view text);

// "0.250 s", or "-" when the log gives no time.
std::string seconds_text(const std::optional<double>& seconds);

// The totals line of the summary (text and JSON alike).
// One cache lookup of a compile, from the artifact PyTorch logs for it
// (fx_graph_cache_hit, aotautograd_cache_miss, ...): which cache and what happened.
struct CacheOutcome {
  std::string cache;  // "fx_graph", "aotautograd"
  std::string state;  // "hit", "miss", "bypass"
  std::string artifact;
};
std::vector<CacheOutcome> cache_outcomes(const CompileEntry& entry);

struct TraceTotals {
  int graphs = 0;            // entries with an FX graph stage
  int graph_breaks = 0;
  int compile_failures = 0;  // breaks that failed the compile
  int restarts = 0;          // compilation_metrics.restart_reasons, one per reason
  int recompiles = 0;        // entries with recompile reasons
};
TraceTotals trace_totals(const Trace& t);

}  // namespace kiln::trace
