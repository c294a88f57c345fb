#pragma once
// Short spellings of the ATen calls derivative formulas make again and again.
// Each emits ordinary registered ops, so a formula stays a readable line and
// the graph it builds is what PyTorch's AOT graphs hold.
#include <cstdint>
#include <vector>

#include "compiler/pipeline/emitter.h"

namespace kiln::aot {

using pipeline::Emitter;
using pipeline::Var;

Var mul(Emitter& e, Var a, Var b);
Var mul(Emitter& e, Var a, const Value& scalar);
Var mul(Emitter& e, Var a, double scalar);
Var div(Emitter& e, Var a, Var b);
Var div(Emitter& e, Var a, double scalar);
Var add(Emitter& e, Var a, Var b);
Var add(Emitter& e, Var a, double scalar);
Var sub(Emitter& e, Var a, Var b);
Var rsub(Emitter& e, double scalar, Var a);  // scalar - a
Var neg(Emitter& e, Var a);
Var unary(Emitter& e, const char* op, Var a);  // op(a), e.g. "aten::cos.default"

// cond ? a : b, with a or b a constant.
Var where(Emitter& e, Var cond, Var a, Var b);
Var where(Emitter& e, Var cond, Var a, double b);
Var where(Emitter& e, Var cond, double a, Var b);
Var masked_fill(Emitter& e, Var a, Var mask, double value);
// Elementwise comparison with a constant or a tensor: "gt", "ge", "lt", "le", "eq", "ne".
Var compare(Emitter& e, const char* how, Var a, double scalar);
Var compare(Emitter& e, const char* how, Var a, Var b);
Var logical_and(Emitter& e, Var a, Var b);
Var logical_or(Emitter& e, Var a, Var b);
Var logical_not(Emitter& e, Var a);

Var zeros_like(Emitter& e, Var like);
Var ones_like(Emitter& e, Var like);
Var full_like(Emitter& e, Var like, double value);
Var zeros(Emitter& e, Shape sizes, DType dtype);
Var cast(Emitter& e, Var a, DType dtype);  // a itself when the dtype matches

Var reshape(Emitter& e, Var a, Shape sizes);
Var expand(Emitter& e, Var a, Shape sizes);
Var unsqueeze(Emitter& e, Var a, int64_t dim);
Var squeeze(Emitter& e, Var a, int64_t dim);
Var permute(Emitter& e, Var a, const std::vector<int64_t>& dims);
Var transpose(Emitter& e, Var a, int64_t d0, int64_t d1);
Var contiguous(Emitter& e, Var a);
Var sum(Emitter& e, Var a, const std::vector<int64_t>& dims, bool keepdim);
Var sum_all(Emitter& e, Var a);
Var mm(Emitter& e, Var a, Var b);
Var bmm(Emitter& e, Var a, Var b);

// Sums a broadcast gradient back down to `sizes` (ATen's sum_to).
Var sum_to(Emitter& e, Var g, Shape sizes);
// Dims of a reduction, wrapped; empty (or None) means all dims as for sum.dim_IntList.
std::vector<int64_t> reduced_dims(const std::vector<int64_t>& dims, int64_t ndim);
// Puts back the dims a reduction without keepdim removed, so `g` broadcasts
// against the input again.
Var restore_reduced_dims(Emitter& e, Var g, const std::vector<int64_t>& dims, bool keepdim, int64_t ndim);
// Number of elements a reduction over `dims` (wrapped) combined.
int64_t reduced_count(Shape sizes, const std::vector<int64_t>& dims);

// Places `g` (shaped like a select/slice of `sizes`) back into zeros of `sizes`.
Var slice_backward(Emitter& e, Var g, Shape sizes, int64_t dim, int64_t start, int64_t end, int64_t step);
Var select_backward(Emitter& e, Var g, Shape sizes, int64_t dim, int64_t index);

int64_t wrap(int64_t dim, int64_t ndim);

}  // namespace kiln::aot
