#pragma once
// The flash-style attention backward on the GPU (FlashAttention-2's algorithm),
// for training: given q [B, M, Dk], k [B, N, Dk], v [B, N, Dv], the forward's
// out [B, M, Dv] and per-row logsumexp lse [B, M] (float32, the forward kernel
// writes it with AttentionGpuPlan::write_lse), dout [B, M, Dv], the scale and
// the forward's mask, it computes dq, dk and dv without ever storing the
// [M, N] probabilities. Three kernels, nothing atomic (a replay gives the same
// bits, which a debugger wants):
//   1. delta: D_i = rowsum(dout * out) per query row, float32, into a workspace;
//   2. dk/dv: a block per 32 keys of a batch entry holds its keys and values and
//      accumulates dK and dV (float32, each element owned by one thread) while
//      looping over the query tiles: P = exp(scale q.k + mask - lse) recomputed,
//      dP = dO V^T, dS = P (dP - D_i), dV += P^T dO, dK += scale dS^T Q;
//   3. dq: a block per 32 query rows loops over the key tiles, dQ += scale dS K.
// A causal mask with a -inf fill skips the tiles wholly above the diagonal; a
// score replaced by a mask's fill passes no gradient to q or k. Products run on
// CUDA cores in float32 with every operand in shared memory as float32
// (float16 / bfloat16 / float32 inputs, any strides, head dimensions up to
// 256); the gradients are rounded once to the inputs' dtype.
//
// Like the forward, the plan is made once (shapes, strides, dtype, params),
// the source emitted from the plans, and run_attention_backward_on_gpu queues
// the three launches.
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/codegen/cuda/cuda_attention.h"

namespace kiln::codegen::cuda {

struct AttentionBackwardGpuPlan {
  DType dtype = DType::Float16;  // q, k, v, out, dout, dq, dk, dv
  DType mask_dtype = DType::Bool;
  bool has_mask_tensor = false;  // a boolean or additive mask read from memory
  int64_t batch = 0, m = 0, n = 0, d = 0, dv = 0;
  // Element strides [batch, row, column] and offsets (storage bases in AttentionBackwardPointers).
  int64_t q_stride[3] = {}, k_stride[3] = {}, v_stride[3] = {}, o_stride[3] = {}, do_stride[3] = {};
  int64_t dq_stride[3] = {}, dk_stride[3] = {}, dv_stride[3] = {};
  int64_t q_offset = 0, k_offset = 0, v_offset = 0, o_offset = 0, do_offset = 0;
  int64_t dq_offset = 0, dk_offset = 0, dv_offset = 0;
  int64_t lse_stride[2] = {}, lse_offset = 0;  // float32 [batch, m]
  int64_t mask_stride[4] = {}, mask_offset = 0, mask_inner = 1;  // as AttentionGpuPlan's
  // The batch split [outer, inner] as AttentionGpuPlan's (1: the [0] strides alone) and each operand's inner stride.
  int64_t batch_inner = 1;
  int64_t q_inner = 0, k_inner = 0, v_inner = 0, o_inner = 0, do_inner = 0, dq_inner = 0, dk_inner = 0, dv_inner = 0,
          lse_inner = 0;
  loopir::AttentionParams params;
  // The three kernels' names in the module.
  std::string delta_function, dkdv_function, dq_function;

  static constexpr int kThreads = 256, kBlockRows = 32, kBlockKeys = 32;
  unsigned shared_bytes() const;          // dynamic shared memory of the dk/dv and dq kernels
  size_t workspace_bytes() const;         // float32 D_i, [batch, m]
};

// The backward of the forward `forward` plans (its q, k, v, out and mask
// layouts, dtype and params), with dout like out, contiguous gradients
// ([B, M, Dk], [B, N, Dk], [B, N, Dv]) and a contiguous lse; or why it cannot run.
Expected<AttentionBackwardGpuPlan> plan_attention_backward_on_gpu(const AttentionGpuPlan& forward);
// Checks a plan whose shapes, strides and params the caller filled in and
// names its kernels; the error says what it does not take.
Expected<AttentionBackwardGpuPlan> plan_attention_backward_on_gpu(AttentionBackwardGpuPlan plan);

// CUDA source for the kernels `plans` name, each instantiation once. It needs
// kCudaPrelude before it, and attention_shared_source() unless
// `forward_in_module` (the module already has attention_kernels_source's text).
std::string attention_backward_kernels_source(const std::vector<AttentionBackwardGpuPlan>& plans,
                                              bool forward_in_module = false);

struct AttentionBackwardPointers {
  CUdeviceptr q = 0, k = 0, v = 0, out = 0, dout = 0, lse = 0, mask = 0;  // storage bases: the plan's offsets apply
  CUdeviceptr dq = 0, dk = 0, dv = 0;  // 0: that gradient is not wanted (not written)
  CUdeviceptr workspace = 0;  // workspace_bytes()
};
struct AttentionBackwardFunctions {
  CUfunction delta = nullptr, dkdv = nullptr, dq = nullptr;
};

// Queues the three kernels on `stream` (null: the legacy stream).
Status run_attention_backward_on_gpu(const AttentionBackwardGpuPlan& plan, const AttentionBackwardPointers& ptr,
                                     const AttentionBackwardFunctions& fn, const Stream* stream);

}  // namespace kiln::codegen::cuda
