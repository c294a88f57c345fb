#include "compiler/codegen/cuda/cuda_conv.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <set>
#include <sstream>

#include "compiler/codegen/cuda/cuda_prelude.h"

namespace kiln::codegen::cuda {
namespace {

// Larger batches gain little GEMM efficiency past this; a bigger batch runs
// im2col + GEMM over chunks of samples so the workspace stays bounded.
constexpr size_t kWorkspaceCap = size_t(512) << 20;
constexpr int kThreads = 256;
// About this many blocks in all for the row-walking kernels (move_shape), each
// looping over its rows: a block per row (18,432 of them for one ResNet-18
// im2col) ran at a third of the bandwidth a copy gets.
constexpr int64_t kMoveBlocks = 2048;
// im2col's threads each write a whole window: one per (sample, channel,
// pixel group) up to this many blocks, looping past it.
constexpr int64_t kIm2colBlocks = 16384;
// Below this many whole-window threads, each thread takes one window row.
constexpr int64_t kSplitWindowThreads = 131072;
constexpr int64_t kMaxBlocks = int64_t(1) << 16;  // the kernels stride over the rest
// Below this many output pixels per sample, samples share one GEMM
// (ConvGpuPlan::merged); KILN_CONV_MERGED_PIXELS overrides it for tuning.
int64_t merged_pixels() {
  static const int64_t limit = [] {
    const char* env = std::getenv("KILN_CONV_MERGED_PIXELS");
    return env && *env ? std::atoll(env) : int64_t(512);
  }();
  return limit;
}

// The one stride with which row-major dims `sizes` walk memory as a single
// flattened dim (size-1 dims have no say), or none when they do not.
std::optional<int64_t> flat_stride(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  std::optional<int64_t> unit;
  int64_t inner = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] == 1) continue;
    if (!unit) unit = strides[d];
    else if (strides[d] != *unit * inner) return std::nullopt;
    inner *= sizes[d];
  }
  return unit.value_or(1);
}

GemmOperand transposed(GemmOperand o) {
  std::swap(o.row_stride, o.col_stride);
  return o;
}

// out[n][g] = W[g] @ col[n][g] for samples [n0, n0 + count) and group g. An
// output whose channels, not pixels, are adjacent (channels-last) is written
// as its transpose: out^T = col^T @ W^T.
GemmCall conv_gemm(const ConvGpuPlan& p, const ConvPointers& ptr, int64_t g, int64_t n0, int64_t count) {
  const int64_t og = p.oc / p.groups, ckk = p.column_rows(), pixels = p.pixels();
  if (p.merged) {  // groups == 1: product[oc][sample * pixels + pixel] = W @ col
    const int64_t wide = count * pixels;
    GemmCall call;
    call.dtype = p.dtype;
    call.m = p.oc, call.n = wide, call.k = ckk;
    call.a = {ptr.weight, p.w_offset, p.w_row_stride, p.w_col_stride, 0};
    call.b = {ptr.workspace, 0, wide, 1, 0};
    call.c = {ptr.workspace, p.chunk * ckk * pixels, wide, 1, 0};
    return call;
  }
  GemmOperand w{ptr.weight, p.w_offset + g * og * p.w_row_stride, p.w_row_stride, p.w_col_stride, 0};
  GemmOperand cols;
  if (p.direct)
    cols = {ptr.input, p.x_offset + n0 * p.x_stride[0] + g * (p.c / p.groups) * p.x_stride[1], p.x_stride[1],
            p.x_pixel_stride, p.x_stride[0]};
  else
    cols = {ptr.workspace, g * ckk * pixels, pixels, 1, p.groups * ckk * pixels};
  GemmOperand out{ptr.output, p.out_offset + n0 * p.out_n_stride + g * og * p.out_c_stride, p.out_c_stride,
                  p.out_pixel_stride, p.out_n_stride};
  GemmCall call;
  call.batch = count;
  call.dtype = p.dtype;
  call.k = ckk;
  if (p.out_pixel_stride == 1) {
    call.m = og, call.n = pixels, call.a = w, call.b = cols, call.c = out;
  } else {
    call.m = pixels, call.n = og, call.a = transposed(cols), call.b = transposed(w), call.c = transposed(out);
    if (og == 1) call.c.col_stride = 1;  // a single column: its stride is never used
  }
  return call;
}

template <class I>
struct Im2colArgs {  // kiln_conv_im2col's KilnIm2col<I>, member for member
  I samples, c, h, w, kh, kw, oh, ow, sn, sc, sh, sw, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
  I col_sample, col_row, vec, split_kh;
};

template <class I>
Status launch_im2col(const ConvGpuPlan& p, const ConvPointers& ptr, CUfunction fn, int64_t n0, int64_t count,
                     const Stream* stream) {
  const size_t es = element_size(p.dtype);
  const int64_t pixels = p.pixels(), v = vector_width(p.dtype);
  // A group never straddles an output row (nor so a sample), and rows start aligned.
  const bool vec = pixels % v == 0 && p.ow % v == 0 && ptr.workspace % 16 == 0;
  const int64_t col_sample = p.merged ? pixels : p.c * p.kh * p.kw * pixels;
  const int64_t col_row = p.merged ? count * pixels : pixels;
  // Fewer (sample, channel, group) threads than about half the device holds
  // (conv1's 3 channels): each takes one window row, so the device fills.
  const int64_t whole_windows = count * p.c * (pixels / (vec ? v : 1));
  const bool split_kh = whole_windows < kSplitWindowThreads && p.kh > 1;
  Im2colArgs<I> a{I(count),          I(p.c),           I(p.h),           I(p.w),          I(p.kh),
                  I(p.kw),           I(p.oh),          I(p.ow),          I(p.x_stride[0]), I(p.x_stride[1]),
                  I(p.x_stride[2]),  I(p.x_stride[3]), I(p.stride[0]),   I(p.stride[1]),  I(p.pad[0]),
                  I(p.pad[1]),       I(p.dil[0]),      I(p.dil[1]),      I(col_sample),   I(col_row),
                  I(vec),            I(split_kh)};
  CUdeviceptr x = ptr.input + CUdeviceptr((p.x_offset + n0 * p.x_stride[0]) * int64_t(es));
  CUdeviceptr col = ptr.workspace;
  void* args[] = {&x, &col, &a};
  const int64_t threads = whole_windows * (split_kh ? p.kh : 1);
  const Dim3 grid{unsigned(std::clamp<int64_t>((threads + kThreads - 1) / kThreads, 1, kIm2colBlocks))};
  return launch(fn, grid, Dim3{kThreads}, 0, args, stream);
}

// Every index the narrow im2col computes fits in an int: the column elements
// of a chunk (plus a grid's stride past the end) and the input elements a chunk reads.
bool im2col_fits_int(const ConvGpuPlan& p) {
  const int64_t total = int64_t(p.workspace_bytes() / element_size(p.dtype));
  int64_t span = 0;
  const int64_t sizes[4] = {p.chunk, p.c, p.h, p.w};
  for (int d = 0; d < 4; ++d) span += (sizes[d] - 1) * std::llabs(p.x_stride[d]);
  return total < kIntIndexLimit && span < kIntIndexLimit;
}

const char* kConvSource = R"KILN(
// ---- Convolution extern kernels (cuda_conv.h): im2col and the bias ----
template <typename I> struct KilnIm2col {
  I samples, c, h, w, kh, kw, oh, ow, sn, sc, sh, sw, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
  I col_sample, col_row, vec;  // column row (n, r) starts at n * col_sample + r * col_row
  I split_kh;                  // a thread per window row kh too (few channels and pixels: conv1)
};

// V elements of T as one 16-byte store (V == 1: a plain store).
template <int V, typename T>
__device__ __forceinline__ void kiln_store_group(T* __restrict__ to, const T (&v)[V]) {
  if constexpr (V == 1) {
    *to = v[0];
  } else {
    union { T e[V]; uint4 u; } pack;
#pragma unroll
    for (int i = 0; i < V; ++i) pack.e[i] = v[i];
    *reinterpret_cast<uint4*>(to) = pack.u;
  }
}

// col[n][c * KH * KW + kh * KW + kw][oh * OW + ow] = x[n, c, ih, iw], 0 in the
// padding, row (n, r) starting at n * col_sample + r * col_row (samples one
// after another, or side by side for a merged GEMM). A thread takes V
// adjacent output pixels of one (n, c) and writes them into all KH * KW rows
// of that channel (with split_kh, the KW rows of one kh), so its (n, c,
// pixel) is worked out once for the whole window: per element, the divisions
// cost as much as the stores. Adjacent threads take adjacent pixels, so each
// of those stores coalesces. V > 1 (a 16-byte store) only where the plan found
// that no group straddles an output row. Values are only moved: the element
// size picks the instantiation.
template <int V, typename T, typename I>
__device__ __forceinline__ void kiln_im2col_windows(const T* __restrict__ x, T* __restrict__ col,
                                                    const KilnIm2col<I>& a) {
  const I groups = a.oh * a.ow / V, window = a.kh * a.kw, parts = a.split_kh ? a.kh : 1;
  const I total = a.samples * a.c * parts * groups, step = (I)gridDim.x * (I)blockDim.x;
  for (I e = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; e < total; e += step) {
    const I ncp = e / groups, g = e - ncp * groups, nc = ncp / parts, part = ncp - nc * parts;
    const I n = nc / a.c, c = nc - n * a.c;
    const I l = g * V, oh = l / a.ow, ow = l - oh * a.ow;
    const I ih0 = oh * a.stride_h - a.pad_h, iw0 = ow * a.stride_w - a.pad_w;
    const T* __restrict__ plane = x + n * a.sn + c * a.sc;
    T* __restrict__ out = col + n * a.col_sample + c * window * a.col_row + l;
    for (I kh = a.split_kh ? part : 0, kh_end = a.split_kh ? part + 1 : a.kh; kh < kh_end; ++kh) {
      const I ih = ih0 + kh * a.dil_h;
      const bool row_in = ih >= 0 && ih < a.h;
      const T* __restrict__ src = plane + (row_in ? ih : 0) * a.sh;
      for (I kw = 0; kw < a.kw; ++kw) {
        const I iw_k = iw0 + kw * a.dil_w;
        T v[V];
#pragma unroll
        for (int i = 0; i < V; ++i) {
          const I iw = iw_k + (I)i * a.stride_w;
          v[i] = row_in && iw >= 0 && iw < a.w ? src[iw * a.sw] : (T)0;
        }
        kiln_store_group<V>(out + (kh * a.kw + kw) * a.col_row, v);
      }
    }
  }
}

template <typename T, typename I>
__device__ __forceinline__ void kiln_conv_im2col(const T* __restrict__ x, T* __restrict__ col, const KilnIm2col<I>& a) {
  if (a.vec) kiln_im2col_windows<16 / sizeof(T)>(x, col, a);
  else kiln_im2col_windows<1>(x, col, a);
}

// A merged GEMM's product[oc][n][p] to out[n, oc, p] (kiln_move_channel_rows, cuda_prelude.h).
template <typename T, typename I>
__device__ __forceinline__ void kiln_conv_scatter(T* __restrict__ out, const T* __restrict__ product, I rows,
                                                  I samples, I pixels, I sn, I sc, I sp, I vec) {
  if (vec) kiln_move_channel_rows<true, 16 / sizeof(T)>(out, product, rows, samples, pixels, sn, sc, sp);
  else kiln_move_channel_rows<true, 1>(out, product, rows, samples, pixels, sn, sc, sp);
}

// out[n, oc, pixel] += bias[oc], in float for the half types.
template <typename D>
__device__ __forceinline__ void kiln_conv_bias(typename D::T* out, const typename D::T* __restrict__ bias, i64 total,
                                               i64 channels, i64 pixels, i64 sn, i64 sc, i64 sp, i64 bias_stride) {
  const i64 step = (i64)gridDim.x * blockDim.x;
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
    const i64 p = i % pixels, nc = i / pixels, c = nc % channels, n = nc / channels;
    typename D::T& o = out[n * sn + c * sc + p * sp];
    o = D::put(D::get(o) + D::get(bias[c * bias_stride]));
  }
}
)KILN";

std::string im2col_instance(const std::string& name, size_t element_bytes, bool narrow) {
  const char* t = element_bytes == 2 ? "unsigned short" : element_bytes == 4 ? "unsigned" : "u64";
  const char* i = narrow ? "int" : "i64";
  std::ostringstream os;
  os << "extern \"C\" __global__ void __launch_bounds__(" << kThreads << ") " << name << "(const " << t << "* x, "
     << t << "* col, KilnIm2col<" << i << "> a) { kiln_conv_im2col(x, col, a); }\n";
  return os.str();
}

std::string scatter_instance(const std::string& name, size_t element_bytes, bool narrow) {
  const char* t = element_bytes == 2 ? "unsigned short" : element_bytes == 4 ? "unsigned" : "u64";
  const char* i = narrow ? "int" : "i64";
  std::ostringstream os;
  os << "extern \"C\" __global__ void __launch_bounds__(" << kThreads << ") " << name << "(" << t << "* out, const "
     << t << "* product, " << i << " rows, " << i << " samples, " << i << " pixels, " << i << " sn, " << i << " sc, "
     << i << " sp, " << i << " vec) { kiln_conv_scatter(out, product, rows, samples, pixels, sn, sc, sp, vec); }\n";
  return os.str();
}

std::string bias_instance(const std::string& name, DType d) {
  const char* traits = dtype_traits(d);
  std::ostringstream os;
  os << "extern \"C\" __global__ void __launch_bounds__(" << kThreads << ") " << name << "(" << traits
     << "::T* out, const " << traits << "::T* bias, i64 total, i64 channels, i64 pixels, i64 sn, i64 sc, i64 sp, "
     << "i64 bias_stride) { kiln_conv_bias<" << traits << ">(out, bias, total, channels, pixels, sn, sc, sp, "
     << "bias_stride); }\n";
  return os.str();
}

Status unsupported(const std::string& why) { return Status::error("convolution on the GPU: " + why); }

}  // namespace

int64_t vector_width(DType d) { return 16 / int64_t(element_size(d)); }

MoveShape move_shape(int64_t rows, int64_t columns, int64_t vec) {
  const int64_t groups = std::max<int64_t>((columns + vec - 1) / vec, 1);
  const int64_t bx = std::min<int64_t>(kThreads, (groups + 31) / 32 * 32), by = kThreads / bx;
  const int64_t gx = std::clamp<int64_t>((groups + bx - 1) / bx, 1, 65535);
  const int64_t gy = std::clamp<int64_t>((rows + by - 1) / by, 1, std::clamp<int64_t>(kMoveBlocks / gx, 1, 65535));
  MoveShape s;
  s.block = {unsigned(bx), unsigned(by)};
  s.grid = {unsigned(gx), unsigned(gy)};
  return s;
}

bool channel_rows_fit_int(const ConvGpuPlan& p) {
  const int64_t span = (p.chunk - 1) * std::llabs(p.out_n_stride) + (p.oc - 1) * std::llabs(p.out_c_stride) +
                       (p.pixels() - 1) * std::llabs(p.out_pixel_stride);
  return p.chunk * p.oc * p.pixels() < kIntIndexLimit && span < kIntIndexLimit;
}

namespace {
template <class I>
Status launch_rows(const ConvGpuPlan& p, CUfunction fn, CUdeviceptr out, CUdeviceptr in, int64_t count,
                   const Stream* stream) {
  const int64_t v = vector_width(p.dtype);
  // Whole aligned 16-byte groups on both sides (the rows side's are, when pixels are).
  const bool vec = p.out_pixel_stride == 1 && p.pixels() % v == 0 && p.out_n_stride % v == 0 &&
                   p.out_c_stride % v == 0 && out % 16 == 0 && in % 16 == 0;
  I rows = I(p.oc * count), samples = I(count), pixels = I(p.pixels());
  I sn = I(p.out_n_stride), sc = I(p.out_c_stride), sp = I(p.out_pixel_stride), vector = I(vec);
  void* args[] = {&out, &in, &rows, &samples, &pixels, &sn, &sc, &sp, &vector};
  const MoveShape shape = move_shape(rows, pixels, vec ? v : 1);
  return launch(fn, shape.grid, shape.block, 0, args, stream);
}
}  // namespace

Status launch_channel_rows(const ConvGpuPlan& p, CUfunction fn, bool narrow, CUdeviceptr out, CUdeviceptr in,
                           int64_t count, const Stream* stream) {
  return narrow ? launch_rows<int32_t>(p, fn, out, in, count, stream)
                : launch_rows<int64_t>(p, fn, out, in, count, stream);
}

size_t ConvGpuPlan::workspace_bytes() const {
  if (!implicit.function.empty()) return implicit_conv_workspace_bytes(*this);
  if (direct) return 0;
  return size_t(chunk * (c * kh * kw + (merged ? oc : 0)) * pixels()) * element_size(dtype);
}

Expected<ConvGpuPlan> plan_conv_on_gpu(const loopir::Program& p, size_t kernel, const ConvChoice& choice) {
  const loopir::Kernel& k = p.kernels.at(kernel);
  if (k.kind != loopir::KernelKind::Extern || !k.call || k.call->kind != loopir::ExternKind::Convolution)
    return unsupported(k.output + " is not a convolution extern kernel");
  const loopir::ExternCall& call = *k.call;
  const loopir::ConvParams& cp = call.conv;
  const loopir::Buffer& out = p.buffer(k.output);
  const loopir::BufferView& x = call.tensors.at(size_t(cp.input));
  const loopir::BufferView& w = call.tensors.at(size_t(cp.weight));
  const loopir::BufferView* bias = cp.bias >= 0 ? &call.tensors.at(size_t(cp.bias)) : nullptr;
  for (const loopir::BufferView* v : {&x, &w, bias})
    if (v && p.buffer(v->buffer).dtype != out.dtype)
      return unsupported("mixed dtypes (" + v->buffer + " is " + std::string(dtype_name(p.buffer(v->buffer).dtype)) +
                         ", the output " + std::string(dtype_name(out.dtype)) + ")");
  const loopir::BufferView out_view{k.output, out.sizes, out.strides, out.offset};
  Expected<ConvGpuPlan> plan = plan_conv_geometry(out.dtype, x, w, out_view, cp, false);
  if (!plan) return plan;
  plan->kernel = kernel;
  if (bias) {
    plan->bias = bias->buffer, plan->bias_stride = bias->strides.at(0), plan->bias_offset = bias->offset;
    plan->bias_kernel = "kiln_conv_bias_" + std::string(dtype_abbrev(plan->dtype));
  }
  // "auto" leaves a 1x1 stride-1 convolution to cuBLAS, which reads its input
  // in place: there is no im2col traffic for the implicit kernel to save.
  if (choice.algorithm == ConvAlgorithm::Implicit || (choice.algorithm == ConvAlgorithm::Auto && !plan->direct))
    if (implicit_conv_refusal(*plan, choice).empty()) {
      plan->direct = plan->merged = false;
      plan->im2col_kernel.clear(), plan->scatter_kernel.clear(), plan->bias_kernel.clear();
      if (Status st = plan_implicit_conv(*plan); !st.ok()) return st;
      return plan;
    }
  if (Status st = cublas_supports(conv_gemm(*plan, {}, 0, 0, plan->chunk)); !st.ok()) return unsupported(st.message());
  return plan;
}

Expected<ConvGpuPlan> plan_conv_geometry(DType dtype, const loopir::BufferView& x, const loopir::BufferView& w,
                                         const loopir::BufferView& out, const loopir::ConvParams& cp,
                                         bool merge_all) {
  ConvGpuPlan plan;
  plan.dtype = dtype;
  if (!library_dtype(plan.dtype)) return unsupported("no " + std::string(dtype_name(plan.dtype)) + " GEMM in cuBLAS");
  const size_t rank = x.sizes.size();
  if ((rank != 3 && rank != 4) || w.sizes.size() != rank || out.sizes.size() != rank)
    return unsupported("only 1-D and 2-D convolutions");
  const size_t spatial = rank - 2;
  if (cp.stride.size() != spatial || cp.padding.size() != spatial || cp.dilation.size() != spatial)
    return unsupported("stride, padding and dilation do not match the input's rank");
  // 1-D as 2-D with a height of 1.
  auto as_2d = [&](std::vector<int64_t> v, int64_t height) {
    if (rank == 3) v.insert(v.begin() + 2, height);
    return v;
  };
  const std::vector<int64_t> xs = as_2d(x.sizes, 1), xt = as_2d(x.strides, 0);
  const std::vector<int64_t> ws = as_2d(w.sizes, 1), wt = as_2d(w.strides, 0);
  const std::vector<int64_t> os = as_2d(out.sizes, 1), ot = as_2d(out.strides, 0);
  plan.input = x.buffer, plan.weight = w.buffer, plan.output = out.buffer;
  plan.n = xs[0], plan.c = xs[1], plan.h = xs[2], plan.w = xs[3];
  std::copy(xt.begin(), xt.end(), plan.x_stride);
  plan.x_offset = x.offset;
  plan.oc = ws[0], plan.kh = ws[2], plan.kw = ws[3], plan.groups = cp.groups;
  plan.oh = os[2], plan.ow = os[3];
  for (size_t d = 0; d < 2; ++d) {
    const bool real = rank == 4 || d == 1;  // the inserted height has stride 1, no padding
    const size_t at = rank == 4 ? d : 0;
    plan.stride[d] = real ? cp.stride[at] : 1;
    plan.pad[d] = real ? cp.padding[at] : 0;
    plan.dil[d] = real ? cp.dilation[at] : 1;
  }
  if (plan.groups < 1 || plan.c % plan.groups || plan.oc % plan.groups || ws[1] != plan.c / plan.groups || plan.c == 0)
    return unsupported("channels and groups do not match");
  if (os[0] != plan.n || os[1] != plan.oc) return unsupported("the output's batch or channels do not match");
  const int64_t in[2] = {plan.h, plan.w}, window[2] = {plan.kh, plan.kw}, produced[2] = {plan.oh, plan.ow};
  for (int d = 0; d < 2; ++d) {
    if (plan.stride[d] < 1 || plan.dil[d] < 1 || plan.pad[d] < 0)
      return unsupported("a stride or dilation below 1, or negative padding");
    int64_t want = (in[d] + 2 * plan.pad[d] - plan.dil[d] * (window[d] - 1) - 1) / plan.stride[d] + 1;
    if (want != produced[d]) return unsupported("the output's spatial size does not follow from the parameters");
  }
  plan.w_row_stride = wt[0], plan.w_offset = w.offset;
  std::optional<int64_t> w_col = flat_stride({ws[1], ws[2], ws[3]}, {wt[1], wt[2], wt[3]});
  if (!w_col) return unsupported("the weight's (C, KH, KW) elements are not on one stride (a channels-last weight)");
  plan.w_col_stride = *w_col;
  std::optional<int64_t> out_pixel = flat_stride({os[2], os[3]}, {ot[2], ot[3]});
  if (!out_pixel) return unsupported("the output's pixels are not on one stride");
  plan.out_n_stride = ot[0], plan.out_c_stride = ot[1], plan.out_pixel_stride = *out_pixel, plan.out_offset = out.offset;
  std::optional<int64_t> x_pixel = flat_stride({plan.h, plan.w}, {plan.x_stride[2], plan.x_stride[3]});
  plan.direct = !merge_all && plan.kh == 1 && plan.kw == 1 && plan.stride[0] == 1 && plan.stride[1] == 1 &&
                plan.pad[0] == 0 && plan.pad[1] == 0 && x_pixel;
  if (plan.direct) {
    plan.x_pixel_stride = *x_pixel;
    plan.chunk = std::max<int64_t>(plan.n, 1);
  } else {
    plan.merged = merge_all || (plan.groups == 1 && plan.pixels() < merged_pixels());
    const size_t per_sample =
        size_t((plan.c * plan.kh * plan.kw + (plan.merged ? plan.oc : 0)) * plan.pixels()) * element_size(plan.dtype);
    plan.chunk = std::clamp<int64_t>(int64_t(kWorkspaceCap / std::max<size_t>(per_sample, 1)), 1,
                                     std::max<int64_t>(plan.n, 1));
    plan.im2col_kernel = "kiln_conv_im2col_b" + std::to_string(element_size(plan.dtype)) +
                         (im2col_fits_int(plan) ? "_i32" : "_i64");
    if (plan.merged && !merge_all)
      plan.scatter_kernel = "kiln_conv_scatter_b" + std::to_string(element_size(plan.dtype)) +
                            (channel_rows_fit_int(plan) ? "_i32" : "_i64");
  }
  return plan;
}

Status run_conv_im2col(const ConvGpuPlan& p, const ConvPointers& ptr, CUfunction fn, int64_t n0, int64_t count,
                       const Stream* stream) {
  Status st = p.im2col_kernel.ends_with("_i32") ? launch_im2col<int32_t>(p, ptr, fn, n0, count, stream)
                                                 : launch_im2col<int64_t>(p, ptr, fn, n0, count, stream);
  return st.ok() ? st : Status::error(p.im2col_kernel + ": " + st.message());
}

std::string conv_kernels_source(const std::vector<ConvGpuPlan>& plans) {
  std::string instances;
  std::set<std::string> done;
  for (const ConvGpuPlan& p : plans) {
    if (!p.im2col_kernel.empty() && done.insert(p.im2col_kernel).second)
      instances += im2col_instance(p.im2col_kernel, element_size(p.dtype), p.im2col_kernel.ends_with("_i32"));
    if (!p.bias_kernel.empty() && done.insert(p.bias_kernel).second) instances += bias_instance(p.bias_kernel, p.dtype);
    if (!p.scatter_kernel.empty() && done.insert(p.scatter_kernel).second)
      instances += scatter_instance(p.scatter_kernel, element_size(p.dtype), p.scatter_kernel.ends_with("_i32"));
  }
  return instances.empty() ? "" : kConvSource + instances;
}

Status run_conv_on_gpu(const ConvGpuPlan& p, const ConvPointers& ptr, const ConvFunctions& fn, bool tf32,
                       const Stream* stream) {
  if (!p.implicit.function.empty()) return run_implicit_conv(p, ptr, fn.implicit, fn.implicit_sum, stream);
  if (p.n == 0 || p.oc == 0 || p.pixels() == 0) return {};
  for (int64_t n0 = 0; n0 < p.n; n0 += p.chunk) {
    const int64_t count = std::min(p.chunk, p.n - n0);
    if (!p.direct)
      if (Status st = run_conv_im2col(p, ptr, fn.im2col, n0, count, stream); !st.ok()) return st;
    for (int64_t g = 0; g < p.groups; ++g) {
      GemmCall call = conv_gemm(p, ptr, g, n0, count);
      call.tf32 = tf32;
      if (Status st = cublas_gemm(call, stream); !st.ok()) return st;
    }
    if (p.merged) {
      const size_t es = element_size(p.dtype);
      CUdeviceptr out = ptr.output + CUdeviceptr((p.out_offset + n0 * p.out_n_stride) * int64_t(es));
      CUdeviceptr product = ptr.workspace + CUdeviceptr(p.chunk * p.column_rows() * p.pixels() * int64_t(es));
      Status st = launch_channel_rows(p, fn.scatter, p.scatter_kernel.ends_with("_i32"), out, product, count, stream);
      if (!st.ok()) return Status::error(p.scatter_kernel + ": " + st.message());
    }
  }
  if (p.bias.empty()) return {};
  const size_t es = element_size(p.dtype);
  CUdeviceptr out = ptr.output + CUdeviceptr(p.out_offset * int64_t(es));
  CUdeviceptr bias = ptr.bias + CUdeviceptr(p.bias_offset * int64_t(es));
  int64_t total = p.n * p.oc * p.pixels(), channels = p.oc, pixels = p.pixels();
  int64_t sn = p.out_n_stride, sc = p.out_c_stride, sp = p.out_pixel_stride, bias_stride = p.bias_stride;
  void* args[] = {&out, &bias, &total, &channels, &pixels, &sn, &sc, &sp, &bias_stride};
  Dim3 grid{unsigned(std::clamp<int64_t>((total + kThreads - 1) / kThreads, 1, kMaxBlocks))};
  if (Status st = launch(fn.bias, grid, Dim3{kThreads}, 0, args, stream); !st.ok())
    return Status::error(p.bias_kernel + ": " + st.message());
  return {};
}

}  // namespace kiln::codegen::cuda
