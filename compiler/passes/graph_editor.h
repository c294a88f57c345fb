#pragma once
// Batched edits of a graph for passes that replace or add nodes: emit new
// nodes through a GraphEmitter at a chosen place, redirect readers of a node
// to another, erase nodes, then commit once. Committing puts each new node
// right before its anchor (so a new node never moves past a mutation of what
// it reads), erases the pure nodes the edit left without readers, and
// renumbers references, all in one linear pass.
//
// Provenance: a new node's meta.from is the union of its origins' `from`,
// its stack and scope are the first origin's. The pass manager gives every
// node of a pass's input `from = {its own name}`, so this names the nodes of
// the previous stage it replaces.
#include <map>
#include <optional>
#include <vector>

#include "compiler/pipeline/emitter.h"
#include "core/graph/graph.h"
#include "core/ops/value.h"

namespace kiln::pipeline {

class ConstantTable;

// meta['val'] as a meta tensor (sizes, strides, dtype, no data); nullopt for
// symbolic sizes, unknown dtypes and values that are not one tensor. Without
// printed strides the tensor is taken as contiguous.
std::optional<Tensor> meta_tensor_of(const Val& val);

// Each node's value in the op registry's form, as meta tensors: a Tensor, a
// List for multi-output ops, None when unknown. From meta['val'] when it
// carries strides, otherwise from the ops' meta functions (so graphs parsed
// from text without strides still get them right), get_attr from `constants`.
std::vector<Value> compute_node_metas(const Graph& g, const ConstantTable* constants = nullptr);

class GraphEditor {
 public:
  explicit GraphEditor(Graph& g, const ConstantTable* constants = nullptr);
  const Graph& graph() const { return g_; }

  // The node's value as a meta tensor, or null when it is not one known tensor.
  const Tensor* meta(NodeId id) const;
  // Nodes emitted from now on go right before `anchor` and take their
  // provenance from `origins` (at least one node).
  GraphEmitter& emit_before(NodeId anchor, const std::vector<NodeId>& origins);
  // An existing node as a Var of the emitter; null Var when its meta is unknown.
  Var var(NodeId existing);
  NodeId node(Var v) const { return emitter_->node(v); }
  // A node built by hand (get_attr), placed and stamped like emitted ones; returns its id.
  NodeId insert_before(NodeId anchor, Node n, const std::vector<NodeId>& origins);

  // Readers of `old` (the output included) read `replacement` instead.
  void replace_uses(NodeId old, NodeId replacement);
  // Where a reader of `id` ends up reading, following replacements.
  NodeId resolve(NodeId id) const;
  bool replaced(NodeId id) const { return resolve(id) != id; }
  // Removes `id` at commit; nothing may read it by then (KILN_CHECK).
  void erase(NodeId id);

  // Applies the edits; true when the graph changed. The editor is spent afterwards.
  bool commit();
  // After commit: nodes removed (erased or left dead) and nodes added.
  size_t removed_count() const { return removed_; }
  size_t added_count() const { return added_; }

 private:
  struct Origin {
    NodeId anchor;
    std::string scope;
  };
  void claim_new_nodes();
  void stamp(const std::vector<NodeId>& origins, NodeId anchor);

  Graph& g_;
  const ConstantTable* constants_;
  size_t original_size_;
  mutable std::optional<std::vector<Value>> metas_;  // computed on first use
  mutable std::map<NodeId, Tensor> new_metas_;       // of emitted nodes, from their meta['val']
  std::optional<GraphEmitter> emitter_;
  std::vector<Var> vars_;  // per existing node, once adopted
  std::vector<NodeId> replacement_;
  std::vector<bool> erase_;
  std::vector<Origin> origin_of_new_;  // per node past original_size_
  Origin current_{kNoNode, {}};
  size_t removed_ = 0, added_ = 0;
  bool committed_ = false;
};

}  // namespace kiln::pipeline
