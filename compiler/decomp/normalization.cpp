// Softmax and the norms as reductions plus pointwise math. 16-bit float inputs
// compute in float32 (OpMath), as the kernels and PyTorch's decompositions do;
// statistics come out in the dtype the op's meta function gives them.
#include "compiler/decomp/decomp_util.h"

namespace kiln::decomp {
namespace {

// exp(x - max) / sum, or (x - max) - log(sum) for the log form.
Var softmax_of(Emitter& e, Var x, int64_t dim, bool log) {
  dim = wrap_dim(dim, std::max<int64_t>(e.dim(x), 1));
  Var shifted = sub(e, x, amax(e, x, {dim}, true));
  Var ex = unary(e, "exp", shifted);
  Var total = sum(e, ex, {dim}, true);
  return log ? sub(e, shifted, unary(e, "log", total)) : div(e, ex, total);
}

std::vector<Var> softmax_private(Emitter& e, const DecompCall& c, bool log) {
  Bound b(c);
  Var x = b.var(0);
  DType in = e.dtype(x);
  DType out = b.boolean(2) && is_reduced_float(in) ? DType::Float32 : in;
  OpMath m(e, in);
  return one(to_dtype(e, softmax_of(e, m.up(x), b.integer(1), log), out));
}
std::vector<Var> softmax_(Emitter& e, const DecompCall& c) { return softmax_private(e, c, false); }
std::vector<Var> log_softmax_(Emitter& e, const DecompCall& c) { return softmax_private(e, c, true); }

// softmax.int(self, dim, dtype): cast first, then _softmax.
std::vector<Var> softmax_int(Emitter& e, const DecompCall& c, const char* op) {
  Bound b(c);
  Var x = b.var(0);
  if (std::optional<DType> t = b.opt_dtype(2)) x = to_dtype(e, x, *t);
  return one(e.call1(op, {x, b[1], false}));
}
std::vector<Var> softmax_int(Emitter& e, const DecompCall& c) { return softmax_int(e, c, "aten::_softmax.default"); }
std::vector<Var> log_softmax_int(Emitter& e, const DecompCall& c) {
  return softmax_int(e, c, "aten::_log_softmax.default");
}

// The gradient's dtype: a float32 gradient of a 16-bit input goes back to it.
DType softmax_grad_dtype(DType grad, DType input) {
  return grad == DType::Float32 && is_reduced_float(input) ? input : grad;
}

// softmax: y * (g - sum(g * y)); log-softmax: g - exp(y) * sum(g).
std::vector<Var> softmax_backward(Emitter& e, const DecompCall& c, bool log) {
  Bound b(c);
  Var g = b.var(0), y = b.var(1);
  int64_t dim = wrap_dim(b.integer(2), std::max<int64_t>(e.dim(g), 1));
  DType out = softmax_grad_dtype(e.dtype(g), b.value(3).to_dtype());
  OpMath m(e, e.dtype(g));
  g = m.up(g);
  y = to_dtype(e, y, m.compute);
  Var r = log ? sub(e, g, mul(e, unary(e, "exp", y), sum(e, g, {dim}, true)))
              : mul(e, y, sub(e, g, sum(e, mul(e, g, y), {dim}, true)));
  return one(to_dtype(e, r, out));
}
std::vector<Var> softmax_backward_data(Emitter& e, const DecompCall& c) { return softmax_backward(e, c, false); }

// Inductor's prims::prepare_softmax_online: its eager definition, the max and
// the sum of exp(x - max), both keeping dim, in the input's dtype (no OpMath:
// the prim does not upcast).
std::vector<Var> prepare_softmax_online(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  std::vector<int64_t> dim{b.integer(1)};
  Var max = amax(e, x, dim, true);
  return {max, sum(e, unary(e, "exp", sub(e, x, max)), dim, true)};
}
std::vector<Var> log_softmax_backward_data(Emitter& e, const DecompCall& c) { return softmax_backward(e, c, true); }

// The dtype of saved statistics: float32 when a 16-bit input comes with float32 parameters.
DType stats_dtype(Emitter& e, Var x, std::initializer_list<std::optional<Var>> params) {
  DType t = e.dtype(x);
  if (!is_reduced_float(t)) return t;
  for (const std::optional<Var>& p : params)
    if (p && e.dtype(*p) == DType::Float32) return DType::Float32;
  return t;
}

// Mean and 1/sqrt(biased variance + eps) over `dims`, kept as size-1 dims.
struct Moments {
  Var mean, diff, var, rstd;
};
Moments moments(Emitter& e, Var x, const std::vector<int64_t>& dims, double eps) {
  Moments m;
  m.mean = mean(e, x, dims, true);
  m.diff = sub(e, x, m.mean);
  m.var = mean(e, mul(e, m.diff, m.diff), dims, true);
  m.rstd = unary(e, "rsqrt", add(e, m.var, eps));
  return m;
}

// y * w + b with the optional parameters upcast like the input, viewed to broadcast.
Var affine(Emitter& e, Var y, std::optional<Var> w, std::optional<Var> b, const Shape& param_view) {
  DType t = e.dtype(y);
  if (w) y = mul(e, y, reshape(e, to_dtype(e, *w, t), param_view));
  if (b) y = add(e, y, reshape(e, to_dtype(e, *b, t), param_view));
  return y;
}

// native_layer_norm(input, normalized_shape, weight, bias, eps) -> (out, mean, rstd).
std::vector<Var> native_layer_norm(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  std::vector<int64_t> shape = b.ints(1);
  const int64_t axis = e.dim(x) - int64_t(shape.size());
  KILN_USER_CHECK(!shape.empty() && axis >= 0, "native_layer_norm: normalized_shape ", shape_str(shape),
                  " does not fit input ", shape_str(e.sizes(x)));
  std::vector<int64_t> dims;
  for (int64_t d = axis; d < e.dim(x); ++d) dims.push_back(d);
  std::optional<Var> w = b.opt_var(2), bias = b.opt_var(3);
  OpMath om(e, e.dtype(x));
  Moments m = moments(e, om.up(x), dims, b.real(4));
  Var y = affine(e, mul(e, m.diff, m.rstd), w, bias, shape);
  DType st = stats_dtype(e, x, {w, bias});
  return {om.down(y), to_dtype(e, m.mean, st), to_dtype(e, m.rstd, st)};
}

std::vector<Var> layer_norm(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return {e.call("aten::native_layer_norm.default", {b[0], b[1], b[2], b[3], b[4]}).at(0)};
}

struct BatchNormCall {
  Var x;
  std::optional<Var> w, b, running_mean, running_var;
  bool training = false;
  double eps = 1e-5;
  // _native_batch_norm_legit_functional: also return the running statistics'
  // new values, momentum * batch + (1 - momentum) * running (the variance unbiased).
  std::optional<double> update_momentum;
};

// Training normalizes with the batch statistics and returns them (mean, 1/std);
// evaluation uses the running ones and returns empty statistics. The running
// statistics' update in training is a mutation, which a functional graph cannot
// hold: functionalization turns it into outputs before this pass (docs/core_aten.md).
std::vector<Var> batch_norm_of(Emitter& e, const BatchNormCall& bn) {
  Var x = bn.x;
  const int64_t nd = e.dim(x);
  KILN_USER_CHECK(nd >= 2, "batch_norm: expected an input with at least 2 dims, got ", shape_str(e.sizes(x)));
  const int64_t C = e.sizes(x)[1];
  Shape param_view{C};
  for (int64_t d = 2; d < nd; ++d) param_view.push_back(1);
  DType st = stats_dtype(e, x, {bn.w, bn.b, bn.running_mean});
  OpMath om(e, e.dtype(x));
  Var xc = om.up(x);
  if (bn.training) {
    std::vector<int64_t> dims{0};
    for (int64_t d = 2; d < nd; ++d) dims.push_back(d);
    Moments m = moments(e, xc, dims, bn.eps);
    Var y = affine(e, mul(e, m.diff, m.rstd), bn.w, bn.b, param_view);
    Var save_mean = to_dtype(e, squeeze_dims(e, m.mean, dims), st);
    Var save_rstd = to_dtype(e, squeeze_dims(e, m.rstd, dims), st);
    if (!bn.update_momentum) return {om.down(y), save_mean, save_rstd};
    const double momentum = *bn.update_momentum;
    const double n = double(e.tensor(x).numel()) / double(std::max<int64_t>(C, 1));
    auto blend = [&](Var running, Var batch) {
      Var r = add(e, mul(e, batch, momentum), mul(e, to_dtype(e, running, om.compute), 1.0 - momentum));
      return to_dtype(e, r, e.dtype(running));
    };
    Var unbiased = mul(e, squeeze_dims(e, m.var, dims), n / (n - 1));
    return {om.down(y), save_mean, save_rstd, blend(*bn.running_mean, squeeze_dims(e, m.mean, dims)),
            blend(*bn.running_var, unbiased)};
  }
  KILN_USER_CHECK(bn.running_mean && bn.running_var, "running_mean must be defined in evaluation mode");
  Var mean = reshape(e, to_dtype(e, *bn.running_mean, om.compute), param_view);
  Var var = reshape(e, to_dtype(e, *bn.running_var, om.compute), param_view);
  Var rstd = unary(e, "rsqrt", add(e, var, bn.eps));
  Var y = affine(e, mul(e, sub(e, xc, mean), rstd), bn.w, bn.b, param_view);
  return {om.down(y), full(e, {0}, 0.0, st), full(e, {0}, 0.0, st)};
}

// native_batch_norm and _native_batch_norm_legit share their signature.
std::vector<Var> native_batch_norm(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return batch_norm_of(e, {b.var(0), b.opt_var(1), b.opt_var(2), b.opt_var(3), b.opt_var(4), b.boolean(5), b.real(7)});
}
std::vector<Var> batch_norm_functional(Emitter& e, const DecompCall& c) {
  Bound b(c);
  BatchNormCall bn{b.var(0), b.opt_var(1), b.opt_var(2), b.var(3), b.var(4), b.boolean(5), b.real(7)};
  if (!bn.training) {  // nothing to update: the statistics come back as they were
    std::vector<Var> out = batch_norm_of(e, bn);
    return {out[0], out[1], out[2], *bn.running_mean, *bn.running_var};
  }
  bn.update_momentum = b.real(6);
  return batch_norm_of(e, bn);
}
std::vector<Var> batch_norm_no_stats(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return batch_norm_of(e, {b.var(0), b.opt_var(1), b.opt_var(2), std::nullopt, std::nullopt, b.boolean(3), b.real(5)});
}
std::vector<Var> batch_norm_no_training(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return batch_norm_of(e, {b.var(0), b.opt_var(1), b.opt_var(2), b.var(3), b.var(4), false, b.real(6)});
}
std::vector<Var> batch_norm(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return {e.call("aten::native_batch_norm.default", {b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]}).at(0)};
}

// native_batch_norm_backward(grad_out, input, weight, running_mean, running_var,
// save_mean, save_invstd, train, eps, output_mask) as PyTorch's decomposition
// writes it: per channel, the sum of the gradient and its dot product with
// x - mean; training also projects out the batch statistics' dependence on x.
// Evaluation reads the running statistics. Masked-off outputs are None.
std::vector<Var> native_batch_norm_backward(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var g = b.var(0), x = b.var(1);
  std::optional<Var> w = b.opt_var(2);
  const bool train = b.boolean(7);
  const std::vector<int64_t> mask = b.ints(9, 3);
  const int64_t nd = e.dim(x);
  KILN_USER_CHECK(nd >= 2, "native_batch_norm_backward: expected an input with at least 2 dims, got ",
                  shape_str(e.sizes(x)));
  const int64_t C = e.sizes(x)[1];
  const DType in = e.dtype(x), param = w ? e.dtype(*w) : in;
  OpMath om(e, in);
  Shape param_view{C};
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < nd; ++d) param_view.push_back(1), dims.push_back(d);
  auto channel = [&](Var v) { return reshape(e, v, param_view); };  // [C] broadcast against x
  Var mean, invstd;
  if (train) {
    KILN_USER_CHECK(!b.is_none(5) && !b.is_none(6),
                    "native_batch_norm_backward: training needs save_mean and save_invstd");
    mean = om.up(b.var(5));
    invstd = om.up(b.var(6));
  } else {
    KILN_USER_CHECK(!b.is_none(3) && !b.is_none(4),
                    "native_batch_norm_backward: evaluation needs running_mean and running_var");
    mean = om.up(b.var(3));
    invstd = unary(e, "rsqrt", add(e, om.up(b.var(4)), b.real(8)));
  }
  const double n = double(e.tensor(x).numel()) / double(std::max<int64_t>(C, 1));
  const double norm = 1.0 / n;
  Var gc = om.up(g), xc = om.up(x);
  Var centered = sub(e, xc, channel(mean));
  Var grad_sum = sum(e, gc, dims, false);
  Var dot = sum(e, mul(e, gc, centered), dims, false);
  Var grad_scale = channel(w ? mul(e, invstd, om.up(*w)) : invstd);
  Var grad_input;
  if (mask[0]) {
    if (train) {
      Var proj_scale = channel(mul(e, mul(e, dot, norm), mul(e, invstd, invstd)));
      Var grad_mean = channel(mul(e, grad_sum, norm));
      grad_input = mul(e, sub(e, sub(e, gc, mul(e, centered, proj_scale)), grad_mean), grad_scale);
    } else {
      grad_input = mul(e, gc, grad_scale);
    }
    grad_input = om.down(grad_input);
  }
  Var grad_weight = mask[1] ? to_dtype(e, mul(e, dot, invstd), param) : Var{};
  Var grad_bias = mask[2] ? to_dtype(e, grad_sum, param) : Var{};
  return {grad_input, grad_weight, grad_bias};
}

// native_group_norm(input, weight, bias, N, C, HxW, group, eps) -> (out, mean [N, G], rstd [N, G]):
// layer norm over each group of channels.
std::vector<Var> native_group_norm(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  const int64_t N = b.integer(3), C = b.integer(4), HxW = b.integer(5), G = b.integer(6);
  KILN_USER_CHECK(G > 0 && C % G == 0, "Expected number of channels in input to be divisible by num_groups, but got ",
                  "input of shape ", shape_str(e.sizes(x)), " and num_groups=", G);
  std::optional<Var> w = b.opt_var(1), bias = b.opt_var(2);
  OpMath om(e, e.dtype(x));
  Var grouped = reshape(e, om.up(x), {N, G, (C / G) * HxW});
  Moments m = moments(e, grouped, {2}, b.real(7));
  Shape param_view{C};
  for (int64_t d = 2; d < e.dim(x); ++d) param_view.push_back(1);
  Var y = affine(e, reshape(e, mul(e, m.diff, m.rstd), e.sizes(x)), w, bias, param_view);
  DType st = stats_dtype(e, x, {w, bias});
  return {om.down(y), to_dtype(e, view(e, m.mean, {N, G}), st), to_dtype(e, view(e, m.rstd, {N, G}), st)};
}

std::vector<Var> group_norm(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  KILN_USER_CHECK(e.dim(x) >= 2, "group_norm: expected an input with at least 2 dims, got ", shape_str(e.sizes(x)));
  const int64_t N = e.sizes(x)[0], C = e.sizes(x)[1];
  const int64_t HxW = N * C == 0 ? 0 : e.tensor(x).numel() / (N * C);
  return {e.call("aten::native_group_norm.default", {x, b[2], b[3], N, C, HxW, b[1], b[4]}).at(0)};
}

}  // namespace

void add_normalization_decomps(DecompTable& t) {
  t["aten::_softmax.default"] = softmax_;
  t["aten::_log_softmax.default"] = log_softmax_;
  t["aten::softmax.int"] = softmax_int;
  t["aten::log_softmax.int"] = log_softmax_int;
  t["aten::_softmax_backward_data.default"] = softmax_backward_data;
  t["aten::_log_softmax_backward_data.default"] = log_softmax_backward_data;
  t["prims::prepare_softmax_online.default"] = prepare_softmax_online;
  t["aten::native_layer_norm.default"] = native_layer_norm;
  t["aten::layer_norm.default"] = layer_norm;
  t["aten::native_batch_norm.default"] = native_batch_norm;
  t["aten::_native_batch_norm_legit.default"] = native_batch_norm;
  t["aten::_native_batch_norm_legit.no_stats"] = batch_norm_no_stats;
  t["aten::_native_batch_norm_legit_functional.default"] = batch_norm_functional;
  t["aten::_native_batch_norm_legit_no_training.default"] = batch_norm_no_training;
  t["aten::batch_norm.default"] = batch_norm;
  t["aten::native_batch_norm_backward.default"] = native_batch_norm_backward;
  t["aten::native_group_norm.default"] = native_group_norm;
  t["aten::group_norm.default"] = group_norm;
}

}  // namespace kiln::decomp
