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
  x.set("input", g[0]);
  if (w) x.set("weight", g[1]);
  if (b) x.set("bias", g[2]);
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

void native_batch_norm_grad(GradContext& x) {
  const std::string& op = x.call.op;
  if (op == "aten::_native_batch_norm_legit.no_stats")
    return batch_norm_backward(x, EArg::none(), EArg::none(), x.out(1), x.out(2), x.boolean("training"));
  bool training = op == "aten::_native_batch_norm_legit_no_training.default" ? false : x.boolean("training");
  batch_norm_backward(x, x.arg("running_mean"), x.arg("running_var"), x.out(1), x.out(2), training);
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
  t.add<native_layer_norm_grad>("aten::native_layer_norm.default", affine, kSavesBoth, kFirstOutputOnly);
  t.add<layer_norm_grad>("aten::layer_norm.default", affine, kSavesInputs);
  for (const char* op : {"aten::native_batch_norm.default", "aten::_native_batch_norm_legit.default",
                         "aten::_native_batch_norm_legit.no_stats",
                         "aten::_native_batch_norm_legit_no_training.default"})
    t.add<native_batch_norm_grad>(op, affine, kSavesBoth, kFirstOutputOnly);
  t.add<batch_norm_grad>("aten::batch_norm.default", affine, kSavesInputs);
  t.add<native_group_norm_grad>("aten::native_group_norm.default", affine, kSavesInputs);
  t.add<group_norm_grad>("aten::group_norm.default", affine, kSavesInputs);
  // One fused kernel in PyTorch, a chain of ops here: keep the chain in float32.
  t.float32_for_reduced("aten::native_group_norm.default");
  t.float32_for_reduced("aten::group_norm.default");
}

}  // namespace kiln::aot
