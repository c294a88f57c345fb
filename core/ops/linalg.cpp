// Matrix products: mm, bmm, addmm, baddbmm, mv, addmv, dot, matmul, linear; and
// linalg_qr (Householder, LAPACK's sign convention).
// Every product funnels into batched_product(), which hands strided views to
// gemm (OpenBLAS for float32/float64; float16/bfloat16 go through float32 and
// round once, as PyTorch's CPU kernels accumulate in float32).
#include <cmath>
#include <type_traits>

#include "core/ops/gemm.h"
#include "core/ops/kernel_util.h"

namespace kiln {
namespace {

void check_product_dtype(DType t, std::string_view op) {
  KILN_USER_CHECK(t != DType::Bool, "\"", op, "\" not implemented for 'Bool'");
}

void check_same_dtype(const Tensor& a, const Tensor& b, std::string_view what) {
  KILN_USER_CHECK(a.dtype() == b.dtype(), "expected ", what, " to have the same dtype, but got: ",
                  dtype_name(a.dtype()), " != ", dtype_name(b.dtype()));
}

// PyTorch refuses float alpha/beta for integer products rather than truncating them.
void check_scalar_kinds(DType t, const Scalar& beta, const Scalar& alpha) {
  if (is_floating(t)) return;
  KILN_USER_CHECK(!beta.is_float(), "For integral input tensors, argument beta must not be a floating point number.");
  KILN_USER_CHECK(!alpha.is_float(), "For integral input tensors, argument alpha must not be a floating point number.");
}

// out (contiguous [B, n, p]) = beta * out + alpha * a[B, n, k] @ b[B, k, p];
// a and b may have any strides, including 0 for broadcast batches.
void batched_product(const Tensor& a, const Tensor& b, const Tensor& out, const Scalar& alpha,
                     const Scalar& beta) {
  KILN_CHECK(a.dim() == 3 && b.dim() == 3 && out.dim() == 3 && out.is_contiguous());
  if (out.numel() == 0) return;
  DType t = out.dtype();
  if (is_reduced_float(t)) {
    Tensor acc = beta.to_double() == 0.0 ? Tensor::empty(out.sizes(), DType::Float32) : out.to(DType::Float32);
    batched_product(a.to(DType::Float32), b.to(DType::Float32), acc, alpha, beta);
    out.copy_(acc);
    return;
  }
  int64_t batch = out.size(0), n = out.size(1), p = out.size(2), k = a.size(2);
  dispatch_compute(t, "matmul", [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) {
      KILN_FAIL("\"addmm_impl_cpu_\" not implemented for 'Bool'");
    } else {
      gemm::MatRef<T> ma{a.data<T>(), a.stride(1), a.stride(2)};
      gemm::MatRef<T> mb{b.data<T>(), b.stride(1), b.stride(2)};
      gemm::gemm_batched<T>(batch, n, p, k, alpha.to<T>(), ma, a.stride(0), mb, b.stride(0), beta.to<T>(),
                            out.data<T>(), n * p, p);
    }
  });
}

// A 2-D product as a batch of one.
void product_2d(const Tensor& a, const Tensor& b, const Tensor& out, const Scalar& alpha, const Scalar& beta) {
  batched_product(a.unsqueeze(0), b.unsqueeze(0), out.unsqueeze(0), alpha, beta);
}

// Fills `out` with `self` broadcast to out's shape, for the add* ops' beta term.
void fill_beta_term(const Tensor& out, const Tensor& self, const Scalar& beta, std::string_view op) {
  if (beta.to_double() == 0.0) return;  // self is ignored, NaN included
  KILN_USER_CHECK(broadcast_shapes(self.sizes(), out.sizes()) == out.sizes(), op, ": the size of self ",
                  shape_str(self.sizes()), " cannot be broadcast to the result size ", shape_str(out.sizes()));
  out.copy_(self);
}

// ---------------------------------------------------------------- mm / addmm

void check_mm(const Tensor& a, const Tensor& b) {
  KILN_USER_CHECK(a.dim() == 2, "self must be a matrix");
  KILN_USER_CHECK(b.dim() == 2, "mat2 must be a matrix");
  KILN_USER_CHECK(a.dtype() == b.dtype(), "expected m1 and m2 to have the same dtype, but got: ",
                  dtype_name(a.dtype()), " != ", dtype_name(b.dtype()));
  KILN_USER_CHECK(a.size(1) == b.size(0), "mat1 and mat2 shapes cannot be multiplied (", a.size(0), "x",
                  a.size(1), " and ", b.size(0), "x", b.size(1), ")");
  check_product_dtype(a.dtype(), "addmm_impl_cpu_");
}

ValueList mm_meta(const OpArgs& args) {
  const Tensor &a = args.tensor(0), &b = args.tensor(1);
  check_mm(a, b);
  return one(Tensor::meta({a.size(0), b.size(1)}, a.dtype()));
}

void mm_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  product_2d(args.tensor(0), args.tensor(1), outs[0], Scalar(int64_t(1)), Scalar(int64_t(0)));
}

// addmm(self, mat1, mat2, *, beta, alpha) and addbmm-like ops read beta at 3, alpha at 4.
ValueList addmm_meta(const OpArgs& args) {
  const Tensor &self = args.tensor(0), &a = args.tensor(1), &b = args.tensor(2);
  KILN_USER_CHECK(a.dim() == 2, "mat1 must be a matrix, got ", a.dim(), "-D tensor");
  KILN_USER_CHECK(b.dim() == 2, "mat2 must be a matrix, got ", b.dim(), "-D tensor");
  check_mm(a, b);
  KILN_USER_CHECK(self.dtype() == a.dtype(), "self and mat2 must have the same dtype, but got ",
                  dtype_name(self.dtype()), " and ", dtype_name(a.dtype()));
  check_scalar_kinds(a.dtype(), args.scalar(3), args.scalar(4));
  Shape out{a.size(0), b.size(1)};
  KILN_USER_CHECK(broadcast_shapes(self.sizes(), out) == out, "addmm: the size of self ", shape_str(self.sizes()),
                  " cannot be broadcast to the result size ", shape_str(out));
  return one(Tensor::meta(out, a.dtype()));
}

void addmm_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  fill_beta_term(outs[0], args.tensor(0), args.scalar(3), "addmm");
  product_2d(args.tensor(1), args.tensor(2), outs[0], args.scalar(4), args.scalar(3));
}

// ---------------------------------------------------------------- bmm / baddbmm

void check_bmm(const Tensor& a, const Tensor& b) {
  KILN_USER_CHECK(a.dim() == 3, "batch1 must be a 3D tensor");
  KILN_USER_CHECK(b.dim() == 3, "batch2 must be a 3D tensor");
  KILN_USER_CHECK(b.size(0) == a.size(0) && b.size(1) == a.size(2),
                  "Expected size for first two dimensions of batch2 tensor to be: [", a.size(0), ", ", a.size(2),
                  "] but got: [", b.size(0), ", ", b.size(1), "].");
  check_same_dtype(a, b, "batch1 and batch2");
  check_product_dtype(a.dtype(), "bmm");
}

ValueList bmm_meta(const OpArgs& args) {
  const Tensor &a = args.tensor(0), &b = args.tensor(1);
  check_bmm(a, b);
  return one(Tensor::meta({a.size(0), a.size(1), b.size(2)}, a.dtype()));
}

void bmm_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  batched_product(args.tensor(0), args.tensor(1), outs[0], Scalar(int64_t(1)), Scalar(int64_t(0)));
}

ValueList baddbmm_meta(const OpArgs& args) {
  const Tensor &self = args.tensor(0), &a = args.tensor(1), &b = args.tensor(2);
  check_bmm(a, b);
  KILN_USER_CHECK(self.dtype() == a.dtype(), "self and batch1 must have the same dtype, but got ",
                  dtype_name(self.dtype()), " and ", dtype_name(a.dtype()));
  check_scalar_kinds(a.dtype(), args.scalar(3), args.scalar(4));
  Shape out{a.size(0), a.size(1), b.size(2)};
  KILN_USER_CHECK(broadcast_shapes(self.sizes(), out) == out, "baddbmm: the size of self ",
                  shape_str(self.sizes()), " cannot be broadcast to the result size ", shape_str(out));
  return one(Tensor::meta(out, a.dtype()));
}

void baddbmm_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  fill_beta_term(outs[0], args.tensor(0), args.scalar(3), "baddbmm");
  batched_product(args.tensor(1), args.tensor(2), outs[0], args.scalar(4), args.scalar(3));
}

// ---------------------------------------------------------------- mv / addmv / dot

void check_mv(const Tensor& mat, const Tensor& vec, int64_t self_dim) {
  KILN_USER_CHECK(mat.dim() == 2 && vec.dim() == 1 && self_dim <= 1, "vector + matrix @ vector expected, got ",
                  self_dim, ", ", mat.dim(), ", ", vec.dim());
  KILN_USER_CHECK(mat.size(1) == vec.size(0), "size mismatch, got input (", mat.size(0), "), mat (", mat.size(0),
                  "x", mat.size(1), "), vec (", vec.size(0), ")");
  check_same_dtype(mat, vec, "mat and vec");
  check_product_dtype(mat.dtype(), "addmv_impl_cpu");
}

// mat[n, m] @ vec[m] as a product with a one-column right operand.
void mv_into(const Tensor& mat, const Tensor& vec, const Tensor& out, const Scalar& alpha, const Scalar& beta) {
  product_2d(mat, vec.unsqueeze(1), out.unsqueeze(1), alpha, beta);
}

ValueList mv_meta(const OpArgs& args) {
  const Tensor &mat = args.tensor(0), &vec = args.tensor(1);
  check_mv(mat, vec, 1);
  return one(Tensor::meta({mat.size(0)}, mat.dtype()));
}

void mv_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  mv_into(args.tensor(0), args.tensor(1), outs[0], Scalar(int64_t(1)), Scalar(int64_t(0)));
}

ValueList addmv_meta(const OpArgs& args) {
  const Tensor &self = args.tensor(0), &mat = args.tensor(1), &vec = args.tensor(2);
  check_mv(mat, vec, self.dim());
  check_same_dtype(self, mat, "self and mat");
  check_scalar_kinds(mat.dtype(), args.scalar(3), args.scalar(4));
  KILN_USER_CHECK(self.numel() == 1 || (self.dim() == 1 && self.size(0) == mat.size(0)),
                  "size mismatch, got input (", self.dim() ? self.size(0) : 1, "), mat (", mat.size(0), "x",
                  mat.size(1), "), vec (", vec.size(0), ")");
  return one(Tensor::meta({mat.size(0)}, mat.dtype()));
}

void addmv_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  fill_beta_term(outs[0], args.tensor(0), args.scalar(3), "addmv");
  mv_into(args.tensor(1), args.tensor(2), outs[0], args.scalar(4), args.scalar(3));
}

void check_dot(const Tensor& a, const Tensor& b) {
  KILN_USER_CHECK(a.dim() == 1 && b.dim() == 1, "1D tensors expected, but got ", a.dim(), "D and ", b.dim(),
                  "D tensors");
  KILN_USER_CHECK(a.dtype() == b.dtype(), "dot : expected both vectors to have same dtype, but found ",
                  dtype_name(a.dtype()), " and ", dtype_name(b.dtype()));
  KILN_USER_CHECK(a.numel() == b.numel(), "inconsistent tensor size, expected tensor [", a.numel(),
                  "] and src [", b.numel(), "] to have the same number of elements, but got ", a.numel(), " and ",
                  b.numel(), " elements respectively");
  check_product_dtype(a.dtype(), "dot");
}

ValueList dot_meta(const OpArgs& args) {
  check_dot(args.tensor(0), args.tensor(1));
  return one(Tensor::meta({}, args.tensor(0).dtype()));
}

void dot_into(const Tensor& a, const Tensor& b, const Tensor& out) {
  product_2d(a.unsqueeze(0), b.unsqueeze(1), out.view({1, 1}), Scalar(int64_t(1)), Scalar(int64_t(0)));
}

void dot_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  dot_into(args.tensor(0), args.tensor(1), outs[0]);
}

// ---------------------------------------------------------------- matmul

// torch.matmul's case analysis, shared by the meta function and the kernel so
// the two cannot disagree about shapes.
struct MatmulPlan {
  enum class Kind { Dot, Mv, VecMat, Mm, Folded, Batched } kind;
  Shape out;    // final result shape
  Shape batch;  // broadcast batch dims (Batched only)
};

MatmulPlan plan_matmul(const Tensor& a, const Tensor& b) {
  int64_t da = a.dim(), db = b.dim();
  KILN_USER_CHECK(da >= 1 && db >= 1, "both arguments to matmul need to be at least 1D, but they are ", da,
                  "D and ", db, "D");
  using K = MatmulPlan::Kind;
  if (da == 1 && db == 1) {
    check_dot(a, b);
    return {K::Dot, {}, {}};
  }
  if (da == 2 && db == 1) {
    check_mv(a, b, 1);
    return {K::Mv, {a.size(0)}, {}};
  }
  if (da == 1 && db == 2) {
    check_mm(a.unsqueeze(0), b);
    return {K::VecMat, {b.size(1)}, {}};
  }
  if (da == 2 && db == 2) {
    check_mm(a, b);
    return {K::Mm, {a.size(0), b.size(1)}, {}};
  }
  int64_t k = a.size(-1);
  if (da >= 3 && db <= 2) {
    // Fold a's batch dims into its rows: one mm instead of a bmm of small products.
    int64_t kb = b.size(0);
    check_same_dtype(a, b, "m1 and m2");
    check_product_dtype(a.dtype(), "addmm_impl_cpu_");
    Shape out(a.sizes().begin(), a.sizes().end() - 1);
    KILN_USER_CHECK(k == kb, "mat1 and mat2 shapes cannot be multiplied (", shape_numel(out), "x", k, " and ",
                    b.size(0), "x", db == 2 ? b.size(1) : 1, ")");
    if (db == 2) out.push_back(b.size(1));
    return {K::Folded, out, {}};
  }
  int64_t n = da >= 2 ? a.size(-2) : 1;
  int64_t kb = db >= 2 ? b.size(-2) : b.size(0);
  int64_t p = db >= 2 ? b.size(-1) : 1;
  Shape ba = da > 2 ? Shape(a.sizes().begin(), a.sizes().end() - 2) : Shape{};
  Shape bb = db > 2 ? Shape(b.sizes().begin(), b.sizes().end() - 2) : Shape{};
  Shape batch = broadcast_shapes(ba, bb);
  int64_t nb = shape_numel(batch);
  KILN_USER_CHECK(kb == k, "Expected size for first two dimensions of batch2 tensor to be: [", nb, ", ", k,
                  "] but got: [", nb, ", ", kb, "].");
  check_same_dtype(a, b, "batch1 and batch2");
  check_product_dtype(a.dtype(), "bmm");
  Shape out = batch;
  if (da > 1) out.push_back(n);
  if (db > 1) out.push_back(p);
  return {K::Batched, out, batch};
}

ValueList matmul_meta(const OpArgs& args) {
  const Tensor &a = args.tensor(0), &b = args.tensor(1);
  return one(Tensor::meta(plan_matmul(a, b).out, a.dtype()));
}

// Expands x (whose last two dims are a matrix) to batch + those dims and views
// it as [B, r, c]; reshape copies only when the batch strides do not merge.
Tensor as_batch3(const Tensor& x, const Shape& batch) {
  Shape full = batch;
  full.push_back(x.size(-2));
  full.push_back(x.size(-1));
  return x.expand(full).reshape({-1, x.size(-2), x.size(-1)});
}

void matmul_into(const Tensor& a, const Tensor& b, const MatmulPlan& plan, const Tensor& out) {
  using K = MatmulPlan::Kind;
  const Scalar one_s(int64_t(1)), zero_s(int64_t(0));
  switch (plan.kind) {
    case K::Dot: return dot_into(a, b, out);
    case K::Mv: return mv_into(a, b, out, one_s, zero_s);
    case K::VecMat: return product_2d(a.unsqueeze(0), b, out.unsqueeze(0), one_s, zero_s);
    case K::Mm: return product_2d(a, b, out, one_s, zero_s);
    case K::Folded: {
      Tensor a2 = a.reshape({-1, a.size(-1)});
      Tensor b2 = b.dim() == 2 ? b : b.unsqueeze(1);
      return product_2d(a2, b2, out.view({a2.size(0), b2.size(1)}), one_s, zero_s);
    }
    case K::Batched: {
      Tensor a3 = as_batch3(a.dim() == 1 ? a.unsqueeze(0) : a, plan.batch);
      Tensor b3 = as_batch3(b.dim() == 1 ? b.unsqueeze(1) : b, plan.batch);
      return batched_product(a3, b3, out.view({a3.size(0), a3.size(1), b3.size(2)}), one_s, zero_s);
    }
  }
}

void matmul_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  const Tensor &a = args.tensor(0), &b = args.tensor(1);
  matmul_into(a, b, plan_matmul(a, b), outs[0]);
}

// ---------------------------------------------------------------- linear

// PyTorch fuses the bias into one addmm for 2-D input and contiguous 3-D input;
// elsewhere it runs matmul and then adds the bias, rounding twice in float16.
bool linear_fuses_bias(const Tensor& input, const Tensor& bias) {
  return bias.defined() && (input.dim() == 2 || (input.dim() == 3 && input.is_contiguous()));
}

Tensor weight_t(const Tensor& w) { return w.dim() == 2 ? w.t() : w; }

void check_linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  KILN_USER_CHECK(weight.dim() <= 2, "t() expects a tensor with <= 2 dimensions, but self is ", weight.dim(), "D");
  KILN_USER_CHECK(!bias.defined() || bias.dtype() == input.dtype(), "self and mat2 must have the same dtype, but got ",
                  dtype_name(bias.dtype()), " and ", dtype_name(input.dtype()));
}

ValueList linear_meta(const OpArgs& args) {
  const Tensor &input = args.tensor(0), &weight = args.tensor(1);
  Tensor bias = args.opt_tensor(2);
  check_linear(input, weight, bias);
  MatmulPlan plan = plan_matmul(input, weight_t(weight));
  if (bias.defined()) {
    KILN_USER_CHECK(broadcast_shapes(bias.sizes(), plan.out) == plan.out, "linear: bias of size ",
                    shape_str(bias.sizes()), " cannot be broadcast to the output size ", shape_str(plan.out));
  }
  return one(Tensor::meta(plan.out, input.dtype()));
}

// out += bias in out's dtype (one rounding of the sum, as torch's add).
void add_bias(const Tensor& out, const Tensor& bias) {
  if (is_reduced_float(out.dtype())) {
    Tensor acc = out.to(DType::Float32);
    add_bias(acc, bias.to(DType::Float32));
    out.copy_(acc);
    return;
  }
  dispatch_compute(out.dtype(), "linear", [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>)
      map_elements<T, T, T>(out, [](T x, T y) { return T(x + y); }, out, bias.expand(out.sizes()));
  });
}

void linear_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  const Tensor &input = args.tensor(0), &weight = args.tensor(1);
  Tensor bias = args.opt_tensor(2);
  Tensor wt = weight_t(weight);
  const Tensor& out = outs[0];
  if (linear_fuses_bias(input, bias) && wt.dim() == 2) {
    Tensor in2 = input.reshape({-1, input.size(-1)});
    Tensor out2 = out.view({in2.size(0), wt.size(1)});
    fill_beta_term(out2, bias, Scalar(int64_t(1)), "linear");
    product_2d(in2, wt, out2, Scalar(int64_t(1)), Scalar(int64_t(1)));
    return;
  }
  matmul_into(input, wt, plan_matmul(input, wt), out);
  if (bias.defined()) add_bias(out, bias);
}


// ---------------------------------------------------------------- linalg_qr
// Householder QR of each (m, n) matrix in the batch, in double whatever the
// dtype, with LAPACK's geqrf conventions (each reflector maps the column onto
// -sign(a_jj) * its norm), so R's diagonal has the signs torch.linalg.qr gives.

struct QrShapes {
  Shape q, r;
  bool want_q = true;
};

QrShapes qr_shapes(const Tensor& a, const std::string& mode) {
  KILN_USER_CHECK(a.dim() >= 2, "linalg.qr: The input tensor A must have at least 2 dimensions.");
  KILN_USER_CHECK(a.dtype() == DType::Float32 || a.dtype() == DType::Float64,
                  "linalg.qr: Expected a floating point or complex tensor as input. Got ", dtype_name(a.dtype()));
  KILN_USER_CHECK(mode == "reduced" || mode == "complete" || mode == "r",
                  "qr received unrecognized mode '", mode, "' but expected one of 'reduced' (default), 'r', or 'complete'");
  int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
  Shape batch(a.sizes().begin(), a.sizes().end() - 2);
  QrShapes s;
  s.q = batch;
  s.r = batch;
  if (mode == "r") {
    s.q = {0};
    s.want_q = false;
  } else {
    s.q.insert(s.q.end(), {m, mode == "complete" ? m : k});
  }
  s.r.insert(s.r.end(), {mode == "complete" ? m : k, n});
  return s;
}

ValueList qr_meta(const OpArgs& args) {
  QrShapes s = qr_shapes(args.tensor(0), args.str(1));
  DType t = args.tensor(0).dtype();
  return ValueList{Value(Tensor::meta(s.q, t)), Value(Tensor::meta(s.r, t))};
}

void qr_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  const Tensor& a = args.tensor(0);
  QrShapes s = qr_shapes(a, args.str(1));
  int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
  int64_t qcols = s.want_q ? s.q.back() : 0, rrows = s.r[s.r.size() - 2];
  Tensor src = a.to(DType::Float64).contiguous();
  const double* in = src.data<double>();
  int64_t batches = m * n == 0 ? 0 : src.numel() / (m * n);
  std::vector<double> w(static_cast<size_t>(m * n)), tau(static_cast<size_t>(k)), q(static_cast<size_t>(m * qcols));
  auto put = [&](const Tensor& out, int64_t index, double v) {
    if (out.dtype() == DType::Float32) out.data<float>()[index] = float(v);
    else out.data<double>()[index] = v;
  };
  for (int64_t b = 0; b < batches; ++b) {
    std::copy(in + b * m * n, in + (b + 1) * m * n, w.begin());
    auto at = [&](int64_t i, int64_t j) -> double& { return w[size_t(i * n + j)]; };
    for (int64_t j = 0; j < k; ++j) {
      double alpha = at(j, j), xnorm = 0;
      for (int64_t i = j + 1; i < m; ++i) xnorm = std::hypot(xnorm, at(i, j));
      if (xnorm == 0) {
        tau[size_t(j)] = 0;
        continue;
      }
      double beta = -std::copysign(std::hypot(alpha, xnorm), alpha);
      tau[size_t(j)] = (beta - alpha) / beta;
      double scale = 1.0 / (alpha - beta);
      for (int64_t i = j + 1; i < m; ++i) at(i, j) *= scale;
      at(j, j) = beta;
      // Apply H = I - tau v v^T (v = [1, a(j+1:, j)]) to the columns on the right.
      for (int64_t c = j + 1; c < n; ++c) {
        double dot = at(j, c);
        for (int64_t i = j + 1; i < m; ++i) dot += at(i, j) * at(i, c);
        dot *= tau[size_t(j)];
        at(j, c) -= dot;
        for (int64_t i = j + 1; i < m; ++i) at(i, c) -= dot * at(i, j);
      }
    }
    const Tensor& r = outs[1];
    for (int64_t i = 0; i < rrows; ++i)
      for (int64_t j = 0; j < n; ++j) put(r, b * rrows * n + i * n + j, i <= j && i < k ? at(i, j) : 0.0);
    if (!s.want_q) continue;
    // Q = H_0 H_1 ... H_{k-1} applied to the first qcols columns of the identity.
    std::fill(q.begin(), q.end(), 0.0);
    for (int64_t i = 0; i < std::min(m, qcols); ++i) q[size_t(i * qcols + i)] = 1.0;
    for (int64_t j = k - 1; j >= 0; --j) {
      double t = tau[size_t(j)];
      if (t == 0) continue;
      for (int64_t c = 0; c < qcols; ++c) {
        double dot = q[size_t(j * qcols + c)];
        for (int64_t i = j + 1; i < m; ++i) dot += at(i, j) * q[size_t(i * qcols + c)];
        dot *= t;
        q[size_t(j * qcols + c)] -= dot;
        for (int64_t i = j + 1; i < m; ++i) q[size_t(i * qcols + c)] -= dot * at(i, j);
      }
    }
    for (int64_t i = 0; i < m * qcols; ++i) put(outs[0], b * m * qcols + i, q[size_t(i)]);
  }
}

}  // namespace

void register_linalg_ops(OpRegistry& r) {
  add_op_with_outputs(r, "aten::mm(Tensor self, Tensor mat2) -> Tensor", mm_meta, mm_compute);
  add_op_with_outputs(r, "aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
                      addmm_meta, addmm_compute);
  add_op_with_outputs(r, "aten::bmm(Tensor self, Tensor mat2) -> Tensor", bmm_meta, bmm_compute);
  add_op_with_outputs(
      r, "aten::baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
      baddbmm_meta, baddbmm_compute);
  add_op_with_outputs(r, "aten::mv(Tensor self, Tensor vec) -> Tensor", mv_meta, mv_compute);
  add_op_with_outputs(r, "aten::addmv(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
                      addmv_meta, addmv_compute);
  add_op_with_outputs(r, "aten::dot(Tensor self, Tensor tensor) -> Tensor", dot_meta, dot_compute);
  add_op_with_outputs(r, "aten::vdot(Tensor self, Tensor other) -> Tensor", dot_meta, dot_compute);
  add_op_with_outputs(r, "aten::matmul(Tensor self, Tensor other) -> Tensor", matmul_meta, matmul_compute);
  add_op_with_outputs(r, "aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor", linear_meta,
                      linear_compute);
  add_op_with_outputs(r, "aten::linalg_qr(Tensor A, str mode=\"reduced\") -> (Tensor Q, Tensor R)", qr_meta,
                      qr_compute);
}

}  // namespace kiln
