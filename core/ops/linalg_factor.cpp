// Cholesky, triangular solves and inverses through OpenBLAS's LAPACK, as
// PyTorch's CPU kernels call LAPACK: linalg_cholesky_ex (potrf),
// linalg_solve_triangular (trsm), cholesky_inverse (potri), linalg_inv_ex
// (getrf + getrs against the identity, as linalg.inv is linalg.solve(A, I)),
// linalg_lu_factor_ex (getrf, pivots kept 1-based as LAPACK gives them),
// lu_unpack and linalg_lu (the two together, as ATen's structured kernel),
// linalg_lu_solve (getrs), _linalg_det and _linalg_slogdet (getrf, then the
// diagonal's product or log-sum with the permutation's sign).
// Kiln's tensors are row-major and LAPACK's column-major, so each routine sees
// the transpose: a row-major lower triangle is a column-major upper one.
#include "core/ops/linalg_factor.h"

#include <cblas.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "core/ops/kernel_util.h"
#include "core/ops/pointwise_kernels.h"

extern "C" {
// The trailing size_t is the hidden length of Fortran character arguments.
void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info, size_t);
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info, size_t);
void spotri_(const char* uplo, const int* n, float* a, const int* lda, int* info, size_t);
void dpotri_(const char* uplo, const int* n, double* a, const int* lda, int* info, size_t);
void sgetrf_(const int* m, const int* n, float* a, const int* lda, int* ipiv, int* info);
void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void sgetrs_(const char* trans, const int* n, const int* nrhs, const float* a, const int* lda, const int* ipiv,
             float* b, const int* ldb, int* info, size_t);
void dgetrs_(const char* trans, const int* n, const int* nrhs, const double* a, const int* lda, const int* ipiv,
             double* b, const int* ldb, int* info, size_t);
}

namespace kiln {

void check_linalg_errors(const Tensor& info, std::string_view api, bool matrix_input) {
  if (info.numel() == 0) return;
  Tensor flat = info.to(DType::Int32).contiguous();
  const int32_t* p = flat.data<int32_t>();
  for (int64_t b = 0; b < flat.numel(); ++b) {
    if (p[b] == 0) continue;
    std::string batch = matrix_input ? "" : ": (Batch element " + std::to_string(b) + ")";
    KILN_USER_CHECK(p[b] >= 0, api, batch, ": Argument ", -p[b], " has illegal value. Most certainly there is a bug in the implementation calling the backend library.");
    if (api.find("inv") != std::string_view::npos)
      KILN_FAIL(api, batch, ": The diagonal element ", p[b],
                " is zero, the inversion could not be completed because the input matrix is singular.");
    if (api.find("cholesky") != std::string_view::npos)
      KILN_FAIL(api, batch,
                ": The factorization could not be completed because the input is not positive-definite (the "
                "leading minor of order ",
                p[b], " is not positive-definite).");
    if (api.find("lu_factor") != std::string_view::npos)
      KILN_FAIL(api, batch, ": U[", p[b], ",", p[b],
                "] is zero and using it on lu_solve would result in a division by zero. If you still want to "
                "perform the factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)");
    KILN_FAIL(api, batch, ": The solver failed because the input matrix is singular.");
  }
}

namespace {

// ATen's checkIsMatrix / squareCheckInputs.
void check_matrix(const Tensor& t, std::string_view api, std::string_view name) {
  KILN_USER_CHECK(t.dim() >= 2, api, ": The input tensor ", name, " must have at least 2 dimensions.");
}

void check_square(const Tensor& t, std::string_view api, std::string_view name = "A") {
  check_matrix(t, api, name);
  KILN_USER_CHECK(t.size(-1) == t.size(-2), api, ": ", name, " must be batches of square matrices, but they are ",
                  t.size(-2), " by ", t.size(-1), " matrices");
}

// checkFloatingOrComplex, then the dispatch macro's refusal of the dtypes
// LAPACK has no routine for (float16, bfloat16).
void check_lapack_dtype(const Tensor& t, std::string_view api, std::string_view kernel) {
  KILN_USER_CHECK(is_floating(t.dtype()), api, ": Expected a floating point or complex tensor as input. Got ",
                  pointwise::aten_type_name(t.dtype()));
  KILN_USER_CHECK(t.dtype() == DType::Float32 || t.dtype() == DType::Float64, "\"", kernel,
                  "\" not implemented for '", pointwise::aten_type_name(t.dtype()), "'");
}

Shape batch_of(const Tensor& t) { return Shape(t.sizes().begin(), t.sizes().end() - 2); }

Shape with_matrix(Shape batch, int64_t rows, int64_t cols) {
  batch.push_back(rows);
  batch.push_back(cols);
  return batch;
}

template <class T>
void potrf(char uplo, int n, T* a, int* info) {
  if constexpr (std::is_same_v<T, float>) spotrf_(&uplo, &n, a, &n, info, 1);
  else dpotrf_(&uplo, &n, a, &n, info, 1);
}

template <class T>
void potri(char uplo, int n, T* a, int* info) {
  if constexpr (std::is_same_v<T, float>) spotri_(&uplo, &n, a, &n, info, 1);
  else dpotri_(&uplo, &n, a, &n, info, 1);
}

// Zeroes the triangle above (upper == false) or below the diagonal of each
// row-major n x n matrix.
template <class T>
void zero_other_triangle(T* a, int64_t count, int64_t n, bool upper) {
  for (int64_t b = 0; b < count; ++b)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        if (upper ? j < i : j > i) a[b * n * n + i * n + j] = T(0);
}

// ---------------------------------------------------------------- linalg_cholesky_ex

ValueList cholesky_meta(const OpArgs& args) {
  const Tensor& a = args.tensor(0);
  check_square(a, "linalg.cholesky");
  check_lapack_dtype(a, "linalg.cholesky", "cholesky_cpu");
  return ValueList{Value(Tensor::meta(a.sizes(), a.dtype())), Value(Tensor::meta(batch_of(a), DType::Int32))};
}

void cholesky_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  const Tensor& a = args.tensor(0);
  bool upper = args.boolean(1), check_errors = args.boolean(2);
  const Tensor& l = outs[0];
  int32_t* info = outs[1].data<int32_t>();
  int64_t n = a.size(-1), count = matrices(a);
  if (n == 0) {
    std::fill(info, info + count, 0);
  } else {
    l.copy_(a);
    dispatch_lapack(a.dtype(), [&]<class T>() {
      T* p = l.data<T>();
      for (int64_t b = 0; b < count; ++b) {
        int got = 0;
        // LAPACK reads the row-major lower triangle as a column-major upper one.
        potrf<T>(upper ? 'L' : 'U', int(n), p + b * n * n, &got);
        info[b] = got;
      }
      zero_other_triangle(p, count, n, upper);
    });
  }
  if (check_errors) check_linalg_errors(outs[1], "linalg.cholesky_ex", a.dim() == 2);
}

// ---------------------------------------------------------------- linalg_solve_triangular

struct SolveShapes {
  Shape a, out;
};

SolveShapes solve_shapes(const Tensor& a, const Tensor& b, bool left) {
  const char* api = "linalg.solve_triangular";
  check_square(a, api);
  check_matrix(b, api, "B");
  KILN_USER_CHECK(left ? a.size(-2) == b.size(-2) : a.size(-1) == b.size(-1), api,
                  ": Incompatible shapes of A and B for the equation ", left ? "AX = B" : "XA = B", " (", a.size(-2),
                  "x", a.size(-1), " and ", b.size(-2), "x", b.size(-1), ")");
  KILN_USER_CHECK(a.dtype() == DType::Float32 || a.dtype() == DType::Float64,
                  "\"triangular_solve_cpu\" not implemented for '", pointwise::aten_type_name(a.dtype()), "'");
  Shape batch = broadcast_shapes(batch_of(a), batch_of(b));
  return SolveShapes{with_matrix(batch, a.size(-2), a.size(-1)), with_matrix(batch, b.size(-2), b.size(-1))};
}

ValueList solve_triangular_meta(const OpArgs& args) {
  const Tensor& a = args.tensor(0);
  SolveShapes s = solve_shapes(a, args.tensor(1), args.boolean(3));
  // The result is A's dtype: ATen allocates it from A and copies B in.
  return one(Tensor::meta(s.out, a.dtype()));
}

void solve_triangular_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  const Tensor &a = args.tensor(0), &b = args.tensor(1);
  bool upper = args.boolean(2), left = args.boolean(3), unit = args.boolean(4);
  SolveShapes s = solve_shapes(a, b, left);
  const Tensor& x = outs[0];
  if (x.numel() == 0) return;
  x.copy_(b.expand(s.out));
  Tensor am = a.expand(s.a).contiguous();
  int64_t n = a.size(-1), rows = x.size(-2), cols = x.size(-1), count = matrices(x);
  dispatch_lapack(a.dtype(), [&]<class T>() {
    const T* ap = am.data<T>();
    T* xp = x.data<T>();
    for (int64_t i = 0; i < count; ++i) {
      auto side = left ? CblasLeft : CblasRight;
      auto uplo = upper ? CblasUpper : CblasLower;
      auto diag = unit ? CblasUnit : CblasNonUnit;
      if constexpr (std::is_same_v<T, float>)
        cblas_strsm(CblasRowMajor, side, uplo, CblasNoTrans, diag, int(rows), int(cols), 1.0f, ap + i * n * n,
                    int(n), xp + i * rows * cols, int(cols));
      else
        cblas_dtrsm(CblasRowMajor, side, uplo, CblasNoTrans, diag, int(rows), int(cols), 1.0, ap + i * n * n,
                    int(n), xp + i * rows * cols, int(cols));
    }
  });
}

// ---------------------------------------------------------------- cholesky_inverse

ValueList cholesky_inverse_meta(const OpArgs& args) {
  const Tensor& l = args.tensor(0);
  check_square(l, "cholesky_inverse");
  check_lapack_dtype(l, "cholesky_inverse", "cholesky_inverse_out_cpu");
  return one(Tensor::meta(l.sizes(), l.dtype()));
}

void cholesky_inverse_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  const Tensor& l = args.tensor(0);
  bool upper = args.boolean(1);
  const Tensor& out = outs[0];
  int64_t n = l.size(-1), count = matrices(l);
  if (out.numel() == 0) return;
  out.copy_(l);
  Tensor info = Tensor::zeros(batch_of(l), DType::Int32);
  dispatch_lapack(l.dtype(), [&]<class T>() {
    T* p = out.data<T>();
    for (int64_t b = 0; b < count; ++b) {
      int got = 0;
      potri<T>(upper ? 'L' : 'U', int(n), p + b * n * n, &got);
      info.data<int32_t>()[b] = got;
      // potri fills one triangle of the symmetric inverse; mirror it.
      T* m = p + b * n * n;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = i + 1; j < n; ++j) {
          if (upper) m[j * n + i] = m[i * n + j];
          else m[i * n + j] = m[j * n + i];
        }
    }
  });
  check_linalg_errors(info, "cholesky_inverse", l.dim() == 2);
}

// ---------------------------------------------------------------- linalg_inv_ex

ValueList inv_meta(const OpArgs& args) {
  const Tensor& a = args.tensor(0);
  check_square(a, "linalg.inv");
  check_lapack_dtype(a, "linalg.inv", "linalg_lu_factor_ex_out");
  return ValueList{Value(Tensor::meta(a.sizes(), a.dtype())), Value(Tensor::meta(batch_of(a), DType::Int32))};
}

void inv_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  const Tensor& a = args.tensor(0);
  bool check_errors = args.boolean(1);
  const Tensor& out = outs[0];
  int32_t* info = outs[1].data<int32_t>();
  int64_t n = a.size(-1), count = matrices(a);
  std::fill(info, info + count, 0);
  if (out.numel() > 0) {
    Tensor lu = a.contiguous().clone();
    std::vector<int> pivots(static_cast<size_t>(n));
    dispatch_lapack(a.dtype(), [&]<class T>() {
      T* lp = lu.data<T>();
      T* op = out.data<T>();
      int ni = int(n);
      for (int64_t b = 0; b < count; ++b) {
        // LAPACK factors A^T (the row-major buffer); solving A^T Y = I there
        // leaves Y = A^-T column-major, which read row-major is A^-1.
        T* m = lp + b * n * n;
        T* y = op + b * n * n;
        int got = 0, solved = 0;
        if constexpr (std::is_same_v<T, float>) sgetrf_(&ni, &ni, m, &ni, pivots.data(), &got);
        else dgetrf_(&ni, &ni, m, &ni, pivots.data(), &got);
        std::fill(y, y + n * n, T(0));
        for (int64_t i = 0; i < n; ++i) y[i * n + i] = T(1);
        char trans = 'N';
        if constexpr (std::is_same_v<T, float>) sgetrs_(&trans, &ni, &ni, m, &ni, pivots.data(), y, &ni, &solved, 1);
        else dgetrs_(&trans, &ni, &ni, m, &ni, pivots.data(), y, &ni, &solved, 1);
        info[b] = got;
      }
    });
  }
  if (check_errors) check_linalg_errors(outs[1], "linalg.inv_ex", a.dim() == 2);
}


// ---------------------------------------------------------------- LU

// ATen's lu_factor_kernel checks, made where the kernel makes them (after the
// empty-input shortcut).
void check_lu_kernel(const Tensor& a, bool pivot) {
  KILN_USER_CHECK(pivot, "linalg.lu_factor: LU without pivoting is not implemented on the CPU");
  KILN_USER_CHECK(a.dtype() == DType::Float32 || a.dtype() == DType::Float64,
                  "\"lu_cpu\" not implemented for '", pointwise::aten_type_name(a.dtype()), "'");
}

Shape pivots_shape(const Tensor& a) {
  Shape s = batch_of(a);
  s.push_back(std::min(a.size(-2), a.size(-1)));
  return s;
}

// getrf on each matrix of `a` into lu (row-major, a's shape), pivots and info.
// LAPACK needs column-major storage, so each matrix goes through a transposed
// copy: factoring the row-major buffer as it is would factor A^T.
void lu_factor_into(const Tensor& a, const Tensor& lu, const Tensor& pivots, const Tensor& info) {
  int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n), count = matrices(a);
  int32_t* ip = info.data<int32_t>();
  if (a.numel() == 0) {
    std::fill(ip, ip + info.numel(), 0);
    return;
  }
  Tensor src = a.contiguous();
  dispatch_lapack(a.dtype(), [&]<class T>() {
    const T* sp = src.data<T>();
    T* lp = lu.data<T>();
    int32_t* pp = pivots.data<int32_t>();
    std::vector<T> col(static_cast<size_t>(m * n));
    std::vector<int> piv(static_cast<size_t>(k));
    int mi = int(m), ni = int(n);
    for (int64_t b = 0; b < count; ++b) {
      const T* x = sp + b * m * n;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) col[size_t(j * m + i)] = x[i * n + j];
      int got = 0;
      if constexpr (std::is_same_v<T, float>) sgetrf_(&mi, &ni, col.data(), &mi, piv.data(), &got);
      else dgetrf_(&mi, &ni, col.data(), &mi, piv.data(), &got);
      T* y = lp + b * m * n;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) y[i * n + j] = col[size_t(j * m + i)];
      std::copy(piv.begin(), piv.end(), pp + b * k);
      ip[b] = got;
    }
  });
}

ValueList lu_factor_meta(const OpArgs& args) {
  const Tensor& a = args.tensor(0);
  KILN_USER_CHECK(a.dim() >= 2, "torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: ",
                  shape_str(a.sizes()), " instead");
  return ValueList{Value(Tensor::meta(a.sizes(), a.dtype())), Value(Tensor::meta(pivots_shape(a), DType::Int32)),
                   Value(Tensor::meta(batch_of(a), DType::Int32))};
}

void lu_factor_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  const Tensor& a = args.tensor(0);
  if (a.numel() > 0) check_lu_kernel(a, args.boolean(1));
  lu_factor_into(a, outs[0], outs[1], outs[2]);
  if (args.boolean(2)) check_linalg_errors(outs[2], "torch.linalg.lu_factor_ex", a.dim() == 2);
}

// P (m x m; shape [0] without pivots), L (m x k, unit lower) and U (k x n) as
// ATen's lu_unpack shapes them.
ValueList unpack_shapes(const Tensor& lu, bool data, bool pivots) {
  int64_t m = lu.size(-2), n = lu.size(-1), k = std::min(m, n);
  Shape batch = batch_of(lu);
  auto make = [&](bool on, int64_t rows, int64_t cols) {
    return Value(Tensor::meta(on ? with_matrix(batch, rows, cols) : Shape{0}, lu.dtype()));
  };
  return ValueList{make(pivots, m, m), make(data, m, k), make(data, k, n)};
}

void lu_unpack_into(const Tensor& lu, const Tensor& pivots, bool data, bool unpack_pivots,
                    const std::vector<Tensor>& outs) {
  int64_t m = lu.size(-2), n = lu.size(-1), k = std::min(m, n), count = matrices(lu);
  if (data && outs[1].numel() + outs[2].numel() > 0) {
    // In double whatever LU's dtype, then cast back: exact for float32/float64.
    Tensor src = lu.to(DType::Float64).contiguous();
    Tensor l = Tensor::zeros(outs[1].sizes(), DType::Float64), u = Tensor::zeros(outs[2].sizes(), DType::Float64);
    const double* s = src.data<double>();
    double *lp = l.data<double>(), *up = u.data<double>();
    for (int64_t b = 0; b < count; ++b)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double x = s[b * m * n + i * n + j];
          if (j < i && j < k) lp[b * m * k + i * k + j] = x;
          if (j == i) lp[b * m * k + i * k + j] = 1.0;
          if (j >= i && i < k) up[b * k * n + i * n + j] = x;
        }
    outs[1].copy_(l);
    outs[2].copy_(u);
  }
  if (!unpack_pivots || outs[0].numel() == 0) return;
  KILN_USER_CHECK(pivots.numel() == count * k, "torch.lu_unpack: expected pivots of shape ",
                  shape_str(pivots_shape(lu)), ", got ", shape_str(pivots.sizes()));
  Tensor piv = pivots.contiguous();
  const int32_t* pp = piv.data<int32_t>();
  Tensor p = Tensor::zeros(outs[0].sizes(), DType::Float64);
  double* out = p.data<double>();
  std::vector<int64_t> perm(static_cast<size_t>(m));
  for (int64_t b = 0; b < count; ++b) {
    for (int64_t i = 0; i < m; ++i) perm[size_t(i)] = i;
    // LAPACK's row interchanges in order: row i was swapped with row pivots[i] - 1.
    for (int64_t i = 0; i < k; ++i) {
      int64_t to = int64_t(pp[b * k + i]) - 1;
      KILN_USER_CHECK(to >= 0 && to < m,
                      "pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive. Did you use the "
                      "pivots from torch.linalg.lu_factor?");
      std::swap(perm[size_t(i)], perm[size_t(to)]);
    }
    // A = P L U: row j of L U is row perm[j] of A.
    for (int64_t j = 0; j < m; ++j) out[b * m * m + perm[size_t(j)] * m + j] = 1.0;
  }
  outs[0].copy_(p);
}

ValueList lu_unpack_meta(const OpArgs& args) {
  const Tensor& lu = args.tensor(0);
  KILN_USER_CHECK(lu.dim() >= 2, "torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: ",
                  shape_str(lu.sizes()), " instead");
  bool unpack_pivots = args.boolean(3);
  KILN_USER_CHECK(!unpack_pivots || args.tensor(1).dtype() == DType::Int32,
                  "torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype.\n"
                  "Note: this function is intended to be used with the output produced by torch.linalg.lu_factor");
  return unpack_shapes(lu, args.boolean(2), unpack_pivots);
}

void lu_unpack_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  lu_unpack_into(args.tensor(0), args.tensor(1), args.boolean(2), args.boolean(3), outs);
}

ValueList linalg_lu_meta(const OpArgs& args) {
  const Tensor& a = args.tensor(0);
  KILN_USER_CHECK(a.dim() >= 2, "linalg.lu: Expected tensor with 2 or more dimensions. Got size: ",
                  shape_str(a.sizes()), " instead");
  return unpack_shapes(a, true, args.boolean(1));
}

void linalg_lu_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  const Tensor& a = args.tensor(0);
  bool pivot = args.boolean(1);
  if (a.numel() > 0) check_lu_kernel(a, pivot);
  Tensor lu = Tensor::empty(a.sizes(), a.dtype());
  Tensor pivots = Tensor::empty(pivots_shape(a), DType::Int32), info = Tensor::empty(batch_of(a), DType::Int32);
  lu_factor_into(a, lu, pivots, info);
  lu_unpack_into(lu, pivots, true, pivot, outs);
}


// ---------------------------------------------------------------- linalg_lu_solve

// A X = B (left) or X A = B with A = P L U as lu_factor gives it; adjoint
// solves with A^T. getrs needs LU and B column-major: each goes through a
// transposed copy. A right solve is the left one transposed: X A = B is
// A^T X^T = B^T.
ValueList lu_solve_meta(const OpArgs& args) {
  const Tensor &lu = args.tensor(0), &pivots = args.tensor(1), &b = args.tensor(2);
  bool left = args.boolean(3);
  check_square(lu, "torch.linalg.lu_solve", "LU");
  check_matrix(b, "linalg.lu_solve", "B");
  KILN_USER_CHECK(lu.size(-1) == pivots.size(-1) && pivots.dim() == lu.dim() - 1,
                  "linalg.lu_solve: Number of pivots per batch should be same as the dimension of the matrix");
  KILN_USER_CHECK(pivots.dtype() == DType::Int32,
                  "linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32");
  KILN_USER_CHECK(b.dtype() == lu.dtype(),
                  "linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type ",
                  pointwise::aten_type_name(lu.dtype()), " and B of type ", pointwise::aten_type_name(b.dtype()),
                  " instead");
  KILN_USER_CHECK(left ? b.size(-2) == lu.size(-1) : b.size(-1) == lu.size(-1),
                  "linalg.lu_solve: Incompatible shapes of A and B for the equation ",
                  left ? "AX = B" : "XA = B", " (", lu.size(-2), "x", lu.size(-1), " and ", b.size(-2), "x",
                  b.size(-1), ")");
  check_lapack_dtype(lu, "linalg.lu_solve", "lu_solve_cpu");
  Shape batch = broadcast_shapes(batch_of(lu), batch_of(b));
  return one(Tensor::meta(with_matrix(batch, b.size(-2), b.size(-1)), b.dtype()));
}

void lu_solve_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  const Tensor &lu = args.tensor(0), &pivots = args.tensor(1), &b = args.tensor(2);
  bool left = args.boolean(3), adjoint = args.boolean(4);
  const Tensor& x = outs[0];
  if (x.numel() == 0) return;
  Shape batch = batch_of(x);
  int64_t n = lu.size(-1), count = matrices(x);
  Tensor lum = lu.expand(with_matrix(batch, n, n)).contiguous();
  Shape pshape = batch;
  pshape.push_back(n);
  Tensor piv = pivots.expand(pshape).contiguous();
  // Right-hand sides as columns of an n x k column-major block: B itself for
  // a left solve (row-major B read column-major is B^T, so copy), B^T for a
  // right one (B's row-major buffer read column-major already is B^T).
  Tensor bm = b.expand(x.sizes()).contiguous();
  int64_t rows = x.size(-2), cols = x.size(-1), k = left ? cols : rows;
  char trans = (left ? adjoint : !adjoint) ? 'T' : 'N';
  dispatch_lapack(lu.dtype(), [&]<class T>() {
    const T* lp = lum.data<T>();
    const T* bp = bm.data<T>();
    T* xp = x.data<T>();
    std::vector<T> a(size_t(n * n)), rhs(size_t(n * k));
    std::vector<int> ip(static_cast<size_t>(n));
    int ni = int(n), ki = int(k);
    for (int64_t m = 0; m < count; ++m) {
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) a[size_t(j * n + i)] = lp[m * n * n + i * n + j];
      const int32_t* pp = piv.data<int32_t>() + m * n;
      std::copy(pp, pp + n, ip.begin());
      const T* src = bp + m * rows * cols;
      if (left) {
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < k; ++j) rhs[size_t(j * n + i)] = src[i * cols + j];
      } else {
        std::copy(src, src + rows * cols, rhs.begin());
      }
      int info = 0;
      if constexpr (std::is_same_v<T, float>)
        sgetrs_(&trans, &ni, &ki, a.data(), &ni, ip.data(), rhs.data(), &ni, &info, 1);
      else dgetrs_(&trans, &ni, &ki, a.data(), &ni, ip.data(), rhs.data(), &ni, &info, 1);
      T* dst = xp + m * rows * cols;
      if (left) {
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < k; ++j) dst[i * cols + j] = rhs[size_t(j * n + i)];
      } else {
        std::copy(rhs.begin(), rhs.end(), dst);
      }
    }
  });
}

// ---------------------------------------------------------------- _linalg_det, _linalg_slogdet

// PyTorch factors A^T when A is contiguous (det A^T = det A, and A's
// row-major buffer is A^T column-major: no copy), A itself otherwise. The
// value follows that choice, so it rounds as PyTorch's does; the LU and pivots
// outputs, which the backward solves with, are always those of A^T, since a
// formula cannot see the strides its input had.
struct DetFactors {
  Tensor lu, pivots;        // of A^T: the op's outputs
  Tensor value_lu, value_pivots;  // the factorization the value is read from
};

void det_factors(const Tensor& a, const Tensor& lu, const Tensor& pivots, DetFactors& f) {
  Tensor info = Tensor::empty(batch_of(a), DType::Int32);
  Tensor at = a.transpose(-2, -1);
  if (a.numel() > 0) check_lu_kernel(a, true);
  lu_factor_into(at, lu, pivots, info);
  f.lu = lu;
  f.pivots = pivots;
  if (a.is_contiguous()) {
    f.value_lu = lu;
    f.value_pivots = pivots;
  } else {
    f.value_lu = Tensor::empty(a.sizes(), a.dtype());
    f.value_pivots = Tensor::empty(pivots.sizes(), DType::Int32);
    lu_factor_into(a, f.value_lu, f.value_pivots, info);
  }
}

// ATen's lu_det_P: -1 where the pivots make an odd permutation, else 1.
Tensor permutation_sign(const Tensor& pivots, DType dtype) {
  Shape batch(pivots.sizes().begin(), pivots.sizes().end() - 1);
  int64_t n = pivots.size(-1), count = 1;
  for (int64_t s : batch) count *= s;
  Tensor piv = pivots.contiguous();
  Tensor out = Tensor::empty(batch, DType::Float64);
  double* op = out.data<double>();
  for (int64_t b = 0; b < count; ++b) {
    int64_t swaps = 0;
    for (int64_t i = 0; i < n; ++i) swaps += piv.data<int32_t>()[b * n + i] != i + 1;
    op[b] = swaps % 2 ? -1.0 : 1.0;
  }
  return out.to(dtype);
}

Tensor lu_diagonal(const Tensor& lu) {
  return invoke_tensor("aten::diagonal", {Value(lu), int64_t(0), int64_t(-2), int64_t(-1)});
}

ValueList det_meta(const OpArgs& args) {
  const Tensor& a = args.tensor(0);
  check_square(a, "linalg.det");
  KILN_USER_CHECK(is_floating(a.dtype()), "linalg.det: Expected a floating point or complex tensor as input. Got ",
                  pointwise::aten_type_name(a.dtype()));
  return ValueList{Value(Tensor::meta(batch_of(a), a.dtype())), Value(Tensor::meta(a.sizes(), a.dtype())),
                   Value(Tensor::meta(pivots_shape(a), DType::Int32))};
}

// The product of each matrix's diagonal, in order from the first element:
// ATen's prod over the strided diagonal is a plain loop (its vectorized
// reductions need contiguous rows), and so rounds like this one.
Tensor diagonal_product(const Tensor& lu) {
  Tensor diag = lu_diagonal(lu).contiguous();
  Shape batch = batch_of(lu);
  Tensor out = Tensor::empty(batch, lu.dtype());
  int64_t n = lu.size(-1), count = matrices(lu);
  dispatch_lapack(lu.dtype(), [&]<class T>() {
    const T* d = diag.data<T>();
    T* o = out.data<T>();
    for (int64_t b = 0; b < count; ++b) {
      T acc = T(1);
      for (int64_t i = 0; i < n; ++i) acc *= d[b * n + i];
      o[b] = acc;
    }
  });
  return out;
}

// The sum of each matrix's log|diag U| in the order ATen's cascade sum takes
// (SumKernel.cpp), so logabsdet is bit-equal to PyTorch's: log|diag U| is a
// contiguous row, summed as a strided row (row_sum: four interleaved lanes,
// each a four-level cascade emptied every 16 steps, leftovers into lane 0,
// then the lanes in order) when shorter than one vector, else as whole
// vectors (vectorized_inner_sum: row_sum lane by lane over the vectors, the
// scalar tail first, then the vector's lanes in order). Kiln's own sum rounds
// otherwise. Vectors are AVX2's 32 bytes, the build docs/python.md's random
// numbers follow.
template <class T>
T cascade_row_sum(const T* x, int64_t stride, int64_t size) {
  constexpr int64_t lanes = 4, levels = 4, power = 4;  // ATen's level_power for rows < 2^16
  constexpr int64_t step = int64_t(1) << power, mask = step - 1;
  const int64_t rows = size / lanes;
  T acc[levels][lanes] = {};
  int64_t i = 0;
  auto load_row = [&](int64_t row) {
    for (int64_t k = 0; k < lanes; ++k) acc[0][k] += x[(row * lanes + k) * stride];
  };
  while (i + step <= rows) {
    for (int64_t j = 0; j < step; ++j, ++i) load_row(i);
    for (int64_t j = 1; j < levels; ++j) {
      for (int64_t k = 0; k < lanes; ++k) {
        acc[j][k] += acc[j - 1][k];
        acc[j - 1][k] = T(0);
      }
      if ((i & (mask << (j * power))) != 0) break;
    }
  }
  for (; i < rows; ++i) load_row(i);
  for (int64_t j = 1; j < levels; ++j)
    for (int64_t k = 0; k < lanes; ++k) acc[0][k] += acc[j][k];
  for (int64_t r = rows * lanes; r < size; ++r) acc[0][0] += x[r * stride];
  for (int64_t k = 1; k < lanes; ++k) acc[0][0] += acc[0][k];
  return acc[0][0];
}

Tensor log_abs_diagonal_sum(const Tensor& lu) {
  Tensor logs = invoke_tensor("aten::log", {Value(invoke_tensor("aten::abs", {Value(lu_diagonal(lu))}))}).contiguous();
  Tensor out = Tensor::empty(batch_of(lu), lu.dtype());
  int64_t n = lu.size(-1), count = matrices(lu);
  dispatch_lapack(lu.dtype(), [&]<class T>() {
    constexpr int64_t width = 32 / int64_t(sizeof(T));
    for (int64_t b = 0; b < count; ++b) {
      const T* x = logs.data<T>() + b * n;
      if (n < width) {
        out.data<T>()[b] = cascade_row_sum(x, 1, n);
        continue;
      }
      int64_t vectors = n / width;
      T total = T(0);
      for (int64_t k = vectors * width; k < n; ++k) total += x[k];
      for (int64_t lane = 0; lane < width; ++lane) total += cascade_row_sum(x + lane, width, vectors);
      out.data<T>()[b] = total;
    }
  });
  return out;
}

void det_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  const Tensor& a = args.tensor(0);
  DetFactors f;
  det_factors(a, outs[1], outs[2], f);
  // det = det_P * prod(diag U); +-1 times the product is exact (-1 * 0 is -0).
  Tensor sign = permutation_sign(f.value_pivots, a.dtype());
  outs[0].copy_(invoke_tensor("aten::mul.Tensor", {Value(sign), Value(diagonal_product(f.value_lu))}));
}

ValueList slogdet_meta(const OpArgs& args) {
  const Tensor& a = args.tensor(0);
  check_square(a, "linalg.slogdet");
  KILN_USER_CHECK(is_floating(a.dtype()), "linalg.slogdet: Expected a floating point or complex tensor as input. Got ",
                  pointwise::aten_type_name(a.dtype()));
  KILN_USER_CHECK(a.dtype() == DType::Float32 || a.dtype() == DType::Float64,
                  "linalg.slogdet: Low precision dtypes not supported. Got ", pointwise::aten_type_name(a.dtype()));
  return ValueList{Value(Tensor::meta(batch_of(a), a.dtype())), Value(Tensor::meta(batch_of(a), a.dtype())),
                   Value(Tensor::meta(a.sizes(), a.dtype())), Value(Tensor::meta(pivots_shape(a), DType::Int32))};
}

void slogdet_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  const Tensor& a = args.tensor(0);
  DetFactors f;
  det_factors(a, outs[2], outs[3], f);
  // sign = prod(sgn(diag U)) * det_P; logabsdet = sum(log|diag U|), as ATen.
  Tensor signs = invoke_tensor("aten::sgn", {Value(f.value_lu)});
  outs[0].copy_(invoke_tensor("aten::mul.Tensor", {Value(diagonal_product(signs)),
                                                   Value(permutation_sign(f.value_pivots, a.dtype()))}));
  outs[1].copy_(log_abs_diagonal_sum(f.value_lu));
}

}  // namespace

void register_linalg_factor_ops(OpRegistry& r) {
  add_op_with_outputs(r,
                      "aten::linalg_cholesky_ex(Tensor self, *, bool upper=False, bool check_errors=False) -> "
                      "(Tensor L, Tensor info)",
                      cholesky_meta, cholesky_compute);
  add_op_with_outputs(r,
                      "aten::linalg_solve_triangular(Tensor self, Tensor B, *, bool upper, bool left=True, "
                      "bool unitriangular=False) -> Tensor",
                      solve_triangular_meta, solve_triangular_compute);
  add_op_with_outputs(r, "aten::cholesky_inverse(Tensor self, bool upper=False) -> Tensor", cholesky_inverse_meta,
                      cholesky_inverse_compute);
  add_op_with_outputs(r, "aten::linalg_inv_ex(Tensor A, *, bool check_errors=False) -> (Tensor inverse, Tensor info)",
                      inv_meta, inv_compute);
  add_op_with_outputs(r,
                      "aten::linalg_lu_factor_ex(Tensor A, *, bool pivot=True, bool check_errors=False) -> "
                      "(Tensor LU, Tensor pivots, Tensor info)",
                      lu_factor_meta, lu_factor_compute);
  add_op_with_outputs(r,
                      "aten::lu_unpack(Tensor LU_data, Tensor LU_pivots, bool unpack_data=True, "
                      "bool unpack_pivots=True) -> (Tensor P, Tensor L, Tensor U)",
                      lu_unpack_meta, lu_unpack_compute);
  add_op_with_outputs(r, "aten::linalg_lu(Tensor A, *, bool pivot=True) -> (Tensor P, Tensor L, Tensor U)",
                      linalg_lu_meta, linalg_lu_compute);
  add_op_with_outputs(r,
                      "aten::linalg_lu_solve(Tensor LU, Tensor pivots, Tensor B, *, bool left=True, "
                      "bool adjoint=False) -> Tensor",
                      lu_solve_meta, lu_solve_compute);
  add_op_with_outputs(r, "aten::_linalg_det(Tensor A) -> (Tensor result, Tensor LU, Tensor pivots)", det_meta,
                      det_compute);
  add_op_with_outputs(r,
                      "aten::_linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet, Tensor LU, Tensor pivots)",
                      slogdet_meta, slogdet_compute);
}

}  // namespace kiln
