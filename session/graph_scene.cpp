#include "session/graph_scene.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "core/graph/hash.h"
#include "core/graph/spelling.h"
#include "core/trace/module_scopes.h"

namespace kiln {

std::vector<std::string> scope_prefixes(const std::string& scope) {
  std::vector<std::string> out;
  if (scope.empty()) return out;
  for (size_t dot = scope.find('.'); dot != std::string::npos; dot = scope.find('.', dot + 1))
    out.push_back(scope.substr(0, dot));
  out.push_back(scope);
  return out;
}

std::set<std::string> scope_paths(const Graph& g) {
  std::set<std::string> out;
  std::set<std::string_view> seen;  // most nodes share a few scopes: split each once
  for (const Node& n : g.nodes) {
    if (n.meta.scope.empty() || !seen.insert(n.meta.scope).second) continue;
    for (std::string& p : scope_prefixes(n.meta.scope)) out.insert(std::move(p));
  }
  return out;
}

std::string parent_scope(const std::string& scope) {
  size_t dot = scope.rfind('.');
  return dot == std::string::npos ? std::string() : scope.substr(0, dot);
}

GraphScene build_scene(const Graph& g, const std::set<std::string>& expanded) {
  GraphScene s;
  s.box_of_node.assign(g.size(), -1);
  // The visible owner of each distinct scope string, computed once per string.
  std::unordered_map<std::string, std::string> owner_of_scope;
  auto owner = [&](const std::string& scope) -> const std::string& {
    auto it = owner_of_scope.find(scope);
    if (it != owner_of_scope.end()) return it->second;
    std::string result;
    for (std::string& p : scope_prefixes(scope)) {
      if (!expanded.count(p)) {
        result = std::move(p);
        break;
      }
    }
    return owner_of_scope.emplace(scope, std::move(result)).first->second;
  };
  // Scope boxes appear where their first member is, so box order stays close
  // to graph order (which the layered layout relies on to break cycles).
  std::map<std::string, std::vector<NodeId>> members;
  std::vector<std::pair<NodeId, std::string>> order;  // (first node, owner or "" for a node box)
  for (NodeId id = 0; id < NodeId(g.size()); ++id) {
    const std::string& own = owner(g[id].meta.scope);
    if (own.empty()) {
      order.push_back({id, {}});
      continue;
    }
    auto& m = members[own];
    if (m.empty()) order.push_back({id, own});
    m.push_back(id);
  }
  for (auto& [first, own] : order) {
    SceneBox box;
    if (own.empty() || members[own].size() == 1) {
      box.node = first;
      box.members = {first};
    } else {
      box.scope = own;
      box.members = std::move(members[own]);
    }
    for (NodeId m : box.members) s.box_of_node[size_t(m)] = int(s.boxes.size());
    s.boxes.push_back(std::move(box));
  }
  std::map<std::pair<int, int>, size_t> edge_index;
  for (NodeId id = 0; id < NodeId(g.size()); ++id) {
    int to = s.box_of_node[size_t(id)];
    for_each_input(g[id], [&](NodeId src) {
      if (src < 0 || size_t(src) >= g.size()) return;  // a dangling reference is the verifier's business
      int from = s.box_of_node[size_t(src)];
      if (from == to) return;
      auto [it, fresh] = edge_index.emplace(std::pair{from, to}, s.edges.size());
      if (fresh) s.edges.push_back({from, to, {}});
      auto& sources = s.edges[it->second].sources;
      if (std::find(sources.begin(), sources.end(), src) == sources.end()) sources.push_back(src);
    });
  }
  return s;
}

std::string short_target(const Node& n) {
  switch (n.op) {
    case OpKind::Placeholder: return "input";
    case OpKind::Output: return "output";
    case OpKind::GetAttr: return "get_attr";
    default: break;
  }
  std::string t = n.target;
  if (t.rfind("aten::", 0) == 0) t = t.substr(6);
  size_t dot = t.rfind('.');
  // Keep the overload only when it says something ("add.Tensor" vs "add.Scalar");
  // ".default" never does. Python names keep their last component.
  if (n.target.rfind("aten::", 0) == 0 || n.target.find("::") != std::string::npos) {
    if (dot != std::string::npos && t.substr(dot + 1) == "default") t.resize(dot);
  } else if (dot != std::string::npos) {
    t = t.substr(dot + 1);
  }
  return t;
}

std::string describe_val(const Val& v) {
  switch (v.kind) {
    case Val::Kind::Tensor: {
      std::string abbrev(dtype_abbrev_of(v.tensor.dtype));
      std::string s = (abbrev.empty() ? v.tensor.dtype : abbrev) + "[";
      for (size_t i = 0; i < v.tensor.sizes.size(); ++i) s += (i ? ", " : "") + v.tensor.sizes[i].to_string();
      return s + "]";
    }
    case Val::Kind::Sym: return "Sym(" + v.text + ")";
    case Val::Kind::Text: return v.text;
    case Val::Kind::Tuple:
    case Val::Kind::List: {
      std::string s = v.kind == Val::Kind::Tuple ? "(" : "[";
      for (size_t i = 0; i < v.items.size(); ++i) s += (i ? ", " : "") + describe_val(v.items[i]);
      return s + (v.kind == Val::Kind::Tuple ? ")" : "]");
    }
    case Val::Kind::Scalar: return "scalar";
    case Val::Kind::None: break;
  }
  return {};
}

std::string shape_label(const Val& v) {
  switch (v.kind) {
    case Val::Kind::Tensor: {
      std::string s;
      for (size_t i = 0; i < v.tensor.sizes.size(); ++i) s += (i ? "\u00d7" : "") + v.tensor.sizes[i].to_string();
      if (s.empty()) s = "scalar";
      // "b8" is print_readable's spelling; "bool" reads without a legend.
      std::string dtype = v.tensor.dtype == "bool" ? "bool" : std::string(dtype_abbrev_of(v.tensor.dtype));
      if (dtype.empty()) dtype = v.tensor.dtype;
      return v.tensor.dtype == "float32" || dtype.empty() ? s : s + " " + dtype;
    }
    case Val::Kind::Tuple:
    case Val::Kind::List: {
      std::string s;
      for (const Val& item : v.items) {
        std::string one = shape_label(item);
        if (one.empty()) return {};  // a half-known tuple would mislead about which output is which
        s += (s.empty() ? "" : ", ") + one;
      }
      return s;
    }
    default: return {};
  }
}

BoxText box_text(const Graph& g, const SceneBox& box) {
  if (box.is_scope()) return {box.scope, std::to_string(box.members.size()) + " nodes"};
  const Node& n = g[box.node];
  // Dynamo's names of module state spell the path with _modules_ and _parameters_: show the path.
  std::string path = trace::module_state_path(n.name);
  return {short_target(n), path.empty() ? n.name : path};
}

double TextMetrics::text_width(const std::string& text, bool title) const {
  const std::array<float, 128>& advance = title ? title_advance : subtitle_advance;
  double w = 0;
  for (char ch : text) {
    unsigned char c = static_cast<unsigned char>(ch);
    w += c < 128 && advance[c] > 0 ? double(advance[c]) : char_width;
  }
  return w;
}

LayoutInput layout_input(const Graph& g, const GraphScene& scene, const TextMetrics& metrics) {
  LayoutInput in;
  in.boxes.reserve(scene.boxes.size());
  // The painter leaves 6 units each side of the text; a cap keeps a long name from widening its whole rank.
  const double padding = 16, cap = 28 * metrics.char_width;
  for (const SceneBox& b : scene.boxes) {
    BoxText t = box_text(g, b);
    double text = std::min(cap, std::max(metrics.text_width(t.title, true), metrics.text_width(t.subtitle, false)));
    double width = std::max(64.0, std::ceil(text) + padding);
    double height = 2 * metrics.line_height + 10;
    if (b.is_scope()) width += 12, height += 8;  // room for the stacked-card look
    in.boxes.push_back({width, height});
  }
  for (const SceneEdge& e : scene.edges) in.edges.push_back({e.from, e.to});
  return in;
}

namespace {
uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}
uint64_t mix(uint64_t h, std::string_view s) { return mix(h, std::hash<std::string_view>{}(s)); }
}  // namespace

uint64_t scene_layout_key(const Graph& g, const std::set<std::string>& expanded, const TextMetrics& metrics) {
  uint64_t h = structural_hash(g);
  for (const Node& n : g.nodes) h = mix(mix(h, n.meta.scope), n.name.size());
  h = mix(h, expanded.size());
  for (const std::string& s : expanded) h = mix(h, s);
  h = mix(h, uint64_t(metrics.char_width * 1000));
  for (size_t c = 0; c < metrics.title_advance.size(); ++c)
    h = mix(h, uint64_t(metrics.title_advance[c] * 64) * 131 + uint64_t(metrics.subtitle_advance[c] * 64));
  return mix(h, uint64_t(metrics.line_height * 1000));
}

}  // namespace kiln
