#pragma once
// Constant folding: a pure ATen node (op_properties.h) whose tensor inputs are
// all constants (get_attr tensors of PassContext::constants, factory calls
// such as aten::full or aten::arange, or nodes folded before it) is evaluated
// with the CPU kernels. Only the constant nodes something non-constant still
// reads are replaced, and only when that is cheap to keep:
//   - a result whose elements are all equal becomes aten::full (any size);
//   - another result of at most kMaxStoredElements elements becomes a get_attr
//     of a new constant in PassContext::constants (none without a table).
// Nothing with more than kMaxEvaluatedElements elements is evaluated, and the
// pass skips graphs that mutate values (a get_attr may be a buffer written
// in place; run it after functionalization).
//
// Test: tests/compiler/test_pass_fold_constants.cpp.
#include <cstdint>

#include "compiler/pipeline/pass.h"

namespace kiln::pipeline {

inline constexpr int64_t kMaxEvaluatedElements = int64_t(1) << 16;
inline constexpr int64_t kMaxStoredElements = 1024;

PassResult fold_constants(Graph& g, const PassContext& ctx);

}  // namespace kiln::pipeline
