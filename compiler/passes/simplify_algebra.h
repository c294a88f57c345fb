#pragma once
// Algebraic simplification with the pattern rewriter (pattern_rewriter.h):
//   x * 1, x / 1, x + 0, x - 0  ->  x
//   neg(neg(x))                 ->  x
//   x * -1                      ->  neg(x)
//   neg(a - b)                  ->  b - a
// for the Tensor and Scalar overloads, each only when the result keeps the
// root's dtype and shape (int * 1.0 is float, x + 0 with a bigger other
// broadcasts). All are exact in IEEE arithmetic up to the sign of a zero
// (-0.0 + 0 is 0.0), as Inductor's remove_no_ops assumes too. Graphs that
// mutate values are skipped.
//
// Test: tests/compiler/test_pass_simplify_algebra.cpp.
#include <vector>

#include "compiler/passes/pattern_rewriter.h"
#include "compiler/pipeline/pass.h"

namespace kiln::pipeline {

PassResult simplify_algebra(Graph& g, const PassContext& ctx);

// The rules, for tests and for passes that want them among their own.
const std::vector<RewriteRule>& algebraic_rules();

}  // namespace kiln::pipeline
