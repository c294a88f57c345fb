// Softmax and the normalizations, through ATen's backward kernels where
// PyTorch uses them; group norm (which has no backward kernel here) and the
// composite spellings through their decompositions.
#include "compiler/aot/grad_context.h"
#include "compiler/aot/grad_ops.h"

namespace kiln::aot {
namespace {

const std::vector<bool> kFirstOutputOnly{true, false, false};

void softmax_grad(GradContext& x) {
  Var self = x.var("self");
  const char* kernel = x.call.op == "aten::_softmax.default" ? "aten::_softmax_backward_data.default"
                                                              : "aten::_log_softmax_backward_data.default";
  x.set("self", x.e.call1(kernel, {x.grad(), x.out(), x.integer("dim"), x.e.dtype(self)}));
}

// softmax.int / log_softmax.int: an optional cast, then the underscore op.
void softmax_int_grad(GradContext& x) {
  x.via([&](Emitter& e) {
    Var s = x.var("self");
    if (!x.is_none("dtype")) s = cast(e, s, x.value("dtype").to_dtype());
    const char* op = x.call.op == "aten::softmax.int" ? "aten::_softmax.default" : "aten::_log_softmax.default";
    return std::vector<Var>{e.call1(op, {s, x.integer("dim"), false})};
  });
}

// Double backward of the softmax kernels, from their formulas.
void softmax_backward_data_grad(GradContext& x) {
  x.via([&](Emitter& e) {
    Var go = x.var("grad_output"), y = x.var("output");
    std::vector<int64_t> dim{x.integer("dim")};
    Var r = x.call.op == "aten::_softmax_backward_data.default"
                ? mul(e, y, sub(e, go, sum(e, mul(e, go, y), dim, true)))
                : sub(e, go, mul(e, unary(e, "aten::exp.default", y), sum(e, go, dim, true)));
    return std::vector<Var>{cast(e, r, x.value("input_dtype").to_dtype())};
  });
}

void native_layer_norm_grad(GradContext& x) {
  Emitter& e = x.e;
  Var input = x.var("input");
  std::vector<int64_t> shape = x.ints("normalized_shape");
  // The kernel reports no weight/bias gradient without those tensors, and an
  // emitter holds no missing outputs: stand in ones and zeros.
  std::optional<Var> w = x.opt_var("weight"), b = x.opt_var("bias");
  Var weight = w ? *w : e.call1("aten::ones.default", {shape}, {{"dtype", e.dtype(input)}});
  Var bias = b ? *b : zeros(e, shape, e.dtype(weight));
  std::vector<Var> g = e.call("aten::native_layer_norm_backward.default",
                              {x.grad(), input, shape, x.out(1), x.out(2), weight, bias,
                               Value(ValueList{true, true, true})});
  Var grad_input = g[0];
  // Gradients reaching the saved mean and rstd come only from differentiating
  // the backward kernel again (create_graph): mean = sum(x) / N and
  // rstd = (var + eps)^-1/2 give d mean / dx = 1 / N and
  // d rstd / dx = -rstd^3 (x - mean) / N over each normalized group.
  if (x.grad(1) || x.grad(2)) {
    const Shape sizes = e.sizes(input);
    double n = 1;
    for (int64_t s : shape) n *= double(s);
    Var through_stats = zeros_like(e, input);
    if (std::optional<Var> g_mean = x.grad(1)) through_stats = add(e, through_stats, expand(e, div(e, *g_mean, n), sizes));
    if (std::optional<Var> g_rstd = x.grad(2)) {
      Var rstd = x.out(2);
      Var scale = mul(e, *g_rstd, mul(e, mul(e, rstd, rstd), rstd));
      through_stats = sub(e, through_stats, div(e, mul(e, sub(e, input, x.out(1)), scale), n));
    }
    grad_input = add(e, grad_input, through_stats);
  }
  x.set("input", grad_input);
  if (w) x.set("weight", g[1]);
  if (b) x.set("bias", g[2]);
}

// Double backward of the layer norm kernel: its computation written out in
// primitive ops, differentiated through. For any grad_out, input, mean, rstd:
//   xhat = (input - mean) rstd, g = grad_out * weight,
//   grad_input = rstd (g - mean(g) - xhat mean(g xhat)) over the normalized dims,
//   grad_weight = sum of grad_out xhat, grad_bias = sum of grad_out over the others
// (algebraically ATen's kernel: dx = rstd g + b x + c), so mean and rstd get
// their own gradients, which the forward's formula takes back to the input.
void native_layer_norm_backward_grad(GradContext& x) {
  x.via([&](Emitter& e) {
    Var go = x.var("grad_out"), input = x.var("input"), mean = x.var("mean"), rstd = x.var("rstd");
    const int64_t nd = e.dim(input), k = int64_t(x.ints("normalized_shape").size());
    std::vector<int64_t> normalized, batch;
    for (int64_t d = 0; d < nd; ++d) (d >= nd - k ? normalized : batch).push_back(d);
    double n = 1;
    for (int64_t d : normalized) n *= double(e.sizes(input)[size_t(d)]);
    Var xhat = mul(e, sub(e, input, mean), rstd);
    std::optional<Var> weight = x.opt_var("weight");
    Var g = weight ? mul(e, go, *weight) : go;
    Var mean_g = div(e, sum(e, g, normalized, true), n);
    Var mean_gx = div(e, sum(e, mul(e, g, xhat), normalized, true), n);
    Var grad_input = mul(e, rstd, sub(e, sub(e, g, mean_g), mul(e, xhat, mean_gx)));
    Var grad_weight = batch.empty() ? mul(e, go, xhat) : sum(e, mul(e, go, xhat), batch, false);
    Var grad_bias = batch.empty() ? go : sum(e, go, batch, false);
    return std::vector<Var>{grad_input, grad_weight, grad_bias};
  });
}

void layer_norm_grad(GradContext& x) {
  x.via([&](Emitter& e) {
    return std::vector<Var>{e.call("aten::native_layer_norm.default",
                                   {x.var("input"), x.ints("normalized_shape"), x.arg("weight"), x.arg("bias"),
                                    x.real("eps")})[0]};
  });
}

// native_batch_norm_backward for a forward with (possibly missing) running
// stats and the saved mean / invstd of training mode.
void batch_norm_backward(GradContext& x, const EArg& running_mean, const EArg& running_var, const EArg& save_mean,
                         const EArg& save_invstd, bool training) {
  std::vector<Var> g = x.e.call("aten::native_batch_norm_backward.default",
                                {x.grad(), x.var("input"), x.arg("weight"), running_mean, running_var, save_mean,
                                 save_invstd, training, x.real("eps"), Value(ValueList{true, true, true})});
  x.set("input", g[0]);
  if (x.needs("weight")) x.set("weight", g[1]);
  if (x.needs("bias")) x.set("bias", g[2]);
}

// In training the saved mean and invstd are functions of the input, and only
// differentiating the backward kernel again (create_graph) sends them
// gradients: per channel, d mean / dx = 1 / n and d invstd / dx =
// -invstd^3 (x - mean) / n, n the elements of a channel.
void through_batch_stats(GradContext& x) {
  if (!x.grad(1) && !x.grad(2)) return;
  Emitter& e = x.e;
  Var input = x.var("input");
  const Shape sizes = e.sizes(input);
  Shape channel(sizes.size(), 1);
  channel[1] = sizes[1];
  const double n = double(shape_numel(sizes)) / double(sizes[1]);
  Var g = zeros_like(e, input);
  if (std::optional<Var> g_mean = x.grad(1)) g = add(e, g, expand(e, reshape(e, div(e, *g_mean, n), channel), sizes));
  if (std::optional<Var> g_invstd = x.grad(2)) {
    Var invstd = reshape(e, x.out(2), channel);
    Var scale = mul(e, reshape(e, *g_invstd, channel), mul(e, mul(e, invstd, invstd), invstd));
    g = sub(e, g, div(e, mul(e, sub(e, input, reshape(e, x.out(1), channel)), scale), n));
  }
  x.set("input", add(e, *x.result()[0], g));
}

void native_batch_norm_grad(GradContext& x) {
  const std::string& op = x.call.op;
  if (op == "aten::_native_batch_norm_legit.no_stats") {
    batch_norm_backward(x, EArg::none(), EArg::none(), x.out(1), x.out(2), x.boolean("training"));
    if (x.boolean("training")) through_batch_stats(x);
    return;
  }
  bool training = op == "aten::_native_batch_norm_legit_no_training.default" ? false : x.boolean("training");
  batch_norm_backward(x, x.arg("running_mean"), x.arg("running_var"), x.out(1), x.out(2), training);
  if (training) through_batch_stats(x);
}

// Double backward of the batch norm kernel: its computation in primitive ops,
// differentiated through, for any statistics given. Per channel (dim 1):
//   training: xhat = (x - save_mean) save_invstd, with g = grad_out * weight
//     grad_input = save_invstd (g - mean(g) - xhat mean(g xhat));
//   eval: invstd = (running_var + eps)^-1/2, xhat = (x - running_mean) invstd,
//     grad_input = g invstd;
//   grad_weight = sum of grad_out xhat, grad_bias = sum of grad_out.
void native_batch_norm_backward_grad(GradContext& x) {
  x.via([&](Emitter& e) {
    Var go = x.var("grad_out"), input = x.var("input");
    const Shape sizes = e.sizes(input);
    Shape channel(sizes.size(), 1);
    channel[1] = sizes[1];
    std::vector<int64_t> others;
    for (int64_t d = 0; d < int64_t(sizes.size()); ++d)
      if (d != 1) others.push_back(d);
    const double n = double(shape_numel(sizes)) / double(sizes[1]);
    const bool train = x.boolean("train");
    Var mean = reshape(e, x.var(train ? "save_mean" : "running_mean"), channel);
    Var invstd = train ? reshape(e, x.var("save_invstd"), channel)
                       : reshape(e, unary(e, "aten::rsqrt.default", add(e, x.var("running_var"), x.real("eps"))), channel);
    Var xhat = mul(e, sub(e, input, mean), invstd);
    std::optional<Var> weight = x.opt_var("weight");
    Var g = weight ? mul(e, go, reshape(e, *weight, channel)) : go;
    Var grad_input = mul(e, g, invstd);
    if (train) {
      Var mean_g = div(e, sum(e, g, others, true), n);
      Var mean_gx = div(e, sum(e, mul(e, g, xhat), others, true), n);
      grad_input = mul(e, invstd, sub(e, sub(e, g, mean_g), mul(e, xhat, mean_gx)));
    }
    return std::vector<Var>{grad_input, sum(e, mul(e, go, xhat), others, false), sum(e, go, others, false)};
  });
}

// batch_norm returns no saved statistics; in training they are recomputed
// (without running stats, so nothing is updated twice).
void batch_norm_grad(GradContext& x) {
  bool training = x.boolean("training") || x.is_none("running_mean");
  if (!training)
    return batch_norm_backward(x, x.arg("running_mean"), x.arg("running_var"), EArg::none(), EArg::none(), false);
  std::vector<Var> stats = x.e.call("aten::native_batch_norm.default",
                                    {x.var("input"), x.arg("weight"), x.arg("bias"), EArg::none(), EArg::none(), true,
                                     x.real("momentum"), x.real("eps")});
  batch_norm_backward(x, EArg::none(), EArg::none(), stats[1], stats[2], true);
}

// Group norm as view + var_mean + affine, differentiated through.
std::vector<Var> group_norm_forward(Emitter& e, Var input, std::optional<Var> weight, std::optional<Var> bias,
                                    int64_t groups, double eps) {
  Shape sizes = e.sizes(input);
  int64_t n = sizes[0], c = sizes.size() > 1 ? sizes[1] : 1;
  Var xr = reshape(e, input, {n, groups, -1});
  std::vector<Var> vm = e.call("aten::var_mean.correction", {xr, std::vector<int64_t>{2}},
                               {{"correction", int64_t(0)}, {"keepdim", true}});
  Var rstd = unary(e, "aten::rsqrt.default", add(e, vm[0], eps));
  Var y = reshape(e, mul(e, sub(e, xr, vm[1]), rstd), sizes);
  Shape channel(sizes.size(), 1);
  if (sizes.size() > 1) channel[1] = c;
  if (weight) y = mul(e, y, reshape(e, *weight, channel));
  if (bias) y = add(e, y, reshape(e, *bias, channel));
  return {y, reshape(e, vm[1], {n, groups}), reshape(e, rstd, {n, groups})};
}
void native_group_norm_grad(GradContext& x) {
  x.via([&](Emitter& e) {
    return group_norm_forward(e, x.var("input"), x.opt_var("weight"), x.opt_var("bias"), x.integer("group"),
                              x.real("eps"));
  });
}
void group_norm_grad(GradContext& x) {
  x.via([&](Emitter& e) {
    return std::vector<Var>{group_norm_forward(e, x.var("input"), x.opt_var("weight"), x.opt_var("bias"),
                                               x.integer("num_groups"), x.real("eps"))[0]};
  });
}

}  // namespace

void register_normalization_derivatives(DerivativeTable& t) {
  const std::vector<std::string> self{"self"}, affine{"input", "weight", "bias"};
  t.add<softmax_grad>("aten::_softmax.default", self, kSavesOutputs);
  t.add<softmax_grad>("aten::_log_softmax.default", self, kSavesOutputs);
  t.add<softmax_int_grad>("aten::softmax.int", self, kSavesInputs);
  t.add<softmax_int_grad>("aten::log_softmax.int", self, kSavesInputs);
  t.add<softmax_backward_data_grad>("aten::_softmax_backward_data.default", {"grad_output", "output"}, kSavesInputs);
  t.add<softmax_backward_data_grad>("aten::_log_softmax_backward_data.default", {"grad_output", "output"},
                                    kSavesInputs);
  t.add<native_layer_norm_grad>("aten::native_layer_norm.default", affine, kSavesBoth);
  t.add<native_layer_norm_backward_grad>("aten::native_layer_norm_backward.default",
                                         {"grad_out", "input", "mean", "rstd", "weight"}, kSavesInputs);
  t.add<layer_norm_grad>("aten::layer_norm.default", affine, kSavesInputs);
  for (const char* op : {"aten::native_batch_norm.default", "aten::_native_batch_norm_legit.default",
                         "aten::_native_batch_norm_legit.no_stats"})
    t.add<native_batch_norm_grad>(op, affine, kSavesBoth);
  t.add<native_batch_norm_grad>("aten::_native_batch_norm_legit_no_training.default", affine, kSavesBoth,
                                kFirstOutputOnly);
  // The running statistics' new values are not differentiable, as in PyTorch.
  t.add<native_batch_norm_grad>("aten::_native_batch_norm_legit_functional.default", affine, kSavesBoth,
                                {true, true, true, false, false});
  t.add<native_batch_norm_backward_grad>("aten::native_batch_norm_backward.default",
                                         {"grad_out", "input", "weight", "running_mean", "running_var", "save_mean",
                                          "save_invstd"},
                                         kSavesInputs);
  t.add<batch_norm_grad>("aten::batch_norm.default", affine, kSavesInputs);
  t.add<native_group_norm_grad>("aten::native_group_norm.default", affine, kSavesInputs);
  t.add<group_norm_grad>("aten::group_norm.default", affine, kSavesInputs);
  // One fused kernel in PyTorch, a chain of ops here: keep the chain in float32.
  t.float32_for_reduced("aten::native_group_norm.default");
  t.float32_for_reduced("aten::group_norm.default");
}

}  // namespace kiln::aot
