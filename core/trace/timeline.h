#pragma once
// The chromium events of a trace as one Chrome/Perfetto trace document
// (`kiln-cli trace timeline`; ui.perfetto.dev and chrome://tracing open it).
// PyTorch logs each phase of a compile (dynamo, backend compile, inductor,
// cache lookups) as a chromium_event record; here they become one timeline,
// a process per rank, each event tagged with the compile it belongs to.
//
// Tests: tests/core/test_trace_timeline.cpp.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/trace/trace.h"

namespace kiln::trace {

struct TimelineStats {
  size_t events = 0;
  size_t skipped = 0;  // payloads that are not a JSON object (damaged lines)
  size_t compiles = 0; // compile ids with at least one event
  size_t ranks = 0;
};

// {"traceEvents": [...], "displayTimeUnit": "ms"}: every event as PyTorch
// logged it, in log order, with pid set to the rank (0 without one) and
// args.kiln_compile set to the compile's label (absent for the run's own
// phases); process names say "rank N".
nlohmann::json chrome_trace(const Trace& t, TimelineStats* stats = nullptr);

// The same events as spans for the workbench's timeline: "B"/"E" pairs
// matched by name (innermost first), "X" with its duration, "i" as an instant;
// each with its nesting depth within its rank. A "B" that never ends runs to
// the rank's last timestamp and says so.
struct TimelineSpan {
  int64_t rank = 0;
  std::string compile;  // the compile's label; "" for the run's own phases
  std::string name;
  double start_us = 0, end_us = 0;
  int depth = 0;
  bool unfinished = false;
};
std::vector<TimelineSpan> timeline_spans(const Trace& t, TimelineStats* stats = nullptr);

}  // namespace kiln::trace
