#pragma once
// Helpers shared by the op family files: type promotion with PyTorch's rules,
// output allocation from meta results, and the reduced-float round trip.
#include <initializer_list>
#include <vector>

#include "core/ops/registry.h"
#include "core/tensor/loops.h"
#include "core/tensor/tensor.h"

namespace kiln {

// An operand of type promotion: a tensor or a Python number ("wrapped scalar").
struct PromotionOperand {
  const Tensor* tensor = nullptr;
  std::optional<Scalar> scalar;
  PromotionOperand(const Tensor& t) : tensor(&t) {}  // NOLINT
  PromotionOperand(const Scalar& s) : scalar(s) {}   // NOLINT
};

// torch.result_type: dimensioned tensors outrank zero-dim tensors, which outrank
// Python numbers, except that a higher category (bool < int < float) always wins.
DType result_type(std::initializer_list<PromotionOperand> operands);
DType result_type(const std::vector<Tensor>& tensors);

// Broadcasts every tensor to the common shape (expanded views, no copies).
Shape broadcast_all(std::initializer_list<const Tensor*> tensors);

// True if any tensor argument (also inside lists) is a meta tensor: run the meta function only.
bool any_meta(const OpArgs& args);

// Allocates contiguous CPU tensors like the given meta results.
Tensor empty_like_meta(const Tensor& meta);

// float16/bfloat16 compute in float32 and round once at the end, like PyTorch's
// CPU kernels: upcast() gives the float32 tensor to compute on.
inline Tensor upcast(const Tensor& t) { return is_reduced_float(t.dtype()) ? t.to(DType::Float32) : t; }
inline DType compute_dtype(DType t) { return is_reduced_float(t) ? DType::Float32 : t; }

// Registers an op whose CPU kernel is `meta` followed by `compute` filling the
// allocated outputs. A meta input short-circuits to the meta result, so callers
// doing shape propagation can call the CPU entry point too.
using ComputeFn = std::function<void(const OpArgs&, const std::vector<Tensor>& outputs)>;
void add_op_with_outputs(OpRegistry& r, std::string_view schema, OpFn meta, ComputeFn compute);

// Wraps one tensor in a result list.
inline ValueList one(Tensor t) { return ValueList{Value(std::move(t))}; }

}  // namespace kiln
