#pragma once
// oneDNN's sgemm for core/ops/gemm.cpp, opened with dlopen on first use so that
// no oneDNN (or OpenMP) header reaches the rest of the build, a machine without
// libdnnl still runs (on OpenBLAS), and libgomp's wait policy can be set before
// libgomp reads it (gemm_onednn.cpp says why that matters).
#include <cstdint>
#include <string>

namespace kiln::gemm::onednn {

// Opens libdnnl once per process; false when this build has no oneDNN or the
// library does not load (then load_error() says why).
bool available();
const std::string& load_error();
// "oneDNN 2.6.3 (OpenMP, GOMP_SPINCOUNT=...)": the library that loaded and how its threads wait.
const std::string& description();

// Row-major C(m x n) = alpha * op(A) * op(B) + beta * C on `threads` OpenMP
// threads (sized on the calling thread: OpenMP keeps the count per thread).
// beta == 0 does not read C; alpha == 0 does not read A or B. Throws on a
// status other than success. Requires available().
void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc, int threads);

// What oneDNN's matmul primitive applies to the product before it writes C
// (its post-ops), in this order: C = activation(alpha * A @ B + shift + bias
// +- addend).
enum class Activation { None, Relu, GeluTanh };
struct Epilogue {
  float shift = 0;                // added to every element
  const float* bias = nullptr;    // [n], unit stride: added to every row
  const float* addend = nullptr;  // [m, n], unit column stride, rows addend_ld apart
  int64_t addend_ld = 0;
  bool subtract_addend = false;
  Activation activation = Activation::None;
};

// C(m x n, row-major, ldc) = the epilogue of alpha * A(m x k) @ B(k x n), A's
// element (i, j) at a[i * a_rs + j * a_cs], B's likewise, in one pass over C:
// the GEMM's own epilogue writes the final values. Primitives are built once
// per shape, layout, epilogue and thread count and kept. False, with C
// untouched and *why filled, when this oneDNN cannot build the primitive or
// would run it on its reference (scalar) implementation; the caller then
// multiplies and applies the epilogue itself. Requires available().
bool matmul(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t a_rs, int64_t a_cs, const float* b,
            int64_t b_rs, int64_t b_cs, float* c, int64_t ldc, const Epilogue& epilogue, int threads,
            std::string* why);

namespace detail {
// For gemm_onednn_matmul.cpp: the library's handle (for dlsym), and the
// thread count to run with after setting it on the calling thread (1 in a
// fork child whose parent had started OpenMP's team).
void* library_handle();
int prepare_threads(int threads);
}  // namespace detail

}  // namespace kiln::gemm::onednn
