// Activations, clamp, and the activation backward formulas autodiff uses
// (grad_output first, as in derivatives.yaml). Formulas follow ATen's CPU
// kernels, including where they compare and which constants they round.
#include "core/ops/pointwise_kernels.h"

namespace kiln {
namespace {
using namespace pointwise;

template <class Make>
void float_activation(OpRegistry& r, std::string_view schema, Make make) {
  unary_op<kFloatKind>(r, {schema}, make);
}
// (grad_output, self) -> grad_input, computed in the promoted dtype.
template <class Make>
void float_backward(OpRegistry& r, std::string_view schema, Make make) {
  binary_op<kFloatKind>(r, {schema}, make);
}

template <class C> C sigmoid_of(C x) { return C(1) / (C(1) + std::exp(-x)); }

// gelu's two forms; `tanh_form` is fixed per call, so the branch is loop-invariant.
bool gelu_uses_tanh(const OpArgs& a, size_t i) {
  std::string mode = a.str(i);
  KILN_USER_CHECK(mode == "none" || mode == "tanh", "approximate argument must be either none or tanh.");
  return mode == "tanh";
}
constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2/pi)
constexpr double kSqrtHalf = 0.70710678118654752440;     // 1/sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;   // 1/sqrt(2*pi)
constexpr double kGeluKappa = 0.044715;

DType reject_bool(const OpArgs& a, DType t) {
  KILN_USER_CHECK(t != DType::Bool, "Boolean inputs not supported for ", a.schema().name.substr(6));
  return t;
}

// clamp's dtype: a floating tensor keeps its dtype; otherwise the bounds take
// part in promotion (an int tensor clamped at 0.5 computes in float32).
DType clamp_dtype(const OpArgs& a, DType self) {
  std::vector<Scalar> bounds;
  for (size_t i = 1; i < a.size(); ++i)
    if (!a[i].is_none()) bounds.push_back(a.scalar(i));
  KILN_USER_CHECK(!bounds.empty(), "torch.clamp: At least one of 'min' or 'max' must not be None");
  if (is_floating(self)) return self;
  const Tensor& x = a.tensor(0);
  return bounds.size() == 2 ? result_type({x, bounds[0], bounds[1]}) : result_type({x, bounds[0]});
}

// Scalar bounds at `lo_i`/`hi_i` (negative: absent), converted like ATen's to<scalar_t>.
auto clamp_make(int lo_i, int hi_i) {
  return [lo_i, hi_i]<class T>(const OpArgs& a) {
    using C = opmath_t<T>;
    auto bound = [&](int i, C fallback) {
      return i >= 0 && !a[size_t(i)].is_none() ? scalar_as<T>(a.scalar(size_t(i))) : fallback;
    };
    C lo = bound(lo_i, lowest_value<C>()), hi = bound(hi_i, highest_value<C>());
    return [lo, hi](C x) { return clamp_value(x, lo, hi); };
  };
}

void register_clamp(OpRegistry& r) {
  unary_op<kNumeric>(r, {"aten::clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor", clamp_dtype},
                     clamp_make(1, 2));
  unary_op<kNumeric>(r, {"aten::clamp_min(Tensor self, Scalar min) -> Tensor", clamp_dtype}, clamp_make(1, -1));
  unary_op<kNumeric>(r, {"aten::clamp_max(Tensor self, Scalar max) -> Tensor", clamp_dtype}, clamp_make(-1, 1));
  // Tensor bounds propagate NaN from the bounds too (ATen's maximum/minimum).
  auto at_least = [](auto x, auto lo) { return max_nan(x, lo); };
  auto at_most = [](auto x, auto hi) { return min_nan(x, hi); };
  binary_op<kNumeric>(r, {"aten::clamp_min.Tensor(Tensor self, Tensor min) -> Tensor"}, stateless(at_least));
  binary_op<kNumeric>(r, {"aten::clamp_max.Tensor(Tensor self, Tensor max) -> Tensor"}, stateless(at_most));
  Spec both{"aten::clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor",
            [](const OpArgs& a, DType t) {
              KILN_USER_CHECK(!a[1].is_none() || !a[2].is_none(),
                              "torch.clamp: At least one of 'min' or 'max' must not be None");
              return t;
            }};
  auto meta = [both](const OpArgs& a) { return one(plan_pointwise(both, a, 3, false).out); };
  auto compute = [both, at_least, at_most](const OpArgs& a, const std::vector<Tensor>& outs) {
    Plan p = plan_pointwise(both, a, 3, true);
    std::string kernel = kernel_name(a);
    if (!p.in[2].tensor.defined())
      return binary_kernel<kNumeric>(kernel, outs[0], p.compute, p.in[0], p.in[1], [&]<class T>() { return at_least; });
    if (!p.in[1].tensor.defined())
      return binary_kernel<kNumeric>(kernel, outs[0], p.compute, p.in[0], p.in[2], [&]<class T>() { return at_most; });
    ternary_kernel<kNumeric>(kernel, outs[0], p.compute, p.in[0], p.in[1], p.in[2], [&]<class T>() {
      return []<class C>(C x, C lo, C hi) {
        if (is_nan(lo) || is_nan(hi)) return std::numeric_limits<C>::quiet_NaN();
        return clamp_value(x, lo, hi);
      };
    });
  };
  add_op_with_outputs(r, both.schema, meta, compute);
}

void register_relu_family(OpRegistry& r) {
  unary_op<kNumeric>(r, {"aten::relu(Tensor self) -> Tensor", reject_bool},
                     stateless([]<class C>(C x) { return is_negative(x) ? C(0) : x; }));
  // hardtanh keeps the input dtype; clamping an integer at truncated bounds
  // equals ATen's clamp-in-float-then-truncate.
  unary_op<kNumeric>(r, {"aten::hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor", reject_bool},
                     clamp_make(1, 2));
  unary_op<kNumeric>(r, {"aten::relu6(Tensor self) -> Tensor", reject_bool}, []<class T>(const OpArgs&) {
    using C = opmath_t<T>;
    return [](C x) { return clamp_value(x, C(0), C(6)); };
  });
  unary_op<kNumeric>(r, {"aten::threshold(Tensor self, Scalar threshold, Scalar value) -> Tensor"},
                     []<class T>(const OpArgs& a) {
                       using C = opmath_t<T>;
                       C th = scalar_as<T>(a.scalar(1)), value = scalar_as<T>(a.scalar(2));
                       return [th, value](C x) { return x <= th ? value : x; };
                     });
  float_activation(r, "aten::leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor",
                   []<class T>(const OpArgs& a) {
                     using C = opmath_t<T>;
                     C slope = scalar_opmath<T>(a.scalar(1));
                     return [slope](C x) { return x > C(0) ? x : x * slope; };
                   });
  float_activation(r, "aten::elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor",
                   []<class T>(const OpArgs& a) {
                     using C = opmath_t<T>;
                     C neg = scalar_opmath<T>(a.scalar(1)) * scalar_opmath<T>(a.scalar(2));
                     C pos = scalar_opmath<T>(a.scalar(2)), in = scalar_opmath<T>(a.scalar(3));
                     return [neg, pos, in](C x) { return x <= C(0) ? std::expm1(x * in) * neg : x * pos; };
                   });
}

void register_smooth_activations(OpRegistry& r) {
  float_activation(r, "aten::gelu(Tensor self, *, str approximate='none') -> Tensor", []<class T>(const OpArgs& a) {
    using C = opmath_t<T>;
    bool tanh_form = gelu_uses_tanh(a, 1);
    return [tanh_form](C x) {
      if (tanh_form) return C(0.5) * x * (C(1) + std::tanh(C(kSqrt2OverPi) * (x + C(kGeluKappa) * x * x * x)));
      return x * C(0.5) * (C(1) + std::erf(x * C(kSqrtHalf)));
    };
  });
  float_activation(r, "aten::silu(Tensor self) -> Tensor", stateless([](auto x) { return x * sigmoid_of(x); }));
  float_activation(r, "aten::mish(Tensor self) -> Tensor",
                   stateless([](auto x) { return x * std::tanh(std::log1p(std::exp(x))); }));
  float_activation(r, "aten::hardsigmoid(Tensor self) -> Tensor", stateless([]<class C>(C x) {
                     return std::min(std::max(x + C(3), C(0)), C(6)) / C(6);
                   }));
  float_activation(r, "aten::hardswish(Tensor self) -> Tensor", stateless([]<class C>(C x) {
                     return x * std::min(std::max(x + C(3), C(0)), C(6)) / C(6);
                   }));
  float_activation(r, "aten::softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor",
                   []<class T>(const OpArgs& a) {
                     using C = opmath_t<T>;
                     C beta = scalar_opmath<T>(a.scalar(1)), th = scalar_opmath<T>(a.scalar(2));
                     return [beta, th](C x) { return x * beta > th ? x : std::log1p(std::exp(x * beta)) / beta; };
                   });
  unary_op<kFloatKind>(r, {"aten::logit(Tensor self, float? eps=None) -> Tensor", float_dtype},
                       []<class T>(const OpArgs& a) {
                         using C = opmath_t<T>;
                         // A negative (or absent) eps means no clamping.
                         C eps = C(a.opt_real(1).value_or(-1.0));
                         C lo = eps < C(0) ? lowest_value<C>() : eps;
                         C hi = eps < C(0) ? highest_value<C>() : C(1) - eps;
                         return [lo, hi](C x) {
                           x = x < lo ? lo : (x > hi ? hi : x);
                           return std::log(x / (C(1) - x));
                         };
                       });
}

void register_backward(OpRegistry& r) {
  float_backward(r, "aten::sigmoid_backward(Tensor grad_output, Tensor output) -> Tensor",
                 []<class T>(const OpArgs&) {
                   using C = opmath_t<T>;
                   return [](C g, C y) { return step_round<T>(g * step_round<T>(C(1) - y)) * y; };
                 });
  float_backward(r, "aten::tanh_backward(Tensor grad_output, Tensor output) -> Tensor",
                 stateless([]<class C>(C g, C y) { return g * (C(1) - y * y); }));
  binary_op<kNumeric>(r, {"aten::threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor"},
                      []<class T>(const OpArgs& a) {
                        using C = opmath_t<T>;
                        C th = scalar_as<T>(a.scalar(2));
                        return [th](C g, C x) { return x <= th ? C(0) : g; };
                      });
  float_backward(r, "aten::gelu_backward(Tensor grad_output, Tensor self, *, str approximate='none') -> Tensor",
                 []<class T>(const OpArgs& a) {
                   using C = opmath_t<T>;
                   bool tanh_form = gelu_uses_tanh(a, 2);
                   return [tanh_form](C g, C x) {
                     if (tanh_form) {
                       C inner = C(kSqrt2OverPi) * (x + C(kGeluKappa) * x * x * x);
                       C t = std::tanh(inner);
                       C d_inner = C(kSqrt2OverPi) * (C(1) + C(3) * C(kGeluKappa) * x * x);
                       return g * (C(0.5) * (C(1) + t) + C(0.5) * x * (C(1) - t * t) * d_inner);
                     }
                     C cdf = C(0.5) * (C(1) + std::erf(x * C(kSqrtHalf)));
                     C pdf = C(kInvSqrt2Pi) * std::exp(C(-0.5) * x * x);
                     return g * (cdf + x * pdf);
                   };
                 });
  float_backward(r, "aten::silu_backward(Tensor grad_output, Tensor self) -> Tensor",
                 stateless([]<class C>(C g, C x) {
                   C s = sigmoid_of(x);
                   return g * s * (C(1) + x * (C(1) - s));
                 }));
  float_backward(r, "aten::mish_backward(Tensor grad_output, Tensor self) -> Tensor",
                 stateless([]<class C>(C g, C x) {
                   C t = std::tanh(std::log1p(std::exp(x)));
                   return g * (t + x * sigmoid_of(x) * (C(1) - t * t));
                 }));
  float_backward(r, "aten::hardsigmoid_backward(Tensor grad_output, Tensor self) -> Tensor",
                 stateless([]<class C>(C g, C x) { return x > C(-3) && x < C(3) ? g / C(6) : C(0); }));
  float_backward(r, "aten::hardswish_backward(Tensor grad_output, Tensor self) -> Tensor",
                 stateless([]<class C>(C g, C x) {
                   if (x < C(-3)) return C(0);
                   return x <= C(3) ? g * (x / C(3) + C(0.5)) : g;
                 }));
  float_backward(r,
                 "aten::hardtanh_backward(Tensor grad_output, Tensor self, Scalar min_val, Scalar max_val) -> Tensor",
                 []<class T>(const OpArgs& a) {
                   using C = opmath_t<T>;
                   C lo = scalar_as<T>(a.scalar(2)), hi = scalar_as<T>(a.scalar(3));
                   return [lo, hi](C g, C x) { return x <= lo || x >= hi ? C(0) : g; };
                 });
  float_backward(
      r,
      "aten::leaky_relu_backward(Tensor grad_output, Tensor self, Scalar negative_slope, bool self_is_result) "
      "-> Tensor",
      []<class T>(const OpArgs& a) {
        using C = opmath_t<T>;
        KILN_USER_CHECK(!a.boolean(3) || a.scalar(2).to_double() >= 0.0,
                        "In-place leakyReLu backward calculation is triggered with a negative slope which is not "
                        "supported. This is caused by calling in-place forward function with a negative slope, please "
                        "call out-of-place version instead.");
        C slope = scalar_opmath<T>(a.scalar(2));
        return [slope](C g, C x) { return x > C(0) ? g : g * slope; };
      });
  float_backward(r, "aten::softplus_backward(Tensor grad_output, Tensor self, Scalar beta, Scalar threshold) -> Tensor",
                 []<class T>(const OpArgs& a) {
                   using C = opmath_t<T>;
                   C beta = scalar_opmath<T>(a.scalar(2)), th = scalar_opmath<T>(a.scalar(3));
                   return [beta, th](C g, C x) {
                     C z = std::exp(x * beta);
                     return x * beta > th ? g : g * z / (z + C(1));
                   };
                 });
  binary_op<kFloatKind>(
      r,
      {.schema = "aten::elu_backward(Tensor grad_output, Scalar alpha, Scalar scale, Scalar input_scale, "
                 "bool is_result, Tensor self_or_result) -> Tensor",
       .operands = {0, 5, 5}},
      []<class T>(const OpArgs& a) {
        using C = opmath_t<T>;
        bool is_result = a.boolean(4);
        KILN_USER_CHECK(!is_result || a.scalar(1).to_double() >= 0.0,
                        "In-place elu backward calculation is triggered with a negative slope which is not supported. "
                        "This is caused by calling in-place forward function with a negative slope, please call "
                        "out-of-place version instead.");
        C neg = scalar_opmath<T>(a.scalar(1)) * scalar_opmath<T>(a.scalar(2));
        C pos = scalar_opmath<T>(a.scalar(2)), in = scalar_opmath<T>(a.scalar(3));
        return [neg, pos, in, is_result](C g, C y) {
          if (y > C(0)) return g * pos;
          return is_result ? g * in * (y + neg) : g * in * neg * std::exp(y * in);
        };
      });
}

}  // namespace

void register_pointwise_activation_ops(OpRegistry& r) {
  register_clamp(r);
  register_relu_family(r);
  register_smooth_activations(r);
  register_backward(r);
}

}  // namespace kiln
