#include "compiler/codegen/cuda/cuda_attention_training.h"

#include <algorithm>

namespace kiln::codegen::cuda {
namespace {

// The efficient attention's outputs besides the flash kernel's: +inf in the
// logsumexp's padding rows (the eager op and PyTorch's kernel pad L to a
// multiple of 32) and zero philox scalars (no dropout is drawn). A kernel
// rather than a memset so that it is one node of a captured graph like the rest.
constexpr const char* kExtrasSource = R"KILN(
// ---- efficient attention's extras (codegen/cuda/cuda_attention_training.h) ----
struct KilnAttnPadArgs {
  u64 lse, seed, offset;  // element 0 of the logsumexp (float32) and the int64 scalars; 0 when absent
  i64 ls[3];              // [B, H, padded] strides
  i64 rows, heads, m, padded;
};
extern "C" __global__ void __launch_bounds__(256) kiln_attn_lse_pad(KilnAttnPadArgs a) {
  const i64 tail = a.padded - a.m, total = a.lse && tail > 0 ? a.rows * tail : 0;
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (i64)gridDim.x * blockDim.x) {
    const i64 bh = i / tail, r = a.m + i % tail;
    ((float*)a.lse)[(bh / a.heads) * a.ls[0] + (bh % a.heads) * a.ls[1] + r * a.ls[2]] = __int_as_float(0x7f800000);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    if (a.seed) *(long long*)a.seed = 0;
    if (a.offset) *(long long*)a.offset = 0;
  }
}
)KILN";

constexpr const char* kExtrasFunction = "kiln_attn_lse_pad";

Status unsupported(const std::string& why) { return Status::error("training attention on the GPU: " + why); }

// A 4-D [B, H, X, Y] operand as the kernels index it: [outer (B), row (X), column (Y)] strides and the inner (H) one.
struct Layout {
  int64_t stride[3] = {}, inner = 0, offset = 0;
};
Layout layout_of(const std::vector<int64_t>& strides, int64_t offset) {
  return {{strides[0], strides[2], strides[3]}, strides[1], offset};
}
void put(const Layout& l, int64_t* stride, int64_t& inner, int64_t& offset) {
  for (int i = 0; i < 3; ++i) stride[i] = l.stride[i];
  inner = l.inner, offset = l.offset;
}

// The bias's strides over [B, H, L, S]: right-aligned, 0 on broadcast dims.
std::vector<int64_t> broadcast_strides(const loopir::BufferView& v) {
  std::vector<int64_t> s(4, 0);
  const size_t r = v.sizes.size();
  for (size_t i = 0; i < r; ++i)
    if (v.sizes[i] != 1) s[4 - r + i] = v.strides[i];
  return s;
}

const loopir::ExternCall* call_of(const loopir::Program& p, size_t kernel, loopir::ExternKind kind) {
  const loopir::Kernel& k = p.kernels.at(kernel);
  return k.kind == loopir::KernelKind::Extern && k.call && k.call->kind == kind ? k.call.get() : nullptr;
}

// The mask of the call (an additive bias, when not causal) into a plan's mask fields.
template <class Plan>
Status take_mask(const loopir::Program& p, const loopir::ExternCall& c, Plan& plan, int64_t heads, std::string* buffer) {
  const loopir::AttentionParams& a = c.attention;
  if (a.mask < 0 || a.causal_offset) return {};
  const loopir::BufferView& mv = c.tensors.at(size_t(a.mask));
  *buffer = mv.buffer;
  plan.mask_dtype = p.buffer(mv.buffer).dtype;
  if (attention_mask_type_code(plan.mask_dtype) < 0) return unsupported("a " + std::string(dtype_name(plan.mask_dtype)) + " bias");
  const std::vector<int64_t> s = broadcast_strides(mv);
  for (int i = 0; i < 4; ++i) plan.mask_stride[i] = s[size_t(i)];
  plan.mask_offset = mv.offset;
  plan.mask_inner = heads;
  return {};
}

}  // namespace

Expected<AttentionForwardGpuPlan> plan_attention_forward_on_gpu(const loopir::Program& p, size_t kernel) {
  const loopir::ExternCall* c = call_of(p, kernel, loopir::ExternKind::AttentionForward);
  if (!c) return unsupported(p.kernels.at(kernel).output + " is not a training attention forward");
  const loopir::AttentionParams& a = c->attention;
  AttentionForwardGpuPlan plan;
  plan.kernel = kernel;
  AttentionGpuPlan& f = plan.flash;
  f.kernel = kernel;
  f.params = a;
  f.output = loopir::result_buffer(*c, 0);
  plan.lse = loopir::result_buffer(*c, 1), plan.seed = loopir::result_buffer(*c, 2), plan.offset = loopir::result_buffer(*c, 3);
  if (f.output.empty()) return unsupported("nothing reads the output (the kernel writes it)");
  const loopir::BufferView &q = c->tensors.at(size_t(a.q)), &k = c->tensors.at(size_t(a.k)), &v = c->tensors.at(size_t(a.v));
  const loopir::Buffer& out = p.buffer(f.output);
  f.dtype = out.dtype;
  for (const loopir::BufferView* x : {&q, &k, &v})
    if (p.buffer(x->buffer).dtype != f.dtype) return unsupported("query, key, value and output of different dtypes");
  plan.heads = q.sizes[1];
  f.q = q.buffer, f.k = k.buffer, f.v = v.buffer;
  f.batch = q.sizes[0] * q.sizes[1], f.batch_inner = std::max<int64_t>(plan.heads, 1);
  f.m = q.sizes[2], f.d = q.sizes[3], f.n = k.sizes[2], f.dv = v.sizes[3];
  if (out.sizes != std::vector<int64_t>{q.sizes[0], q.sizes[1], f.m, f.dv}) return unsupported("the output is not [B, H, L, Ev]");
  put(layout_of(q.strides, q.offset), f.q_stride, f.q_inner, f.q_offset);
  put(layout_of(k.strides, k.offset), f.k_stride, f.k_inner, f.k_offset);
  put(layout_of(v.strides, v.offset), f.v_stride, f.v_inner, f.v_offset);
  put(layout_of(out.strides, out.offset), f.o_stride, f.o_inner, f.o_offset);
  if (Status st = take_mask(p, *c, f, f.batch_inner, &f.mask); !st.ok()) return st;
  bool write_lse = false;
  if (!plan.lse.empty()) {
    const loopir::Buffer& lse = p.buffer(plan.lse);
    if (lse.sizes.size() != 3 || lse.sizes[0] != q.sizes[0] || lse.sizes[1] != q.sizes[1])
      return unsupported("a logsumexp that is not [B, H, padded L]");
    plan.lse_padded = lse.sizes[2];
    for (int i = 0; i < 3; ++i) plan.lse_stride[i] = lse.strides[size_t(i)];
    plan.lse_offset = lse.offset;
    if (plan.lse_padded > 0) {  // compute_log_sumexp=False gives [B, H, 0]
      if (lse.dtype != DType::Float32) return unsupported("a " + std::string(dtype_name(lse.dtype)) + " logsumexp");
      if (plan.lse_padded < f.m) return unsupported("a logsumexp shorter than the query rows");
      write_lse = true;
      f.lse_stride[0] = plan.lse_stride[0], f.lse_stride[1] = plan.lse_stride[2], f.lse_inner = plan.lse_stride[1];
      f.lse_offset = plan.lse_offset;
    }
  }
  for (const std::string* s : {&plan.seed, &plan.offset})
    if (!s->empty() && p.buffer(*s).dtype != DType::Int64) return unsupported("a philox scalar that is not int64");
  if (!plan.seed.empty()) plan.seed_offset = p.buffer(plan.seed).offset;
  if (!plan.offset.empty()) plan.offset_offset = p.buffer(plan.offset).offset;
  Expected<AttentionGpuPlan> finished = finish_attention_plan(f, write_lse);
  if (!finished) return finished.status();
  plan.flash = *finished;
  plan.extras_function = kExtrasFunction;
  return plan;
}

Expected<AttentionBackwardExternPlan> plan_attention_backward_extern_on_gpu(const loopir::Program& p, size_t kernel) {
  const loopir::ExternCall* c = call_of(p, kernel, loopir::ExternKind::AttentionBackward);
  if (!c) return unsupported(p.kernels.at(kernel).output + " is not a training attention backward");
  const loopir::AttentionParams& a = c->attention;
  AttentionBackwardExternPlan plan;
  plan.kernel = kernel;
  AttentionBackwardGpuPlan& g = plan.grads;
  g.params = a;
  const loopir::BufferView &q = c->tensors.at(size_t(a.q)), &k = c->tensors.at(size_t(a.k)), &v = c->tensors.at(size_t(a.v));
  const loopir::BufferView &dout = c->tensors.at(size_t(a.dout)), &out = c->tensors.at(size_t(a.out)),
                           &lse = c->tensors.at(size_t(a.lse));
  g.dtype = p.buffer(q.buffer).dtype;
  for (const loopir::BufferView* x : {&k, &v, &dout, &out})
    if (p.buffer(x->buffer).dtype != g.dtype) return unsupported("operands of different dtypes");
  if (p.buffer(lse.buffer).dtype != DType::Float32) return unsupported("a logsumexp that is not float32");
  const int64_t heads = q.sizes[1];
  g.batch = q.sizes[0] * heads, g.batch_inner = std::max<int64_t>(heads, 1);
  g.m = q.sizes[2], g.d = q.sizes[3], g.n = k.sizes[2], g.dv = v.sizes[3];
  const std::vector<int64_t> o_sizes{q.sizes[0], heads, g.m, g.dv};
  if (dout.sizes != o_sizes || out.sizes != o_sizes) return unsupported("grad_out or out is not [B, H, L, Ev]");
  if (lse.sizes.size() != 3 || lse.sizes[0] != q.sizes[0] || lse.sizes[1] != heads || lse.sizes[2] < g.m)
    return unsupported("a logsumexp that is not [B, H, >= L]");
  plan.q = q.buffer, plan.k = k.buffer, plan.v = v.buffer, plan.dout = dout.buffer, plan.out = out.buffer, plan.lse = lse.buffer;
  put(layout_of(q.strides, q.offset), g.q_stride, g.q_inner, g.q_offset);
  put(layout_of(k.strides, k.offset), g.k_stride, g.k_inner, g.k_offset);
  put(layout_of(v.strides, v.offset), g.v_stride, g.v_inner, g.v_offset);
  put(layout_of(out.strides, out.offset), g.o_stride, g.o_inner, g.o_offset);
  put(layout_of(dout.strides, dout.offset), g.do_stride, g.do_inner, g.do_offset);
  g.lse_stride[0] = lse.strides[0], g.lse_stride[1] = lse.strides[2], g.lse_inner = lse.strides[1], g.lse_offset = lse.offset;
  if (Status st = take_mask(p, *c, g, g.batch_inner, &plan.mask); !st.ok()) return st;
  g.has_mask_tensor = !plan.mask.empty();
  // Gradients in their buffers' layouts (the eager op's: [B, H, X, Y] stored as [B, X, H, Y]).
  plan.dq = loopir::result_buffer(*c, 0), plan.dk = loopir::result_buffer(*c, 1), plan.dv = loopir::result_buffer(*c, 2);
  if (!loopir::result_buffer(*c, 3).empty()) return unsupported("the bias's gradient is read");
  struct Grad {
    const std::string& buffer;
    std::vector<int64_t> sizes;
    int64_t* stride;
    int64_t& inner;
    int64_t& offset;
  };
  for (const Grad& x : {Grad{plan.dq, q.sizes, g.dq_stride, g.dq_inner, g.dq_offset},
                        Grad{plan.dk, k.sizes, g.dk_stride, g.dk_inner, g.dk_offset},
                        Grad{plan.dv, v.sizes, g.dv_stride, g.dv_inner, g.dv_offset}}) {
    if (x.buffer.empty()) continue;
    const loopir::Buffer& b = p.buffer(x.buffer);
    if (b.sizes != x.sizes || b.dtype != g.dtype) return unsupported("a gradient of another shape or dtype than its operand");
    put(layout_of(b.strides, b.offset), x.stride, x.inner, x.offset);
  }
  Expected<AttentionBackwardGpuPlan> finished = plan_attention_backward_on_gpu(g);
  if (!finished) return finished.status();
  plan.grads = *finished;
  return plan;
}

std::string attention_forward_extras_source(const std::vector<AttentionForwardGpuPlan>& plans) {
  return plans.empty() ? "" : kExtrasSource;
}

Status run_attention_forward_on_gpu(const AttentionForwardGpuPlan& plan, const AttentionPointers& flash, CUdeviceptr lse,
                                    CUdeviceptr seed, CUdeviceptr offset, const AttentionForwardFunctions& fn,
                                    const Stream* stream) {
  AttentionPointers ptr = flash;
  ptr.lse = plan.flash.write_lse ? lse : 0;
  if (Status st = run_attention_on_gpu(plan.flash, ptr, fn.flash, stream); !st.ok()) return st;
  // The kernel's KilnAttnPadArgs, field for field.
  struct Args {
    uint64_t lse, seed, offset;
    int64_t ls[3];
    int64_t rows, heads, m, padded;
  } args{};
  args.lse = plan.flash.write_lse && lse ? lse + uint64_t(plan.lse_offset) * 4 : 0;
  args.seed = seed ? seed + uint64_t(plan.seed_offset) * 8 : 0;
  args.offset = offset ? offset + uint64_t(plan.offset_offset) * 8 : 0;
  for (int i = 0; i < 3; ++i) args.ls[i] = plan.lse_stride[i];
  args.rows = plan.flash.batch, args.heads = std::max<int64_t>(plan.heads, 1), args.m = plan.flash.m;
  args.padded = plan.lse_padded;
  if (!args.lse && !args.seed && !args.offset) return {};
  const int64_t total = args.lse ? args.rows * std::max<int64_t>(args.padded - args.m, 0) : 0;
  const Dim3 grid{unsigned(std::clamp<int64_t>((total + 255) / 256, 1, 1024))};
  void* params[] = {&args};
  if (Status st = launch(fn.extras, grid, Dim3{256}, 0, params, stream); !st.ok())
    return Status::error(plan.extras_function + ": " + st.message());
  return {};
}

}  // namespace kiln::codegen::cuda
