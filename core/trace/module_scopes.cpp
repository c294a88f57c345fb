#include "core/trace/module_scopes.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace kiln::trace {
namespace {

constexpr std::string_view kSeparators[] = {"_modules_", "_parameters_", "_buffers_"};

// Dotted components: "a.b.c" -> {"a", "b", "c"}.
std::vector<std::string_view> components(std::string_view path) {
  std::vector<std::string_view> out;
  while (!path.empty()) {
    size_t dot = path.find('.');
    out.push_back(path.substr(0, dot));
    if (dot == std::string_view::npos) break;
    path.remove_prefix(dot + 1);
  }
  return out;
}

std::string join(const std::vector<std::string_view>& parts, size_t n) {
  std::string s;
  for (size_t i = 0; i < n && i < parts.size(); ++i) (s += i ? "." : "") += parts[i];
  return s;
}

std::string parent_of(const std::string& path) {
  size_t dot = path.rfind('.');
  return dot == std::string::npos ? std::string() : path.substr(0, dot);
}

std::string common_prefix(const std::string& a, const std::string& b) {
  auto pa = components(a), pb = components(b);
  size_t n = 0;
  while (n < pa.size() && n < pb.size() && pa[n] == pb[n]) ++n;
  return join(pa, n);
}

// The attribute a statement calls on self: "out = self.conv1(x)" -> "conv1".
std::string self_attribute(const std::string& code) {
  for (size_t at = code.find("self."); at != std::string::npos; at = code.find("self.", at + 1)) {
    if (at > 0 && (std::isalnum(static_cast<unsigned char>(code[at - 1])) || code[at - 1] == '_')) continue;
    size_t b = at + 5, e = b;
    while (e < code.size() && (std::isalnum(static_cast<unsigned char>(code[e])) || code[e] == '_')) ++e;
    if (e > b && e < code.size() && (code[e] == '(' || code[e] == '[' || code[e] == '.')) return code.substr(b, e - b);
  }
  return {};
}

// primals_7 -> 7; 0 for other names.
size_t primal_index(const std::string& name) {
  constexpr std::string_view prefix = "primals_";
  if (!name.starts_with(prefix)) return 0;
  size_t k = 0;
  auto [end, ec] = std::from_chars(name.data() + prefix.size(), name.data() + name.size(), k);
  return ec == std::errc() && end == name.data() + name.size() ? k : 0;
}

struct Statement {
  std::vector<NodeId> nodes;
  const StackFrame* frame = nullptr;
  bool seeded = false;
  std::string seed;      // common module of the state its nodes read
  std::string attribute;  // what it calls on self
  std::string scope;
};

// The module instance a seeded statement runs in: the seed without the
// attribute the statement called ("layer1.0.conv1" called as self.conv1 -> "layer1.0").
std::string instance_of(const Statement& s) {
  if (s.attribute.empty()) return s.seed;
  auto parts = components(s.seed);
  for (size_t i = parts.size(); i-- > 0;)
    if (parts[i] == s.attribute) return join(parts, i);
  return s.seed;
}

}  // namespace

std::string module_state_path(std::string_view name) {
  size_t first = std::string_view::npos, first_len = 0;
  for (std::string_view sep : kSeparators)
    if (size_t at = name.find(sep); at < first) first = at, first_len = sep.size();
  if (first == std::string_view::npos) return {};
  std::string_view rest = name.substr(first + first_len);
  if (rest.ends_with('_')) rest.remove_suffix(1);
  std::string out;
  while (!rest.empty()) {
    size_t next = std::string_view::npos, len = 0;
    for (std::string_view sep : kSeparators)
      if (size_t at = rest.find(sep); at < next) next = at, len = sep.size();
    out += rest.substr(0, next);
    if (next == std::string_view::npos) break;
    out += '.';
    rest.remove_prefix(next + len);
  }
  return out;
}

std::vector<std::string> input_state_paths(const Graph& g) {
  std::vector<std::string> out;
  for (const Node& n : g.nodes)
    if (n.op == OpKind::Placeholder) {
      std::string p = module_state_path(n.name);
      out.push_back(p.empty() ? module_state_path(n.target) : p);
    }
  return out;
}

size_t infer_module_scopes(Graph& g, const std::vector<std::string>& dynamo_inputs) {
  for (const Node& n : g.nodes)
    if (!n.meta.scope.empty()) return 0;
  // The module that owns each state node ("" for other nodes).
  std::vector<std::string> owner(g.size());
  bool any_state = false;
  for (size_t i = 0; i < g.size(); ++i) {
    const Node& n = g.nodes[i];
    std::string path;
    if (n.op == OpKind::Placeholder) {
      path = module_state_path(n.name);
      if (path.empty()) path = module_state_path(n.target);
      if (size_t k = primal_index(n.name); path.empty() && k >= 1 && k <= dynamo_inputs.size()) path = dynamo_inputs[k - 1];
    } else if (n.op == OpKind::GetAttr && n.target.find('.') != std::string::npos) {
      path = n.target;
    }
    owner[i] = parent_of(path);
    any_state |= !owner[i].empty();
  }
  if (!any_state) return 0;

  // The common module of the state a node reads; false when it reads none.
  auto seed_of = [&](const Node& n, std::string& seed) {
    bool seeded = false;
    for_each_input(n, [&](NodeId src) {
      if (src < 0 || size_t(src) >= g.size() || owner[size_t(src)].empty()) return;
      const std::string& o = owner[size_t(src)];
      seed = seeded ? common_prefix(seed, o) : o;
      seeded = true;
    });
    return seeded;
  };
  // Statements: runs of ops with the same innermost source line. Ops without
  // one (the copies back into buffers at the end of a training graph) go with
  // the state they read.
  std::vector<Statement> statements;
  std::vector<std::pair<NodeId, std::string>> lone;
  for (NodeId id = 0; id < NodeId(g.size()); ++id) {
    const Node& n = g[id];
    if (n.op == OpKind::Placeholder || n.op == OpKind::Output || n.op == OpKind::GetAttr) continue;
    if (n.meta.stack.empty()) {
      if (std::string seed; seed_of(n, seed)) lone.push_back({id, seed});
      continue;
    }
    const StackFrame& f = n.meta.stack.back();
    if (statements.empty() || !(*statements.back().frame == f)) {
      statements.emplace_back();
      statements.back().frame = &f;
      statements.back().attribute = self_attribute(f.code);
    }
    Statement& s = statements.back();
    s.nodes.push_back(id);
    if (std::string seed; seed_of(n, seed)) {
      s.seed = s.seeded ? common_prefix(s.seed, seed) : seed;
      s.seeded = true;
    }
  }

  // Calls: runs of statements of one function whose lines move one way
  // (down in the forward, up in the backward); a turn starts another call.
  std::vector<size_t> call_of(statements.size());
  size_t call = 0;
  int direction = 0;
  for (size_t i = 1; i < statements.size(); ++i) {
    const StackFrame &a = *statements[i - 1].frame, &b = *statements[i].frame;
    const int step = b.line > a.line ? 1 : b.line < a.line ? -1 : 0;
    if (a.file != b.file || a.function != b.function || (direction != 0 && step != 0 && step != direction)) {
      ++call;
      direction = 0;
    } else if (direction == 0) {
      direction = step;
    }
    call_of[i] = call;
  }
  for (size_t i = 0; i < statements.size(); ++i) {
    Statement& s = statements[i];
    if (s.seeded) {
      s.scope = s.seed;
      continue;
    }
    // The nearest seeded statement of the same call, either side.
    const Statement* near = nullptr;
    for (size_t d = 1; !near; ++d) {
      bool inside = false;
      for (size_t j : {i - d, i + d}) {
        if (j >= statements.size() || call_of[j] != call_of[i]) continue;  // i - d wraps past 0
        inside = true;
        if (statements[j].seeded) {
          near = &statements[j];
          break;
        }
      }
      if (!inside) break;
    }
    if (!near) continue;
    const std::string instance = instance_of(*near);
    s.scope = s.attribute.empty() ? instance : instance.empty() ? s.attribute : instance + "." + s.attribute;
  }

  size_t given = 0;
  for (size_t i = 0; i < g.size(); ++i)
    if (!owner[i].empty()) g.nodes[i].meta.scope = owner[i], ++given;
  for (const Statement& s : statements)
    if (!s.scope.empty())
      for (NodeId id : s.nodes) g[id].meta.scope = s.scope, ++given;
  for (auto& [id, seed] : lone)
    if (!seed.empty()) g[id].meta.scope = std::move(seed), ++given;
  // Ops without a source line and still without a scope (a decomposition's
  // unsqueezes of saved statistics) go with the ops that read them,
  // else with the ops they read, when those agree.
  const auto users = compute_users(g);
  auto agree = [&](const std::vector<NodeId>& around) {
    std::string common;
    bool first = true;
    for (NodeId u : around) {
      const std::string& sc = g[u].meta.scope;
      if (sc.empty() || g[u].op == OpKind::Output) continue;
      common = first ? sc : common_prefix(common, sc);
      first = false;
    }
    return common;
  };
  for (size_t i = g.size(); i-- > 0;) {
    Node& n = g.nodes[i];
    if (!is_call(n) || !n.meta.scope.empty() || !n.meta.stack.empty()) continue;
    if (std::string sc = agree(users[i]); !sc.empty()) n.meta.scope = std::move(sc), ++given;
  }
  for (size_t i = 0; i < g.size(); ++i) {
    Node& n = g.nodes[i];
    if (!is_call(n) || !n.meta.scope.empty() || !n.meta.stack.empty()) continue;
    std::vector<NodeId> inputs;
    for_each_input(n, [&](NodeId src) {
      if (src >= 0 && size_t(src) < g.size()) inputs.push_back(src);
    });
    if (std::string sc = agree(inputs); !sc.empty()) n.meta.scope = std::move(sc), ++given;
  }
  return given;
}

}  // namespace kiln::trace
