// Binary pointwise arithmetic with broadcasting and torch.result_type
// promotion: add/sub/mul, division and its rounding modes, remainder/fmod,
// pow, and the float-only two-argument functions. A Python-number
// operand takes part in promotion as a wrapped number and streams as a
// constant bound into the element functor.
#include <cmath>
#include "core/ops/pointwise_kernels.h"

namespace kiln {
namespace {
using namespace pointwise;

// The dtype an operand brings to dtype checks: a tensor's, or a number's kind.
DType operand_dtype(const OpArgs& a, size_t i) {
  return a[i].is_tensor() ? a.tensor(i).dtype() : a.scalar(i).promotion_dtype();
}

// ATen's alpha_check for add/sub/rsub (alpha is argument 2).
void check_alpha(const OpArgs& a, DType common) {
  Scalar alpha = a.scalar(2);
  KILN_USER_CHECK(!alpha.is_bool() || common == DType::Bool, "Boolean alpha only supported for Boolean results.");
  KILN_USER_CHECK(is_floating(common) || !alpha.is_float(),
                  "For integral input tensors, argument alpha must not be a floating point number.");
}
DType add_dtype(const OpArgs& a, DType common) {
  check_alpha(a, common);
  return common;
}
// ATen's sub_check: bool tensors cannot be subtracted (use ^ or ~ instead).
DType sub_dtype(const OpArgs& a, DType common) {
  bool x = operand_dtype(a, 0) == DType::Bool, y = operand_dtype(a, 1) == DType::Bool;
  KILN_USER_CHECK(!(x && y), "Subtraction, the `-` operator, with two bool tensors is not supported. "
                             "Use the `^` or `logical_xor()` operator instead.");
  KILN_USER_CHECK(!(x || y), "Subtraction, the `-` operator, with a bool tensor is not supported. "
                             "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
  return add_dtype(a, common);
}

// x + alpha * y, alpha rounded to the tensor dtype (ATen's ufunc add takes
// alpha.to<scalar_t>()); `sign` -1 subtracts, `reversed` swaps the operands (rsub).
template <int sign, bool reversed>
auto add_make() {
  return []<class T>(const OpArgs& a) {
    using C = opmath_t<T>;
    C alpha = scalar_as<T>(a.scalar(2));
    return [alpha](C x, C y) {
      if constexpr (reversed) std::swap(x, y);
      // ATen's CPU kernel computes x + alpha*y with one fused multiply-add
      // (vec::fmadd), so floating results round once; alpha = 1 is exact either way.
      if constexpr (std::is_floating_point_v<C>) return std::fma(sign < 0 ? -alpha : alpha, y, x);
      else if constexpr (sign < 0) return sub_wrap(x, mul_wrap(alpha, y));
      else return add_wrap(x, mul_wrap(alpha, y));
    };
  };
}

// mul and div read a scalar `other` at compute precision; add and sub round
// it to the tensor dtype like any operand.
constexpr Spec kExactOther{.exact_scalar = true};

void register_arithmetic(OpRegistry& r) {
  Spec add{.compute = add_dtype}, sub{.compute = sub_dtype};
  binary_overloads<kAllKinds>(r,
                              {"aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
                               "aten::add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor"},
                              add, add_make<1, false>());
  binary_overloads<kNumeric>(r,
                             {"aten::sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
                              "aten::sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor"},
                             sub, add_make<-1, false>());
  binary_overloads<kNumeric>(r,
                             {"aten::rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
                              "aten::rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor"},
                             sub, add_make<-1, true>());
  binary_overloads<kAllKinds>(r,
                              {"aten::mul.Tensor(Tensor self, Tensor other) -> Tensor",
                               "aten::mul.Scalar(Tensor self, Scalar other) -> Tensor"},
                              kExactOther, stateless([](auto x, auto y) { return mul_wrap(x, y); }));
}

// ---------------------------------------------------------------- division

enum class Rounding { None, Trunc, Floor };

Rounding rounding_mode(const OpArgs& a, size_t i) {
  std::optional<std::string> mode = a.opt_str(i);
  if (!mode) return Rounding::None;
  if (*mode == "trunc") return Rounding::Trunc;
  if (*mode == "floor") return Rounding::Floor;
  KILN_FAIL("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", *mode, "'");
}
// True division computes in floating point; rounded division keeps integers.
DType div_mode_dtype(const OpArgs& a, DType common) {
  return rounding_mode(a, 2) == Rounding::None ? float_dtype(a, common) : common;
}

// Python's floor division for floats (ATen's div_floor_floating): floor of the
// exact quotient, via fmod so that the rounding of a / b cannot push it across
// an integer; a zero quotient keeps the sign of a / b.
template <class C> C floor_divide_float(C a, C b) {
  if (b == C(0)) return a / b;
  C mod = std::fmod(a, b);
  C div = (a - mod) / b;
  if (mod != C(0) && (b < C(0)) != (mod < C(0))) div -= C(1);
  if (div == C(0)) return std::copysign(C(0), a / b);
  C floored = std::floor(div);
  return div - floored > C(0.5) ? floored + C(1) : floored;
}
template <class C> C floor_divide_int(C a, C b) {
  check_divisor(b);
  C q = int_div_trunc(a, b);
  return int_mod_trunc(a, b) != C(0) && is_negative(a) != is_negative(b) ? C(q - 1) : q;
}

template <class C> C divide(C a, C b, Rounding mode) {
  if constexpr (std::is_integral_v<C>) {
    if (mode == Rounding::Floor) return floor_divide_int(a, b);
    check_divisor(b);
    return int_div_trunc(a, b);  // Rounding::None never reaches integers: it promotes
  } else {
    if (mode == Rounding::Floor) return floor_divide_float(a, b);
    return mode == Rounding::Trunc ? std::trunc(a / b) : a / b;
  }
}

// A make for a fixed or argument-chosen rounding mode (`arg` < 0: fixed).
auto div_make(Rounding fixed, int arg = -1) {
  return [fixed, arg]<class T>(const OpArgs& a) {
    using C = opmath_t<T>;
    Rounding mode = arg < 0 ? fixed : rounding_mode(a, size_t(arg));
    return [mode](C x, C y) { return divide(x, y, mode); };
  };
}

// Python's %: the result takes the divisor's sign.
template <class C> C python_mod(C a, C b) {
  C m;
  if constexpr (std::is_integral_v<C>) {
    check_divisor(b);
    m = int_mod_trunc(a, b);
  } else {
    m = std::fmod(a, b);
  }
  return m != C(0) && is_negative(m) != is_negative(b) ? C(m + b) : m;
}
template <class C> C c_mod(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    check_divisor(b);
    return int_mod_trunc(a, b);
  } else {
    return std::fmod(a, b);
  }
}

void register_division(OpRegistry& r) {
  // Floating dtypes only after promotion, so the rounding-free make fits.
  binary_overloads<kFloatKind>(r,
                               {"aten::div.Tensor(Tensor self, Tensor other) -> Tensor",
                                "aten::div.Scalar(Tensor self, Scalar other) -> Tensor"},
                               {.compute = float_dtype, .exact_scalar = true}, div_make(Rounding::None));
  binary_overloads<kNumeric>(r,
                             {"aten::div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor",
                              "aten::div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) -> Tensor"},
                             {.compute = div_mode_dtype, .exact_scalar = true}, div_make(Rounding::None, 2));
  binary_overloads<kNumeric>(r,
                             {"aten::floor_divide(Tensor self, Tensor other) -> Tensor",
                              "aten::floor_divide.Scalar(Tensor self, Scalar other) -> Tensor"},
                             kExactOther, div_make(Rounding::Floor));
  binary_overloads<kNumeric>(r,
                             {"aten::remainder.Tensor(Tensor self, Tensor other) -> Tensor",
                              "aten::remainder.Scalar(Tensor self, Scalar other) -> Tensor",
                              "aten::remainder.Scalar_Tensor(Scalar self, Tensor other) -> Tensor"},
                             {}, stateless([](auto x, auto y) { return python_mod(x, y); }));
  binary_overloads<kNumeric>(r,
                             {"aten::fmod.Tensor(Tensor self, Tensor other) -> Tensor",
                              "aten::fmod.Scalar(Tensor self, Scalar other) -> Tensor"},
                             {}, stateless([](auto x, auto y) { return c_mod(x, y); }));
}

// ---------------------------------------------------------------- pow

// Integer power by squaring, wrapping on overflow like ATen's powi; negative
// exponents give 0 except for bases 1 and -1.
template <class C> C int_pow(C base, C exp) {
  if constexpr (std::is_signed_v<C>) {
    if (exp < 0) {
      if (base == C(1)) return C(1);
      if (base == C(-1)) return (exp & 1) ? C(-1) : C(1);
      return C(0);
    }
  }
  uint64_t result = 1, b = uint64_t(int64_t(base));
  for (uint64_t e = uint64_t(exp); e; e >>= 1) {
    if (e & 1) result *= b;
    b *= b;
  }
  return C(result);
}

auto pow_tensor_make() {
  return stateless([]<class C>(C x, C y) -> C {
    if constexpr (std::is_integral_v<C>) return int_pow(x, y);
    else return std::pow(x, y);
  });
}

DType pow_scalar_dtype(const OpArgs& a, DType self) {
  Scalar e = a.scalar(1);
  KILN_USER_CHECK(!(is_integral(self, true) && !e.is_float() && e.to_int() < 0),
                  "Integers to negative integer powers are not allowed.");
  return result_type({a.tensor(0), e});
}

// ATen's pow(Tensor, Scalar) special-cases common exponents (sqrt, squares,
// reciprocals); those differ from std::pow in the last bit or at signed zeros
// and infinities, so the same cases are kept here. float16 takes none of them.
enum class PowCase { General, Sqrt, Rsqrt, Reciprocal, Square, Cube, InverseSquare };

PowCase pow_case(double e, DType t) {
  if (t == DType::Float16) return PowCase::General;
  if (e == 0.5) return PowCase::Sqrt;
  if (e == -0.5) return PowCase::Rsqrt;
  if (e == -1.0) return PowCase::Reciprocal;
  if (t == DType::BFloat16 || t == DType::Float32 || t == DType::Float64) {
    if (e == 2.0) return PowCase::Square;
    if (e == 3.0) return PowCase::Cube;
    if (e == -2.0) return PowCase::InverseSquare;
  }
  return PowCase::General;
}

template <class T>
auto pow_scalar_functor(const Scalar& exponent) {
  using C = opmath_t<T>;
  if constexpr (std::is_integral_v<C>) {
    C e = scalar_as<T>(exponent);
    return [e](C x) { return int_pow(x, e); };
  } else {
    // float and double raise to the exponent as a double; the 16-bit floats to it rounded to their dtype.
    using E = std::conditional_t<std::is_same_v<T, C>, double, C>;
    E e = std::is_same_v<T, C> ? E(exponent.to_double()) : E(scalar_as<T>(exponent));
    PowCase which = pow_case(exponent.to_double(), dtype_v<T>);
    return [e, which](C x) -> C {
      switch (which) {
        case PowCase::Sqrt: return std::sqrt(x);
        case PowCase::Rsqrt: return C(1) / std::sqrt(x);
        case PowCase::Reciprocal: return C(1) / x;
        case PowCase::Square: return x * x;
        case PowCase::Cube: return x * x * x;
        case PowCase::InverseSquare: return C(1) / (x * x);
        case PowCase::General: break;
      }
      return C(std::pow(E(x), e));
    };
  }
}

void register_pow(OpRegistry& r) {
  binary_overloads<kNumeric>(r,
                             {"aten::pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor",
                              "aten::pow.Scalar(Scalar self, Tensor exponent) -> Tensor"},
                             {}, pow_tensor_make());
  unary_op<kNumeric>(r, {"aten::pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor", pow_scalar_dtype},
                     []<class T>(const OpArgs& a) { return pow_scalar_functor<T>(a.scalar(1)); });
}

// ---------------------------------------------------------------- the rest

void register_float_math(OpRegistry& r) {
  Spec to_float{.compute = float_dtype};
  binary_overloads<kFloatKind>(r, {"aten::atan2(Tensor self, Tensor other) -> Tensor"}, to_float,
                               stateless([](auto x, auto y) { return std::atan2(x, y); }));
  binary_overloads<kFloatKind>(r,
                               {"aten::copysign.Tensor(Tensor self, Tensor other) -> Tensor",
                                "aten::copysign.Scalar(Tensor self, Scalar other) -> Tensor"},
                               to_float, stateless([](auto x, auto y) { return std::copysign(x, y); }));
  // hypot does not promote integers: they fail as in ATen.
  binary_overloads<kFloatKind>(r, {"aten::hypot(Tensor self, Tensor other) -> Tensor"}, {},
                               stateless([](auto x, auto y) { return std::hypot(x, y); }));
  // x * log(y), with 0 * log(0) = 0 and NaN whenever y is NaN.
  binary_overloads<kFloatKind>(r,
                               {"aten::xlogy.Tensor(Tensor self, Tensor other) -> Tensor",
                                "aten::xlogy.Scalar_Self(Scalar self, Tensor other) -> Tensor",
                                "aten::xlogy.Scalar_Other(Tensor self, Scalar other) -> Tensor"},
                               to_float, stateless([]<class C>(C x, C y) {
                                 if (y != y) return std::numeric_limits<C>::quiet_NaN();
                                 return x == C(0) ? C(0) : x * std::log(y);
                               }));
}

}  // namespace

void register_pointwise_binary_ops(OpRegistry& r) {
  register_arithmetic(r);
  register_division(r);
  register_pow(r);
  register_float_math(r);
}

}  // namespace kiln
