#pragma once
// Reusing a reduction's per-element values in a later pointwise kernel of the
// same group (no LLVM here).
//
// Fusion inlines producers, so softmax's exp(x - max) is computed twice per
// element: once in the sum's loop and again in the division's. When a later
// pointwise kernel's loops match the reduction's loops element for element and
// its body contains an expensive subexpression the reduction also computes,
// the reduction stores that value into the pointwise kernel's own output as it
// goes, and the pointwise kernel loads it instead of recomputing: softmax then
// does one exp per element, as ATen's kernel does. The output is the only
// safe scratch space: nothing reads it before the pointwise kernel overwrites
// it with its final value, and the buffer plan never shares its storage with a
// buffer the group reads.
#include <string>

#include "compiler/codegen/cpu/loop_plan.h"

namespace kiln::codegen::cpu {

// Rewrites `plan` in place; returns one line per reuse ("buf4 reuses exp
// computed by buf3"), for the stage text and tests.
std::vector<std::string> reuse_row_values(const loopir::Program& p, GroupLoops& plan);

}  // namespace kiln::codegen::cpu
