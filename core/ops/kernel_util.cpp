#include "core/ops/kernel_util.h"

namespace kiln {
namespace {
struct PromotionState {
  std::optional<DType> dim, zero, wrapped;
};
std::optional<DType> promote_opt(std::optional<DType> a, DType b) {
  return a ? promote_types(*a, b) : b;
}
// ATen's combine_categories: keep `higher` unless `lower` is of a higher category.
std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (is_floating(*higher)) return higher;
  if (*higher == DType::Bool || is_floating(*lower)) return promote_types(*higher, *lower);
  return higher;
}
}  // namespace

DType result_type(std::initializer_list<PromotionOperand> operands) {
  PromotionState st;
  for (const auto& op : operands) {
    if (op.tensor) {
      if (!op.tensor->defined()) continue;
      if (op.tensor->dim() > 0) st.dim = promote_opt(st.dim, op.tensor->dtype());
      else st.zero = promote_opt(st.zero, op.tensor->dtype());
    } else {
      st.wrapped = promote_opt(st.wrapped, op.scalar->promotion_dtype());
    }
  }
  auto r = combine(st.dim, combine(st.zero, st.wrapped));
  return r ? *r : kDefaultFloat;
}

DType result_type(const std::vector<Tensor>& tensors) {
  PromotionState st;
  for (const Tensor& t : tensors) {
    if (!t.defined()) continue;
    if (t.dim() > 0) st.dim = promote_opt(st.dim, t.dtype());
    else st.zero = promote_opt(st.zero, t.dtype());
  }
  auto r = combine(st.dim, st.zero);
  return r ? *r : kDefaultFloat;
}

Shape broadcast_all(std::initializer_list<const Tensor*> tensors) {
  Shape out;
  for (const Tensor* t : tensors)
    if (t->defined()) out = broadcast_shapes(out, t->sizes());
  return out;
}

bool any_meta(const OpArgs& args) {
  for (const Value& v : args.values()) {
    if (v.is_tensor() && v.to_tensor().defined() && v.to_tensor().is_meta()) return true;
    if (v.is_list())
      for (const Value& e : v.to_list())
        if (e.is_tensor() && e.to_tensor().defined() && e.to_tensor().is_meta()) return true;
  }
  return false;
}

Tensor empty_like_meta(const Tensor& meta) {
  if (meta.is_contiguous()) return Tensor::empty(meta.sizes(), meta.dtype());
  return Tensor::empty_strided(meta.sizes(), meta.strides(), meta.dtype());
}

void add_op_with_outputs(OpRegistry& r, std::string_view schema, OpFn meta, ComputeFn compute) {
  OpFn cpu = [meta, compute](const OpArgs& args) -> ValueList {
    ValueList metas = meta(args);
    if (any_meta(args)) return metas;
    std::vector<Tensor> outs;
    ValueList result;
    for (const Value& m : metas) {
      outs.push_back(empty_like_meta(m.to_tensor()));
      result.emplace_back(outs.back());
    }
    compute(args, outs);
    return result;
  };
  r.add(schema, std::move(meta), std::move(cpu));
}

}  // namespace kiln
