// Binary pointwise ops that select or compare: maximum/minimum (and the
// NaN-ignoring fmax/fmin), comparisons and logical ops (bool out, compared in
// the promoted dtype), bitwise ops on integers and bool, and the integer shifts.
#include <type_traits>

#include "core/ops/pointwise_kernels.h"

namespace kiln {
namespace {
using namespace pointwise;

void register_extrema(OpRegistry& r) {
  binary_op<kAllKinds>(r, {"aten::maximum(Tensor self, Tensor other) -> Tensor"},
                       stateless([](auto x, auto y) { return max_nan(x, y); }));
  binary_op<kAllKinds>(r, {"aten::minimum(Tensor self, Tensor other) -> Tensor"},
                       stateless([](auto x, auto y) { return min_nan(x, y); }));
  // fmax/fmin ignore a NaN when the other side is a number.
  binary_op<kAllKinds>(r, {"aten::fmax(Tensor self, Tensor other) -> Tensor"}, stateless([]<class C>(C x, C y) -> C {
                         if constexpr (std::is_floating_point_v<C>) return std::fmax(x, y);
                         else return max_nan(x, y);
                       }));
  binary_op<kAllKinds>(r, {"aten::fmin(Tensor self, Tensor other) -> Tensor"}, stateless([]<class C>(C x, C y) -> C {
                         if constexpr (std::is_floating_point_v<C>) return std::fmin(x, y);
                         else return min_nan(x, y);
                       }));
}

// comparisons get .Tensor and .Scalar overloads; bool out, every dtype.
template <class F>
void comparison(OpRegistry& r, const std::string& name, F f) {
  std::string t = "aten::" + name + ".Tensor(Tensor self, Tensor other) -> Tensor";
  std::string s = "aten::" + name + ".Scalar(Tensor self, Scalar other) -> Tensor";
  binary_overloads<kAllKinds>(r, {t.c_str(), s.c_str()}, {.predicate = true}, stateless(f));
}
template <class F>
void bitwise(OpRegistry& r, const std::string& name, F f) {
  std::string t = "aten::" + name + ".Tensor(Tensor self, Tensor other) -> Tensor";
  std::string s = "aten::" + name + ".Scalar(Tensor self, Scalar other) -> Tensor";
  binary_overloads<kIntegral>(r, {t.c_str(), s.c_str()}, {}, stateless(f));
}

void register_comparison_and_logic(OpRegistry& r) {
  comparison(r, "eq", [](auto x, auto y) { return x == y; });
  comparison(r, "ne", [](auto x, auto y) { return x != y; });
  comparison(r, "lt", [](auto x, auto y) { return x < y; });
  comparison(r, "le", [](auto x, auto y) { return x <= y; });
  comparison(r, "gt", [](auto x, auto y) { return x > y; });
  comparison(r, "ge", [](auto x, auto y) { return x >= y; });
  Spec logical{.predicate = true};
  binary_overloads<kAllKinds>(r, {"aten::logical_and(Tensor self, Tensor other) -> Tensor"}, logical,
                              stateless([](auto x, auto y) { return bool(x) && bool(y); }));
  binary_overloads<kAllKinds>(r, {"aten::logical_or(Tensor self, Tensor other) -> Tensor"}, logical,
                              stateless([](auto x, auto y) { return bool(x) || bool(y); }));
  binary_overloads<kAllKinds>(r, {"aten::logical_xor(Tensor self, Tensor other) -> Tensor"}, logical,
                              stateless([](auto x, auto y) { return bool(x) != bool(y); }));
  bitwise(r, "bitwise_and", []<class C>(C x, C y) { return C(x & y); });
  bitwise(r, "bitwise_or", []<class C>(C x, C y) { return C(x | y); });
  bitwise(r, "bitwise_xor", []<class C>(C x, C y) { return C(x ^ y); });
}

// ATen's lshift/rshift kernels: the operands promote like any binary op (a
// Python number as a wrapped scalar), then a count that is negative or too
// large for the type is not left to C++ (where it is undefined) but defined:
// a left shift gives 0, a right shift fills with the sign bit (0 for uint8).
template <class C>
C shift_left(C a, C b) {
  constexpr C bits = C(sizeof(C) * 8);
  if (static_cast<std::make_signed_t<C>>(b) < 0 || b >= bits) return C(0);
  return C(static_cast<std::make_unsigned_t<C>>(a) << b);  // unsigned: no overflow UB
}
template <class C>
C shift_right(C a, C b) {
  constexpr C max_shift = C(sizeof(C) * 8 - std::is_signed_v<C>);
  if (static_cast<std::make_signed_t<C>>(b) < 0 || b >= max_shift) return C(a >> max_shift);
  return C(a >> b);
}

// __lshift__/__rshift__ and bitwise_left_shift/bitwise_right_shift share the
// kernel, so the dispatch error names it ("lshift_cpu"), not the op. No bool.
template <class F>
void shift(OpRegistry& r, const std::string& dunder, const std::string& named, std::string_view kernel, F f) {
  std::vector<std::string> schemas = {
      "aten::" + dunder + ".Tensor(Tensor self, Tensor other) -> Tensor",
      "aten::" + dunder + ".Scalar(Tensor self, Scalar other) -> Tensor",
      "aten::" + named + ".Tensor(Tensor self, Tensor other) -> Tensor",
      "aten::" + named + ".Tensor_Scalar(Tensor self, Scalar other) -> Tensor",
      "aten::" + named + ".Scalar_Tensor(Scalar self, Tensor other) -> Tensor"};
  for (const std::string& s : schemas) binary_op<kIntKind>(r, {.schema = s, .kernel = kernel}, stateless(f));
}

void register_shifts(OpRegistry& r) {
  shift(r, "__lshift__", "bitwise_left_shift", "lshift_cpu", []<class C>(C x, C y) { return shift_left(x, y); });
  shift(r, "__rshift__", "bitwise_right_shift", "rshift_cpu", []<class C>(C x, C y) { return shift_right(x, y); });
}

}  // namespace

void register_pointwise_compare_ops(OpRegistry& r) {
  register_extrema(r);
  register_comparison_and_logic(r);
  register_shifts(r);
}

}  // namespace kiln
