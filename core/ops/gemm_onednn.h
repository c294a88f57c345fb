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

}  // namespace kiln::gemm::onednn
