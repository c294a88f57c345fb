#pragma once
// View canonicalization, so later passes (CSE, pattern rules, lowering) see
// one spelling of each view:
//   - aten::t and aten::transpose.int become aten::permute; permute of permute
//     becomes one permute; a permute that keeps every dim in place is removed;
//   - view / reshape / _unsafe_view of view / reshape / _unsafe_view becomes
//     one view of the innermost input (one reshape when the strides forbid a
//     view); a reshape that can be a view becomes one;
//   - view / reshape / _unsafe_view / expand to the input's own shape, and
//     aten::alias, are removed.
// Shapes come from meta['val'] and the ops' meta functions; nodes with
// symbolic shapes are left alone. Graphs that mutate values are skipped:
// forwarding an alias is only sound when nothing writes through it.
//
// Test: tests/compiler/test_pass_canonicalize_views.cpp.
#include "compiler/pipeline/pass.h"

namespace kiln::pipeline {

PassResult canonicalize_views(Graph& g, const PassContext& ctx);

}  // namespace kiln::pipeline
