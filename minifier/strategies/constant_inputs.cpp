// Constant inputs: an input whose elements are all one value becomes an
// aten.full node with that value, so the repro needs no tensor file for it.
// Single elements are left alone: every one is "constant", and a one-element
// input says as much as a full node (shrink-shapes makes many of them).
#include <map>

#include "minifier/strategies/strategies.h"

namespace kiln::minify {

namespace {

std::optional<double> constant_value(const Tensor& t) {
  if (t.numel() < 2) return std::nullopt;
  std::vector<double> v = to_doubles(t);
  for (double x : v)
    if (!(x == v[0])) return std::nullopt;  // NaN is never constant here
  return v[0];
}

Arg scalar_arg(double v, DType d) {
  if (d == DType::Bool) return Arg::boolean(v != 0);
  if (!is_floating(d)) return Arg::integer(int64_t(v));
  return Arg::real(v);
}

class ConstantInputs : public Strategy {
 public:
  const char* name() const override { return "constant-inputs"; }

  bool run(ReductionContext& ctx) override {
    const Candidate& cur = ctx.current();
    std::vector<size_t> constants;  // placeholder indices
    for (size_t i = 0; i < cur.inputs.size(); ++i)
      if (constant_value(cur.inputs[i])) constants.push_back(i);
    if (constants.empty()) return false;
    auto build = [constants](const Candidate& base, const std::vector<size_t>& keep) -> std::optional<Candidate> {
      std::vector<bool> replace(constants.size(), true);
      for (size_t k : keep) replace[k] = false;
      Candidate c = base;
      std::vector<NodeId> ph = placeholders(c.graph);
      std::map<std::string, Tensor> input_of;
      for (size_t i = 0; i < ph.size(); ++i) input_of[c.graph[ph[i]].name] = c.inputs[i];
      bool changed = false;
      for (size_t k = 0; k < constants.size(); ++k) {
        if (!replace[k]) continue;
        const Tensor& t = c.inputs[constants[k]];
        Node& n = c.graph[ph[constants[k]]];
        std::vector<Arg> sizes;
        for (int64_t s : t.sizes()) sizes.push_back(Arg::integer(s));
        n.op = OpKind::CallFunction;
        n.target = "aten::full.default";
        n.args = {Arg::list(std::move(sizes)), scalar_arg(*constant_value(t), t.dtype())};
        n.kwargs = {{"dtype", Arg::dtype(std::string(dtype_name(t.dtype())))}, {"device", Arg::device("cpu")}};
        input_of.erase(n.name);
        changed = true;
      }
      if (!changed) return std::nullopt;
      reorder_placeholders_first(c);
      c.inputs.clear();
      for (const Node& n : c.graph.nodes)
        if (n.op == OpKind::Placeholder) c.inputs.push_back(input_of.at(n.name));
      return c;
    };
    return reduce_by_ddmin(ctx, constants.size(), build, [](size_t removed, size_t) {
      return "replaced " + std::to_string(removed) + " constant inputs by aten.full";
    });
  }
};

}  // namespace

std::unique_ptr<Strategy> make_constant_inputs() { return std::make_unique<ConstantInputs>(); }

}  // namespace kiln::minify
