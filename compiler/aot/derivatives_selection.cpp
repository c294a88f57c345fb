// Ops that pick values out of their input (max/min/median along a dim,
// kthvalue, sort, topk): the gradient goes back to the picked positions
// through the index output, which itself takes no gradient.
#include "compiler/aot/grad_context.h"
#include "compiler/aot/grad_ops.h"

namespace kiln::aot {
namespace {

// zeros(self).scatter(dim, indices, grad) (value_selecting_reduction_backward).
Var scatter_back(Emitter& e, Var g, Var self, Var indices, int64_t dim, bool keepdim) {
  Shape sizes = e.sizes(self);
  if (sizes.empty()) return g;
  dim = wrap(dim, int64_t(sizes.size()));
  if (!keepdim) {
    g = unsqueeze(e, g, dim);
    indices = unsqueeze(e, indices, dim);
  }
  return e.call1("aten::scatter.src", {zeros(e, sizes, e.dtype(g)), dim, indices, g});
}

// Ops with (values, indices) outputs reducing `dim` with `keepdim`.
void reduce_dim_grad(GradContext& x) {
  bool keepdim = x.boolean("keepdim");
  x.set("self", scatter_back(x.e, x.grad(), x.var("self"), x.out(1), x.integer("dim"), keepdim));
}
// sort and topk keep the dim.
void sort_grad(GradContext& x) {
  x.set("self", scatter_back(x.e, x.grad(), x.var("self"), x.out(1), x.integer("dim"), true));
}
void msort_grad(GradContext& x) {
  x.via([&](Emitter& e) { return std::vector<Var>{e.call("aten::sort.default", {x.var("self"), int64_t(0)})[0]}; });
}

}  // namespace

void register_selection_derivatives(DerivativeTable& t) {
  const std::vector<std::string> self{"self"};
  const std::vector<bool> values_only{true, false};
  for (const char* op : {"aten::max.dim", "aten::min.dim", "aten::median.dim", "aten::kthvalue.default"})
    t.add<reduce_dim_grad>(op, self, kSavesOutputs, values_only);
  for (const char* op : {"aten::sort.default", "aten::sort.stable", "aten::topk.default"})
    t.add<sort_grad>(op, self, kSavesOutputs, values_only);
  t.add<msort_grad>("aten::msort.default", self, kSavesInputs);
}

}  // namespace kiln::aot
