// Elementwise functions of two or three operands. Broadcasting is undone by
// GradContext::set (sum_to the input's shape), type promotion by its cast.
#include <cmath>

#include "compiler/aot/grad_context.h"
#include "compiler/aot/grad_ops.h"

namespace kiln::aot {
namespace {

// grad * alpha, skipping the multiply when alpha is 1 (maybe_multiply).
Var scaled(Emitter& e, Var g, const Value& alpha) {
  return alpha.to_double() == 1.0 ? g : mul(e, g, alpha);
}
// value / t elementwise.
Var scalar_over(Emitter& e, double value, Var t) {
  Var r = unary(e, "aten::reciprocal.default", t);
  return value == 1.0 ? r : mul(e, r, value);
}

void add_tensor_grad(GradContext& x) {
  x.set("self", x.grad());
  if (x.needs("other")) x.set("other", scaled(x.e, x.grad(), x.value("alpha")));
}
void add_scalar_grad(GradContext& x) { x.set("self", x.grad()); }
void sub_tensor_grad(GradContext& x) {
  x.set("self", x.grad());
  if (x.needs("other")) x.set("other", scaled(x.e, neg(x.e, x.grad()), x.value("alpha")));
}
void rsub_tensor_grad(GradContext& x) {
  if (x.needs("self")) x.set("self", scaled(x.e, neg(x.e, x.grad()), x.value("alpha")));
  x.set("other", x.grad());
}
void rsub_scalar_grad(GradContext& x) { x.set("self", scaled(x.e, neg(x.e, x.grad()), x.value("alpha"))); }

void mul_tensor_grad(GradContext& x) {
  if (x.needs("self")) x.set("self", mul(x.e, x.grad(), x.var("other")));
  if (x.needs("other")) x.set("other", mul(x.e, x.grad(), x.var("self")));
}
void mul_scalar_grad(GradContext& x) { x.set("self", mul(x.e, x.grad(), x.value("other"))); }

bool rounds(const GradContext& x) { return x.opt_str("rounding_mode").has_value(); }

void div_tensor_grad(GradContext& x) {
  Emitter& e = x.e;
  // Rounded division is piecewise constant: zero gradient for both operands.
  bool zero = x.call.op == "aten::div.Tensor_mode" && rounds(x);
  if (x.needs("self")) x.set("self", zero ? zeros_like(e, x.grad()) : div(e, x.grad(), x.var("other")));
  if (x.needs("other")) {
    Var s = x.var("self"), o = x.var("other");
    x.set("other", zero ? zeros_like(e, x.grad()) : mul(e, neg(e, x.grad()), div(e, div(e, s, o), o)));
  }
}
void div_scalar_grad(GradContext& x) {
  bool zero = x.call.op == "aten::div.Scalar_mode" && rounds(x);
  x.set("self", zero ? zeros_like(x.e, x.grad()) : div(x.e, x.grad(), x.real("other")));
}
void zero_grads(GradContext& x) {
  x.set("self", zeros_like(x.e, x.grad()));
  if (x.call.op == "aten::floor_divide.default") x.set("other", zeros_like(x.e, x.grad()));
}

void identity_self_grad(GradContext& x) { x.set("self", x.grad()); }
// fmod / remainder: d/dother (self - other * q) = -q, q the rounded quotient.
void modulo_tensor_grad(GradContext& x) {
  Emitter& e = x.e;
  x.set("self", x.grad());
  if (x.needs("other")) {
    const char* mode = x.call.op == "aten::fmod.Tensor" ? "trunc" : "floor";
    Var q = e.call1("aten::div.Tensor_mode", {x.var("self"), x.var("other")}, {{"rounding_mode", mode}});
    x.set("other", mul(e, neg(e, x.grad()), q));
  }
}
void pow_tensor_scalar_grad(GradContext& x) {
  Emitter& e = x.e;
  double p = x.real("exponent");
  if (p == 0.0) return x.set("self", zeros_like(e, x.var("self")));
  Var powed = e.call1("aten::pow.Tensor_Scalar", {x.var("self"), p - 1.0});
  x.set("self", mul(e, x.grad(), mul(e, powed, p)));
}
void pow_tensor_tensor_grad(GradContext& x) {
  Emitter& e = x.e;
  Var s = x.var("self"), p = x.var("exponent");
  if (x.needs("self")) {
    Var powed = e.call1("aten::pow.Tensor_Tensor", {s, add(e, p, -1.0)});
    Var local = mul(e, p, powed);
    x.set("self", where(e, compare(e, "eq", p, 0.0), 0.0, mul(e, x.grad(), local)));
  }
  if (x.needs("exponent")) {
    // 0 ** p has derivative 0 in p for p >= 0 (log(0) would give NaN).
    Var at_zero = logical_and(e, compare(e, "eq", s, 0.0), compare(e, "ge", p, 0.0));
    Var local = mul(e, x.out(), unary(e, "aten::log.default", cast(e, s, e.dtype(x.out()))));
    x.set("exponent", mul(e, x.grad(), where(e, at_zero, 0.0, local)));
  }
}
void pow_scalar_grad(GradContext& x) {
  Emitter& e = x.e;
  double base = x.real("self");
  Var p = x.var("exponent");
  if (base == 0.0) {
    Var local = where(e, compare(e, "ge", p, 0.0), 0.0, mul(e, x.out(), -INFINITY));
    return x.set("exponent", mul(e, x.grad(), local));
  }
  x.set("exponent", mul(e, x.grad(), mul(e, x.out(), std::log(base))));
}

void atan2_grad(GradContext& x) {
  Emitter& e = x.e;
  Var s = x.var("self"), o = x.var("other");
  Var recip = unary(e, "aten::reciprocal.default", add(e, mul(e, s, s), mul(e, o, o)));
  if (x.needs("self")) x.set("self", mul(e, mul(e, x.grad(), o), recip));
  if (x.needs("other")) x.set("other", mul(e, mul(e, x.grad(), neg(e, s)), recip));
}
void hypot_grad(GradContext& x) {
  Emitter& e = x.e;
  if (x.needs("self")) x.set("self", div(e, mul(e, x.grad(), x.var("self")), x.out()));
  if (x.needs("other")) x.set("other", div(e, mul(e, x.grad(), x.var("other")), x.out()));
}
void copysign_grad(GradContext& x) {
  Emitter& e = x.e;
  Var s = x.var("self");
  Var ratio = masked_fill(e, div(e, x.out(), s), compare(e, "eq", s, 0.0), 0.0);
  x.set("self", mul(e, x.grad(), ratio));
  if (x.call.op == "aten::copysign.Tensor" && x.needs("other")) x.set("other", zeros_like(e, x.var("other")));
}

void xlogy_tensor_grad(GradContext& x) {
  Emitter& e = x.e;
  Var s = x.var("self"), o = x.var("other");
  if (x.needs("self")) {
    Var g = e.call1("aten::xlogy.Tensor", {x.grad(), o});
    x.set("self", masked_fill(e, g, logical_and(e, compare(e, "eq", s, 0.0), compare(e, "le", o, 0.0)), 0.0));
  }
  if (x.needs("other")) x.set("other", div(e, mul(e, x.grad(), s), o));
}
void xlogy_scalar_other_grad(GradContext& x) {
  Emitter& e = x.e;
  double o = x.real("other");
  Var g = e.call1("aten::xlogy.Scalar_Other", {x.grad(), o});
  if (!(o > 0.0)) g = masked_fill(e, g, compare(e, "eq", x.var("self"), 0.0), 0.0);
  x.set("self", g);
}
void xlogy_scalar_self_grad(GradContext& x) {
  Emitter& e = x.e;
  x.set("other", div(e, mul(e, x.grad(), x.real("self")), x.var("other")));
}

// maximum / minimum split the gradient evenly on ties.
void extremum_grad(GradContext& x, const char* self_loses) {
  Emitter& e = x.e;
  Var s = x.var("self"), o = x.var("other");
  Var tied = where(e, compare(e, "eq", s, o), div(e, x.grad(), 2.0), x.grad());
  const char* other_loses = std::string_view(self_loses) == "lt" ? "gt" : "lt";
  if (x.needs("self")) x.set("self", masked_fill(e, tied, compare(e, self_loses, s, o), 0.0));
  if (x.needs("other")) x.set("other", masked_fill(e, tied, compare(e, other_loses, s, o), 0.0));
}
void maximum_grad(GradContext& x) { extremum_grad(x, "lt"); }
void minimum_grad(GradContext& x) { extremum_grad(x, "gt"); }
// fmax / fmin prefer the non-NaN operand and give ties to self.
void fextremum_grad(GradContext& x, const char* self_wins) {
  Emitter& e = x.e;
  Var s = x.var("self"), o = x.var("other");
  Var wins = logical_or(e, compare(e, self_wins, s, o), unary(e, "aten::isnan.default", o));
  if (x.needs("self")) x.set("self", masked_fill(e, x.grad(), logical_not(e, wins), 0.0));
  if (x.needs("other")) x.set("other", masked_fill(e, x.grad(), wins, 0.0));
}
void fmax_grad(GradContext& x) { fextremum_grad(x, "ge"); }
void fmin_grad(GradContext& x) { fextremum_grad(x, "le"); }

void addcdiv_grad(GradContext& x) {
  Emitter& e = x.e;
  double value = x.real("value");
  Var t1 = x.var("tensor1"), t2 = x.var("tensor2");
  x.set("self", x.grad());
  if (x.needs("tensor1")) x.set("tensor1", mul(e, x.grad(), scalar_over(e, value, t2)));
  if (x.needs("tensor2"))
    x.set("tensor2", mul(e, neg(e, x.grad()), div(e, mul(e, t1, value), mul(e, t2, t2))));
}
void addcmul_grad(GradContext& x) {
  Emitter& e = x.e;
  const Value& value = x.value("value");
  x.set("self", x.grad());
  if (x.needs("tensor1")) x.set("tensor1", mul(e, x.grad(), mul(e, x.var("tensor2"), value)));
  if (x.needs("tensor2")) x.set("tensor2", mul(e, x.grad(), mul(e, x.var("tensor1"), value)));
}
// prims::fma: a * b + c rounded once; its gradient is that of the unfused
// expression. Decompositions emit it (grid_sampler_2d's), and the joint graph
// of a decomposed region differentiates through it.
void fma_grad(GradContext& x) {
  Emitter& e = x.e;
  if (x.needs("a")) x.set("a", mul(e, x.grad(), x.var("b")));
  if (x.needs("b")) x.set("b", mul(e, x.grad(), x.var("a")));
  x.set("c", x.grad());
}
void lerp_scalar_grad(GradContext& x) {
  double w = x.real("weight");
  if (x.needs("self")) x.set("self", mul(x.e, x.grad(), 1.0 - w));
  if (x.needs("end")) x.set("end", mul(x.e, x.grad(), w));
}
void lerp_tensor_grad(GradContext& x) {
  Emitter& e = x.e;
  Var w = x.var("weight");
  if (x.needs("self")) x.set("self", mul(e, x.grad(), rsub(e, 1.0, w)));
  if (x.needs("end")) x.set("end", mul(e, x.grad(), w));
  if (x.needs("weight")) x.set("weight", mul(e, x.grad(), sub(e, x.var("end"), x.var("self"))));
}

void masked_fill_grad(GradContext& x) {
  Emitter& e = x.e;
  Var mask = x.var("mask");
  if (x.needs("self")) x.set("self", masked_fill(e, x.grad(), mask, 0.0));
  if (x.call.op == "aten::masked_fill.Tensor" && x.needs("value"))
    x.set("value", sum_all(e, where(e, mask, x.grad(), 0.0)));
}
void where_grad(GradContext& x) {
  Emitter& e = x.e;
  Var cond = x.var("condition");
  if (x.arg("self").kind == EArg::Kind::Var && x.needs("self")) x.set("self", where(e, cond, x.grad(), 0.0));
  if (x.arg("other").kind == EArg::Kind::Var && x.needs("other")) x.set("other", where(e, cond, 0.0, x.grad()));
}

}  // namespace

void register_pointwise_binary_derivatives(DerivativeTable& t) {
  const std::vector<std::string> self{"self"}, both{"self", "other"};
  t.add<add_tensor_grad>("aten::add.Tensor", both, kSavesNothing);
  t.add<add_scalar_grad>("aten::add.Scalar", self, kSavesNothing);
  t.add<sub_tensor_grad>("aten::sub.Tensor", both, kSavesNothing);
  t.add<add_scalar_grad>("aten::sub.Scalar", self, kSavesNothing);
  t.add<rsub_tensor_grad>("aten::rsub.Tensor", both, kSavesNothing);
  t.add<rsub_scalar_grad>("aten::rsub.Scalar", self, kSavesNothing);
  t.add<mul_tensor_grad>("aten::mul.Tensor", both, kSavesInputs);
  t.add<mul_scalar_grad>("aten::mul.Scalar", self, kSavesNothing);
  t.add<div_tensor_grad>("aten::div.Tensor", both, kSavesInputs);
  t.add<div_tensor_grad>("aten::div.Tensor_mode", both, kSavesInputs);
  t.add<div_scalar_grad>("aten::div.Scalar", self, kSavesNothing);
  t.add<div_scalar_grad>("aten::div.Scalar_mode", self, kSavesNothing);
  t.add<zero_grads>("aten::floor_divide.default", both, kSavesNothing);
  t.add<zero_grads>("aten::floor_divide.Scalar", self, kSavesNothing);
  t.add<identity_self_grad>("aten::fmod.Scalar", self, kSavesNothing);
  t.add<identity_self_grad>("aten::remainder.Scalar", self, kSavesNothing);
  t.add<modulo_tensor_grad>("aten::fmod.Tensor", both, kSavesInputs);
  t.add<modulo_tensor_grad>("aten::remainder.Tensor", both, kSavesInputs);
  t.add<pow_tensor_scalar_grad>("aten::pow.Tensor_Scalar", self, kSavesInputs);
  t.add<pow_tensor_tensor_grad>("aten::pow.Tensor_Tensor", {"self", "exponent"}, kSavesBoth);
  t.add<pow_scalar_grad>("aten::pow.Scalar", {"exponent"}, kSavesBoth);
  t.add<atan2_grad>("aten::atan2.default", both, kSavesInputs);
  t.add<hypot_grad>("aten::hypot.default", both, kSavesBoth);
  t.add<copysign_grad>("aten::copysign.Tensor", both, kSavesBoth);
  t.add<copysign_grad>("aten::copysign.Scalar", self, kSavesBoth);
  t.add<xlogy_tensor_grad>("aten::xlogy.Tensor", both, kSavesInputs);
  t.add<xlogy_scalar_other_grad>("aten::xlogy.Scalar_Other", self, kSavesInputs);
  t.add<xlogy_scalar_self_grad>("aten::xlogy.Scalar_Self", {"other"}, kSavesInputs);
  t.add<maximum_grad>("aten::maximum.default", both, kSavesInputs);
  t.add<minimum_grad>("aten::minimum.default", both, kSavesInputs);
  t.add<fmax_grad>("aten::fmax.default", both, kSavesInputs);
  t.add<fmin_grad>("aten::fmin.default", both, kSavesInputs);
  t.add<addcdiv_grad>("aten::addcdiv.default", {"self", "tensor1", "tensor2"}, kSavesInputs);
  t.add<addcmul_grad>("aten::addcmul.default", {"self", "tensor1", "tensor2"}, kSavesInputs);
  t.add<fma_grad>("prims::fma.default", {"a", "b", "c"}, kSavesInputs);
  t.add<lerp_scalar_grad>("aten::lerp.Scalar", {"self", "end"}, kSavesNothing);
  t.add<lerp_tensor_grad>("aten::lerp.Tensor", {"self", "end", "weight"}, kSavesInputs);
  t.add<masked_fill_grad>("aten::masked_fill.Scalar", self, kSavesInputs);
  t.add<masked_fill_grad>("aten::masked_fill.Tensor", {"self", "value"}, kSavesInputs);
  t.add<where_grad>("aten::where.self", both, kSavesInputs);
  t.add<where_grad>("aten::where.ScalarOther", self, kSavesInputs);
  t.add<where_grad>("aten::where.ScalarSelf", {"other"}, kSavesInputs);
}

}  // namespace kiln::aot
