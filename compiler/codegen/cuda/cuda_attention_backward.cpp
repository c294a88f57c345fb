#include "compiler/codegen/cuda/cuda_attention_backward.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace kiln::codegen::cuda {
namespace {

constexpr double kLog2e = 1.4426950408889634;

// After kCudaPrelude and the forward's shared source (kiln_attn_mask_value, kiln_attn_load, kiln_attn_store).
constexpr const char* kAttentionBackwardSource = R"KILN(
// ---- fused attention backward (codegen/cuda/cuda_attention_backward.h) ----
#define KILN_ATTNB_THREADS 256
#define KILN_ATTNB_BM 32
#define KILN_ATTNB_BN 32
// Every field 8 bytes wide, so host and device agree on the layout.
struct KilnAttnBwdArgs {
  u64 q, k, v, o, dout, lse, mask, dq, dk, dv, delta;  // element 0 of each operand; delta: float32 [batch * m]
  i64 qs[3], ks[3], vs[3], os[3], dos[3], dqs[3], dks[3], dvs[3], ls[2], ms[4];
  i64 batch, m, n, inner, causal_offset, masked_when_nonzero;
  double scale, scale_log2, mask_scale_log2, fill_log2;
  // The batch as [outer, inner] (bi inner entries; 1: the [0] strides alone), each operand's inner stride.
  i64 bi, qi, ki, vi, oi, doi, dqi, dki, dvi, li;
};
// The score q.k of (m, n) in log2 units, masked as the forward masks it
// (MASK: 0 none, 1 causal, 2 boolean, 3 additive); `fixed` when the mask
// replaced it by its fill (no gradient to q or k). m < a.m and n < a.n.
struct KilnAttnbScore {
  float x;
  bool fixed;
};
template <int MASK, int MT>
__device__ __forceinline__ KilnAttnbScore kiln_attnb_score(const KilnAttnBwdArgs& a, float s, i64 bh, i64 m, i64 n) {
  KilnAttnbScore r{s * (float)a.scale_log2, false};
  if constexpr (MASK == 1) {
    if (n > m + a.causal_offset) r.x = (float)a.fill_log2, r.fixed = true;
  } else if constexpr (MASK == 2 || MASK == 3) {
    const i64 i = (bh / a.inner) * a.ms[0] + (bh % a.inner) * a.ms[1] + m * a.ms[2] + n * a.ms[3];
    const float mv = kiln_attn_mask_value<MT>(a.mask, i);
    if constexpr (MASK == 2) {
      if ((mv != 0.f) == (a.masked_when_nonzero != 0)) r.x = (float)a.fill_log2, r.fixed = true;
    } else {
      r.x += (float)a.mask_scale_log2 * mv;
    }
  }
  return r;
}

// 1. D_i = rowsum(dout * out) in float32: a warp per query row, lanes over the
// columns, the same shuffle tree on every run.
template <int ET, int DV>
__device__ __forceinline__ void kiln_attnb_delta(const KilnAttnBwdArgs& a) {
  const i64 row = (i64)blockIdx.x * (KILN_ATTNB_THREADS / 32) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= a.batch * a.m) return;
  const i64 bh = row / a.m, m = row % a.m;
  float s = 0.f;
  for (int d = lane; d < DV; d += 32)
    s += kiln_attn_load<ET>(a.dout, kiln_attn_batch(a.bi, bh, a.dos[0], a.doi) + m * a.dos[1] + d * a.dos[2]) *
         kiln_attn_load<ET>(a.o, kiln_attn_batch(a.bi, bh, a.os[0], a.oi) + m * a.os[1] + d * a.os[2]);
#pragma unroll
  for (int w = 16; w > 0; w >>= 1) s += __shfl_xor_sync(0xffffffffu, s, w);
  if (lane == 0) ((float*)a.delta)[row] = s;
}

// Shared memory of both tile kernels, float32: K [BN][D+1], V [BN][DV+1],
// Q [BM][D+1], dO [BM][DV+1], P and dS [BM][BN+1], lse (log2 units) and D_i [BM].
// The odd row lengths put a warp's 32 rows on 32 banks.
template <int D, int DV>
struct KilnAttnbSmem {
  static constexpr int BM = KILN_ATTNB_BM, BN = KILN_ATTNB_BN, LD = D + 1, LDV = DV + 1, LP = BN + 1;
  float *K, *V, *Q, *dO, *P, *dS, *L, *Di;
  __device__ explicit KilnAttnbSmem(unsigned char* base) {
    K = reinterpret_cast<float*>(base);
    V = K + BN * LD;
    Q = V + BN * LDV;
    dO = Q + BM * LD;
    P = dO + BM * LDV;
    dS = P + BM * LP;
    L = dS + BM * LP;
    Di = L + BM;
  }
};

template <int ET, int D, int DV>
__device__ __forceinline__ void kiln_attnb_load_keys(const KilnAttnBwdArgs& a, const KilnAttnbSmem<D, DV>& sm, i64 bh, i64 n0) {
  constexpr int BN = KILN_ATTNB_BN, NT = KILN_ATTNB_THREADS;
  const i64 kb = kiln_attn_batch(a.bi, bh, a.ks[0], a.ki), vb = kiln_attn_batch(a.bi, bh, a.vs[0], a.vi);
  for (int c = threadIdx.x; c < BN * D; c += NT) {
    const int r = c / D, col = c % D;
    const i64 n = n0 + r;
    sm.K[r * sm.LD + col] = n < a.n ? kiln_attn_load<ET>(a.k, kb + n * a.ks[1] + col * a.ks[2]) : 0.f;
  }
  for (int c = threadIdx.x; c < BN * DV; c += NT) {
    const int r = c / DV, col = c % DV;
    const i64 n = n0 + r;
    sm.V[r * sm.LDV + col] = n < a.n ? kiln_attn_load<ET>(a.v, vb + n * a.vs[1] + col * a.vs[2]) : 0.f;
  }
}

template <int ET, int D, int DV>
__device__ __forceinline__ void kiln_attnb_load_rows(const KilnAttnBwdArgs& a, const KilnAttnbSmem<D, DV>& sm, i64 bh, i64 m0) {
  constexpr int BM = KILN_ATTNB_BM, NT = KILN_ATTNB_THREADS;
  const i64 qb = kiln_attn_batch(a.bi, bh, a.qs[0], a.qi), dob = kiln_attn_batch(a.bi, bh, a.dos[0], a.doi);
  const i64 lb = kiln_attn_batch(a.bi, bh, a.ls[0], a.li);
  for (int c = threadIdx.x; c < BM * D; c += NT) {
    const int r = c / D, col = c % D;
    const i64 m = m0 + r;
    sm.Q[r * sm.LD + col] = m < a.m ? kiln_attn_load<ET>(a.q, qb + m * a.qs[1] + col * a.qs[2]) : 0.f;
  }
  for (int c = threadIdx.x; c < BM * DV; c += NT) {
    const int r = c / DV, col = c % DV;
    const i64 m = m0 + r;
    sm.dO[r * sm.LDV + col] = m < a.m ? kiln_attn_load<ET>(a.dout, dob + m * a.dos[1] + col * a.dos[2]) : 0.f;
  }
  for (int r = threadIdx.x; r < BM; r += NT) {
    const i64 m = m0 + r;
    sm.L[r] = m < a.m ? ((const float*)a.lse)[lb + m * a.ls[1]] * 1.4426950408889634f : 0.f;
    sm.Di[r] = m < a.m ? ((const float*)a.delta)[bh * a.m + m] : 0.f;
  }
}

// P and dS of the tile (query rows m0.., keys n0..), zero outside the operands.
template <int D, int DV, int MASK, int MT, bool WANT_P>
__device__ __forceinline__ void kiln_attnb_tile(const KilnAttnBwdArgs& a, const KilnAttnbSmem<D, DV>& sm, i64 bh, i64 m0, i64 n0) {
  constexpr int BM = KILN_ATTNB_BM, BN = KILN_ATTNB_BN, NT = KILN_ATTNB_THREADS;
  for (int e = threadIdx.x; e < BM * BN; e += NT) {
    const int r = e / BN, c = e % BN;
    const i64 m = m0 + r, n = n0 + c;
    float p = 0.f, ds = 0.f;
    if (m < a.m && n < a.n) {
      float s = 0.f;
#pragma unroll 8
      for (int d = 0; d < D; ++d) s += sm.Q[r * sm.LD + d] * sm.K[c * sm.LD + d];
      const KilnAttnbScore x = kiln_attnb_score<MASK, MT>(a, s, bh, m, n);
      p = exp2f(x.x - sm.L[r]);  // a masked -inf score gives 0
      float dp = 0.f;
#pragma unroll 8
      for (int d = 0; d < DV; ++d) dp += sm.dO[r * sm.LDV + d] * sm.V[c * sm.LDV + d];
      ds = x.fixed ? 0.f : p * (dp - sm.Di[r]);
    }
    if constexpr (WANT_P) sm.P[r * sm.LP + c] = p;
    sm.dS[r * sm.LP + c] = ds;
  }
}

// 2. A block per BN keys of batch entry blockIdx.x: dK and dV of its keys.
template <int ET, int D, int DV, int MASK, int MT>
__device__ __forceinline__ void kiln_attnb_dkdv(const KilnAttnBwdArgs& a) {
  constexpr int BM = KILN_ATTNB_BM, BN = KILN_ATTNB_BN, NT = KILN_ATTNB_THREADS;
  constexpr int EK = (BN * D + NT - 1) / NT, EV = (BN * DV + NT - 1) / NT;
  extern __shared__ __align__(16) unsigned char kiln_attnb_smem[];
  const KilnAttnbSmem<D, DV> sm(kiln_attnb_smem);
  const i64 bh = blockIdx.x, n0 = (i64)blockIdx.y * BN;
  const int tid = threadIdx.x;
  kiln_attnb_load_keys<ET, D, DV>(a, sm, bh, n0);
  float dk[EK], dv[EV];
#pragma unroll
  for (int i = 0; i < EK; ++i) dk[i] = 0.f;
#pragma unroll
  for (int i = 0; i < EV; ++i) dv[i] = 0.f;
  i64 m_begin = 0;
  if constexpr (MASK == 1) {
    // Rows m with m + offset < n0 see none of these keys (every score the -inf fill).
    if (a.fill_log2 == -KILN_INF && n0 - a.causal_offset > 0) m_begin = (n0 - a.causal_offset) / BM * BM;
  }
  for (i64 m0 = m_begin; m0 < a.m; m0 += BM) {
    __syncthreads();  // the last tile's readers are done
    kiln_attnb_load_rows<ET, D, DV>(a, sm, bh, m0);
    __syncthreads();
    kiln_attnb_tile<D, DV, MASK, MT, true>(a, sm, bh, m0, n0);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < EK; ++i) {
      const int e = tid + i * NT;
      if (e < BN * D) {
        const int c = e / D, d = e % D;
        float acc = 0.f;
#pragma unroll 8
        for (int r = 0; r < BM; ++r) acc += sm.dS[r * sm.LP + c] * sm.Q[r * sm.LD + d];
        dk[i] += acc;
      }
    }
#pragma unroll
    for (int i = 0; i < EV; ++i) {
      const int e = tid + i * NT;
      if (e < BN * DV) {
        const int c = e / DV, d = e % DV;
        float acc = 0.f;
#pragma unroll 8
        for (int r = 0; r < BM; ++r) acc += sm.P[r * sm.LP + c] * sm.dO[r * sm.LDV + d];
        dv[i] += acc;
      }
    }
  }
  const float scale = (float)a.scale;
#pragma unroll
  for (int i = 0; i < EK; ++i) {
    const int e = tid + i * NT;
    const i64 n = n0 + e / D;
    if (a.dk && e < BN * D && n < a.n) kiln_attn_store<ET>(a.dk, kiln_attn_batch(a.bi, bh, a.dks[0], a.dki) + n * a.dks[1] + (e % D) * a.dks[2], dk[i] * scale);
  }
#pragma unroll
  for (int i = 0; i < EV; ++i) {
    const int e = tid + i * NT;
    const i64 n = n0 + e / DV;
    if (a.dv && e < BN * DV && n < a.n) kiln_attn_store<ET>(a.dv, kiln_attn_batch(a.bi, bh, a.dvs[0], a.dvi) + n * a.dvs[1] + (e % DV) * a.dvs[2], dv[i]);
  }
}

// 3. A block per BM query rows of batch entry blockIdx.x: their dQ.
template <int ET, int D, int DV, int MASK, int MT>
__device__ __forceinline__ void kiln_attnb_dq(const KilnAttnBwdArgs& a) {
  constexpr int BM = KILN_ATTNB_BM, BN = KILN_ATTNB_BN, NT = KILN_ATTNB_THREADS;
  constexpr int EQ = (BM * D + NT - 1) / NT;
  extern __shared__ __align__(16) unsigned char kiln_attnb_smem[];
  const KilnAttnbSmem<D, DV> sm(kiln_attnb_smem);
  const i64 bh = blockIdx.x;
  const i64 m0 = (i64)(gridDim.y - 1 - blockIdx.y) * BM;  // the longest causal rows first
  const int tid = threadIdx.x;
  kiln_attnb_load_rows<ET, D, DV>(a, sm, bh, m0);
  float dq[EQ];
#pragma unroll
  for (int i = 0; i < EQ; ++i) dq[i] = 0.f;
  i64 n_end = a.n;
  if constexpr (MASK == 1) {
    const i64 last = m0 + BM + a.causal_offset;  // keys past the block's last row's diagonal are all masked
    if (a.fill_log2 == -KILN_INF && last < n_end) n_end = last;
  }
  for (i64 n0 = 0; n0 < n_end; n0 += BN) {
    __syncthreads();
    kiln_attnb_load_keys<ET, D, DV>(a, sm, bh, n0);
    __syncthreads();
    kiln_attnb_tile<D, DV, MASK, MT, false>(a, sm, bh, m0, n0);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < EQ; ++i) {
      const int e = tid + i * NT;
      if (e < BM * D) {
        const int r = e / D, d = e % D;
        float acc = 0.f;
#pragma unroll 8
        for (int c = 0; c < BN; ++c) acc += sm.dS[r * sm.LP + c] * sm.K[c * sm.LD + d];
        dq[i] += acc;
      }
    }
  }
  const float scale = (float)a.scale;
#pragma unroll
  for (int i = 0; i < EQ; ++i) {
    const int e = tid + i * NT;
    const i64 m = m0 + e / D;
    if (e < BM * D && m < a.m) kiln_attn_store<ET>(a.dq, kiln_attn_batch(a.bi, bh, a.dqs[0], a.dqi) + m * a.dqs[1] + (e % D) * a.dqs[2], dq[i] * scale);
  }
}
)KILN";

Status unsupported(const std::string& why) { return Status::error("attention backward on the GPU: " + why); }


int element_code(DType d) { return d == DType::Float32 ? 0 : d == DType::Float16 ? 1 : 2; }

const std::string& launch_head() {
  static const std::string head =
      "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(AttentionBackwardGpuPlan::kThreads) + ") ";
  return head;
}

std::string delta_instance(const AttentionBackwardGpuPlan& p) {
  return launch_head() + p.delta_function + "(KilnAttnBwdArgs a) { kiln_attnb_delta<" + std::to_string(element_code(p.dtype)) +
         ", " + std::to_string(p.dv) + ">(a); }\n";
}

std::string tile_instances(const AttentionBackwardGpuPlan& p) {
  const int mask = attention_mask_code(p.params), mt = mask >= 2 ? attention_mask_type_code(p.mask_dtype) : 0;
  const std::string targs = std::to_string(element_code(p.dtype)) + ", " + std::to_string(p.d) + ", " + std::to_string(p.dv) +
                            ", " + std::to_string(mask) + ", " + std::to_string(mt);
  return launch_head() + p.dkdv_function + "(KilnAttnBwdArgs a) { kiln_attnb_dkdv<" + targs + ">(a); }\n" + launch_head() +
         p.dq_function + "(KilnAttnBwdArgs a) { kiln_attnb_dq<" + targs + ">(a); }\n";
}

}  // namespace

unsigned AttentionBackwardGpuPlan::shared_bytes() const {
  const int64_t bm = kBlockRows, bn = kBlockKeys;
  return unsigned((bn * (d + 1) + bn * (dv + 1) + bm * (d + 1) + bm * (dv + 1) + 2 * bm * (bn + 1) + 2 * bm) * 4);
}

size_t AttentionBackwardGpuPlan::workspace_bytes() const { return size_t(batch * m) * 4; }

Expected<AttentionBackwardGpuPlan> plan_attention_backward_on_gpu(AttentionBackwardGpuPlan plan) {
  if (plan.dtype != DType::Float16 && plan.dtype != DType::BFloat16 && plan.dtype != DType::Float32)
    return unsupported("no kernel for " + std::string(dtype_name(plan.dtype)));
  if (plan.batch < 0 || plan.m < 0 || plan.n < 0) return unsupported("negative sizes");
  if (plan.batch > INT32_MAX) return unsupported("a batch of " + std::to_string(plan.batch) + " (over 2^31 - 1 blocks)");
  if (plan.d < 1 || plan.dv < 1 || plan.d > 256 || plan.dv > 256)
    return unsupported("head dimensions " + std::to_string(plan.d) + " and " + std::to_string(plan.dv) + " (at most 256)");
  if ((plan.n + plan.kBlockKeys - 1) / plan.kBlockKeys > 65535)
    return unsupported(std::to_string(plan.n) + " keys (over 65535 blocks of " + std::to_string(plan.kBlockKeys) + ")");
  if ((plan.m + plan.kBlockRows - 1) / plan.kBlockRows > 65535)
    return unsupported(std::to_string(plan.m) + " query rows (over 65535 blocks of " + std::to_string(plan.kBlockRows) + ")");
  if ((plan.batch * plan.m + 7) / 8 > INT32_MAX) return unsupported("over 2^34 query rows");
  if (plan.batch_inner < 1 || plan.batch % plan.batch_inner != 0)
    return unsupported("a batch of " + std::to_string(plan.batch) + " split by " + std::to_string(plan.batch_inner));
  const int mask = attention_mask_code(plan.params);
  if (mask >= 2) {
    if (!plan.has_mask_tensor) return unsupported("a boolean or additive mask without its tensor");
    if (attention_mask_type_code(plan.mask_dtype) < 0) return unsupported("a " + std::string(dtype_name(plan.mask_dtype)) + " mask");
    if (plan.mask_inner < 1 || plan.batch % plan.mask_inner != 0)
      return unsupported("a mask split of the batch by " + std::to_string(plan.mask_inner));
  }
  if (plan.shared_bytes() > 227 * 1024)
    return unsupported(std::to_string(plan.shared_bytes()) + " bytes of shared memory (over 227 KiB)");
  const std::string name = std::string(dtype_abbrev(plan.dtype)) + "_d" + std::to_string(plan.d) + "_v" + std::to_string(plan.dv) +
                           "_m" + std::to_string(mask) + (mask >= 2 ? "_t" + std::to_string(attention_mask_type_code(plan.mask_dtype)) : "");
  plan.delta_function = "kiln_attnb_delta_" + std::string(dtype_abbrev(plan.dtype)) + "_v" + std::to_string(plan.dv);
  plan.dkdv_function = "kiln_attnb_dkdv_" + name;
  plan.dq_function = "kiln_attnb_dq_" + name;
  return plan;
}

Expected<AttentionBackwardGpuPlan> plan_attention_backward_on_gpu(const AttentionGpuPlan& f) {
  AttentionBackwardGpuPlan plan;
  plan.dtype = f.dtype, plan.mask_dtype = f.mask_dtype, plan.has_mask_tensor = !f.mask.empty();
  plan.batch = f.batch, plan.m = f.m, plan.n = f.n, plan.d = f.d, plan.dv = f.dv;
  const int64_t grad_q[3] = {f.m * f.d, f.d, 1}, grad_k[3] = {f.n * f.d, f.d, 1}, grad_v[3] = {f.n * f.dv, f.dv, 1};
  for (int i = 0; i < 3; ++i) {
    plan.q_stride[i] = f.q_stride[i], plan.k_stride[i] = f.k_stride[i], plan.v_stride[i] = f.v_stride[i];
    plan.o_stride[i] = f.o_stride[i], plan.do_stride[i] = f.o_stride[i];
    plan.dq_stride[i] = grad_q[i], plan.dk_stride[i] = grad_k[i], plan.dv_stride[i] = grad_v[i];
  }
  plan.q_offset = f.q_offset, plan.k_offset = f.k_offset, plan.v_offset = f.v_offset;
  plan.o_offset = f.o_offset, plan.do_offset = f.o_offset;
  plan.lse_stride[0] = f.m, plan.lse_stride[1] = 1;
  // Gradients and lse contiguous over the whole batch: the inner strides are the outer ones / batch_inner.
  plan.batch_inner = f.batch_inner;
  plan.q_inner = f.q_inner, plan.k_inner = f.k_inner, plan.v_inner = f.v_inner, plan.o_inner = f.o_inner, plan.do_inner = f.o_inner;
  if (f.batch_inner > 1) {
    const int64_t bi = f.batch_inner;
    plan.dq_stride[0] = grad_q[0] * bi, plan.dk_stride[0] = grad_k[0] * bi, plan.dv_stride[0] = grad_v[0] * bi;
    plan.dq_inner = grad_q[0], plan.dk_inner = grad_k[0], plan.dv_inner = grad_v[0];
    plan.lse_stride[0] = f.m * bi, plan.lse_inner = f.m;
  }
  for (int i = 0; i < 4; ++i) plan.mask_stride[i] = f.mask_stride[i];
  plan.mask_offset = f.mask_offset, plan.mask_inner = f.mask_inner;
  plan.params = f.params;
  return plan_attention_backward_on_gpu(plan);
}

std::string attention_backward_kernels_source(const std::vector<AttentionBackwardGpuPlan>& plans, bool forward_in_module) {
  std::string text;
  std::set<std::string> done;  // two plans of one dtype and dv share the delta kernel
  for (const AttentionBackwardGpuPlan& p : plans) {
    if (done.insert(p.delta_function).second) text += delta_instance(p);
    if (done.insert(p.dkdv_function).second) text += tile_instances(p);
  }
  if (text.empty()) return "";
  return (forward_in_module ? std::string() : attention_shared_source()) + kAttentionBackwardSource + text;
}

Status run_attention_backward_on_gpu(const AttentionBackwardGpuPlan& p, const AttentionBackwardPointers& ptr,
                                     const AttentionBackwardFunctions& fn, const Stream* stream) {
  if (p.batch == 0 || (p.m == 0 && p.n == 0)) return {};
  if (!ptr.workspace) return Status::error(p.dkdv_function + ": no workspace for the row sums D_i");
  // The kernels' KilnAttnBwdArgs, field for field.
  struct Args {
    uint64_t q, k, v, o, dout, lse, mask, dq, dk, dv, delta;
    int64_t qs[3], ks[3], vs[3], os[3], dos[3], dqs[3], dks[3], dvs[3], ls[2], ms[4];
    int64_t batch, m, n, inner, causal_offset, masked_when_nonzero;
    double scale, scale_log2, mask_scale_log2, fill_log2;
    int64_t bi, qi, ki, vi, oi, doi, dqi, dki, dvi, li;
  } args{};
  const uint64_t es = element_size(p.dtype);
  args.q = ptr.q + uint64_t(p.q_offset) * es;
  args.k = ptr.k + uint64_t(p.k_offset) * es;
  args.v = ptr.v + uint64_t(p.v_offset) * es;
  args.o = ptr.out + uint64_t(p.o_offset) * es;
  args.dout = ptr.dout + uint64_t(p.do_offset) * es;
  args.lse = ptr.lse + uint64_t(p.lse_offset) * 4;
  args.mask = p.has_mask_tensor && attention_mask_code(p.params) >= 2 ? ptr.mask + uint64_t(p.mask_offset) * element_size(p.mask_dtype) : 0;
  args.dq = ptr.dq ? ptr.dq + uint64_t(p.dq_offset) * es : 0;
  args.dk = ptr.dk ? ptr.dk + uint64_t(p.dk_offset) * es : 0;
  args.dv = ptr.dv ? ptr.dv + uint64_t(p.dv_offset) * es : 0;
  args.delta = ptr.workspace;
  for (int i = 0; i < 3; ++i) {
    args.qs[i] = p.q_stride[i], args.ks[i] = p.k_stride[i], args.vs[i] = p.v_stride[i], args.os[i] = p.o_stride[i];
    args.dos[i] = p.do_stride[i], args.dqs[i] = p.dq_stride[i], args.dks[i] = p.dk_stride[i], args.dvs[i] = p.dv_stride[i];
  }
  args.ls[0] = p.lse_stride[0], args.ls[1] = p.lse_stride[1];
  for (int i = 0; i < 4; ++i) args.ms[i] = p.mask_stride[i];
  args.batch = p.batch, args.m = p.m, args.n = p.n, args.inner = p.mask_inner;
  args.causal_offset = p.params.causal_offset.value_or(0);
  args.masked_when_nonzero = p.params.masked_when_nonzero;
  args.scale = p.params.scale;
  args.scale_log2 = p.params.scale * kLog2e;
  args.mask_scale_log2 = p.params.mask_scale * kLog2e;
  args.fill_log2 = std::isinf(p.params.fill) ? p.params.fill : p.params.fill * kLog2e;
  args.bi = std::max<int64_t>(p.batch_inner, 1);
  args.qi = p.q_inner, args.ki = p.k_inner, args.vi = p.v_inner, args.oi = p.o_inner, args.doi = p.do_inner;
  args.dqi = p.dq_inner, args.dki = p.dk_inner, args.dvi = p.dv_inner, args.li = p.lse_inner;
  void* params[] = {&args};
  const unsigned threads = unsigned(p.kThreads);
  if (p.m > 0) {
    const Dim3 grid{unsigned((p.batch * p.m + threads / 32 - 1) / (threads / 32))};
    if (Status st = launch(fn.delta, grid, Dim3{threads}, 0, params, stream); !st.ok())
      return Status::error(p.delta_function + ": " + st.message());
  }
  if (p.n > 0 && (ptr.dk || ptr.dv)) {  // with no query rows every dk and dv is 0, written by the same kernel
    const Dim3 grid{unsigned(p.batch), unsigned((p.n + p.kBlockKeys - 1) / p.kBlockKeys)};
    if (Status st = launch(fn.dkdv, grid, Dim3{threads}, p.shared_bytes(), params, stream); !st.ok())
      return Status::error(p.dkdv_function + ": " + st.message());
  }
  if (p.m > 0 && ptr.dq) {  // with no keys dq is 0 (the kernel loops over none)
    const Dim3 grid{unsigned(p.batch), unsigned((p.m + p.kBlockRows - 1) / p.kBlockRows)};
    if (Status st = launch(fn.dq, grid, Dim3{threads}, p.shared_bytes(), params, stream); !st.ok())
      return Status::error(p.dq_function + ": " + st.message());
  }
  return {};
}

}  // namespace kiln::codegen::cuda
