// Activations and clamps, through ATen's dedicated *_backward kernels where
// PyTorch uses them (so joint graphs show the same nodes), and the second
// derivatives of those kernels (double backward), mostly through their
// decompositions.
#include <cmath>

#include "compiler/aot/grad_context.h"
#include "compiler/aot/grad_ops.h"

namespace kiln::aot {
namespace {

// ---- clamps: the subgradient 1 at the bounds, as PyTorch chooses ----

void clamp_grad(GradContext& x) {
  Emitter& e = x.e;
  Var s = x.var("self");
  bool tensors = x.call.op == "aten::clamp.Tensor";
  auto bound_ok = [&](const char* name, const char* how) -> std::optional<Var> {
    if (x.is_none(name)) return std::nullopt;
    return tensors ? compare(e, how, s, x.var(name)) : compare(e, how, s, x.real(name));
  };
  std::optional<Var> lo = bound_ok("min", "ge"), hi = bound_ok("max", "le");
  if (x.needs("self")) {
    if (lo && hi) x.set("self", where(e, logical_and(e, *lo, *hi), x.grad(), 0.0));
    else if (lo || hi) x.set("self", where(e, lo ? *lo : *hi, x.grad(), 0.0));
    else x.set("self", x.grad());
  }
  if (!tensors) return;
  std::optional<Var> mn = x.opt_var("min"), mx = x.opt_var("max");
  if (mn && mx) {
    if (x.needs("min"))
      x.set("min", where(e, logical_and(e, compare(e, "lt", s, *mn), compare(e, "lt", *mn, *mx)), x.grad(), 0.0));
    if (x.needs("max"))
      x.set("max", where(e, logical_or(e, compare(e, "gt", s, *mx), compare(e, "lt", *mx, *mn)), x.grad(), 0.0));
  } else if (mn && x.needs("min")) {
    x.set("min", where(e, compare(e, "lt", s, *mn), x.grad(), 0.0));
  } else if (mx && x.needs("max")) {
    x.set("max", where(e, compare(e, "gt", s, *mx), x.grad(), 0.0));
  }
}

void clamp_min_grad(GradContext& x) {
  Emitter& e = x.e;
  Var s = x.var("self");
  if (x.call.op == "aten::clamp_min.default") return x.set("self", where(e, compare(e, "ge", s, x.real("min")), x.grad(), 0.0));
  Var m = x.var("min");
  if (x.needs("self")) x.set("self", where(e, compare(e, "ge", s, m), x.grad(), 0.0));
  if (x.needs("min")) x.set("min", where(e, compare(e, "lt", s, m), x.grad(), 0.0));
}

void clamp_max_grad(GradContext& x) {
  Emitter& e = x.e;
  Var s = x.var("self");
  if (x.call.op == "aten::clamp_max.default") return x.set("self", where(e, compare(e, "le", s, x.real("max")), x.grad(), 0.0));
  Var m = x.var("max");
  if (x.needs("self")) x.set("self", where(e, compare(e, "le", s, m), x.grad(), 0.0));
  if (x.needs("max")) x.set("max", where(e, compare(e, "gt", s, m), x.grad(), 0.0));
}

// ---- activations ----

void relu_grad(GradContext& x) {
  x.set("self", x.e.call1("aten::threshold_backward.default", {x.grad(), x.out(), 0.0}));
}
void threshold_grad(GradContext& x) {
  x.set("self", x.e.call1("aten::threshold_backward.default", {x.grad(), x.var("self"), x.value("threshold")}));
}
void hardtanh_grad(GradContext& x) {
  x.set("self", x.e.call1("aten::hardtanh_backward.default",
                          {x.grad(), x.var("self"), x.value("min_val"), x.value("max_val")}));
}
void relu6_grad(GradContext& x) {
  x.set("self", x.e.call1("aten::hardtanh_backward.default", {x.grad(), x.var("self"), 0.0, 6.0}));
}
void leaky_relu_grad(GradContext& x) {
  x.set("self", x.e.call1("aten::leaky_relu_backward.default",
                          {x.grad(), x.var("self"), x.value("negative_slope"), false}));
}
void elu_grad(GradContext& x) {
  x.set("self", x.e.call1("aten::elu_backward.default", {x.grad(), x.value("alpha"), x.value("scale"),
                                                          x.value("input_scale"), false, x.var("self")}));
}
void gelu_grad(GradContext& x) {
  x.set("self", x.e.call1("aten::gelu_backward.default", {x.grad(), x.var("self")},
                          {{"approximate", Value(x.str("approximate"))}}));
}
// Kernels of the form name_backward(grad_output, self).
template <const char* Kernel>
void self_kernel_grad(GradContext& x) {
  x.set("self", x.e.call1(Kernel, {x.grad(), x.var("self")}));
}
constexpr char kHardsigmoidBackward[] = "aten::hardsigmoid_backward.default";
constexpr char kHardswishBackward[] = "aten::hardswish_backward.default";
constexpr char kMishBackward[] = "aten::mish_backward.default";
constexpr char kSiluBackward[] = "aten::silu_backward.default";

void softplus_grad(GradContext& x) {
  x.set("self", x.e.call1("aten::softplus_backward.default",
                          {x.grad(), x.var("self"), x.value("beta"), x.value("threshold")}));
}

void logit_grad(GradContext& x) {
  Emitter& e = x.e;
  Var s = x.var("self");
  Var local = div(e, x.grad(), mul(e, s, rsub(e, 1.0, s)));
  std::optional<double> eps = x.opt_real("eps");
  double lo = eps ? *eps : 0.0, hi = eps ? 1.0 - *eps : 1.0;
  Var outside = logical_or(e, compare(e, "lt", s, lo), compare(e, "gt", s, hi));
  // With eps the input was clamped there, so the gradient is 0; without,
  // logit is undefined outside [0, 1].
  x.set("self", where(e, outside, eps ? 0.0 : NAN, local));
}

// ---- double backward: derivatives of the *_backward kernels ----

// Kernels linear in grad_output whose other input only selects (piecewise
// constant): d/dgrad_output is the kernel itself, d/dself is zero.
void selecting_backward_grad(GradContext& x) {
  Emitter& e = x.e;
  std::vector<EArg> args = x.bound();
  args[0] = x.grad();
  if (x.needs("grad_output")) x.set("grad_output", e.call1(x.call.op, args));
  if (x.needs("self")) x.set("self", zeros_like(e, x.var("self")));
}

void sigmoid_backward_grad(GradContext& x) {
  Emitter& e = x.e;
  Var go = x.var("grad_output"), y = x.var("output");
  if (x.needs("grad_output")) x.set("grad_output", e.call1("aten::sigmoid_backward.default", {x.grad(), y}));
  if (x.needs("output")) x.set("output", mul(e, mul(e, x.grad(), go), add(e, mul(e, y, -2.0), 1.0)));
}
void tanh_backward_grad(GradContext& x) {
  Emitter& e = x.e;
  Var go = x.var("grad_output"), y = x.var("output");
  if (x.needs("grad_output")) x.set("grad_output", e.call1("aten::tanh_backward.default", {x.grad(), y}));
  if (x.needs("output")) x.set("output", mul(e, mul(e, mul(e, x.grad(), -2.0), y), go));
}
void hardswish_backward_grad(GradContext& x) {
  Emitter& e = x.e;
  Var go = x.var("grad_output"), s = x.var("self");
  if (x.needs("grad_output")) x.set("grad_output", e.call1("aten::hardswish_backward.default", {x.grad(), s}));
  if (x.needs("self")) {
    Var inside = logical_and(e, compare(e, "gt", s, -3.0), compare(e, "lt", s, 3.0));
    x.set("self", where(e, inside, div(e, mul(e, x.grad(), go), 3.0), 0.0));
  }
}

// The rest differentiate their own decompositions.
void silu_backward_grad(GradContext& x) {
  x.via([&](Emitter& e) {
    Var go = x.var("grad_output"), s = x.var("self");
    Var sig = unary(e, "aten::sigmoid.default", s);
    // silu'(s) = sig * (1 + s * (1 - sig))
    Var d = mul(e, sig, add(e, mul(e, s, rsub(e, 1.0, sig)), 1.0));
    return std::vector<Var>{mul(e, go, d)};
  });
}
void mish_backward_grad(GradContext& x) {
  x.via([&](Emitter& e) {
    Var go = x.var("grad_output"), s = x.var("self");
    Var t = unary(e, "aten::tanh.default", e.call1("aten::softplus.default", {s}));
    Var sig = unary(e, "aten::sigmoid.default", s);
    // mish'(s) = tanh(sp) + s * sigmoid(s) * (1 - tanh(sp)^2)
    Var d = add(e, t, mul(e, mul(e, s, sig), rsub(e, 1.0, mul(e, t, t))));
    return std::vector<Var>{mul(e, go, d)};
  });
}
void softplus_backward_grad(GradContext& x) {
  x.via([&](Emitter& e) {
    Var go = x.var("grad_output"), s = x.var("self");
    double beta = x.real("beta"), threshold = x.real("threshold");
    Var z = unary(e, "aten::sigmoid.default", mul(e, s, beta));  // exp(bx) / (exp(bx) + 1)
    Var linear = compare(e, "gt", mul(e, s, beta), threshold);
    return std::vector<Var>{where(e, linear, go, mul(e, go, z))};
  });
}
void elu_backward_grad(GradContext& x) {
  x.via([&](Emitter& e) {
    Var go = x.var("grad_output"), v = x.var("self_or_result");
    double alpha = x.real("alpha"), scale = x.real("scale"), input_scale = x.real("input_scale");
    Var negative;
    if (x.boolean("is_result")) negative = mul(e, mul(e, go, input_scale), add(e, v, alpha * scale));
    else negative = mul(e, mul(e, go, input_scale * scale * alpha), unary(e, "aten::exp.default", mul(e, v, input_scale)));
    return std::vector<Var>{where(e, compare(e, "le", v, 0.0), negative, mul(e, go, scale))};
  });
}
void gelu_backward_grad(GradContext& x) {
  x.via([&](Emitter& e) {
    Var go = x.var("grad_output"), s = x.var("self");
    Var d;
    if (x.str("approximate") == "tanh") {
      constexpr double kBeta = 0.7978845608028654, kKappa = 0.044715;  // sqrt(2 / pi)
      Var sq = mul(e, s, s);
      Var inner = mul(e, add(e, s, mul(e, mul(e, sq, s), kKappa)), kBeta);
      Var t = unary(e, "aten::tanh.default", inner);
      Var left = mul(e, s, 0.5);
      Var left_d = mul(e, add(e, t, 1.0), 0.5);
      Var right_d = mul(e, mul(e, left, rsub(e, 1.0, mul(e, t, t))), add(e, mul(e, sq, 3.0 * kKappa * kBeta), kBeta));
      d = add(e, left_d, right_d);
    } else {
      constexpr double kInvSqrt2 = 0.70710678118654752, kInvSqrt2Pi = 0.3989422804014327;
      Var cdf = mul(e, add(e, unary(e, "aten::erf.default", mul(e, s, kInvSqrt2)), 1.0), 0.5);
      Var pdf = mul(e, unary(e, "aten::exp.default", mul(e, mul(e, s, s), -0.5)), kInvSqrt2Pi);
      d = add(e, cdf, mul(e, s, pdf));
    }
    return std::vector<Var>{mul(e, go, d)};
  });
}

}  // namespace

void register_activation_derivatives(DerivativeTable& t) {
  const std::vector<std::string> self{"self"};
  t.add<clamp_grad>("aten::clamp.default", self, kSavesInputs);
  t.add<clamp_grad>("aten::clamp.Tensor", {"self", "min", "max"}, kSavesInputs);
  t.add<clamp_min_grad>("aten::clamp_min.default", self, kSavesInputs);
  t.add<clamp_min_grad>("aten::clamp_min.Tensor", {"self", "min"}, kSavesInputs);
  t.add<clamp_max_grad>("aten::clamp_max.default", self, kSavesInputs);
  t.add<clamp_max_grad>("aten::clamp_max.Tensor", {"self", "max"}, kSavesInputs);
  t.add<relu_grad>("aten::relu.default", self, kSavesOutputs);
  t.add<threshold_grad>("aten::threshold.default", self, kSavesInputs);
  t.add<hardtanh_grad>("aten::hardtanh.default", self, kSavesInputs);
  t.add<relu6_grad>("aten::relu6.default", self, kSavesInputs);
  t.add<leaky_relu_grad>("aten::leaky_relu.default", self, kSavesInputs);
  t.add<elu_grad>("aten::elu.default", self, kSavesInputs);
  t.add<gelu_grad>("aten::gelu.default", self, kSavesInputs);
  t.add<self_kernel_grad<kHardsigmoidBackward>>("aten::hardsigmoid.default", self, kSavesInputs);
  t.add<self_kernel_grad<kHardswishBackward>>("aten::hardswish.default", self, kSavesInputs);
  t.add<self_kernel_grad<kMishBackward>>("aten::mish.default", self, kSavesInputs);
  t.add<self_kernel_grad<kSiluBackward>>("aten::silu.default", self, kSavesInputs);
  t.add<softplus_grad>("aten::softplus.default", self, kSavesInputs);
  t.add<logit_grad>("aten::logit.default", self, kSavesInputs);

  const std::vector<std::string> go_self{"grad_output", "self"};
  for (const char* op : {"aten::threshold_backward.default", "aten::hardtanh_backward.default",
                         "aten::leaky_relu_backward.default", "aten::hardsigmoid_backward.default"})
    t.add<selecting_backward_grad>(op, go_self, kSavesInputs);
  t.add<sigmoid_backward_grad>("aten::sigmoid_backward.default", {"grad_output", "output"}, kSavesInputs);
  t.add<tanh_backward_grad>("aten::tanh_backward.default", {"grad_output", "output"}, kSavesInputs);
  t.add<hardswish_backward_grad>("aten::hardswish_backward.default", go_self, kSavesInputs);
  t.add<silu_backward_grad>("aten::silu_backward.default", go_self, kSavesInputs);
  t.add<mish_backward_grad>("aten::mish_backward.default", go_self, kSavesInputs);
  t.add<softplus_backward_grad>("aten::softplus_backward.default", go_self, kSavesInputs);
  t.add<elu_backward_grad>("aten::elu_backward.default", {"grad_output", "self_or_result"}, kSavesInputs);
  t.add<gelu_backward_grad>("aten::gelu_backward.default", go_self, kSavesInputs);
  t.float32_for_reduced("aten::gelu_backward.default");
}

}  // namespace kiln::aot
