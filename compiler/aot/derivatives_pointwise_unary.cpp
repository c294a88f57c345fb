// Elementwise functions of one tensor: grad times the local derivative, as
// derivatives.yaml writes them (same operand order, so float32 rounding
// follows PyTorch's).
#include <cmath>
#include <numbers>

#include "compiler/aot/grad_context.h"
#include "compiler/aot/grad_ops.h"

namespace kiln::aot {
namespace {

constexpr double kTwoOverSqrtPi = 1.1283791670955126;  // 2 / sqrt(pi)
constexpr double kHalfSqrtPi = 0.88622692545275801;    // sqrt(pi) / 2

Var self(GradContext& x) { return x.var("self"); }
Var square(Emitter& e, Var v) { return e.call1("aten::pow.Tensor_Scalar", {v, 2.0}); }

void zero_grad(GradContext& x) { x.set("self", zeros_like(x.e, x.grad())); }
void identity_grad(GradContext& x) { x.set("self", x.grad()); }

void abs_grad(GradContext& x) { x.set("self", mul(x.e, x.grad(), unary(x.e, "aten::sgn.default", self(x)))); }

void acos_grad(GradContext& x) {
  Emitter& e = x.e;
  Var s = self(x);
  Var r = unary(e, "aten::rsqrt.default", add(e, mul(e, neg(e, s), s), 1.0));
  x.set("self", mul(e, x.grad(), neg(e, r)));
}

void asin_grad(GradContext& x) {
  Emitter& e = x.e;
  Var s = self(x);
  x.set("self", mul(e, x.grad(), unary(e, "aten::rsqrt.default", add(e, mul(e, neg(e, s), s), 1.0))));
}

void acosh_grad(GradContext& x) {
  Emitter& e = x.e;
  Var s = self(x);
  x.set("self", mul(e, x.grad(), unary(e, "aten::rsqrt.default", add(e, mul(e, s, s), -1.0))));
}

void asinh_grad(GradContext& x) {
  Emitter& e = x.e;
  x.set("self", mul(e, x.grad(), unary(e, "aten::rsqrt.default", add(e, square(e, self(x)), 1.0))));
}

void atan_grad(GradContext& x) {
  Emitter& e = x.e;
  Var s = self(x);
  x.set("self", div(e, x.grad(), add(e, mul(e, s, s), 1.0)));
}

void atanh_grad(GradContext& x) {
  Emitter& e = x.e;
  x.set("self", div(e, x.grad(), rsub(e, 1.0, square(e, self(x)))));
}

void cos_grad(GradContext& x) {
  Emitter& e = x.e;
  x.set("self", mul(e, x.grad(), neg(e, unary(e, "aten::sin.default", self(x)))));
}
void cosh_grad(GradContext& x) { x.set("self", mul(x.e, x.grad(), unary(x.e, "aten::sinh.default", self(x)))); }
void sin_grad(GradContext& x) { x.set("self", mul(x.e, x.grad(), unary(x.e, "aten::cos.default", self(x)))); }
void sinh_grad(GradContext& x) { x.set("self", mul(x.e, x.grad(), unary(x.e, "aten::cosh.default", self(x)))); }
void tan_grad(GradContext& x) {
  Emitter& e = x.e;
  x.set("self", mul(e, x.grad(), add(e, square(e, x.out()), 1.0)));
}
void tanh_grad(GradContext& x) { x.set("self", x.e.call1("aten::tanh_backward.default", {x.grad(), x.out()})); }
void sigmoid_grad(GradContext& x) {
  x.set("self", x.e.call1("aten::sigmoid_backward.default", {x.grad(), x.out()}));
}

void erf_grad(GradContext& x) {
  Emitter& e = x.e;
  Var ex = unary(e, "aten::exp.default", neg(e, square(e, self(x))));
  x.set("self", mul(e, mul(e, ex, kTwoOverSqrtPi), x.grad()));
}
void erfc_grad(GradContext& x) {
  Emitter& e = x.e;
  Var ex = unary(e, "aten::exp.default", neg(e, square(e, self(x))));
  x.set("self", mul(e, mul(e, ex, -kTwoOverSqrtPi), x.grad()));
}
void erfinv_grad(GradContext& x) {
  Emitter& e = x.e;
  Var ex = unary(e, "aten::exp.default", square(e, x.out()));
  x.set("self", mul(e, mul(e, ex, kHalfSqrtPi), x.grad()));
}

void exp_grad(GradContext& x) { x.set("self", mul(x.e, x.grad(), x.out())); }
void exp2_grad(GradContext& x) { x.set("self", mul(x.e, mul(x.e, x.grad(), x.out()), std::numbers::ln2)); }
void expm1_grad(GradContext& x) { x.set("self", mul(x.e, x.grad(), add(x.e, x.out(), 1.0))); }

void log_grad(GradContext& x) { x.set("self", div(x.e, x.grad(), self(x))); }
void log2_grad(GradContext& x) { x.set("self", div(x.e, x.grad(), mul(x.e, self(x), std::numbers::ln2))); }
void log10_grad(GradContext& x) { x.set("self", div(x.e, x.grad(), mul(x.e, self(x), std::numbers::ln10))); }
void log1p_grad(GradContext& x) { x.set("self", div(x.e, x.grad(), add(x.e, self(x), 1.0))); }

void neg_grad(GradContext& x) { x.set("self", neg(x.e, x.grad())); }
void reciprocal_grad(GradContext& x) {
  Emitter& e = x.e;
  x.set("self", mul(e, neg(e, x.grad()), mul(e, x.out(), x.out())));
}
void rsqrt_grad(GradContext& x) {
  Emitter& e = x.e;
  Var cube = e.call1("aten::pow.Tensor_Scalar", {x.out(), 3.0});
  x.set("self", mul(e, mul(e, x.grad(), -0.5), cube));
}
void sqrt_grad(GradContext& x) { x.set("self", div(x.e, x.grad(), mul(x.e, x.out(), 2.0))); }
void nan_to_num_grad(GradContext& x) {
  x.set("self", mul(x.e, x.grad(), unary(x.e, "aten::isfinite.default", self(x))));
}

}  // namespace

void register_pointwise_unary_derivatives(DerivativeTable& t) {
  const std::vector<std::string> self{"self"};
  for (const char* op : {"aten::ceil.default", "aten::floor.default", "aten::round.default", "aten::round.decimals",
                         "aten::trunc.default", "aten::sign.default", "aten::sgn.default"})
    t.add<zero_grad>(op, self, kSavesNothing);
  t.add<identity_grad>("aten::positive.default", self, kSavesNothing);
  t.add<identity_grad>("aten::frac.default", self, kSavesNothing);
  t.add<abs_grad>("aten::abs.default", self, kSavesInputs);
  t.add<acos_grad>("aten::acos.default", self, kSavesInputs);
  t.add<asin_grad>("aten::asin.default", self, kSavesInputs);
  t.add<acosh_grad>("aten::acosh.default", self, kSavesInputs);
  t.add<asinh_grad>("aten::asinh.default", self, kSavesInputs);
  t.add<atan_grad>("aten::atan.default", self, kSavesInputs);
  t.add<atanh_grad>("aten::atanh.default", self, kSavesInputs);
  t.add<cos_grad>("aten::cos.default", self, kSavesInputs);
  t.add<cosh_grad>("aten::cosh.default", self, kSavesInputs);
  t.add<sin_grad>("aten::sin.default", self, kSavesInputs);
  t.add<sinh_grad>("aten::sinh.default", self, kSavesInputs);
  t.add<tan_grad>("aten::tan.default", self, kSavesOutputs);
  t.add<tanh_grad>("aten::tanh.default", self, kSavesOutputs);
  t.add<sigmoid_grad>("aten::sigmoid.default", self, kSavesOutputs);
  t.add<erf_grad>("aten::erf.default", self, kSavesInputs);
  t.add<erfc_grad>("aten::erfc.default", self, kSavesInputs);
  t.add<erfinv_grad>("aten::erfinv.default", self, kSavesOutputs);
  t.add<exp_grad>("aten::exp.default", self, kSavesOutputs);
  t.add<exp2_grad>("aten::exp2.default", self, kSavesOutputs);
  t.add<expm1_grad>("aten::expm1.default", self, kSavesOutputs);
  t.add<log_grad>("aten::log.default", self, kSavesInputs);
  t.add<log2_grad>("aten::log2.default", self, kSavesInputs);
  t.add<log10_grad>("aten::log10.default", self, kSavesInputs);
  t.add<log1p_grad>("aten::log1p.default", self, kSavesInputs);
  t.add<neg_grad>("aten::neg.default", self, kSavesNothing);
  t.add<reciprocal_grad>("aten::reciprocal.default", self, kSavesOutputs);
  t.add<rsqrt_grad>("aten::rsqrt.default", self, kSavesOutputs);
  t.add<sqrt_grad>("aten::sqrt.default", self, kSavesOutputs);
  t.add<nan_to_num_grad>("aten::nan_to_num.default", self, kSavesInputs);
}

}  // namespace kiln::aot
