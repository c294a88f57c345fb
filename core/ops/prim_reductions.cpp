// Reductions that PyTorch has only as prims, which Inductor's graphs carry:
// prims::xor_sum (torch/_prims) and prims::prepare_softmax_online
// (torch/_inductor/inductor_prims.py).
#include <set>

#include "core/ops/kernel_util.h"
#include "core/ops/reduce_util.h"

namespace kiln {
namespace {

constexpr std::string_view kXorSum = "prims::xor_sum";

// ---------------------------------------------------------------- xor_sum

// PyTorch defines xor_sum by its meta function alone (its eager fallback
// raises "xor_sum only implemented with inductor"): the dims listed are
// removed, no keepdim, the dtype kept. Inductor lowers it to a reduction
// combining with ^ from 0, so an empty reduction gives 0, and the order of
// the elements cannot matter. The meta function (compute_reduction_output_shape)
// accepts only non-negative dims below the rank (0 also for a zero-dim tensor)
// and a list, not None; a repeated dim is removed once.
struct XorSumCall {
  Tensor x;
  reduction::DimMask mask;
  Shape out_sizes;
};

XorSumCall xor_sum_call(const OpArgs& a) {
  XorSumCall c{a.tensor(0), {}, {}};
  const Tensor& x = c.x;
  KILN_USER_CHECK(is_integral(x.dtype(), true), kXorSum, ": expected an integer or bool tensor, got ",
                  dtype_name(x.dtype()), " (Inductor xors the bits of integers only)");
  std::optional<std::vector<int64_t>> dims = a.opt_ints(1);
  KILN_USER_CHECK(dims.has_value(), kXorSum, ": dims must be a list (PyTorch's meta function iterates it)");
  std::optional<DType> out = a.opt_dtype(2);
  KILN_USER_CHECK(!out || *out == x.dtype(), kXorSum, ": output_dtype ", out ? dtype_name(*out) : "",
                  " differs from the input's ", dtype_name(x.dtype()),
                  "; Kiln does not know how Inductor would convert it");
  std::set<int64_t> reduced;
  for (int64_t d : *dims) {
    KILN_USER_CHECK(d >= 0 && (d < x.dim() || d == 0), kXorSum, ": dim ", d, " is out of range for a tensor of ",
                    x.dim(), " dims (prims take non-negative dims)");
    reduced.insert(d);
  }
  c.mask.assign(size_t(x.dim()), false);
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (reduced.count(d)) c.mask[size_t(d)] = true;
    else c.out_sizes.push_back(x.size(d));
  }
  return c;
}

// bool accumulates as uint8 (the engine keeps a std::vector of accumulators).
template <class T>
struct XorOp {
  using acc_t = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;
  using ctx_t = reduction::NoCtx;
  static acc_t identity() { return acc_t(0); }
  ctx_t ctx(int64_t) const { return {}; }
  void step(acc_t& a, T x, ctx_t) const { combine(a, acc_t(x)); }
  void combine(acc_t& a, acc_t b) const { a = acc_t(a ^ b); }
};

ValueList xor_sum_meta(const OpArgs& a) {
  XorSumCall c = xor_sum_call(a);
  return one(Tensor::meta(c.out_sizes, c.x.dtype()));
}

void xor_sum_compute(const OpArgs& a, const std::vector<Tensor>& outs) {
  XorSumCall c = xor_sum_call(a);
  dispatch_all(c.x.dtype(), [&]<class T>() {
    if constexpr (std::is_integral_v<T>) {
      auto acc = reduction::accumulate<T>(c.x, c.mask, XorOp<T>{});
      T* o = outs[0].data<T>();
      for (size_t i = 0; i < acc.size(); ++i) o[i] = T(acc[i]);
    }
  });
}

// ---------------------------------------------------------------- prepare_softmax_online

// (max, sum of exp(x - max)) over `dim`, both keeping it: the prim's eager
// definition (eager_prepare_softmax) spelled with the same ATen ops, so dtypes,
// NaN and -inf rows (an all -inf row gives NaN), integer inputs and error
// messages all come out as those ops give them.
ValueList prepare_softmax_online(const OpArgs& a) {
  Value dims = Value::int_list({a.integer(1)});
  Tensor max = invoke_tensor("aten::amax", {a[0], dims, true});
  Tensor shifted = invoke_tensor("aten::sub.Tensor", {a[0], max});
  Tensor sum = invoke_tensor("aten::sum.dim_IntList", {invoke_tensor("aten::exp", {shifted}), dims, true});
  return {Value(max), Value(sum)};
}

}  // namespace

void register_prim_reductions_ops(OpRegistry& r) {
  add_op_with_outputs(r, "prims::xor_sum(Tensor inp, int[]? dims, *, ScalarType? output_dtype=None) -> Tensor",
                      xor_sum_meta, xor_sum_compute);
  // The ops it calls take meta tensors too, so one function serves as both.
  r.add("prims::prepare_softmax_online(Tensor a, int dim) -> (Tensor, Tensor)", prepare_softmax_online,
        prepare_softmax_online);
}

}  // namespace kiln
