#include "compiler/codegen/cuda/cuda_pool.h"

#include <algorithm>
#include <optional>
#include <set>

#include "compiler/codegen/cuda/cuda_prelude.h"
#include "compiler/codegen/cuda/extern_args.h"

namespace kiln::codegen::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = int64_t(1) << 16;  // the kernels stride over the rest
constexpr const char* kForward = "aten::max_pool2d_with_indices.default";
constexpr const char* kBackward = "aten::max_pool2d_with_indices_backward.default";

constexpr const char* kPoolSource = R"KILN(
// ---- max pooling with indices (codegen/cuda/cuda_pool.h) ----
struct KilnPoolArgs {  // every field 8 bytes, as the host writes it
  i64 n, c, h, w, oh, ow;
  i64 is[4], xs[4], os[4];  // input, indices, output strides [N, C, H, W]
  i64 kh, kw, sh, sw, ph, pw, dh, dw;
};
// One thread per output element: the window's first maximum, or its last NaN
// (a NaN replaces whatever came before), as ATen's kernels pick it; the index
// is h * W + w in the input plane, starting at the window's first in-bounds element.
template <typename D>
__device__ __forceinline__ void kiln_maxpool_forward(const typename D::T* x, typename D::T* out, i64* idx,
                                                     const KilnPoolArgs& a) {
  const i64 total = a.n * a.c * a.oh * a.ow, step = (i64)gridDim.x * blockDim.x;
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
    const i64 ow = i % a.ow, t = i / a.ow, oh = t % a.oh, pl = t / a.oh, c = pl % a.c, n = pl / a.c;
    i64 hs = oh * a.sh - a.ph, ws = ow * a.sw - a.pw;
    const i64 he = min(hs + (a.kh - 1) * a.dh + 1, a.h), we = min(ws + (a.kw - 1) * a.dw + 1, a.w);
    while (hs < 0) hs += a.dh;
    while (ws < 0) ws += a.dw;
    const typename D::T* plane = x + n * a.is[0] + c * a.is[1];
    typename D::A best = -1.0 / 0.0;
    i64 at = hs * a.w + ws;
    for (i64 h = hs; h < he; h += a.dh)
      for (i64 w = ws; w < we; w += a.dw) {
        const typename D::A v = D::get(plane[h * a.is[2] + w * a.is[3]]);
        if (v > best || v != v) best = v, at = h * a.w + w;
      }
    out[n * a.os[0] + c * a.os[1] + oh * a.os[2] + ow * a.os[3]] = D::put(best);
    if (idx) idx[n * a.xs[0] + c * a.xs[1] + oh * a.xs[2] + ow * a.xs[3]] = at;
  }
}
// One thread per input element: the sum of the output gradients of the
// windows that can hold it and whose index names it, in ascending output order.
template <typename D>
__device__ __forceinline__ void kiln_maxpool_backward(const typename D::T* dy, const i64* idx, typename D::T* dx,
                                                      const KilnPoolArgs& a) {
  const i64 total = a.n * a.c * a.h * a.w, step = (i64)gridDim.x * blockDim.x;
  const i64 span_h = (a.kh - 1) * a.dh + 1, span_w = (a.kw - 1) * a.dw + 1;
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
    const i64 iw = i % a.w, t = i / a.w, ih = t % a.h, pl = t / a.h, c = pl % a.c, n = pl / a.c;
    const i64 oh0 = ih + a.ph < span_h ? 0 : (ih + a.ph - span_h) / a.sh + 1;
    const i64 ow0 = iw + a.pw < span_w ? 0 : (iw + a.pw - span_w) / a.sw + 1;
    const i64 oh1 = min((ih + a.ph) / a.sh + 1, a.oh), ow1 = min((iw + a.pw) / a.sw + 1, a.ow);
    const typename D::T* g = dy + n * a.is[0] + c * a.is[1];
    const i64* x = idx + n * a.xs[0] + c * a.xs[1];
    const i64 me = ih * a.w + iw;
    typename D::A sum = 0;
    for (i64 oh = oh0; oh < oh1; ++oh)
      for (i64 ow = ow0; ow < ow1; ++ow)
        if (x[oh * a.xs[2] + ow * a.xs[3]] == me) sum += D::get(g[oh * a.is[2] + ow * a.is[3]]);
    dx[n * a.os[0] + c * a.os[1] + ih * a.os[2] + iw * a.os[3]] = D::put(sum);
  }
}
)KILN";

Status unsupported(const std::string& why) { return Status::error("max pooling on the GPU: " + why); }

// An int list argument as two values (one value stands for both; absent or
// empty: `fallback`), or none when it is something else.
std::optional<std::pair<int64_t, int64_t>> pair_arg(const loopir::ExternCall& call, size_t index,
                                                    const std::string& name, std::pair<int64_t, int64_t> fallback) {
  const Arg* a = call_arg(call, index, name);
  if (!a || a->is_none()) return fallback;
  if (a->kind == Arg::Kind::Int) return std::pair{a->i, a->i};
  std::optional<std::vector<int64_t>> v = ints_arg(call, index, name);
  if (!v || v->size() > 2) return std::nullopt;
  if (v->empty()) return fallback;
  return std::pair{v->front(), v->back()};
}

// Sizes and strides as [N, C, H, W]: a 3-D tensor is one sample.
bool as_4d(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, int64_t* out_sizes,
           int64_t* out_strides) {
  if (sizes.size() != 3 && sizes.size() != 4) return false;
  const size_t skip = 4 - sizes.size();
  for (size_t d = 0; d < 4; ++d) {
    out_sizes[d] = d < skip ? 1 : sizes[d - skip];
    out_strides[d] = d < skip ? 0 : strides[d - skip];
  }
  return true;
}

}  // namespace

bool pool_target_on_gpu(const std::string& target) { return target == kForward || target == kBackward; }

Expected<PoolGpuPlan> plan_pool_on_gpu(const loopir::Program& p, size_t kernel) {
  const loopir::Kernel& k = p.kernels.at(kernel);
  if (k.kind != loopir::KernelKind::Extern || !k.call || !pool_target_on_gpu(k.call->target))
    return unsupported(k.output + " is not a max pooling extern kernel");
  const loopir::ExternCall& call = *k.call;
  PoolGpuPlan plan;
  plan.kernel = kernel;
  plan.backward = call.target == kBackward;
  // Forward: (self, kernel_size, stride, padding, dilation, ceil_mode);
  // backward: (grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices).
  const size_t shift = plan.backward ? 1 : 0;
  const loopir::BufferView* in = tensor_arg(call, 0, plan.backward ? "grad_output" : "self");
  const loopir::BufferView* self = tensor_arg(call, shift, "self");
  const loopir::BufferView* idx = plan.backward ? tensor_arg(call, 7, "indices") : nullptr;
  if (!in || !self || (plan.backward && !idx)) return unsupported("a tensor argument is not a tensor");
  plan.input = in->buffer;
  plan.output = output_of(call, 0);
  if (plan.output.empty()) return unsupported("nobody reads the result");
  const loopir::Buffer& out = p.buffer(plan.output);
  plan.dtype = out.dtype;
  if (!library_dtype(plan.dtype)) return unsupported("no kernel for " + std::string(dtype_name(plan.dtype)));
  if (p.buffer(in->buffer).dtype != plan.dtype) return unsupported("the input's dtype is not the output's");
  auto kernel_size = pair_arg(call, shift + 1, "kernel_size", {0, 0});
  if (!kernel_size || kernel_size->first < 1 || kernel_size->second < 1) return unsupported("the kernel size");
  auto stride = pair_arg(call, shift + 2, "stride", *kernel_size);
  auto pad = pair_arg(call, shift + 3, "padding", {0, 0});
  auto dil = pair_arg(call, shift + 4, "dilation", {1, 1});
  if (!stride || !pad || !dil || stride->first < 1 || stride->second < 1 || dil->first < 1 || dil->second < 1 ||
      pad->first < 0 || pad->second < 0)
    return unsupported("stride, padding or dilation");
  plan.kernel_size[0] = kernel_size->first, plan.kernel_size[1] = kernel_size->second;
  plan.stride[0] = stride->first, plan.stride[1] = stride->second;
  plan.pad[0] = pad->first, plan.pad[1] = pad->second;
  plan.dil[0] = dil->first, plan.dil[1] = dil->second;
  int64_t x_sizes[4], pooled_sizes[4], scratch[4];
  if (!as_4d(self->sizes, self->strides, x_sizes, scratch)) return unsupported("only 3-D and 4-D inputs");
  const std::vector<int64_t>& pooled = plan.backward ? in->sizes : out.sizes;
  if (!as_4d(pooled, pooled, pooled_sizes, scratch) || pooled.size() != self->sizes.size())
    return unsupported("the pooled tensor's rank is not the input's");
  plan.n = x_sizes[0], plan.c = x_sizes[1], plan.h = x_sizes[2], plan.w = x_sizes[3];
  plan.oh = pooled_sizes[2], plan.ow = pooled_sizes[3];
  if (pooled_sizes[0] != plan.n || pooled_sizes[1] != plan.c) return unsupported("batch or channels do not match");
  if (!as_4d(in->sizes, in->strides, scratch, plan.in_stride) || !as_4d(out.sizes, out.strides, scratch, plan.out_stride))
    return unsupported("only 3-D and 4-D tensors");
  plan.in_offset = in->offset, plan.out_offset = out.offset;
  if (plan.backward) {
    plan.indices = idx->buffer;
    if (!as_4d(idx->sizes, idx->strides, scratch, plan.idx_stride)) return unsupported("the indices' rank");
    plan.idx_offset = idx->offset;
  } else {
    plan.indices = output_of(call, 1);
    if (!plan.indices.empty()) {
      const loopir::Buffer& ib = p.buffer(plan.indices);
      if (!as_4d(ib.sizes, ib.strides, scratch, plan.idx_stride)) return unsupported("the indices' rank");
      plan.idx_offset = ib.offset;
    }
  }
  if (!plan.indices.empty() && p.buffer(plan.indices).dtype != DType::Int64) return unsupported("indices not int64");
  plan.function = std::string("kiln_maxpool_") + (plan.backward ? "backward_" : "forward_") +
                  std::string(dtype_abbrev(plan.dtype));
  return plan;
}

std::string pool_kernels_source(const std::vector<PoolGpuPlan>& plans) {
  std::string instances;
  std::set<std::string> done;
  for (const PoolGpuPlan& p : plans) {
    if (!done.insert(p.function).second) continue;
    const std::string d = dtype_traits(p.dtype);
    instances += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kThreads) + ") " + p.function +
                 (p.backward ? "(const " + d + "::T* dy, const i64* idx, " + d + "::T* dx, KilnPoolArgs a) { kiln_maxpool_backward<" +
                                   d + ">(dy, idx, dx, a); }\n"
                             : "(const " + d + "::T* x, " + d + "::T* out, i64* idx, KilnPoolArgs a) { kiln_maxpool_forward<" +
                                   d + ">(x, out, idx, a); }\n");
  }
  return instances.empty() ? "" : kPoolSource + instances;
}

Status run_pool_on_gpu(const PoolGpuPlan& p, const PoolPointers& ptr, CUfunction fn, const Stream* stream) {
  const int64_t total = p.backward ? p.n * p.c * p.h * p.w : p.n * p.c * p.oh * p.ow;
  if (total == 0) return {};
  struct Args {  // KilnPoolArgs, field for field
    int64_t n, c, h, w, oh, ow;
    int64_t is[4], xs[4], os[4];
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
  } a{p.n, p.c, p.h, p.w, p.oh, p.ow, {}, {}, {}, p.kernel_size[0], p.kernel_size[1], p.stride[0], p.stride[1],
      p.pad[0], p.pad[1], p.dil[0], p.dil[1]};
  std::copy(p.in_stride, p.in_stride + 4, a.is);
  std::copy(p.idx_stride, p.idx_stride + 4, a.xs);
  std::copy(p.out_stride, p.out_stride + 4, a.os);
  const uint64_t es = element_size(p.dtype);
  CUdeviceptr in = ptr.input + CUdeviceptr(p.in_offset) * es, out = ptr.output + CUdeviceptr(p.out_offset) * es;
  CUdeviceptr idx = p.indices.empty() ? 0 : ptr.indices + CUdeviceptr(p.idx_offset) * 8;
  void* forward[] = {&in, &out, &idx, &a};
  void* backward[] = {&in, &idx, &out, &a};
  Dim3 grid{unsigned(std::clamp<int64_t>((total + kThreads - 1) / kThreads, 1, kMaxBlocks))};
  if (Status st = launch(fn, grid, Dim3{kThreads}, 0, p.backward ? backward : forward, stream); !st.ok())
    return Status::error(p.function + ": " + st.message());
  return {};
}

}  // namespace kiln::codegen::cuda
