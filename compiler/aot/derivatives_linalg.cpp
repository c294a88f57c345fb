// Matrix products: each operand's gradient is the output gradient multiplied
// by the other operand transposed. matmul and linear, composite in PyTorch,
// differentiate their decomposition into mm / bmm / views.
#include <algorithm>

#include "compiler/aot/grad_context.h"
#include "compiler/aot/grad_ops.h"

namespace kiln::aot {
namespace {

Var maybe_scale(Emitter& e, Var v, const Value& s) { return s.to_double() == 1.0 ? v : mul(e, v, s); }
Var outer(Emitter& e, Var a, Var b) { return mul(e, unsqueeze(e, a, 1), unsqueeze(e, b, 0)); }
Var mv(Emitter& e, Var m, Var v) { return e.call1("aten::mv.default", {m, v}); }

void mm_grad(GradContext& x) {
  Emitter& e = x.e;
  Var a = x.var("self"), b = x.var("mat2");
  if (x.needs("self")) x.set("self", mm(e, x.grad(), transpose(e, b, 0, 1)));
  if (x.needs("mat2")) x.set("mat2", mm(e, transpose(e, a, 0, 1), x.grad()));
}

void bmm_grad(GradContext& x) {
  Emitter& e = x.e;
  Var a = x.var("self"), b = x.var("mat2");
  if (x.needs("self")) x.set("self", bmm(e, x.grad(), transpose(e, b, 1, 2)));
  if (x.needs("mat2")) x.set("mat2", bmm(e, transpose(e, a, 1, 2), x.grad()));
}

void addmm_grad(GradContext& x) {
  Emitter& e = x.e;
  const Value& alpha = x.value("alpha");
  if (x.needs("self")) x.set("self", maybe_scale(e, x.grad(), x.value("beta")));
  if (x.needs("mat1")) x.set("mat1", maybe_scale(e, mm(e, x.grad(), transpose(e, x.var("mat2"), 0, 1)), alpha));
  if (x.needs("mat2")) x.set("mat2", maybe_scale(e, mm(e, transpose(e, x.var("mat1"), 0, 1), x.grad()), alpha));
}

void baddbmm_grad(GradContext& x) {
  Emitter& e = x.e;
  const Value& alpha = x.value("alpha");
  if (x.needs("self")) x.set("self", maybe_scale(e, x.grad(), x.value("beta")));
  if (x.needs("batch1"))
    x.set("batch1", maybe_scale(e, bmm(e, x.grad(), transpose(e, x.var("batch2"), 1, 2)), alpha));
  if (x.needs("batch2"))
    x.set("batch2", maybe_scale(e, bmm(e, transpose(e, x.var("batch1"), 1, 2), x.grad()), alpha));
}

void addmv_grad(GradContext& x) {
  Emitter& e = x.e;
  const Value& alpha = x.value("alpha");
  if (x.needs("self")) x.set("self", maybe_scale(e, x.grad(), x.value("beta")));
  if (x.needs("mat")) x.set("mat", maybe_scale(e, outer(e, x.grad(), x.var("vec")), alpha));
  if (x.needs("vec")) x.set("vec", maybe_scale(e, mv(e, transpose(e, x.var("mat"), 0, 1), x.grad()), alpha));
}

void mv_grad(GradContext& x) {
  Emitter& e = x.e;
  if (x.needs("self")) x.set("self", outer(e, x.grad(), x.var("vec")));
  if (x.needs("vec")) x.set("vec", mv(e, transpose(e, x.var("self"), 0, 1), x.grad()));
}

void dot_grad(GradContext& x) {
  Emitter& e = x.e;
  const char* other = x.call.op == "aten::dot.default" ? "tensor" : "other";
  if (x.needs("self")) x.set("self", mul(e, x.grad(), x.var(other)));
  if (x.needs(other)) x.set(other, mul(e, x.grad(), x.var("self")));
}

// torch.matmul's dispatch on ranks, spelled with ops that have formulas.
Var matmul_decomposed(Emitter& e, Var a, Var b) {
  int64_t da = e.dim(a), db = e.dim(b);
  if (da == 1 && db == 1) return e.call1("aten::dot.default", {a, b});
  if (da == 2 && db == 1) return mv(e, a, b);
  if (da == 1 && db == 2) return squeeze(e, mm(e, unsqueeze(e, a, 0), b), 0);
  if (da == 2 && db == 2) return mm(e, a, b);
  if (da >= 3 && db <= 2) {
    // Fold the batch dims of a into its rows.
    Shape sa = e.sizes(a);
    Shape out(sa.begin(), sa.end() - 1);
    Var folded = reshape(e, a, {-1, sa.back()});
    if (db == 1) return reshape(e, mv(e, folded, b), out);
    out.push_back(e.sizes(b)[1]);
    return reshape(e, mm(e, folded, b), out);
  }
  // Batched: broadcast the batch dims, flatten them, bmm, unflatten.
  Var a2 = da == 1 ? unsqueeze(e, a, 0) : a;
  Var b2 = db == 1 ? unsqueeze(e, b, -1) : b;
  Shape sa = e.sizes(a2), sb = e.sizes(b2);
  int64_t n = sa[sa.size() - 2], m = sa.back(), p = sb.back();
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  Shape batch(std::max(ba.size(), bb.size()), 1);
  for (size_t i = 0; i < ba.size(); ++i) batch[batch.size() - ba.size() + i] = ba[i];
  for (size_t i = 0; i < bb.size(); ++i) {
    int64_t& d = batch[batch.size() - bb.size() + i];
    d = d == 1 ? bb[i] : d;
  }
  int64_t nb = shape_numel(batch);
  Shape ea = batch, eb = batch;
  ea.insert(ea.end(), {n, m});
  eb.insert(eb.end(), {m, p});
  Var r = bmm(e, reshape(e, expand(e, a2, ea), {nb, n, m}), reshape(e, expand(e, b2, eb), {nb, m, p}));
  Shape out = batch;
  if (da > 1) out.push_back(n);
  if (db > 1) out.push_back(p);
  return reshape(e, r, out);
}

void matmul_grad(GradContext& x) {
  x.via([&](Emitter& e) { return std::vector<Var>{matmul_decomposed(e, x.var("self"), x.var("other"))}; });
}

void linear_grad(GradContext& x) {
  x.via([&](Emitter& e) {
    Var input = x.var("input"), wt = transpose(e, x.var("weight"), 0, 1);
    std::optional<Var> bias = x.opt_var("bias");
    if (e.dim(input) == 2 && bias) return std::vector<Var>{e.call1("aten::addmm.default", {*bias, input, wt})};
    Var y = matmul_decomposed(e, input, wt);
    return std::vector<Var>{bias ? add(e, y, *bias) : y};
  });
}

}  // namespace

void register_linalg_derivatives(DerivativeTable& t) {
  t.add<mm_grad>("aten::mm.default", {"self", "mat2"}, kSavesInputs);
  t.add<bmm_grad>("aten::bmm.default", {"self", "mat2"}, kSavesInputs);
  t.add<addmm_grad>("aten::addmm.default", {"self", "mat1", "mat2"}, kSavesInputs);
  t.add<baddbmm_grad>("aten::baddbmm.default", {"self", "batch1", "batch2"}, kSavesInputs);
  t.add<addmv_grad>("aten::addmv.default", {"self", "mat", "vec"}, kSavesInputs);
  t.add<mv_grad>("aten::mv.default", {"self", "vec"}, kSavesInputs);
  t.add<dot_grad>("aten::dot.default", {"self", "tensor"}, kSavesInputs);
  t.add<dot_grad>("aten::vdot.default", {"self", "other"}, kSavesInputs);
  t.add<matmul_grad>("aten::matmul.default", {"self", "other"}, kSavesInputs);
  t.add<linear_grad>("aten::linear.default", {"input", "weight", "bias"}, kSavesInputs);
}

}  // namespace kiln::aot
