#pragma once
// Extern kernels of the loop IR (Inductor's ExternKernel / FallbackKernel): a
// node without a loop lowering becomes one kernel that calls a library routine
// on whole buffers instead of a loop body. mm, bmm, addmm and 2-D/1-D
// convolution have dedicated implementations on OpenBLAS (extern_kernels.cpp);
// every other registered ATen op runs its eager kernel through the op registry
// and its results are copied into the output buffers (a fallback).
//
// loop_ir.h includes this header; Program and Kernel are declared there.
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/graph/graph.h"
#include "core/tensor/tensor.h"

namespace kiln::loopir {

struct Program;
struct Kernel;

enum class ExternKind {
  Gemm,         // out = beta * C + alpha * (A @ B): mm, bmm, addmm, and mm/bmm with a fused epilogue
  Convolution,  // aten::convolution.default, not transposed, 1-D or 2-D, float32/float64 at run time
  Attention,    // softmax(scale * q @ k^T [+ mask]) @ v, made by the scheduler from bmm, softmax, bmm (attention.cpp)
  // Training's attention ops kept whole (lower_extern.cpp's classify_attention):
  // aten::_scaled_dot_product_efficient_attention and its backward, with
  // 4-D operands. On the CPU they run the eager kernels (call_op, exact); the
  // CUDA back end plans them on its flash kernels (cuda_attention_training.h).
  AttentionForward,
  AttentionBackward,
  Fallback,     // any registered op, through call_op
};
std::string_view extern_kind_name(ExternKind k);  // "gemm"

// A strided view of a buffer's storage: what a tensor argument of an extern
// kernel reads (a permute, slice or expand of a buffer needs no copy).
struct BufferView {
  std::string buffer;
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;
};

// The GEMM's only reader, a pointwise kernel of its own right after it, as a
// library's GEMM epilogue computes it: out = activation(alpha * A @ B + beta * C +
// bias + residual_scale * residual), rounded once to the output's dtype (the
// scheduler's plan_lt_epilogues). The kernel stays in the program: a backend
// whose library (cuBLASLt on CUDA, oneDNN on the CPU) is missing or refuses
// runs it; otherwise the call writes `output` and the kernel is skipped.
enum class GemmActivation { None, Relu, GeluTanh };
struct GemmLtEpilogue {
  std::string output;  // the epilogue kernel's output buffer (what the call writes instead of the product)
  GemmActivation activation = GemmActivation::None;
  std::optional<BufferView> bias;      // a [N] vector added to every row (unit stride), or none
  std::optional<BufferView> residual;  // an [M, N] (or [B, M, N]) tensor with unit column stride, or none
  double residual_scale = 1;
  std::string summary;  // "gelu tanh + bias": what the decision and the stage views show
};

struct GemmParams {
  int a = -1, b = -1;  // indices into ExternCall::tensors: [M, K] @ [K, N] or [B, M, K] @ [B, K, N]
  int c = -1;          // C broadcast to the output (index into tensors), or -1
  std::optional<double> c_constant;  // C as a number (a fused `mm + 1`)
  double alpha = 1, beta = 0;
  bool batched = false;
  std::optional<GemmLtEpilogue> lt;  // see GemmLtEpilogue
};

struct ConvParams {
  int input = -1, weight = -1, bias = -1;  // indices into ExternCall::tensors (bias -1: none)
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups = 1;
};

// Fused attention (the scheduler's fuse_attention): out[b, m] = sum_n p[b, m, n] v[b, n]
// with p the softmax over n of the scores
//   x[b, m, n] = scale * (q[b, m] . k[b, n]) + mask_scale * mask[b, m, n]   (Additive)
//   x[b, m, n] = masked(b, m, n) ? fill : scale * (q[b, m] . k[b, n])      (Boolean)
// computed in float32 (float64 on the CPU) and rounded once to the output's dtype.
enum class AttentionMask { None, Boolean, Additive };
struct AttentionParams {
  // Indices into ExternCall::tensors: q as [B, M, Dk], k as [B, N, Dk] (not
  // transposed), v as [B, N, Dv]; mask as [B_outer, B_inner, M, N] with
  // B_outer * B_inner = B (a [heads] split of the batch), or -1.
  int q = -1, k = -1, v = -1, mask = -1;
  AttentionMask mask_kind = AttentionMask::None;
  bool masked_when_nonzero = true;  // Boolean: which mask value masks
  double mask_scale = 1;            // Additive
  double fill = -1.0 / 0.0;         // Boolean: the masked scores' value
  double scale = 1;
  // Causal, known from the mask's value: (m, n) is masked (to `fill`, -inf for
  // an additive mask) exactly when n > m + causal_offset, and the mask tensor
  // is not read; with a -inf fill the tiles above that diagonal are skipped.
  std::optional<int64_t> causal_offset;
  // AttentionForward / AttentionBackward only: q, k, v are [B, H, L, E], [B, H,
  // S, E], [B, H, S, Ev] (the batch split into [B, H]) and the mask, when
  // given, broadcasts to [B, H, L, S]. The backward also reads these tensors:
  // dout ([B, H, L, Ev]), out (the forward's output) and lse ([B, H, >= L] float32).
  int dout = -1, out = -1, lse = -1;
};

struct ExternCall {
  ExternKind kind = ExternKind::Fallback;
  std::string target;  // "aten::mm.default"; "aten::addmm.default" once an epilogue folded in
  // The node's arguments as the graph has them, except that an Arg::Kind::Node
  // holds an index into `tensors` rather than a NodeId (so they stay meaningful
  // without the graph). A fallback binds exactly these.
  std::vector<Arg> args;
  std::vector<std::pair<std::string, Arg>> kwargs;
  std::vector<BufferView> tensors;
  std::vector<std::string> inputs;   // the distinct buffers read
  std::vector<std::string> outputs;  // every buffer written; Kernel::output is outputs[0]
  // outputs[i] receives result_tensors(results)[output_results[i]] (tuple
  // results flattened as getitem indexes them); results nobody reads get no buffer.
  std::vector<size_t> output_results;
  GemmParams gemm;
  ConvParams conv;
  AttentionParams attention;
  std::vector<std::string> epilogue;  // origins of the nodes folded into the call (scheduler)
  // Why an op that has a dedicated kind in some cases stays a Fallback here
  // (classify_extern): the CUDA source says it where the call runs on the host.
  std::string note;
};

// The buffer that receives result `result` of the call (tuple results
// flattened), or "" when nothing reads that result.
std::string result_buffer(const ExternCall& c, size_t result);

// A Tensor aliasing a buffer's memory, with the Buffer's sizes, strides and offset.
using BufferTensors = std::function<Tensor(const std::string& buffer)>;
// Runs an extern kernel: reads its inputs through `buffer`, writes each output into buffer(output) (copy when the op allocates).
void run_extern(const Program& p, const Kernel& k, const BufferTensors& buffer);
// A GEMM with a GemmLtEpilogue, computed with its epilogue in one library
// call on the CPU (oneDNN's matmul primitive with post-ops) that writes the
// epilogue's output: true when it did, and then the epilogue's kernel (the
// next group) must not run. False, with nothing written and *why filled, when
// the call has no epilogue, is not a large float32 mm, oneDNN is not the
// float32 library, KILN_NO_GEMM_EPILOGUE=1 is set or the library refuses.
bool run_gemm_with_epilogue(const Program& p, const Kernel& k, const BufferTensors& buffer, std::string* why = nullptr);
std::vector<std::string> extern_inputs(const Kernel& k);   // buffers read
std::vector<std::string> extern_outputs(const Kernel& k);  // buffers written

// One line as Inductor's ir_post_fusion prints an extern: the op, then its
// arguments with tensors named by their buffers ("extern_kernels.mm(arg0, buf0, out=buf1)").
std::string extern_call_string(const Program& p, const ExternCall& c);
// The call with every buffer name mapped through `rename` (the scheduler's buffer plan).
ExternCall rename_extern_buffers(const ExternCall& c, const std::function<std::string(const std::string&)>& rename);

namespace detail {
// extern_kernels.cpp: the dedicated implementations. Each returns false when
// it has no fast path for these dtypes / layouts (the caller then falls back to call_op).
bool run_gemm(const GemmParams& g, const std::vector<Tensor>& tensors, const Tensor& out);
// The epilogue's output `out`; `bias` and `addend` undefined when the epilogue has none.
bool run_gemm_epilogue(const GemmParams& g, const std::vector<Tensor>& tensors, const Tensor& bias,
                       const Tensor& addend, const Tensor& out, std::string* why);
bool run_convolution(const ConvParams& c, const std::vector<Tensor>& tensors, const Tensor& out);
// The fused attention in float64 (the reference the generated kernels are held to).
void run_attention(const AttentionParams& a, const std::vector<Tensor>& tensors, const Tensor& out);
// The same, also writing `lse` ([B, M], any float dtype; skipped when undefined): each
// row's logsumexp of the scaled, masked scores, row max + log(row sum).
void run_attention_lse(const AttentionParams& a, const std::vector<Tensor>& tensors, const Tensor& out, const Tensor& lse);
// The gradients of sum(dout * attention(q, k, v)) in float64 from the unfused
// formula (P = softmax(S) per row, dV = P^T dO, dP = dO V^T, dS = P * (dP -
// rowsum(P * dP)), dQ = scale dS K, dK = scale dS^T Q), into dq [B, M, Dk], dk
// [B, N, Dk] and dv [B, N, Dv]. No gradient flows through a score a boolean or
// causal mask replaced by its fill.
void run_attention_backward(const AttentionParams& a, const std::vector<Tensor>& tensors, const Tensor& dout,
                            const Tensor& dq, const Tensor& dk, const Tensor& dv);
}  // namespace detail

}  // namespace kiln::loopir
