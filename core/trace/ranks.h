#pragma once
// Where the ranks of a distributed run part ways (`kiln-cli trace ranks`, the
// workbench's Ranks panel). A hang or a wrong number in a multi-process job is
// often one rank that compiled something else: another graph, one more
// recompile, a cache miss where the others hit, a different collective
// schedule. Each rank's compiles are laid side by side in log order, ranks
// are grouped by what they share on each aspect, and the first compile where
// a rank leaves the majority is named with what differs.
//
// Collectives parity, per compile that logs both: the collectives Inductor's
// scheduler planned (inductor_collective_schedule) against the c10d calls in
// the generated code (inductor_output_code), and collectives whose wait_tensor
// is missing from the code; a mismatch is a deadlock waiting to happen.
//
// Tests: tests/core/test_trace_ranks.cpp.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/trace/trace.h"

namespace kiln::trace {

// One compile of one rank, reduced to what ranks are compared on.
struct RankCompile {
  std::string id;      // the label without its rank: "0/1", "0/0#2"
  std::string label;   // the entry's own label: "r1:0/1"
  std::string status;  // entry_status
  std::string cache;   // "fx_graph hit, aotautograd hit", "" without a lookup
  std::string graph;   // short hash of the Dynamo graph text, "" without one
  std::vector<std::string> collectives;  // the scheduler's collectives, every schedule of the compile
  bool has_schedule = false;
  // inductor_runtime_and_tensor_meta as canonical JSON, device indexes and
  // runtime estimates left out; "" without it.
  std::string tensor_meta;
  std::optional<double> estimated_runtime_ns;  // the estimates' sum over its ops
  bool recompile = false;   // a later compile of its frame
};

struct RankProfile {
  std::optional<int64_t> rank;  // none: a file that names no rank (then `file` tells them apart)
  std::string file;             // the first file of the rank
  std::vector<RankCompile> compiles;
  // The run's order of compiled graphs, from the graph_execution artifact
  // (compile ids) or inductor_graph_execution records (graph names).
  std::vector<std::string> execution_order;
  int failures = 0, graph_breaks = 0, restarts = 0, recompiles = 0;

  std::string name() const;  // "rank 3", or the file's name
};

// Ranks that agree on one aspect, and what they agree on.
struct RankGroup {
  std::vector<size_t> members;  // indexes into RankReport::ranks
  std::string summary;          // "12 compile ids", "6 collectives in 1 graph: all_reduce_ x6"
};

struct RankAspect {
  std::string name;  // "compile ids", "recompiles", "cache", "graphs", ...
  std::vector<RankGroup> groups;  // largest first; one group: every rank agrees
  bool diverges() const { return groups.size() > 1; }
};

// The first compile at which a rank leaves the reference (the sequence most
// ranks share, else the lowest rank's).
struct RankDivergence {
  size_t rank = 0, reference = 0;  // indexes into RankReport::ranks
  size_t index = 0;                // 0-based position in both compile sequences
  std::string compile, reference_compile;  // "" when that sequence has ended
  std::string what;                         // "compile id", "graph", "status", "cache", "collectives"
  std::string detail;                       // one line for people
};

struct CollectiveParity {
  size_t rank = 0;
  std::string compile;
  std::map<std::string, int> scheduled, in_code;  // by collective kind: "all_reduce", "all_gather", ...
  int offset = 0;         // sum over kinds of |scheduled - in code|
  int missing_waits = 0;  // collectives in the code beyond its wait_tensor calls
};

struct ExecutionStep {
  size_t index = 0;
  std::map<size_t, std::string> by_rank;  // rank index -> what ran
  bool schedule_mismatch = false;         // the graphs that ran here plan different collectives
  bool cache_mismatch = false;
};

// Inductor's estimated runtime of one compile on the ranks that logged it.
struct RuntimeSpread {
  std::string compile;
  size_t fastest = 0, slowest = 0;  // indexes into RankReport::ranks
  double fastest_ns = 0, slowest_ns = 0;
};

struct RankReport {
  std::vector<RankProfile> ranks;           // by rank, then file
  std::vector<int64_t> missing_ranks;       // between 0 and the highest rank, with no log
  std::vector<RankAspect> aspects;          // only aspects some rank logs
  std::vector<RankDivergence> divergences;  // one per rank that leaves the reference, earliest first
  bool reference_is_majority = false;       // more ranks share the reference's compiles than any other's
  std::vector<CollectiveParity> parity;     // compiles whose code disagrees with their schedule
  int parity_checked = 0;                   // compiles with both a schedule and output code
  std::vector<ExecutionStep> execution;     // steps where ranks ran different graphs or differ in cache/schedule
  bool execution_order_differs = false;
  std::vector<RuntimeSpread> runtime_spreads;  // widest first
  std::vector<Diagnostic> diagnostics;      // payloads that could not be read for the comparison

  bool diverges() const;
};

RankReport rank_report(const Trace& trace);

// A rank's cache outcomes, a letter per compile: H (every lookup hit), M (a
// miss), B (a bypass), - (no lookup logged).
std::string cache_letters(const RankProfile& rank);

// "ranks 0-4, 6" (rank files by name where they have no number).
std::string rank_names(const RankReport& report, const std::vector<size_t>& members);

// `kiln-cli trace ranks` prints these (ranks_format.cpp); the workbench shows the text.
std::string rank_report_text(const RankReport& report);
nlohmann::json rank_report_json(const RankReport& report);

// "all_reduce" for "torch.ops._c10d_functional.all_reduce_.default"; "" for
// what is not a collective (wait_tensor included).
std::string collective_kind(std::string_view op);

// The c10d functional calls in generated code, by collective kind, comments
// left out; wait_tensor calls counted under "wait_tensor".
std::map<std::string, int> collective_calls(std::string_view code);

}  // namespace kiln::trace
