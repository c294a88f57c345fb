#pragma once
// Common subexpression elimination: a pure node (op_properties.h) with the
// same target, arguments and keyword arguments (in any order) as an earlier
// one is replaced by it; the kept node's provenance names both. Random ops and
// aten::empty-like ops are never merged. A node that may write (an in-place
// op, an out= op, a call that is no ATen op) is a barrier: nothing before it
// is reused after it, since what it wrote may be what an earlier node read.
//
// Test: tests/compiler/test_pass_cse.cpp.
#include "compiler/pipeline/pass.h"

namespace kiln::pipeline {

PassResult eliminate_common_subexpressions(Graph& g, const PassContext& ctx);

}  // namespace kiln::pipeline
