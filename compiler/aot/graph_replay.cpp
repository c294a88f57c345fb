#include "compiler/aot/graph_replay.h"

#include <map>

#include "compiler/pipeline/aten_interpreter.h"

namespace kiln::aot {

using pipeline::EArg;
using pipeline::Var;

Tensor meta_tensor(const Val& val, const std::string& node) {
  KILN_USER_CHECK(val.is_tensor(), "node ", node, " has no tensor meta['val'] (an AOT graph needs one per tensor)");
  const TensorMeta& m = val.tensor;
  std::optional<DType> dt = dtype_from_name(m.dtype);
  KILN_USER_CHECK(dt.has_value(), "node ", node, ": unknown dtype '", m.dtype, "'");
  Shape sizes, strides;
  for (const SymInt& s : m.sizes) {
    KILN_USER_CHECK(!s.is_symbolic(), "node ", node, ": symbolic size ", s.expr, " (the joint graph needs static shapes)");
    sizes.push_back(s.value);
  }
  if (!m.strides) return Tensor::meta(sizes, *dt);
  for (const SymInt& s : *m.strides) strides.push_back(s.value);
  return Tensor::meta_strided(sizes, strides, *dt);
}

std::vector<NodeId> forward_outputs(const Graph& g) {
  const Node* out = g.output();
  KILN_USER_CHECK(out && !out->args.empty(), "forward graph has no output node");
  const Arg& tree = out->args[0];
  std::vector<Arg> items = (tree.kind == Arg::Kind::Tuple || tree.kind == Arg::Kind::List) ? tree.items
                                                                                             : std::vector<Arg>{tree};
  std::vector<NodeId> ids;
  for (size_t i = 0; i < items.size(); ++i) {
    KILN_USER_CHECK(items[i].is_node(), "forward output ", i, " is not a node (only tensor outputs are supported)");
    ids.push_back(items[i].node_id());
  }
  return ids;
}

namespace {

// A forward argument as the emitter takes it.
EArg to_earg(const Arg& a, const std::vector<Var>& var_of, const Node& n) {
  auto var = [&](NodeId id) {
    Var v = var_of.at(size_t(id));
    KILN_USER_CHECK(v.valid(), "node ", n.name, " reads a value that is not a tensor");
    return v;
  };
  if (a.is_node()) return EArg(var(a.node_id()));
  bool has_nodes = false;
  for_each_node_ref(a, [&](NodeId) { has_nodes = true; });
  if (has_nodes) {
    KILN_USER_CHECK(a.kind == Arg::Kind::List || a.kind == Arg::Kind::Tuple, "node ", n.name,
                    ": a node inside an argument that is not a flat list");
    std::vector<Var> vs;
    for (const Arg& x : a.items) {
      KILN_USER_CHECK(x.is_node() || x.is_none(), "node ", n.name, ": a list mixing tensors and constants");
      vs.push_back(x.is_node() ? var(x.node_id()) : Var{});
    }
    return EArg::list(std::move(vs));
  }
  Expected<Value> v = pipeline::constant_value(a);
  KILN_USER_CHECK(v.ok(), "node ", n.name, ": ", v.ok() ? "" : v.status().message());
  return EArg(*v);
}

}  // namespace

Replay replay_graph(pipeline::GraphEmitter& em, const Graph& g, const std::vector<Var>& placeholders) {
  Replay r;
  r.var_of.resize(g.size());
  size_t next_placeholder = 0;
  std::map<NodeId, std::vector<Var>> tuple_vars;  // multi-output node -> its outputs
  Graph& out = em.graph();
  for (size_t i = 0; i < g.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.op == OpKind::Placeholder) {
      KILN_USER_CHECK(next_placeholder < placeholders.size(), "the graph has more placeholders than the ",
                      placeholders.size(), " given");
      r.var_of[i] = placeholders[next_placeholder++];
      continue;
    }
    if (n.op == OpKind::Output) continue;
    KILN_USER_CHECK(n.op == OpKind::CallFunction, "node ", n.name, " is a ", op_kind_name(n.op),
                    "; only ATen graphs of call_function nodes are copied");
    if (n.target == "operator.getitem") {
      auto it = tuple_vars.find(n.args.at(0).node_id());
      KILN_USER_CHECK(it != tuple_vars.end(), "node ", n.name, ": getitem of a node that returns one tensor");
      size_t idx = size_t(n.args.at(1).i);
      KILN_USER_CHECK(idx < it->second.size() && it->second[idx].valid(), "node ", n.name,
                      ": getitem of an output the op leaves None");
      r.var_of[i] = it->second[idx];
      continue;
    }
    ReplayedCall rc;
    rc.node = NodeId(i);
    rc.call.op = n.target;
    for (const Arg& a : n.args) rc.call.args.push_back(to_earg(a, r.var_of, n));
    for (const auto& [k, a] : n.kwargs) rc.call.kwargs.emplace_back(k, to_earg(a, r.var_of, n));
    em.set_origin(n.meta.stack, {n.name});
    const size_t before = out.size();
    rc.call.outputs = em.call(n.target, rc.call.args, rc.call.kwargs);
    for (size_t k = before; k < out.size(); ++k) out.nodes[k].meta.scope = n.meta.scope;
    if (n.meta.val.is_tensor() && rc.call.outputs.size() == 1)
      r.var_of[i] = rc.call.outputs[0];
    else
      tuple_vars[NodeId(i)] = rc.call.outputs;
    r.calls.push_back(std::move(rc));
  }
  KILN_USER_CHECK(next_placeholder == placeholders.size(), "the graph has ", next_placeholder, " placeholders, not ",
                  placeholders.size());
  const Node* output = g.output();
  KILN_USER_CHECK(output && !output->args.empty(), "the graph has no output node");
  const Arg& tree = output->args[0];
  const bool flat = tree.kind == Arg::Kind::Tuple || tree.kind == Arg::Kind::List;
  for (const Arg& item : flat ? tree.items : std::vector<Arg>{tree}) {
    KILN_USER_CHECK(item.is_node() || item.is_none(), "an output that is neither a node nor None");
    if (item.is_node())
      KILN_USER_CHECK(r.var_of[size_t(item.node_id())].valid(), "output ", g[item.node_id()].name, " is not one tensor");
    r.outputs.push_back(item.is_node() ? r.var_of[size_t(item.node_id())] : Var{});
  }
  return r;
}

}  // namespace kiln::aot
