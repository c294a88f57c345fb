#pragma once
// Training's attention ops, kept whole by the lowering (loopir's
// ExternKind::AttentionForward / AttentionBackward, i.e.
// aten::_scaled_dot_product_efficient_attention and its backward), on the GPU
// with Kiln's flash kernels instead of a host round trip:
//   forward: the flash forward with its logsumexp (cuda_attention.h,
//     write_lse), plus a small kernel writing what the eager op gives besides:
//     the logsumexp rows past L (padded to a multiple of 32) as +inf and the
//     philox seed and offset as int64 zeros;
//   backward: the three FlashAttention-2 kernels (cuda_attention_backward.h).
// Operands are 4-D [B, H, L, E] views read in place: the batch is the [B, H]
// pair with its own two strides (batch_inner = H), since q, k and v sliced
// from one [B, T, 3C] projection have strides (T*3C, E, 3C, 1) where B and H
// do not merge. Outputs are written in the layouts the eager kernels give
// (output and gradients [B, H, L, *] stored as [B, L, H, *]), read from the
// buffers. Everything is queued on the stream with no host sync and no
// allocation (the delta workspace is allocated with the execution), so a CUDA
// graph can capture it. What the plans cannot take runs on the host, with the
// reason in a comment of the source.
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/codegen/cuda/cuda_attention.h"
#include "compiler/codegen/cuda/cuda_attention_backward.h"

namespace kiln::codegen::cuda {

struct AttentionForwardGpuPlan {
  size_t kernel = 0;  // index into Program::kernels
  AttentionGpuPlan flash;  // the flash kernel; write_lse when the logsumexp has a buffer
  // Buffers of results 1, 2 and 3 ("" when nothing reads them).
  std::string lse, seed, offset;
  int64_t seed_offset = 0, offset_offset = 0;  // the int64 scalars' element offsets in their storage
  // The logsumexp's [B, H, padded] layout (element strides, offset); rows [m, padded) hold +inf.
  int64_t heads = 1, lse_padded = 0, lse_stride[3] = {}, lse_offset = 0;
  std::string extras_function;  // the padding and zeros kernel ("kiln_attn_lse_pad")
};

struct AttentionBackwardExternPlan {
  size_t kernel = 0;
  AttentionBackwardGpuPlan grads;
  std::string q, k, v, out, dout, lse, mask;  // buffers read (mask "" when none)
  std::string dq, dk, dv;                     // buffers written ("" when nothing reads that gradient)
};

// How extern kernel `kernel` of `p` (an AttentionForward / AttentionBackward) runs on the GPU, or why not.
Expected<AttentionForwardGpuPlan> plan_attention_forward_on_gpu(const loopir::Program& p, size_t kernel);
Expected<AttentionBackwardExternPlan> plan_attention_backward_extern_on_gpu(const loopir::Program& p, size_t kernel);

// CUDA source of the forward plans' extras kernel (after kCudaPrelude; "" when there are none).
std::string attention_forward_extras_source(const std::vector<AttentionForwardGpuPlan>& plans);

struct AttentionForwardFunctions {
  CUfunction flash = nullptr, extras = nullptr;
};
// Queues the flash kernel and the extras kernel on `stream` (null: the legacy
// stream). Storage bases (the plans' offsets apply); `lse`, `seed`, `offset` 0 where the plan has no buffer.
Status run_attention_forward_on_gpu(const AttentionForwardGpuPlan& plan, const AttentionPointers& flash,
                                    CUdeviceptr lse, CUdeviceptr seed, CUdeviceptr offset,
                                    const AttentionForwardFunctions& fn, const Stream* stream);

}  // namespace kiln::codegen::cuda
