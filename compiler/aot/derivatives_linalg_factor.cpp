// Cholesky, triangular solves and inverses, with PyTorch 2.11's formulas
// (FunctionsManual.cpp: cholesky_backward, linalg_solve_triangular's
// backward, cholesky_inverse_backward; derivatives.yaml's linalg_inv_ex).
// The info outputs take no gradient.
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

}  // namespace

void register_linalg_factor_derivatives(DerivativeTable& t) {
  t.add<cholesky_ex_grad>("aten::linalg_cholesky_ex.default", {"self"}, kSavesOutputs, kFirstOnly);
  t.add<solve_triangular_grad>("aten::linalg_solve_triangular.default", {"self", "B"}, kSavesBoth);
  t.add<cholesky_inverse_grad>("aten::cholesky_inverse.default", {"self"}, kSavesBoth);
  t.add<inv_ex_grad>("aten::linalg_inv_ex.default", {"A"}, kSavesOutputs, kFirstOnly);
}

}  // namespace kiln::aot
