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

// The dtypes the library kernels (and cuBLAS) take: float32, float64, float16, bfloat16.
inline bool library_dtype(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

// The prelude's traits struct for a dtype the library kernels take ("KilnF32").
inline const char* dtype_traits(DType d) {
  return d == DType::Float64 ? "KilnF64" : d == DType::Float16 ? "KilnF16" : d == DType::BFloat16 ? "KilnBF16" : "KilnF32";
}

}  // namespace kiln::codegen::cuda
