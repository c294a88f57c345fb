#include "core/graph/graph.h"

#include <array>
#include <cmath>
#include <cstring>

#include "core/util/status.h"

namespace kiln {

namespace {
constexpr std::array<std::string_view, 6> kOpKindNames{
    "placeholder", "get_attr", "call_function", "call_method", "call_module", "output"};

Arg with_string(Arg::Kind kind, std::string s) {
  Arg a;
  a.kind = kind;
  a.s = std::move(s);
  return a;
}

Arg with_items(Arg::Kind kind, std::vector<Arg> items) {
  Arg a;
  a.kind = kind;
  a.items = std::move(items);
  return a;
}

bool same_float(double x, double y) {
  // Constants compare by bits so nan == nan and 0.0 != -0.0, as a graph's text would.
  return std::memcmp(&x, &y, sizeof x) == 0 || (std::isnan(x) && std::isnan(y));
}
}  // namespace

std::string_view op_kind_name(OpKind k) { return kOpKindNames[size_t(k)]; }

std::optional<OpKind> op_kind_from_name(std::string_view name) {
  for (size_t i = 0; i < kOpKindNames.size(); ++i)
    if (kOpKindNames[i] == name) return OpKind(i);
  return std::nullopt;
}

Arg Arg::boolean(bool v) {
  Arg a;
  a.kind = Kind::Bool;
  a.b = v;
  return a;
}
Arg Arg::integer(int64_t v) {
  Arg a;
  a.kind = Kind::Int;
  a.i = v;
  return a;
}
Arg Arg::real(double v) {
  Arg a;
  a.kind = Kind::Float;
  a.f = v;
  return a;
}
Arg Arg::node(NodeId id) {
  Arg a;
  a.kind = Kind::Node;
  a.i = id;
  return a;
}
Arg Arg::str(std::string v) { return with_string(Kind::Str, std::move(v)); }
Arg Arg::dtype(std::string v) { return with_string(Kind::DType, std::move(v)); }
Arg Arg::device(std::string v) { return with_string(Kind::Device, std::move(v)); }
Arg Arg::layout(std::string v) { return with_string(Kind::Layout, std::move(v)); }
Arg Arg::memory_format(std::string v) { return with_string(Kind::MemoryFormat, std::move(v)); }
Arg Arg::global(std::string v) { return with_string(Kind::Global, std::move(v)); }
Arg Arg::sym(std::string v) { return with_string(Kind::Sym, std::move(v)); }
Arg Arg::ellipsis() {
  Arg a;
  a.kind = Kind::Ellipsis;
  return a;
}
Arg Arg::list(std::vector<Arg> items) { return with_items(Kind::List, std::move(items)); }
Arg Arg::tuple(std::vector<Arg> items) { return with_items(Kind::Tuple, std::move(items)); }
Arg Arg::slice(Arg start, Arg stop, Arg step) {
  return with_items(Kind::Slice, {std::move(start), std::move(stop), std::move(step)});
}
Arg Arg::dict(std::vector<std::pair<Arg, Arg>> entries) {
  std::vector<Arg> items;
  items.reserve(entries.size() * 2);
  for (auto& [k, v] : entries) {
    items.push_back(std::move(k));
    items.push_back(std::move(v));
  }
  return with_items(Kind::Dict, std::move(items));
}

bool operator==(const Arg& x, const Arg& y) {
  if (x.kind != y.kind) return false;
  switch (x.kind) {
    case Arg::Kind::Bool: return x.b == y.b;
    case Arg::Kind::Int: return x.i == y.i && x.s == y.s;
    case Arg::Kind::Float: return same_float(x.f, y.f);
    case Arg::Kind::Node: return x.i == y.i;
    default: return x.s == y.s && x.items == y.items;
  }
}

Val Val::of_tensor(TensorMeta t) {
  Val v;
  v.kind = Kind::Tensor;
  v.tensor = std::move(t);
  return v;
}
Val Val::of_sym(std::string expr) {
  Val v;
  v.kind = Kind::Sym;
  v.text = std::move(expr);
  return v;
}
Val Val::of_scalar(Arg a) {
  Val v;
  v.kind = Kind::Scalar;
  v.scalar = std::move(a);
  return v;
}
Val Val::tuple(std::vector<Val> items) {
  Val v;
  v.kind = Kind::Tuple;
  v.items = std::move(items);
  return v;
}
Val Val::raw(std::string text) {
  Val v;
  v.kind = Kind::Text;
  v.text = std::move(text);
  return v;
}

bool operator==(const Val& x, const Val& y) {
  return x.kind == y.kind && x.tensor == y.tensor && x.text == y.text && x.scalar == y.scalar &&
         x.items == y.items;
}

NodeId Graph::add(Node n) {
  nodes.push_back(std::move(n));
  return NodeId(nodes.size() - 1);
}

NodeId Graph::find(std::string_view name) const {
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].name == name) return NodeId(i);
  return kNoNode;
}

const Node* Graph::output() const {
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it)
    if (it->op == OpKind::Output) return &*it;
  return nullptr;
}

const Graph* Graph::subgraph(std::string_view name) const {
  for (const auto& s : subgraphs)
    if (s.name == name) return &s.graph;
  return nullptr;
}

std::vector<std::vector<NodeId>> compute_users(const Graph& g) {
  std::vector<std::vector<NodeId>> users(g.size());
  for (size_t i = 0; i < g.size(); ++i) {
    NodeId user = NodeId(i);
    for_each_input(g.nodes[i], [&](NodeId input) {
      if (input < 0 || size_t(input) >= g.size()) return;
      auto& list = users[size_t(input)];
      if (list.empty() || list.back() != user) list.push_back(user);
    });
  }
  return users;
}

namespace {
void renumber(Arg& a, const std::vector<NodeId>& new_id) {
  if (a.kind == Arg::Kind::Node) {
    KILN_CHECK(a.i >= 0 && size_t(a.i) < new_id.size(), "reference to node ", a.i, " out of range");
    KILN_CHECK(new_id[size_t(a.i)] != kNoNode, "a kept node reads removed node ", a.i);
    a.i = new_id[size_t(a.i)];
  }
  for (Arg& item : a.items) renumber(item, new_id);
}
}  // namespace

void remove_nodes(Graph& g, const std::vector<bool>& remove) {
  KILN_CHECK(remove.size() == g.size(), "remove_nodes: mask of ", remove.size(), " for ", g.size(), " nodes");
  std::vector<NodeId> new_id(g.size(), kNoNode);
  std::vector<Node> kept;
  kept.reserve(g.size());
  for (size_t i = 0; i < g.size(); ++i) {
    if (remove[i]) continue;
    new_id[i] = NodeId(kept.size());
    kept.push_back(std::move(g.nodes[i]));
  }
  for (Node& n : kept) {
    for (Arg& a : n.args) renumber(a, new_id);
    for (auto& kv : n.kwargs) renumber(kv.second, new_id);
  }
  g.nodes = std::move(kept);
}

size_t count_nodes(const Graph& g, OpKind kind) {
  size_t n = 0;
  for (const Node& node : g.nodes) n += node.op == kind;
  return n;
}

}  // namespace kiln
