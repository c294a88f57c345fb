#pragma once
// Re-emits an ATen graph's nodes through a GraphEmitter into another graph,
// its placeholders bound to given Vars: how the joint graph copies the forward
// before back-propagating through it, and how a bigger graph is built around
// an existing one (a training step: model, then loss, then optimizer).
// Tests: tests/compiler/test_joint_partition.cpp (the joint graph is built on it).
#include <vector>

#include "compiler/aot/derivatives.h"
#include "compiler/pipeline/emitter.h"
#include "core/graph/graph.h"

namespace kiln::aot {

struct ReplayedCall {
  NodeId node = kNoNode;  // in the replayed graph
  GradCall call;          // as emitted: the new graph's Vars
};

struct Replay {
  std::vector<pipeline::Var> var_of;  // per node of the replayed graph: its one tensor (invalid otherwise)
  std::vector<ReplayedCall> calls;    // every call_function but getitem, in order
  std::vector<pipeline::Var> outputs;  // the graph's outputs, flat; an invalid Var where it returns None
};

// The meta tensor of a node's meta['val'] (static shapes only); an Error names `node`.
Tensor meta_tensor(const Val& val, const std::string& node);

// The output node's items, each a node (only tensor outputs).
std::vector<NodeId> forward_outputs(const Graph& g);

// Emits `g`'s call_function nodes through `em` with placeholder k read as
// `placeholders[k]`; each new node keeps the stack and scope of the node it
// copies and names it as its origin. Throws kiln::Error on a graph it cannot
// copy (a get_attr, a list mixing tensors and constants).
Replay replay_graph(pipeline::GraphEmitter& em, const Graph& g, const std::vector<pipeline::Var>& placeholders);

}  // namespace kiln::aot
