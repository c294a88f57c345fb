// Three-input pointwise ops: where / masked_fill (select by a bool
// condition), lerp, addcmul, addcdiv and Inductor's prims::fma.
#include <cmath>

#include "core/ops/pointwise_kernels.h"

namespace kiln {
namespace {
using namespace pointwise;

// out = cond ? a : b, broadcasting all three; a and b have the compute dtype
// (numbers become it too).
void select_kernel(const Tensor& out, const Tensor& cond, const Operand& a, const Operand& b) {
  dispatch_all(out.dtype(), [&]<class T>() {
    const Shape& s = out.sizes();
    map_elements<T, bool, T, T>(out, [](bool c, T x, T y) { return c ? x : y; }, expand_to(cond, s),
                                materialize<T>(a, s), materialize<T>(b, s));
  });
}

void check_condition(const Tensor& cond, const char* message) {
  KILN_USER_CHECK(cond.dtype() == DType::Bool, message, aten_type_name(cond.dtype()));
}

// where's self/other sit at positions 1 and 2; the condition joins the broadcast.
Plan where_plan(const OpArgs& a, bool convert) {
  Spec spec{.operands = {1, 2, 0}};
  Plan p = plan_pointwise(spec, a, 2, convert);
  const Tensor& cond = a.tensor(0);
  check_condition(cond, "where expected condition to be a boolean tensor, but got a tensor with dtype ");
  p.out = Tensor::meta(broadcast_shapes(p.out.sizes(), cond.sizes()), p.compute);
  return p;
}

void register_where(OpRegistry& r) {
  auto meta = [](const OpArgs& a) { return one(where_plan(a, false).out); };
  auto compute = [](const OpArgs& a, const std::vector<Tensor>& outs) {
    Plan p = where_plan(a, true);
    select_kernel(outs[0], a.tensor(0), p.in[0], p.in[1]);
  };
  for (const char* schema : {"aten::where.self(Tensor condition, Tensor self, Tensor other) -> Tensor",
                             "aten::where.ScalarSelf(Tensor condition, Scalar self, Tensor other) -> Tensor",
                             "aten::where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor",
                             "aten::where.Scalar(Tensor condition, Scalar self, Scalar other) -> Tensor"})
    add_op_with_outputs(r, schema, meta, compute);
}

// masked_fill keeps self's dtype; the value (a number, or a 0-dim tensor) is
// converted to it.
Scalar fill_value(const OpArgs& a) { return a[2].is_tensor() ? a.tensor(2).item() : a.scalar(2); }

ValueList masked_fill_meta(const OpArgs& a) {
  const Tensor &self = a.tensor(0), &mask = a.tensor(1);
  check_condition(mask, "masked_fill_ only supports boolean masks, but got mask with dtype ");
  if (a[2].is_tensor()) {
    const Tensor& v = a.tensor(2);
    KILN_USER_CHECK(v.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
                    v.dim(), " dimension(s).");
  }
  return one(Tensor::meta(broadcast_shapes(self.sizes(), mask.sizes()), self.dtype()));
}

void register_masked_fill(OpRegistry& r) {
  auto compute = [](const OpArgs& a, const std::vector<Tensor>& outs) {
    Scalar value = fill_value(a);
    check_scalar_fits(value, outs[0].dtype());
    select_kernel(outs[0], a.tensor(1), Operand{Tensor(), value}, Operand{a.tensor(0)});
  };
  add_op_with_outputs(r, "aten::masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor",
                      masked_fill_meta, compute);
  add_op_with_outputs(r, "aten::masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor",
                      masked_fill_meta, compute);
}

// lerp takes no promotion: end (and a tensor weight) must match self's dtype.
DType lerp_dtype(const OpArgs& a, DType) {
  DType self = a.tensor(0).dtype();
  KILN_USER_CHECK(a.tensor(1).dtype() == self, "expected dtype ", dtype_name(self), " for `end` but got dtype ",
                  dtype_name(a.tensor(1).dtype()));
  if (a[2].is_tensor())
    KILN_USER_CHECK(a.tensor(2).dtype() == self, "expected dtype ", dtype_name(self), " for `weight` but got dtype ",
                    dtype_name(a.tensor(2).dtype()));
  return self;
}

// ATen's lerp: small weights step from self, large ones back from end, so
// both ends are reproduced exactly.
template <class C> C lerp_value(C from, C to, C w) {
  return std::abs(w) < C(0.5) ? from + w * (to - from) : to - (to - from) * (C(1) - w);
}

DType addcdiv_dtype(const OpArgs& a, DType common) {
  KILN_USER_CHECK(!(is_integral(a.tensor(1).dtype(), true) && is_integral(a.tensor(2).dtype(), true)),
                  "Integer division with addcdiv is no longer supported, and in a future release addcdiv will "
                  "perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented "
                  "as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
                  "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the "
                  "latter implementation: (input + value * tensor1 / tensor2), for all dtypes.");
  return common;
}

// self + value * t1 (*|/) t2, value at compute precision (argument 3).
template <bool divide>
auto addc_make() {
  return []<class T>(const OpArgs& a) {
    using C = opmath_t<T>;
    C value = scalar_opmath<T>(a.scalar(3));
    return [value](C self, C t1, C t2) {
      if constexpr (divide) return self + value * t1 / t2;
      else return add_wrap(self, mul_wrap(mul_wrap(value, t1), t2));
    };
  };
}

void register_interpolation(OpRegistry& r) {
  binary_op<kFloatKind>(r, {"aten::lerp.Scalar(Tensor self, Tensor end, Scalar weight) -> Tensor", lerp_dtype},
                        []<class T>(const OpArgs& a) {
                          using C = opmath_t<T>;
                          C w = scalar_opmath<T>(a.scalar(2));
                          return [w](C from, C to) { return lerp_value(from, to, w); };
                        });
  ternary_op<kFloatKind>(r, {"aten::lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor", lerp_dtype},
                         stateless([](auto from, auto to, auto w) { return lerp_value(from, to, w); }));
  ternary_op<kNumeric>(r, {"aten::addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor"},
                       addc_make<false>());
  // Integer addcdiv is rejected, so it only ever computes in floating point.
  ternary_op<kFloatKind>(
      r, {"aten::addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor", addcdiv_dtype},
      addc_make<true>());
}

// prims::fma (Inductor's inductor_prims.py; its _softmax_backward_data
// decomposition writes one) is documented as a * b + c "without rounding after
// the multiplication", which is what the code Inductor generates computes
// (std::fma on the CPU, libdevice fma on CUDA), so floats round once here.
// (The prim's eager fallback, (a * b) + c, rounds twice; Kiln follows the
// definition, not that fallback.) Integers and bool compute a * b + c exactly
// as mul and add do. The dtype is the fallback's: a * b promotes first, then
// its result with c, which differs from promoting all three at once when a
// zero-dim operand decides a category.
DType fma_dtype(const OpArgs& a, DType) {
  const Tensor &x = a.tensor(0), &y = a.tensor(1), &z = a.tensor(2);
  Tensor product = Tensor::meta(broadcast_shapes(x.sizes(), y.sizes()), result_type({x, y}));
  return result_type({product, z});
}

void register_fma(OpRegistry& r) {
  ternary_op<kAllKinds>(r, {"prims::fma(Tensor a, Tensor b, Tensor c) -> Tensor", fma_dtype},
                        stateless([]<class C>(C x, C y, C z) -> C {
                          if constexpr (std::is_floating_point_v<C>) return std::fma(x, y, z);
                          else return add_wrap(mul_wrap(x, y), z);
                        }));
}

}  // namespace

void register_pointwise_ternary_ops(OpRegistry& r) {
  register_where(r);
  register_masked_fill(r);
  register_interpolation(r);
  register_fma(r);
}

}  // namespace kiln
