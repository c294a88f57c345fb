#include "compiler/codegen/cuda/cuda_conv_backward.h"

#include <algorithm>
#include <optional>
#include <set>

#include "compiler/codegen/cuda/cuda_prelude.h"
#include "compiler/codegen/cuda/extern_args.h"

namespace kiln::codegen::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = int64_t(1) << 16;  // the kernels stride over the rest
constexpr const char* kTarget = "aten::convolution_backward.default";

constexpr const char* kSource = R"KILN(
// ---- convolution backward (codegen/cuda/cuda_conv_backward.h) ----
// dy[n, c, p] to out[c][n][p] (kiln_move_channel_rows, cuda_prelude.h).
template <typename T, typename I>
__device__ __forceinline__ void kiln_conv_gather(T* __restrict__ out, const T* __restrict__ dy, I rows, I samples,
                                                 I pixels, I sn, I sc, I sp, I vec) {
  if (vec) kiln_move_channel_rows<false, 16 / sizeof(T)>(out, dy, rows, samples, pixels, sn, sc, sp);
  else kiln_move_channel_rows<false, 1>(out, dy, rows, samples, pixels, sn, sc, sp);
}
template <typename I> struct KilnCol2im {
  I samples, c, h, w, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw;
  I xs[4];  // grad_input's strides [N, C, H, W]
  I col_sample, col_row;  // column row (n, r) starts at n * col_sample + r * col_row
};
// The window entries along one axis that land on input position `at`:
// out = (at + pad - k * dil) / stride when that divides and is in [0, extent).
template <typename I>
__device__ __forceinline__ bool kiln_col2im_hit(I at, I pad, I k, I dil, I stride, I extent, I& out) {
  const I v = at + pad - k * dil;
  if (v < 0) return false;
  if (stride == 1) {
    out = v;
  } else {
    out = v / stride;
    if (out * stride != v) return false;
  }
  return out < extent;
}
// dx[n, c, ih, iw] = the sum of the columns' (n, c * KH * KW + kh * KW + kw,
// oh * OW + ow) over the window entries (kh, kw), in that order, that land on
// (ih, iw).
template <typename D, typename I>
__device__ __forceinline__ void kiln_conv_col2im(const typename D::T* __restrict__ cols, typename D::T* dx,
                                                 const KilnCol2im<I> a) {
  const I total = a.samples * a.c * a.h * a.w, step = (I)gridDim.x * (I)blockDim.x;
  const I window = a.kh * a.kw;
  for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < total; i += step) {
    const I t = i / a.w, iw = i - t * a.w, nc = t / a.h, ih = t - nc * a.h, n = nc / a.c, c = nc - n * a.c;
    const typename D::T* col = cols + n * a.col_sample + c * window * a.col_row;
    typename D::A sum = 0;
    for (I kh = 0; kh < a.kh; ++kh) {
      I oh;
      if (!kiln_col2im_hit(ih, a.ph, kh, a.dh, a.sh, a.oh, oh)) continue;
      for (I kw = 0; kw < a.kw; ++kw) {
        I ow;
        if (!kiln_col2im_hit(iw, a.pw, kw, a.dw, a.sw, a.ow, ow)) continue;
        sum += D::get(col[(kh * a.kw + kw) * a.col_row + oh * a.ow + ow]);
      }
    }
    dx[n * a.xs[0] + c * a.xs[1] + ih * a.xs[2] + iw * a.xs[3]] = D::put(sum);
  }
}
// gb[c] = the sum of dy[n, c, p] over samples and pixels: a block per channel,
// a fixed tree over the block's partial sums.
template <typename D>
__device__ __forceinline__ void kiln_conv_bias_grad(const typename D::T* __restrict__ dy, typename D::T* gb,
                                                    i64 samples, i64 pixels, i64 sn, i64 sc, i64 sp, i64 gbs) {
  __shared__ typename D::A part[256];
  const i64 c = blockIdx.x, total = samples * pixels;
  typename D::A sum = 0;
  for (i64 i = threadIdx.x; i < total; i += blockDim.x) sum += D::get(dy[(i / pixels) * sn + c * sc + (i % pixels) * sp]);
  part[threadIdx.x] = sum;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half >>= 1) {
    if ((int)threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) gb[c * gbs] = D::put(part[0]);
}
)KILN";

Status unsupported(const std::string& why) { return Status::error("convolution backward on the GPU: " + why); }

// Strides as [N, C, H, W] (1-D: a height of 1).
void strides_4d(const loopir::Buffer& b, int64_t* out) {
  const bool one_d = b.strides.size() == 3;
  for (size_t d = 0, from = 0; d < 4; ++d) out[d] = one_d && d == 2 ? 0 : b.strides[from++];
}

// grad_weight[g] (+)= dy[g] @ cols[g]^T over the chunk's samples, both from the workspace.
GemmCall weight_gemm(const ConvBackwardGpuPlan& b, const ConvBackwardPointers& ptr, int64_t g, int64_t n0,
                     int64_t count) {
  const ConvGpuPlan& p = b.geometry;
  const int64_t og = p.oc / p.groups, ckk = p.column_rows(), wide = count * p.pixels();
  GemmCall call;
  call.dtype = p.dtype;
  call.m = og, call.n = ckk, call.k = wide;
  call.a = {ptr.workspace, p.chunk * p.c * p.kh * p.kw * p.pixels() + g * og * wide, wide, 1, 0};
  call.b = {ptr.workspace, g * ckk * wide, 1, wide, 0};
  call.c = {ptr.grad_weight, b.gw_offset + g * og * b.gw_row_stride, b.gw_row_stride, b.gw_col_stride, 0};
  call.beta = n0 > 0 ? 1 : 0;
  return call;
}

// cols[g] = W[g]^T @ dY[g] over the chunk's samples side by side, dY being the
// gathered [channel][sample][pixel] copy after the columns: one GEMM of
// count * pixels columns per group into merged columns [row][sample][pixel].
// (A strided batch of one GEMM per sample ran narrow ones, 64 or 16 columns in
// ResNet's last stages, far below cuBLAS's speed.)
GemmCall input_gemm(const ConvBackwardGpuPlan& b, const ConvBackwardPointers& ptr, int64_t g, int64_t count) {
  const ConvGpuPlan& p = b.geometry;
  const int64_t og = p.oc / p.groups, ckk = p.column_rows(), wide = count * p.pixels();
  GemmCall call;
  call.dtype = p.dtype;
  call.m = ckk, call.n = wide, call.k = og;
  call.a = {ptr.weight, p.w_offset + g * og * p.w_row_stride, p.w_col_stride, p.w_row_stride, 0};
  call.b = {ptr.workspace, p.chunk * p.c * p.kh * p.kw * p.pixels() + g * og * wide, wide, 1, 0};
  call.c = {ptr.workspace, g * ckk * wide, wide, 1, 0};
  return call;
}

Dim3 grid_for(int64_t total) {
  return Dim3{unsigned(std::clamp<int64_t>((total + kThreads - 1) / kThreads, 1, kMaxBlocks))};
}

int64_t span_of(const int64_t* strides, const int64_t* sizes, int rank) {
  int64_t span = 0;
  for (int d = 0; d < rank; ++d) span += (sizes[d] - 1) * std::llabs(strides[d]);
  return span;
}

bool col2im_fits_int(const ConvBackwardGpuPlan& b) {
  const ConvGpuPlan& p = b.geometry;
  const int64_t sizes[4] = {p.chunk, p.c, p.h, p.w};
  return p.chunk * p.c * p.kh * p.kw * p.pixels() < kIntIndexLimit && p.chunk * p.c * p.h * p.w < kIntIndexLimit &&
         span_of(b.gi_stride, sizes, 4) < kIntIndexLimit;
}

template <class I>
Status launch_col2im(const ConvBackwardGpuPlan& b, const ConvBackwardPointers& ptr, CUfunction fn, int64_t n0,
                     int64_t count, const Stream* stream) {
  const ConvGpuPlan& p = b.geometry;
  struct {  // KilnCol2im<I>, field for field
    I samples, c, h, w, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw;
    I xs[4];
    I col_sample, col_row;
  } a{I(count),       I(p.c),         I(p.h),         I(p.w),         I(p.kh),       I(p.kw),
      I(p.oh),        I(p.ow),        I(p.stride[0]), I(p.stride[1]), I(p.pad[0]),   I(p.pad[1]),
      I(p.dil[0]),    I(p.dil[1]),    {I(b.gi_stride[0]), I(b.gi_stride[1]), I(b.gi_stride[2]), I(b.gi_stride[3])},
      I(p.pixels()),  I(count * p.pixels())};  // merged columns [row][sample][pixel]
  const int64_t es = int64_t(element_size(p.dtype));
  CUdeviceptr cols = ptr.workspace, dx = ptr.grad_input + CUdeviceptr((b.gi_offset + n0 * b.gi_stride[0]) * es);
  void* args[] = {&cols, &dx, &a};
  return launch(fn, grid_for(count * p.c * p.h * p.w), Dim3{kThreads}, 0, args, stream);
}

}  // namespace

bool conv_backward_target(const std::string& target) { return target == kTarget; }

Expected<ConvBackwardGpuPlan> plan_conv_backward_on_gpu(const loopir::Program& p, size_t kernel) {
  const loopir::Kernel& k = p.kernels.at(kernel);
  if (k.kind != loopir::KernelKind::Extern || !k.call || k.call->target != kTarget)
    return unsupported(k.output + " is not a convolution backward extern kernel");
  const loopir::ExternCall& call = *k.call;
  // (grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed, output_padding, groups, output_mask)
  const loopir::BufferView* dy = tensor_arg(call, 0, "grad_output");
  const loopir::BufferView* x = tensor_arg(call, 1, "input");
  const loopir::BufferView* w = tensor_arg(call, 2, "weight");
  if (!dy || !x || !w) return unsupported("a tensor argument is not a tensor");
  const Arg* transposed = call_arg(call, 7, "transposed");
  if (!transposed || transposed->kind != Arg::Kind::Bool || transposed->b)
    return unsupported("a transposed convolution");
  const Arg* groups = call_arg(call, 9, "groups");
  auto stride = ints_arg(call, 4, "stride"), padding = ints_arg(call, 5, "padding"),
       dilation = ints_arg(call, 6, "dilation");
  if (!groups || groups->kind != Arg::Kind::Int || !stride || !padding || !dilation)
    return unsupported("stride, padding, dilation or groups are not constants");
  const DType dtype = p.buffer(dy->buffer).dtype;
  for (const loopir::BufferView* v : {x, w})
    if (p.buffer(v->buffer).dtype != dtype) return unsupported("mixed dtypes");
  ConvBackwardGpuPlan plan;
  plan.kernel = kernel;
  plan.grad_output = dy->buffer;
  plan.grad_input = output_of(call, 0), plan.grad_weight = output_of(call, 1), plan.grad_bias = output_of(call, 2);
  for (const std::string* out : {&plan.grad_input, &plan.grad_weight, &plan.grad_bias})
    if (!out->empty() && p.buffer(*out).dtype != dtype) return unsupported("a gradient of another dtype");
  loopir::ConvParams params;
  params.stride = *stride, params.padding = *padding, params.dilation = *dilation, params.groups = groups->i;
  Expected<ConvGpuPlan> geometry = plan_conv_geometry(dtype, *x, *w, *dy, params, true);
  if (!geometry) return unsupported(geometry.status().message());
  plan.geometry = std::move(*geometry);
  const ConvGpuPlan& g = plan.geometry;
  // An empty batch or output still owes zero gradients, which these kernels do not write.
  if (g.n == 0 || g.pixels() == 0) return unsupported("an empty batch or output");
  const std::string traits = dtype_traits(dtype);
  if (!plan.grad_input.empty()) {
    const loopir::Buffer& gi = p.buffer(plan.grad_input);
    if (gi.sizes != x->sizes) return unsupported("grad_input's sizes are not the input's");
    strides_4d(gi, plan.gi_stride);
    plan.gi_offset = gi.offset;
    plan.col2im_kernel = std::string("kiln_conv_col2im_") + std::string(dtype_abbrev(dtype)) +
                         (col2im_fits_int(plan) ? "_i32" : "_i64");
    if (Status st = cublas_supports(input_gemm(plan, {}, 0, g.chunk)); !st.ok()) return unsupported(st.message());
  }
  if (!plan.grad_weight.empty()) {
    const loopir::Buffer& gw = p.buffer(plan.grad_weight);
    if (gw.sizes != w->sizes) return unsupported("grad_weight's sizes are not the weight's");
    // [OC, C/groups * KH * KW]: the elements after the first dim on one stride.
    int64_t inner = 1;
    std::optional<int64_t> unit;
    for (size_t d = gw.sizes.size(); d-- > 1;) {
      if (gw.sizes[d] == 1) continue;
      if (!unit) unit = gw.strides[d];
      else if (gw.strides[d] != *unit * inner) return unsupported("grad_weight's elements are not on one stride");
      inner *= gw.sizes[d];
    }
    plan.gw_row_stride = gw.strides[0], plan.gw_col_stride = unit.value_or(1), plan.gw_offset = gw.offset;
    if (Status st = cublas_supports(weight_gemm(plan, {}, 0, 0, g.chunk)); !st.ok()) return unsupported(st.message());
  }
  if (!plan.grad_bias.empty()) {
    const loopir::Buffer& gb = p.buffer(plan.grad_bias);
    if (gb.sizes.size() != 1 || gb.sizes[0] != g.oc) return unsupported("grad_bias is not [out_channels]");
    plan.gb_stride = gb.strides[0], plan.gb_offset = gb.offset;
    plan.bias_kernel = std::string("kiln_conv_bias_grad_") + std::string(dtype_abbrev(dtype));
  }
  if (!plan.grad_weight.empty() || !plan.grad_input.empty())  // both multiply the gathered dY
    plan.gather_kernel = "kiln_conv_gather_b" + std::to_string(element_size(dtype)) +
                         (channel_rows_fit_int(plan.geometry) ? "_i32" : "_i64");
  if (plan.grad_weight.empty()) plan.geometry.im2col_kernel.clear();  // no columns of the input needed
  return plan;
}

std::vector<ConvGpuPlan> conv_backward_geometries(const std::vector<ConvBackwardGpuPlan>& plans) {
  std::vector<ConvGpuPlan> out;
  for (const ConvBackwardGpuPlan& p : plans) out.push_back(p.geometry);
  return out;
}

std::string conv_backward_kernels_source(const std::vector<ConvBackwardGpuPlan>& plans) {
  std::string instances;
  std::set<std::string> done;
  const std::string head = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kThreads) + ") ";
  for (const ConvBackwardGpuPlan& p : plans) {
    const DType d = p.geometry.dtype;
    const std::string t = dtype_traits(d);
    const size_t es = element_size(d);
    const char* moved = es == 2 ? "unsigned short" : es == 4 ? "unsigned" : "u64";
    if (!p.gather_kernel.empty() && done.insert(p.gather_kernel).second) {
      const std::string i = p.gather_kernel.ends_with("_i32") ? "int" : "i64";
      instances += head + p.gather_kernel + "(" + moved + "* out, const " + moved + "* dy, " + i + " rows, " + i +
                   " samples, " + i + " pixels, " + i + " sn, " + i + " sc, " + i + " sp, " + i + " vec) { " +
                   "kiln_conv_gather(out, dy, rows, samples, pixels, sn, sc, sp, vec); }\n";
    }
    if (!p.col2im_kernel.empty() && done.insert(p.col2im_kernel).second) {
      const std::string i = p.col2im_kernel.ends_with("_i32") ? "int" : "i64";
      instances += head + p.col2im_kernel + "(const " + t + "::T* cols, " + t + "::T* dx, KilnCol2im<" + i + "> a) { " +
                   "kiln_conv_col2im<" + t + ">(cols, dx, a); }\n";
    }
    if (!p.bias_kernel.empty() && done.insert(p.bias_kernel).second)
      instances += head + p.bias_kernel + "(const " + t + "::T* dy, " + t +
                   "::T* gb, i64 samples, i64 pixels, i64 sn, i64 sc, i64 sp, i64 gbs) { kiln_conv_bias_grad<" + t +
                   ">(dy, gb, samples, pixels, sn, sc, sp, gbs); }\n";
  }
  return instances.empty() ? "" : kSource + instances;
}

Status run_conv_backward_on_gpu(const ConvBackwardGpuPlan& b, const ConvBackwardPointers& ptr,
                                const ConvBackwardFunctions& fn, bool tf32, const Stream* stream) {
  const ConvGpuPlan& p = b.geometry;
  const size_t es = element_size(p.dtype);
  auto at = [es](CUdeviceptr base, int64_t elements) { return base + CUdeviceptr(elements * int64_t(es)); };
  if (p.n > 0 && p.pixels() > 0 && (!b.grad_weight.empty() || !b.grad_input.empty()))
    for (int64_t n0 = 0; n0 < p.n; n0 += p.chunk) {
      const int64_t count = std::min(p.chunk, p.n - n0);
      // dY of the chunk's samples to [OC][sample][pixel] after the columns:
      // both gradients multiply it, and the input gradient's GEMM then
      // overwrites the columns the weight gradient's has read (one stream).
      Status gathered = launch_channel_rows(p, fn.gather, b.gather_kernel.ends_with("_i32"),
                                            at(ptr.workspace, p.chunk * p.c * p.kh * p.kw * p.pixels()),
                                            at(ptr.grad_output, p.out_offset + n0 * p.out_n_stride), count, stream);
      if (!gathered.ok()) return Status::error(b.gather_kernel + ": " + gathered.message());
      if (!b.grad_weight.empty()) {
        ConvPointers conv{ptr.input, ptr.weight, 0, ptr.grad_output, ptr.workspace};
        if (Status st = run_conv_im2col(p, conv, fn.im2col, n0, count, stream); !st.ok()) return st;
        for (int64_t g = 0; g < p.groups; ++g) {
          GemmCall call = weight_gemm(b, ptr, g, n0, count);
          call.tf32 = tf32;
          if (Status st = cublas_gemm(call, stream); !st.ok()) return st;
        }
      }
      if (!b.grad_input.empty()) {
        for (int64_t g = 0; g < p.groups; ++g) {
          GemmCall call = input_gemm(b, ptr, g, count);
          call.tf32 = tf32;
          if (Status st = cublas_gemm(call, stream); !st.ok()) return st;
        }
        Status st = b.col2im_kernel.ends_with("_i32") ? launch_col2im<int32_t>(b, ptr, fn.col2im, n0, count, stream)
                                                       : launch_col2im<int64_t>(b, ptr, fn.col2im, n0, count, stream);
        if (!st.ok()) return Status::error(b.col2im_kernel + ": " + st.message());
      }
    }
  if (b.grad_bias.empty() || p.oc == 0) return {};
  CUdeviceptr dy = at(ptr.grad_output, p.out_offset), gb = at(ptr.grad_bias, b.gb_offset);
  int64_t samples = p.n, pixels = p.pixels(), sn = p.out_n_stride, sc = p.out_c_stride, sp = p.out_pixel_stride,
          gbs = b.gb_stride;
  void* args[] = {&dy, &gb, &samples, &pixels, &sn, &sc, &sp, &gbs};
  if (Status st = launch(fn.bias, Dim3{unsigned(p.oc)}, Dim3{kThreads}, 0, args, stream); !st.ok())
    return Status::error(b.bias_kernel + ": " + st.message());
  return {};
}

}  // namespace kiln::codegen::cuda
