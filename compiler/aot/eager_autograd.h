#pragma once
// The interpreter's eager autograd (core/python/autograd.h) on Kiln's
// derivative formulas. A differentiable call becomes one backward node that
// holds the ATen calls the torch bindings made for it; backward() runs their
// formulas in reverse on the CPU kernels (the same formulas build AOT joint
// graphs). Tensors a formula reads are checked against in-place writes made
// since the call, as PyTorch's saved-variable version counters do.
//
// Tests: tests/compiler/test_eager_autograd.cpp.

namespace kiln::aot {

// Installs the recorder for every interpreter in this process (idempotent).
void install_eager_autograd();

}  // namespace kiln::aot
