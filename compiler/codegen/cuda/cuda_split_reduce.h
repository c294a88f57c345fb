#pragma once
// Split reductions: a reduction group of few long rows (x.sum() of a large
// tensor, x.sum(-1) of [4, 16M]) gets far more blocks than rows. Each row's
// positions are cut into parts of whole passes; a block reduces one part and
// writes it to a workspace, and the last block of the row to finish (an
// atomic counter per row) combines the parts in part order and runs the rest
// of the group. No float atomics touch a value: the parts and their order
// depend only on the launch (split_launch), so a result is the same run to
// run. The counter goes back to 0 in the same launch, so the workspace is
// reused by the next launch and by CUDA graph replays.
//
// The kernel takes three more parameters before `n`: the workspace
// (`u64* kiln_split_ws`: rows * parts slots of 8 bytes for the parts, then a
// counter per row), the parts per row and the positions per part.
#include <cstddef>
#include <cstdint>
#include <string>

#include "compiler/codegen/cpu/loop_plan.h"
#include "compiler/loopir/loop_ir.h"

namespace kiln::codegen::cuda {

struct CudaKernel;

// A split kernel's block, and the passes over its part each thread makes
// with every load of a pass in flight at once (unrolled).
inline constexpr int kSplitThreads = 256;
inline constexpr int kSplitIterations = 8;
// Resident blocks per SM the launch aims at (__launch_bounds__'s minimum):
// one wave of equal parts, enough loads in flight to saturate HBM.
inline constexpr int kSplitBlocksPerSm = 4;

// Whether a reduction group of `rows` rows, `row_work` positions each, runs
// split, `step` positions per pass of a block: few rows, each several passes
// long, and one kernel of the group looping over the row — a reduction other
// than argmax, whose partial values combine with its own operator (later
// kernels of one point per row, a mean's division, run once the row is done).
bool split_reduction_fits(const cpu::GroupLoops& plan, int64_t rows, int64_t row_work, int64_t step);

// The device code after a split kernel's block reduction of `acc`
// (`acc_t`, combined by `combine`, identity `init`): the part goes to the
// workspace, a block that is not the row's last moves on to its next part
// (`continue`), the last one leaves the row's value in `acc` on every thread.
std::string split_combine_code(const std::string& acc_t, const std::string& combine, const std::string& init);

struct SplitLaunch {
  int64_t parts = 1;  // per row
  int64_t span = 0;   // positions per part, a multiple of the kernel's step
  int64_t blocks = 0;
  size_t workspace_bytes = 0;
};

// The parts for a split kernel on a GPU of `multiprocessors` SMs: about
// kSplitBlocksPerSm blocks per SM over all rows, each part whole passes.
SplitLaunch split_launch(const CudaKernel& k, int multiprocessors);

}  // namespace kiln::codegen::cuda
