#pragma once
// CUDA C++ source for a scheduled loop program: one __global__ kernel per
// fused group, from the same loop plans as the CPU backend (loop_plan.h,
// with a thread per element for pointwise groups). No CUDA headers: the
// source carries its own small prelude, so NVRTC needs no include path.
//
// Pointwise groups: a grid-stride loop over elements. Reduction groups: a
// block per outer point (a row); inside it every kernel runs in program
// order, its threads striding over the row, reductions combined by warp
// shuffles and a block step, so what a later kernel of the group loads from
// an earlier one is in L1/L2 rather than recomputed.
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/cpu_codegen.h"
#include "compiler/codegen/cpu/loop_plan.h"
#include "compiler/codegen/cuda/cuda_attention.h"
#include "compiler/codegen/cuda/cuda_attention_training.h"
#include "compiler/codegen/cuda/cuda_conv.h"
#include "compiler/codegen/cuda/cuda_conv_backward.h"
#include "compiler/codegen/cuda/cuda_gather.h"
#include "compiler/codegen/cuda/cuda_pool.h"
#include "compiler/sched/schedule.h"

namespace kiln::codegen::cuda {

// The same injected relu bugs as the CPU backend (KILN_INJECT_BUG, CLI.md).
using InjectedBug = cpu::InjectedBug;

struct CudaKernel {
  size_t group = 0;
  std::string name;                  // kiln_g0_amax_sum_div: the group and what it computes
  std::vector<std::string> buffers;  // the kernel's pointer parameters, in order
  int64_t outer_numel = 0;           // elements (pointwise) or rows (reduction)
  bool per_row = false;              // a block per outer point (reduction groups)
  int block_threads = 256;
  int elements_per_thread = 1;  // pointwise groups: consecutive elements a thread moves with vector loads
  // A split reduction (cuda_split_reduce.h): a block per part of a row; 0 when a block takes a whole row.
  int64_t split_row = 0;   // positions per row
  int64_t split_step = 0;  // positions a block takes per pass; a part is whole passes
};

struct CudaSource {
  std::string text;
  std::vector<CudaKernel> kernels;  // groups with loops; extern groups have none
  // The convolution extern kernels that run on the GPU; their im2col and bias
  // kernels are in `text` (a convolution with no plan takes the host path,
  // and a comment in `text` says why).
  std::vector<ConvGpuPlan> convs;
  // The fused attention extern kernels that run on the GPU (their kernels are in `text`).
  std::vector<AttentionGpuPlan> attentions;
  // Training's attention ops kept whole (efficient attention and its backward).
  std::vector<AttentionForwardGpuPlan> attention_forwards;
  std::vector<AttentionBackwardExternPlan> attention_backwards;
  // Max pooling with indices and its backward (training graphs) on the GPU.
  std::vector<PoolGpuPlan> pools;
  // gather and scatter along a dim (cross-entropy in training graphs) on the GPU.
  std::vector<GatherGpuPlan> gathers;
  std::vector<ConvBackwardGpuPlan> conv_backwards;
  // The extern kernels' helpers in `text` (im2col, bias, a GEMM's C), which
  // the runtime looks up by name.
  std::vector<std::string> library_kernels;
};

// The plans CUDA wants for `s` (pointwise groups flat, rows reused as on CPU).
std::vector<cpu::GroupLoops> plan_for_cuda(const sched::ScheduledProgram& s);

// Launch shapes the generator picks; max-autotune tries several.
struct LaunchChoice {
  // Reduction groups: a block has enough threads that each walks about this
  // many positions of the row (fewer threads per row: more rows per SM).
  int row_elements_per_thread = 32;
  // Few long rows are split over many blocks (cuda_split_reduce.h).
  bool split_reductions = true;
  // Convolutions: im2col + cuBLAS or the implicit-GEMM kernel (cuda_conv_implicit.h).
  ConvChoice conv;
};

// Throws kiln::Error for what it cannot generate (symbolic sizes).
CudaSource emit_cuda(const sched::ScheduledProgram& s, const std::vector<cpu::GroupLoops>& plans,
                     InjectedBug bug = InjectedBug::None, const LaunchChoice& launch = {});

}  // namespace kiln::codegen::cuda
