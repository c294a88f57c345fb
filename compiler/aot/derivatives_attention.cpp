// Scaled dot product attention: each fused forward kernel differentiates to
// its own backward kernel, as derivatives.yaml writes it. Only the attention
// output carries gradient (logsumexp, the philox state, cum_seq and max_q /
// max_k are not differentiable). The backward kernels have no formula of
// their own yet (no double backward through attention).
#include "compiler/aot/grad_context.h"
#include "compiler/aot/grad_ops.h"

namespace kiln::aot {
namespace {

// query, key, value: _scaled_dot_product_flash_attention_for_cpu_backward(grad, query, key, value,
//   output, logsumexp, dropout_p, is_causal, attn_mask, scale); the mask gets no gradient.
void flash_for_cpu_grad(GradContext& x) {
  std::vector<Var> g = x.e.call("aten::_scaled_dot_product_flash_attention_for_cpu_backward.default",
                                {x.grad(), x.var("query"), x.var("key"), x.var("value"), x.out(0), x.out(1),
                                 x.arg("dropout_p"), x.arg("is_causal")},
                                {{"attn_mask", x.arg("attn_mask")}, {"scale", x.arg("scale")}});
  x.set("query", g[0]);
  x.set("key", g[1]);
  x.set("value", g[2]);
}

// query, key, value, attn_bias: _scaled_dot_product_efficient_attention_backward(grad, query, key,
//   value, attn_bias, output, log_sumexp, philox_seed, philox_offset, dropout_p, grad_input_mask,
//   is_causal, scale). A forward called without compute_log_sumexp kept no
//   logsumexp: it is computed again (PyTorch asks for it whenever grad is needed).
void efficient_grad(GradContext& x) {
  Var lse = x.out(1);
  if (!x.boolean("compute_log_sumexp"))
    lse = x.e.call("aten::_scaled_dot_product_efficient_attention.default",
                   {x.var("query"), x.var("key"), x.var("value"), x.arg("attn_bias"), true, x.arg("dropout_p"),
                    x.arg("is_causal")},
                   {{"scale", x.arg("scale")}})[1];
  const bool bias_grad = x.needs("attn_bias");
  std::vector<Var> g = x.e.call(
      "aten::_scaled_dot_product_efficient_attention_backward.default",
      {x.grad(), x.var("query"), x.var("key"), x.var("value"), x.arg("attn_bias"), x.out(0), lse, x.out(2), x.out(3),
       x.arg("dropout_p"), Value(ValueList{true, true, true, bias_grad}), x.arg("is_causal")},
      {{"scale", x.arg("scale")}});
  x.set("query", g[0]);
  x.set("key", g[1]);
  x.set("value", g[2]);
  if (bias_grad) x.set("attn_bias", g[3]);
}

// query, key, value: _scaled_dot_product_flash_attention_backward(grad, query, key, value, output,
//   logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, rng_state, unused, scale).
// cum_seq_q / cum_seq_k are None for dense inputs and max_q / max_k the
// sequence lengths, read here from the shapes.
void flash_grad(GradContext& x) {
  const Shape q = x.e.sizes(x.var("query")), k = x.e.sizes(x.var("key"));
  std::vector<Var> g = x.e.call("aten::_scaled_dot_product_flash_attention_backward.default",
                                {x.grad(), x.var("query"), x.var("key"), x.var("value"), x.out(0), x.out(1), Value(),
                                 Value(), q.at(2), k.at(2), x.arg("dropout_p"), x.arg("is_causal"), x.out(6),
                                 x.out(7)},
                                {{"scale", x.arg("scale")}});
  x.set("query", g[0]);
  x.set("key", g[1]);
  x.set("value", g[2]);
}

// query, key, value: _scaled_dot_product_cudnn_attention_backward(grad, query, key, value, output,
//   logsumexp, philox_seed, philox_offset, attn_bias, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p,
//   is_causal, scale). attn_bias gets no gradient (derivatives.yaml lists none: PyTorch does not pick
//   cuDNN for a bias that requires grad); cum_seq_q / cum_seq_k are None and max_q / max_k the
//   sequence lengths, read from the shapes. The forward always gives logsumexp.
void cudnn_grad(GradContext& x) {
  const Shape q = x.e.sizes(x.var("query")), k = x.e.sizes(x.var("key"));
  std::vector<Var> g = x.e.call("aten::_scaled_dot_product_cudnn_attention_backward.default",
                                {x.grad(), x.var("query"), x.var("key"), x.var("value"), x.out(0), x.out(1), x.out(6),
                                 x.out(7), x.arg("attn_bias"), Value(), Value(), q.at(2), k.at(2), x.arg("dropout_p"),
                                 x.arg("is_causal")},
                                {{"scale", x.arg("scale")}});
  x.set("query", g[0]);
  x.set("key", g[1]);
  x.set("value", g[2]);
}

}  // namespace

void register_attention_derivatives(DerivativeTable& t) {
  const std::vector<std::string> qkv{"query", "key", "value"};
  t.add<flash_for_cpu_grad>("aten::_scaled_dot_product_flash_attention_for_cpu.default", qkv, kSavesBoth,
                            {true, false});
  t.add<efficient_grad>("aten::_scaled_dot_product_efficient_attention.default",
                        {"query", "key", "value", "attn_bias"}, kSavesBoth, {true, false, false, false});
  t.add<flash_grad>("aten::_scaled_dot_product_flash_attention.default", qkv, kSavesBoth,
                    {true, false, false, false, false, false, false, false, false});
  t.add<cudnn_grad>("aten::_scaled_dot_product_cudnn_attention.default", qkv, kSavesBoth,
                    {true, false, false, false, false, false, false, false, false});
}

}  // namespace kiln::aot
