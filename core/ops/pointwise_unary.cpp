// Unary math: transcendental functions (integers promote to float32, as
// PyTorch's unary_float_op), sign and rounding (dtype kept), predicates (bool
// out), nan_to_num and positive.
#include "core/ops/pointwise_kernels.h"
#include "core/ops/pointwise_math.h"

namespace kiln {
namespace {
using namespace pointwise;

// A float op: integer and bool inputs compute in float32.
template <class F>
void float_op(OpRegistry& r, std::string_view schema, F f) {
  unary_op<kFloatKind>(r, {schema, float_dtype}, stateless(f));
}
// Keeps the input dtype; `kinds` are the dtypes PyTorch implements.
template <unsigned kinds, class F>
void same_op(OpRegistry& r, std::string_view schema, F f, ComputeRule rule = same_dtype) {
  unary_op<kinds>(r, {schema, rule}, stateless(f));
}
// bool output; every dtype.
template <class F>
void predicate_op(OpRegistry& r, std::string_view schema, F f) {
  unary_op<kAllKinds>(r, {.schema = schema, .predicate = true}, stateless(f));
}

// Inverse error function: a rational first guess (the central and tail
// approximations ATen's calc_erfinv starts from) refined by two Newton steps
// on erf. Done in double for every dtype; float results round once.
double erfinv(double y) {
  double ay = std::abs(y);
  if (ay > 1.0) return std::numeric_limits<double>::quiet_NaN();
  if (ay == 1.0) return std::copysign(std::numeric_limits<double>::infinity(), y);
  double x;
  if (ay <= 0.7) {
    double z = y * y;
    double num = ((-0.140543331 * z + 0.914624893) * z - 1.645349621) * z + 0.886226899;
    double den = (((0.012229801 * z - 0.329097515) * z + 1.442710462) * z - 2.118377725) * z + 1.0;
    x = y * num / den;
  } else {
    double z = std::sqrt(-std::log((1.0 - ay) / 2.0));
    double num = ((1.641345311 * z + 3.429567803) * z - 1.624906493) * z - 1.970840454;
    double den = (1.637067800 * z + 3.543889200) * z + 1.0;
    x = std::copysign(num, y) / den;
  }
  const double two_over_sqrt_pi = 1.1283791670955126;
  for (int step = 0; step < 2; ++step) x -= (std::erf(x) - y) / (two_over_sqrt_pi * std::exp(-x * x));
  return x;
}

// sin/cos: float math (also for the 16-bit floats) takes the vectorizable
// sin_phase_small, patched with the library call for huge |x|, inf and NaN;
// float64 keeps the library function, the accuracy reference.
template <class Library>
auto trig_make(double phase, Library library) {
  return [phase, library]<class T>(const OpArgs&) {
    if constexpr (std::is_same_v<opmath_t<T>, float>) {
      auto fast = [phase](float x) { return float(sin_phase_small(x, phase)); };
      auto in_range = [](float x) { return std::abs(x) <= kTrigFastLimit; };
      return Patched<decltype(fast), Library, decltype(in_range)>{fast, library, in_range};
    } else {
      return library;
    }
  };
}

template <class C> C round_half_even(C x) {
  if constexpr (std::is_floating_point_v<C>) return std::nearbyint(x);
  else return x;
}

DType reject_bool_negation(const OpArgs&, DType t) {
  KILN_USER_CHECK(t != DType::Bool,
                  "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a "
                  "mask, use the `~` or `logical_not()` operator instead.");
  return t;
}

void register_transcendental(OpRegistry& r) {
  float_op(r, "aten::exp(Tensor self) -> Tensor", [](auto x) { return std::exp(x); });
  float_op(r, "aten::exp2(Tensor self) -> Tensor", [](auto x) { return std::exp2(x); });
  float_op(r, "aten::expm1(Tensor self) -> Tensor", [](auto x) { return std::expm1(x); });
  float_op(r, "aten::log(Tensor self) -> Tensor", [](auto x) { return std::log(x); });
  float_op(r, "aten::log2(Tensor self) -> Tensor", [](auto x) { return std::log2(x); });
  float_op(r, "aten::log10(Tensor self) -> Tensor", [](auto x) { return std::log10(x); });
  float_op(r, "aten::log1p(Tensor self) -> Tensor", [](auto x) { return std::log1p(x); });
  float_op(r, "aten::sqrt(Tensor self) -> Tensor", [](auto x) { return std::sqrt(x); });
  float_op(r, "aten::rsqrt(Tensor self) -> Tensor", []<class C>(C x) { return C(1) / std::sqrt(x); });
  float_op(r, "aten::reciprocal(Tensor self) -> Tensor", []<class C>(C x) { return C(1) / x; });
  unary_op<kFloatKind>(r, {"aten::sin(Tensor self) -> Tensor", float_dtype},
                       trig_make(0.0, [](auto x) { return std::sin(x); }));
  unary_op<kFloatKind>(r, {"aten::cos(Tensor self) -> Tensor", float_dtype},
                       trig_make(0.5, [](auto x) { return std::cos(x); }));
  float_op(r, "aten::tan(Tensor self) -> Tensor", [](auto x) { return std::tan(x); });
  float_op(r, "aten::asin(Tensor self) -> Tensor", [](auto x) { return std::asin(x); });
  float_op(r, "aten::acos(Tensor self) -> Tensor", [](auto x) { return std::acos(x); });
  float_op(r, "aten::atan(Tensor self) -> Tensor", [](auto x) { return std::atan(x); });
  float_op(r, "aten::sinh(Tensor self) -> Tensor", [](auto x) { return std::sinh(x); });
  float_op(r, "aten::cosh(Tensor self) -> Tensor", [](auto x) { return std::cosh(x); });
  float_op(r, "aten::tanh(Tensor self) -> Tensor", [](auto x) { return std::tanh(x); });
  float_op(r, "aten::asinh(Tensor self) -> Tensor", [](auto x) { return std::asinh(x); });
  float_op(r, "aten::acosh(Tensor self) -> Tensor", [](auto x) { return std::acosh(x); });
  float_op(r, "aten::atanh(Tensor self) -> Tensor", [](auto x) { return std::atanh(x); });
  float_op(r, "aten::sigmoid(Tensor self) -> Tensor", []<class C>(C x) { return C(1) / (C(1) + std::exp(-x)); });
  float_op(r, "aten::erf(Tensor self) -> Tensor", [](auto x) { return std::erf(x); });
  float_op(r, "aten::erfc(Tensor self) -> Tensor", [](auto x) { return std::erfc(x); });
  float_op(r, "aten::erfinv(Tensor self) -> Tensor", []<class C>(C x) { return C(erfinv(double(x))); });
}

void register_sign_and_rounding(OpRegistry& r) {
  same_op<kNumeric>(r, "aten::abs(Tensor self) -> Tensor", []<class C>(C x) -> C {
    if constexpr (std::is_floating_point_v<C>) return std::abs(x);
    else return is_negative(x) ? neg_wrap(x) : x;
  });
  same_op<kNumeric>(r, "aten::neg(Tensor self) -> Tensor", [](auto x) { return neg_wrap(x); }, reject_bool_negation);
  auto sign = []<class C>(C x) -> C {
    if constexpr (std::is_same_v<C, bool>) return x;
    else return C(int(C(0) < x) - int(is_negative(x)));  // 0 for NaN, as ATen's CPU kernel
  };
  same_op<kAllKinds>(r, "aten::sign(Tensor self) -> Tensor", sign);
  same_op<kAllKinds>(r, "aten::sgn(Tensor self) -> Tensor", sign);
  // Integer inputs pass through: they are already whole.
  auto whole = [](auto op) {
    return [op]<class C>(C x) -> C {
      if constexpr (std::is_floating_point_v<C>) return op(x);
      else return x;
    };
  };
  same_op<kNumeric>(r, "aten::floor(Tensor self) -> Tensor", whole([](auto x) { return std::floor(x); }));
  same_op<kNumeric>(r, "aten::ceil(Tensor self) -> Tensor", whole([](auto x) { return std::ceil(x); }));
  same_op<kNumeric>(r, "aten::trunc(Tensor self) -> Tensor", whole([](auto x) { return std::trunc(x); }));
  same_op<kNumeric>(r, "aten::round(Tensor self) -> Tensor", [](auto x) { return round_half_even(x); });
  unary_op<kNumeric>(r, {"aten::round.decimals(Tensor self, *, int decimals) -> Tensor"},
                     []<class T>(const OpArgs& a) {
                       using C = opmath_t<T>;
                       int64_t decimals = a.integer(1);
                       if constexpr (!std::is_floating_point_v<C>) {
                         if (decimals != 0) fail_not_implemented("round_cpu", dtype_v<T>);
                         return [](C x) { return x; };
                       } else {
                         // 10^|decimals| in compute precision; negative decimals round to tens, hundreds...
                         C scale = C(std::pow(10.0, double(decimals < 0 ? -decimals : decimals)));
                         bool neg = decimals < 0;
                         return [scale, neg](C x) {
                           return neg ? std::nearbyint(x / scale) * scale : std::nearbyint(x * scale) / scale;
                         };
                       }
                     });
  same_op<kFloatKind>(r, "aten::frac(Tensor self) -> Tensor", [](auto x) { return x - std::trunc(x); });
}

void register_predicates(OpRegistry& r) {
  predicate_op(r, "aten::isnan(Tensor self) -> Tensor", [](auto x) { return is_nan(x); });
  predicate_op(r, "aten::isinf(Tensor self) -> Tensor", []<class C>(C x) {
    if constexpr (std::is_floating_point_v<C>) return std::isinf(x);
    else return false;
  });
  predicate_op(r, "aten::isfinite(Tensor self) -> Tensor", []<class C>(C x) {
    if constexpr (std::is_floating_point_v<C>) return std::isfinite(x);
    else return true;
  });
  predicate_op(r, "aten::logical_not(Tensor self) -> Tensor", [](auto x) { return !x; });
  same_op<kIntegral>(r, "aten::bitwise_not(Tensor self) -> Tensor", []<class C>(C x) -> C {
    if constexpr (std::is_same_v<C, bool>) return !x;
    else return C(~x);
  });
}

void register_misc(OpRegistry& r) {
  unary_op<kAllKinds>(
      r, {"aten::nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor"},
      []<class T>(const OpArgs& a) {
        using C = opmath_t<T>;
        // Replacements are rounded to the tensor dtype, the defaults are its finite extremes.
        auto replacement = [&](size_t i, double fallback) { return C(T(a.opt_real(i).value_or(fallback))); };
        C nan = C(0), pos = C(0), neg = C(0);
        if constexpr (std::is_floating_point_v<C>) {
          nan = replacement(1, 0.0);
          pos = replacement(2, finite_max<T>());
          neg = replacement(3, -finite_max<T>());
        }
        return [nan, pos, neg](C x) -> C {
          if constexpr (std::is_floating_point_v<C>) {
            if (x != x) return nan;
            if (std::isinf(x)) return x > 0 ? pos : neg;
          } else {
            (void)nan, (void)pos, (void)neg;  // integers have nothing to replace
          }
          return x;
        };
      });
  // positive returns its input (an alias, as in ATen), except for bool.
  auto positive = [](const OpArgs& a) -> ValueList {
    KILN_USER_CHECK(a.tensor(0).dtype() != DType::Bool, "The `+` operator, on a bool tensor is not supported.");
    return one(a.tensor(0));
  };
  r.add("aten::positive(Tensor(a) self) -> Tensor(a)", positive, positive);
}

}  // namespace

void register_pointwise_unary_ops(OpRegistry& r) {
  register_transcendental(r);
  register_sign_and_rounding(r);
  register_predicates(r);
  register_misc(r);
}

}  // namespace kiln
