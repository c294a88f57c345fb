// Losses. nll_loss and mse_loss go through their ATen backward kernels (as
// PyTorch's graphs show), binary cross-entropy through its formula, and the
// composite losses (cross_entropy, l1, smooth_l1, huber, kl_div) through
// their decompositions.
#include "compiler/aot/grad_context.h"
#include "compiler/aot/grad_ops.h"

namespace kiln::aot {
namespace {

enum Reduction : int64_t { kNone = 0, kMean = 1, kSum = 2 };

Var reduce(Emitter& e, Var loss, int64_t reduction) {
  if (reduction == kMean) return e.call1("aten::mean.default", {loss});
  if (reduction == kSum) return sum_all(e, loss);
  return loss;
}

// d loss / d weight[c], summed over the samples of class c. PyTorch leaves it
// unimplemented; cross_entropy with probability targets does differentiate
// its weight, and this keeps the class-index form consistent with that.
Var nll_weight_grad(Emitter& e, Var g, Var self, Var target, Var weight, int64_t reduction, int64_t ignore_index,
                    Var out, Var total_weight) {
  bool single = e.dim(self) == 1;  // [C] with a 0-d target
  Var input = single ? unsqueeze(e, self, 0) : self;
  Var t = single ? unsqueeze(e, target, 0) : target;
  if (reduction == kNone && single) g = unsqueeze(e, g, 0);
  Var valid = compare(e, "ne", t, double(ignore_index));
  Var t_safe = masked_fill(e, t, logical_not(e, valid), 0.0);
  Var picked = neg(e, squeeze(e, e.call1("aten::gather.default", {input, int64_t(1), unsqueeze(e, t_safe, 1)}), 1));
  // mean: loss = S / W, so d/dw_c = sum over class c of (-x_i - loss) / W.
  Var per = reduction == kMean ? div(e, mul(e, sub(e, picked, out), g), total_weight) : mul(e, picked, g);
  per = where(e, valid, per, 0.0);
  return e.call1("aten::index_add.default",
                 {zeros_like(e, weight), int64_t(0), reshape(e, t_safe, {-1}), reshape(e, per, {-1})});
}

void nll_loss_forward_grad(GradContext& x) {
  const char* kernel = x.call.op == "aten::nll_loss_forward.default" ? "aten::nll_loss_backward.default"
                                                                     : "aten::nll_loss2d_backward.default";
  x.set("self", x.e.call1(kernel, {x.grad(), x.var("self"), x.var("target"), x.arg("weight"), x.integer("reduction"),
                                   x.integer("ignore_index"), x.out(1)}));
  if (x.needs("weight"))
    x.set("weight", nll_weight_grad(x.e, x.grad(), x.var("self"), x.var("target"), x.var("weight"),
                                    x.integer("reduction"), x.integer("ignore_index"), x.out(0), x.out(1)));
}

// nll_loss_backward is linear in grad_output (PyTorch's double backward).
void nll_loss_backward_grad(GradContext& x) {
  Emitter& e = x.e;
  const char* forward = x.call.op == "aten::nll_loss_backward.default" ? "aten::nll_loss_forward.default"
                                                                      : "aten::nll_loss2d_forward.default";
  // 'mean' divides by the total_weight it was given, not a recomputed one.
  int64_t reduction = x.integer("reduction");
  Var g = e.call(forward, {x.grad(), x.var("target"), x.arg("weight"), reduction == kMean ? int64_t(kSum) : reduction,
                           x.integer("ignore_index")})[0];
  x.set("grad_output", reduction == kMean ? div(e, g, x.var("total_weight")) : g);
  x.set("self", zeros_like(e, x.var("self")));
}

// nll_loss / nll_loss2d / nll_loss_nd as ATen's nll_loss_nd dispatches them.
Var nll_loss_nd(Emitter& e, Var input, Var target, const EArg& weight, int64_t reduction, int64_t ignore_index) {
  int64_t nd = e.dim(input);
  if (nd <= 2)
    return e.call("aten::nll_loss_forward.default", {input, target, weight, reduction, ignore_index})[0];
  if (nd == 4)
    return e.call("aten::nll_loss2d_forward.default", {input, target, weight, reduction, ignore_index})[0];
  // Other ranks fold the trailing dims into a 4-d [N, C, 1, rest] problem.
  Shape in = e.sizes(input), tg = e.sizes(target);
  Var input4 = reshape(e, input, {in[0], in[1], 1, -1});
  Var target3 = reshape(e, target, {tg[0], 1, -1});
  Var out = e.call("aten::nll_loss2d_forward.default", {input4, target3, weight, reduction, ignore_index})[0];
  return reduction == kNone ? reshape(e, out, tg) : out;
}

void nll_loss_grad(GradContext& x) {
  x.via([&](Emitter& e) {
    return std::vector<Var>{nll_loss_nd(e, x.var("self"), x.var("target"), x.arg("weight"), x.integer("reduction"),
                                        x.integer("ignore_index"))};
  });
}

// cross_entropy_loss: log_softmax over the class dim, then nll (class
// indices) or a weighted sum against probabilities, with label smoothing.
Var cross_entropy(Emitter& e, const GradContext& x) {
  Var self = x.var("self"), target = x.var("target");
  std::optional<Var> weight = x.opt_var("weight");
  int64_t reduction = x.integer("reduction"), ignore_index = x.integer("ignore_index");
  double smoothing = x.real("label_smoothing");
  int64_t class_dim = e.dim(self) == 1 ? 0 : 1;
  int64_t classes = e.sizes(self)[size_t(class_dim)];
  Var logp = e.call1("aten::_log_softmax.default", {self, class_dim, false});
  Shape wshape(size_t(e.dim(self)), 1);
  wshape[size_t(class_dim)] = classes;
  if (is_floating(e.dtype(target))) {
    // Class probabilities.
    Var t = smoothing > 0 ? add(e, mul(e, target, 1.0 - smoothing), smoothing / double(classes)) : target;
    Var prod = mul(e, logp, t);
    if (weight) prod = mul(e, prod, reshape(e, *weight, wshape));
    if (reduction == kNone) return neg(e, sum(e, prod, {class_dim}, false));
    Var total = neg(e, sum_all(e, prod));
    if (reduction == kSum) return total;
    return div(e, total, double(shape_numel(e.sizes(self)) / classes));
  }
  Var nll = nll_loss_nd(e, logp, target, x.arg("weight"), reduction, ignore_index);
  if (smoothing <= 0) return nll;
  Var ignored = compare(e, "eq", target, double(ignore_index));
  Var smooth = neg(e, sum(e, weight ? mul(e, logp, reshape(e, *weight, wshape)) : logp, {class_dim}, false));
  smooth = masked_fill(e, smooth, ignored, 0.0);
  Var ret;
  if (reduction == kMean) {
    Var kept = logical_not(e, ignored);
    Var denom;
    if (weight) {
      Var safe = masked_fill(e, target, ignored, 0.0);
      Var w = e.call1("aten::index_select.default", {*weight, int64_t(0), reshape(e, safe, {-1})});
      denom = sum_all(e, mul(e, w, reshape(e, kept, {-1})));
    } else {
      denom = sum_all(e, kept);
    }
    ret = div(e, sum_all(e, smooth), denom);
  } else {
    ret = reduce(e, smooth, reduction);
  }
  return add(e, mul(e, nll, 1.0 - smoothing), mul(e, ret, smoothing / double(classes)));
}
void cross_entropy_grad(GradContext& x) {
  x.via([&](Emitter& e) { return std::vector<Var>{cross_entropy(e, x)}; });
}

void mse_loss_grad(GradContext& x) {
  Emitter& e = x.e;
  Var s = x.var("self"), t = x.var("target");
  int64_t r = x.integer("reduction");
  if (x.needs("self")) x.set("self", e.call1("aten::mse_loss_backward.default", {x.grad(), s, t, r}));
  if (x.needs("target")) x.set("target", e.call1("aten::mse_loss_backward.default", {x.grad(), t, s, r}));
}
void mse_loss_backward_grad(GradContext& x) {
  x.via([&](Emitter& e) {
    Var go = x.var("grad_output"), s = x.var("self"), t = x.var("target");
    Var d = mul(e, mul(e, sub(e, s, t), 2.0), go);
    if (x.integer("reduction") == kMean) d = div(e, d, double(shape_numel(e.sizes(s))));
    return std::vector<Var>{d};
  });
}

// The elementwise losses of (self - target), reduced.
template <class Pointwise>
void difference_loss_grad(GradContext& x, Pointwise&& pointwise) {
  x.via([&](Emitter& e) {
    Var d = sub(e, x.var("self"), x.var("target"));
    return std::vector<Var>{reduce(e, pointwise(e, d), x.integer("reduction"))};
  });
}
void l1_loss_grad(GradContext& x) {
  difference_loss_grad(x, [](Emitter& e, Var d) { return unary(e, "aten::abs.default", d); });
}
void smooth_l1_loss_grad(GradContext& x) {
  double beta = x.real("beta");
  difference_loss_grad(x, [beta](Emitter& e, Var d) {
    Var a = unary(e, "aten::abs.default", d);
    if (beta == 0.0) return a;
    Var quad = div(e, mul(e, mul(e, d, d), 0.5), beta);
    return where(e, compare(e, "lt", a, beta), quad, add(e, a, -0.5 * beta));
  });
}
void huber_loss_grad(GradContext& x) {
  double delta = x.real("delta");
  difference_loss_grad(x, [delta](Emitter& e, Var d) {
    Var a = unary(e, "aten::abs.default", d);
    Var quad = mul(e, mul(e, d, d), 0.5);
    return where(e, compare(e, "lt", a, delta), quad, mul(e, add(e, a, -0.5 * delta), delta));
  });
}

void kl_div_grad(GradContext& x) {
  x.via([&](Emitter& e) {
    Var s = x.var("self"), t = x.var("target");
    Var loss = x.boolean("log_target") ? mul(e, unary(e, "aten::exp.default", t), sub(e, t, s))
                                       : sub(e, e.call1("aten::xlogy.Tensor", {t, t}), mul(e, t, s));
    return std::vector<Var>{reduce(e, loss, x.integer("reduction"))};
  });
}

// binary_cross_entropy: d/dself = (self - target) / max(self (1 - self), 1e-12),
// d/dtarget = -logit(self); times weight, over numel for 'mean'.
void binary_cross_entropy_grad(GradContext& x) {
  Emitter& e = x.e;
  Var s = x.var("self"), t = x.var("target");
  std::optional<Var> w = x.opt_var("weight");
  int64_t r = x.integer("reduction");
  Var g = x.grad();
  if (r != kNone) g = expand(e, g, e.sizes(s));
  auto finish = [&](Var v) {
    if (w) v = mul(e, v, *w);
    return r == kMean ? div(e, v, double(shape_numel(e.sizes(s)))) : v;
  };
  if (x.needs("self")) {
    Var denom = e.call1("aten::clamp_min.default", {mul(e, rsub(e, 1.0, s), s), 1e-12});
    x.set("self", finish(mul(e, div(e, sub(e, s, t), denom), g)));
  }
  if (x.needs("target")) x.set("target", finish(mul(e, neg(e, unary(e, "aten::logit.default", s)), g)));
}

// Through (1 - t) x + (1 + (pw - 1) t) softplus(-x), which is how PyTorch
// computes it stably.
void bce_with_logits_grad(GradContext& x) {
  x.via([&](Emitter& e) {
    Var s = x.var("self"), t = x.var("target");
    Var sp = e.call1("aten::softplus.default", {neg(e, s)});
    Var log_weight = sp;
    if (std::optional<Var> pw = x.opt_var("pos_weight")) log_weight = mul(e, add(e, mul(e, add(e, *pw, -1.0), t), 1.0), sp);
    Var loss = add(e, mul(e, rsub(e, 1.0, t), s), log_weight);
    if (std::optional<Var> w = x.opt_var("weight")) loss = mul(e, loss, *w);
    return std::vector<Var>{reduce(e, loss, x.integer("reduction"))};
  });
}

}  // namespace

void register_loss_derivatives(DerivativeTable& t) {
  const std::vector<std::string> self{"self"}, both{"self", "target"};
  const std::vector<bool> loss_only{true, false};
  const std::vector<std::string> weighted{"self", "weight"};
  t.add<nll_loss_forward_grad>("aten::nll_loss_forward.default", weighted, kSavesBoth, loss_only);
  t.add<nll_loss_forward_grad>("aten::nll_loss2d_forward.default", weighted, kSavesBoth, loss_only);
  t.add<nll_loss_backward_grad>("aten::nll_loss_backward.default", {"grad_output", "self"}, kSavesInputs);
  t.add<nll_loss_backward_grad>("aten::nll_loss2d_backward.default", {"grad_output", "self"}, kSavesInputs);
  for (const char* op : {"aten::nll_loss.default", "aten::nll_loss2d.default", "aten::nll_loss_nd.default"})
    t.add<nll_loss_grad>(op, weighted, kSavesInputs);
  t.add<cross_entropy_grad>("aten::cross_entropy_loss.default", {"self", "target", "weight"}, kSavesInputs);
  t.add<mse_loss_grad>("aten::mse_loss.default", both, kSavesInputs);
  t.add<mse_loss_backward_grad>("aten::mse_loss_backward.default", {"grad_output", "self", "target"}, kSavesInputs);
  t.add<l1_loss_grad>("aten::l1_loss.default", both, kSavesInputs);
  t.add<smooth_l1_loss_grad>("aten::smooth_l1_loss.default", both, kSavesInputs);
  t.add<huber_loss_grad>("aten::huber_loss.default", both, kSavesInputs);
  t.add<kl_div_grad>("aten::kl_div.default", both, kSavesInputs);
  t.add<binary_cross_entropy_grad>("aten::binary_cross_entropy.default", both, kSavesInputs);
  t.add<bce_with_logits_grad>("aten::binary_cross_entropy_with_logits.default", both, kSavesInputs);
}

}  // namespace kiln::aot
