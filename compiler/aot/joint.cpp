#include "compiler/aot/joint.h"

#include <map>
#include <set>
#include <string>

#include "compiler/aot/derivatives.h"
#include "compiler/aot/grad_ops.h"
#include "compiler/aot/graph_replay.h"
#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/emitter.h"

namespace kiln::aot {

namespace {

using pipeline::GraphEmitter;

// Ops whose floating-point result carries no gradient although a tensor
// input does: they read only shapes or cut the graph on purpose. Their
// derivative table has no entry, so without this list a gradient reaching
// them would be reported as a missing formula.
bool cuts_gradient(const std::string& target) {
  static const std::set<std::string> ops = {
      "aten::detach.default",    "aten::zeros_like.default", "aten::ones_like.default", "aten::empty_like.default",
      "aten::full_like.default", "aten::rand_like.default",  "aten::randn_like.default", "aten::bernoulli.p",
      "aten::new_empty.default", "aten::new_empty_strided.default", "aten::new_full.default",
      "aten::new_ones.default",  "aten::new_zeros.default",
  };
  return ops.count(target) > 0;
}

bool floating_val(const Val& v) {
  if (!v.is_tensor()) return false;
  std::optional<DType> dt = dtype_from_name(v.tensor.dtype);
  return dt && is_floating(*dt);
}

// Which forward nodes hold a value a gradient can flow into from a primal
// requiring grad (PyTorch's requires_grad propagation).
std::vector<bool> propagate_requires_grad(const Graph& g, const std::vector<bool>& primal_rg) {
  std::vector<bool> rg(g.size(), false);
  size_t next_primal = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.op == OpKind::Placeholder) {
      rg[i] = primal_rg.at(next_primal++);
      continue;
    }
    if (n.op == OpKind::Output) continue;
    KILN_USER_CHECK(n.op == OpKind::CallFunction, "node ", n.name, " is a ", op_kind_name(n.op),
                    "; a joint graph is built from an ATen graph of call_function nodes");
    if (n.target == "operator.getitem") {
      NodeId src = n.args.at(0).node_id();
      const DerivativeDef* def = find_derivative(g[src].target);
      size_t idx = size_t(n.args.at(1).i);
      bool differentiable = floating_val(n.meta.val);
      if (differentiable && def)
        differentiable = output_is_differentiable(*def, idx, *dtype_from_name(n.meta.val.tensor.dtype));
      rg[i] = rg[size_t(src)] && differentiable;
      continue;
    }
    bool any = false;
    for_each_input(n, [&](NodeId in) { any = any || rg[size_t(in)]; });
    bool floating = n.meta.val.is_tensor() ? floating_val(n.meta.val) : true;
    if (const DerivativeDef* def = find_derivative(n.target); def && n.meta.val.is_tensor() && floating)
      floating = output_is_differentiable(*def, 0, *dtype_from_name(n.meta.val.tensor.dtype));
    rg[i] = any && floating && !cuts_gradient(n.target);
  }
  return rg;
}

struct ForwardCall {
  GradCall call;
  const Node* node = nullptr;
  bool requires_grad = false;
};

// Removes nodes nothing reads (the formulas compute gradients of every
// floating-point input, also those of primals that do not require grad).
void remove_dead(JointGraph& j) {
  Graph& g = j.graph;
  auto users = compute_users(g);
  std::vector<bool> live(g.size(), false), remove(g.size(), false);
  for (size_t i = g.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    if (n.op != OpKind::CallFunction) {
      live[i] = true;
      continue;
    }
    for (NodeId u : users[i]) live[i] = live[i] || live[size_t(u)];
    remove[i] = !live[i];
  }
  NodeId removed_before = 0;
  for (NodeId i = 0; i < j.first_backward_node; ++i) removed_before += remove[size_t(i)];
  j.first_backward_node -= removed_before;
  remove_nodes(g, remove);
}

}  // namespace

Expected<JointGraph> build_joint(const Graph& fwd, const JointOptions& options) {
  try {
    JointGraph j;
    std::vector<NodeId> placeholders;
    for (size_t i = 0; i < fwd.size(); ++i)
      if (fwd.nodes[i].op == OpKind::Placeholder) placeholders.push_back(NodeId(i));
    j.num_primals = placeholders.size();
    if (options.requires_grad.empty()) {
      for (NodeId p : placeholders) j.requires_grad.push_back(floating_val(fwd[p].meta.val));
    } else {
      KILN_USER_CHECK(options.requires_grad.size() == placeholders.size(), "requires_grad has ",
                      options.requires_grad.size(), " entries for ", placeholders.size(), " placeholders");
      j.requires_grad = options.requires_grad;
      for (size_t i = 0; i < placeholders.size(); ++i)
        KILN_USER_CHECK(!j.requires_grad[i] || floating_val(fwd[placeholders[i]].meta.val), "placeholder ",
                        fwd[placeholders[i]].name, " requires grad but is not a floating-point tensor");
    }
    std::vector<bool> rg = propagate_requires_grad(fwd, j.requires_grad);
    std::vector<NodeId> outs = forward_outputs(fwd);
    j.num_forward_outputs = outs.size();
    for (size_t k = 0; k < outs.size(); ++k)
      if (rg[size_t(outs[k])]) j.tangent_of_output.push_back(k);
    j.num_tangents = j.tangent_of_output.size();

    Graph& g = j.graph;
    g.class_name = "inner_f";
    g.pytree_args = {"primals", "tangents"};
    g.pytree_out = true;
    g.expanded_def = true;
    GraphEmitter em(g);
    std::vector<Var> primals;
    for (size_t i = 0; i < placeholders.size(); ++i) {
      const Node& p = fwd[placeholders[i]];
      Var v = em.placeholder("primals_" + std::to_string(i + 1), meta_tensor(p.meta.val, p.name));
      Node& made = g[em.node(v)];
      made.meta.desc = "PlainAOTInput(idx=" + std::to_string(i) + ")";
      made.meta.from = {p.name};
      made.meta.scope = p.meta.scope;  // a parameter stays in its module
      primals.push_back(v);
    }
    std::vector<Var> tangents;
    for (size_t k = 0; k < j.num_tangents; ++k) {
      size_t out_idx = j.tangent_of_output[k];
      const Node& o = fwd[outs[out_idx]];
      Var t = em.placeholder("tangents_" + std::to_string(k + 1), meta_tensor(o.meta.val, o.name));
      g[em.node(t)].meta.desc = "TangentAOTInput(output=PlainAOTOutput(idx=" + std::to_string(out_idx) + "))";
      tangents.push_back(t);
    }

    auto stamp_scope = [&](size_t from, const std::string& scope) {
      for (size_t i = from; i < g.size(); ++i) g.nodes[i].meta.scope = scope;
    };
    Replay forward = replay_graph(em, fwd, primals);
    const std::vector<Var>& var_of = forward.var_of;
    std::vector<ForwardCall> calls;
    for (ReplayedCall& rc : forward.calls) {
      ForwardCall fc;
      fc.node = &fwd[rc.node];
      fc.requires_grad = rg[size_t(rc.node)];
      fc.call = std::move(rc.call);
      calls.push_back(std::move(fc));
    }
    j.first_backward_node = NodeId(g.size());

    // Back-propagation: gradients reaching one value from several uses are
    // summed with aten::add.Tensor, in the order the uses are walked.
    std::set<int32_t> differentiable_vars;
    for (size_t i = 0; i < fwd.size(); ++i)
      if (rg[i] && var_of[i].valid()) differentiable_vars.insert(var_of[i].id);
    for (const ForwardCall& fc : calls)
      if (fc.requires_grad)
        for (Var o : fc.call.outputs)
          if (o.valid()) differentiable_vars.insert(o.id);
    std::map<int32_t, Var> acc;
    auto accumulate = [&](Var v, Var gr) {
      auto [it, fresh] = acc.emplace(v.id, gr);
      if (!fresh) it->second = add(em, it->second, gr);
    };
    for (size_t k = 0; k < tangents.size(); ++k)
      accumulate(var_of[size_t(outs[j.tangent_of_output[k]])], tangents[k]);
    for (auto c = calls.rbegin(); c != calls.rend(); ++c) {
      if (!c->requires_grad) continue;
      GradList gouts;
      bool any = false;
      for (Var o : c->call.outputs) {
        auto it = o.valid() ? acc.find(o.id) : acc.end();
        gouts.push_back(it == acc.end() ? std::nullopt : std::optional<Var>(it->second));
        any = any || it != acc.end();
      }
      if (!any) continue;
      KILN_USER_CHECK(find_derivative(c->call.op), "no derivative formula for ", c->call.op, " (node ", c->node->name,
                      "), which lies on a differentiable path");
      em.set_origin(c->node->meta.stack, {c->node->name});
      size_t before = g.size();
      c->call.kept_gradients = &differentiable_vars;
      GradList gins = differentiate(em, c->call, gouts);
      std::vector<Var> ins = tensor_inputs(c->call);
      for (size_t k = 0; k < ins.size() && k < gins.size(); ++k)
        if (gins[k] && differentiable_vars.count(ins[k].id)) accumulate(ins[k], *gins[k]);
      stamp_scope(before, c->node->meta.scope);
    }

    Node out;
    out.op = OpKind::Output;
    out.name = "output";
    out.target = "output";
    std::vector<Arg> items;
    for (size_t k = 0; k < outs.size(); ++k) {
      items.push_back(Arg::node(em.node(var_of[size_t(outs[k])])));
      out.meta.output_descs.push_back("PlainAOTOutput(idx=" + std::to_string(k) + ")");
    }
    for (size_t i = 0; i < primals.size(); ++i) {
      auto it = acc.find(primals[i].id);
      if (j.requires_grad[i] && it != acc.end()) {
        items.push_back(Arg::node(em.node(it->second)));
        out.meta.output_descs.push_back("GradAOTOutput(grad_of=PlainAOTInput(idx=" + std::to_string(i) + "))");
      } else {
        items.push_back(Arg::none());
        out.meta.output_descs.push_back("None");
      }
    }
    out.args = {Arg::list(std::move(items))};
    g.add(std::move(out));
    remove_dead(j);
    return j;
  } catch (const Error& e) {
    return Status::error(std::string("joint graph: ") + e.what());
  }
}

}  // namespace kiln::aot
