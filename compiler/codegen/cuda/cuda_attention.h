#pragma once
// The fused attention extern kernel (sched/attention.cpp) on the GPU: one
// flash-style forward kernel. A block takes 64 or 128 query rows of one batch
// entry (four warps owning one or two 16-row fragments each); key/value tiles
// of 64 rows stream through shared memory (cp.async, double-buffered); scores
// and the online softmax (running max and sum, in float32) stay in registers;
// both products run on tensor cores through mma.sync m16n8k16 for float16 /
// bfloat16 with the probabilities rounded to the operands' type, as flash
// attention does. Key tiles inside the keys and below the diagonal skip the
// per-element mask; a causal mask skips the tiles wholly above the diagonal,
// and the blocks with the most rows to do start first. float32 (and layouts
// cp.async cannot read) take a plain float32 kernel on CUDA cores.
//
// The plan is made once when the source is emitted; a kernel it cannot take
// (a head dimension over 256, over 65535 blocks of query rows) runs on the
// host instead, with the reason in a comment of the source.
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/codegen/cuda/cuda_api.h"
#include "compiler/loopir/loop_ir.h"

namespace kiln::codegen::cuda {

struct AttentionGpuPlan {
  size_t kernel = 0;  // index into Program::kernels
  DType dtype = DType::Float16;
  DType mask_dtype = DType::Bool;
  std::string q, k, v, mask, output;  // buffers (mask "" when none or causal)
  int64_t batch = 0, m = 0, n = 0, d = 0, dv = 0;
  // Element strides [batch, row, column] and offsets; the mask's [outer, inner, m, n].
  int64_t q_stride[3] = {}, k_stride[3] = {}, v_stride[3] = {}, o_stride[3] = {};
  int64_t q_offset = 0, k_offset = 0, v_offset = 0, o_offset = 0;
  int64_t mask_stride[4] = {}, mask_offset = 0, mask_inner = 1;
  // The batch as [outer, inner] when its strides do not merge into one (training's
  // [B, H] with q, k, v views of one [B, T, 3 C] projection): batch entry bh lies at
  // (bh / batch_inner) * stride[0] + (bh % batch_inner) * the operand's inner stride.
  // 1 (the fused inference attention): one batch stride, stride[0].
  int64_t batch_inner = 1;
  int64_t q_inner = 0, k_inner = 0, v_inner = 0, o_inner = 0, lse_inner = 0;
  loopir::AttentionParams params;
  bool tensor_cores = false;
  // Tensor-core tiling: `warps` warps per block, each owning `row_fragments` runs of 16
  // query rows (KILN_ATTN_TILES=WxF overrides the choice, for measuring).
  int warps = 4, row_fragments = 1;
  std::string function;  // the kernel's name in the module
  // Training: also write the per-row logsumexp of the scaled, masked scores
  // (row max + log(row sum), natural log, float32) to AttentionPointers::lse at
  // [batch, m] strides; -inf for a row whose every score is -inf. Off unless
  // plan_attention_on_gpu is asked (the function name then ends in "_lse").
  bool write_lse = false;
  int64_t lse_stride[2] = {}, lse_offset = 0;

  unsigned shared_bytes() const;
  int threads() const;
  int64_t block_rows() const;  // query rows per block
};

// How extern kernel `kernel` of `p` (an Attention) runs on the GPU, or why it cannot.
// `write_lse`: the kernel also writes the logsumexp (contiguous [batch, m] float32).
Expected<AttentionGpuPlan> plan_attention_on_gpu(const loopir::Program& p, size_t kernel, bool write_lse = false);
// The checks, kernel choice (tensor cores or not, tiles) and function name of a
// plan whose operands (buffers, sizes, strides, offsets, batch split, mask) and
// params the caller filled in: the second half of plan_attention_on_gpu, which
// training's attention (cuda_attention_training.h) shares.
Expected<AttentionGpuPlan> finish_attention_plan(AttentionGpuPlan plan, bool write_lse);

// The helpers and kernel templates every attention instantiation uses (the
// start of attention_kernels_source's text when it has any); the backward
// kernels (cuda_attention_backward.h) build on them too.
std::string attention_shared_source();
// The kernels' template codes for a mask's element type (-1: none the kernels
// read) and for the mask kind (0 none, 1 causal, 2 boolean, 3 additive).
int attention_mask_type_code(DType d);
int attention_mask_code(const loopir::AttentionParams& a);

// CUDA source for the kernels `plans` name, each instantiation once.
std::string attention_kernels_source(const std::vector<AttentionGpuPlan>& plans);

struct AttentionPointers {
  CUdeviceptr q = 0, k = 0, v = 0, mask = 0, output = 0;  // storage bases: the plan's offsets apply
  CUdeviceptr lse = 0;  // float32, only when the plan's write_lse
};

// Queues the kernel on `stream` (null: the legacy stream).
Status run_attention_on_gpu(const AttentionGpuPlan& plan, const AttentionPointers& ptr, CUfunction fn,
                            const Stream* stream);

}  // namespace kiln::codegen::cuda
