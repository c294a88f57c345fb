// Pointwise ops that are other pointwise ops with arguments moved, a select
// (where) around a core op, or a short formula.
#include <cmath>
#include <limits>

#include "compiler/decomp/decomp_util.h"

namespace kiln::decomp {
namespace {

// rsub(self, other, alpha) = other - alpha * self.
std::vector<Var> rsub_scalar(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  const Value& alpha = b.value(2);
  Var scaled = neg(e, x);
  if (alpha.to_double() != 1.0) scaled = mul(e, scaled, b[2]);
  return one(add(e, scaled, b[1]));
}
std::vector<Var> rsub_tensor(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(e.call1("aten::sub.Tensor", {b.var(1), b.var(0)}, {{"alpha", b[2]}}));
}

std::vector<Var> floor_divide(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(e.call1("aten::div.Tensor_mode", {b.var(0), b.var(1)}, {{"rounding_mode", "floor"}}));
}
std::vector<Var> floor_divide_scalar(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(e.call1("aten::div.Scalar_mode", {b.var(0), b[1]}, {{"rounding_mode", "floor"}}));
}

// x * log(y), 0 where x == 0, NaN where y is NaN.
Var xlogy_of(Emitter& e, Var x, Var y) {
  Var product = mul(e, x, unary(e, "log", y));
  Var zeroed = where_scalar_then(e, compare(e, "eq", x, 0.0), 0.0, product);
  return where_scalar_then(e, unary(e, "isnan", y), std::numeric_limits<double>::quiet_NaN(), zeroed);
}
DType float_of(DType t) { return is_floating(t) ? t : kDefaultFloat; }

std::vector<Var> xlogy(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(xlogy_of(e, b.var(0), b.var(1)));
}
std::vector<Var> xlogy_scalar_other(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  return one(xlogy_of(e, x, scalar_tensor(e, b[1], float_of(e.dtype(x)))));
}
std::vector<Var> xlogy_scalar_self(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var y = b.var(1);
  return one(xlogy_of(e, scalar_tensor(e, b[0], float_of(e.dtype(y))), y));
}

bool is_one(const Value& v) { return v.to_double() == 1.0; }

// self + value * t1 * t2, in ATen's order of operations.
std::vector<Var> addcmul(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var t1 = b.var(1);
  if (!is_one(b.value(3))) t1 = mul(e, t1, b[3]);
  return one(add(e, b.var(0), mul(e, t1, b.var(2))));
}
std::vector<Var> addcdiv(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var t1 = b.var(1);
  if (!is_one(b.value(3))) t1 = mul(e, t1, b[3]);
  return one(add(e, b.var(0), div(e, t1, b.var(2))));
}

// Small weights step from self, large ones back from end, so both ends are exact.
std::vector<Var> lerp_scalar(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var from = b.var(0), to = b.var(1);
  double w = b.real(2);
  Var diff = sub(e, to, from);
  if (std::abs(w) < 0.5) return one(add(e, from, mul(e, diff, w)));
  return one(sub(e, to, mul(e, diff, 1.0 - w)));
}
std::vector<Var> lerp_tensor(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var from = b.var(0), to = b.var(1), w = b.var(2);
  Var diff = sub(e, to, from);
  Var low = add(e, from, mul(e, w, diff));
  Var high = sub(e, to, mul(e, diff, e.call1("aten::rsub.Scalar", {w, 1.0})));
  return one(where(e, compare(e, "lt", unary(e, "abs", w), 0.5), low, high));
}

std::vector<Var> masked_fill_scalar(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  return one(where(e, b.var(1), scalar_tensor(e, b[2], e.dtype(x)), x));
}
std::vector<Var> masked_fill_tensor(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  return one(where(e, b.var(1), to_dtype(e, b.var(2), e.dtype(x)), x));
}

// where with Python scalars: the scalars take the dtype promotion gives them.
DType scalar_pair_dtype(const Value& a, const Value& b) {
  if (a.is_float() || b.is_float()) return kDefaultFloat;
  if (a.is_int() || b.is_int()) return DType::Int64;
  return DType::Bool;
}
std::vector<Var> where_scalar(Emitter& e, const DecompCall& c) {
  Bound b(c);
  DType t = scalar_pair_dtype(b.value(1), b.value(2));
  return one(where(e, b.var(0), scalar_tensor(e, b[1], t), scalar_tensor(e, b[2], t)));
}
std::vector<Var> where_scalar_other(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(1);
  DType t = result_with_scalar(e.dtype(x), b.value(2));
  return one(where(e, b.var(0), to_dtype(e, x, t), scalar_tensor(e, b[2], t)));
}
std::vector<Var> where_scalar_self(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var y = b.var(2);
  DType t = result_with_scalar(e.dtype(y), b.value(1));
  return one(where(e, b.var(0), scalar_tensor(e, b[1], t), to_dtype(e, y, t)));
}

std::vector<Var> frac(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  return one(sub(e, x, unary(e, "trunc", x)));
}

std::vector<Var> isfinite(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  if (!is_floating(e.dtype(x))) return one(e.call1("aten::eq.Tensor", {x, x}));
  Var bad = e.call1("aten::logical_or.default", {unary(e, "isinf", x), unary(e, "isnan", x)});
  return one(unary(e, "logical_not", bad));
}

// NaN -> nan, +inf -> posinf, -inf -> neginf (defaults 0 and the dtype's extremes).
std::vector<Var> nan_to_num(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  DType t = e.dtype(x);
  if (!is_floating(t)) return one(e.call1("aten::clone.default", {x}));
  double inf = std::numeric_limits<double>::infinity();
  double nan = b.opt_real(1).value_or(0.0);
  double posinf = b.opt_real(2).value_or(max_finite(t)), neginf = b.opt_real(3).value_or(-max_finite(t));
  Var r = where_scalar_then(e, unary(e, "isnan", x), nan, x);
  r = where_scalar_then(e, compare(e, "eq", x, inf), posinf, r);
  return one(where_scalar_then(e, compare(e, "eq", x, -inf), neginf, r));
}

std::vector<Var> sgn(Emitter& e, const DecompCall& c) { return one(unary(e, "sign", Bound(c).var(0))); }
std::vector<Var> positive(Emitter& e, const DecompCall& c) { return one(unary(e, "alias", Bound(c).var(0))); }

std::vector<Var> exp2(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(e.call1("aten::pow.Scalar", {2.0, b.var(0)}));
}

// fmax/fmin: NaN loses to a number.
std::vector<Var> fmax_or_fmin(Emitter& e, const DecompCall& c, const char* op) {
  Bound b(c);
  Var x = b.var(0), y = b.var(1);
  Var m = e.call1(op, {x, y});
  if (!is_floating(e.dtype(m))) return one(m);
  Var r = where(e, unary(e, "isnan", y), to_dtype(e, x, e.dtype(m)), m);
  return one(where(e, unary(e, "isnan", x), to_dtype(e, y, e.dtype(m)), r));
}
std::vector<Var> fmax(Emitter& e, const DecompCall& c) { return fmax_or_fmin(e, c, "aten::maximum.default"); }
std::vector<Var> fmin(Emitter& e, const DecompCall& c) { return fmax_or_fmin(e, c, "aten::minimum.default"); }

// round(x * 10^d) / 10^d; negative d rounds to tens, hundreds, ...
std::vector<Var> round_decimals(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  int64_t d = b.integer(1);
  if (d == 0 || !is_floating(e.dtype(x))) return one(unary(e, "round", x));
  double scale = std::pow(10.0, double(d < 0 ? -d : d));
  if (e.dtype(x) != DType::Float64) scale = double(float(scale));
  if (d < 0) return one(mul(e, unary(e, "round", div(e, x, scale)), scale));
  return one(div(e, unary(e, "round", mul(e, x, scale)), scale));
}

// remainder(Scalar self, Tensor other): the scalar as a tensor of the promoted dtype.
std::vector<Var> remainder_scalar_tensor(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var y = b.var(1);
  DType t = result_with_scalar(e.dtype(y), b.value(0));
  return one(e.call1("aten::remainder.Tensor", {scalar_tensor(e, b[0], t), y}));
}

// The shift operators are bitwise_left_shift / bitwise_right_shift under
// another name (same promotion, same kernel); a Python-number self becomes a
// tensor of the dtype the pair promotes to.
template <const char* Op>
std::vector<Var> shift_tensor(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(e.call1(std::string(Op) + ".Tensor", {b.var(0), b.var(1)}));
}
template <const char* Op>
std::vector<Var> shift_scalar(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(e.call1(std::string(Op) + ".Tensor_Scalar", {b.var(0), b[1]}));
}
template <const char* Op>
std::vector<Var> shift_scalar_tensor(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var y = b.var(1);
  DType t = result_with_scalar(e.dtype(y), b.value(0));
  return one(e.call1(std::string(Op) + ".Tensor", {scalar_tensor(e, b[0], t), y}));
}
constexpr char kLeftShift[] = "aten::bitwise_left_shift";
constexpr char kRightShift[] = "aten::bitwise_right_shift";

}  // namespace

void add_pointwise_decomps(DecompTable& t) {
  t["aten::__lshift__.Tensor"] = shift_tensor<kLeftShift>;
  t["aten::__lshift__.Scalar"] = shift_scalar<kLeftShift>;
  t["aten::bitwise_left_shift.Scalar_Tensor"] = shift_scalar_tensor<kLeftShift>;
  t["aten::__rshift__.Tensor"] = shift_tensor<kRightShift>;
  t["aten::__rshift__.Scalar"] = shift_scalar<kRightShift>;
  t["aten::bitwise_right_shift.Scalar_Tensor"] = shift_scalar_tensor<kRightShift>;
  t["aten::rsub.Scalar"] = rsub_scalar;
  t["aten::rsub.Tensor"] = rsub_tensor;
  t["aten::floor_divide.default"] = floor_divide;
  t["aten::floor_divide.Scalar"] = floor_divide_scalar;
  t["aten::xlogy.Tensor"] = xlogy;
  t["aten::xlogy.Scalar_Other"] = xlogy_scalar_other;
  t["aten::xlogy.Scalar_Self"] = xlogy_scalar_self;
  t["aten::addcmul.default"] = addcmul;
  t["aten::addcdiv.default"] = addcdiv;
  t["aten::lerp.Scalar"] = lerp_scalar;
  t["aten::lerp.Tensor"] = lerp_tensor;
  t["aten::masked_fill.Scalar"] = masked_fill_scalar;
  t["aten::masked_fill.Tensor"] = masked_fill_tensor;
  t["aten::where.Scalar"] = where_scalar;
  t["aten::where.ScalarOther"] = where_scalar_other;
  t["aten::where.ScalarSelf"] = where_scalar_self;
  t["aten::frac.default"] = frac;
  t["aten::isfinite.default"] = isfinite;
  t["aten::nan_to_num.default"] = nan_to_num;
  t["aten::sgn.default"] = sgn;
  t["aten::positive.default"] = positive;
  t["aten::exp2.default"] = exp2;
  t["aten::fmax.default"] = fmax;
  t["aten::fmin.default"] = fmin;
  t["aten::round.decimals"] = round_decimals;
  t["aten::remainder.Scalar_Tensor"] = remainder_scalar_tensor;
}

}  // namespace kiln::decomp
