// The symmetric eigendecomposition, the matrix exponential and products of
// Householder reflectors, with PyTorch 2.11's formulas for the first two
// (FunctionsManual.cpp: linalg_eig_backward with is_hermitian, and
// matrix_exp_backward through the exponential of a block matrix). The third
// differentiates the product written out reflector by reflector, which gives
// the gradient householder_product_backward computes.
#include "compiler/aot/grad_context.h"
#include "compiler/aot/grad_ops.h"

namespace kiln::aot {
namespace {

Var mT(Emitter& e, Var a) { return transpose(e, a, -2, -1); }
Var matmul(Emitter& e, Var a, Var b) { return e.call1("aten::matmul.default", {a, b}); }
Var narrow(Emitter& e, Var a, int64_t dim, int64_t start, int64_t length) {
  return e.call1("aten::slice.Tensor", {a, dim, start, start + length});
}
Var cat(Emitter& e, Var a, Var b, int64_t dim) { return e.call1("aten::cat.default", {EArg::list({a, b}), dim}); }
Var select(Emitter& e, Var a, int64_t dim, int64_t index) { return e.call1("aten::select.int", {a, dim, index}); }
int64_t last_size(Emitter& e, Var a) { return e.sizes(a).back(); }

// A = V diag(L) V^T: dA = V (diag(gL) + skew(V^T gV) / E) V^T with
// E[i, j] = L[j] - L[i]. Only the skew-symmetric part of V^T gV moves an
// orthogonal V, so that is all the loss can see. Without gV this is
// V diag(gL) V^T (eigvalsh).
void eigh_grad(GradContext& x) {
  Emitter& e = x.e;
  KILN_USER_CHECK(x.boolean("compute_v"),
                  "linalg_eigh_backward: the eigenvectors were not computed (compute_v=False), and the gradient "
                  "of the eigenvalues needs them");
  Var l = x.out(0), v = x.out(1);
  std::optional<Var> gl = x.grad(0), gv = x.grad(1);
  if (!gv) {
    x.set("A", matmul(e, mul(e, v, unsqueeze(e, *gl, -2)), mT(e, v)));
    return;
  }
  int64_t n = last_size(e, l);
  Var eye = e.call1("aten::eye.default", {n}, {{"dtype", DType::Bool}});
  Var vgv = matmul(e, mT(e, v), *gv);
  Var skew = mul(e, sub(e, vgv, mT(e, vgv)), 0.5);
  // The diagonal of E is 1, so the skew part's zero diagonal stays zero.
  Var gaps = where(e, eye, 1.0, sub(e, unsqueeze(e, l, -2), unsqueeze(e, l, -1)));
  Var inner = div(e, skew, gaps);
  if (gl) inner = where(e, eye, unsqueeze(e, *gl, -1), inner);
  x.set("A", matmul(e, v, matmul(e, inner, mT(e, v))));
}

// The derivative of exp at A in direction G is the upper-right block of
// exp([[A, G], [0, A]]); the adjoint takes A^T in place of A.
void matrix_exp_grad(GradContext& x) {
  Emitter& e = x.e;
  Var at = mT(e, x.var("self")), g = x.grad();
  int64_t n = last_size(e, at);
  Var top = cat(e, at, g, -1), bottom = cat(e, zeros_like(e, at), at, -1);
  Var big = e.call1("aten::linalg_matrix_exp.default", {cat(e, top, bottom, -2)});
  x.set("self", narrow(e, narrow(e, big, -2, 0, n), -1, n, n));
}

// Q = H_0 H_1 ... H_{k-1} I[:, :n], H_i = I - tau_i v_i v_i^T, where v_i is
// column i of the input below the diagonal with a 1 on it (what orgqr reads:
// nothing on or above the diagonal, nothing past column k).
void householder_product_grad(GradContext& x) {
  Emitter& outer = x.e;
  Shape s = outer.sizes(x.var("input"));
  int64_t m = s[s.size() - 2], n = s.back(), k = last_size(outer, x.var("tau"));
  DType t = outer.dtype(x.var("input"));
  // Constants made outside the recording, which has nothing to differentiate in them.
  Var diagonal = outer.call1("aten::eye.m", {m, n}, {{"dtype", t}});
  Var identity = narrow(outer, outer.call1("aten::eye.default", {m}, {{"dtype", t}}), -1, 0, n);
  x.via([&](Emitter& e) {
    Var reflectors = add(e, e.call1("aten::tril.default", {x.var("input"), int64_t(-1)}), diagonal);
    Var q = identity;
    for (int64_t i = k - 1; i >= 0; --i) {
      Var v = unsqueeze(e, select(e, reflectors, -1, i), -1);
      Var scale = unsqueeze(e, unsqueeze(e, select(e, x.var("tau"), -1, i), -1), -1);
      q = sub(e, q, mul(e, mul(e, v, scale), matmul(e, mT(e, v), q)));
    }
    return std::vector<Var>{expand(e, q, s)};
  });
}

}  // namespace

void register_linalg_eigen_derivatives(DerivativeTable& t) {
  t.add<eigh_grad>("aten::_linalg_eigh.default", {"A"}, kSavesOutputs);
  t.add<matrix_exp_grad>("aten::linalg_matrix_exp.default", {"self"}, kSavesInputs);
  t.add<householder_product_grad>("aten::linalg_householder_product.default", {"input", "tau"}, kSavesInputs);
}

}  // namespace kiln::aot
