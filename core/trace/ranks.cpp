#include "core/trace/ranks.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <set>

#include "core/trace/summary.h"
#include "core/trace/text_util.h"

namespace kiln::trace {
namespace {

// FNV-1a: stable across builds and machines, unlike std::hash, so a
// fingerprint printed today matches one printed from the same log tomorrow.
std::string fingerprint(std::string_view text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return std::string(buf, 8);
}

// Removes every "estimated_runtime_ns" from a runtime-and-tensor-meta
// document and returns their sum.
double take_runtime_estimates(nlohmann::json& j) {
  double sum = 0;
  if (j.is_object()) {
    if (auto it = j.find("estimated_runtime_ns"); it != j.end()) {
      if (it->is_number()) sum += it->get<double>();
      j.erase(it);
    }
    for (auto& [key, value] : j.items()) sum += take_runtime_estimates(value);
  } else if (j.is_array()) {
    for (nlohmann::json& v : j) sum += take_runtime_estimates(v);
  }
  return sum;
}

// Each rank runs on its own device: "cuda:3" in rank 3's graph is the same
// graph as "cuda:0" in rank 0's, so device indexes are left out of the
// fingerprint.
std::string without_device_indexes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] == ':' && i >= 4 && text.substr(i - 4, 4) == "cuda")
      while (i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1]))) ++i;
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep, size_t limit = SIZE_MAX) {
  std::string out;
  for (size_t i = 0; i < parts.size() && i < limit; ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  if (parts.size() > limit) {
    out += sep;
    out += "... (";
    out += std::to_string(parts.size());
    out += " in all)";
  }
  return out;
}

// What one rank's compiles and artifacts say, before the ranks are compared.
class ProfileBuilder {
 public:
  ProfileBuilder(const Trace& t, RankReport& report) : t_(t), report_(report), whole_order_(report.ranks.size(), false) {}

  void add(const CompileEntry& e, size_t rank) {
    RankProfile& p = report_.ranks[rank];
    for (const Artifact& a : e.artifacts) note_execution(a, rank);
    if (!e.id.known()) return;  // the run's own records: no compile to compare
    RankCompile c;
    c.id = e.label.substr(rank_part(e.label).size());
    c.label = e.label;
    c.status = entry_status(e);
    std::vector<std::string> lookups;
    for (const CacheOutcome& o : cache_outcomes(e)) lookups.push_back(o.cache + " " + o.state);
    c.cache = join(lookups, ", ");
    c.recompile = e.id.frame_compile_id && *e.id.frame_compile_id > 0;
    const Artifact* graph = nullptr;
    for (const Artifact& a : e.artifacts)
      if (a.graph && (!graph || (stage_role(a.base) == StageRole::Dynamo && stage_role(graph->base) != StageRole::Dynamo)))
        graph = &a;
    if (graph)
      if (auto text = read(*graph)) c.graph = fingerprint(without_device_indexes(*text));
    std::vector<const Artifact*> schedules, codes;
    for (const Artifact& a : e.artifacts) {
      if (a.base == "inductor_collective_schedule") schedules.push_back(&a);
      if (a.base == "inductor_output_code") codes.push_back(&a);
      if (a.base == "inductor_runtime_and_tensor_meta")
        if (auto meta = read_json(a)) {
          // The runtime estimates are benchmarked on each rank and never quite
          // agree: they are compared as numbers, apart from the metadata.
          const double ns = take_runtime_estimates(*meta);
          c.estimated_runtime_ns = c.estimated_runtime_ns.value_or(0) + ns;
          c.tensor_meta += (c.tensor_meta.empty() ? "" : "\n") + without_device_indexes(meta->dump());
        }
    }
    std::vector<std::vector<std::string>> planned;
    for (const Artifact* a : schedules) planned.push_back(schedule_ops(*a));
    for (const auto& ops : planned) c.collectives.insert(c.collectives.end(), ops.begin(), ops.end());
    c.has_schedule = !schedules.empty();
    // A training compile logs a schedule and output code for the forward, then
    // for the backward: the k-th schedule goes with the k-th output code.
    for (size_t k = 0; k < planned.size() && k < codes.size(); ++k)
      if (auto code = read(*codes[k])) check_parity(rank, c.id, planned[k], *code);

    p.compiles.push_back(std::move(c));
    for (const GraphBreak& gb : e.graph_breaks) (gb.failure ? p.failures : p.graph_breaks)++;
    if (e.metrics) p.restarts += int(e.metrics->restart_reasons.size());
    p.recompiles += p.compiles.back().recompile;
  }


 private:
  std::optional<std::string> read(const Artifact& a) {
    auto text = t_.text(a.payload);
    if (text) return std::move(*text);
    complain(a, text.status().message());
    return std::nullopt;
  }

  std::optional<nlohmann::json> read_json(const Artifact& a) {
    auto text = read(a);
    if (!text) return std::nullopt;
    nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
    if (!j.is_discarded()) return j;
    complain(a, "the payload is not JSON");
    return std::nullopt;
  }

  void complain(const Artifact& a, const std::string& why) {
    report_.diagnostics.push_back({t_.files[a.payload.file].path, a.line, a.base + ": " + why + "; left out of the rank comparison"});
  }

  std::vector<std::string> schedule_ops(const Artifact& a) {
    std::vector<std::string> ops;
    auto j = read_json(a);
    if (!j) return ops;
    if (!j->is_array()) {
      complain(a, "the schedule is not a JSON list");
      return ops;
    }
    for (const nlohmann::json& op : *j)
      if (op.is_string()) ops.push_back(op.get<std::string>());
    return ops;
  }

  void note_execution(const Artifact& a, size_t rank) {
    if (a.base != "graph_execution" && a.base != "inductor_graph_execution") return;
    RankProfile& p = report_.ranks[rank];
    auto j = read_json(a);
    if (!j || !j->is_object()) return;
    if (a.base == "inductor_graph_execution") {
      // One record per graph run; a graph_execution artifact, when logged, is the whole order.
      if (auto it = j->find("graph"); it != j->end() && it->is_string() && !whole_order_[rank]) p.execution_order.push_back(it->get<std::string>());
      return;
    }
    auto order = j->find("graph_execution_order");
    if (order == j->end() || !order->is_array()) {
      complain(a, "no graph_execution_order list");
      return;
    }
    p.execution_order.clear();
    whole_order_[rank] = true;
    for (const nlohmann::json& step : *order) {
      if (step.is_string()) p.execution_order.push_back(step.get<std::string>());
      else if (step.is_object() && step.contains("compile_id") && step["compile_id"].is_string())
        p.execution_order.push_back(step["compile_id"].get<std::string>());
    }
  }

  void check_parity(size_t rank, const std::string& compile, const std::vector<std::string>& planned, const std::string& code) {
    CollectiveParity par;
    par.rank = rank;
    par.compile = compile;
    for (const std::string& op : planned)
      if (std::string kind = collective_kind(op); !kind.empty()) ++par.scheduled[kind];
    int waits = 0, total = 0;
    for (const auto& [kind, n] : collective_calls(code)) {
      if (kind == "wait_tensor") {
        waits = n;
        continue;
      }
      par.in_code[kind] = n;
      total += n;
    }
    std::set<std::string> kinds;
    for (const auto& [k, n] : par.scheduled) kinds.insert(k);
    for (const auto& [k, n] : par.in_code) kinds.insert(k);
    for (const std::string& k : kinds) {
      auto s = par.scheduled.find(k), c = par.in_code.find(k);
      par.offset += std::abs((s == par.scheduled.end() ? 0 : s->second) - (c == par.in_code.end() ? 0 : c->second));
    }
    par.missing_waits = std::max(0, total - waits);
    ++report_.parity_checked;
    if (par.offset || par.missing_waits) report_.parity.push_back(std::move(par));
  }

  const Trace& t_;
  RankReport& report_;
  std::vector<bool> whole_order_;  // a rank's graph_execution artifact gave its whole order
};

// Ranks grouped by a key; the groups largest first, ties by their first rank.
template <class KeyFn, class SummaryFn>
RankAspect group_by(const std::string& name, const std::vector<RankProfile>& ranks, KeyFn key, SummaryFn summary) {
  std::map<std::string, std::vector<size_t>> by_key;
  for (size_t i = 0; i < ranks.size(); ++i) by_key[key(ranks[i])].push_back(i);
  RankAspect a{name, {}};
  for (auto& [k, members] : by_key) a.groups.push_back({members, summary(ranks[members.front()])});
  std::sort(a.groups.begin(), a.groups.end(), [](const RankGroup& x, const RankGroup& y) {
    return x.members.size() != y.members.size() ? x.members.size() > y.members.size() : x.members.front() < y.members.front();
  });
  return a;
}

char cache_letter(const std::string& cache) {
  if (cache.empty()) return '-';
  if (cache.find("bypass") != std::string::npos) return 'B';
  if (cache.find("miss") != std::string::npos) return 'M';
  return 'H';
}

std::string cache_summary(const RankProfile& p) {
  int hits = 0, misses = 0, bypasses = 0;
  for (const RankCompile& c : p.compiles) {
    for (size_t pos = 0; (pos = c.cache.find(' ', pos)) != std::string::npos; ++pos) {
      std::string_view state = std::string_view(c.cache).substr(pos + 1);
      state = state.substr(0, state.find(','));
      hits += state == "hit";
      misses += state == "miss";
      bypasses += state == "bypass";
    }
  }
  std::string letters = cache_letters(p);
  if (letters.size() > 40) letters = letters.substr(0, 40) + "...";
  return plural(size_t(hits), "hit", "hits") + ", " + plural(size_t(misses), "miss", "misses") + ", " +
         plural(size_t(bypasses), "bypass", "bypasses") + " (per compile: " + letters + ")";
}

// A scheduled op for people: its collective kind, "wait_tensor", else as logged.
std::string op_kind(const std::string& op) {
  if (std::string kind = collective_kind(op); !kind.empty()) return kind;
  if (op.find("wait_tensor") != std::string::npos) return "wait_tensor";
  return op;
}

std::string collective_summary(const RankProfile& p) {
  std::map<std::string, int> kinds;
  size_t ops = 0, graphs = 0;
  for (const RankCompile& c : p.compiles) {
    graphs += c.has_schedule;
    ops += c.collectives.size();
    for (const std::string& op : c.collectives) ++kinds[op_kind(op)];
  }
  std::vector<std::string> parts;
  for (const auto& [k, n] : kinds) parts.push_back(k + " x" + std::to_string(n));
 return plural(ops, "scheduled op", "scheduled ops") + " in " + plural(graphs, "graph", "graphs") + (parts.empty() ? "" : ": " + join(parts, ", "));
}

// A compile as the divergence search compares it: every field, in the order a
// difference is reported.
std::string step_key(const RankCompile& c) {
  return c.id + '\x1f' + c.graph + '\x1f' + c.status + '\x1f' + c.cache + '\x1f' + join(c.collectives, ",") + '\x1f' + c.tensor_meta;
}

RankDivergence first_difference(const RankReport& r, size_t rank, size_t reference) {
  const auto& a = r.ranks[rank].compiles;
  const auto& b = r.ranks[reference].compiles;
  RankDivergence d;
  d.rank = rank;
  d.reference = reference;
  const std::string who = r.ranks[rank].name(), ref = r.ranks[reference].name();
  size_t i = 0;
  while (i < a.size() && i < b.size() && step_key(a[i]) == step_key(b[i])) ++i;
  d.index = i;
  if (i < a.size()) d.compile = a[i].id;
  if (i < b.size()) d.reference_compile = b[i].id;
  const std::string at = "at compile #" + std::to_string(i + 1) + ": ";
  if (i >= a.size() || i >= b.size()) {
    d.what = "compile count";
    d.detail = at + who + " compiled " + std::to_string(a.size()) + " times, " + ref + " " + std::to_string(b.size());
    return d;
  }
  const RankCompile &x = a[i], &y = b[i];
  auto said = [&](const std::string& what, const std::string& mine, const std::string& theirs) {
    d.what = what;
    d.detail = at + who + " " + x.id + " " + mine + ", " + ref + " " + y.id + " " + theirs;
  };
  auto or_none = [](const std::string& s) { return s.empty() ? std::string("none") : s; };
  if (x.id != y.id) said("compile id", "", "");
  else if (x.graph != y.graph) said("graph", "graph " + or_none(x.graph), "graph " + or_none(y.graph));
  else if (x.status != y.status) said("status", "status " + x.status, "status " + y.status);
  else if (x.cache != y.cache) said("cache", "cache " + or_none(x.cache), "cache " + or_none(y.cache));
  else if (x.collectives != y.collectives)
    said("collectives", std::to_string(x.collectives.size()) + " collectives", std::to_string(y.collectives.size()) + " collectives");
  else {
    auto meta = [&](const std::string& m) { return m.empty() ? std::string("no tensor meta") : "tensor meta " + fingerprint(m); };
    said("tensor meta", meta(x.tensor_meta), meta(y.tensor_meta));
  }
  // "rank 1 0/0 , rank 0 0/1 " reads badly when only ids differ.
  if (d.what == "compile id") d.detail = at + who + " compiled " + x.id + " where " + ref + " compiled " + y.id;
  return d;
}

void compare_sequences(RankReport& r) {
  std::map<std::string, std::vector<size_t>> by_sequence;
  for (size_t i = 0; i < r.ranks.size(); ++i) {
    std::string key;
    for (const RankCompile& c : r.ranks[i].compiles) key += step_key(c) + '\x1e';
    by_sequence[key].push_back(i);
  }
  if (by_sequence.size() < 2) return;
  const std::vector<size_t>* reference = nullptr;
  for (const auto& [key, members] : by_sequence)
    if (!reference || members.size() > reference->size() ||
        (members.size() == reference->size() && members.front() < reference->front()))
      reference = &members;
  r.reference_is_majority = std::all_of(by_sequence.begin(), by_sequence.end(), [&](const auto& kv) {
    return &kv.second == reference || kv.second.size() < reference->size();
  });
  for (const auto& [key, members] : by_sequence) {
    if (&members == reference) continue;
    for (size_t m : members) r.divergences.push_back(first_difference(r, m, reference->front()));
  }
  std::sort(r.divergences.begin(), r.divergences.end(), [](const RankDivergence& a, const RankDivergence& b) {
    return a.index != b.index ? a.index < b.index : a.rank < b.rank;
  });
}

// Per compile id that several ranks estimated: the slowest and fastest rank.
void compare_runtime_estimates(RankReport& r) {
  std::map<std::string, std::vector<std::pair<double, size_t>>> by_compile;
  for (size_t i = 0; i < r.ranks.size(); ++i)
    for (const RankCompile& c : r.ranks[i].compiles)
      if (c.estimated_runtime_ns) by_compile[c.id].push_back({*c.estimated_runtime_ns, i});
  for (auto& [id, estimates] : by_compile) {
    if (estimates.size() < 2) continue;
    auto [lo, hi] = std::minmax_element(estimates.begin(), estimates.end());
    r.runtime_spreads.push_back({id, lo->second, hi->second, lo->first, hi->first});
  }
  std::sort(r.runtime_spreads.begin(), r.runtime_spreads.end(), [](const RuntimeSpread& a, const RuntimeSpread& b) {
    return a.slowest_ns - a.fastest_ns > b.slowest_ns - b.fastest_ns;
  });
}

void compare_execution(RankReport& r) {
  std::vector<size_t> with_order;
  size_t longest = 0;
  for (size_t i = 0; i < r.ranks.size(); ++i)
    if (!r.ranks[i].execution_order.empty()) {
      with_order.push_back(i);
      longest = std::max(longest, r.ranks[i].execution_order.size());
    }
  auto compile_of = [&](size_t rank, const std::string& id) -> const RankCompile* {
    for (const RankCompile& c : r.ranks[rank].compiles)
      if (c.id == id) return &c;
    return nullptr;
  };
  for (size_t step = 0; step < longest; ++step) {
    ExecutionStep s;
    s.index = step;
    std::set<std::string> ids;
    std::vector<const RankCompile*> compiles;
    for (size_t rank : with_order) {
      const auto& order = r.ranks[rank].execution_order;
      if (step >= order.size()) {
        ids.insert("");  // this rank ran fewer graphs
        continue;
      }
      s.by_rank[rank] = order[step];
      ids.insert(order[step]);
      if (const RankCompile* c = compile_of(rank, order[step])) compiles.push_back(c);
    }
    for (size_t k = 1; k < compiles.size(); ++k) {
      if (compiles[0]->has_schedule && compiles[k]->has_schedule && compiles[0]->collectives != compiles[k]->collectives)
        s.schedule_mismatch = true;
      if (!compiles[0]->cache.empty() && !compiles[k]->cache.empty() && compiles[0]->cache != compiles[k]->cache)
        s.cache_mismatch = true;
    }
    if (ids.size() > 1) r.execution_order_differs = true;
    if (ids.size() > 1 || s.schedule_mismatch || s.cache_mismatch) r.execution.push_back(std::move(s));
  }
}

}  // namespace

std::string cache_letters(const RankProfile& p) {
  std::string s;
  for (const RankCompile& c : p.compiles) s += cache_letter(c.cache);
  return s;
}

std::string RankProfile::name() const {
  if (rank) return "rank " + std::to_string(*rank);
  return std::filesystem::path(file).filename().string();
}

bool RankReport::diverges() const {
  return std::any_of(aspects.begin(), aspects.end(), [](const RankAspect& a) { return a.diverges(); }) ||
         !divergences.empty() || !parity.empty() || execution_order_differs;
}

std::string collective_kind(std::string_view op) {
  if (size_t at = op.find("c10d_functional."); at != std::string_view::npos) {
    op.remove_prefix(at + std::string_view("c10d_functional.").size());
    op = op.substr(0, op.find('.'));
  }
  while (!op.empty() && op.back() == '_') op.remove_suffix(1);
  for (std::string_view kind : {"all_reduce", "reduce_scatter", "all_gather", "broadcast", "all_to_all"})
    if (op.find(kind) != std::string_view::npos) return std::string(kind);
  if (op == "wait_tensor") return "";
  if (op.find("reduce") != std::string_view::npos) return "reduce";
  return "";
}

std::map<std::string, int> collective_calls(std::string_view code) {
  std::map<std::string, int> calls;
  size_t pos = 0;
  while (pos < code.size()) {
    size_t eol = std::min(code.find('\n', pos), code.size());
    std::string_view line = code.substr(pos, eol - pos);
    pos = eol + 1;
    // Comments name collectives too ("Original ATen: [_c10d_functional.all_reduce]"):
    // only calls count. '#' outside quotes starts a Python comment; a line
    // starting with '//' is a C++ one (a bare '//' elsewhere is floor division).
    if (line.find_first_not_of(" \t") != std::string_view::npos && line.substr(line.find_first_not_of(" \t")).starts_with("//"))
      continue;
    char quote = 0;
    for (size_t i = 0; i < line.size(); ++i) {
      if (quote) {
        if (line[i] == '\\') ++i;
        else if (line[i] == quote) quote = 0;
      } else if (line[i] == '\'' || line[i] == '"') {
        quote = line[i];
      } else if (line[i] == '#') {
        line = line.substr(0, i);
        break;
      }
    }
    // torch.ops._c10d_functional.<op>.default(
    for (size_t at = 0; (at = line.find("c10d_functional", at)) != std::string_view::npos;) {
      size_t before = at;
      if (before > 0 && line[before - 1] == '_') --before;
      const bool qualified = std::string_view(line.substr(0, before)).ends_with("torch.ops.");
      at += std::string_view("c10d_functional").size();
      if (!qualified || at >= line.size() || line[at] != '.') continue;
      size_t name_end = at + 1;
      while (name_end < line.size() && (std::isalnum(static_cast<unsigned char>(line[name_end])) || line[name_end] == '_')) ++name_end;
      const std::string_view name = line.substr(at + 1, name_end - at - 1);
      if (!line.substr(name_end).starts_with(".default(")) continue;
      if (name == "wait_tensor") ++calls["wait_tensor"];
      else if (std::string kind = collective_kind(name); !kind.empty()) ++calls[kind];
    }
  }
  return calls;
}

RankReport rank_report(const Trace& t) {
  RankReport r;
  // One profile per rank, or per file when its name and records give none;
  // files come first so a rank whose log holds no compile is still listed.
  std::map<std::pair<int64_t, std::string>, size_t> index;
  auto key_of = [&](std::optional<int64_t> rank, uint32_t file) {
    return rank ? std::pair(*rank, std::string()) : std::pair(INT64_MAX, t.files[file].path);
  };
  auto profile_for = [&](std::optional<int64_t> rank, uint32_t file) -> RankProfile& {
    auto [it, inserted] = index.emplace(key_of(rank, file), r.ranks.size());
    if (inserted) r.ranks.push_back({rank, t.files[file].path, {}, {}});
    return r.ranks[it->second];
  };
  for (uint32_t f = 0; f < t.files.size(); ++f) profile_for(t.files[f].rank, f);
  for (const CompileEntry& e : t.entries) profile_for(e.rank, e.file);
  // Rank order, then file order (profiles are pointed at by index from here on).
  std::vector<std::pair<std::pair<int64_t, std::string>, size_t>> order(index.begin(), index.end());
  std::vector<RankProfile> sorted;
  std::map<size_t, size_t> new_index;
  for (const auto& [key, i] : order) {
    new_index[i] = sorted.size();
    sorted.push_back(std::move(r.ranks[i]));
  }
  r.ranks = std::move(sorted);
  for (auto& [key, i] : index) i = new_index[i];

  ProfileBuilder builder(t, r);
  for (const CompileEntry& e : t.entries)
    builder.add(e, index.at(key_of(e.rank, e.file)));

  std::set<int64_t> present;
  for (const RankProfile& p : r.ranks)
    if (p.rank) present.insert(*p.rank);
  // A damaged file name can claim rank 2^40: the gaps are listed up to a bound.
  if (!present.empty() && *present.begin() >= 0)
    for (int64_t k = 0; k < *present.rbegin() && r.missing_ranks.size() < 4096; ++k)
      if (!present.count(k)) r.missing_ranks.push_back(k);

  auto any = [&](auto pred) { return std::any_of(r.ranks.begin(), r.ranks.end(), pred); };
  auto any_compile = [&](auto pred) {
    return any([&](const RankProfile& p) { return std::any_of(p.compiles.begin(), p.compiles.end(), pred); });
  };
  r.aspects.push_back(group_by(
      "compile ids", r.ranks,
      [](const RankProfile& p) {
        std::set<std::string> ids;
        for (const RankCompile& c : p.compiles) ids.insert(c.id);
        return join(std::vector<std::string>(ids.begin(), ids.end()), ",");
      },
      [](const RankProfile& p) {
        std::vector<std::string> ids;
        for (const RankCompile& c : p.compiles)
          if (std::find(ids.begin(), ids.end(), c.id) == ids.end()) ids.push_back(c.id);
        return plural(ids.size(), "compile id", "compile ids") + (ids.empty() ? "" : ": " + join(ids, ", ", 8));
      }));
  r.aspects.push_back(group_by(
      "recompiles", r.ranks, [](const RankProfile& p) { return std::to_string(p.recompiles); },
      [](const RankProfile& p) { return plural(size_t(p.recompiles), "recompile", "recompiles"); }));
  r.aspects.push_back(group_by(
      "failures and breaks", r.ranks,
      [](const RankProfile& p) { return std::to_string(p.failures) + "/" + std::to_string(p.graph_breaks) + "/" + std::to_string(p.restarts); },
      [](const RankProfile& p) {
        return plural(size_t(p.failures), "compile failure", "compile failures") + ", " +
               plural(size_t(p.graph_breaks), "graph break", "graph breaks") + ", " + plural(size_t(p.restarts), "restart", "restarts");
      }));
  if (any_compile([](const RankCompile& c) { return !c.graph.empty(); }))
    r.aspects.push_back(group_by(
        "graphs", r.ranks,
        [](const RankProfile& p) {
          std::string k;
          for (const RankCompile& c : p.compiles) k += c.id + "=" + c.graph + ";";
          return k;
        },
        [](const RankProfile& p) {
          std::string k;
          size_t graphs = 0;
          for (const RankCompile& c : p.compiles) {
            k += c.id + "=" + c.graph + ";";
            graphs += !c.graph.empty();
          }
          return plural(graphs, "graph", "graphs") + ", fingerprint " + fingerprint(k);
        }));
  if (any_compile([](const RankCompile& c) { return !c.cache.empty(); }))
    r.aspects.push_back(group_by(
        "cache", r.ranks,
        [](const RankProfile& p) {
          std::string k;
          for (const RankCompile& c : p.compiles) k += c.cache + ";";
          return k;
        },
        cache_summary));
  if (any_compile([](const RankCompile& c) { return c.has_schedule; }))
    r.aspects.push_back(group_by(
        "collective schedules", r.ranks,
        [](const RankProfile& p) {
          std::string k;
          for (const RankCompile& c : p.compiles)
            if (c.has_schedule) k += c.id + ":" + join(c.collectives, ",") + ";";
          return k;
        },
        collective_summary));
  if (any_compile([](const RankCompile& c) { return !c.tensor_meta.empty(); }))
    r.aspects.push_back(group_by(
        "tensor meta", r.ranks,
        [](const RankProfile& p) {
          std::string k;
          for (const RankCompile& c : p.compiles)
            if (!c.tensor_meta.empty()) k += c.id + ":" + c.tensor_meta + ";";
          return k;
        },
        [](const RankProfile& p) {
          std::string k;
          size_t graphs = 0;
          for (const RankCompile& c : p.compiles)
            if (!c.tensor_meta.empty()) {
              k += c.id + ":" + c.tensor_meta + ";";
              ++graphs;
            }
          return plural(graphs, "graph", "graphs") + " with tensor meta" + (graphs ? ", fingerprint " + fingerprint(k) : "");
        }));
  if (any([](const RankProfile& p) { return !p.execution_order.empty(); }))
    r.aspects.push_back(group_by(
        "execution order", r.ranks, [](const RankProfile& p) { return join(p.execution_order, ","); },
        [](const RankProfile& p) {
          return plural(p.execution_order.size(), "graph run", "graph runs") +
                 (p.execution_order.empty() ? "" : ": " + join(p.execution_order, ", ", 8));
        }));
  compare_sequences(r);
  compare_execution(r);
  compare_runtime_estimates(r);
  return r;
}

}  // namespace kiln::trace
