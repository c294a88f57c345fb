#include "core/graph/visitor.h"

namespace kiln {

void GraphVisitor::visit(const Graph& g) {
  for (size_t i = 0; i < g.size(); ++i) visit_node(g, NodeId(i));
}

void GraphVisitor::visit_node(const Graph& g, NodeId id) {
  switch (g[id].op) {
    case OpKind::Placeholder: return visit_placeholder(g, id);
    case OpKind::GetAttr: return visit_get_attr(g, id);
    case OpKind::CallFunction: return visit_call_function(g, id);
    case OpKind::CallMethod: return visit_call_method(g, id);
    case OpKind::CallModule: return visit_call_module(g, id);
    case OpKind::Output: return visit_output(g, id);
  }
}

std::shared_ptr<const Graph> GraphMutator::mutate(const std::shared_ptr<const Graph>& g) {
  std::shared_ptr<Graph> copy;
  for (size_t i = 0; i < g->size(); ++i) {
    std::optional<Node> replacement = mutate_node(copy ? *copy : *g, NodeId(i));
    if (!replacement) continue;
    if (!copy) copy = std::make_shared<Graph>(*g);
    (*copy)[NodeId(i)] = std::move(*replacement);
  }
  if (!copy) return g;
  return copy;
}

bool GraphMutator::mutate_in_place(Graph& g) {
  bool changed = false;
  for (size_t i = 0; i < g.size(); ++i) {
    std::optional<Node> replacement = mutate_node(g, NodeId(i));
    if (!replacement) continue;
    g[NodeId(i)] = std::move(*replacement);
    changed = true;
  }
  return changed;
}

std::optional<Node> GraphMutator::mutate_node(const Graph& g, NodeId id) {
  const Node& n = g[id];
  std::optional<Node> out;
  auto edit = [&]() -> Node& {
    if (!out) out = n;
    return *out;
  };
  for (size_t i = 0; i < n.args.size(); ++i)
    if (auto a = mutate_arg(n.args[i])) edit().args[i] = std::move(*a);
  for (size_t i = 0; i < n.kwargs.size(); ++i)
    if (auto a = mutate_arg(n.kwargs[i].second)) edit().kwargs[i].second = std::move(*a);
  return out;
}

std::optional<Arg> GraphMutator::mutate_arg(const Arg& a) {
  std::optional<Arg> out;
  for (size_t i = 0; i < a.items.size(); ++i) {
    if (auto item = mutate_arg(a.items[i])) {
      if (!out) out = a;
      out->items[i] = std::move(*item);
    }
  }
  return out;
}

}  // namespace kiln
