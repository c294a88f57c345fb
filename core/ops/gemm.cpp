#include "core/ops/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "core/ops/gemm_onednn.h"
#include "core/tensor/dtype.h"
#include "core/tensor/parallel.h"

namespace kiln::gemm {
namespace {

// OpenBLAS runs a gemm single-threaded when m*n*k is at most
// SMP_THRESHOLD_MIN (65536) * GEMM_MULTITHREAD_THRESHOLD (4).
constexpr double kSmallWork = 65536.0 * 4;

struct BlasOperand {
  CBLAS_TRANSPOSE trans = CblasNoTrans;
  int64_t ld = 1;
};

// A size-1 dim's stride never matters; pin it to whatever lets the other
// stride pass as a BLAS leading dimension.
template <class T>
MatRef<T> canonical(MatRef<T> x, int64_t rows, int64_t cols) {
  if (rows <= 1) x.rs = x.cs == 1 ? std::max<int64_t>(cols, 1) : 1;
  if (cols <= 1) x.cs = x.rs == 1 ? std::max<int64_t>(rows, 1) : 1;
  return x;
}

constexpr int64_t kBlasIntMax = 0x7fffffff;

// The BLAS view of a strided rows x cols matrix, or nothing when neither
// row-major nor column-major layout fits, or the leading dimension overflows
// BLAS's int (then the caller copies).
template <class T>
bool blas_layout(MatRef<T> x, int64_t rows, int64_t cols, BlasOperand& out) {
  if (x.rs > kBlasIntMax || x.cs > kBlasIntMax) return false;
  if (x.cs == 1 && x.rs >= std::max<int64_t>(cols, 1)) {
    out = {CblasNoTrans, x.rs};
    return true;
  }
  if (x.rs == 1 && x.cs >= std::max<int64_t>(rows, 1)) {
    out = {CblasTrans, x.cs};
    return true;
  }
  return false;
}

template <class T>
MatRef<T> pack(MatRef<T> x, int64_t rows, int64_t cols, std::vector<T>& buf) {
  buf.resize(size_t(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) buf[size_t(i * cols + j)] = x.p[i * x.rs + j * x.cs];
  return {buf.data(), cols, 1};
}

template <class T>
void scale_c(int64_t m, int64_t n, T beta, T* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    T* row = c + i * ldc;
    if (beta == T(0)) std::fill(row, row + n, T(0));
    else if (beta != T(1))
      for (int64_t j = 0; j < n; ++j) row[j] = T(beta * row[j]);
  }
}

struct Selection {
  Backend backend = Backend::OpenBLAS;
  bool small_on_onednn = false;  // KILN_GEMM_SMALL=onednn
  std::string note;  // why it is not the default, when it is not
};

// KILN_GEMM picks the float32 library once per process; oneDNN when unset and
// it loads, else OpenBLAS with the reason.
Selection select_backend() {
  Selection s;
  const char* env = std::getenv("KILN_GEMM");
  std::string want = env && *env ? env : "onednn";
  if (want == "openblas") {
    s.note = "KILN_GEMM=openblas";
  } else if (want != "onednn") {
    s.note = "KILN_GEMM=" + want + " is neither onednn nor openblas";
  } else if (onednn::available()) {
    s.backend = Backend::OneDNN;
    const char* small = std::getenv("KILN_GEMM_SMALL");
    s.small_on_onednn = small && std::string(small) == "onednn";
  } else {
    s.note = onednn::load_error();
  }
  return s;
}

Selection& selection() {
  static Selection s = select_backend();
  return s;
}

template <class T>
void blas_gemm(int64_t m, int64_t n, int64_t k, T alpha, MatRef<T> a, MatRef<T> b, T beta, T* c,
               int64_t ldc) {
  std::vector<T> abuf, bbuf;
  BlasOperand oa, ob;
  if (!blas_layout(a, m, k, oa)) blas_layout(a = pack(a, m, k, abuf), m, k, oa);
  if (!blas_layout(b, k, n, ob)) blas_layout(b = pack(b, k, n, bbuf), k, n, ob);
  if constexpr (std::is_same_v<T, float>) {
    // Small products stay on OpenBLAS, on the calling thread: its small-matrix
    // kernels took a third of oneDNN's time up to 64^3 on the dev machine (oneDNN
    // spends about a microsecond per call before multiplying). KILN_GEMM_SMALL=onednn
    // sends them to oneDNN on one thread, for a CPU where OpenBLAS picks slow
    // kernels (callers run small products as TBB tasks: no OpenMP team per task).
    const Selection& s = selection();
    const bool small = is_small(m, n, k);
    if (s.backend == Backend::OneDNN && (!small || s.small_on_onednn)) {
      onednn::sgemm(oa.trans == CblasTrans, ob.trans == CblasTrans, m, n, k, alpha, a.p, oa.ld, b.p, ob.ld, beta,
                    c, ldc, small ? 1 : num_threads());
      return;
    }
  }
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, oa.trans, ob.trans, int(m), int(n), int(k), alpha, a.p, int(oa.ld), b.p,
                int(ob.ld), beta, c, int(ldc));
  else
    cblas_dgemm(CblasRowMajor, oa.trans, ob.trans, int(m), int(n), int(k), alpha, a.p, int(oa.ld), b.p,
                int(ob.ld), beta, c, int(ldc));
}

// Integers: accumulate each output row in int64 (wrapping arithmetic gives the
// same low bits as accumulating in T), i-p-j order so the inner loop streams.
template <class T>
void loop_gemm(int64_t m, int64_t n, int64_t k, T alpha, MatRef<T> a, MatRef<T> b, T beta, T* c,
               int64_t ldc) {
  using Acc = acc_t<T>;
  std::vector<Acc> acc(static_cast<size_t>(n));
  for (int64_t i = 0; i < m; ++i) {
    std::fill(acc.begin(), acc.end(), Acc(0));
    for (int64_t p = 0; p < k; ++p) {
      Acc av = Acc(a.p[i * a.rs + p * a.cs]);
      const T* brow = b.p + p * b.rs;
      if (b.cs == 1)
        for (int64_t j = 0; j < n; ++j) acc[size_t(j)] += av * Acc(brow[j]);
      else
        for (int64_t j = 0; j < n; ++j) acc[size_t(j)] += av * Acc(brow[j * b.cs]);
    }
    T* row = c + i * ldc;
    for (int64_t j = 0; j < n; ++j) {
      Acc v = Acc(alpha) * acc[size_t(j)];
      if (beta != T(0)) v += Acc(beta) * Acc(row[j]);
      row[j] = T(v);
    }
  }
}

// 64-bit sizes reach BLAS as int; larger matrices are rejected rather than truncated.
void check_blas_sizes(int64_t m, int64_t n, int64_t k, int64_t ldc) {
  constexpr int64_t kMax = kBlasIntMax;
  KILN_USER_CHECK(m <= kMax && n <= kMax && k <= kMax && ldc <= kMax,
                  "matrix multiply: dimensions too large for BLAS (", m, " x ", k, " x ", n, ")");
}

}  // namespace

bool is_small(int64_t m, int64_t n, int64_t k) { return double(m) * double(n) * double(k) <= kSmallWork; }

Backend float_backend() { return selection().backend; }

bool set_float_backend(Backend b) {
  if (b == Backend::OneDNN && !onednn::available()) return false;
  Selection& s = selection();
  s.backend = b;
  s.note = b == Backend::OneDNN ? "" : "set_float_backend(OpenBLAS)";
  return true;
}

const char* backend_name(Backend b) { return b == Backend::OneDNN ? "onednn" : "openblas"; }

std::string describe() {
  const Selection& s = selection();
  std::string openblas = openblas_get_config();  // "OpenBLAS 0.3.21 ... Cooperlake ...": version and kernels
  if (s.backend == Backend::OneDNN)
    return "float32: " + onednn::description() +
           (s.small_on_onednn ? " (small products too, KILN_GEMM_SMALL=onednn); float64: "
                              : "; float64 and small products: ") +
           openblas;
  return "float32 and float64: " + openblas + (s.note.empty() ? "" : " (" + s.note + ")");
}

void sync_threads() {
  static std::atomic<int> applied{0};
  int want = num_threads();
  if (applied.exchange(want) != want) openblas_set_num_threads(want);
}

template <class T>
void gemm(int64_t m, int64_t n, int64_t k, T alpha, MatRef<T> a, MatRef<T> b, T beta, T* c,
          int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    scale_c(m, n, beta, c, ldc);
    return;
  }
  a = canonical(a, m, k);
  b = canonical(b, k, n);
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    check_blas_sizes(m, n, k, ldc);
    blas_gemm(m, n, k, alpha, a, b, beta, c, std::max<int64_t>(ldc, n));
  } else {
    loop_gemm(m, n, k, alpha, a, b, beta, c, ldc);
  }
}

template <class T>
void gemm_batched(int64_t batch, int64_t m, int64_t n, int64_t k, T alpha, MatRef<T> a,
                  int64_t a_bs, MatRef<T> b, int64_t b_bs, T beta, T* c, int64_t c_bs, int64_t ldc) {
  sync_threads();
  auto one = [&](int64_t i) {
    MatRef<T> ai{a.p + i * a_bs, a.rs, a.cs}, bi{b.p + i * b_bs, b.rs, b.cs};
    gemm<T>(m, n, k, alpha, ai, bi, beta, c + i * c_bs, ldc);
  };
  if (batch > 1 && is_small(m, n, k)) {
    // Grain in products so each task has enough multiply-adds to pay for itself.
    int64_t work = std::max<int64_t>(m * n * std::max<int64_t>(k, 1), 1);
    int64_t grain = std::max<int64_t>(1, kParallelGrain * 8 / work);
    parallel_for(0, batch, grain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) one(i);
    });
  } else {
    for (int64_t i = 0; i < batch; ++i) one(i);
  }
}

#define KILN_GEMM_INSTANTIATE(T)                                                                  \
  template void gemm<T>(int64_t, int64_t, int64_t, T, MatRef<T>, MatRef<T>, T, T*, int64_t);     \
  template void gemm_batched<T>(int64_t, int64_t, int64_t, int64_t, T, MatRef<T>, int64_t,      \
                                MatRef<T>, int64_t, T, T*, int64_t, int64_t);
KILN_GEMM_INSTANTIATE(float)
KILN_GEMM_INSTANTIATE(double)
KILN_GEMM_INSTANTIATE(int64_t)
KILN_GEMM_INSTANTIATE(int32_t)
KILN_GEMM_INSTANTIATE(int16_t)
KILN_GEMM_INSTANTIATE(int8_t)
KILN_GEMM_INSTANTIATE(uint8_t)
#undef KILN_GEMM_INSTANTIATE

}  // namespace kiln::gemm
