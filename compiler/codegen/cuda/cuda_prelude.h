#pragma once
// The helpers every generated CUDA source starts with. NVRTC compiles it
// with no include path, so the fixed-width types, half/bfloat16 conversions
// and reductions are written here rather than taken from cuda_fp16.h.
#include "core/tensor/dtype.h"

namespace kiln::codegen::cuda {

inline constexpr const char* kCudaPrelude = R"KILN(
typedef long long i64;
typedef unsigned long long u64;

// float16 through the conversion instructions; bfloat16 on the bits, rounding
// to nearest even with NaNs kept quiet, as c10::BFloat16 does.
__device__ __forceinline__ float kiln_h2f(unsigned short h) {
  float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f;
}
__device__ __forceinline__ unsigned short kiln_f2h(float f) {
  unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;
}
__device__ __forceinline__ float kiln_bf2f(unsigned short b) { return __int_as_float(((unsigned)b) << 16); }
__device__ __forceinline__ unsigned short kiln_f2bf(float f) {
  unsigned u = __float_as_uint(f);
  if (f != f) return (unsigned short)((u | 0x00400000u) >> 16);
  return (unsigned short)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
__device__ __forceinline__ float kiln_round_h(float f) { return kiln_h2f(kiln_f2h(f)); }
__device__ __forceinline__ float kiln_round_bf(float f) { return kiln_bf2f(kiln_f2bf(f)); }

// V elements of T between memory and a per-thread array in the widest moves
// their size allows (16 bytes: one LDG.128). Both sides are aligned to that:
// the array is declared alignas(16) and p is the start of a cudaMalloc'd
// buffer plus a multiple of V elements.
template <int V, typename T>
__device__ __forceinline__ void kiln_vload(const T* __restrict__ p, T* a) {
  constexpr int bytes = V * (int)sizeof(T);
  if constexpr (bytes % 16 == 0) {
    for (int i = 0; i < bytes / 16; ++i) reinterpret_cast<uint4*>(a)[i] = __ldg(reinterpret_cast<const uint4*>(p) + i);
  } else if constexpr (bytes % 8 == 0) {
    for (int i = 0; i < bytes / 8; ++i) reinterpret_cast<uint2*>(a)[i] = __ldg(reinterpret_cast<const uint2*>(p) + i);
  } else if constexpr (bytes % 4 == 0) {
    for (int i = 0; i < bytes / 4; ++i) reinterpret_cast<unsigned*>(a)[i] = __ldg(reinterpret_cast<const unsigned*>(p) + i);
  } else {
    for (int i = 0; i < V; ++i) a[i] = p[i];
  }
}
template <int V, typename T>
__device__ __forceinline__ void kiln_vstore(T* __restrict__ p, const T* a) {
  constexpr int bytes = V * (int)sizeof(T);
  if constexpr (bytes % 16 == 0) {
    for (int i = 0; i < bytes / 16; ++i) reinterpret_cast<uint4*>(p)[i] = reinterpret_cast<const uint4*>(a)[i];
  } else if constexpr (bytes % 8 == 0) {
    for (int i = 0; i < bytes / 8; ++i) reinterpret_cast<uint2*>(p)[i] = reinterpret_cast<const uint2*>(a)[i];
  } else if constexpr (bytes % 4 == 0) {
    for (int i = 0; i < bytes / 4; ++i) reinterpret_cast<unsigned*>(p)[i] = reinterpret_cast<const unsigned*>(a)[i];
  } else {
    for (int i = 0; i < V; ++i) p[i] = a[i];
  }
}

// A convolution's channel rows between a packed [c][n][pixels] buffer (row
// t = c * samples + n) and a strided [n, c, pixel] tensor (sn, sc, sp), in
// groups of V when the host found them whole and aligned; values only move.
// kToStrided: packed -> strided (a merged GEMM's product to the output), else
// strided -> packed (dY gathered for the backward's GEMMs).
template <bool kToStrided, int V, typename T, typename I>
__device__ __forceinline__ void kiln_move_channel_rows(T* __restrict__ out, const T* __restrict__ in, I rows,
                                                       I samples, I pixels, I sn, I sc, I sp) {
  const I groups = pixels / V;
  const I row_step = (I)gridDim.y * (I)blockDim.y, group_step = (I)gridDim.x * (I)blockDim.x;
  for (I t = (I)blockIdx.y * (I)blockDim.y + (I)threadIdx.y; t < rows; t += row_step) {
    const I c = t / samples, n = t - c * samples;
    const I strided = n * sn + c * sc, packed = t * pixels;
    const T* __restrict__ from = in + (kToStrided ? packed : strided);
    T* __restrict__ to = out + (kToStrided ? strided : packed);
    for (I q = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; q < groups; q += group_step) {
      if constexpr (V > 1) *reinterpret_cast<uint4*>(to + q * V) = *reinterpret_cast<const uint4*>(from + q * V);
      else if constexpr (kToStrided) to[q * sp] = from[q];
      else to[q] = from[q * sp];
    }
  }
}

// Python's // and % (toward -inf) for index arithmetic of any sign.
__device__ __forceinline__ i64 kiln_floordiv(i64 a, i64 b) {
  i64 q = a / b, r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}
__device__ __forceinline__ i64 kiln_mod(i64 a, i64 b) {
  i64 r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

// torch.maximum / minimum: a NaN in either operand wins.
template <typename T> __device__ __forceinline__ T kiln_max(T a, T b) { return (a != a || a > b) ? a : b; }
template <typename T> __device__ __forceinline__ T kiln_min(T a, T b) { return (a != a || a < b) ? a : b; }
template <typename T> __device__ __forceinline__ T kiln_fmax(T a, T b) { return (a != a) ? a : ((b != b) ? b : (a > b ? a : b)); }
template <typename T> __device__ __forceinline__ T kiln_fmin(T a, T b) { return (a != a) ? a : ((b != b) ? b : (a < b ? a : b)); }
// Integer division by zero gives 0, as the CPU backend does.
template <typename T> __device__ __forceinline__ T kiln_idiv(T a, T b) { return b == 0 ? T(0) : T(a / b); }

struct KilnSum { template <typename T> __device__ T operator()(T a, T b) const { return a + b; } };
struct KilnProd { template <typename T> __device__ T operator()(T a, T b) const { return a * b; } };
struct KilnOr { template <typename T> __device__ T operator()(T a, T b) const { return a | b; } };
struct KilnFMax { template <typename T> __device__ T operator()(T a, T b) const { return kiln_fmax(a, b); } };
struct KilnFMin { template <typename T> __device__ T operator()(T a, T b) const { return kiln_fmin(a, b); } };
struct KilnIMax { template <typename T> __device__ T operator()(T a, T b) const { return a > b ? a : b; } };
struct KilnIMin { template <typename T> __device__ T operator()(T a, T b) const { return a < b ? a : b; } };

// Every thread of the block gets the combined value. blockDim.x is a
// multiple of 32, at most 1024; `scratch` holds 32 values.
template <typename T, typename F>
__device__ __forceinline__ T kiln_block_reduce(T v, F f, T* scratch) {
  for (int off = 16; off > 0; off >>= 1) v = f(v, __shfl_xor_sync(0xffffffffu, v, off));
  const int warps = blockDim.x >> 5;
  if (warps == 1) return v;
  __syncthreads();
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
  __syncthreads();
  T r = scratch[0];
  for (int w = 1; w < warps; ++w) r = f(r, scratch[w]);
  return r;
}

// argmax: the first maximum wins and a NaN is the maximum (torch.argmax).
template <typename T>
__device__ __forceinline__ bool kiln_arg_takes(T v, i64 i, T best, i64 best_i) {
  const bool best_nan = best != best, v_nan = v != v;
  if (best_nan) return v_nan && i < best_i;
  if (v_nan || v > best) return true;
  return v == best && i < best_i;
}
template <typename T>
__device__ __forceinline__ void kiln_block_argmax(T& v, i64& i, T* scratch, i64* scratch_i) {
  for (int off = 16; off > 0; off >>= 1) {
    T ov = __shfl_xor_sync(0xffffffffu, v, off);
    i64 oi = __shfl_xor_sync(0xffffffffu, i, off);
    if (kiln_arg_takes(ov, oi, v, i)) { v = ov; i = oi; }
  }
  const int warps = blockDim.x >> 5;
  if (warps == 1) return;
  __syncthreads();
  if ((threadIdx.x & 31) == 0) { scratch[threadIdx.x >> 5] = v; scratch_i[threadIdx.x >> 5] = i; }
  __syncthreads();
  v = scratch[0]; i = scratch_i[0];
  for (int w = 1; w < warps; ++w)
    if (kiln_arg_takes(scratch[w], scratch_i[w], v, i)) { v = scratch[w]; i = scratch_i[w]; }
}
// A dtype's storage type T and its arithmetic type A (float for the half types),
// for the library kernels that compute in A and store T.
struct KilnF32 {
  typedef float T;
  typedef float A;
  static __device__ float get(T v) { return v; }
  static __device__ T put(float v) { return v; }
};
struct KilnF64 {
  typedef double T;
  typedef double A;
  static __device__ double get(T v) { return v; }
  static __device__ T put(double v) { return v; }
};
struct KilnF16 {
  typedef unsigned short T;
  typedef float A;
  static __device__ float get(T v) { return kiln_h2f(v); }
  static __device__ T put(float v) { return kiln_f2h(v); }
};
struct KilnBF16 {
  typedef unsigned short T;
  typedef float A;
  static __device__ float get(T v) { return kiln_bf2f(v); }
  static __device__ T put(float v) { return kiln_f2bf(v); }
};
)KILN";

// Tensor-core and shared-memory helpers of the kernels that use mma.sync (the
// flash attention kernel, the implicit-GEMM convolution): a module carries
// them once, after kCudaPrelude, when one of those kernels is in it.
inline constexpr const char* kCudaTensorCoreHelpers = R"KILN(
__device__ __forceinline__ unsigned kiln_smem_addr(const void* p) {
  unsigned r;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
  return r;
}
// 16 bytes global -> shared, zero-filled when !valid (src must still be a valid address).
__device__ __forceinline__ void kiln_cp_async16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(kiln_smem_addr(dst)), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void kiln_cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void kiln_cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }
__device__ __forceinline__ void kiln_ldsm4(unsigned* r, const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(kiln_smem_addr(p)));
}
__device__ __forceinline__ void kiln_ldsm4_t(unsigned* r, const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(kiln_smem_addr(p)));
}
template <bool BF> __device__ __forceinline__ void kiln_mma16816(float* c, const unsigned* a, unsigned b0, unsigned b1) {
  if constexpr (BF)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// Two floats as a pair of 16-bit values, `lo` in the low half (the lower column).
template <bool BF> __device__ __forceinline__ unsigned kiln_pack2(float lo, float hi) {
  unsigned r;
  if constexpr (BF) asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  else asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
// TF32 m16n8k8 (float32 operands rounded to TF32 first by kiln_tf32, as
// cuBLAS and cuDNN round them): A rows g and g + 8, columns t and t + 4; B
// rows t and t + 4, column g; C as for m16n8k16 (g = lane / 4, t = lane % 4).
__device__ __forceinline__ unsigned kiln_tf32(float f) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(f));
  return r;
}
__device__ __forceinline__ void kiln_mma1688_tf32(float* c, const unsigned* a, unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
)KILN";

// The dtypes the library kernels (and cuBLAS) take: float32, float64, float16, bfloat16.
inline bool library_dtype(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

// The prelude's traits struct for a dtype the library kernels take ("KilnF32").
inline const char* dtype_traits(DType d) {
  return d == DType::Float64 ? "KilnF64" : d == DType::Float16 ? "KilnF16" : d == DType::BFloat16 ? "KilnBF16" : "KilnF32";
}

}  // namespace kiln::codegen::cuda
