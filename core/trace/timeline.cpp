#include "core/trace/timeline.h"

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
  for (const PayloadRef& ref : t.run_chromium_events) {
    const std::optional<int64_t> rank = ref.file < t.files.size() ? t.files[ref.file].rank : std::nullopt;
    add(ref, rank.value_or(0), nullptr);
  }
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

}  // namespace kiln::trace
