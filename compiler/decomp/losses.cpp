// Losses: an elementwise formula and a reduction (0 none, 1 mean, 2 sum), and
// nll_loss as a gather of the target classes.
#include <limits>

#include "compiler/decomp/decomp_util.h"

namespace kiln::decomp {
namespace {

enum Reduction : int64_t { kNone = 0, kMean = 1, kSum = 2 };

Var reduce_loss(Emitter& e, Var loss, int64_t reduction) {
  switch (reduction) {
    case kNone:
      return loss;
    case kMean:
      return e.call1("aten::mean.default", {loss});
    case kSum:
      return sum(e, loss, all_dims(e.dim(loss)), false);
  }
  throw Error(std::to_string(reduction) + " is not a valid value for reduction");
}

std::vector<Var> mse_loss(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var d = sub(e, b.var(0), b.var(1));
  return one(reduce_loss(e, mul(e, d, d), b.integer(2)));
}

std::vector<Var> l1_loss(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(reduce_loss(e, unary(e, "abs", sub(e, b.var(0), b.var(1))), b.integer(2)));
}

// |d| < beta ? 0.5 d^2 / beta : |d| - 0.5 beta.
std::vector<Var> smooth_l1_loss(Emitter& e, const DecompCall& c) {
  Bound b(c);
  double beta = b.real(3);
  KILN_USER_CHECK(beta >= 0, "smooth_l1_loss does not support negative values for beta.");
  Var d = unary(e, "abs", sub(e, b.var(0), b.var(1)));
  Var loss = d;
  if (beta > 0)
    loss = where(e, compare(e, "lt", d, beta), div(e, mul(e, mul(e, d, d), 0.5), beta), sub(e, d, 0.5 * beta));
  return one(reduce_loss(e, loss, b.integer(2)));
}

// |d| < delta ? 0.5 d^2 : delta (|d| - 0.5 delta).
std::vector<Var> huber_loss(Emitter& e, const DecompCall& c) {
  Bound b(c);
  double delta = b.real(3);
  KILN_USER_CHECK(delta > 0, "huber_loss does not support non-positive values for delta.");
  Var d = unary(e, "abs", sub(e, b.var(0), b.var(1)));
  Var loss = where(e, compare(e, "lt", d, delta), mul(e, mul(e, d, d), 0.5), mul(e, sub(e, d, 0.5 * delta), delta));
  return one(reduce_loss(e, loss, b.integer(2)));
}

Var clamp_min(Emitter& e, Var x, double lo) { return e.call1("aten::clamp.default", {x, lo, EArg::none()}); }

// (t - 1) * max(log(1 - x), -100) - t * max(log x, -100), times weight.
std::vector<Var> binary_cross_entropy(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0), t = b.var(1);
  Var log_x = clamp_min(e, unary(e, "log", x), -100.0);
  Var log_1mx = clamp_min(e, unary(e, "log1p", neg(e, x)), -100.0);
  Var loss = sub(e, mul(e, sub(e, t, 1.0), log_1mx), mul(e, t, log_x));
  if (std::optional<Var> w = b.opt_var(2)) loss = mul(e, loss, *w);
  return one(reduce_loss(e, loss, b.integer(3)));
}

// (1 - t) * x - (1 + (pos_weight - 1) * t) * log_sigmoid(x), times weight, with
// log_sigmoid(x) = min(x, 0) - log1p(exp(-|x|)) so that large |x| stays finite.
std::vector<Var> binary_cross_entropy_with_logits(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0), t = b.var(1);
  Var min0 = e.call1("aten::clamp.default", {x, EArg::none(), 0.0});
  Var log_sigmoid = sub(e, min0, unary(e, "log1p", unary(e, "exp", neg(e, unary(e, "abs", x)))));
  Var log_weight = log_sigmoid;
  if (std::optional<Var> pw = b.opt_var(3)) log_weight = mul(e, add(e, mul(e, sub(e, *pw, 1.0), t), 1.0), log_sigmoid);
  Var loss = sub(e, mul(e, e.call1("aten::rsub.Scalar", {t, 1.0}), x), log_weight);
  if (std::optional<Var> w = b.opt_var(2)) loss = mul(e, loss, *w);
  return one(reduce_loss(e, loss, b.integer(4)));
}

// log_target: exp(t) * (t - x); else xlogy(t, t) - t * x.
std::vector<Var> kl_div(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0), t = b.var(1);
  Var loss = b.boolean(3) ? mul(e, unary(e, "exp", t), sub(e, t, x))
                          : sub(e, e.call1("aten::xlogy.Tensor", {t, t}), mul(e, t, x));
  return one(reduce_loss(e, loss, b.integer(2)));
}

// 2 (x - t) g, divided by numel for Mean.
std::vector<Var> mse_loss_backward(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var g = b.var(0), x = b.var(1), t = b.var(2);
  double norm = b.integer(3) == kMean ? 2.0 / double(e.tensor(x).numel()) : 2.0;
  return one(mul(e, mul(e, sub(e, x, t), norm), g));
}

// The targets of an nll call with their class dim made explicit: input [N, C, ...]
// (a [C] input counts as N = 1) and target [N, ...].
struct NllTargets {
  Var x, target;
  bool unbatched = false;
  Var valid;   // target != ignore_index
  Var safe;    // target with ignored entries pointing at class 0
  Var weight;  // per target: weight[target] (or 1), 0 where ignored
};

NllTargets nll_targets(Emitter& e, Var x, Var target, std::optional<Var> weight, int64_t ignore_index) {
  NllTargets n;
  n.unbatched = e.dim(x) == 1;
  n.x = n.unbatched ? unsqueeze(e, x, 0) : x;
  n.target = n.unbatched ? unsqueeze(e, target, 0) : target;
  KILN_USER_CHECK(e.dim(n.x) >= 2 && e.dim(n.target) == e.dim(n.x) - 1, "nll_loss: input ", shape_str(e.sizes(x)),
                  " and target ", shape_str(e.sizes(target)), " do not match");
  n.valid = compare(e, "ne", n.target, ignore_index);
  n.safe = where(e, n.valid, n.target, scalar_tensor(e, int64_t(0), e.dtype(n.target)));
  DType t = e.dtype(n.x);
  Var w = weight ? e.call1("aten::index.Tensor", {*weight, EArg::list({n.safe})}) : to_dtype(e, n.valid, t);
  n.weight = weight ? where_scalar_else(e, n.valid, w, 0.0) : w;
  return n;
}

// -w[t] * x[n, t, ...]: the per-target losses, shaped like the target.
Var nll_picked(Emitter& e, const NllTargets& n) {
  Var picked = e.call1("aten::gather.default", {n.x, int64_t(1), unsqueeze(e, n.safe, 1)});
  return mul(e, neg(e, squeeze_dims(e, picked, {1})), n.weight);
}

std::vector<Var> nll_forward_of(Emitter& e, Var x, Var target, std::optional<Var> weight, int64_t reduction,
                                int64_t ignore_index) {
  NllTargets n = nll_targets(e, x, target, weight, ignore_index);
  Var loss = nll_picked(e, n);
  DType t = e.dtype(x);
  if (reduction == kNone) {
    if (n.unbatched) loss = squeeze_dims(e, loss, {0});
    return {loss, full(e, {}, 0.0, t)};
  }
  std::vector<int64_t> dims = all_dims(e.dim(loss));
  Var total = sum(e, loss, dims, false), total_weight = sum(e, n.weight, dims, false);
  if (reduction == kMean) total = div(e, total, total_weight);
  return {total, total_weight};
}

// nll_loss_forward / nll_loss2d_forward(self, target, weight, reduction, ignore_index) -> (output, total_weight).
std::vector<Var> nll_loss_forward(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return nll_forward_of(e, b.var(0), b.var(1), b.opt_var(2), b.integer(3), b.integer(4));
}
// nll_loss / nll_loss2d / nll_loss_nd: the output alone.
std::vector<Var> nll_loss(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return {nll_forward_of(e, b.var(0), b.var(1), b.opt_var(2), b.integer(3), b.integer(4)).at(0)};
}

// nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight):
// -w[t] * g (g / total_weight for Mean) scattered into the target classes.
std::vector<Var> nll_loss_backward(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var g = b.var(0), x = b.var(1);
  int64_t reduction = b.integer(4);
  NllTargets n = nll_targets(e, x, b.var(2), b.opt_var(3), b.integer(5));
  if (reduction == kNone && n.unbatched) g = unsqueeze(e, g, 0);
  if (reduction == kMean) g = div(e, g, b.var(6));
  Var src = unsqueeze(e, mul(e, neg(e, n.weight), g), 1);
  Var zeros = full(e, e.sizes(n.x), 0.0, e.dtype(x));
  Var grad = e.call1("aten::scatter.src", {zeros, int64_t(1), unsqueeze(e, n.safe, 1), src});
  return one(n.unbatched ? squeeze_dims(e, grad, {0}) : grad);
}

// cross_entropy_loss(self, target, weight, reduction, ignore_index, label_smoothing):
// log_softmax over the class dim, then nll (class targets) or a weighted sum (probabilities).
std::vector<Var> cross_entropy_loss(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0), target = b.var(1);
  std::optional<Var> weight = b.opt_var(2);
  int64_t reduction = b.integer(3), ignore = b.integer(4);
  double ls = b.real(5);
  KILN_USER_CHECK(ls >= 0.0 && ls <= 1.0, "label_smoothing must be between 0.0 and 1.0. Got: ", ls);
  KILN_USER_CHECK(e.dim(x) >= 1, "cross_entropy: expected an input with at least 1 dim");
  const int64_t class_dim = e.dim(x) == 1 ? 0 : 1;
  const int64_t C = e.sizes(x)[size_t(class_dim)];
  Var logp = e.call1("aten::_log_softmax.default", {x, class_dim, false});
  Shape wview{C};
  for (int64_t d = class_dim + 1; d < e.dim(x); ++d) wview.push_back(1);

  if (e.sizes(x) == e.sizes(target)) {  // class probabilities
    KILN_USER_CHECK(ignore < 0, "ignore_index is not supported for floating point target");
    Var t = ls > 0 ? add(e, mul(e, target, 1.0 - ls), ls / double(C)) : target;
    Var prod = mul(e, logp, t);
    if (weight) prod = mul(e, prod, reshape(e, *weight, wview));
    Var per_sample = neg(e, sum(e, prod, {class_dim}, false));
    if (reduction == kNone) return one(per_sample);
    Var total = sum(e, per_sample, all_dims(e.dim(per_sample)), false);
    if (reduction == kMean) total = div(e, total, double(e.tensor(x).numel()) / double(C));
    return one(total);
  }
  std::vector<Var> nll = nll_forward_of(e, logp, target, weight, reduction, ignore);
  if (ls == 0) return {nll[0]};
  // Label smoothing adds ls / C times -sum_c(logp * w) over the targets not ignored.
  NllTargets n = nll_targets(e, logp, target, weight, ignore);
  Var wsum = weight ? mul(e, n.x, reshape(e, *weight, wview)) : n.x;
  Var smooth = neg(e, sum(e, wsum, {1}, false));
  smooth = where_scalar_else(e, n.valid, smooth, 0.0);
  if (n.unbatched && reduction == kNone) smooth = squeeze_dims(e, smooth, {0});
  if (reduction != kNone) {
    smooth = sum(e, smooth, all_dims(e.dim(smooth)), false);
    if (reduction == kMean) smooth = div(e, smooth, sum(e, n.weight, all_dims(e.dim(n.weight)), false));
  }
  return one(add(e, mul(e, nll[0], 1.0 - ls), mul(e, smooth, ls / double(C))));
}

}  // namespace

void add_loss_decomps(DecompTable& t) {
  t["aten::mse_loss.default"] = mse_loss;
  t["aten::l1_loss.default"] = l1_loss;
  t["aten::smooth_l1_loss.default"] = smooth_l1_loss;
  t["aten::huber_loss.default"] = huber_loss;
  t["aten::binary_cross_entropy.default"] = binary_cross_entropy;
  t["aten::binary_cross_entropy_with_logits.default"] = binary_cross_entropy_with_logits;
  t["aten::kl_div.default"] = kl_div;
  t["aten::mse_loss_backward.default"] = mse_loss_backward;
  t["aten::nll_loss_forward.default"] = nll_loss_forward;
  t["aten::nll_loss2d_forward.default"] = nll_loss_forward;
  t["aten::nll_loss.default"] = nll_loss;
  t["aten::nll_loss2d.default"] = nll_loss;
  t["aten::nll_loss_nd.default"] = nll_loss;
  t["aten::nll_loss_backward.default"] = nll_loss_backward;
  t["aten::nll_loss2d_backward.default"] = nll_loss_backward;
  t["aten::cross_entropy_loss.default"] = cross_entropy_loss;
}

}  // namespace kiln::decomp
