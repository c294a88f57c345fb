// Reductions and scans: the gradient of a reduced value is broadcast back over
// the dims it came from (restore_reduced_dims, then expand or a pointwise op).
#include <cmath>

#include "compiler/aot/grad_context.h"
#include "compiler/aot/grad_ops.h"

namespace kiln::aot {
namespace {

// The dims argument of a reduction; None or [] means every dim.
std::vector<int64_t> dims_of(const GradContext& x, const char* name, int64_t ndim) {
  std::optional<std::vector<int64_t>> d = x.opt_ints(name);
  return reduced_dims(d ? *d : std::vector<int64_t>{}, ndim);
}

// grad of a reduction over `dims`, broadcast back to the input's shape.
Var expand_back(Emitter& e, Var g, Var input, const std::vector<int64_t>& dims, bool keepdim) {
  Shape sizes = e.sizes(input);
  return expand(e, restore_reduced_dims(e, g, dims, keepdim, int64_t(sizes.size())), sizes);
}

void sum_grad(GradContext& x) {
  Var s = x.var("self");
  if (x.call.op == "aten::sum.default") return x.set("self", expand(x.e, x.grad(), x.e.sizes(s)));
  x.set("self", expand_back(x.e, x.grad(), s, dims_of(x, "dim", x.e.dim(s)), x.boolean("keepdim")));
}

void mean_grad(GradContext& x) {
  Emitter& e = x.e;
  Var s = x.var("self");
  std::vector<int64_t> dims = x.call.op == "aten::mean.default" ? reduced_dims({}, e.dim(s)) : dims_of(x, "dim", e.dim(s));
  bool keepdim = x.call.op == "aten::mean.default" ? false : x.boolean("keepdim");
  double n = double(reduced_count(e.sizes(s), dims));
  x.set("self", div(e, expand_back(e, x.grad(), s, dims, keepdim), n));
}

// var/std over `dims` with `correction`, keepdim or not, as one description.
struct Moments {
  std::vector<int64_t> dims;
  double correction = 1;
  bool keepdim = false;
};
Moments moments_of(const GradContext& x) {
  Moments m;
  int64_t ndim = x.e.dim(x.var("self"));
  std::string_view overload = std::string_view(x.call.op).substr(x.call.op.rfind('.') + 1);
  if (overload == "default") {  // var(self, unbiased)
    m.dims = reduced_dims({}, ndim);
    m.correction = x.boolean("unbiased") ? 1 : 0;
  } else if (overload == "dim") {
    m.dims = dims_of(x, "dim", ndim);
    m.correction = x.boolean("unbiased") ? 1 : 0;
    m.keepdim = x.boolean("keepdim");
  } else {  // correction
    m.dims = dims_of(x, "dim", ndim);
    m.correction = x.is_none("correction") ? 1 : x.real("correction");
    m.keepdim = x.boolean("keepdim");
  }
  return m;
}

// d var / d self, for the gradient `g` of the variance.
Var var_backward(Emitter& e, Var g, Var self, const Moments& m) {
  double dof = double(reduced_count(e.sizes(self), m.dims)) - m.correction;
  g = restore_reduced_dims(e, g, m.dims, m.keepdim, e.dim(self));
  Var mean = e.call1("aten::mean.dim", {self, m.dims, true});
  // dof <= 0 has no variance to differentiate: NaN, as PyTorch gives.
  double scale = dof > 0 ? 2.0 / dof : NAN;
  return mul(e, mul(e, g, scale), sub(e, self, mean));
}
Var mean_backward(Emitter& e, Var g, Var self, const Moments& m) {
  double n = double(reduced_count(e.sizes(self), m.dims));
  return div(e, expand_back(e, g, self, m.dims, m.keepdim), n);
}
// d std = d var / (2 std), zero where std is zero.
Var std_to_var_grad(Emitter& e, Var g, Var std) {
  Var gv = div(e, g, mul(e, std, 2.0));
  return masked_fill(e, gv, compare(e, "eq", std, 0.0), 0.0);
}

void var_grad(GradContext& x) {
  Moments m = moments_of(x);
  x.set("self", var_backward(x.e, x.grad(), x.var("self"), m));
}
void std_grad(GradContext& x) {
  Moments m = moments_of(x);
  x.set("self", var_backward(x.e, std_to_var_grad(x.e, x.grad(), x.out(0)), x.var("self"), m));
}
void var_mean_grad(GradContext& x) {
  Emitter& e = x.e;
  Moments m = moments_of(x);
  Var s = x.var("self");
  bool is_std = x.call.op.rfind("aten::std_mean", 0) == 0;
  std::optional<Var> total;
  if (auto g = x.grad(0)) total = var_backward(e, is_std ? std_to_var_grad(e, *g, x.out(0)) : *g, s, m);
  if (auto g = x.grad(1)) {
    Var gm = mean_backward(e, *g, s, m);
    total = total ? add(e, *total, gm) : gm;
  }
  x.set("self", total);
}

// Product of all entries but one along `dim`, without dividing (so zeros work):
// exclusive cumprods from both ends.
Var prod_others(Emitter& e, Var input, int64_t dim) {
  Shape sizes = e.sizes(input);
  int64_t n = sizes[size_t(dim)];
  Shape one = sizes;
  one[size_t(dim)] = 1;
  Var ones = e.call1("aten::ones.default", {one}, {{"dtype", e.dtype(input)}});
  Var head = e.call1("aten::narrow.default", {input, dim, int64_t(0), n - 1});
  Var tail = e.call1("aten::flip.default", {e.call1("aten::narrow.default", {input, dim, int64_t(1), n - 1}), std::vector<int64_t>{dim}});
  Var before = e.call1("aten::cumprod.default", {e.call1("aten::cat.default", {EArg::list({ones, head}), dim}), dim});
  Var after_rev = e.call1("aten::cumprod.default", {e.call1("aten::cat.default", {EArg::list({ones, tail}), dim}), dim});
  Var after = e.call1("aten::flip.default", {after_rev, std::vector<int64_t>{dim}});
  return mul(e, before, after);
}

void prod_grad(GradContext& x) {
  Emitter& e = x.e;
  Var s = x.var("self");
  if (e.dim(s) == 0) return x.set("self", x.grad());
  if (x.call.op == "aten::prod.default") {
    Shape sizes = e.sizes(s);
    Var flat = reshape(e, s, {-1});
    Var others = reshape(e, prod_others(e, flat, 0), sizes);
    return x.set("self", mul(e, x.grad(), others));
  }
  int64_t dim = wrap(x.integer("dim"), e.dim(s));
  Var g = x.boolean("keepdim") ? x.grad() : unsqueeze(e, x.grad(), dim);
  x.set("self", mul(e, g, prod_others(e, s, dim)));
}

// amax / amin: the gradient is shared evenly among the entries equal to the extremum.
void amax_grad(GradContext& x) {
  Emitter& e = x.e;
  Var s = x.var("self");
  std::vector<int64_t> dims = reduced_dims(x.ints("dim"), e.dim(s));
  bool keepdim = x.boolean("keepdim");
  Var g = restore_reduced_dims(e, x.grad(), dims, keepdim, e.dim(s));
  Var r = restore_reduced_dims(e, x.out(), dims, keepdim, e.dim(s));
  Var mask = compare(e, "eq", r, s);
  Var count = sum(e, mask, dims, true);
  x.set("self", mul(e, div(e, g, count), mask));
}

// max() / min() / median() of everything: shared evenly among the entries equal to it.
void evenly_distribute_grad(GradContext& x) {
  Emitter& e = x.e;
  Var s = x.var("self"), v = x.out();
  Var both_nan = logical_and(e, unary(e, "aten::isnan.default", s), unary(e, "aten::isnan.default", v));
  Var mask = logical_or(e, compare(e, "eq", s, v), both_nan);
  x.set("self", mul(e, mask, div(e, x.grad(), sum_all(e, mask))));
}

void logsumexp_grad(GradContext& x) {
  Emitter& e = x.e;
  Var s = x.var("self");
  std::vector<int64_t> dims = reduced_dims(x.ints("dim"), e.dim(s));
  bool keepdim = x.boolean("keepdim");
  Var g = restore_reduced_dims(e, x.grad(), dims, keepdim, e.dim(s));
  Var r = restore_reduced_dims(e, x.out(), dims, keepdim, e.dim(s));
  x.set("self", mul(e, g, unary(e, "aten::exp.default", sub(e, s, r))));
}

void cumsum_grad(GradContext& x) {
  Emitter& e = x.e;
  Var s = x.var("self");
  Var g = cast(e, x.grad(), e.dtype(s));
  if (e.dim(s) == 0) return x.set("self", g);
  int64_t dim = wrap(x.integer("dim"), e.dim(s));
  std::vector<int64_t> d{dim};
  Var rev = e.call1("aten::flip.default", {g, d});
  x.set("self", e.call1("aten::flip.default", {e.call1("aten::cumsum.default", {rev, dim}), d}));
}

// cumprod without dividing by the input (exact at zeros): moving `dim` last,
// grad_k = prod_{i<k} x_i * sum_{j>=k} g_j prod_{k<i<=j} x_i, with the inner
// products from a cumprod over a [n, n] triangle.
void cumprod_grad(GradContext& x) {
  Emitter& e = x.e;
  Var s = x.var("self");
  Var g = cast(e, x.grad(), e.dtype(s));
  if (e.dim(s) == 0) return x.set("self", g);
  int64_t dim = wrap(x.integer("dim"), e.dim(s));
  int64_t n = e.sizes(s)[size_t(dim)];
  Var xs = e.call1("aten::movedim.int", {s, dim, int64_t(-1)});
  Var gs = e.call1("aten::movedim.int", {g, dim, int64_t(-1)});
  Var idx = e.call1("aten::arange.default", {n}, {{"dtype", DType::Int64}});
  Var row = unsqueeze(e, idx, 1), col = unsqueeze(e, idx, 0);  // [k, 1], [1, j]
  Var upto_k = compare(e, "le", col, row);                      // j <= k
  Var tri = where(e, upto_k, 1.0, unsqueeze(e, xs, -2));        // [..., k, j]
  Var inner = where(e, compare(e, "lt", col, row), 0.0, e.call1("aten::cumprod.default", {tri, int64_t(-1)}));
  Var weighted = sum(e, mul(e, inner, unsqueeze(e, gs, -2)), {-1}, false);
  Shape one = e.sizes(xs);
  one.back() = 1;
  Var ones = e.call1("aten::ones.default", {one}, {{"dtype", e.dtype(s)}});
  Var head = e.call1("aten::narrow.default", {xs, int64_t(-1), int64_t(0), n - 1});
  Var before = e.call1("aten::cumprod.default", {e.call1("aten::cat.default", {EArg::list({ones, head}), int64_t(-1)}), int64_t(-1)});
  x.set("self", e.call1("aten::movedim.int", {mul(e, before, weighted), int64_t(-1), dim}));
}

void norm_grad(GradContext& x) {
  Emitter& e = x.e;
  Var s = x.var("self");
  int64_t ndim = e.dim(s);
  std::optional<double> po = x.opt_real("p");
  double p = po ? *po : 2.0;
  std::vector<int64_t> dims;
  bool keepdim = false;
  if (x.call.op == "aten::norm.ScalarOpt_dim") {
    dims = reduced_dims(x.ints("dim"), ndim);
    keepdim = x.boolean("keepdim");
  } else {
    dims = reduced_dims({}, ndim);
  }
  Var g = restore_reduced_dims(e, x.grad(), dims, keepdim, ndim);
  Var norm = restore_reduced_dims(e, x.out(), dims, keepdim, ndim);
  Var sgn = unary(e, "aten::sgn.default", s);
  Var abs = unary(e, "aten::abs.default", s);
  Var norm_zero = compare(e, "eq", norm, 0.0);
  if (p == 0.0) return x.set("self", zeros_like(e, s));
  if (p == 1.0) return x.set("self", mul(e, sgn, g));
  if (p == 2.0) return x.set("self", mul(e, g, masked_fill(e, div(e, s, norm), norm_zero, 0.0)));
  if (std::isinf(p)) {
    Var both_nan = logical_and(e, unary(e, "aten::isnan.default", s), unary(e, "aten::isnan.default", norm));
    Var is_max = cast(e, logical_or(e, compare(e, "eq", abs, norm), both_nan), e.dtype(norm));
    Var count = sum(e, is_max, dims, true);
    return x.set("self", mul(e, mul(e, sgn, is_max), div(e, g, count)));
  }
  if (p < 1.0) {
    Var scaled = mul(e, sgn, masked_fill(e, e.call1("aten::pow.Tensor_Scalar", {abs, p - 1}), compare(e, "eq", s, 0.0), 0.0));
    return x.set("self", mul(e, mul(e, scaled, g), e.call1("aten::pow.Tensor_Scalar", {norm, 1 - p})));
  }
  Var scaled = p < 2.0 ? mul(e, sgn, e.call1("aten::pow.Tensor_Scalar", {abs, p - 1}))
                       : mul(e, s, e.call1("aten::pow.Tensor_Scalar", {abs, p - 2}));
  Var scale = masked_fill(e, div(e, g, e.call1("aten::pow.Tensor_Scalar", {norm, p - 1})), norm_zero, 0.0);
  x.set("self", mul(e, scaled, scale));
}

}  // namespace

void register_reduction_derivatives(DerivativeTable& t) {
  const std::vector<std::string> self{"self"};
  t.add<sum_grad>("aten::sum.default", self, kSavesNothing);
  t.add<sum_grad>("aten::sum.dim_IntList", self, kSavesNothing);
  t.add<mean_grad>("aten::mean.default", self, kSavesNothing);
  t.add<mean_grad>("aten::mean.dim", self, kSavesNothing);
  for (const char* op : {"aten::var.default", "aten::var.dim", "aten::var.correction"})
    t.add<var_grad>(op, self, kSavesInputs);
  for (const char* op : {"aten::std.default", "aten::std.dim", "aten::std.correction"})
    t.add<std_grad>(op, self, kSavesBoth);
  for (const char* op : {"aten::var_mean.default", "aten::var_mean.dim", "aten::var_mean.correction",
                         "aten::std_mean.default", "aten::std_mean.dim", "aten::std_mean.correction"})
    t.add<var_mean_grad>(op, self, kSavesBoth);
  t.add<prod_grad>("aten::prod.default", self, kSavesInputs);
  t.add<prod_grad>("aten::prod.dim_int", self, kSavesInputs);
  t.add<amax_grad>("aten::amax.default", self, kSavesBoth);
  t.add<amax_grad>("aten::amin.default", self, kSavesBoth);
  for (const char* op : {"aten::max.default", "aten::min.default", "aten::median.default"})
    t.add<evenly_distribute_grad>(op, self, kSavesBoth);
  t.add<logsumexp_grad>("aten::logsumexp.default", self, kSavesBoth);
  t.add<cumsum_grad>("aten::cumsum.default", self, kSavesNothing);
  t.add<cumprod_grad>("aten::cumprod.default", self, kSavesInputs);
  t.add<norm_grad>("aten::norm.Scalar", self, kSavesBoth);
  t.add<norm_grad>("aten::norm.ScalarOpt_dim", self, kSavesBoth);
}

}  // namespace kiln::aot
