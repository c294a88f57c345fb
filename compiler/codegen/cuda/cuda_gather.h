#pragma once
// gather and scatter (.src, .value) along one dim on the GPU: what the
// decomposed cross-entropy of a training graph keeps as extern kernels
// (nll_loss picks each sample's target class with gather, its backward puts
// the gradient there with scatter into zeros). The loop IR has no indirect
// load, so these stay externs; running them here keeps a training step on
// the device and capturable as one CUDA graph.
//
// gather: one thread per output element, out[i] = self[i with i[dim] = index[i]]
// (an out-of-range index reads nothing; it is reported through the fault
// word, and the run fails with ATen's message, gather_fault_message).
// scatter: one thread per element j of self, which takes the src (or value)
// of the last index element along dim naming j[dim], else self[j]: the last
// write wins, as in the CPU kernel's order, and no two threads write one place.
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/codegen/cuda/cuda_api.h"
#include "compiler/loopir/loop_ir.h"

namespace kiln::codegen::cuda {

constexpr int kGatherMaxRank = 8;

struct GatherGpuPlan {
  size_t kernel = 0;  // index into Program::kernels
  enum class Op { Gather, ScatterSrc, ScatterValue } op = Op::Gather;
  DType dtype = DType::Float32;
  std::string self, index, src, output;  // src: ScatterSrc only
  int64_t rank = 0, dim = 0;
  // The elements walked: gather's output (the index's sizes), scatter's self.
  int64_t sizes[kGatherMaxRank] = {};
  int64_t index_sizes[kGatherMaxRank] = {};
  int64_t self_size = 0;  // self's size along dim (gather's bound)
  int64_t self_stride[kGatherMaxRank] = {}, index_stride[kGatherMaxRank] = {}, src_stride[kGatherMaxRank] = {},
          out_stride[kGatherMaxRank] = {};
  int64_t self_offset = 0, index_offset = 0, src_offset = 0, out_offset = 0;
  double value = 0;      // ScatterValue
  std::string function;  // the kernel's name in the module
};

// Whether `target` is an op these kernels run.
bool gather_target_on_gpu(const std::string& target);

// How extern kernel `kernel` of `p` runs on the GPU, or why it cannot.
Expected<GatherGpuPlan> plan_gather_on_gpu(const loopir::Program& p, size_t kernel);

// CUDA source for the kernels `plans` name, each instantiation once (after the prelude).
std::string gather_kernels_source(const std::vector<GatherGpuPlan>& plans);

// The fault word: kGatherFaultWords int64 in device memory, zero until a
// kernel meets an index out of range; then {1, the plan's kernel, the index}.
constexpr int kGatherFaultWords = 4;

struct GatherPointers {
  CUdeviceptr self = 0, index = 0, src = 0, output = 0;  // storage bases: the plan's offsets apply
  CUdeviceptr fault = 0;                                 // the fault word (required)
};

// ATen's words for a fault word that is set: "aten::gather.default (buf3):
// index 7 is out of bounds for dimension 1 with size 5".
std::string gather_fault_message(const loopir::Program& p, const std::vector<GatherGpuPlan>& plans,
                                 const int64_t fault[kGatherFaultWords]);

// Queues the kernel on `stream` (null: the legacy stream).
Status run_gather_on_gpu(const GatherGpuPlan& plan, const GatherPointers& ptr, CUfunction fn, const Stream* stream);

}  // namespace kiln::codegen::cuda
