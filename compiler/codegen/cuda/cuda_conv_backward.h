#pragma once
// aten::convolution_backward on the GPU, the training graph's extern kernel
// (not transposed, 1-D or 2-D, any groups), built from the forward's pieces
// (cuda_conv.h) so a training step stays on the device and can be captured:
//   grad_weight[g] = dY[g] @ cols[g]^T: im2col of the input into merged columns
//     [row][sample][pixel], the gradient gathered into [channel][sample][pixel],
//     one GEMM per group and chunk of samples (chunks after the first add in);
//   grad_input: merged columns cols[g] = W[g]^T @ dY[g] over the gathered
//     gradient (one GEMM per group and chunk, every sample side by side), then
//     col2im gathers each input element's window entries in (kh, kw) order;
//   grad_bias: per channel, the sum over samples and pixels, one block each.
// Sums run in float (double for float64); nothing is atomic, so a replay gives
// the same bits.
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/codegen/cuda/cuda_conv.h"

namespace kiln::codegen::cuda {

struct ConvBackwardGpuPlan {
  size_t kernel = 0;  // index into Program::kernels
  // The forward's geometry: input x, weight, and `output` the gradient of the
  // output (its strides); merged im2col columns.
  ConvGpuPlan geometry;
  std::string grad_output;
  // The results nobody reads (or output_mask leaves out) are "".
  std::string grad_input, grad_weight, grad_bias;
  int64_t gi_stride[4] = {}, gi_offset = 0;                     // grad_input as [N, C, H, W]
  int64_t gw_row_stride = 0, gw_col_stride = 1, gw_offset = 0;  // grad_weight as [OC, C/groups * KH * KW]
  int64_t gb_stride = 1, gb_offset = 0;
  std::string gather_kernel, col2im_kernel, bias_kernel;  // names in the module ("" when not used)

  size_t workspace_bytes() const { return geometry.workspace_bytes(); }
};

bool conv_backward_target(const std::string& target);

// How extern kernel `kernel` of `p` runs on the GPU, or why it cannot.
Expected<ConvBackwardGpuPlan> plan_conv_backward_on_gpu(const loopir::Program& p, size_t kernel);

// The geometries whose im2col kernels the module needs (for conv_kernels_source).
std::vector<ConvGpuPlan> conv_backward_geometries(const std::vector<ConvBackwardGpuPlan>& plans);
// CUDA source for the gather, col2im and bias kernels `plans` name (after the prelude).
std::string conv_backward_kernels_source(const std::vector<ConvBackwardGpuPlan>& plans);

struct ConvBackwardPointers {
  CUdeviceptr grad_output = 0, input = 0, weight = 0;      // storage bases: the plan's offsets apply
  CUdeviceptr grad_input = 0, grad_weight = 0, grad_bias = 0;
  CUdeviceptr workspace = 0;  // at least plan.workspace_bytes()
};
struct ConvBackwardFunctions {
  CUfunction im2col = nullptr, gather = nullptr, col2im = nullptr, bias = nullptr;
};

Status run_conv_backward_on_gpu(const ConvBackwardGpuPlan& plan, const ConvBackwardPointers& ptr,
                                const ConvBackwardFunctions& fn, bool tf32, const Stream* stream);

}  // namespace kiln::codegen::cuda
