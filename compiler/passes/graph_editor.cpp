#include "compiler/passes/graph_editor.h"

#include <algorithm>

#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/constants.h"
#include "compiler/passes/op_properties.h"
#include "core/ops/registry.h"
#include "core/util/status.h"

namespace kiln::pipeline {

std::optional<Tensor> meta_tensor_of(const Val& val) {
  if (!val.is_tensor()) return std::nullopt;
  std::optional<DType> dtype = dtype_from_name(val.tensor.dtype);
  if (!dtype) return std::nullopt;
  Shape sizes;
  for (const SymInt& s : val.tensor.sizes) {
    if (s.is_symbolic()) return std::nullopt;
    sizes.push_back(s.value);
  }
  if (!val.tensor.strides) return Tensor::meta(sizes, *dtype);
  Shape strides;
  for (const SymInt& s : *val.tensor.strides) {
    if (s.is_symbolic()) return std::nullopt;
    strides.push_back(s.value);
  }
  if (strides.size() != sizes.size()) return std::nullopt;
  return Tensor::meta_strided(sizes, strides, *dtype);
}

namespace {

Tensor as_meta(const Tensor& t) { return Tensor::meta_strided(t.sizes(), t.strides(), t.dtype()); }

// An argument with the meta values of the nodes it reads; nullopt when one is not known.
std::optional<Value> arg_meta(const Arg& a, const std::vector<Value>& metas) {
  Expected<Value> v = arg_value(a, [&metas](NodeId id) -> std::optional<Value> {
    const Value& m = metas[size_t(id)];
    if (m.is_none()) return std::nullopt;
    return m;
  });
  if (!v) return std::nullopt;
  return std::move(*v);
}

// The meta functions' answer for a registered ATen call, or None.
Value propagated_meta(const Node& n, const std::vector<Value>& metas) {
  if (!op_registry().find(n.target)) return Value();
  ValueList args;
  for (const Arg& a : n.args) {
    std::optional<Value> v = arg_meta(a, metas);
    if (!v) return Value();
    args.push_back(std::move(*v));
  }
  KwargList kwargs;
  for (const auto& [k, a] : n.kwargs) {
    std::optional<Value> v = arg_meta(a, metas);
    if (!v) return Value();
    kwargs.emplace_back(k, std::move(*v));
  }
  Expected<ValueList> r = call_meta(n.target, args, kwargs);
  if (!r) return Value();
  return r->size() == 1 ? (*r)[0] : Value(std::move(*r));
}

bool has_strides(const Val& v) { return v.is_tensor() && v.tensor.strides.has_value(); }

}  // namespace

std::vector<Value> compute_node_metas(const Graph& g, const ConstantTable* constants) {
  std::vector<Value> metas(g.size());
  for (size_t i = 0; i < g.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.op == OpKind::Output) continue;
    if (n.op == OpKind::GetAttr && constants) {
      if (const Tensor* t = constants->find(n.target)) {
        metas[i] = Value(as_meta(*t));
        continue;
      }
    }
    if (has_strides(n.meta.val)) {
      if (auto t = meta_tensor_of(n.meta.val)) {
        metas[i] = Value(*t);
        continue;
      }
    }
    if (n.op == OpKind::CallFunction && n.target == "operator.getitem" && n.args.size() == 2 && n.args[0].is_node() &&
        n.args[1].kind == Arg::Kind::Int) {
      const Value& tuple = metas[size_t(n.args[0].node_id())];
      if (tuple.is_list() && n.args[1].i >= 0 && size_t(n.args[1].i) < tuple.to_list().size()) {
        metas[i] = tuple.to_list()[size_t(n.args[1].i)];
        continue;
      }
    }
    if (n.op == OpKind::CallFunction) metas[i] = propagated_meta(n, metas);
    if (metas[i].is_none())
      if (auto t = meta_tensor_of(n.meta.val)) metas[i] = Value(*t);
  }
  return metas;
}

GraphEditor::GraphEditor(Graph& g, const ConstantTable* constants)
    : g_(g),
      constants_(constants),
      original_size_(g.size()),
      vars_(g.size()),
      replacement_(g.size(), kNoNode),
      erase_(g.size(), false) {}

const Tensor* GraphEditor::meta(NodeId id) const {
  if (size_t(id) < original_size_) {
    // Before any edit, so the nodes are still the ones the metas describe.
    if (!metas_) metas_ = compute_node_metas(g_, constants_);
    const Value& v = (*metas_)[size_t(id)];
    return v.is_tensor() ? &v.to_tensor() : nullptr;
  }
  if (size_t(id) >= g_.size()) return nullptr;
  if (auto it = new_metas_.find(id); it != new_metas_.end()) return &it->second;
  std::optional<Tensor> t = meta_tensor_of(g_[id].meta.val);
  if (!t) return nullptr;
  return &new_metas_.emplace(id, *t).first->second;
}

void GraphEditor::claim_new_nodes() {
  while (g_.size() > original_size_ + origin_of_new_.size()) origin_of_new_.push_back(current_);
  replacement_.resize(g_.size(), kNoNode);
  erase_.resize(g_.size(), false);
  vars_.resize(g_.size());
}

void GraphEditor::stamp(const std::vector<NodeId>& origins, NodeId anchor) {
  KILN_CHECK(!committed_, "GraphEditor used after commit");
  KILN_CHECK(!origins.empty(), "new nodes need at least one origin");
  KILN_CHECK(anchor >= 0 && size_t(anchor) < original_size_, "anchor ", anchor, " is not a node of the original graph");
  claim_new_nodes();
  std::vector<std::string> from;
  for (NodeId o : origins)
    for (const std::string& name : g_[o].meta.from)
      if (std::find(from.begin(), from.end(), name) == from.end()) from.push_back(name);
  const Node& first = g_[origins[0]];
  if (!emitter_) emitter_.emplace(g_);
  emitter_->set_origin(first.meta.stack, std::move(from));
  current_ = {anchor, first.meta.scope};
}

GraphEmitter& GraphEditor::emit_before(NodeId anchor, const std::vector<NodeId>& origins) {
  stamp(origins, anchor);
  return *emitter_;
}

Var GraphEditor::var(NodeId existing) {
  KILN_CHECK(emitter_, "call emit_before before asking for Vars");
  const Tensor* m = meta(existing);
  if (!m) return Var{};
  Var& v = vars_[size_t(existing)];
  if (!v.valid()) v = emitter_->adopt(existing, *m);
  return v;
}

NodeId GraphEditor::insert_before(NodeId anchor, Node n, const std::vector<NodeId>& origins) {
  stamp(origins, anchor);
  std::string base = n.name;
  for (int k = 1; g_.find(n.name) != kNoNode; ++k) n.name = base + "_" + std::to_string(k);
  n.meta.stack = g_[origins[0]].meta.stack;
  n.meta.from.clear();
  for (NodeId o : origins)
    for (const std::string& name : g_[o].meta.from)
      if (std::find(n.meta.from.begin(), n.meta.from.end(), name) == n.meta.from.end()) n.meta.from.push_back(name);
  NodeId id = g_.add(std::move(n));
  claim_new_nodes();
  return id;
}

void GraphEditor::replace_uses(NodeId old, NodeId replacement) {
  claim_new_nodes();
  KILN_CHECK(resolve(replacement) != old, "replacing node ", old, " by itself");
  replacement_[size_t(old)] = replacement;
}

NodeId GraphEditor::resolve(NodeId id) const {
  while (size_t(id) < replacement_.size() && replacement_[size_t(id)] != kNoNode) id = replacement_[size_t(id)];
  return id;
}

void GraphEditor::erase(NodeId id) {
  claim_new_nodes();
  erase_[size_t(id)] = true;
}

namespace {
void redirect(Arg& a, const GraphEditor& ed) {
  if (a.is_node()) a.i = ed.resolve(a.node_id());
  for (Arg& item : a.items) redirect(item, ed);
}
}  // namespace

bool GraphEditor::commit() {
  KILN_CHECK(!committed_, "GraphEditor committed twice");
  claim_new_nodes();
  committed_ = true;
  const size_t total = g_.size();
  bool any_replacement = std::any_of(replacement_.begin(), replacement_.end(), [](NodeId r) { return r != kNoNode; });
  bool any_erase = std::any_of(erase_.begin(), erase_.end(), [](bool e) { return e; });
  if (total == original_size_ && !any_replacement && !any_erase) return false;

  for (Node& n : g_.nodes) {
    for (Arg& a : n.args) redirect(a, *this);
    for (auto& kv : n.kwargs) redirect(kv.second, *this);
  }
  for (size_t i = original_size_; i < total; ++i) g_.nodes[i].meta.scope = origin_of_new_[i - original_size_].scope;

  // Final order: new nodes right before their anchors, in the order they were made.
  std::vector<std::vector<NodeId>> before(original_size_);
  for (size_t i = original_size_; i < total; ++i) before[size_t(origin_of_new_[i - original_size_].anchor)].push_back(NodeId(i));
  std::vector<NodeId> order;
  order.reserve(total);
  for (size_t i = 0; i < original_size_; ++i) {
    for (NodeId n : before[i]) order.push_back(n);
    order.push_back(NodeId(i));
  }

  // Walking the final order backwards, a touched pure node without readers goes.
  std::vector<int> readers(total, 0);
  for (const Node& n : g_.nodes) {
    std::vector<NodeId> seen;
    for_each_input(n, [&](NodeId in) {
      if (std::find(seen.begin(), seen.end(), in) == seen.end()) seen.push_back(in), ++readers[size_t(in)];
    });
  }
  std::vector<bool> touched(total, false), remove(total, false);
  for (size_t i = 0; i < total; ++i) touched[i] = i >= original_size_ || replacement_[i] != kNoNode || erase_[i];
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    size_t i = size_t(*it);
    const Node& n = g_.nodes[i];
    if (erase_[i]) {
      KILN_CHECK(readers[i] == 0, "erasing node '", n.name, "', which ", readers[i], " node(s) still read");
    } else if (!(touched[i] && readers[i] == 0 && is_pure(n))) {
      continue;
    }
    remove[i] = true;
    std::vector<NodeId> seen;
    for_each_input(n, [&](NodeId in) {
      if (std::find(seen.begin(), seen.end(), in) != seen.end()) return;
      seen.push_back(in);
      --readers[size_t(in)];
      touched[size_t(in)] = true;
    });
  }

  std::vector<NodeId> new_id(total, kNoNode);
  std::vector<Node> kept;
  kept.reserve(total);
  for (NodeId id : order) {
    if (remove[size_t(id)]) continue;
    new_id[size_t(id)] = NodeId(kept.size());
    kept.push_back(std::move(g_.nodes[size_t(id)]));
  }
  for (size_t i = 0; i < original_size_; ++i) removed_ += remove[i];
  for (size_t i = original_size_; i < total; ++i) added_ += !remove[i];
  auto renumber = [&](auto& self, Arg& a) -> void {
    if (a.is_node()) {
      NodeId to = new_id[size_t(a.node_id())];
      KILN_CHECK(to != kNoNode, "a kept node reads removed node #", a.i);
      a.i = to;
    }
    for (Arg& item : a.items) self(self, item);
  };
  for (Node& n : kept) {
    for (Arg& a : n.args) renumber(renumber, a);
    for (auto& kv : n.kwargs) renumber(renumber, kv.second);
  }
  g_.nodes = std::move(kept);
  return removed_ > 0 || added_ > 0 || any_replacement;
}

}  // namespace kiln::pipeline
