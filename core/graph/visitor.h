#pragma once
// The one visitor and the one mutator base over the graph IR. A pass overrides
// the hooks it cares about; the mutator gives back the very same graph object
// when no hook changed anything, so the pass manager can record "unchanged"
// by pointer comparison and skip the snapshot (ARCHITECTURE.md).
#include <memory>
#include <optional>

#include "core/graph/graph.h"

namespace kiln {

// Walks the nodes in order and dispatches on the op kind.
class GraphVisitor {
 public:
  virtual ~GraphVisitor() = default;
  void visit(const Graph& g);

 protected:
  virtual void visit_node(const Graph& g, NodeId id);
  virtual void visit_placeholder(const Graph&, NodeId) {}
  virtual void visit_get_attr(const Graph&, NodeId) {}
  virtual void visit_call_function(const Graph&, NodeId) {}
  virtual void visit_call_method(const Graph&, NodeId) {}
  virtual void visit_call_module(const Graph&, NodeId) {}
  virtual void visit_output(const Graph&, NodeId) {}
};

// Rewrites nodes in place, one at a time; the node list keeps its length and
// order (removing nodes is remove_nodes' job).
class GraphMutator {
 public:
  virtual ~GraphMutator() = default;
  // `g` itself when nothing changed, otherwise a new graph.
  std::shared_ptr<const Graph> mutate(const std::shared_ptr<const Graph>& g);
  // The same on a graph owned by the caller; true when something changed.
  bool mutate_in_place(Graph& g);

 protected:
  // A replacement for node `id`, or nullopt to keep it. The default sends the
  // args and kwargs through mutate_arg.
  virtual std::optional<Node> mutate_node(const Graph& g, NodeId id);
  // A replacement for `a`, or nullopt to keep it. The default recurses into
  // containers and keeps leaves; override it for leaves and call the base for the rest.
  virtual std::optional<Arg> mutate_arg(const Arg& a);
};

}  // namespace kiln
