// Activations and their backward kernels, as pointwise formulas over core ops.
// 16-bit float inputs compute in float32 and round once (OpMath), as the
// kernels do.
#include <cmath>

#include "compiler/decomp/decomp_util.h"

namespace kiln::decomp {
namespace {

constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2/pi)
constexpr double kSqrtHalf = 0.70710678118654752440;     // 1/sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;   // 1/sqrt(2*pi)
constexpr double kGeluKappa = 0.044715;

Var exp(Emitter& e, Var x) { return unary(e, "exp", x); }
Var tanh(Emitter& e, Var x) { return unary(e, "tanh", x); }
Var sigmoid(Emitter& e, Var x) { return unary(e, "sigmoid", x); }
Var clamp(Emitter& e, Var x, EArg lo, EArg hi) {
  return e.call1("aten::clamp.default", {x, std::move(lo), std::move(hi)});
}

// 0.5 * x * (1 + erf(x / sqrt 2)), or the tanh approximation.
Var gelu_of(Emitter& e, Var x, bool tanh_form) {
  if (tanh_form) {
    Var cube = mul(e, mul(e, mul(e, x, x), x), kGeluKappa);
    Var t = tanh(e, mul(e, add(e, x, cube), kSqrt2OverPi));
    return mul(e, mul(e, x, 0.5), add(e, t, 1.0));
  }
  Var erf = unary(e, "erf", mul(e, x, kSqrtHalf));
  return mul(e, mul(e, x, 0.5), add(e, erf, 1.0));
}

bool gelu_tanh(const Bound& b, size_t i) {
  std::string mode = b.str(i);
  KILN_USER_CHECK(mode == "none" || mode == "tanh", "approximate argument must be either none or tanh.");
  return mode == "tanh";
}

std::vector<Var> gelu(Emitter& e, const DecompCall& c) {
  Bound b(c);
  OpMath m(e, e.dtype(b.var(0)));
  return one(m.down(gelu_of(e, m.up(b.var(0)), gelu_tanh(b, 1))));
}

std::vector<Var> silu(Emitter& e, const DecompCall& c) {
  Bound b(c);
  OpMath m(e, e.dtype(b.var(0)));
  Var x = m.up(b.var(0));
  return one(m.down(mul(e, x, sigmoid(e, x))));
}

// x * tanh(softplus(x)); softplus is decomposed in turn.
std::vector<Var> mish(Emitter& e, const DecompCall& c) {
  Bound b(c);
  OpMath m(e, e.dtype(b.var(0)));
  Var x = m.up(b.var(0));
  Var sp = e.call1("aten::softplus.default", {x});
  return one(m.down(mul(e, x, tanh(e, sp))));
}

// clamp(x + 3, 0, 6) / 6.
Var hardsigmoid_of(Emitter& e, Var x) { return div(e, clamp(e, add(e, x, 3.0), 0.0, 6.0), 6.0); }

std::vector<Var> hardsigmoid(Emitter& e, const DecompCall& c) {
  Bound b(c);
  OpMath m(e, e.dtype(b.var(0)));
  return one(m.down(hardsigmoid_of(e, m.up(b.var(0)))));
}

std::vector<Var> hardswish(Emitter& e, const DecompCall& c) {
  Bound b(c);
  OpMath m(e, e.dtype(b.var(0)));
  Var x = m.up(b.var(0));
  return one(m.down(div(e, mul(e, x, clamp(e, add(e, x, 3.0), 0.0, 6.0)), 6.0)));
}

// x > 0 ? x * scale : (exp(x * input_scale) - 1) * alpha * scale.
std::vector<Var> elu(Emitter& e, const DecompCall& c) {
  Bound b(c);
  OpMath m(e, e.dtype(b.var(0)));
  Var x = m.up(b.var(0));
  double alpha = b.real(1), scale = b.real(2), input_scale = b.real(3);
  Var negative = mul(e, unary(e, "expm1", mul(e, x, input_scale)), alpha * scale);
  Var positive = mul(e, x, scale);
  return one(m.down(where(e, compare(e, "le", x, 0.0), negative, positive)));
}

// x * beta > threshold ? x : log1p(exp(x * beta)) / beta.
std::vector<Var> softplus(Emitter& e, const DecompCall& c) {
  Bound b(c);
  OpMath m(e, e.dtype(b.var(0)));
  Var x = m.up(b.var(0));
  double beta = b.real(1), threshold = b.real(2);
  Var xb = mul(e, x, beta);
  Var soft = div(e, unary(e, "log1p", exp(e, xb)), beta);
  return one(m.down(where(e, compare(e, "gt", xb, threshold), x, soft)));
}

std::vector<Var> relu6(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(e.call1("aten::hardtanh.default", {b.var(0), int64_t(0), int64_t(6)}));
}

std::vector<Var> clamp_min(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(clamp(e, b.var(0), b[1], EArg::none()));
}
std::vector<Var> clamp_max(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(clamp(e, b.var(0), EArg::none(), b[1]));
}
std::vector<Var> clamp_min_tensor(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(e.call1("aten::clamp.Tensor", {b.var(0), b.var(1), EArg::none()}));
}
std::vector<Var> clamp_max_tensor(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(e.call1("aten::clamp.Tensor", {b.var(0), EArg::none(), b.var(1)}));
}

// x <= threshold ? value : x.
std::vector<Var> threshold(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  DType t = result_with_scalar(e.dtype(x), b.value(2));
  Var value = scalar_tensor(e, b[2], t);
  return one(where(e, compare(e, "le", x, b[1]), value, to_dtype(e, x, t)));
}

// log(x / (1 - x)), x clamped to [eps, 1 - eps] when eps is given.
std::vector<Var> logit(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  if (!is_floating(e.dtype(x))) x = to_dtype(e, x, kDefaultFloat);
  OpMath m(e, e.dtype(x));
  x = m.up(x);
  if (std::optional<double> eps = b.opt_real(1); eps && *eps >= 0) x = clamp(e, x, *eps, 1.0 - *eps);
  Var one_minus = e.call1("aten::rsub.Scalar", {x, 1.0});
  return one(m.down(unary(e, "log", div(e, x, one_minus))));
}

// ---- backward kernels: grad_output first ----

std::vector<Var> sigmoid_backward(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var g = b.var(0), y = b.var(1);
  return one(mul(e, mul(e, g, e.call1("aten::rsub.Scalar", {y, 1.0})), y));
}

std::vector<Var> tanh_backward(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var g = b.var(0), y = b.var(1);
  return one(mul(e, g, e.call1("aten::rsub.Scalar", {mul(e, y, y), 1.0})));
}

std::vector<Var> threshold_backward(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var g = b.var(0), x = b.var(1);
  return one(where_scalar_then(e, compare(e, "le", x, b[2]), 0.0, g));
}

std::vector<Var> gelu_backward(Emitter& e, const DecompCall& c) {
  Bound b(c);
  OpMath m(e, e.dtype(b.var(0)));
  Var g = m.up(b.var(0)), x = m.up(b.var(1));
  Var local;
  if (gelu_tanh(b, 2)) {
    Var x2 = mul(e, x, x);
    Var inner = mul(e, add(e, x, mul(e, mul(e, x2, x), kGeluKappa)), kSqrt2OverPi);
    Var t = tanh(e, inner);
    Var d_inner = mul(e, add(e, mul(e, x2, 3 * kGeluKappa), 1.0), kSqrt2OverPi);
    Var left = mul(e, add(e, t, 1.0), 0.5);
    Var right = mul(e, mul(e, mul(e, x, 0.5), e.call1("aten::rsub.Scalar", {mul(e, t, t), 1.0})), d_inner);
    local = add(e, left, right);
  } else {
    Var cdf = mul(e, add(e, unary(e, "erf", mul(e, x, kSqrtHalf)), 1.0), 0.5);
    Var pdf = mul(e, exp(e, mul(e, mul(e, x, x), -0.5)), kInvSqrt2Pi);
    local = add(e, cdf, mul(e, x, pdf));
  }
  return one(m.down(mul(e, g, local)));
}

std::vector<Var> silu_backward(Emitter& e, const DecompCall& c) {
  Bound b(c);
  OpMath m(e, e.dtype(b.var(0)));
  Var g = m.up(b.var(0)), x = m.up(b.var(1));
  Var s = sigmoid(e, x);
  Var local = mul(e, s, add(e, mul(e, x, e.call1("aten::rsub.Scalar", {s, 1.0})), 1.0));
  return one(m.down(mul(e, g, local)));
}

std::vector<Var> mish_backward(Emitter& e, const DecompCall& c) {
  Bound b(c);
  OpMath m(e, e.dtype(b.var(0)));
  Var g = m.up(b.var(0)), x = m.up(b.var(1));
  Var t = tanh(e, e.call1("aten::softplus.default", {x}));
  Var dt = e.call1("aten::rsub.Scalar", {mul(e, t, t), 1.0});
  Var local = add(e, t, mul(e, mul(e, x, sigmoid(e, x)), dt));
  return one(m.down(mul(e, g, local)));
}

std::vector<Var> hardsigmoid_backward(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var g = b.var(0), x = b.var(1);
  Var inside = e.call1("aten::logical_and.default", {compare(e, "gt", x, -3.0), compare(e, "lt", x, 3.0)});
  return one(where_scalar_else(e, inside, div(e, g, 6.0), 0.0));
}

std::vector<Var> hardswish_backward(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var g = b.var(0), x = b.var(1);
  Var ramp = mul(e, g, add(e, div(e, x, 3.0), 0.5));
  Var upper = where(e, compare(e, "le", x, 3.0), ramp, g);
  return one(where_scalar_then(e, compare(e, "lt", x, -3.0), 0.0, upper));
}

std::vector<Var> hardtanh_backward(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var g = b.var(0), x = b.var(1);
  Var outside = e.call1("aten::logical_or.default", {compare(e, "le", x, b[2]), compare(e, "ge", x, b[3])});
  return one(where_scalar_then(e, outside, 0.0, g));
}

std::vector<Var> leaky_relu_backward(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var g = b.var(0), x = b.var(1);
  return one(where(e, compare(e, "gt", x, 0.0), g, mul(e, g, b[2])));
}

// is_result: self_or_result holds elu's output y, and exp(x * input_scale) * alpha * scale = y + alpha * scale.
std::vector<Var> elu_backward(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var g = b.var(0), v = b.var(5);
  double alpha = b.real(1), scale = b.real(2), input_scale = b.real(3);
  bool is_result = b.boolean(4);
  Var negative;
  if (is_result) {
    negative = mul(e, mul(e, g, input_scale), add(e, v, alpha * scale));
  } else {
    negative = mul(e, mul(e, g, exp(e, mul(e, v, input_scale))), input_scale * alpha * scale);
  }
  return one(where(e, compare(e, "le", v, 0.0), negative, mul(e, g, scale)));
}

std::vector<Var> softplus_backward(Emitter& e, const DecompCall& c) {
  Bound b(c);
  OpMath m(e, e.dtype(b.var(0)));
  Var g = m.up(b.var(0)), x = m.up(b.var(1));
  double beta = b.real(2), threshold = b.real(3);
  Var xb = mul(e, x, beta);
  Var z = exp(e, xb);
  Var soft = div(e, mul(e, g, z), add(e, z, 1.0));
  return one(m.down(where(e, compare(e, "gt", xb, threshold), g, soft)));
}

}  // namespace

void add_activation_decomps(DecompTable& t) {
  t["aten::gelu.default"] = gelu;
  t["aten::silu.default"] = silu;
  t["aten::mish.default"] = mish;
  t["aten::hardsigmoid.default"] = hardsigmoid;
  t["aten::hardswish.default"] = hardswish;
  t["aten::elu.default"] = elu;
  t["aten::softplus.default"] = softplus;
  t["aten::relu6.default"] = relu6;
  t["aten::clamp_min.default"] = clamp_min;
  t["aten::clamp_max.default"] = clamp_max;
  t["aten::clamp_min.Tensor"] = clamp_min_tensor;
  t["aten::clamp_max.Tensor"] = clamp_max_tensor;
  t["aten::threshold.default"] = threshold;
  t["aten::logit.default"] = logit;
  t["aten::sigmoid_backward.default"] = sigmoid_backward;
  t["aten::tanh_backward.default"] = tanh_backward;
  t["aten::threshold_backward.default"] = threshold_backward;
  t["aten::gelu_backward.default"] = gelu_backward;
  t["aten::silu_backward.default"] = silu_backward;
  t["aten::mish_backward.default"] = mish_backward;
  t["aten::hardsigmoid_backward.default"] = hardsigmoid_backward;
  t["aten::hardswish_backward.default"] = hardswish_backward;
  t["aten::hardtanh_backward.default"] = hardtanh_backward;
  t["aten::leaky_relu_backward.default"] = leaky_relu_backward;
  t["aten::elu_backward.default"] = elu_backward;
  t["aten::softplus_backward.default"] = softplus_backward;
}

}  // namespace kiln::decomp
