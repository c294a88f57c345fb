// Binary pointwise ops that select or compare: maximum/minimum (and the
// NaN-ignoring fmax/fmin), comparisons and logical ops (bool out, compared in
// the promoted dtype), and bitwise ops on integers and bool.
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

}  // namespace

void register_pointwise_compare_ops(OpRegistry& r) {
  register_extrema(r);
  register_comparison_and_logic(r);
}

}  // namespace kiln
