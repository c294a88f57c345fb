#include "compiler/codegen/cuda/cuda_split_reduce.h"

#include <algorithm>

#include "compiler/codegen/cuda/cuda_emit.h"

namespace kiln::codegen::cuda {

namespace {

// A block per row fills an H200 (132 SMs) from about this many rows on; below
// it most SMs would idle while a few blocks walk long rows.
constexpr int64_t kSplitMaxRows = 128;
// A row shorter than a few passes gains less from splitting than the
// workspace round trip costs.
constexpr int64_t kSplitMinPasses = 4;

}  // namespace

bool split_reduction_fits(const cpu::GroupLoops& plan, int64_t rows, int64_t row_work, int64_t step) {
  if (rows <= 0 || rows > kSplitMaxRows || step <= 0 || row_work < kSplitMinPasses * step) return false;
  int looping = 0;
  for (const cpu::KernelLoops& kl : plan.kernels) {
    if (kl.inner_ranges.empty() && kl.kernel->reduction_ranges.empty()) continue;  // one point per row
    ++looping;
    if (kl.kernel->kind != loopir::KernelKind::Reduction || kl.kernel->reduction == loopir::ReductionType::Argmax)
      return false;
    // A kernel of several points per row before the reduction (its result
    // in memory for the reduction to read) would need a grid-wide barrier.
    if (!kl.inner_ranges.empty()) return false;
  }
  return looping == 1;
}

std::string split_combine_code(const std::string& acc_t, const std::string& combine, const std::string& init) {
  std::string s;
  s += "      // split: this part to the workspace; the row's last block to finish combines the parts in order\n";
  s += "      {\n";
  s += "        " + acc_t + "* kiln_parts_of_row = (" + acc_t + "*)kiln_split_ws + (i64)o * kiln_parts;\n";
  s += "        unsigned* kiln_done = (unsigned*)(kiln_split_ws + n * kiln_parts);\n";
  s += "        if (threadIdx.x == 0) {\n";
  s += "          kiln_parts_of_row[kiln_part] = acc;\n";
  s += "          __threadfence();\n";  // the part is visible before the count says so
  s += "          kiln_last = atomicAdd(&kiln_done[o], 1u) == (unsigned)(kiln_parts - 1);\n";
  s += "        }\n";
  s += "        __syncthreads();\n";
  s += "        if (!kiln_last) continue;\n";
  s += "        __threadfence();\n";
  s += "        acc = (" + acc_t + ")" + init + ";\n";
  // volatile: the other blocks' parts from L2, not a stale L1 line.
  s += "        for (i64 q = threadIdx.x; q < kiln_parts; q += blockDim.x)\n";
  s += "          acc = " + combine + "()(acc, ((volatile " + acc_t + "*)kiln_parts_of_row)[q]);\n";
  s += "        acc = kiln_block_reduce(acc, " + combine + "(), (" + acc_t + "*)kiln_scratch);\n";
  s += "        if (threadIdx.x == 0) kiln_done[o] = 0u;\n";  // ready for the next launch
  s += "      }\n";
  return s;
}

SplitLaunch split_launch(const CudaKernel& k, int multiprocessors) {
  SplitLaunch l;
  const int64_t rows = std::max<int64_t>(k.outer_numel, 1);
  const int64_t passes = (k.split_row + k.split_step - 1) / k.split_step;
  const int64_t want = std::max<int64_t>(1, int64_t(std::max(multiprocessors, 1)) * kSplitBlocksPerSm);
  l.parts = std::clamp<int64_t>((want + rows - 1) / rows, 1, std::max<int64_t>(passes, 1));
  // Whole passes per part; the last part may be shorter, none is empty.
  const int64_t passes_per_part = (passes + l.parts - 1) / l.parts;
  l.span = passes_per_part * k.split_step;
  l.parts = (k.split_row + l.span - 1) / l.span;
  l.blocks = rows * l.parts;
  l.workspace_bytes = size_t(rows * l.parts) * 8 + size_t(rows) * 4;
  return l;
}

}  // namespace kiln::codegen::cuda
