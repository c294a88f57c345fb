#pragma once
// Max pooling with indices on the GPU, forward and backward: what a training
// graph keeps as extern kernels (aten::max_pool2d_with_indices and its
// backward; inference lowers the values alone to a loop kernel). Running them
// here keeps a training step on the device and capturable as one CUDA graph.
//
// The forward takes each window's first maximum, or its last NaN, as ATen
// does; the backward gathers, for each input element, the output gradients
// whose index names it, in ascending output order, which is the order the
// CPU kernel scatters them in, so float32 sums agree bit for bit.
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/codegen/cuda/cuda_api.h"
#include "compiler/loopir/loop_ir.h"

namespace kiln::codegen::cuda {

struct PoolGpuPlan {
  size_t kernel = 0;  // index into Program::kernels
  bool backward = false;
  DType dtype = DType::Float32;
  // Forward: input x [N, C, H, W], output the values, indices written ("" when
  // nobody reads them). Backward: input grad_output [N, C, OH, OW], indices
  // read, output grad_input [N, C, H, W]. 3-D tensors are taken as N = 1.
  std::string input, indices, output;
  int64_t n = 0, c = 0, h = 0, w = 0, oh = 0, ow = 0;
  int64_t in_stride[4] = {}, idx_stride[4] = {}, out_stride[4] = {};
  int64_t in_offset = 0, idx_offset = 0, out_offset = 0;
  int64_t kernel_size[2] = {1, 1}, stride[2] = {1, 1}, pad[2] = {0, 0}, dil[2] = {1, 1};
  std::string function;  // the kernel's name in the module
};

// Whether `target` is an op these kernels run.
bool pool_target_on_gpu(const std::string& target);

// How extern kernel `kernel` of `p` runs on the GPU, or why it cannot.
Expected<PoolGpuPlan> plan_pool_on_gpu(const loopir::Program& p, size_t kernel);

// CUDA source for the kernels `plans` name, each instantiation once (after the prelude).
std::string pool_kernels_source(const std::vector<PoolGpuPlan>& plans);

struct PoolPointers {
  CUdeviceptr input = 0, indices = 0, output = 0;  // storage bases: the plan's offsets apply
};

// Queues the kernel on `stream` (null: the legacy stream).
Status run_pool_on_gpu(const PoolGpuPlan& plan, const PoolPointers& ptr, CUfunction fn, const Stream* stream);

}  // namespace kiln::codegen::cuda
