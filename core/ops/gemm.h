#pragma once
// Matrix multiply for the eager kernels and the extern GEMM: oneDNN for float32
// (OpenBLAS when KILN_GEMM=openblas or libdnnl does not load, and for small
// products), OpenBLAS for float64, a plain loop for integers (BLAS has none).
// Operands are strided row-major views, so a transposed tensor reaches the
// library as a transposed flag instead of a copy.
#include <cstdint>
#include <string>

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

enum class Backend { OpenBLAS, OneDNN };

// The library for float32 products that are not small, chosen once per process:
// KILN_GEMM=onednn (the default) or KILN_GEMM=openblas. Products at or below
// is_small() run on OpenBLAS unless KILN_GEMM_SMALL=onednn (then on oneDNN,
// one thread each).
Backend float_backend();
const char* backend_name(Backend b);  // "onednn", "openblas"
// For tests that compare the two: false (and no change) when oneDNN is not
// available. Not for use while other threads multiply.
bool set_float_backend(Backend b);
// One line for --version and the benchmarks: each library, its version and
// kernels, and why oneDNN is not used when it is not.
std::string describe();

// True when OpenBLAS runs a product of this size on the calling thread alone;
// callers may then run many of them in parallel without oversubscribing.
bool is_small(int64_t m, int64_t n, int64_t k);

// OpenBLAS keeps its own thread pool; this sizes it to kiln's num_threads().
// Call it on the calling thread before a parallel region that runs gemms.
// (oneDNN needs no call: each product sets its OpenMP thread count from
// num_threads() on the thread that calls it.)
void sync_threads();

}  // namespace kiln::gemm
