#include "compiler/codegen/cuda/cuda_attention.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

namespace kiln::codegen::cuda {

// The kernels' template codes, shared with the backward (cuda_attention_backward.cpp).
int attention_mask_type_code(DType d) {
  switch (d) {
    case DType::Bool: case DType::UInt8: return 0;
    case DType::Float16: return 1;
    case DType::BFloat16: return 2;
    case DType::Float32: return 3;
    case DType::Float64: return 4;
    case DType::Int64: return 5;
    case DType::Int32: return 6;
    default: return -1;
  }
}

// A causal offset wins over the mask kind (the tensor is not read).
int attention_mask_code(const loopir::AttentionParams& a) {
  if (a.causal_offset) return 1;
  if (a.mask_kind == loopir::AttentionMask::Boolean) return 2;
  if (a.mask_kind == loopir::AttentionMask::Additive) return 3;
  return 0;
}

namespace {

constexpr int kThreadsSimple = 128;  // a query row per thread
constexpr int kKeysSimple = 32;
constexpr double kLog2e = 1.4426950408889634;

// Shared by every instantiation; the names the runtime looks up are the extern "C" wrappers.
constexpr const char* kAttentionSource = R"KILN(
// ---- fused attention (codegen/cuda/cuda_attention.h) ----
#define KILN_INF __int_as_float(0x7f800000)
// Every field 8 bytes wide, so host and device agree on the layout.
struct KilnAttnArgs {
  u64 q, k, v, mask, o;  // element 0 of each operand
  i64 qs[3], ks[3], vs[3], os[3], ms[4];
  i64 batch, m, n, inner, causal_offset, masked_when_nonzero;
  double scale_log2, mask_scale_log2, fill_log2;
  u64 lse;  // float32 [batch, m] at strides ls, written when the kernel's LSE is true
  i64 ls[2];
  // The batch as [outer, inner] (bi inner entries; 1: one batch stride, the
  // [0] strides): each operand's inner stride.
  i64 bi, qi, ki, vi, oi, li;
};
// Element offset of batch entry bh for an operand of batch strides [outer, inner].
__device__ __forceinline__ i64 kiln_attn_batch(i64 bi, i64 bh, i64 outer, i64 inner) {
  return bi == 1 ? bh * outer : (bh / bi) * outer + (bh % bi) * inner;
}
// The mask's element as float (MT: 0 bool/uint8, 1 f16, 2 bf16, 3 f32, 4 f64, 5 i64, 6 i32).
template <int MT> __device__ __forceinline__ float kiln_attn_mask_value(u64 p, i64 i) {
  if constexpr (MT == 0) return (float)((const unsigned char*)p)[i];
  else if constexpr (MT == 1) return kiln_h2f(((const unsigned short*)p)[i]);
  else if constexpr (MT == 2) return kiln_bf2f(((const unsigned short*)p)[i]);
  else if constexpr (MT == 3) return ((const float*)p)[i];
  else if constexpr (MT == 4) return (float)((const double*)p)[i];
  else if constexpr (MT == 5) return ((const long long*)p)[i] != 0 ? 1.f : 0.f;
  else return ((const int*)p)[i] != 0 ? 1.f : 0.f;
}
// A raw score q.k in log2 units, masked (MASK: 0 none, 1 causal, 2 boolean, 3 additive).
template <int MASK, int MT>
__device__ __forceinline__ float kiln_attn_score(const KilnAttnArgs& a, float s, i64 bh, i64 m, i64 n) {
  if (n >= a.n) return -KILN_INF;
  float x = s * (float)a.scale_log2;
  if constexpr (MASK == 1) {
    if (n > m + a.causal_offset) x = (float)a.fill_log2;
  } else if constexpr (MASK == 2 || MASK == 3) {
    if (m < a.m) {
      const i64 i = (bh / a.inner) * a.ms[0] + (bh % a.inner) * a.ms[1] + m * a.ms[2] + n * a.ms[3];
      const float mv = kiln_attn_mask_value<MT>(a.mask, i);
      if constexpr (MASK == 2) {
        if ((mv != 0.f) == (a.masked_when_nonzero != 0)) x = (float)a.fill_log2;
      } else {
        x += (float)a.mask_scale_log2 * mv;
      }
    }
  }
  return x;
}
template <int ET> __device__ __forceinline__ float kiln_attn_load(u64 p, i64 i) {
  if constexpr (ET == 0) return ((const float*)p)[i];
  else if constexpr (ET == 1) return kiln_h2f(((const unsigned short*)p)[i]);
  else return kiln_bf2f(((const unsigned short*)p)[i]);
}
template <int ET> __device__ __forceinline__ void kiln_attn_store(u64 p, i64 i, float v) {
  if constexpr (ET == 0) ((float*)p)[i] = v;
  else if constexpr (ET == 1) ((unsigned short*)p)[i] = kiln_f2h(v);
  else ((unsigned short*)p)[i] = kiln_f2bf(v);
}

// mma.sync, ldmatrix and cp.async come from kCudaTensorCoreHelpers (cuda_prelude.h).

__device__ __forceinline__ float kiln_ex2(float x) {  // 2^x; -inf gives 0, NaN stays NaN
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

// Tensor cores. Fragment layouts of mma.m16n8k16 (g = lane / 4, t = lane % 4):
// C holds rows g and g + 8, columns 2t and 2t + 1, which is also where the A
// operand of the next product wants the probabilities, so P never leaves registers.
// NW warps each own WM fragments of 16 query rows: with WM = 2 every key and value
// fragment read from shared memory feeds twice the products, and the two rows'
// chains interleave.
template <bool BF, int D, int DV, int MASK, int MT, int NW, int WM, bool LSE = false>
__device__ __forceinline__ void kiln_attn_tc(const KilnAttnArgs& a) {
  constexpr int BM = NW * 16 * WM, BN = 64, LDK = D + 8, LDV = DV + 8, NT = NW * 32;  // +8: ldmatrix rows on distinct banks
  extern __shared__ __align__(16) unsigned char kiln_attn_smem[];
  unsigned short* Qs = reinterpret_cast<unsigned short*>(kiln_attn_smem);
  unsigned short* Ks = Qs + BM * LDK;
  unsigned short* Vs = Ks + 2 * BN * LDK;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, tg = lane & 3;
  const int li = lane & 7, lj = lane >> 3;
  const i64 bh = blockIdx.x;
  const i64 m0 = (i64)(gridDim.y - 1 - blockIdx.y) * BM;  // the longest causal rows of every head first
  const unsigned short* qp = (const unsigned short*)a.q + kiln_attn_batch(a.bi, bh, a.qs[0], a.qi);
  const unsigned short* kp = (const unsigned short*)a.k + kiln_attn_batch(a.bi, bh, a.ks[0], a.ki);
  const unsigned short* vp = (const unsigned short*)a.v + kiln_attn_batch(a.bi, bh, a.vs[0], a.vi);
  for (int c = tid; c < BM * (D / 8); c += NT) {
    const int r = c / (D / 8), col = (c % (D / 8)) * 8;
    const bool ok = m0 + r < a.m;
    kiln_cp_async16(Qs + r * LDK + col, qp + (ok ? m0 + r : 0) * a.qs[1] + col, ok);
  }
  kiln_cp_commit();
  i64 n_end = a.n;
  if constexpr (MASK == 1) {
    const i64 last = m0 + BM + a.causal_offset;  // keys past the block's last row's diagonal are all masked
    if (a.fill_log2 == -KILN_INF && last < n_end) n_end = last;
  }
  const int tiles = n_end > 0 ? (int)((n_end + BN - 1) / BN) : 0;
  auto load_kv = [&](int t, int buf) {
    const i64 n0 = (i64)t * BN;
    for (int c = tid; c < BN * (D / 8); c += NT) {
      const int r = c / (D / 8), col = (c % (D / 8)) * 8;
      const bool ok = n0 + r < a.n;
      kiln_cp_async16(Ks + (buf * BN + r) * LDK + col, kp + (ok ? n0 + r : 0) * a.ks[1] + col, ok);
    }
    for (int c = tid; c < BN * (DV / 8); c += NT) {
      const int r = c / (DV / 8), col = (c % (DV / 8)) * 8;
      const bool ok = n0 + r < a.n;
      kiln_cp_async16(Vs + (buf * BN + r) * LDV + col, vp + (ok ? n0 + r : 0) * a.vs[1] + col, ok);
    }
  };
  if (tiles > 0) load_kv(0, 0);
  kiln_cp_commit();
  kiln_cp_wait<1>();
  __syncthreads();
  unsigned qf[WM][D / 16][4];
#pragma unroll
  for (int f = 0; f < WM; ++f)
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
      kiln_ldsm4(qf[f][kk], Qs + ((f * NW + warp) * 16 + li + (lj & 1) * 8) * LDK + kk * 16 + (lj >> 1) * 8);
  float o[WM][DV / 8][4];
  float row_m[WM][2], row_l[WM][2];
  i64 mr[WM][2];
#pragma unroll
  for (int f = 0; f < WM; ++f) {
#pragma unroll
    for (int i = 0; i < DV / 8; ++i) o[f][i][0] = o[f][i][1] = o[f][i][2] = o[f][i][3] = 0.f;
    row_m[f][0] = row_m[f][1] = -KILN_INF;
    row_l[f][0] = row_l[f][1] = 0.f;
    mr[f][0] = m0 + (f * NW + warp) * 16 + g;
    mr[f][1] = mr[f][0] + 8;
  }
  const float scale = (float)a.scale_log2;
  for (int t = 0; t < tiles; ++t) {
    const int buf = t & 1;
    if (t + 1 < tiles) load_kv(t + 1, buf ^ 1);
    kiln_cp_commit();
    kiln_cp_wait<1>();
    __syncthreads();
    float s[WM][BN / 8][4];
#pragma unroll
    for (int f = 0; f < WM; ++f)
#pragma unroll
      for (int i = 0; i < BN / 8; ++i) s[f][i][0] = s[f][i][1] = s[f][i][2] = s[f][i][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
      for (int np = 0; np < BN / 16; ++np) {
        unsigned b[4];
        kiln_ldsm4(b, Ks + (buf * BN + np * 16 + li + (lj >> 1) * 8) * LDK + kk * 16 + (lj & 1) * 8);
#pragma unroll
        for (int f = 0; f < WM; ++f) {
          kiln_mma16816<BF>(s[f][2 * np], qf[f][kk], b[0], b[1]);
          kiln_mma16816<BF>(s[f][2 * np + 1], qf[f][kk], b[2], b[3]);
        }
      }
    const i64 n0 = (i64)t * BN;
    // Tiles inside the keys and below every row's diagonal need no per-element mask.
    const bool edge = MASK >= 2 || n0 + BN > a.n || (MASK == 1 && n0 + BN - 1 > m0 + a.causal_offset);
#pragma unroll
    for (int f = 0; f < WM; ++f) {
      float mx[2] = {-KILN_INF, -KILN_INF};
      if (edge) {
#pragma unroll
        for (int nt = 0; nt < BN / 8; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const float x = kiln_attn_score<MASK, MT>(a, s[f][nt][e], bh, mr[f][e >> 1], n0 + nt * 8 + tg * 2 + (e & 1));
            s[f][nt][e] = x;
            mx[e >> 1] = fmaxf(mx[e >> 1], x);
          }
      } else {
#pragma unroll
        for (int nt = 0; nt < BN / 8; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const float x = s[f][nt][e] * scale;
            s[f][nt][e] = x;
            mx[e >> 1] = fmaxf(mx[e >> 1], x);
          }
      }
      float ref[2], alpha[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
        const float mn = fmaxf(row_m[f][r], mx[r]);
        ref[r] = mn == -KILN_INF ? 0.f : mn;  // a row masked so far: no -inf - -inf
        alpha[r] = kiln_ex2(row_m[f][r] - ref[r]);
        row_m[f][r] = mn;
      }
      float rs[2] = {0.f, 0.f};
#pragma unroll
      for (int nt = 0; nt < BN / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float p = kiln_ex2(s[f][nt][e] - ref[e >> 1]);
          s[f][nt][e] = p;
          rs[e >> 1] += p;
        }
      row_l[f][0] = row_l[f][0] * alpha[0] + rs[0];
      row_l[f][1] = row_l[f][1] * alpha[1] + rs[1];
#pragma unroll
      for (int i = 0; i < DV / 8; ++i) {
        o[f][i][0] *= alpha[0], o[f][i][1] *= alpha[0], o[f][i][2] *= alpha[1], o[f][i][3] *= alpha[1];
      }
    }
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      unsigned pa[WM][4];
#pragma unroll
      for (int f = 0; f < WM; ++f) {
        pa[f][0] = kiln_pack2<BF>(s[f][2 * kk][0], s[f][2 * kk][1]);
        pa[f][1] = kiln_pack2<BF>(s[f][2 * kk][2], s[f][2 * kk][3]);
        pa[f][2] = kiln_pack2<BF>(s[f][2 * kk + 1][0], s[f][2 * kk + 1][1]);
        pa[f][3] = kiln_pack2<BF>(s[f][2 * kk + 1][2], s[f][2 * kk + 1][3]);
      }
#pragma unroll
      for (int dp = 0; dp < DV / 16; ++dp) {
        unsigned b[4];
        kiln_ldsm4_t(b, Vs + (buf * BN + kk * 16 + li + (lj & 1) * 8) * LDV + dp * 16 + (lj >> 1) * 8);
#pragma unroll
        for (int f = 0; f < WM; ++f) {
          kiln_mma16816<BF>(o[f][2 * dp], pa[f], b[0], b[1]);
          kiln_mma16816<BF>(o[f][2 * dp + 1], pa[f], b[2], b[3]);
        }
      }
    }
    __syncthreads();
  }
  const u64 op = a.o + (u64)kiln_attn_batch(a.bi, bh, a.os[0], a.oi) * 2;
  const i64 lb = LSE ? kiln_attn_batch(a.bi, bh, a.ls[0], a.li) : 0;
#pragma unroll
  for (int f = 0; f < WM; ++f) {
    float inv[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float l = row_l[f][r];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      inv[r] = 1.f / l;
      if constexpr (LSE) {  // row_m is in log2 units and the same in the row's four lanes
        if (tg == 0 && mr[f][r] < a.m)
          ((float*)a.lse)[lb + mr[f][r] * a.ls[1]] = (row_m[f][r] + log2f(l)) * 0.69314718055994531f;
      }
    }
#pragma unroll
    for (int i = 0; i < DV / 8; ++i)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const i64 m = mr[f][r];
        if (m >= a.m) continue;
        const i64 at = m * a.os[1] + (i * 8 + tg * 2) * a.os[2];
        const float lo = o[f][i][2 * r] * inv[r], hi = o[f][i][2 * r + 1] * inv[r];
        if (a.os[2] == 1 && ((op >> 1) + at) % 2 == 0) {  // the pair is one aligned 32-bit word
          *reinterpret_cast<unsigned*>(op + (u64)at * 2) = kiln_pack2<BF>(lo, hi);
        } else {
          kiln_attn_store<BF ? 2 : 1>(op, at, lo);
          kiln_attn_store<BF ? 2 : 1>(op, at + a.os[2], hi);
        }
      }
  }
}

// CUDA cores, float32 arithmetic, any strides: a query row per thread, keys
// through shared memory a tile at a time.
template <int ET, int D, int DV, int MASK, int MT, bool LSE = false>
__device__ __forceinline__ void kiln_attn_simple(const KilnAttnArgs& a) {
  constexpr int BM = 128, BN = 32;
  extern __shared__ __align__(16) unsigned char kiln_attn_smem[];
  float* Ks = reinterpret_cast<float*>(kiln_attn_smem);
  float* Vs = Ks + BN * D;
  const i64 bh = blockIdx.x;
  const i64 m0 = (i64)(gridDim.y - 1 - blockIdx.y) * BM;
  const i64 m = m0 + threadIdx.x;
  const size_t es = ET == 0 ? 4 : 2;
  const u64 qp = a.q + (u64)kiln_attn_batch(a.bi, bh, a.qs[0], a.qi) * es;
  const u64 kp = a.k + (u64)kiln_attn_batch(a.bi, bh, a.ks[0], a.ki) * es;
  const u64 vp = a.v + (u64)kiln_attn_batch(a.bi, bh, a.vs[0], a.vi) * es;
  float q[D], o[DV];
#pragma unroll
  for (int d = 0; d < D; ++d) q[d] = m < a.m ? kiln_attn_load<ET>(qp, m * a.qs[1] + d * a.qs[2]) : 0.f;
#pragma unroll
  for (int d = 0; d < DV; ++d) o[d] = 0.f;
  float row_m = -KILN_INF, row_l = 0.f;
  i64 n_end = a.n;
  if constexpr (MASK == 1) {
    const i64 last = m0 + BM + a.causal_offset;
    if (a.fill_log2 == -KILN_INF && last < n_end) n_end = last;
  }
  for (i64 n0 = 0; n0 < n_end; n0 += BN) {
    __syncthreads();
    for (int c = threadIdx.x; c < BN * D; c += BM) {
      const i64 n = n0 + c / D;
      Ks[c] = n < a.n ? kiln_attn_load<ET>(kp, n * a.ks[1] + (c % D) * a.ks[2]) : 0.f;
    }
    for (int c = threadIdx.x; c < BN * DV; c += BM) {
      const i64 n = n0 + c / DV;
      Vs[c] = n < a.n ? kiln_attn_load<ET>(vp, n * a.vs[1] + (c % DV) * a.vs[2]) : 0.f;
    }
    __syncthreads();
    for (int r = 0; r < BN && n0 + r < a.n; ++r) {
      float s = 0.f;
#pragma unroll
      for (int d = 0; d < D; ++d) s += q[d] * Ks[r * D + d];
      const float x = kiln_attn_score<MASK, MT>(a, s, bh, m, n0 + r);
      if (x == -KILN_INF) continue;
      if (x > row_m) {
        const float alpha = exp2f(row_m - x);
        row_l *= alpha;
#pragma unroll
        for (int d = 0; d < DV; ++d) o[d] *= alpha;
        row_m = x;
      }
      const float p = exp2f(x - row_m);  // NaN scores stay NaN
      row_l += p;
#pragma unroll
      for (int d = 0; d < DV; ++d) o[d] += p * Vs[r * DV + d];
    }
  }
  if (m >= a.m) return;
  if constexpr (LSE)
    ((float*)a.lse)[kiln_attn_batch(a.bi, bh, a.ls[0], a.li) + m * a.ls[1]] = (row_m + log2f(row_l)) * 0.69314718055994531f;
  const u64 op = a.o + (u64)kiln_attn_batch(a.bi, bh, a.os[0], a.oi) * es;
#pragma unroll
  for (int d = 0; d < DV; ++d) kiln_attn_store<ET>(op, m * a.os[1] + d * a.os[2], o[d] / row_l);
}
)KILN";

Status unsupported(const std::string& why) { return Status::error("attention on the GPU: " + why); }


std::string instance(const AttentionGpuPlan& p) {
  const int mask = attention_mask_code(p.params), mt = mask >= 2 ? attention_mask_type_code(p.mask_dtype) : 0;
  const std::string targs = std::to_string(p.d) + ", " + std::to_string(p.dv) + ", " + std::to_string(mask) + ", " +
                            std::to_string(mt);
  std::string call;
  if (p.tensor_cores)
    call = std::string("kiln_attn_tc<") + (p.dtype == DType::BFloat16 ? "true" : "false") + ", " + targs + ", " +
           std::to_string(p.warps) + ", " + std::to_string(p.row_fragments) + (p.write_lse ? ", true" : "") + ">(a);";
  else call = "kiln_attn_simple<" + std::to_string(p.dtype == DType::Float32 ? 0 : p.dtype == DType::Float16 ? 1 : 2) + ", " + targs +
              (p.write_lse ? ", true" : "") + ">(a);";
  const int threads = p.threads();
  // Four blocks of 128 threads per SM, as many as their shared memory allows; two
  // fragments per warp need up to 255 registers, so two blocks.
  const int min_blocks = p.tensor_cores ? std::max(1, (p.row_fragments == 2 ? 256 : 512) / threads) : 1;
  return "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(threads) + ", " + std::to_string(min_blocks) + ") " + p.function +
         "(KilnAttnArgs a) { " + call + " }\n";
}

}  // namespace

unsigned AttentionGpuPlan::shared_bytes() const {
  if (tensor_cores) return unsigned((block_rows() * (d + 8) + 2 * 64 * (d + 8) + 2 * 64 * (dv + 8)) * 2);
  return unsigned(kKeysSimple * (d + dv) * 4);
}

int AttentionGpuPlan::threads() const { return tensor_cores ? warps * 32 : kThreadsSimple; }

int64_t AttentionGpuPlan::block_rows() const { return tensor_cores ? int64_t(warps) * 16 * row_fragments : kThreadsSimple; }

Status choose_attention_tiles(AttentionGpuPlan& plan) {
  // Two row fragments per warp double the registers of the scores and the output:
  // past head dimension 64 they would spill.
  plan.warps = 4;
  plan.row_fragments = plan.d <= 64 && plan.dv <= 64 ? 2 : 1;
  if (const char* forced = std::getenv("KILN_ATTN_TILES"); forced && *forced) {
    int warps = 0, fragments = 0;
    if (std::sscanf(forced, "%dx%d", &warps, &fragments) != 2 || (warps != 2 && warps != 4 && warps != 8) ||
        (fragments != 1 && fragments != 2))
      return unsupported(std::string("KILN_ATTN_TILES=") + forced + ": expected WARPSxFRAGMENTS, warps 2, 4 or 8, fragments 1 or 2");
    plan.warps = warps, plan.row_fragments = fragments;
  }
  return {};
}

Expected<AttentionGpuPlan> plan_attention_on_gpu(const loopir::Program& p, size_t kernel, bool write_lse) {
  const loopir::Kernel& k = p.kernels.at(kernel);
  if (k.kind != loopir::KernelKind::Extern || !k.call || k.call->kind != loopir::ExternKind::Attention)
    return unsupported(k.output + " is not an attention extern kernel");
  const loopir::ExternCall& call = *k.call;
  const loopir::AttentionParams& a = call.attention;
  AttentionGpuPlan plan;
  plan.kernel = kernel;
  plan.params = a;
  plan.output = k.output;
  const loopir::Buffer& out = p.buffer(k.output);
  plan.dtype = out.dtype;
  const loopir::BufferView &q = call.tensors.at(size_t(a.q)), &kv = call.tensors.at(size_t(a.k)),
                           &v = call.tensors.at(size_t(a.v));
  plan.q = q.buffer, plan.k = kv.buffer, plan.v = v.buffer;
  plan.batch = q.sizes[0], plan.m = q.sizes[1], plan.d = q.sizes[2], plan.n = kv.sizes[1], plan.dv = v.sizes[2];
  // [batch, m, dv] with any strides, or any contiguous buffer of that many elements
  // (the scheduler lets the kernel write a 4-D output's buffer).
  const bool three_d = out.sizes.size() == 3 && out.sizes[0] == plan.batch && out.sizes[1] == plan.m && out.sizes[2] == plan.dv;
  const std::vector<int64_t> row_major{plan.m * plan.dv, plan.dv, 1};
  if (!three_d && (out.strides != std::vector<int64_t>(contiguous_strides(Shape(out.sizes.begin(), out.sizes.end()))) ||
                   loopir::storage_span(out) - out.offset != plan.batch * plan.m * plan.dv))
    return unsupported("the output is not [batch, m, dv], nor contiguous with as many elements");
  for (int i = 0; i < 3; ++i) {
    plan.q_stride[i] = q.strides[size_t(i)], plan.k_stride[i] = kv.strides[size_t(i)];
    plan.v_stride[i] = v.strides[size_t(i)], plan.o_stride[i] = three_d ? out.strides[size_t(i)] : row_major[size_t(i)];
  }
  plan.q_offset = q.offset, plan.k_offset = kv.offset, plan.v_offset = v.offset, plan.o_offset = out.offset;
  if (a.mask >= 0 && !a.causal_offset) {
    const loopir::BufferView& mv = call.tensors.at(size_t(a.mask));
    plan.mask = mv.buffer;
    plan.mask_dtype = p.buffer(mv.buffer).dtype;
    if (attention_mask_type_code(plan.mask_dtype) < 0)
      return unsupported("a " + std::string(dtype_name(plan.mask_dtype)) + " mask");
    for (int i = 0; i < 4; ++i) plan.mask_stride[i] = mv.strides[size_t(i)];
    plan.mask_offset = mv.offset;
    plan.mask_inner = std::max<int64_t>(mv.sizes[1], 1);
  }
  plan.lse_stride[0] = plan.m, plan.lse_stride[1] = 1;
  return finish_attention_plan(plan, write_lse);
}

Expected<AttentionGpuPlan> finish_attention_plan(AttentionGpuPlan plan, bool write_lse) {
  const loopir::AttentionParams& a = plan.params;
  if (plan.dtype != DType::Float16 && plan.dtype != DType::BFloat16 && plan.dtype != DType::Float32)
    return unsupported("no kernel for " + std::string(dtype_name(plan.dtype)));
  if (plan.batch > INT32_MAX) return unsupported("a batch of " + std::to_string(plan.batch) + " (over 2^31 - 1 blocks)");
  if (plan.d < 1 || plan.dv < 1 || plan.d > 256 || plan.dv > 256)
    return unsupported("head dimensions " + std::to_string(plan.d) + " and " + std::to_string(plan.dv) + " (at most 256)");
  if (plan.batch_inner < 1 || plan.batch % plan.batch_inner != 0)
    return unsupported("a batch of " + std::to_string(plan.batch) + " split by " + std::to_string(plan.batch_inner));
  // cp.async moves 16 aligned bytes: rows of whole 8-element chunks, on 8-element strides.
  auto aligned = [&](const int64_t* s, int64_t inner, int64_t offset) {
    return s[2] == 1 && s[1] % 8 == 0 && s[0] % 8 == 0 && (plan.batch_inner == 1 || inner % 8 == 0) && offset % 8 == 0;
  };
  plan.tensor_cores = plan.dtype != DType::Float32 && plan.d % 16 == 0 && plan.dv % 16 == 0 && plan.d <= 128 &&
                      plan.dv <= 128 && aligned(plan.q_stride, plan.q_inner, plan.q_offset) &&
                      aligned(plan.k_stride, plan.k_inner, plan.k_offset) && aligned(plan.v_stride, plan.v_inner, plan.v_offset);
  if (plan.tensor_cores)
    if (Status st = choose_attention_tiles(plan); !st.ok()) return st;
  if ((plan.m + plan.block_rows() - 1) / plan.block_rows() > 65535)
    return unsupported(std::to_string(plan.m) + " query rows (over 65535 blocks of " + std::to_string(plan.block_rows()) + ")");
  const int mask = attention_mask_code(a);
  plan.function = std::string("kiln_attn_") + (plan.tensor_cores ? "tc_" : "simple_") + std::string(dtype_abbrev(plan.dtype)) +
                  "_d" + std::to_string(plan.d) + "_v" + std::to_string(plan.dv) + "_m" + std::to_string(mask) +
                  (mask >= 2 ? "_t" + std::to_string(attention_mask_type_code(plan.mask_dtype)) : "") +
                  (plan.tensor_cores ? "_w" + std::to_string(plan.warps) + "x" + std::to_string(plan.row_fragments) : "") +
                  (write_lse ? "_lse" : "");
  plan.write_lse = write_lse;
  return plan;
}

std::string attention_shared_source() { return kAttentionSource; }

std::string attention_kernels_source(const std::vector<AttentionGpuPlan>& plans) {
  std::string instances;
  std::set<std::string> done;
  for (const AttentionGpuPlan& p : plans)
    if (done.insert(p.function).second) instances += instance(p);
  return instances.empty() ? "" : kAttentionSource + instances;
}

Status run_attention_on_gpu(const AttentionGpuPlan& p, const AttentionPointers& ptr, CUfunction fn,
                            const Stream* stream) {
  if (p.batch == 0 || p.m == 0 || p.dv == 0) return {};
  // The kernel's KilnAttnArgs, field for field.
  struct Args {
    uint64_t q, k, v, mask, o;
    int64_t qs[3], ks[3], vs[3], os[3], ms[4];
    int64_t batch, m, n, inner, causal_offset, masked_when_nonzero;
    double scale_log2, mask_scale_log2, fill_log2;
    uint64_t lse;
    int64_t ls[2];
    int64_t bi, qi, ki, vi, oi, li;
  } args{};
  if (p.write_lse && !ptr.lse) return Status::error(p.function + ": the plan writes the logsumexp but no lse buffer was given");
  const uint64_t es = element_size(p.dtype);
  args.q = ptr.q + uint64_t(p.q_offset) * es;
  args.k = ptr.k + uint64_t(p.k_offset) * es;
  args.v = ptr.v + uint64_t(p.v_offset) * es;
  args.o = ptr.output + uint64_t(p.o_offset) * es;
  args.mask = p.mask.empty() ? 0 : ptr.mask + uint64_t(p.mask_offset) * element_size(p.mask_dtype);
  for (int i = 0; i < 3; ++i) {
    args.qs[i] = p.q_stride[i], args.ks[i] = p.k_stride[i], args.vs[i] = p.v_stride[i], args.os[i] = p.o_stride[i];
  }
  for (int i = 0; i < 4; ++i) args.ms[i] = p.mask_stride[i];
  args.batch = p.batch, args.m = p.m, args.n = p.n, args.inner = p.mask_inner;
  args.causal_offset = p.params.causal_offset.value_or(0);
  args.masked_when_nonzero = p.params.masked_when_nonzero;
  args.scale_log2 = p.params.scale * kLog2e;
  args.mask_scale_log2 = p.params.mask_scale * kLog2e;
  args.fill_log2 = std::isinf(p.params.fill) ? p.params.fill : p.params.fill * kLog2e;
  if (p.write_lse) args.lse = ptr.lse + uint64_t(p.lse_offset) * 4, args.ls[0] = p.lse_stride[0], args.ls[1] = p.lse_stride[1];
  args.bi = std::max<int64_t>(p.batch_inner, 1);
  args.qi = p.q_inner, args.ki = p.k_inner, args.vi = p.v_inner, args.oi = p.o_inner, args.li = p.lse_inner;
  void* params[] = {&args};
  const int64_t rows = p.block_rows();
  Dim3 grid{unsigned(p.batch), unsigned((p.m + rows - 1) / rows)};
  Dim3 block{unsigned(p.threads())};
  if (Status st = launch(fn, grid, block, p.shared_bytes(), params, stream); !st.ok())
    return Status::error(p.function + ": " + st.message());
  return {};
}

}  // namespace kiln::codegen::cuda
