#include "core/trace/summary.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>

#include "core/graph/graph.h"
#include "core/trace/text_util.h"

namespace kiln::trace {
namespace {

size_t indent_of(std::string_view line) {
  size_t n = 0;
  while (n < line.size() && line[n] == ' ') ++n;
  return n;
}

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool is_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!is_ident_char(c)) return false;
  return true;
}

// The parameter names of "def forward(self, a: "f32[2]", b, ...):" which may
// span several lines; `i` ends on the line with the closing "):".
std::vector<std::string> forward_params(const std::vector<std::string_view>& lines, size_t& i) {
  std::string sig;
  for (; i < lines.size(); ++i) {
    // Expanded signatures put a descriptor comment after each parameter.
    std::string_view l = lines[i];
    bool quoted = false;
    for (size_t k = 0; k < l.size(); ++k) {
      if (l[k] == '"') quoted = !quoted;
      if (l[k] == '#' && !quoted) {
        l = l.substr(0, k);
        break;
      }
    }
    sig += l;
    sig += ' ';
    std::string_view t = trim(l);
    if (!t.empty() && t.back() == ':' && sig.find(')') != std::string::npos) break;
  }
  std::vector<std::string> out;
  size_t open = sig.find('(');
  size_t close = sig.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return out;
  std::string_view body(sig.data() + open + 1, close - open - 1);
  // Split at top-level commas; annotations are quoted strings and may hold commas.
  int depth = 0;
  bool quoted = false;
  size_t start = 0;
  auto flush = [&](size_t end) {
    std::string_view p = trim(body.substr(start, end - start));
    size_t colon = p.find(':');
    size_t eq = p.find('=');
    std::string_view name = trim(p.substr(0, std::min(colon, eq)));
    if (is_identifier(name) && name != "self") out.emplace_back(name);
  };
  for (size_t k = 0; k < body.size(); ++k) {
    char c = body[k];
    if (c == '"') quoted = !quoted;
    if (quoted) continue;
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') --depth;
    if (c == ',' && depth == 0) {
      flush(k);
      start = k + 1;
    }
  }
  flush(body.size());
  return out;
}

}  // namespace

GraphCounts count_graph_text(std::string_view text) {
  GraphCounts c;
  std::vector<std::string_view> lines = split_lines(text);
  // The outermost class holds nested submodule classes first, then its forward.
  size_t cls = 0;
  while (cls < lines.size() && !starts_with(trim(lines[cls]), "class ")) ++cls;
  if (cls == lines.size()) return c;
  size_t body_indent = indent_of(lines[cls]) + 4;
  size_t i = cls + 1;
  for (; i < lines.size(); ++i)
    if (indent_of(lines[i]) == body_indent && starts_with(trim(lines[i]), "def forward(")) break;
  if (i == lines.size()) return c;
  std::vector<std::string> params = forward_params(lines, i);
  std::set<std::string, std::less<>> inputs(params.begin(), params.end());
  c.placeholders = int(params.size());
  size_t stmt_indent = body_indent + 4;
  for (++i; i < lines.size(); ++i) {
    std::string_view raw = lines[i];
    std::string_view line = trim(raw);
    if (line.empty() || line[0] == '#') continue;
    if (indent_of(raw) < stmt_indent) break;  // the next method or class
    if (indent_of(raw) > stmt_indent) continue;  // continuation of a multi-line statement
    if (starts_with(line, "return")) {
      ++c.nodes;  // the output node
      continue;
    }
    // "primals_1, tangents_1, = fx_pytree.tree_flatten_spec(...)": the real placeholders.
    if (line.find("fx_pytree.tree_flatten_spec") != std::string_view::npos) {
      std::string_view lhs = line.substr(0, line.find(" = "));
      int names = 0;
      for (size_t start = 0; start <= lhs.size();) {
        size_t comma = std::min(lhs.find(',', start), lhs.size());
        names += !trim(lhs.substr(start, comma - start)).empty();
        start = comma + 1;
      }
      c.placeholders = names;
      continue;
    }
    size_t eq = line.find(" = ");
    if (eq == std::string_view::npos) continue;  // a bare annotation: "primals_1: "f32[2]"  # ..."
    std::string_view rhs = trim(line.substr(eq + 3));
    size_t semi = rhs.find(";  ");
    if (semi != std::string_view::npos) rhs = trim(rhs.substr(0, semi));
    if (inputs.count(rhs)) continue;  // "l_x_ = L_x_": a placeholder renamed
    ++c.nodes;
    if (starts_with(rhs, "self.") && rhs.find('(') == std::string_view::npos) continue;  // get_attr
    ++c.ops;
  }
  c.nodes += c.placeholders;
  return c;
}

std::vector<StageSummary> stage_summaries(const Trace& trace, const CompileEntry& entry) {
  std::vector<StageSummary> out;
  for (const Artifact& a : entry.artifacts) {
    StageSummary s;
    s.name = a.name;
    s.graph = a.graph;
    if (s.graph) {
      auto g = trace.graph(entry, a.name);
      if (g) {
        const Graph& graph = **g;
        s.nodes = int(graph.size());
        s.ops = int(count_nodes(graph, OpKind::CallFunction) + count_nodes(graph, OpKind::CallMethod) +
                    count_nodes(graph, OpKind::CallModule));
      } else {
        s.error = g.status().to_string();
        if (auto text = trace.text(a.payload)) {
          GraphCounts c = count_graph_text(*text);
          s.nodes = c.nodes;
          s.ops = c.ops;
        }
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::string entry_status(const CompileEntry& e) {
  if (!e.metrics) {
    for (const GraphBreak& gb : e.graph_breaks)
      if (gb.failure) return "error";
    return "missing";
  }
  const CompilationMetrics& m = *e.metrics;
  if (m.fail_type) return "error";
  if (m.graph_op_count && *m.graph_op_count == 0) return "empty";
  if (!m.restart_reasons.empty() || !e.graph_breaks.empty()) return "break";
  return "ok";
}

std::vector<CppGuardLine> cpp_guard_lines(std::string_view text) {
  std::vector<CppGuardLine> out;
  for (std::string_view line : split_lines(text)) {
    size_t p = line.find("+- ");
    if (p == std::string_view::npos) continue;
    std::string_view rest = line.substr(p + 3);
    size_t colon = rest.find(':');
    if (colon == std::string_view::npos || colon == 0) continue;
    std::string_view kind = rest.substr(0, colon);
    bool upper = true;
    for (char ch : kind) upper &= (ch >= 'A' && ch <= 'Z') || ch == '_' || (ch >= '0' && ch <= '9');
    if (upper) out.push_back({kind, rest.substr(colon + 1)});
  }
  return out;
}

int count_cpp_guards(std::string_view text) { return int(cpp_guard_lines(text).size()); }

std::optional<int64_t> guard_count(const Trace& trace, const CompileEntry& e) {
  if (e.metrics && e.metrics->guard_count) return e.metrics->guard_count;
  if (e.artifact("dynamo_cpp_guards_str")) {
    auto text = trace.payload_text(e, "dynamo_cpp_guards_str");
    if (text) return count_cpp_guards(*text);
  }
  return std::nullopt;
}

std::vector<CacheOutcome> cache_outcomes(const CompileEntry& e) {
  std::vector<CacheOutcome> out;
  for (const Artifact& a : e.artifacts) {
    for (std::string_view state : {"hit", "miss", "bypass"}) {
      const std::string suffix = "_cache_" + std::string(state);
      if (!a.base.ends_with(suffix)) continue;
      out.push_back({a.base.substr(0, a.base.size() - suffix.size()), std::string(state), a.name});
    }
  }
  return out;
}

std::string seconds_text(const std::optional<double>& seconds) {
  if (!seconds) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f s", *seconds);
  return buf;
}

TraceTotals trace_totals(const Trace& t) {
  TraceTotals totals;
  for (const CompileEntry& e : t.entries) {
    for (const GraphBreak& gb : e.graph_breaks) (gb.failure ? totals.compile_failures : totals.graph_breaks)++;
    totals.recompiles += !e.recompile_reasons.empty();
    totals.graphs += std::any_of(e.artifacts.begin(), e.artifacts.end(), [](const Artifact& a) { return a.graph; });
    if (e.metrics) totals.restarts += int(e.metrics->restart_reasons.size());
  }
  return totals;
}

}  // namespace kiln::trace
