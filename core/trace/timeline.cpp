#include "core/trace/timeline.h"

#include <algorithm>
#include <map>
#include <set>

namespace kiln::trace {
namespace {

// One payload as an event, or null when it is not a JSON object.
nlohmann::json event_of(const Trace& t, const PayloadRef& ref) {
  Expected<std::string> text = t.text(ref);
  if (!text) return nullptr;
  nlohmann::json ev = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  return ev.is_object() ? ev : nlohmann::json(nullptr);
}

// A run-wide event belongs to the rank of its file (0 without one).
int64_t run_event_rank(const Trace& t, const PayloadRef& ref) {
  if (ref.file < t.files.size() && t.files[ref.file].rank) return *t.files[ref.file].rank;
  return 0;
}

}  // namespace

nlohmann::json chrome_trace(const Trace& t, TimelineStats* stats) {
  TimelineStats s;
  nlohmann::json events = nlohmann::json::array();
  std::set<int64_t> ranks;
  auto add = [&](const PayloadRef& ref, int64_t rank, const std::string* compile) {
    nlohmann::json ev = event_of(t, ref);
    if (ev.is_null()) {
      ++s.skipped;
      return;
    }
    // Perfetto groups by pid: one process per rank, as tlparse's combined view does.
    ev["pid"] = rank;
    if (!ev.contains("tid")) ev["tid"] = 0;
    if (compile) {
      if (!ev.contains("args") || !ev["args"].is_object()) ev["args"] = nlohmann::json::object();
      ev["args"]["kiln_compile"] = *compile;
    }
    events.push_back(std::move(ev));
    ranks.insert(rank);
    ++s.events;
  };
  for (const PayloadRef& ref : t.run_chromium_events) add(ref, run_event_rank(t, ref), nullptr);
  for (const CompileEntry& e : t.entries) {
    for (const PayloadRef& ref : e.chromium_events) add(ref, e.rank.value_or(0), &e.label);
    s.compiles += !e.chromium_events.empty();
  }
  for (int64_t rank : ranks)
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", rank}, {"tid", 0},
                      {"args", {{"name", "rank " + std::to_string(rank)}}}});
  s.ranks = ranks.size();
  if (stats) *stats = s;
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
}

std::vector<TimelineSpan> timeline_spans(const Trace& t, TimelineStats* stats) {
  struct Event {
    std::string name, phase, compile;
    double ts = 0, dur = 0;
    size_t order = 0;  // log order breaks ties between equal timestamps
  };
  TimelineStats s;
  std::map<int64_t, std::vector<Event>> by_rank;
  size_t order = 0;
  auto add = [&](const PayloadRef& ref, int64_t rank, const std::string& compile) {
    nlohmann::json ev = event_of(t, ref);
    if (ev.is_null() || !ev.contains("ts") || !ev["ts"].is_number()) {
      ++s.skipped;
      return;
    }
    Event e;
    e.name = ev.value("name", std::string("?"));
    e.phase = ev.value("ph", std::string("i"));
    e.compile = compile;
    e.ts = ev["ts"].get<double>();
    if (ev.contains("dur") && ev["dur"].is_number()) e.dur = ev["dur"].get<double>();
    e.order = order++;
    by_rank[rank].push_back(std::move(e));
    ++s.events;
  };
  for (const PayloadRef& ref : t.run_chromium_events) add(ref, run_event_rank(t, ref), "");
  for (const CompileEntry& e : t.entries) {
    for (const PayloadRef& ref : e.chromium_events) add(ref, e.rank.value_or(0), e.label);
    s.compiles += !e.chromium_events.empty();
  }
  std::vector<TimelineSpan> spans;
  for (auto& [rank, events] : by_rank) {
    std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.ts < b.ts; });
    const double last = events.empty() ? 0 : std::max_element(events.begin(), events.end(), [](const Event& a, const Event& b) {
                                                return a.ts + a.dur < b.ts + b.dur;
                                              })->ts;
    const size_t first_span = spans.size();
    std::vector<size_t> open;  // indexes into spans of unmatched "B"
    for (const Event& e : events) {
      if (e.phase == "B") {
        open.push_back(spans.size());
        spans.push_back({rank, e.compile, e.name, e.ts, e.ts, 0, true});
      } else if (e.phase == "E") {
        // Innermost open phase of that name; an "E" with none is dropped.
        for (size_t k = open.size(); k-- > 0;)
          if (spans[open[k]].name == e.name) {
            spans[open[k]].end_us = e.ts;
            spans[open[k]].unfinished = false;
            open.erase(open.begin() + long(k));
            break;
          }
      } else if (e.phase == "X" || e.phase == "i" || e.phase == "I") {
        spans.push_back({rank, e.compile, e.name, e.ts, e.ts + e.dur, 0, false});
      }
    }
    for (size_t k : open) spans[k].end_us = std::max(last, spans[k].start_us);
    // Depth: how many spans of the rank enclose it.
    std::sort(spans.begin() + long(first_span), spans.end(), [](const TimelineSpan& a, const TimelineSpan& b) {
      return a.start_us != b.start_us ? a.start_us < b.start_us : a.end_us > b.end_us;
    });
    std::vector<double> ends;
    for (size_t i = first_span; i < spans.size(); ++i) {
      while (!ends.empty() && ends.back() <= spans[i].start_us && !(ends.back() == spans[i].start_us && spans[i].end_us == spans[i].start_us))
        ends.pop_back();
      spans[i].depth = int(ends.size());
      ends.push_back(spans[i].end_us);
    }
  }
  s.ranks = by_rank.size();
  if (stats) *stats = s;
  return spans;
}

}  // namespace kiln::trace
