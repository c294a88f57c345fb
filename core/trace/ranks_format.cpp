// The rank report as text (for people) and JSON (for scripts); the JSON shape
// is documented in docs/cli.md under `trace ranks`.
#include <cstdio>
#include <string>

#include "core/trace/ranks.h"
#include "core/trace/text_util.h"

namespace kiln::trace {

// "ranks 0-4, 6" for known ranks in order; file names otherwise.
std::string rank_names(const RankReport& r, const std::vector<size_t>& members) {
  std::string out;
  size_t i = 0;
  size_t ranked = 0;
  while (i < members.size()) {
    const RankProfile& p = r.ranks[members[i]];
    if (!out.empty()) out += ", ";
    if (!p.rank) {
      out += p.name();
      ++i;
      continue;
    }
    size_t j = i;
    while (j + 1 < members.size() && r.ranks[members[j + 1]].rank && *r.ranks[members[j + 1]].rank == *r.ranks[members[j]].rank + 1) ++j;
    out += std::to_string(*p.rank);
    if (j > i) {
      out += j == i + 1 ? ", " : "-";
      out += std::to_string(*r.ranks[members[j]].rank);
    }
    ranked += j - i + 1;
    i = j + 1;
  }
  if (ranked == 0) return out;
  return (ranked == 1 && members.size() == 1 ? "rank " : "ranks ") + out;
}

namespace {

nlohmann::json rank_value(const RankProfile& p) {
  return p.rank ? nlohmann::json(*p.rank) : nlohmann::json(nullptr);
}

}  // namespace

std::string rank_report_text(const RankReport& r) {
  std::string out;
  auto line = [&](const std::string& s) {
    out += s;
    out += '\n';
  };
  std::vector<size_t> all;
  for (size_t i = 0; i < r.ranks.size(); ++i) all.push_back(i);
  line(std::to_string(r.ranks.size()) + (r.ranks.size() == 1 ? " rank: " : " ranks: ") + rank_names(r, all));
  for (const RankProfile& p : r.ranks) {
    const std::string cache = cache_letters(p);
    line("  " + p.name() + ": " + plural(p.compiles.size(), "compile", "compiles") + ", " + plural(size_t(p.recompiles), "recompile", "recompiles") +
         ", " + plural(size_t(p.failures), "failure", "failures") + ", " + plural(size_t(p.graph_breaks), "graph break", "graph breaks") +
         (cache.find_first_not_of('-') == std::string::npos ? "" : ", cache " + (cache.size() > 40 ? cache.substr(0, 40) + "..." : cache)) +
         "  (" + p.file + ")");
  }
  if (!r.missing_ranks.empty()) {
    std::string missing;
    for (int64_t k : r.missing_ranks) missing += (missing.empty() ? "" : ", ") + std::to_string(k);
    line("missing ranks (no log file): " + missing);
  }
  if (r.ranks.size() < 2) {
    line("one rank: nothing to compare");
  } else {
    for (const RankAspect& a : r.aspects) {
      if (!a.diverges()) {
        line(a.name + ": the same on every rank (" + a.groups.front().summary + ")");
        continue;
      }
      line(a.name + ": DIFFER across ranks");
      for (const RankGroup& g : a.groups) line("  " + rank_names(r, g.members) + ": " + g.summary);
    }
  }
  if (!r.divergences.empty()) {
    const RankDivergence& d = r.divergences.front();
    line("first divergence: " + r.ranks[d.rank].name() + " leaves " + r.ranks[d.reference].name() +
         (r.reference_is_majority ? " (the majority) " : " (no majority: the lowest of the largest groups) ") + d.detail);
    for (size_t i = 1; i < r.divergences.size(); ++i) {
      const RankDivergence& e = r.divergences[i];
      if (i == 16) {
        line("  ... and " + std::to_string(r.divergences.size() - 16) + " more ranks");
        break;
      }
      line("  then " + r.ranks[e.rank].name() + " " + e.detail);
    }
  }
  if (r.parity_checked) {
    line("collectives parity (scheduler vs generated code): " + std::to_string(r.parity.size()) + " of " +
         std::to_string(r.parity_checked) + " compiles disagree");
    for (const CollectiveParity& p : r.parity) {
      auto counts = [](const std::map<std::string, int>& m) {
        std::string s;
        for (const auto& [k, n] : m) s += (s.empty() ? "" : ", ") + k + " x" + std::to_string(n);
        return s.empty() ? std::string("none") : s;
      };
      line("  " + r.ranks[p.rank].name() + " [" + p.compile + "]: scheduled " + counts(p.scheduled) + "; in code " + counts(p.in_code) +
           "; offset " + std::to_string(p.offset) + ", " + std::to_string(p.missing_waits) + " collectives without a wait_tensor");
    }
  }
  if (r.execution_order_differs || !r.execution.empty()) {
    line(std::string("graph execution order: ") + (r.execution_order_differs ? "differs across ranks" : "the same on every rank"));
    size_t shown = 0;
    for (const ExecutionStep& s : r.execution) {
      if (++shown > 16) {
        line("  ... " + std::to_string(r.execution.size() - 16) + " more steps");
        break;
      }
      std::string ran;
      for (const auto& [rank, what] : s.by_rank) ran += (ran.empty() ? "" : ", ") + r.ranks[rank].name() + " " + what;
      line("  run #" + std::to_string(s.index + 1) + ": " + ran + (s.schedule_mismatch ? "  (collective schedules differ)" : "") +
           (s.cache_mismatch ? "  (cache outcomes differ)" : ""));
    }
  }
  if (!r.runtime_spreads.empty()) {
    const RuntimeSpread& w = r.runtime_spreads.front();
    char buf[256];
    std::snprintf(buf, sizeof buf, "estimated runtime: widest spread %.3f ms at [%s] (%s %.3f ms, %s %.3f ms), %zu compiles compared",
                  (w.slowest_ns - w.fastest_ns) * 1e-6, w.compile.c_str(), r.ranks[w.slowest].name().c_str(), w.slowest_ns * 1e-6,
                  r.ranks[w.fastest].name().c_str(), w.fastest_ns * 1e-6, r.runtime_spreads.size());
    line(buf);
  }
  for (const Diagnostic& d : r.diagnostics) line(d.file + ":" + std::to_string(d.line) + ": " + d.message);
  line(r.ranks.size() < 2 ? "" : r.diverges() ? "the ranks diverge" : "the ranks agree on everything compared");
  if (out.size() >= 2 && out[out.size() - 2] == '\n') out.pop_back();
  return out;
}

nlohmann::json rank_report_json(const RankReport& r) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankProfile& p : r.ranks) {
    nlohmann::json compiles = nlohmann::json::array();
    for (const RankCompile& c : p.compiles) {
      nlohmann::json j = {{"id", c.id}, {"status", c.status}, {"cache", c.cache}, {"graph", c.graph}, {"recompile", c.recompile}};
      if (c.has_schedule) j["collectives"] = c.collectives;
      if (c.estimated_runtime_ns) j["estimated_runtime_ns"] = *c.estimated_runtime_ns;
      compiles.push_back(std::move(j));
    }
    ranks.push_back({{"rank", rank_value(p)},
                     {"name", p.name()},
                     {"file", p.file},
                     {"compiles", std::move(compiles)},
                     {"recompiles", p.recompiles},
                     {"failures", p.failures},
                     {"graph_breaks", p.graph_breaks},
                     {"restarts", p.restarts},
                     {"execution_order", p.execution_order}});
  }
  auto rank_list = [&](const std::vector<size_t>& members) {
    nlohmann::json out = nlohmann::json::array();
    for (size_t m : members) out.push_back(r.ranks[m].rank ? nlohmann::json(*r.ranks[m].rank) : nlohmann::json(r.ranks[m].name()));
    return out;
  };
  nlohmann::json aspects = nlohmann::json::array();
  for (const RankAspect& a : r.aspects) {
    nlohmann::json groups = nlohmann::json::array();
    for (const RankGroup& g : a.groups) groups.push_back({{"ranks", rank_list(g.members)}, {"summary", g.summary}});
    aspects.push_back({{"name", a.name}, {"diverges", a.diverges()}, {"groups", std::move(groups)}});
  }
  nlohmann::json divergences = nlohmann::json::array();
  for (const RankDivergence& d : r.divergences)
    divergences.push_back({{"rank", rank_value(r.ranks[d.rank])},
                           {"reference_rank", rank_value(r.ranks[d.reference])},
                           {"index", d.index},
                           {"compile", d.compile},
                           {"reference_compile", d.reference_compile},
                           {"what", d.what},
                           {"detail", d.detail}});
  nlohmann::json parity = nlohmann::json::array();
  for (const CollectiveParity& p : r.parity)
    parity.push_back({{"rank", rank_value(r.ranks[p.rank])},
                      {"compile_id", p.compile},
                      {"scheduled", p.scheduled},
                      {"in_code", p.in_code},
                      {"offset", p.offset},
                      {"missing_waits", p.missing_waits}});
  nlohmann::json steps = nlohmann::json::array();
  for (const ExecutionStep& s : r.execution) {
    nlohmann::json by_rank = nlohmann::json::object();
    for (const auto& [rank, what] : s.by_rank) by_rank[r.ranks[rank].name()] = what;
    steps.push_back({{"index", s.index}, {"ran", std::move(by_rank)}, {"schedule_mismatch", s.schedule_mismatch}, {"cache_mismatch", s.cache_mismatch}});
  }
  nlohmann::json spreads = nlohmann::json::array();
  for (const RuntimeSpread& w : r.runtime_spreads)
    spreads.push_back({{"compile_id", w.compile},
                       {"fastest_rank", rank_value(r.ranks[w.fastest])},
                       {"fastest_ns", w.fastest_ns},
                       {"slowest_rank", rank_value(r.ranks[w.slowest])},
                       {"slowest_ns", w.slowest_ns}});
  nlohmann::json diagnostics = nlohmann::json::array();
  for (const Diagnostic& d : r.diagnostics) diagnostics.push_back({{"file", d.file}, {"line", d.line}, {"message", d.message}});
  return {{"ranks", std::move(ranks)},
          {"missing_ranks", r.missing_ranks},
          {"diverges", r.diverges()},
          {"aspects", std::move(aspects)},
          {"divergences", std::move(divergences)},
          {"reference_is_majority", r.reference_is_majority},
          {"collectives_parity", {{"checked", r.parity_checked}, {"disagree", std::move(parity)}}},
          {"execution_order", {{"differs", r.execution_order_differs}, {"steps", std::move(steps)}}},
          {"runtime_estimates", std::move(spreads)},
          {"diagnostics", std::move(diagnostics)}};
}

}  // namespace kiln::trace
