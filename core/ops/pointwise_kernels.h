#pragma once
// Shared machinery of the pointwise op families (pointwise_unary,
// _activation, _binary, _compare, _ternary). An op is described by a Spec (schema, dtype rule) and a "make"
// callable: `make.template operator()<T>(args)` returns the element functor
// for storage type T, taking and returning opmath_t<T> (float for the 16-bit
// floats, so they round once at the store, as PyTorch's CPU kernels do).
// Functors that return bool produce a bool tensor. The loops here dispatch
// once per call, never per element, and hand map_elements plain lambdas so the
// contiguous inner loops vectorize.
#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "core/ops/kernel_util.h"

namespace kiln::pointwise {

template <class T> struct opmath { using type = T; };
template <> struct opmath<Half> { using type = float; };
template <> struct opmath<BFloat16> { using type = float; };
template <class T> using opmath_t = typename opmath<T>::type;

// Which dtype kinds a kernel is instantiated for; others fail like ATen's
// dispatch macros ("add_cpu" not implemented for 'Bool').
enum Kinds : unsigned {
  kBoolKind = 1,
  kIntKind = 2,
  kFloatKind = 4,
  kIntegral = kBoolKind | kIntKind,
  kNumeric = kIntKind | kFloatKind,
  kAllKinds = kBoolKind | kIntKind | kFloatKind,
};
template <class T>
inline constexpr unsigned kind_of = std::is_same_v<T, bool> ? kBoolKind : is_floating_v<T> ? kFloatKind : kIntKind;

// ATen's names for dtypes in dispatch errors: 'Float', 'Long', 'Bool'.
std::string_view aten_type_name(DType t);
[[noreturn]] void fail_not_implemented(std::string_view kernel, DType t);
// "aten::add" -> "add_cpu", the name the dispatch error mentions.
std::string kernel_name(const OpArgs& args);

template <unsigned kinds, class Fn>
void dispatch_kinds(DType t, std::string_view kernel, Fn&& fn) {
  dispatch_all(t, [&]<class T>() {
    if constexpr ((kind_of<T> & kinds) != 0) fn.template operator()<T>();
    else fail_not_implemented(kernel, t);
  });
}

// ---------------------------------------------------------------- element helpers

template <class C> constexpr bool may_be_negative = std::is_signed_v<C> || std::is_floating_point_v<C>;
template <class C> inline bool is_negative(C x) {
  if constexpr (may_be_negative<C>) return x < C(0);
  else return false;
}
template <class C> inline bool is_nan(C x) {
  if constexpr (std::is_floating_point_v<C>) return x != x;
  else return false;
}
// The bounds clamp uses for a missing limit: infinities for floats.
template <class C> inline C lowest_value() {
  if constexpr (std::is_floating_point_v<C>) return -std::numeric_limits<C>::infinity();
  else return std::numeric_limits<C>::lowest();
}
template <class C> inline C highest_value() {
  if constexpr (std::is_floating_point_v<C>) return std::numeric_limits<C>::infinity();
  else return std::numeric_limits<C>::max();
}
// The largest finite value of a storage type (nan_to_num's default for inf).
template <class T> inline double finite_max() {
  if constexpr (std::is_same_v<T, Half>) return 65504.0;
  else if constexpr (std::is_same_v<T, BFloat16>) return 3.3895313892515355e38;
  else return double(std::numeric_limits<T>::max());
}

// maximum/minimum (and clamp_min/clamp_max with tensor bounds): NaN from
// either side wins.
template <class C> inline C max_nan(C a, C b) {
  if constexpr (std::is_same_v<C, bool>) return a || b;
  else if (is_nan(a) || is_nan(b)) return std::numeric_limits<C>::quiet_NaN();
  else return a > b ? a : b;
}
template <class C> inline C min_nan(C a, C b) {
  if constexpr (std::is_same_v<C, bool>) return a && b;
  else if (is_nan(a) || is_nan(b)) return std::numeric_limits<C>::quiet_NaN();
  else return a < b ? a : b;
}
// clamp with scalar bounds: a NaN input stays NaN (std::max/std::min keep
// their first argument when the comparison is false), a NaN bound is ignored.
template <class C> inline C clamp_value(C x, C lo, C hi) { return std::min(std::max(x, lo), hi); }

// Rounds an intermediate to T where ATen's kernel computes in T itself (the
// float16 paths of a few ops, which round after every step); identity
// otherwise, including bfloat16, whose kernels compute in float.
template <class T, class C> inline C step_round(C v) {
  if constexpr (std::is_same_v<T, Half>) return C(T(v));
  else return v;
}

// A Python number taking part as an operand: cast to the storage type like a
// wrapped-number tensor (no range check; uint8 + 300 wraps), in compute type.
template <class T> inline opmath_t<T> cast_scalar(const Scalar& s) { return opmath_t<T>(s.to<T>()); }

// ATen's Scalar::to<T>() refuses values outside T's range ("value cannot be
// converted to type uint8_t without overflow"); infinities and NaN pass for
// floats, and unsigned types accept negatives down to -max (they wrap).
void check_scalar_fits(const Scalar& s, DType t);
// A Scalar argument (alpha, bounds, fill values) as ATen's `to<scalar_t>()`:
// rounded to the storage type first (a half tensor clamps at the half nearest 0.1).
template <class T> inline opmath_t<T> scalar_as(const Scalar& s) {
  check_scalar_fits(s, dtype_v<T>);
  return cast_scalar<T>(s);
}
// ...and as `to<opmath_t>()`: kept at compute precision.
template <class T> inline opmath_t<T> scalar_opmath(const Scalar& s) {
  check_scalar_fits(s, dtype_v<opmath_t<T>>);
  return s.to<opmath_t<T>>();
}

// Integer +, -, * wrapping like two's complement hardware, as PyTorch's
// kernels behave in practice; in C++ signed overflow is undefined, so they go
// through an unsigned type at least as wide as int (uint16 * uint16 would
// otherwise overflow int). Floats and bool use plain arithmetic.
template <class C> constexpr bool wraps_v = std::is_integral_v<C> && !std::is_same_v<C, bool>;
template <class C> using wrap_t = std::conditional_t<(sizeof(C) <= 4), uint32_t, uint64_t>;
template <class C> inline C add_wrap(C a, C b) {
  if constexpr (wraps_v<C>) return C(wrap_t<C>(a) + wrap_t<C>(b));
  else return C(a + b);
}
template <class C> inline C sub_wrap(C a, C b) {
  if constexpr (wraps_v<C>) return C(wrap_t<C>(a) - wrap_t<C>(b));
  else return C(a - b);
}
template <class C> inline C mul_wrap(C a, C b) {
  if constexpr (wraps_v<C>) return C(wrap_t<C>(a) * wrap_t<C>(b));
  else return C(a * b);
}
template <class C> inline C neg_wrap(C a) {
  if constexpr (wraps_v<C>) return sub_wrap(C(0), a);
  else return C(-a);  // keeps -0.0
}

// Integer division helpers shared by div, remainder, floor_divide and fmod:
// PyTorch raises on a zero divisor instead of trapping.
template <class C> inline void check_divisor(C b) {
  if constexpr (std::is_integral_v<C>)
    if (b == C(0)) throw Error("ZeroDivisionError");
}
// a / b truncating, without the x86 trap of INT_MIN / -1 (it wraps, as on GPUs).
template <class C> inline C int_div_trunc(C a, C b) {
  if constexpr (std::is_signed_v<C>)
    if (b == C(-1)) return C(std::make_unsigned_t<C>(0) - std::make_unsigned_t<C>(a));
  return C(a / b);
}
template <class C> inline C int_mod_trunc(C a, C b) {
  if constexpr (std::is_signed_v<C>)
    if (b == C(-1)) return C(0);
  return C(a % b);
}

// ---------------------------------------------------------------- operands and loops

// A tensor whose every element is its first one (one element, or all
// strides 0): ATen's TensorIterator treats it as a scalar operand.
bool is_broadcast_scalar(const Tensor& t);

// An input of a pointwise kernel: a tensor, or a Python number. `exact` marks
// a number that PyTorch reads at compute precision (original_scalar_value in
// mul/div for 16-bit floats) rather than rounded to the tensor dtype first.
struct Operand {
  Tensor tensor = {};
  std::optional<Scalar> scalar = std::nullopt;
  bool exact = false;
  bool is_constant() const { return scalar.has_value() || (tensor.defined() && is_broadcast_scalar(tensor)); }
};

inline Tensor expand_to(const Tensor& t, const Shape& sizes) {
  return t.sizes() == sizes ? t : t.expand(sizes);
}

template <class T>
Tensor materialize(const Operand& o, const Shape& sizes) {
  if (o.scalar) return Tensor::scalar_tensor(*o.scalar, dtype_v<T>).expand(sizes);
  return expand_to(o.tensor, sizes);
}

template <class T>
opmath_t<T> constant_value(const Operand& o) {
  using C = opmath_t<T>;
  if (o.scalar) {
    if constexpr (is_floating_v<T>)
      if (o.exact) return C(o.scalar->to_double());
    return cast_scalar<T>(*o.scalar);
  }
  return C(*static_cast<const T*>(o.tensor.raw_data()));
}

template <class T, class R>
using out_elem_t = std::conditional_t<std::is_same_v<R, bool>, bool, T>;

template <class Out>
void check_out_dtype(const Tensor& out) {
  KILN_CHECK(out.dtype() == dtype_v<Out>, "pointwise output is ", dtype_name(out.dtype()), ", kernel writes ",
             dtype_name(dtype_v<Out>));
}

// A unary element functor whose branch-free `fast` formula is exact where
// `in_range` holds (NaN must fail it). The loop runs `fast` over a block, then
// recomputes the out-of-range elements with `slow`, so the main loop still
// vectorizes.
template <class Fast, class Slow, class InRange>
struct Patched {
  Fast fast;
  Slow slow;
  InRange in_range;
};
template <class F> inline constexpr bool is_patched_v = false;
template <class A, class B, class P> inline constexpr bool is_patched_v<Patched<A, B, P>> = true;

template <class T, class F>
void patched_loop(const Tensor& out, const Tensor& in, const F& f) {
  using C = opmath_t<T>;
  for_each_run<2>({&out, &in}, [&f](char** p, const int64_t* s, int64_t n) {
    constexpr int64_t kBlock = 256;  // small enough to patch while still in L1
    for (int64_t b = 0; b < n; b += kBlock) {
      int64_t m = std::min(kBlock, n - b);
      if (s[0] == int64_t(sizeof(T)) && s[1] == int64_t(sizeof(T))) {
        T* o = reinterpret_cast<T*>(p[0]) + b;
        const T* x = reinterpret_cast<const T*>(p[1]) + b;
        for (int64_t i = 0; i < m; ++i) o[i] = T(f.fast(C(x[i])));
        for (int64_t i = 0; i < m; ++i)
          if (!f.in_range(C(x[i]))) o[i] = T(f.slow(C(x[i])));
      } else {
        for (int64_t i = b; i < b + m; ++i) {
          C v = C(*reinterpret_cast<const T*>(p[1] + i * s[1]));
          *reinterpret_cast<T*>(p[0] + i * s[0]) = T(f.in_range(v) ? f.fast(v) : f.slow(v));
        }
      }
    }
  });
}

// out = f(in); `in` has the compute dtype. make: see the top of this file.
template <unsigned kinds, class Make>
void unary_kernel(std::string_view kernel, const Tensor& out, const Tensor& in, Make&& make) {
  dispatch_kinds<kinds>(in.dtype(), kernel, [&]<class T>() {
    using C = opmath_t<T>;
    auto f = make.template operator()<T>();
    if constexpr (is_patched_v<decltype(f)>) {
      check_out_dtype<T>(out);
      patched_loop<T>(out, expand_to(in, out.sizes()), f);
    } else {
      using Out = out_elem_t<T, decltype(f(C{}))>;
      check_out_dtype<Out>(out);
      map_elements<Out, T>(out, [f](T x) { return Out(f(C(x))); }, expand_to(in, out.sizes()));
    }
  });
}

// out = f(a, b), broadcasting. A constant `b` (a number or a one-element
// tensor) is bound into the functor, so tensor-scalar ops stream one input.
template <unsigned kinds, class Make>
void binary_kernel(std::string_view kernel, const Tensor& out, DType compute, const Operand& a, const Operand& b,
                   Make&& make) {
  dispatch_kinds<kinds>(compute, kernel, [&]<class T>() {
    using C = opmath_t<T>;
    auto f = make.template operator()<T>();
    using Out = out_elem_t<T, decltype(f(C{}, C{}))>;
    check_out_dtype<Out>(out);
    Tensor ta = materialize<T>(a, out.sizes());
    if (b.is_constant()) {
      C y = constant_value<T>(b);
      map_elements<Out, T>(out, [f, y](T x) { return Out(f(C(x), y)); }, ta);
    } else {
      map_elements<Out, T, T>(out, [f](T x, T y) { return Out(f(C(x), C(y))); }, ta, expand_to(b.tensor, out.sizes()));
    }
  });
}

// out = f(a, b, c), broadcasting; all three have the compute dtype.
template <unsigned kinds, class Make>
void ternary_kernel(std::string_view kernel, const Tensor& out, DType compute, const Operand& a, const Operand& b,
                    const Operand& c, Make&& make) {
  dispatch_kinds<kinds>(compute, kernel, [&]<class T>() {
    using C = opmath_t<T>;
    auto f = make.template operator()<T>();
    using Out = out_elem_t<T, decltype(f(C{}, C{}, C{}))>;
    check_out_dtype<Out>(out);
    map_elements<Out, T, T, T>(out, [f](T x, T y, T z) { return Out(f(C(x), C(y), C(z))); },
                               materialize<T>(a, out.sizes()), materialize<T>(b, out.sizes()),
                               materialize<T>(c, out.sizes()));
  });
}

// ---------------------------------------------------------------- registration

// Picks the compute dtype from the promoted dtype of the inputs (and may
// reject bad arguments: it runs in the meta function too).
using ComputeRule = DType (*)(const OpArgs& args, DType common);
inline DType same_dtype(const OpArgs&, DType common) { return common; }
// Ops that PyTorch computes in floating point: integers and bool become float32.
inline DType float_dtype(const OpArgs&, DType common) { return is_floating(common) ? common : kDefaultFloat; }

struct Spec {
  std::string_view schema = {};
  ComputeRule compute = same_dtype;
  bool predicate = false;     // output is bool (comparisons, isnan, ...)
  bool exact_scalar = false;  // a scalar second operand is read at compute precision (mul, div)
  std::array<int, 3> operands = {0, 1, 2};  // schema positions of the inputs
  std::string_view kernel = {};  // a literal: ATen's kernel name in dispatch errors, when not "<op>_cpu"
};

// The resolved operands, compute dtype and (meta) output of one call.
struct Plan {
  std::array<Operand, 3> in;
  DType compute = DType::Float32;
  Tensor out;
};
// `arity` inputs at spec.operands, promoted together; when `convert`, tensor
// inputs are converted to the compute dtype (no copy when they already match).
Plan plan_pointwise(const Spec& spec, const OpArgs& args, int arity, bool convert);

// Wraps a functor that needs no arguments as a make.
template <class F>
auto stateless(F f) {
  return [f]<class T>(const OpArgs&) { return f; };
}

template <class Make>
auto bind_args(const Make& make, const OpArgs& args) {
  return [&make, &args]<class T>() { return make.template operator()<T>(args); };
}

// Registers an op of `arity` inputs at spec.operands: meta from the plan,
// and a CPU kernel running `make`'s functor over the converted inputs.
template <int arity, unsigned kinds, class Make>
void pointwise_op(OpRegistry& r, Spec spec, Make make) {
  std::string schema(std::exchange(spec.schema, {}));  // the caller's text need not outlive registration
  auto meta = [spec](const OpArgs& a) { return one(plan_pointwise(spec, a, arity, false).out); };
  add_op_with_outputs(r, schema, meta, [spec, make](const OpArgs& a, const std::vector<Tensor>& outs) {
    Plan p = plan_pointwise(spec, a, arity, true);
    std::string kernel = spec.kernel.empty() ? kernel_name(a) : std::string(spec.kernel);
    auto bound = bind_args(make, a);
    if constexpr (arity == 1) unary_kernel<kinds>(kernel, outs[0], p.in[0].tensor, bound);
    else if constexpr (arity == 2) binary_kernel<kinds>(kernel, outs[0], p.compute, p.in[0], p.in[1], bound);
    else ternary_kernel<kinds>(kernel, outs[0], p.compute, p.in[0], p.in[1], p.in[2], bound);
  });
}
template <unsigned kinds, class Make>
void unary_op(OpRegistry& r, Spec spec, Make make) {
  pointwise_op<1, kinds>(r, spec, std::move(make));
}
template <unsigned kinds, class Make>
void binary_op(OpRegistry& r, Spec spec, Make make) {
  pointwise_op<2, kinds>(r, spec, std::move(make));
}
template <unsigned kinds, class Make>
void ternary_op(OpRegistry& r, Spec spec, Make make) {
  pointwise_op<3, kinds>(r, spec, std::move(make));
}
// Several overloads (.Tensor, .Scalar, ...) sharing one spec and functor.
template <unsigned kinds, class Make>
void binary_overloads(OpRegistry& r, std::initializer_list<const char*> schemas, Spec spec, const Make& make) {
  for (const char* schema : schemas) {
    spec.schema = schema;
    binary_op<kinds>(r, spec, make);
  }
}

}  // namespace kiln::pointwise
