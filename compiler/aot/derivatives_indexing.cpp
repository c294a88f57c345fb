// Gathers and scatters: each is the other's transpose, so the gradient of a
// gather is a scatter-add into zeros and vice versa. Index tensors take none.
#include "compiler/aot/grad_context.h"
#include "compiler/aot/grad_ops.h"

namespace kiln::aot {
namespace {

Var zeros_of(Emitter& e, Var like_shape, DType dtype) { return zeros(e, e.sizes(like_shape), dtype); }

void gather_grad(GradContext& x) {
  Emitter& e = x.e;
  Var self = x.var("self");
  x.set("self", e.call1("aten::scatter_add.default",
                        {zeros_of(e, self, e.dtype(x.grad())), x.integer("dim"), x.var("index"), x.grad()}));
}

void scatter_src_grad(GradContext& x) {
  Emitter& e = x.e;
  int64_t dim = x.integer("dim");
  Var index = x.var("index");
  if (x.needs("self")) x.set("self", e.call1("aten::scatter.value", {x.grad(), dim, index, 0.0}));
  if (x.call.op != "aten::scatter.value" && x.needs("src"))
    x.set("src", e.call1("aten::gather.default", {x.grad(), dim, index}));
}

void scatter_add_grad(GradContext& x) {
  x.set("self", x.grad());
  if (x.needs("src")) x.set("src", x.e.call1("aten::gather.default", {x.grad(), x.integer("dim"), x.var("index")}));
}

// scatter_reduce's gradient per reduction (PyTorch's scatter_reduce_backward).
void scatter_reduce_grad(GradContext& x) {
  Emitter& e = x.e;
  Var self = x.var("self"), index = x.var("index"), src = x.var("src"), g = x.grad(), result = x.out();
  int64_t dim = x.integer("dim");
  std::string reduce = x.str("reduce");
  bool include_self = x.boolean("include_self");
  auto gather = [&](Var v) { return e.call1("aten::gather.default", {v, dim, index}); };
  auto scatter_add = [&](Var base, Var v) { return e.call1("aten::scatter_add.default", {base, dim, index, v}); };
  Var gself, gsrc;
  if (reduce == "sum") {
    gself = g;
    gsrc = gather(g);
  } else if (reduce == "mean") {
    Var n = include_self ? ones_like(e, g) : zeros_like(e, g);
    n = scatter_add(n, ones_like(e, src));
    n = masked_fill(e, n, compare(e, "eq", n, 0.0), 1.0);
    gself = div(e, g, n);
    gsrc = div(e, gather(g), gather(n));
  } else if (reduce == "amax" || reduce == "amin") {
    Var value = gather(result);
    Var self_is = compare(e, "eq", self, result), src_is = compare(e, "eq", src, value);
    Var count = scatter_add(cast(e, self_is, e.dtype(self)), cast(e, src_is, e.dtype(self)));
    Var share = div(e, g, count);
    gself = mul(e, self_is, share);
    gsrc = mul(e, src_is, gather(share));
  } else if (reduce == "prod") {
    // Products without the element itself, exact when one factor is zero.
    Var masked_self = masked_fill(e, self, compare(e, "eq", self, 0.0), 1.0);
    Var self_result = e.call1("aten::scatter_reduce.two", {masked_self, dim, index, src, Value(reduce)},
                              {{"include_self", include_self}});
    gself = div(e, mul(e, g, self_result), masked_self);
    Var src_zero = compare(e, "eq", src, 0.0);
    Var zeros_per_slot = gather(scatter_add(zeros_like(e, self), cast(e, src_zero, e.dtype(self))));
    Var single_zero = logical_and(e, src_zero, compare(e, "eq", zeros_per_slot, 1.0));
    Var masked_src = masked_fill(e, src, single_zero, 1.0);
    Var src_result = e.call1("aten::scatter_reduce.two", {self, dim, index, masked_src, Value(reduce)},
                             {{"include_self", include_self}});
    Var plain = div(e, gather(mul(e, g, result)), masked_fill(e, src, src_zero, 1.0));
    gsrc = where(e, single_zero, gather(mul(e, g, src_result)), plain);
  } else {
    KILN_FAIL("scatter_reduce: no gradient for reduce='", reduce, "'");
  }
  // Positions the reduction overwrote without reading self take no gradient there.
  if (!include_self) gself = e.call1("aten::scatter.value", {gself, dim, index, 0.0});
  if (x.needs("self")) x.set("self", gself);
  if (x.needs("src")) x.set("src", gsrc);
}

// The legacy scatter(..., reduce='add'|'multiply') forms.
void scatter_legacy_reduce_grad(GradContext& x) {
  Emitter& e = x.e;
  std::string reduce = x.str("reduce");
  int64_t dim = x.integer("dim");
  Var index = x.var("index"), g = x.grad();
  bool value_form = x.call.op == "aten::scatter.value_reduce";
  if (reduce == "add") {
    x.set("self", g);
    if (!value_form && x.needs("src")) x.set("src", e.call1("aten::gather.default", {g, dim, index}));
    return;
  }
  KILN_USER_CHECK(reduce == "multiply", "scatter: unknown reduce '", reduce, "'");
  Var self = x.var("self");
  if (value_form) {
    // Each slot was multiplied by value^k: apply the same to ones for the factor.
    Var factor = e.call1(x.call.op, {ones_like(e, self), dim, index, x.value("value")}, {{"reduce", Value(reduce)}});
    return x.set("self", mul(e, g, factor));
  }
  x.via([&](Emitter& r) {
    return std::vector<Var>{r.call1("aten::scatter_reduce.two", {self, dim, index, x.var("src"), "prod"},
                                    {{"include_self", true}})};
  });
}

void index_select_grad(GradContext& x) {
  Emitter& e = x.e;
  Var self = x.var("self");
  x.set("self", e.call1("aten::index_add.default",
                        {zeros_of(e, self, e.dtype(x.grad())), x.integer("dim"), x.var("index"), x.grad()}));
}

void index_grad(GradContext& x) {
  Emitter& e = x.e;
  Var self = x.var("self");
  x.set("self", e.call1("aten::index_put.default",
                        {zeros_of(e, self, e.dtype(x.grad())), x.arg("indices"), x.grad(), true}));
}

void index_put_grad(GradContext& x) {
  Emitter& e = x.e;
  const EArg& indices = x.arg("indices");
  if (x.needs("self")) {
    if (x.boolean("accumulate")) x.set("self", x.grad());
    else x.set("self", e.call1("aten::index_put.default", {x.grad(), indices, zeros_like(e, x.var("values")), false}));
  }
  if (x.needs("values")) x.set("values", e.call1("aten::index.Tensor", {x.grad(), indices}));
}

void index_add_grad(GradContext& x) {
  Emitter& e = x.e;
  x.set("self", x.grad());
  if (!x.needs("source")) return;
  Var index = x.var("index");
  if (e.dim(index) == 0) index = reshape(e, index, {1});
  Var g = e.call1("aten::index_select.default", {x.grad(), x.integer("dim"), index});
  // A 0-d source was added through a one-element index.
  if (e.dim(x.var("source")) == 0) g = reshape(e, g, {});
  const Value& alpha = x.value("alpha");
  x.set("source", alpha.to_double() == 1.0 ? g : mul(e, g, alpha));
}

void index_fill_grad(GradContext& x) {
  Emitter& e = x.e;
  int64_t dim = x.integer("dim");
  Var index = x.var("index");
  x.set("self", e.call1("aten::index_fill.int_Scalar", {x.grad(), dim, index, 0.0}));
  if (x.call.op == "aten::index_fill.int_Tensor" && x.needs("value")) {
    // Each filled position once, however often the index repeats it.
    Var filled = e.call1("aten::index_fill.int_Scalar", {zeros_like(e, x.grad()), dim, index, 1.0});
    x.set("value", sum_all(e, mul(e, x.grad(), filled)));
  }
}

void take_grad(GradContext& x) {
  Emitter& e = x.e;
  Var self = x.var("self");
  Shape sizes = e.sizes(self);
  int64_t n = shape_numel(sizes);
  Var index = reshape(e, x.var("index"), {-1});
  index = where(e, compare(e, "lt", index, 0.0), e.call1("aten::add.Scalar", {index, n}), index);
  Var flat = e.call1("aten::index_add.default",
                     {zeros(e, {n}, e.dtype(x.grad())), int64_t(0), index, reshape(e, x.grad(), {-1})});
  x.set("self", reshape(e, flat, sizes));
}

// Elements are laid out in the mask's row-major order, which is also how a
// boolean index_put reads its values.
void masked_select_grad(GradContext& x) {
  Emitter& e = x.e;
  Var self = x.var("self"), mask = x.var("mask");
  Shape shape = e.sizes(self), ms = e.sizes(mask);
  Shape out(std::max(shape.size(), ms.size()), 1);
  for (size_t i = 0; i < shape.size(); ++i) out[out.size() - shape.size() + i] = shape[i];
  for (size_t i = 0; i < ms.size(); ++i) {
    size_t d = out.size() - ms.size() + i;
    out[d] = std::max(out[d], ms[i]);
  }
  Var full_mask = expand(e, mask, out);
  Var placed = e.call1("aten::index_put.default",
                       {zeros(e, out, e.dtype(x.grad())), EArg::list({full_mask}), x.grad(), true});
  x.set("self", placed);
}

void embedding_grad(GradContext& x) {
  Emitter& e = x.e;
  Var weight = x.var("weight");
  int64_t num_weights = e.sizes(weight)[0];
  x.set("weight", e.call1("aten::embedding_dense_backward.default",
                          {x.grad(), x.var("indices"), num_weights, x.integer("padding_idx"),
                           x.boolean("scale_grad_by_freq")}));
}

// embedding_dense_backward is linear in grad_output: its transpose reads rows back.
void embedding_backward_grad(GradContext& x) {
  Emitter& e = x.e;
  const char* grad_name = x.call.op == "aten::embedding_backward.default" ? "grad" : "grad_output";
  Var indices = x.var("indices");
  int64_t padding_idx = x.integer("padding_idx");
  Var g = e.call1("aten::embedding.default", {x.grad(), indices});
  Var pad = unsqueeze(e, compare(e, "eq", indices, double(padding_idx)), -1);
  g = masked_fill(e, g, pad, 0.0);
  if (x.boolean("scale_grad_by_freq")) {
    int64_t n = x.integer("num_weights");
    Var flat = reshape(e, indices, {-1});
    Var counts = e.call1("aten::index_add.default",
                         {zeros(e, {n}, e.dtype(g)), int64_t(0), flat, ones_like(e, cast(e, flat, e.dtype(g)))});
    Var per = reshape(e, e.call1("aten::index_select.default", {counts, int64_t(0), flat}), e.sizes(indices));
    g = div(e, g, unsqueeze(e, per, -1));
  }
  x.set(grad_name, g);
}

}  // namespace

void register_indexing_derivatives(DerivativeTable& t) {
  const std::vector<std::string> self{"self"};
  t.add<gather_grad>("aten::gather.default", self, kSavesNothing);
  t.add<scatter_src_grad>("aten::scatter.src", {"self", "src"}, kSavesNothing);
  t.add<scatter_src_grad>("aten::scatter.value", self, kSavesNothing);
  t.add<scatter_add_grad>("aten::scatter_add.default", {"self", "src"}, kSavesNothing);
  t.add<scatter_reduce_grad>("aten::scatter_reduce.two", {"self", "src"}, kSavesBoth);
  t.add<scatter_legacy_reduce_grad>("aten::scatter.reduce", {"self", "src"}, kSavesInputs);
  t.add<scatter_legacy_reduce_grad>("aten::scatter.value_reduce", self, kSavesInputs);
  t.add<index_select_grad>("aten::index_select.default", self, kSavesNothing);
  t.add<index_grad>("aten::index.Tensor", self, kSavesNothing);
  t.add<index_grad>("aten::_unsafe_index.Tensor", self, kSavesNothing);
  for (const char* op : {"aten::index_put.default", "aten::_index_put_impl.default", "aten::_unsafe_index_put.default"})
    t.add<index_put_grad>(op, {"self", "values"}, kSavesNothing);
  t.add<index_add_grad>("aten::index_add.default", {"self", "source"}, kSavesNothing);
  t.add<index_fill_grad>("aten::index_fill.int_Scalar", self, kSavesNothing);
  t.add<index_fill_grad>("aten::index_fill.int_Tensor", {"self", "value"}, kSavesNothing);
  t.add<take_grad>("aten::take.default", self, kSavesNothing);
  t.add<masked_select_grad>("aten::masked_select.default", self, kSavesInputs);
  t.add<embedding_grad>("aten::embedding.default", {"weight"}, kSavesInputs);
  t.add<embedding_backward_grad>("aten::embedding_dense_backward.default", {"grad_output"}, kSavesInputs);
  t.add<embedding_backward_grad>("aten::embedding_backward.default", {"grad"}, kSavesInputs);
}

}  // namespace kiln::aot
