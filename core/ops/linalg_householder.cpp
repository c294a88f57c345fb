// QR in LAPACK's compact form: geqrf (R on and above the diagonal, the
// Householder reflectors below it, their scales in tau) and
// linalg_householder_product (orgqr: the first n columns of the product of
// the reflectors), as PyTorch's CPU kernels call them. Kiln's tensors are
// row-major and LAPACK's column-major, so each matrix goes through a
// transposed copy both ways.
#include <algorithm>
#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include "core/ops/kernel_util.h"
#include "core/ops/linalg_factor.h"
#include "core/ops/pointwise_kernels.h"

extern "C" {
void sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work, const int* lwork,
             int* info);
void dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work, const int* lwork,
             int* info);
void sorgqr_(const int* m, const int* n, const int* k, float* a, const int* lda, const float* tau, float* work,
             const int* lwork, int* info);
void dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda, const double* tau, double* work,
             const int* lwork, int* info);
}

namespace kiln {
namespace {

// Runs `routine(col, tau)` on a column-major copy of each m x n matrix of
// `a` (tau: k scalars per matrix) and writes the copy back row-major to `out`.
template <class T, class R>
void each_column_major(const Tensor& a, const Tensor& out, T* tau, int64_t k, R&& routine) {
  int64_t m = a.size(-2), n = a.size(-1), count = matrices(a);
  Tensor src = a.contiguous();
  const T* sp = src.data<T>();
  T* op = out.data<T>();
  std::vector<T> col(static_cast<size_t>(std::max<int64_t>(m * n, 1)));
  for (int64_t b = 0; b < count; ++b) {
    const T* x = sp + b * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) col[size_t(j * m + i)] = x[i * n + j];
    routine(col.data(), tau + b * k);
    T* y = op + b * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) y[i * n + j] = col[size_t(j * m + i)];
  }
}

// ---------------------------------------------------------------- geqrf

ValueList geqrf_meta(const OpArgs& args) {
  const Tensor& a = args.tensor(0);
  KILN_USER_CHECK(a.dim() >= 2, "torch.geqrf: input must have at least 2 dimensions.");
  KILN_USER_CHECK(a.dtype() == DType::Float32 || a.dtype() == DType::Float64, "\"geqrf_cpu\" not implemented for '",
                  pointwise::aten_type_name(a.dtype()), "'");
  Shape tau(a.sizes().begin(), a.sizes().end() - 2);
  tau.push_back(std::min(a.size(-2), a.size(-1)));
  return ValueList{Value(Tensor::meta(a.sizes(), a.dtype())), Value(Tensor::meta(tau, a.dtype()))};
}

void geqrf_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  const Tensor& a = args.tensor(0);
  if (a.numel() == 0) return;
  int m = int(a.size(-2)), n = int(a.size(-1)), k = std::min(m, n);
  dispatch_lapack(a.dtype(), [&]<class T>() {
    each_column_major<T>(a, outs[0], outs[1].data<T>(), k, [&](T* col, T* tau) {
      int lwork = -1, info = 0;
      T size = T(0);
      if constexpr (std::is_same_v<T, float>) sgeqrf_(&m, &n, col, &m, tau, &size, &lwork, &info);
      else dgeqrf_(&m, &n, col, &m, tau, &size, &lwork, &info);
      lwork = std::max(1, int(size));
      std::vector<T> work(static_cast<size_t>(lwork));
      if constexpr (std::is_same_v<T, float>) sgeqrf_(&m, &n, col, &m, tau, work.data(), &lwork, &info);
      else dgeqrf_(&m, &n, col, &m, tau, work.data(), &lwork, &info);
    });
  });
}

// ---------------------------------------------------------------- linalg_householder_product

ValueList householder_meta(const OpArgs& args) {
  const Tensor &a = args.tensor(0), &tau = args.tensor(1);
  const char* api = "torch.linalg.householder_product";
  KILN_USER_CHECK(a.dim() >= 2, api, ": input must have at least 2 dimensions.");
  KILN_USER_CHECK(a.size(-2) >= a.size(-1), api,
                  ": input.shape[-2] must be greater than or equal to input.shape[-1]");
  KILN_USER_CHECK(tau.dim() >= 1 && a.size(-1) >= tau.size(-1), api,
                  ": input.shape[-1] must be greater than or equal to tau.shape[-1]");
  KILN_USER_CHECK(a.dim() - tau.dim() == 1, api,
                  ": Expected tau to have one dimension less than input, but got tau.ndim equal to ", tau.dim(),
                  " and input.ndim is equal to ", a.dim());
  Shape batch(a.sizes().begin(), a.sizes().end() - 2), tau_batch(tau.sizes().begin(), tau.sizes().end() - 1);
  KILN_USER_CHECK(batch == tau_batch, api,
                  ": Expected batch dimensions of tau to be equal to input.shape[:-2], but got ",
                  shape_str(tau_batch));
  KILN_USER_CHECK(a.dtype() == tau.dtype(), api, ": tau dtype ", pointwise::aten_type_name(tau.dtype()),
                  " does not match input dtype ", pointwise::aten_type_name(a.dtype()));
  KILN_USER_CHECK(a.dtype() == DType::Float32 || a.dtype() == DType::Float64, "\"orgqr_cpu\" not implemented for '",
                  pointwise::aten_type_name(a.dtype()), "'");
  return one(Tensor::meta(a.sizes(), a.dtype()));
}

void householder_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  const Tensor &a = args.tensor(0), &tau = args.tensor(1);
  if (a.numel() == 0) return;
  int m = int(a.size(-2)), n = int(a.size(-1)), k = int(tau.size(-1));
  Tensor scales = tau.contiguous().clone();
  dispatch_lapack(a.dtype(), [&]<class T>() {
    each_column_major<T>(a, outs[0], scales.data<T>(), k, [&](T* col, T* t) {
      int lwork = -1, info = 0;
      T size = T(0);
      if constexpr (std::is_same_v<T, float>) sorgqr_(&m, &n, &k, col, &m, t, &size, &lwork, &info);
      else dorgqr_(&m, &n, &k, col, &m, t, &size, &lwork, &info);
      lwork = std::max(1, int(size));
      std::vector<T> work(static_cast<size_t>(lwork));
      if constexpr (std::is_same_v<T, float>) sorgqr_(&m, &n, &k, col, &m, t, work.data(), &lwork, &info);
      else dorgqr_(&m, &n, &k, col, &m, t, work.data(), &lwork, &info);
    });
  });
}

}  // namespace

void register_linalg_householder_ops(OpRegistry& r) {
  add_op_with_outputs(r, "aten::geqrf(Tensor self) -> (Tensor a, Tensor tau)", geqrf_meta, geqrf_compute);
  add_op_with_outputs(r, "aten::linalg_householder_product(Tensor input, Tensor tau) -> Tensor", householder_meta,
                      householder_compute);
}

}  // namespace kiln
