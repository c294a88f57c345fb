#pragma once
// The loop IR as text, modelled on Inductor's ir_pre_fusion.txt: per kernel
// its buffer, layout, iteration sizes, then a `class <buf>_loop_body` with the
// var_ranges, the distinct indices (p0, p1, ... as Inductor names loop-body
// variables) and the body as a sequence of ops.* calls ending in a store.
#include <string>

#include "compiler/loopir/loop_ir.h"

namespace kiln::loopir {

// "FixedLayout('cpu', torch.float32, size=[4, 5], stride=[5, 1])"
std::string layout_string(const Buffer& b);
std::string print_kernel(const Program& p, const Kernel& k);
// The input layouts, then every kernel, then the outputs.
std::string print_loop_ir(const Program& p);

}  // namespace kiln::loopir
