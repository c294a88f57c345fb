#include "compiler/codegen/cuda/cuda_conv_implicit.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "compiler/codegen/cuda/cuda_conv.h"
#include "compiler/codegen/cuda/cuda_prelude.h"

namespace kiln::codegen::cuda {
namespace {

// Blocks a launch should have: about two resident per SM of an H100 / H200
// (132 SMs), so that one block's barrier or loads overlap another's products.
// A guess until the kernel is timed on the device: KILN_CONV_TILE overrides.
constexpr int64_t kTargetBlocks = 200;
constexpr int64_t kMaxSplits = 16;
constexpr int kReduceThreads = 256;

const char* kImplicitSource = R"KILN(
// ---- implicit-GEMM convolution (codegen/cuda/cuda_conv_implicit.h) ----
template <typename I> struct KilnIgemmArgs {
  I n_pixels, oc, k, k_split;  // GEMM columns (N * OH * OW), rows, depth (C * KH * KW), depth per blockIdx.z
  I h, w, ow, pixels;          // input height and width, output width, OH * OW
  I sn, sc, sh, sw;            // input strides
  I stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
  I w_row, w_col;              // weight: [OC, C * KH * KW] strides
  I on, oc_s, op;              // output strides: sample, channel, pixel
  I bias_stride;
};
template <bool TF> struct KilnIgemmSmem { typedef unsigned short S; };  // half types: stored as they are
template <> struct KilnIgemmSmem<true> { typedef unsigned S; };         // float32: rounded to TF32 once, here

// D: the dtype's traits; E: 0 float32 (TF32), 1 float16, 2 bfloat16. A block
// computes out[m0 .. m0 + BM) x [n0 .. n0 + BN) over depth [k_begin, k_end),
// WARPS_M x WARPS_N warps each owning (BM / WARPS_M) x (BN / WARPS_N).
template <typename D, int E, int KH, int KW, int BM, int BN, int WARPS_M, int WARPS_N, bool HAS_BIAS, bool SPLIT,
          typename I>
__device__ __forceinline__ void kiln_conv_igemm(const typename D::T* __restrict__ x, const typename D::T* __restrict__ wt,
                                                const typename D::T* __restrict__ bias, typename D::T* __restrict__ out,
                                                float* __restrict__ part, const KilnIgemmArgs<I>& a) {
  typedef typename D::T T;
  constexpr bool TF = E == 0;
  typedef typename KilnIgemmSmem<TF>::S S;
  constexpr int NT = WARPS_M * WARPS_N * 32, NW = NT / 32;
  constexpr int BK = TF ? 16 : 32;            // 32 bytes of depth per row
  constexpr int LDA = BK + (TF ? 4 : 8);      // +4 words / +16 bytes: fragment loads on distinct banks
  constexpr int LDB = BN + 8;
  constexpr int WTM = BM / WARPS_M, WTN = BN / WARPS_N, MT = WTM / 16, NT8 = WTN / 8;
  constexpr int A_PER = BM * BK / NT;         // weight elements a thread stages per tile
  constexpr int CPT = BN / 32, RPT = BK / NW; // input columns (lane + 32 c) and rows (warp + NW r) a thread stages
  constexpr int KK = KH * KW;
  static_assert(BN % 32 == 0 && BK % NW == 0 && NT % BK == 0 && (BM * BK) % NT == 0, "tile and threads do not divide");
  static_assert(WTM % 16 == 0 && WTN % (TF ? 8 : 16) == 0, "warp tile not whole fragments");
  __shared__ __align__(16) S As[2][BM * LDA];  // [m][k]
  __shared__ __align__(16) S Bs[2][BK * LDB];  // [k][n]
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
  const I n0 = (I)blockIdx.x * BN, m0 = (I)blockIdx.y * BM;
  const I k_begin = (I)blockIdx.z * a.k_split;
  const I k_end = a.k < k_begin + a.k_split ? a.k : k_begin + a.k_split;

  // The pixels this thread gathers: where their window starts, fixed for the whole depth.
  I c_base[CPT], c_h[CPT], c_w[CPT];
  bool c_ok[CPT];
#pragma unroll
  for (int cc = 0; cc < CPT; ++cc) {
    const I n = n0 + lane + 32 * cc;
    c_ok[cc] = n < a.n_pixels;
    const I img = c_ok[cc] ? n / a.pixels : 0, p = c_ok[cc] ? n - img * a.pixels : 0;
    const I oh = p / a.ow, ow = p - oh * a.ow;
    c_h[cc] = oh * a.stride_h - a.pad_h;
    c_w[cc] = ow * a.stride_w - a.pad_w;
    c_base[cc] = img * a.sn + c_h[cc] * a.sh + c_w[cc] * a.sw;
  }

  // The weight: a thread's elements share a column (k) and step A_STEP rows.
  constexpr int A_STEP = NT / BK;
  const int a_k = tid % BK;
  const I a_m = m0 + tid / BK;
  const T* __restrict__ w_row0 = wt + a_m * a.w_row + (I)a_k * a.w_col;

  T rb[RPT][CPT], ra[A_PER];
  auto load = [&](I k0) {
#pragma unroll
    for (int r = 0; r < RPT; ++r) {
      const I k = k0 + warp + NW * r;
      const I c = k / KK, rem = k - c * KK, kh = rem / KW, kw = rem - kh * KW;
      const I dh = kh * a.dil_h, dw = kw * a.dil_w, off = c * a.sc + dh * a.sh + dw * a.sw;
      const bool row_ok = k < k_end;
#pragma unroll
      for (int cc = 0; cc < CPT; ++cc) {
        const I ih = c_h[cc] + dh, iw = c_w[cc] + dw;
        const bool ok = row_ok && c_ok[cc] && ih >= 0 && ih < a.h && iw >= 0 && iw < a.w;
        rb[r][cc] = ok ? x[c_base[cc] + off] : (T)0;
      }
    }
    const bool k_ok = k0 + a_k < k_end;
    const T* __restrict__ wk = w_row0 + k0 * a.w_col;
#pragma unroll
    for (int i = 0; i < A_PER; ++i) ra[i] = k_ok && a_m + i * A_STEP < a.oc ? wk[(I)(i * A_STEP) * a.w_row] : (T)0;
  };
  auto store = [&](int buf) {
#pragma unroll
    for (int r = 0; r < RPT; ++r)
#pragma unroll
      for (int cc = 0; cc < CPT; ++cc) {
        S v;
        if constexpr (TF) v = kiln_tf32(rb[r][cc]); else v = rb[r][cc];
        Bs[buf][(warp + NW * r) * LDB + lane + 32 * cc] = v;
      }
#pragma unroll
    for (int i = 0; i < A_PER; ++i) {
      S v;
      if constexpr (TF) v = kiln_tf32(ra[i]); else v = ra[i];
      As[buf][(tid / BK + i * A_STEP) * LDA + a_k] = v;
    }
  };

  float acc[MT][NT8][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT8; ++j) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.f;

  const int tiles = k_end > k_begin ? (int)((k_end - k_begin + BK - 1) / BK) : 0;
  if (tiles > 0) {
    load(k_begin);
    store(0);
  }
  __syncthreads();
  const int li = lane & 7, lj = lane >> 3;
  for (int t = 0; t < tiles; ++t) {
    const int buf = t & 1;
    if (t + 1 < tiles) load(k_begin + (I)(t + 1) * BK);  // in flight while the tensor cores work
    const S* A = As[buf] + wm * WTM * LDA;
    const S* B = Bs[buf] + wn * WTN;
    if constexpr (TF) {
#pragma unroll
      for (int ks = 0; ks < BK / 8; ++ks) {
        unsigned af[MT][4], bf[NT8][2];
#pragma unroll
        for (int i = 0; i < MT; ++i) {
          const S* p = A + (i * 16 + g) * LDA + ks * 8 + t4;
          af[i][0] = p[0], af[i][1] = p[8 * LDA], af[i][2] = p[4], af[i][3] = p[8 * LDA + 4];
        }
#pragma unroll
        for (int j = 0; j < NT8; ++j) {
          const S* p = B + (ks * 8 + t4) * LDB + j * 8 + g;
          bf[j][0] = p[0], bf[j][1] = p[4 * LDB];
        }
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
          for (int j = 0; j < NT8; ++j) kiln_mma1688_tf32(acc[i][j], af[i], bf[j][0], bf[j][1]);
      }
    } else {
#pragma unroll
      for (int ks = 0; ks < BK / 16; ++ks) {
        unsigned af[MT][4];
#pragma unroll
        for (int i = 0; i < MT; ++i) kiln_ldsm4(af[i], A + (i * 16 + li + (lj & 1) * 8) * LDA + ks * 16 + (lj >> 1) * 8);
#pragma unroll
        for (int j = 0; j < NT8 / 2; ++j) {
          unsigned b[4];
          kiln_ldsm4_t(b, B + (ks * 16 + li + (lj & 1) * 8) * LDB + j * 16 + (lj >> 1) * 8);
#pragma unroll
          for (int i = 0; i < MT; ++i) {
            kiln_mma16816<E == 2>(acc[i][2 * j], af[i], b[0], b[1]);
            kiln_mma16816<E == 2>(acc[i][2 * j + 1], af[i], b[2], b[3]);
          }
        }
      }
    }
    if (t + 1 < tiles) store(buf ^ 1);
    __syncthreads();
  }

  // C fragments: rows g and g + 8, columns 2 t4 and 2 t4 + 1 of each 16 x 8.
  float bv[MT][2];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const I m = m0 + wm * WTM + i * 16 + g + 8 * h;
      bv[i][h] = HAS_BIAS && !SPLIT && m < a.oc ? D::get(bias[m * a.bias_stride]) : 0.f;
    }
#pragma unroll
  for (int j = 0; j < NT8; ++j)
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      const I n = n0 + wn * WTN + j * 8 + 2 * t4 + q;
      if (n >= a.n_pixels) continue;
      const I img = n / a.pixels, p = n - img * a.pixels, at = img * a.on + p * a.op;
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const I m = m0 + wm * WTM + i * 16 + g + 8 * h;
          if (m >= a.oc) continue;
          const float v = acc[i][j][2 * h + q];
          if constexpr (SPLIT) part[((I)blockIdx.z * a.oc + m) * a.n_pixels + n] = v;
          else out[at + m * a.oc_s] = D::put(v + bv[i][h]);
        }
    }
}

// Split K: out[n, oc, p] = the parts' sum (+ bias), in float32, rounded once.
template <typename D>
__device__ __forceinline__ void kiln_conv_igemm_sum(const float* __restrict__ part, const typename D::T* __restrict__ bias,
                                                    typename D::T* __restrict__ out, i64 splits, i64 oc, i64 n_pixels,
                                                    i64 pixels, i64 on, i64 oc_s, i64 op, i64 bias_stride) {
  const i64 total = oc * n_pixels, step = (i64)gridDim.x * blockDim.x;
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
    const i64 m = i / n_pixels, n = i - m * n_pixels, img = n / pixels, p = n - img * pixels;
    float v = bias ? D::get(bias[m * bias_stride]) : 0.f;
    for (i64 s = 0; s < splits; ++s) v += part[s * total + i];
    out[img * on + m * oc_s + p * op] = D::put(v);
  }
}
)KILN";

template <class I>
struct IgemmArgs {  // KilnIgemmArgs<I>, member for member
  I n_pixels, oc, k, k_split, h, w, ow, pixels, sn, sc, sh, sw, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
  I w_row, w_col, on, oc_s, op, bias_stride;
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

const char* element_code(DType d) { return d == DType::Float32 ? "0" : d == DType::Float16 ? "1" : "2"; }

// Every index the kernel forms (the window's corner before padding is taken
// off included) stays below 2^31 with room for a tile past the end.
bool fits_int(const ConvGpuPlan& p, int64_t splits) {
  const int64_t limit = (int64_t(1) << 31) - (int64_t(1) << 20);
  auto a = [](int64_t v) { return std::llabs(v); };
  const int64_t x = (p.n - 1) * a(p.x_stride[0]) + (p.c - 1) * a(p.x_stride[1]) +
                    ((p.oh - 1) * p.stride[0] + p.pad[0] + (p.kh - 1) * p.dil[0]) * a(p.x_stride[2]) +
                    ((p.ow - 1) * p.stride[1] + p.pad[1] + (p.kw - 1) * p.dil[1]) * a(p.x_stride[3]);
  const int64_t w = (p.oc - 1) * a(p.w_row_stride) + (p.column_rows() - 1) * a(p.w_col_stride);
  const int64_t o = (p.n - 1) * a(p.out_n_stride) + (p.oc - 1) * a(p.out_c_stride) + (p.pixels() - 1) * a(p.out_pixel_stride);
  const int64_t columns = p.n * p.pixels();
  return x < limit && w < limit && o < limit && columns < limit && splits * p.oc * columns < limit &&
         p.column_rows() < limit && p.bias_stride * p.oc < limit;
}

int64_t tile_blocks(const ConvGpuPlan& p, const ImplicitConvTile& t) {
  return ceil_div(p.oc, t.bm) * ceil_div(p.n * p.pixels(), t.bn);
}

// The largest useful tile (rows x columns inside the output) that still
// gives kTargetBlocks blocks, the fuller one on a tie; when none does, the
// tile giving the most blocks, and K split until the launch has about
// kTargetBlocks blocks (each part at least 8 tiles deep).
void choose_tile(const ConvGpuPlan& p, ImplicitConvPlan& ip) {
  const double useful = double(p.oc) * double(p.n * p.pixels());
  const ImplicitConvTile* best = nullptr;
  double best_area = -1, best_fill = -1;
  for (const ImplicitConvTile& t : implicit_conv_tiles()) {
    const int64_t blocks = tile_blocks(p, t);
    if (blocks > 0 && blocks < kTargetBlocks) continue;
    const double fill = useful / (double(blocks) * t.bm * t.bn), area = t.bm * t.bn * fill;
    if (area > best_area + 1e-9 || (area > best_area - 1e-9 && fill > best_fill)) best = &t, best_area = area, best_fill = fill;
  }
  ip.splits = 1;
  if (!best) {
    int64_t most = -1;
    for (const ImplicitConvTile& t : implicit_conv_tiles())
      if (tile_blocks(p, t) > most) best = &t, most = tile_blocks(p, t);
  }
  ip.tile = *best;
  const int64_t blocks = tile_blocks(p, ip.tile), k = p.column_rows();
  if (blocks > 0 && blocks < kTargetBlocks)
    ip.splits = std::clamp<int64_t>(std::min(ceil_div(kTargetBlocks, blocks), k / (8 * ip.k_tile)), 1, kMaxSplits);
}

Status unsupported(const std::string& why) { return Status::error("implicit-GEMM convolution: " + why); }

std::string instance(const ConvGpuPlan& p) {
  const ImplicitConvPlan& ip = p.implicit;
  const char* traits = dtype_traits(p.dtype);
  const char* i = ip.wide_index ? "i64" : "int";
  const std::string t = std::string(traits) + "::T";
  std::string s = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(ip.tile.threads()) + ") " +
                  ip.function + "(const " + t + "* x, const " + t + "* wt, const " + t + "* bias, " + t +
                  "* out, float* part, KilnIgemmArgs<" + i + "> a) { kiln_conv_igemm<" + traits + ", " +
                  element_code(p.dtype) + ", " + std::to_string(p.kh) + ", " + std::to_string(p.kw) + ", " +
                  std::to_string(ip.tile.bm) + ", " + std::to_string(ip.tile.bn) + ", " +
                  std::to_string(ip.tile.warps_m) + ", " + std::to_string(ip.tile.warps_n) + ", " +
                  (p.bias.empty() ? "false" : "true") + ", " + (ip.splits > 1 ? "true" : "false") + ", " + i +
                  ">(x, wt, bias, out, part, a); }\n";
  return s;
}

std::string sum_instance(const ConvGpuPlan& p) {
  const char* traits = dtype_traits(p.dtype);
  const std::string t = std::string(traits) + "::T";
  return "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kReduceThreads) + ") " +
         p.implicit.reduce_function + "(const float* part, const " + t + "* bias, " + t +
         "* out, i64 splits, i64 oc, i64 n_pixels, i64 pixels, i64 on, i64 oc_s, i64 op, i64 bias_stride) { "
         "kiln_conv_igemm_sum<" + traits + ">(part, bias, out, splits, oc, n_pixels, pixels, on, oc_s, op, bias_stride); }\n";
}

template <class I>
Status launch_igemm(const ConvGpuPlan& p, const ConvPointers& ptr, CUfunction fn, const Stream* stream) {
  const ImplicitConvPlan& ip = p.implicit;
  const int64_t es = int64_t(element_size(p.dtype)), columns = p.n * p.pixels();
  IgemmArgs<I> a{I(columns),         I(p.oc),           I(p.column_rows()), I(ip.k_split),     I(p.h),
                 I(p.w),             I(p.ow),           I(p.pixels()),      I(p.x_stride[0]),  I(p.x_stride[1]),
                 I(p.x_stride[2]),   I(p.x_stride[3]),  I(p.stride[0]),     I(p.stride[1]),    I(p.pad[0]),
                 I(p.pad[1]),        I(p.dil[0]),       I(p.dil[1]),        I(p.w_row_stride), I(p.w_col_stride),
                 I(p.out_n_stride),  I(p.out_c_stride), I(p.out_pixel_stride), I(p.bias_stride)};
  CUdeviceptr x = ptr.input + CUdeviceptr(p.x_offset * es), w = ptr.weight + CUdeviceptr(p.w_offset * es);
  CUdeviceptr bias = p.bias.empty() ? 0 : ptr.bias + CUdeviceptr(p.bias_offset * es);
  CUdeviceptr out = ptr.output + CUdeviceptr(p.out_offset * es), part = ptr.workspace;
  void* args[] = {&x, &w, &bias, &out, &part, &a};
  const Dim3 grid{unsigned(ceil_div(columns, ip.tile.bn)), unsigned(ceil_div(p.oc, ip.tile.bm)), unsigned(ip.splits)};
  return launch(fn, grid, Dim3{unsigned(ip.tile.threads())}, 0, args, stream);
}

}  // namespace

Expected<ConvAlgorithm> parse_conv_algorithm(std::string_view name) {
  if (name == "im2col") return ConvAlgorithm::Im2col;
  if (name == "implicit") return ConvAlgorithm::Implicit;
  if (name == "auto") return ConvAlgorithm::Auto;
  return Status::error("convolution algorithm '" + std::string(name) + "': expected im2col, implicit or auto");
}

const std::vector<ImplicitConvTile>& implicit_conv_tiles() {
  // Largest first. A warp owns at least 16 x 16 (the half types' B fragments come two n-tiles at a time).
  static const std::vector<ImplicitConvTile> tiles = {
      {128, 128, 2, 4}, {128, 64, 4, 2}, {64, 128, 2, 4}, {64, 64, 2, 2}, {64, 32, 4, 1}, {32, 64, 2, 2}, {32, 32, 2, 2},
  };
  return tiles;
}

std::string implicit_conv_refusal(const ConvGpuPlan& p, const ConvChoice& choice) {
  if (p.dtype == DType::Float32 && !choice.tf32) return "float32 without TF32 (conv_tf32 off) stays exact on im2col + cuBLAS";
  if (p.dtype != DType::Float32 && p.dtype != DType::Float16 && p.dtype != DType::BFloat16)
    return "no tensor-core kernel for " + std::string(dtype_name(p.dtype));
  if (p.groups != 1) return "groups " + std::to_string(p.groups);
  if (p.kh * p.kw > 1024) return "a window of " + std::to_string(p.kh * p.kw) + " taps";
  // The smallest tile's grid: rows on y (65535 at most), columns on x.
  if (ceil_div(p.oc, 32) > 65535) return std::to_string(p.oc) + " output channels";
  if (ceil_div(p.n * p.pixels(), 32) > INT32_MAX) return std::to_string(p.n * p.pixels()) + " output pixels";
  return "";
}

Status plan_implicit_conv(ConvGpuPlan& p) {
  ImplicitConvPlan& ip = p.implicit;
  ip = {};
  const std::string dt(dtype_abbrev(p.dtype));
  ip.k_tile = p.dtype == DType::Float32 ? 16 : 32;  // the kernel's BK
  choose_tile(p, ip);
  if (const char* forced = std::getenv("KILN_CONV_TILE"); forced && *forced) {
    int bm = 0, bn = 0, splits = 1;
    const int got = std::sscanf(forced, "%dx%dx%d", &bm, &bn, &splits);
    auto it = std::find_if(implicit_conv_tiles().begin(), implicit_conv_tiles().end(),
                           [&](const ImplicitConvTile& t) { return t.bm == bm && t.bn == bn; });
    if (got < 2 || it == implicit_conv_tiles().end() || splits < 1 || splits > kMaxSplits)
      return unsupported(std::string("KILN_CONV_TILE=") + forced +
                         ": expected BMxBN or BMxBNxSPLITS, a tile of 128x128, 128x64, 64x128, 64x64, 64x32, 32x64, "
                         "32x32 and at most 16 splits");
    ip.tile = *it;
    ip.splits = splits;
  }
  const int64_t k = p.column_rows(), depth = ip.k_tile;
  ip.k_split = ceil_div(ceil_div(k, ip.splits), depth) * depth;
  ip.splits = ceil_div(k, ip.k_split);  // no empty part
  if (ip.splits > 1 && p.n * p.pixels() * p.oc == 0) ip.splits = 1;
  ip.wide_index = !fits_int(p, ip.splits);
  ip.function = "kiln_conv_igemm_" + dt + "_k" + std::to_string(p.kh) + "x" + std::to_string(p.kw) + "_t" + std::to_string(ip.tile.bm) + "x" +
                 std::to_string(ip.tile.bn) + (p.bias.empty() ? "" : "_bias") + (ip.splits > 1 ? "_split" : "") +
                 (ip.wide_index ? "_i64" : "");
  if (ip.splits > 1) ip.reduce_function = "kiln_conv_igemm_sum_" + dt;
  return {};
}

std::string implicit_conv_kernels_source(const std::vector<ConvGpuPlan>& plans) {
  std::string instances;
  std::set<std::string> done;
  for (const ConvGpuPlan& p : plans) {
    if (!p.implicit.function.empty() && done.insert(p.implicit.function).second) instances += instance(p);
    // The sum kernel serves every split convolution of its dtype.
    if (!p.implicit.reduce_function.empty() && done.insert(p.implicit.reduce_function).second)
      instances += sum_instance(p);
  }
  return instances.empty() ? "" : kImplicitSource + instances;
}

size_t implicit_conv_workspace_bytes(const ConvGpuPlan& p) {
  if (p.implicit.function.empty() || p.implicit.splits <= 1) return 0;
  return size_t(p.implicit.splits * p.oc * p.n * p.pixels()) * sizeof(float);
}

Status run_implicit_conv(const ConvGpuPlan& p, const ConvPointers& ptr, CUfunction fn, CUfunction reduce,
                         const Stream* stream) {
  if (p.n == 0 || p.oc == 0 || p.pixels() == 0) return {};
  Status st = p.implicit.wide_index ? launch_igemm<int64_t>(p, ptr, fn, stream) : launch_igemm<int32_t>(p, ptr, fn, stream);
  if (!st.ok()) return Status::error(p.implicit.function + ": " + st.message());
  if (p.implicit.splits <= 1) return {};
  const int64_t es = int64_t(element_size(p.dtype));
  CUdeviceptr part = ptr.workspace, out = ptr.output + CUdeviceptr(p.out_offset * es);
  CUdeviceptr bias = p.bias.empty() ? 0 : ptr.bias + CUdeviceptr(p.bias_offset * es);
  int64_t splits = p.implicit.splits, oc = p.oc, columns = p.n * p.pixels(), pixels = p.pixels();
  int64_t on = p.out_n_stride, oc_s = p.out_c_stride, op = p.out_pixel_stride, bias_stride = p.bias_stride;
  void* args[] = {&part, &bias, &out, &splits, &oc, &columns, &pixels, &on, &oc_s, &op, &bias_stride};
  const Dim3 grid{unsigned(std::clamp<int64_t>(ceil_div(oc * columns, kReduceThreads), 1, int64_t(1) << 16))};
  if (Status rs = launch(reduce, grid, Dim3{kReduceThreads}, 0, args, stream); !rs.ok())
    return Status::error(p.implicit.reduce_function + ": " + rs.message());
  return {};
}

}  // namespace kiln::codegen::cuda
