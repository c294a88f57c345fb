// Cholesky, triangular solves and inverses, with PyTorch 2.11's formulas
// (FunctionsManual.cpp: cholesky_backward, linalg_solve_triangular's
// backward, cholesky_inverse_backward; derivatives.yaml's linalg_inv_ex;
// linalg_lu_backward, lu_factor_ex_backward, lu_unpack_backward;
// linalg_det_backward, slogdet_backward). The info and pivots outputs, the
// permutation P and the LU outputs of _linalg_det/_linalg_slogdet take no
// gradient.
#include <limits>

#include "compiler/aot/grad_context.h"
#include "compiler/aot/grad_ops.h"

namespace kiln::aot {
namespace {

const std::vector<bool> kFirstOnly{true, false};

Var mT(Emitter& e, Var a) { return transpose(e, a, -2, -1); }
Var matmul(Emitter& e, Var a, Var b) { return e.call1("aten::matmul.default", {a, b}); }
Var tril(Emitter& e, Var a, int64_t k) { return e.call1("aten::tril.default", {a, k}); }
Var triu(Emitter& e, Var a, int64_t k) { return e.call1("aten::triu.default", {a, k}); }
Var solve_triangular(Emitter& e, Var a, Var b, bool upper, bool left, bool unit = false) {
  return e.call1("aten::linalg_solve_triangular.default", {a, b},
                 {{"upper", upper}, {"left", left}, {"unitriangular", unit}});
}

// Iain Murray (2016), arXiv 1602.07527, as cholesky_backward spells it: the
// gradient is symmetric, though the kernel reads one triangle.
void cholesky_ex_grad(GradContext& x) {
  Emitter& e = x.e;
  Var l = x.out(0), gl = x.grad();
  if (x.boolean("upper")) {
    l = mT(e, l);
    gl = mT(e, gl);
  }
  Var ga = tril(e, matmul(e, mT(e, l), gl), 0);
  ga = mul(e, add(e, ga, mT(e, tril(e, ga, -1))), 0.5);
  ga = solve_triangular(e, mT(e, l), ga, true, true);
  ga = solve_triangular(e, l, ga, false, false);
  x.set("self", ga);
}

void solve_triangular_grad(GradContext& x) {
  Emitter& e = x.e;
  bool upper = x.boolean("upper"), left = x.boolean("left"), unit = x.boolean("unitriangular");
  Var gb = solve_triangular(e, mT(e, x.var("self")), x.grad(), !upper, left, unit);
  if (x.needs("self")) {
    Var xh = mT(e, x.out(0));
    Var ga = neg(e, left ? matmul(e, gb, xh) : matmul(e, xh, gb));
    ga = upper ? triu(e, ga, unit ? 1 : 0) : tril(e, ga, unit ? -1 : 0);
    x.set("self", ga);
  }
  x.set("B", gb);
}

void cholesky_inverse_grad(GradContext& x) {
  Emitter& e = x.e;
  Var inverse = x.out(0), l = x.var("self"), g = x.grad();
  Var common = matmul(e, inverse, matmul(e, add(e, g, mT(e, g)), inverse));
  x.set("self", neg(e, x.boolean("upper") ? matmul(e, l, common) : matmul(e, common, l)));
}

void inv_ex_grad(GradContext& x) {
  Emitter& e = x.e;
  Var ih = mT(e, x.out(0));
  x.set("A", neg(e, matmul(e, ih, matmul(e, x.grad(), ih))));
}

Var narrow(Emitter& e, Var a, int64_t dim, int64_t start, int64_t length) {
  return e.call1("aten::slice.Tensor", {a, dim, start, start + length});
}
Var cat(Emitter& e, Var a, Var b, int64_t dim) {
  return e.call1("aten::cat.default", {EArg::list({a, b}), dim});
}
Var zeros_shaped(Emitter& e, Var like, int64_t dim, int64_t size) {
  Shape s = e.sizes(like);
  s[size_t(int64_t(s.size()) + dim)] = size;
  return zeros(e, s, e.dtype(like));
}

// linalg_lu_backward: L (m x k) and U (k x n) with either gradient absent.
Var lu_backward(Emitter& e, std::optional<Var> gl, std::optional<Var> gu, Var p, Var l, Var u, bool pivot) {
  Shape ls = e.sizes(l), us = e.sizes(u);
  int64_t m = ls[ls.size() - 2], n = us.back(), k = std::min(m, n);
  Var ga;
  if (m == n) {
    std::optional<Var> acc;
    if (gl) acc = tril(e, matmul(e, mT(e, l), *gl), -1);
    if (gu) {
      Var t = triu(e, matmul(e, *gu, mT(e, u)), 0);
      acc = acc ? add(e, *acc, t) : t;
    }
    ga = solve_triangular(e, mT(e, u), *acc, false, false);
    ga = solve_triangular(e, mT(e, l), ga, true, true, true);
  } else if (m < n) {
    // Wide: U = [U1 U2], U1 k x k.
    Var u1 = narrow(e, u, -1, 0, k);
    std::optional<Var> acc;
    if (gl) acc = matmul(e, mT(e, l), *gl);
    if (gu) {
      Var t = matmul(e, triu(e, *gu, 0), mT(e, u));
      acc = acc ? sub(e, *acc, t) : neg(e, t);
    }
    ga = solve_triangular(e, mT(e, u1), tril(e, *acc, -1), false, false);
    if (gu) ga = cat(e, add(e, ga, triu(e, narrow(e, *gu, -1, 0, k), 0)), narrow(e, *gu, -1, k, n - k), -1);
    ga = solve_triangular(e, mT(e, l), ga, true, true, true);
    if (!gu) ga = cat(e, ga, zeros_shaped(e, ga, -1, n - k), -1);
  } else {
    // Tall: L = [L1; L2], L1 k x k.
    Var l1 = narrow(e, l, -2, 0, k);
    std::optional<Var> acc;
    if (gu) acc = matmul(e, *gu, mT(e, u));
    if (gl) {
      Var t = matmul(e, mT(e, l), tril(e, *gl, -1));
      acc = acc ? sub(e, *acc, t) : neg(e, t);
    }
    ga = solve_triangular(e, mT(e, l1), triu(e, *acc, 0), true, true, true);
    if (gl) ga = cat(e, add(e, ga, tril(e, narrow(e, *gl, -2, 0, k), -1)), narrow(e, *gl, -2, k, m - k), -2);
    ga = solve_triangular(e, mT(e, u), ga, false, false);
    if (!gl) ga = cat(e, ga, zeros_shaped(e, ga, -2, m - k), -2);
  }
  return pivot ? matmul(e, p, ga) : ga;
}

void linalg_lu_grad(GradContext& x) {
  x.set("A", lu_backward(x.e, x.grad(1), x.grad(2), x.out(0), x.out(1), x.out(2), x.boolean("pivot")));
}

// lu_factor_ex_backward: LU holds L below its diagonal and U on and above it.
void lu_factor_ex_grad(GradContext& x) {
  Emitter& e = x.e;
  bool pivot = x.boolean("pivot");
  Var lu = x.out(0), g = x.grad();
  std::vector<Var> plu = e.call("aten::lu_unpack.default", {lu, x.out(1), true, pivot});
  Shape s = e.sizes(lu);
  int64_t m = s[s.size() - 2], n = s.back(), k = std::min(m, n);
  x.set("A", lu_backward(e, narrow(e, g, -1, 0, k), narrow(e, g, -2, 0, k), plu[0], plu[1], plu[2], pivot));
}

// lu_unpack_backward: L's strict lower triangle and U's upper one, each at its
// place in the m x n LU.
void lu_unpack_grad(GradContext& x) {
  Emitter& e = x.e;
  std::optional<Var> gl = x.grad(1), gu = x.grad(2);
  Shape s = e.sizes(x.var("LU_data"));
  int64_t m = s[s.size() - 2], n = s.back(), k = std::min(m, n);
  std::optional<Var> ga;
  if (gl) {
    Var t = tril(e, *gl, -1);
    if (m < n) t = cat(e, t, zeros_shaped(e, t, -1, n - k), -1);
    ga = t;
  }
  if (gu) {
    Var t = triu(e, *gu, 0);
    if (m > n) t = cat(e, t, zeros_shaped(e, t, -2, m - k), -2);
    ga = ga ? add(e, *ga, t) : t;
  }
  x.set("LU_data", ga);
}

// diag_embed of v [..., n]: v on the diagonal of [..., n, n], +0 elsewhere.
Var diag_embed(Emitter& e, Var v, int64_t n) {
  Var eye = e.call1("aten::eye.default", {n}, {{"dtype", DType::Bool}});
  return where(e, eye, unsqueeze(e, v, -1), 0.0);
}

// The LU and pivots of _linalg_det/_linalg_slogdet are those of A^T (see
// core/ops/linalg_factor.cpp), as PyTorch's for contiguous A, so A^-T G is
// lu_solve without adjoint, PyTorch's use_A_T branch.
Var solve_with_a_t(Emitter& e, Var lu, Var pivots, Var g) {
  return e.call1("aten::linalg_lu_solve.default", {lu, pivots, g}, {{"left", true}, {"adjoint", false}});
}

// linalg_det_backward outside grad mode (Kiln has no create_graph): A^-T
// det(A) grad, solved on the LU with each exact zero of U's diagonal moved to
// eps. det is then 0 too, so a singular matrix whose U has an exact zero gets
// a zero gradient, as in PyTorch; nearly singular ones the adjugate's
// approximation.
void det_grad(GradContext& x) {
  Emitter& e = x.e;
  Shape s = e.sizes(x.var("A"));
  int64_t n = s.back(), numel = 1;
  for (int64_t v : s) numel *= v;
  std::optional<Var> g = x.grad(0);
  if (!g || numel == 0) return;
  Var lu = x.out(1), pivots = x.out(2);
  Var d = unsqueeze(e, mul(e, *g, x.out(0)), -1);
  d = diag_embed(e, expand(e, d, e.sizes(pivots)), n);
  double eps = e.dtype(lu) == DType::Float32 ? double(std::numeric_limits<float>::epsilon())
                                             : std::numeric_limits<double>::epsilon();
  Var diag = e.call1("aten::diagonal.default", {lu, int64_t(0), int64_t(-2), int64_t(-1)});
  Var moved = where(e, compare(e, "eq", diag, 0.0), full_like(e, diag, eps), 0.0);
  x.set("A", solve_with_a_t(e, add(e, lu, diag_embed(e, moved, n)), pivots, d));
}

// slogdet_backward, real case: sign is piecewise constant, so only
// logabsdet's gradient reaches A, as A^-T grad (no guard for singular A).
void slogdet_grad(GradContext& x) {
  Emitter& e = x.e;
  std::optional<Var> g = x.grad(1);
  if (!g) return;
  Var pivots = x.out(3);
  int64_t n = e.sizes(x.var("A")).back();
  Var d = diag_embed(e, expand(e, unsqueeze(e, *g, -1), e.sizes(pivots)), n);
  x.set("A", solve_with_a_t(e, x.out(2), pivots, d));
}

}  // namespace

void register_linalg_factor_derivatives(DerivativeTable& t) {
  t.add<cholesky_ex_grad>("aten::linalg_cholesky_ex.default", {"self"}, kSavesOutputs, kFirstOnly);
  t.add<solve_triangular_grad>("aten::linalg_solve_triangular.default", {"self", "B"}, kSavesBoth);
  t.add<cholesky_inverse_grad>("aten::cholesky_inverse.default", {"self"}, kSavesBoth);
  t.add<inv_ex_grad>("aten::linalg_inv_ex.default", {"A"}, kSavesOutputs, kFirstOnly);
  t.add<lu_factor_ex_grad>("aten::linalg_lu_factor_ex.default", {"A"}, kSavesOutputs, {true, false, false});
  t.add<linalg_lu_grad>("aten::linalg_lu.default", {"A"}, kSavesOutputs, {false, true, true});
  t.add<lu_unpack_grad>("aten::lu_unpack.default", {"LU_data"}, kSavesInputs, {false, true, true});
  t.add<det_grad>("aten::_linalg_det.default", {"A"}, kSavesOutputs, {true, false, false});
  t.add<slogdet_grad>("aten::_linalg_slogdet.default", {"A"}, kSavesOutputs, {true, true, false, false});
}

}  // namespace kiln::aot
