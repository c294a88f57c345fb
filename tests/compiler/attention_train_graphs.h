#pragma once
// Attention written out by hand, as a training region's to_aten graph has it,
// for the codegen fuzzer's attention-train family (codegen_fuzz_check.h): the
// forms the fuse-attention pass (compiler/passes/fuse_attention.h) must turn
// into _scaled_dot_product_efficient_attention, and some it must leave alone.
//
//   q, k, v: plain [B, H, L|S, E|Ev] inputs, or nanoGPT's strided views of one
//            [B, T, 3C] projection (split, view, transpose(1, 2));
//   k^T:     transpose(k, -2, -1) / (2, 3) / (-1, -2) or permute(k, [0, 1, 3, 2]);
//   scale:   mul.Scalar(1 / sqrt(E)), div.Scalar(sqrt(E)) or none;
//   mask:    none; masked_fill(-inf) with a bool mask input ([L, S], [B, 1, L, S] or a key
//            padding mask [B, 1, 1, S]);
//            the traced causal mask (ones -> tril -> logical_not, or triu(ones, 1));
//            a causal mask from full() (fused, as a bias: the pass reads only ones());
//            nanoGPT's buffer (bias[:, :, :L, :S] == 0); an additive mask of q's
//            dtype ([L, S], [B, 1, 1, S], [B, 1, L, S] or [1, H, L, S], sometimes -inf above the
//            diagonal as llama's, sometimes requiring grad, either side of the add);
//            an additive mask made in the graph, as BERT's (mask01 * -1e4, either side);
//   casts:   llama's softmax(x.float()).type_as(q) (to.dtype or _to_copy);
//   tail:    the output as is, transpose(1, 2) + contiguous + view [B, L, H * Ev],
//            its sum, or both.
// Refused (must stay unfused): a finite fill (-1e9), an additive mask of another
// dtype (promotes the scores), the probabilities also returned, softmax over dim 2.
//
// The same form is built twice: in its dtype, and with every floating dtype
// float64 (the reference the fuzzer holds both to). No Qt: kiln-codegen-fuzz
// builds these on the GPU machine.
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "attention_graphs.h"
#include "compiler/pipeline/emitter.h"
#include "core/tensor/tensor.h"

namespace kiln::test {

struct AttentionTrainForm {
  DType dtype = DType::Float32;
  int64_t b = 2, h = 2, l = 8, s = 8, e = 16, ev = 16;
  bool projection = false;         // q, k, v views of one [B, T, 3C] input (l == s, e == ev)
  std::string kt = "transpose";    // "transpose" (-2, -1), "transpose23", "transpose_rev" (-1, -2), "permute"
  std::string scale = "mul";       // "mul", "div", "none"
  // "", "bool_input", "causal_traced", "causal_triu", "causal_full", "buffer_eq", "additive",
  // "additive_scaled" (mul.Scalar(mask01, -1e4) added), "finite_fill" (refused), "additive_other_dtype" (refused)
  std::string mask;
  // bool_input / additive masks: 2 [L, S]; 3 [B, 1, 1, S] (a key padding mask); 4 [B, 1, L, S];
  // 5 [1, H, L, S] (additive only)
  int mask_rank = 2;
  bool mask_first = false;         // additive: add(mask, scores)
  bool additive_inf = false;       // additive: -inf above the diagonal (llama's causal mask)
  bool mask_requires_grad = false;  // additive masks
  std::string casts;               // "", "to" (to.dtype), "to_copy" (_to_copy)
  std::string softmax = "softmax";  // "softmax" (softmax.int(x, -1)), "softmax_none" (x, 3, None), "_softmax"
  std::string twist;               // "", "probs_out", "softmax_dim2" (both refused)
  std::string tail;                // "", "view", "sum", "view_sum"
  std::vector<bool> qkv_grad = {true, true, true};  // plain inputs: which require grad

  // What the pass must do with it.
  bool fusable() const {
    return mask != "finite_fill" && mask != "additive_other_dtype" && twist.empty();
  }
  bool causal() const { return mask == "causal_traced" || mask == "causal_triu"; }
  bool has_bias() const {
    return mask == "bool_input" || mask == "causal_full" || mask == "buffer_eq" || mask == "additive" ||
           mask == "additive_scaled";
  }
  std::string describe() const {
    std::string d = std::string(dtype_name(dtype)) + " B=" + std::to_string(b) + " H=" + std::to_string(h) +
                    " L=" + std::to_string(l) + " S=" + std::to_string(s) + " E=" + std::to_string(e) +
                    " Ev=" + std::to_string(ev) + (projection ? " projection" : " inputs") + " kt=" + kt +
                    " scale=" + scale + " mask=" + (mask.empty() ? "none" : mask);
    if (mask == "bool_input" || mask.rfind("additive", 0) == 0) d += " mask_rank=" + std::to_string(mask_rank);
    if (mask == "additive" || mask == "additive_scaled") d += mask_first ? " mask_first" : "";
    if (mask == "additive")
      d += std::string(additive_inf ? " inf" : "") +
           (mask_requires_grad ? " mask_grad" : "");
    d += " casts=" + (casts.empty() ? std::string("none") : casts) + " " + softmax +
         " twist=" + (twist.empty() ? std::string("none") : twist) + " tail=" + (tail.empty() ? std::string("none") : tail);
    return d + (fusable() ? " (fusable" + std::string(causal() ? ", causal" : "") + ")" : " (must stay unfused)");
  }
};

inline AttentionTrainForm random_attention_train_form(uint32_t seed) {
  std::mt19937 rng(seed * 2654435761u + 17u);
  auto pick = [&](int n) { return int(rng() % unsigned(n)); };
  AttentionTrainForm f;
  const DType dtypes[] = {DType::Float32, DType::Float16, DType::BFloat16};
  f.dtype = dtypes[pick(3)];
  f.b = 1 + pick(3);
  f.h = 1 + pick(3);
  const int64_t heads[] = {8, 16, 24, 32, 40, 64, 5, 12, 20};
  f.e = heads[pick(9)];
  f.projection = pick(4) == 0;
  // Lengths: often tiles' tails (not a multiple of 32); L != S only for plain inputs.
  f.l = pick(4) == 0 ? 32 * (1 + pick(2)) : 1 + pick(80);
  f.s = f.projection || pick(3) == 0 ? f.l : 1 + pick(80);
  f.ev = f.projection || pick(2) ? f.e : heads[pick(9)];
  const char* kts[] = {"transpose", "transpose23", "transpose_rev", "permute"};
  f.kt = kts[pick(4)];
  const char* scales[] = {"mul", "div", "none"};
  f.scale = scales[pick(3)];
  const char* masks[] = {"",         "bool_input", "causal_traced",   "causal_triu", "causal_full",          "buffer_eq",
                         "additive", "additive",   "additive_scaled", "finite_fill", "additive_other_dtype"};
  f.mask = masks[pick(11)];
  f.mask_rank = f.mask.rfind("additive", 0) == 0 ? (pick(3) == 0 ? 2 : pick(2) ? 4 : 5) : pick(2) ? 2 : 4;
  f.mask_first = pick(2);
  f.additive_inf = pick(3) == 0;
  // Not additive_scaled: a 0/1 indicator is data, and its gradient (-1e4 * dS) would carry dS's 16-bit
  // rounding, relative to the largest term of its sum, times 1e4.
  f.mask_requires_grad = f.mask == "additive" && pick(2);
  const char* casts[] = {"", "", "to", "to_copy"};
  f.casts = casts[pick(4)];
  const char* softmaxes[] = {"softmax", "softmax_none", "_softmax"};
  f.softmax = softmaxes[pick(3)];
  f.twist = pick(8) == 0 ? (pick(2) ? "probs_out" : "softmax_dim2") : "";
  // Softmax over dim 2 may see a column of masked entries only; -1e4 + score rounds to a multiple of 64
  // in bfloat16 (the scores' differences lost, as eager loses them), which float64 keeps.
  if (f.twist == "softmax_dim2" && f.mask == "additive_scaled") f.mask = "additive";
  const char* tails[] = {"", "view", "sum", "view_sum"};
  f.tail = tails[pick(4)];
  if (!f.projection)
    for (int i = 0; i < 3; ++i) f.qkv_grad[size_t(i)] = pick(6) != 0;
  if (!f.qkv_grad[0] && !f.qkv_grad[1] && !f.qkv_grad[2]) f.qkv_grad[size_t(pick(3))] = true;
  if (pick(4) == 0) f.mask_rank = 3;  // drawn last: the forms above stay those of the seeds before it
  return f;
}

// One form's graph and inputs: in its dtype and, for the reference, with every
// floating dtype float64 (inputs widened from the narrow ones, exactly).
struct AttentionTrainCase {
  Graph graph, graph64;
  std::vector<Tensor> inputs, inputs64;
  std::vector<bool> requires_grad;  // per placeholder
};

namespace attention_train_detail {

// The form's forward graph over placeholders standing for `inputs`; `wide` is
// float64 for the reference (float casts become float64 casts).
inline Graph build(const AttentionTrainForm& f, const std::vector<Tensor>& inputs, bool wide) {
  using pipeline::EArg;
  using pipeline::GraphEmitter;
  using pipeline::Var;
  const DType qd = wide ? DType::Float64 : f.dtype;
  const DType f32 = wide ? DType::Float64 : DType::Float32;
  const double ninf = -std::numeric_limits<double>::infinity();
  Graph g;
  GraphEmitter e(g);
  size_t next = 0;
  Var q, k, v;
  if (f.projection) {
    Var x = e.placeholder("x", inputs[next++]);
    const int64_t c = f.h * f.e;
    std::vector<Var> parts = e.call("aten::split.Tensor", {x, c, int64_t(2)});
    auto heads = [&](Var p) {
      Var view = e.call1("aten::view.default", {p, std::vector<int64_t>{f.b, f.l, f.h, f.e}});
      return e.call1("aten::transpose.int", {view, int64_t(1), int64_t(2)});
    };
    q = heads(parts[0]), k = heads(parts[1]), v = heads(parts[2]);
  } else {
    q = e.placeholder("q", inputs[next++]);
    k = e.placeholder("k", inputs[next++]);
    v = e.placeholder("v", inputs[next++]);
  }
  Var mask_in;
  if (f.mask == "bool_input" || f.mask == "buffer_eq" || f.mask.rfind("additive", 0) == 0)
    mask_in = e.placeholder(f.mask == "buffer_eq" ? "bias" : "mask", inputs[next++]);

  Var kt;
  if (f.kt == "transpose") kt = e.call1("aten::transpose.int", {k, int64_t(-2), int64_t(-1)});
  else if (f.kt == "transpose23") kt = e.call1("aten::transpose.int", {k, int64_t(2), int64_t(3)});
  else if (f.kt == "transpose_rev") kt = e.call1("aten::transpose.int", {k, int64_t(-1), int64_t(-2)});
  else kt = e.call1("aten::permute.default", {k, std::vector<int64_t>{0, 1, 3, 2}});
  Var s = e.call1("aten::matmul.default", {q, kt});
  if (f.scale == "mul") s = e.call1("aten::mul.Scalar", {s, 1.0 / std::sqrt(double(f.e))});
  if (f.scale == "div") s = e.call1("aten::div.Scalar", {s, std::sqrt(double(f.e))});

  auto ones_bool = [&] {
    return e.call1("aten::ones.default", {std::vector<int64_t>{f.l, f.s}}, {{"dtype", DType::Bool}});
  };
  auto traced_causal = [&] { return e.call1("aten::logical_not.default", {e.call1("aten::tril.default", {ones_bool()})}); };
  if (f.mask == "bool_input") s = e.call1("aten::masked_fill.Scalar", {s, mask_in, ninf});
  if (f.mask == "causal_traced") s = e.call1("aten::masked_fill.Scalar", {s, traced_causal(), ninf});
  if (f.mask == "causal_triu")
    s = e.call1("aten::masked_fill.Scalar", {s, e.call1("aten::triu.default", {ones_bool(), int64_t(1)}), ninf});
  if (f.mask == "causal_full") {
    Var ones = e.call1("aten::full.default", {std::vector<int64_t>{f.l, f.s}, int64_t(1)}, {{"dtype", DType::Bool}});
    s = e.call1("aten::masked_fill.Scalar", {s, e.call1("aten::triu.default", {ones, int64_t(1)}), ninf});
  }
  if (f.mask == "buffer_eq") {
    Var rows = e.call1("aten::slice.Tensor", {mask_in, int64_t(2), EArg::none(), f.l, int64_t(1)});
    Var cols = e.call1("aten::slice.Tensor", {rows, int64_t(3), EArg::none(), f.s, int64_t(1)});
    s = e.call1("aten::masked_fill.Scalar", {s, e.call1("aten::eq.Scalar", {cols, int64_t(0)}), ninf});
  }
  // A finite fill as programs write it: -1e9, or finfo(float16).min where -1e9 does not fit.
  if (f.mask == "finite_fill")
    s = e.call1("aten::masked_fill.Scalar", {s, traced_causal(), f.dtype == DType::Float16 ? -65504.0 : -1e9});
  if (f.mask == "additive_scaled") mask_in = e.call1("aten::mul.Scalar", {mask_in, -1e4});
  if (f.mask.rfind("additive", 0) == 0)
    s = f.mask_first ? e.call1("aten::add.Tensor", {mask_in, s}) : e.call1("aten::add.Tensor", {s, mask_in});

  // The other-dtype mask promotes the scores: the probabilities go back to q's dtype for the matmul.
  const bool promoted = e.dtype(s) != qd;
  if (!f.casts.empty()) {
    s = f.casts == "to" ? e.call1("aten::to.dtype", {s, f32})
                        : e.call1("aten::_to_copy.default", {s}, {{"dtype", f32}});
  }
  const int64_t dim = f.twist == "softmax_dim2" ? 2 : f.softmax == "softmax_none" ? 3 : -1;
  Var p = f.softmax == "_softmax" ? e.call1("aten::_softmax.default", {s, dim, false})
          : f.softmax == "softmax_none" ? e.call1("aten::softmax.int", {s, dim, EArg::none()})
                                        : e.call1("aten::softmax.int", {s, dim});
  if (!f.casts.empty() || promoted) {
    p = f.casts == "to_copy" ? e.call1("aten::_to_copy.default", {p}, {{"dtype", qd}})
                             : e.call1("aten::to.dtype", {p, qd});
  }
  Var out = e.call1("aten::matmul.default", {p, v});

  std::vector<Var> outs;
  if (f.tail.empty()) outs.push_back(out);
  if (f.tail == "view" || f.tail == "view_sum") {
    Var t = e.call1("aten::transpose.int", {out, int64_t(1), int64_t(2)});
    Var c = e.call1("aten::contiguous.default", {t});
    outs.push_back(e.call1("aten::view.default", {c, std::vector<int64_t>{f.b, f.l, f.h * f.ev}}));
  }
  if (f.tail == "sum" || f.tail == "view_sum") outs.push_back(e.call1("aten::sum.default", {out}));
  if (f.twist == "probs_out") outs.push_back(p);
  e.output(outs);
  return g;
}

}  // namespace attention_train_detail

inline AttentionTrainCase attention_train_case(const AttentionTrainForm& f, uint32_t seed) {
  std::mt19937 rng(seed);
  AttentionTrainCase c;
  // Unscaled forms get q scaled down instead: scores of O(1) either way.
  const float qr = f.scale == "none" ? float(2.0 / std::sqrt(double(f.e))) : 2.f;
  if (f.projection) {
    // [B, T, 3C]: q's columns first; q's range applies to all (scores stay O(1)).
    c.inputs.push_back(random_tensor_of({f.b, f.l, 3 * f.h * f.e}, rng, f.dtype, -qr, qr));
    c.requires_grad.push_back(true);
  } else {
    c.inputs.push_back(random_tensor_of({f.b, f.h, f.l, f.e}, rng, f.dtype, -qr, qr));
    c.inputs.push_back(random_tensor_of({f.b, f.h, f.s, f.e}, rng, f.dtype));
    c.inputs.push_back(random_tensor_of({f.b, f.h, f.s, f.ev}, rng, f.dtype));
    c.requires_grad.insert(c.requires_grad.end(), f.qkv_grad.begin(), f.qkv_grad.end());
  }
  const std::vector<int64_t> ms = f.mask_rank == 2   ? std::vector<int64_t>{f.l, f.s}
                                  : f.mask_rank == 3 ? std::vector<int64_t>{f.b, 1, 1, f.s}
                                  : f.mask_rank == 4 ? std::vector<int64_t>{f.b, 1, f.l, f.s}
                                                     : std::vector<int64_t>{1, f.h, f.l, f.s};
  int64_t numel = 1;
  for (int64_t d : ms) numel *= d;
  const int64_t rows = numel / (f.l * f.s);  // [rows, L, S] masks (not the key padding one)
  if (f.mask == "bool_input") {
    // Column 0 never masked: no row is wholly masked (softmax of all -inf is NaN unfused).
    Tensor u = random_tensor_of(ms, rng, DType::Float32, 0.f, 1.f);
    Tensor m = Tensor::empty(Shape(ms.begin(), ms.end()), DType::Bool);
    for (int64_t i = 0; i < numel; ++i) m.data<bool>()[i] = i % f.s != 0 && u.data<float>()[i] < 0.4f;
    c.inputs.push_back(m);
    c.requires_grad.push_back(false);
  } else if (f.mask == "buffer_eq") {
    // nanoGPT's tril(ones) buffer, larger than the sequence (sliced to [:L, :S]), of q's dtype.
    const int64_t n = std::max(f.l, f.s) + 3;
    Tensor m = Tensor::zeros({1, 1, n, n}, DType::Float32);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j <= i; ++j) m.data<float>()[i * n + j] = 1.f;
    c.inputs.push_back(m.to(f.dtype));
    c.requires_grad.push_back(false);
  } else if (f.mask == "additive_scaled") {
    // 1 where masked (column 0 never), BERT's (1 - attention_mask) before its * -10000.
    Tensor u = random_tensor_of(ms, rng, DType::Float32, 0.f, 1.f);
    Tensor m = Tensor::zeros(Shape(ms.begin(), ms.end()), DType::Float32);
    for (int64_t i = 0; i < numel; ++i) m.data<float>()[i] = i % f.s != 0 && u.data<float>()[i] < 0.3f;
    c.inputs.push_back(m.to(f.dtype));
    c.requires_grad.push_back(f.mask_requires_grad);
  } else if (f.mask == "additive" || f.mask == "additive_other_dtype") {
    const DType md = f.mask == "additive" ? f.dtype : f.dtype == DType::Float32 ? DType::Float16 : DType::Float32;
    Tensor m = random_tensor_of(ms, rng, DType::Float32, -3.f, 0.f);
    if (f.additive_inf && f.mask_rank != 3)  // key past its query: -inf (column 0 never is)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < f.l; ++i)
          for (int64_t j = i + 1; j < f.s; ++j) m.data<float>()[(r * f.l + i) * f.s + j] = -INFINITY;
    c.inputs.push_back(m.to(md));
    c.requires_grad.push_back(f.mask_requires_grad);
  }
  for (const Tensor& t : c.inputs) c.inputs64.push_back(is_floating(t.dtype()) ? t.to(DType::Float64) : t);
  c.graph = attention_train_detail::build(f, c.inputs, false);
  c.graph64 = attention_train_detail::build(f, c.inputs64, true);
  return c;
}

}  // namespace kiln::test
