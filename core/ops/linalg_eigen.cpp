// Symmetric eigendecomposition and the matrix exponential: _linalg_eigh
// through LAPACK's syevd, as PyTorch's CPU kernel (eigenvalues ascending, one
// triangle read), and linalg_matrix_exp by scaling and squaring.
// LAPACK gets each matrix column-major, as ATen hands it over (a transposed
// copy), so it reads the triangle UPLO names and rounds as PyTorch's call does.
#include <algorithm>
#include <cblas.h>
#include <cmath>
#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include "core/ops/kernel_util.h"
#include "core/ops/linalg_factor.h"
#include "core/ops/pointwise_kernels.h"

extern "C" {
// The trailing size_ts are the hidden lengths of Fortran character arguments.
void ssyevd_(const char* jobz, const char* uplo, const int* n, float* a, const int* lda, float* w, float* work,
             const int* lwork, int* iwork, const int* liwork, int* info, size_t, size_t);
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w, double* work,
             const int* lwork, int* iwork, const int* liwork, int* info, size_t, size_t);
}

namespace kiln {
namespace {

// ATen's squareCheckInputs, in the words of `api`.
void check_square(const Tensor& t, std::string_view api) {
  KILN_USER_CHECK(t.dim() >= 2, api, ": The input tensor A must have at least 2 dimensions.");
  KILN_USER_CHECK(t.size(-1) == t.size(-2), api, ": A must be batches of square matrices, but they are ", t.size(-2),
                  " by ", t.size(-1), " matrices");
}

// ---------------------------------------------------------------- _linalg_eigh

char uplo_of(const std::string& uplo) {
  char c = uplo.size() == 1 ? char(std::toupper(static_cast<unsigned char>(uplo[0]))) : '?';
  KILN_USER_CHECK(c == 'L' || c == 'U', "Expected UPLO argument to be 'L' or 'U', but got ", uplo);
  return c;
}

ValueList eigh_meta(const OpArgs& args) {
  const Tensor& a = args.tensor(0);
  check_square(a, "linalg.eigh");
  uplo_of(args.str(1));
  KILN_USER_CHECK(a.dtype() == DType::Float32 || a.dtype() == DType::Float64,
                  "\"linalg_eigh_cpu\" not implemented for '", pointwise::aten_type_name(a.dtype()), "'");
  Shape values(a.sizes().begin(), a.sizes().end() - 1);
  // Without eigenvectors ATen returns an empty tensor in their place.
  Shape vectors = args.boolean(2) ? a.sizes() : Shape{0};
  return ValueList{Value(Tensor::meta(values, a.dtype())), Value(Tensor::meta(vectors, a.dtype()))};
}

template <class T>
void syevd(char jobz, char uplo, int n, T* a, T* w, int* info) {
  int lwork = -1, liwork = -1, iwork_size = 0;
  T work_size = T(0);
  auto call = [&](T* work, int* iwork) {
    if constexpr (std::is_same_v<T, float>)
      ssyevd_(&jobz, &uplo, &n, a, &n, w, work, &lwork, iwork, &liwork, info, 1, 1);
    else dsyevd_(&jobz, &uplo, &n, a, &n, w, work, &lwork, iwork, &liwork, info, 1, 1);
  };
  call(&work_size, &iwork_size);  // the workspace query
  lwork = std::max(1, int(work_size));
  liwork = std::max(1, iwork_size);
  std::vector<T> work(static_cast<size_t>(lwork));
  std::vector<int> iwork(static_cast<size_t>(liwork));
  call(work.data(), iwork.data());
}

void eigh_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  const Tensor& a = args.tensor(0);
  char uplo = uplo_of(args.str(1));
  bool vectors = args.boolean(2);
  int64_t n = a.size(-1), count = matrices(a);
  if (a.numel() == 0) return;
  Tensor src = a.contiguous();
  std::vector<int32_t> infos(static_cast<size_t>(count), 0);
  auto dispatch = [&]<class T>() {
    const T* sp = src.data<T>();
    T* wp = outs[0].data<T>();
    std::vector<T> col(static_cast<size_t>(n * n));
    for (int64_t b = 0; b < count; ++b) {
      const T* x = sp + b * n * n;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) col[size_t(j * n + i)] = x[i * n + j];
      int info = 0;
      syevd<T>(vectors ? 'V' : 'N', uplo, int(n), col.data(), wp + b * n, &info);
      infos[size_t(b)] = info;
      if (!vectors) continue;
      T* v = outs[1].data<T>() + b * n * n;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) v[i * n + j] = col[size_t(j * n + i)];
    }
  };
  if (a.dtype() == DType::Float32) dispatch.template operator()<float>();
  else dispatch.template operator()<double>();
  // ATen's _linalg_check_errors for "linalg.eigh".
  for (int64_t b = 0; b < count; ++b) {
    int info = infos[size_t(b)];
    if (info == 0) continue;
    std::string batch = a.dim() == 2 ? "" : ": (Batch element " + std::to_string(b) + ")";
    KILN_FAIL("linalg.eigh", batch,
              ": The algorithm failed to converge because the input matrix is ill-conditioned or has too many "
              "repeated eigenvalues (error code: ",
              info, ").");
  }
}

// ---------------------------------------------------------------- linalg_matrix_exp

ValueList matrix_exp_meta(const OpArgs& args) {
  const Tensor& a = args.tensor(0);
  check_square(a, "linalg.matrix_exp");
  KILN_USER_CHECK(is_floating(a.dtype()), "matrix_exp: Expected a floating point or complex tensor as input. Got ",
                  pointwise::aten_type_name(a.dtype()));
  KILN_USER_CHECK(a.dtype() == DType::Float32 || a.dtype() == DType::Float64,
                  "\"linalg_matrix_exp\" not implemented for '", pointwise::aten_type_name(a.dtype()), "'");
  return one(Tensor::meta(a.sizes(), a.dtype()));
}

void gemm(int64_t n, const double* a, const double* b, double* c) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(n), int(n), 1.0, a, int(n), b, int(n), 0.0, c,
              int(n));
}

// exp(a) of one n x n matrix in float64: a scaled by 2^-s to a 1-norm of at
// most 1/2, the Taylor series to degree 18 in Horner's form (its remainder
// there is below 1e-22, under float64's rounding), then s squarings.
// PyTorch picks among Taylor degrees by dtype and norm and computes in the
// input's dtype; in float64 the two agree to rounding, and a float32 result
// here is the exact one rounded once.
void expm(const double* a, double* out, int64_t n) {
  double norm = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    double col = 0.0;
    for (int64_t i = 0; i < n; ++i) col += std::abs(a[i * n + j]);
    norm = std::max(norm, col);
  }
  int squarings = 0;
  // Non-finite entries skip the scaling and propagate through the series.
  if (std::isfinite(norm) && norm > 0.5) squarings = int(std::ceil(std::log2(norm / 0.5)));
  double scale = std::ldexp(1.0, -squarings);
  size_t nn = size_t(n * n);
  std::vector<double> x(nn), t(nn), tmp(nn);
  for (size_t i = 0; i < nn; ++i) x[i] = a[i] * scale;
  constexpr int kDegree = 18;
  // t = I + x/18, then t = I + (x t)/k for k = 17 .. 1.
  for (size_t i = 0; i < nn; ++i) t[i] = x[i] / kDegree;
  for (int64_t i = 0; i < n; ++i) t[size_t(i * n + i)] += 1.0;
  for (int k = kDegree - 1; k >= 1; --k) {
    gemm(n, x.data(), t.data(), tmp.data());
    for (size_t i = 0; i < nn; ++i) t[i] = tmp[i] / k;
    for (int64_t i = 0; i < n; ++i) t[size_t(i * n + i)] += 1.0;
  }
  for (int s = 0; s < squarings; ++s) {
    gemm(n, t.data(), t.data(), tmp.data());
    t.swap(tmp);
  }
  std::copy(t.begin(), t.end(), out);
}

void matrix_exp_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  const Tensor& a = args.tensor(0);
  if (a.numel() == 0) return;
  Tensor src = a.to(DType::Float64).contiguous();
  Tensor result = Tensor::empty(a.sizes(), DType::Float64);
  int64_t n = a.size(-1), count = matrices(a);
  for (int64_t b = 0; b < count; ++b) expm(src.data<double>() + b * n * n, result.data<double>() + b * n * n, n);
  outs[0].copy_(result);
}

}  // namespace

void register_linalg_eigen_ops(OpRegistry& r) {
  add_op_with_outputs(r,
                      "aten::_linalg_eigh(Tensor A, str UPLO=\"L\", bool compute_v=True) -> "
                      "(Tensor eigenvalues, Tensor eigenvectors)",
                      eigh_meta, eigh_compute);
  add_op_with_outputs(r, "aten::linalg_matrix_exp(Tensor self) -> Tensor", matrix_exp_meta, matrix_exp_compute);
}

}  // namespace kiln
