// Reductions in terms of sum, mean, amax/amin and any: variance with a
// correction, std, logsumexp, norms, all, count_nonzero.
#include <cmath>
#include <limits>

#include "compiler/decomp/decomp_util.h"

namespace kiln::decomp {
namespace {

struct VarResult {
  Var var, mean;  // mean kept at size-1 dims
};

// sum((x - mean)^2) / max(n - correction, 0), in float32 for 16-bit inputs.
VarResult variance(Emitter& e, Var x, const std::vector<int64_t>& dims, double correction, bool keepdim) {
  OpMath om(e, e.dtype(x));
  Var xc = om.up(x);
  VarResult r;
  r.mean = mean(e, xc, dims, true);
  Var d = sub(e, xc, r.mean);
  Var s = sum(e, mul(e, d, d), dims, keepdim);
  double n = double(numel_of(e.sizes(x), dims));
  r.var = om.down(div(e, s, std::max(n - correction, 0.0)));
  r.mean = om.down(keepdim ? r.mean : squeeze_dims(e, r.mean, dims));
  return r;
}

// The three spellings of the arguments: (dim?, *, correction?, keepdim), (unbiased), (dim?, unbiased, keepdim).
enum class VarForm { Correction, Unbiased, Dim };

VarResult variance_call(Emitter& e, const DecompCall& c, VarForm form) {
  Bound b(c);
  Var x = b.var(0);
  const int64_t nd = e.dim(x);
  switch (form) {
    case VarForm::Correction: {
      double correction = b.is_none(2) ? 1.0 : b.real(2);
      return variance(e, x, reduction_dims(b, 1, nd), correction, b.boolean(3));
    }
    case VarForm::Unbiased:
      return variance(e, x, all_dims(nd), b.boolean(1) ? 1.0 : 0.0, false);
    case VarForm::Dim:
      return variance(e, x, reduction_dims(b, 1, nd), b.boolean(2) ? 1.0 : 0.0, b.boolean(3));
  }
  return {};
}

template <VarForm F>
std::vector<Var> var_op(Emitter& e, const DecompCall& c) {
  return one(variance_call(e, c, F).var);
}
template <VarForm F>
std::vector<Var> std_op(Emitter& e, const DecompCall& c) {
  return one(unary(e, "sqrt", variance_call(e, c, F).var));
}
template <VarForm F>
std::vector<Var> var_mean_op(Emitter& e, const DecompCall& c) {
  VarResult r = variance_call(e, c, F);
  return {r.var, r.mean};
}
template <VarForm F>
std::vector<Var> std_mean_op(Emitter& e, const DecompCall& c) {
  VarResult r = variance_call(e, c, F);
  return {unary(e, "sqrt", r.var), r.mean};
}

// log(sum(exp(x - m))) + m with m the maximum, taken as 0 where it is infinite.
std::vector<Var> logsumexp(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  if (!is_floating(e.dtype(x))) x = to_dtype(e, x, kDefaultFloat);
  std::vector<int64_t> dims = reduction_dims(b, 1, e.dim(x));
  bool keepdim = b.boolean(2);
  Var m = amax(e, x, dims, true);
  m = where_scalar_then(e, unary(e, "isinf", m), 0.0, m);
  Var s = sum(e, unary(e, "exp", sub(e, x, m)), dims, keepdim);
  return one(add(e, unary(e, "log", s), keepdim ? m : squeeze_dims(e, m, dims)));
}

std::vector<Var> sum_all(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  EKwargs kw;
  if (!b.is_none(1)) kw.emplace_back("dtype", b[1]);
  return one(e.call1("aten::sum.dim_IntList", {x, all_dims(e.dim(x)), false}, kw));
}

// all = not any(not x); a uint8 input gives uint8, as in ATen.
Var all_of(Emitter& e, Var x, Var any_of_not) {
  Var r = unary(e, "logical_not", any_of_not);
  return e.dtype(x) == DType::UInt8 ? to_dtype(e, r, DType::UInt8) : r;
}
std::vector<Var> all(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  return one(all_of(e, x, e.call1("aten::any.default", {unary(e, "logical_not", x)})));
}
std::vector<Var> all_dim(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  return one(all_of(e, x, e.call1("aten::any.dim", {unary(e, "logical_not", x), b[1], b[2]})));
}
std::vector<Var> all_dims_op(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  return one(all_of(e, x, e.call1("aten::any.dims", {unary(e, "logical_not", x), b[1], b[2]})));
}

Var count_nonzero_of(Emitter& e, Var x, const std::vector<int64_t>& dims) {
  return sum(e, compare(e, "ne", x, int64_t(0)), dims, false);
}
std::vector<Var> count_nonzero(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  std::vector<int64_t> dims =
      b.is_none(1) ? all_dims(e.dim(x)) : std::vector<int64_t>{wrap_dim(b.integer(1), e.dim(x))};
  return one(count_nonzero_of(e, x, dims));
}
std::vector<Var> count_nonzero_dims(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  return one(count_nonzero_of(e, x, reduction_dims(b, 1, e.dim(x))));
}

// The p-norm over dims: sum |x|^p ^ (1/p), with p = 0, 1, 2, +-inf spelled out.
Var norm_of(Emitter& e, Var x, double p, const std::vector<int64_t>& dims, bool keepdim) {
  const double inf = std::numeric_limits<double>::infinity();
  Var a = unary(e, "abs", x);
  if (p == inf) return amax(e, a, dims, keepdim);
  if (p == -inf) return e.call1("aten::amin.default", {a, dims, keepdim});
  if (p == 0) return to_dtype(e, sum(e, compare(e, "ne", x, 0.0), dims, keepdim), e.dtype(x));
  if (p == 1) return sum(e, a, dims, keepdim);
  if (p == 2) return unary(e, "sqrt", sum(e, mul(e, x, x), dims, keepdim));
  Var s = sum(e, e.call1("aten::pow.Tensor_Scalar", {a, p}), dims, keepdim);
  return e.call1("aten::pow.Tensor_Scalar", {s, 1.0 / p});
}
std::vector<Var> norm_scalar(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  return one(norm_of(e, x, b.real(1), all_dims(e.dim(x)), false));
}
std::vector<Var> norm_dim(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  return one(norm_of(e, x, b.opt_real(1).value_or(2.0), reduction_dims(b, 2, e.dim(x)), b.boolean(3)));
}

std::vector<Var> max_all(Emitter& e, const DecompCall& c) {
  Var x = Bound(c).var(0);
  return one(amax(e, x, all_dims(e.dim(x)), false));
}
std::vector<Var> min_all(Emitter& e, const DecompCall& c) {
  Var x = Bound(c).var(0);
  return one(e.call1("aten::amin.default", {x, all_dims(e.dim(x)), false}));
}

}  // namespace

void add_reduction_decomps(DecompTable& t) {
  t["aten::var.correction"] = var_op<VarForm::Correction>;
  t["aten::var.default"] = var_op<VarForm::Unbiased>;
  t["aten::var.dim"] = var_op<VarForm::Dim>;
  t["aten::std.correction"] = std_op<VarForm::Correction>;
  t["aten::std.default"] = std_op<VarForm::Unbiased>;
  t["aten::std.dim"] = std_op<VarForm::Dim>;
  t["aten::var_mean.correction"] = var_mean_op<VarForm::Correction>;
  t["aten::var_mean.default"] = var_mean_op<VarForm::Unbiased>;
  t["aten::var_mean.dim"] = var_mean_op<VarForm::Dim>;
  t["aten::std_mean.correction"] = std_mean_op<VarForm::Correction>;
  t["aten::std_mean.default"] = std_mean_op<VarForm::Unbiased>;
  t["aten::std_mean.dim"] = std_mean_op<VarForm::Dim>;
  t["aten::logsumexp.default"] = logsumexp;
  t["aten::sum.default"] = sum_all;
  t["aten::all.default"] = all;
  t["aten::all.dim"] = all_dim;
  t["aten::all.dims"] = all_dims_op;
  t["aten::count_nonzero.default"] = count_nonzero;
  t["aten::count_nonzero.dim_IntList"] = count_nonzero_dims;
  t["aten::norm.Scalar"] = norm_scalar;
  t["aten::norm.ScalarOpt_dim"] = norm_dim;
  t["aten::max.default"] = max_all;
  t["aten::min.default"] = min_all;
}

}  // namespace kiln::decomp
