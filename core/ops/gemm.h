#pragma once
// Matrix multiply for the eager kernels: OpenBLAS for float32/float64, a plain
// loop for integers (BLAS has none). Operands are strided row-major views, so a
// transposed tensor reaches BLAS as a transposed flag instead of a copy.
#include <cstdint>

namespace kiln::gemm {

// Element (i, j) is at p[i * rs + j * cs].
template <class T>
struct MatRef {
  const T* p = nullptr;
  int64_t rs = 0;
  int64_t cs = 0;
};

// C(m x n) = alpha * A(m x k) * B(k x n) + beta * C, C row-major with leading
// dimension ldc. beta == 0 overwrites C without reading it, so NaN in C does not
// survive (BLAS semantics, and PyTorch's for addmm with beta=0).
// T: float, double, int64_t, int32_t, int16_t, int8_t, uint8_t.
template <class T>
void gemm(int64_t m, int64_t n, int64_t k, T alpha, MatRef<T> a, MatRef<T> b, T beta, T* c,
          int64_t ldc);

// `batch` independent products; product i reads a.p + i * a_bs and b.p + i * b_bs
// and writes c + i * c_bs. Runs them in parallel when each is too small for OpenBLAS
// to thread, else one after another with OpenBLAS threading each.
template <class T>
void gemm_batched(int64_t batch, int64_t m, int64_t n, int64_t k, T alpha, MatRef<T> a,
                  int64_t a_bs, MatRef<T> b, int64_t b_bs, T beta, T* c, int64_t c_bs, int64_t ldc);

// True when OpenBLAS runs a product of this size on the calling thread alone;
// callers may then run many of them in parallel without oversubscribing.
bool is_small(int64_t m, int64_t n, int64_t k);

// OpenBLAS keeps its own thread pool; this sizes it to kiln's num_threads().
// Call it on the calling thread before a parallel region that runs gemms.
void sync_threads();

}  // namespace kiln::gemm
