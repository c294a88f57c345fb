#include "compiler/passes/fold_constants.h"

#include <cstring>
#include <optional>

#include "compiler/passes/graph_editor.h"
#include "compiler/passes/op_properties.h"
#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/constants.h"
#include "core/ops/registry.h"

namespace kiln::pipeline {

namespace {

using Constants = std::vector<std::optional<Tensor>>;

// An argument with every node it reads already folded; nullopt otherwise.
std::optional<Value> known_arg(const Arg& a, const Constants& known) {
  Expected<Value> v = arg_value(a, [&known](NodeId id) -> std::optional<Value> {
    const auto& t = known[size_t(id)];
    if (!t) return std::nullopt;
    return Value(*t);
  });
  if (!v) return std::nullopt;
  return std::move(*v);
}

// The node's value when every input is known and the op may run ahead of time.
std::optional<Tensor> evaluate(const Node& n, const Constants& known, const Tensor* meta) {
  if (n.op != OpKind::CallFunction || !is_pure(n) || !op_registry().find(n.target)) return std::nullopt;
  if (!meta || meta->numel() > kMaxEvaluatedElements) return std::nullopt;
  ValueList args;
  KwargList kwargs;
  for (const Arg& a : n.args) {
    std::optional<Value> v = known_arg(a, known);
    if (!v) return std::nullopt;
    args.push_back(std::move(*v));
  }
  for (const auto& [k, a] : n.kwargs) {
    std::optional<Value> v = known_arg(a, known);
    if (!v) return std::nullopt;
    kwargs.emplace_back(k, std::move(*v));
  }
  try {
    Expected<ValueList> r = call_op(n.target, args, kwargs);
    if (!r || r->size() != 1 || !(*r)[0].is_tensor()) return std::nullopt;
    return (*r)[0].to_tensor();
  } catch (const std::exception&) {
    return std::nullopt;  // a kernel's own bug: leave the node to run (and fail) at run time
  }
}

// The one value every element has, compared bit for bit (so 0.0 and -0.0 differ).
std::optional<Value> uniform_value(const Tensor& t) {
  if (t.numel() == 0) return std::nullopt;
  Tensor c = t.contiguous();
  const auto* bytes = static_cast<const unsigned char*>(c.raw_data());
  size_t width = element_size(c.dtype());
  for (int64_t i = 1; i < c.numel(); ++i)
    if (std::memcmp(bytes, bytes + size_t(i) * width, width) != 0) return std::nullopt;
  Tensor first = c.view({-1}).slice(0, 0, 1);
  if (c.dtype() == DType::Bool) return Value(first.data<bool>()[0]);
  if (is_integral(c.dtype(), false)) return Value(first.to(DType::Int64).contiguous().data<int64_t>()[0]);
  return Value(first.to(DType::Float64).contiguous().data<double>()[0]);
}

bool has_node_input(const Node& n) {
  bool any = false;
  for_each_input(n, [&](NodeId) { any = true; });
  return any;
}

}  // namespace

PassResult fold_constants(Graph& g, const PassContext& ctx) {
  if (graph_has_mutation(g)) return {};
  GraphEditor ed(g, ctx.constants);
  const size_t n = g.size();
  Constants known(n);
  std::vector<bool> derived(n, false);
  for (size_t i = 0; i < n; ++i) {
    const Node& node = g.nodes[i];
    if (node.op == OpKind::GetAttr && ctx.constants) {
      if (const Tensor* t = ctx.constants->find(node.target)) known[i] = *t;
      continue;
    }
    known[i] = evaluate(node, known, ed.meta(NodeId(i)));
    derived[i] = known[i] && has_node_input(node);
  }

  // Backwards: a constant is worth replacing when a reader that stays (not
  // replaced itself, and live) still reads it.
  std::vector<std::optional<Value>> fill(n);
  std::vector<bool> replace(n, false), reads_live(n, false);
  auto users = compute_users(g);
  for (size_t i = n; i-- > 0;) {
    bool read_by_live = false;
    for (NodeId u : users[i]) read_by_live = read_by_live || reads_live[size_t(u)];
    if (derived[i] && read_by_live) {
      fill[i] = uniform_value(*known[i]);
      replace[i] = fill[i] || (ctx.constants && known[i]->numel() <= kMaxStoredElements);
    }
    reads_live[i] = !replace[i] && (!is_pure(g.nodes[i]) || read_by_live);
  }

  size_t folded = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!replace[i]) continue;
    NodeId id = NodeId(i);
    const Tensor& value = *known[i];
    NodeId with;
    if (fill[i]) {
      GraphEmitter& em = ed.emit_before(id, {id});
      Var full = em.call1("aten::full.default", {EArg(Value::int_list(value.sizes())), EArg(*fill[i])},
                          {{"dtype", EArg(value.dtype())}});
      with = em.node(full);
    } else {
      Tensor owned = value.clone();
      Node attr;
      attr.op = OpKind::GetAttr;
      attr.name = attr.target = ctx.constants->add("_folded_constant", owned, g);
      attr.meta.val = Val::of_tensor(tensor_meta_of(owned));
      with = ed.insert_before(id, std::move(attr), {id});
    }
    ed.replace_uses(id, with);
    ++folded;
  }
  if (!ed.commit()) return {};
  return {true, "folded " + std::to_string(folded) + (folded == 1 ? " node" : " nodes")};
}

}  // namespace kiln::pipeline
