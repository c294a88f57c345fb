// The fused attention forwards PyTorch's CPU and memory-efficient paths call,
// into the unfused graph F.scaled_dot_product_attention's math path is:
// bmm of query and key (heads repeated for grouped query attention), scale,
// the mask (added, or -inf where a bool mask is false, and where a causal key
// lies past its query), softmax as amax, sub, exp, sum, div, and bmm with
// value; logsumexp = log(sum) + amax. 16-bit floats compute in float32. The
// output keeps the kernel's [B, L, H, Ev] storage order (a view of it must
// stay a view; the cuDNN op's follows the query's dim order) and the
// logsumexp its layout and float32 (float64) dtype. The cuDNN forward's
// other outputs are zero philox scalars and None / SymInt results, which
// graphs never read through getitem (a getitem of one is refused by name).
// The efficient backward decomposes into its recomputation from the saved
// logsumexp (P = exp(scores - lse), then the four products of the unfused
// backward and dS = P (dP - rowsum(P dP)), in float32 for 16-bit floats), so a training graph's backward runs
// as GEMMs and fused pointwise kernels and saves no [B, H, L, S] tensor from
// the forward; a bias's gradient (rows padded to 16 elements by the kernel's
// allocation) and grouped heads keep the op whole. The other backward kernels
// and the CUDA flash op stay whole (core, run as extern kernels): their
// outputs (philox state, SymInt lengths) are the kernels' own.
#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/decomp/decomp_util.h"
#include "core/ops/layout_util.h"

namespace kiln::decomp {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// [B, Hk, S, X] -> [B, Hq, S, X], each key/value head repeated for its query heads.
Var repeat_heads(Emitter& e, Var t, int64_t hq) {
  const Shape s = e.sizes(t);
  const int64_t g = hq / s[1];
  if (g == 1) return t;
  Var x = expand(e, unsqueeze(e, t, 2), {s[0], s[1], g, s[2], s[3]});
  return reshape(e, x, {s[0], hq, s[2], s[3]});
}

// Writes `t` ([B, H, X, Y]) into [B, X, H, Y] storage and views it back: the kernels' layout.
Var bxhy_layout(Emitter& e, Var t) {
  Var c = e.call1("aten::clone.default", {permute(e, t, {0, 2, 1, 3})}, {{"memory_format", "contiguous_format"}});
  return permute(e, c, {0, 2, 1, 3});
}

struct Attention {
  Var out, lse;  // [B, H, L, Ev] in the query's dtype; [B, H, L] in float32 (float64 for float64)
};

// `bxhy`: the output in [B, L, H, Ev] storage; else as bmm gives it (the caller lays it out).
Attention attention(Emitter& e, Var q0, Var k0, Var v0, std::optional<Var> mask, bool causal,
                    std::optional<double> scale_arg, bool bxhy = true) {
  const DType dt = e.dtype(q0);
  OpMath m(e, dt);
  Var q = m.up(q0), k = m.up(k0), v = m.up(v0);
  const Shape qs = e.sizes(q), ks = e.sizes(k), vs = e.sizes(v);
  KILN_USER_CHECK(qs.size() == 4 && ks.size() == 4 && vs.size() == 4, "expected 4-D query, key and value");
  const int64_t B = qs[0], H = qs[1], L = qs[2], E = qs[3], S = ks[2], Ev = vs[3];
  const double scale = scale_arg ? *scale_arg : 1.0 / std::sqrt(double(E));
  k = repeat_heads(e, k, H);
  v = repeat_heads(e, v, H);
  Var kt = reshape(e, permute(e, k, {0, 1, 3, 2}), {B * H, E, S});
  Var s = e.call1("aten::bmm.default", {reshape(e, q, {B * H, L, E}), kt});
  s = mul(e, view(e, s, {B, H, L, S}), scale);
  if (mask) {
    if (e.dtype(*mask) == DType::Bool) s = where_scalar_else(e, *mask, s, -kInf);
    else s = add(e, s, m.up(*mask));
  }
  if (causal) {
    Var rows = view(e, arange(e, L, DType::Int64), {L, 1});
    Var after = compare(e, "gt", arange(e, S, DType::Int64), rows);  // key past its query: [L, S]
    s = where_scalar_then(e, after, -kInf, s);
  }
  Var mx = amax(e, s, {3}, true);
  Var ex = unary(e, "exp", sub(e, s, mx));
  Var sm = sum(e, ex, {3}, true);
  Var p = div(e, ex, sm);
  Var o = e.call1("aten::bmm.default", {reshape(e, p, {B * H, L, S}), reshape(e, v, {B * H, S, Ev})});
  Attention r;
  r.out = to_dtype(e, view(e, o, {B, H, L, Ev}), dt);
  if (bxhy) r.out = bxhy_layout(e, r.out);
  r.lse = squeeze_dims(e, add(e, unary(e, "log", sm), mx), {3});
  r.lse = to_dtype(e, r.lse, dt == DType::Float64 ? DType::Float64 : DType::Float32);
  return r;
}

void refuse_dropout(const Bound& b, size_t i) {
  KILN_USER_CHECK(b.real(i) == 0.0, b.op(), ": dropout_p = ", b.real(i), " is not supported (only dropout_p = 0)");
}

// _scaled_dot_product_flash_attention_for_cpu(query, key, value, dropout_p, is_causal, *, attn_mask, scale)
//   -> (output [B, H, L, Ev] in [B, L, H, Ev] storage, logsumexp [B, H, L] in [B, L, H] storage)
std::vector<Var> flash_for_cpu(Emitter& e, const DecompCall& c) {
  Bound b(c);
  refuse_dropout(b, 3);
  Attention a = attention(e, b.var(0), b.var(1), b.var(2), b.opt_var(5), b.boolean(4), b.opt_real(6));
  Var lse = permute(e, e.call1("aten::clone.default", {permute(e, a.lse, {0, 2, 1})},
                               {{"memory_format", "contiguous_format"}}),
                    {0, 2, 1});
  return {a.out, lse};
}

// _scaled_dot_product_efficient_attention(query, key, value, attn_bias, compute_log_sumexp, dropout_p,
//   is_causal, *, scale) -> (output, log_sumexp [B, H, ceil(L / 32) * 32] padded with +inf or [B, H, 0],
//   philox_seed, philox_offset: int64 zeros)
std::vector<Var> efficient(Emitter& e, const DecompCall& c) {
  Bound b(c);
  refuse_dropout(b, 5);
  Attention a = attention(e, b.var(0), b.var(1), b.var(2), b.opt_var(3), b.boolean(6), b.opt_real(7));
  const Shape ls = e.sizes(a.lse);
  const DType ld = e.dtype(a.lse);
  Var lse;
  if (!b.boolean(4)) {
    lse = e.call1("aten::empty.memory_format", {Shape{ls[0], ls[1], 0}}, {{"dtype", ld}});
  } else {
    const int64_t padded = (ls[2] + 31) / 32 * 32;
    lse = padded == ls[2] ? a.lse : cat(e, {a.lse, full(e, {ls[0], ls[1], padded - ls[2]}, kInf, ld)}, 2);
  }
  Var zero = scalar_tensor(e, int64_t(0), DType::Int64);
  Var zero2 = scalar_tensor(e, int64_t(0), DType::Int64);
  return {a.out, lse, zero, zero2};
}

// `t` written into storage in the dim order of `strides` (outermost first) and viewed back.
Var with_layout(Emitter& e, Var t, const Shape& strides) {
  std::vector<int64_t> order{0, 1, 2, 3};
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return strides[size_t(a)] > strides[size_t(b)]; });
  std::vector<int64_t> back(4);
  for (size_t i = 0; i < 4; ++i) back[size_t(order[i])] = int64_t(i);
  Var c = e.call1("aten::clone.default", {permute(e, t, order)}, {{"memory_format", "contiguous_format"}});
  return permute(e, c, back);
}

// _scaled_dot_product_cudnn_attention(query, key, value, attn_bias, compute_log_sumexp, dropout_p,
//   is_causal, return_debug_mask, *, scale) -> (output in the query's dim order, logsumexp [B, H, L, 1]
//   contiguous, cum_seq_q None, cum_seq_k None, max_q, max_k (no node), philox_seed, philox_offset: int64
//   zeros, debug_attn_mask None). return_debug_mask declines (the kernel refuses it by name).
std::vector<Var> cudnn(Emitter& e, const DecompCall& c) {
  Bound b(c);
  refuse_dropout(b, 5);
  if (b.boolean(7)) return {};
  Attention a = attention(e, b.var(0), b.var(1), b.var(2), b.opt_var(3), b.boolean(6), b.opt_real(8), false);
  // PyTorch's alloc_with_matching_layout: the query's strides (empty_like) or its dim order.
  const Tensor& q = e.tensor(b.var(0));
  const Shape os = e.sizes(a.out);
  Var out = with_layout(e, a.out, q.sizes() == os ? preserve_strides(q) : infer_dense_strides(os, q.strides()));
  Var lse = unsqueeze(e, a.lse, 3);
  Var zero = scalar_tensor(e, int64_t(0), DType::Int64);
  Var zero2 = scalar_tensor(e, int64_t(0), DType::Int64);
  return {out, lse, Var{}, Var{}, Var{}, Var{}, zero, zero2, Var{}};
}

// _scaled_dot_product_efficient_attention_backward(grad_out, query, key, value, attn_bias, out, logsumexp,
//   philox_seed, philox_offset, dropout_p, grad_input_mask, is_causal, *, scale)
//   -> (grad_query, grad_key, grad_value, grad_bias), the gradients in [B, X, H, Y] storage as the kernel gives them.
std::vector<Var> efficient_backward(Emitter& e, const DecompCall& c) {
  Bound b(c);
  refuse_dropout(b, 9);
  const std::vector<int64_t> mask = b.ints(10, 4);
  const std::optional<Var> bias = b.opt_var(4);
  if (bias && mask[3]) return {};
  const DType dt = e.dtype(b.var(1));
  OpMath m(e, dt);
  Var q = m.up(b.var(1)), k = m.up(b.var(2)), v = m.up(b.var(3)), dout = m.up(b.var(0));
  const Shape qs = e.sizes(q), ks = e.sizes(k), vs = e.sizes(v);
  if (qs.size() != 4 || ks.size() != 4 || vs.size() != 4 || ks[1] != qs[1]) return {};
  const int64_t B = qs[0], H = qs[1], L = qs[2], E = qs[3], S = ks[2], Ev = vs[3], BH = B * H;
  const std::optional<double> scale_arg = b.opt_real(12);
  const double scale = scale_arg ? *scale_arg : 1.0 / std::sqrt(double(E));
  auto mm = [&](Var a, Var x, int64_t rows, int64_t inner, int64_t cols) {
    return view(e, e.call1("aten::bmm.default", {reshape(e, a, {BH, rows, inner}), reshape(e, x, {BH, inner, cols})}),
                {B, H, rows, cols});
  };
  auto t = [&](Var x) { return permute(e, x, {0, 1, 3, 2}); };
  // The probabilities again, from the forward's scores and logsumexp (its rows past L are padding).
  Var s = mul(e, mm(q, t(k), L, E, S), scale);
  if (bias) s = add(e, s, m.up(*bias));
  if (b.boolean(11)) {
    Var rows = view(e, arange(e, L, DType::Int64), {L, 1});
    s = where_scalar_then(e, compare(e, "gt", arange(e, S, DType::Int64), rows), -kInf, s);
  }
  Var lse = to_dtype(e, slice(e, b.var(6), 2, 0, L), m.compute);
  Var p = unary(e, "exp", sub(e, s, unsqueeze(e, lse, 3)));
  Var dv = mm(t(p), dout, S, L, Ev);
  Var dp = mm(dout, t(v), L, Ev, S);
  // rowsum(P dP), as the kernel computes it (FlashAttention's rowsum(dO O) is the same number only when
  // `out` and the logsumexp are the forward's own; a graph may hand the op anything).
  Var ds = mul(e, p, sub(e, dp, sum(e, mul(e, p, dp), {3}, true)));
  Var dq = mul(e, mm(ds, k, L, S, E), scale);
  Var dk = mul(e, mm(t(ds), q, S, L, E), scale);
  return {bxhy_layout(e, m.down(dq)), bxhy_layout(e, m.down(dk)), bxhy_layout(e, m.down(dv)), Var{}};
}

}  // namespace

void add_attention_decomps(DecompTable& t) {
  t["aten::_scaled_dot_product_flash_attention_for_cpu.default"] = flash_for_cpu;
  t["aten::_scaled_dot_product_efficient_attention.default"] = efficient;
  t["aten::_scaled_dot_product_efficient_attention_backward.default"] = efficient_backward;
  t["aten::_scaled_dot_product_cudnn_attention.default"] = cudnn;
}

}  // namespace kiln::decomp
