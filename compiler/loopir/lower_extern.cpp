#include "compiler/loopir/lower_extern.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "compiler/loopir/simplify_index.h"
#include "compiler/loopir/view_index.h"
#include "core/util/status.h"

namespace kiln::loopir::detail {
namespace {

const Arg* find_arg(const ExternCall& c, size_t pos, std::string_view kw) {
  for (const auto& [k, v] : c.kwargs)
    if (k == kw) return &v;
  return pos < c.args.size() ? &c.args[pos] : nullptr;
}

int tensor_at(const ExternCall& c, size_t pos, std::string_view kw) {
  const Arg* a = find_arg(c, pos, kw);
  return a && a->is_node() ? int(a->i) : -1;
}

std::optional<double> number_at(const ExternCall& c, size_t pos, std::string_view kw, double fallback) {
  const Arg* a = find_arg(c, pos, kw);
  if (!a || a->is_none()) return fallback;
  if (a->kind == Arg::Kind::Float) return a->f;
  if (a->kind == Arg::Kind::Int) return double(a->i);
  if (a->kind == Arg::Kind::Bool) return a->b ? 1.0 : 0.0;
  return std::nullopt;
}

// int[n] arguments: a single int broadcasts, as the schema allows.
std::optional<std::vector<int64_t>> ints_at(const ExternCall& c, size_t pos, std::string_view kw, size_t n) {
  const Arg* a = find_arg(c, pos, kw);
  if (!a) return std::nullopt;
  if (a->kind == Arg::Kind::Int) return std::vector<int64_t>(n, a->i);
  if (a->kind != Arg::Kind::List && a->kind != Arg::Kind::Tuple) return std::nullopt;
  std::vector<int64_t> out;
  for (const Arg& i : a->items) {
    if (i.kind != Arg::Kind::Int) return std::nullopt;
    out.push_back(i.i);
  }
  if (out.size() == 1 && n > 1) out.assign(n, out[0]);
  if (out.size() != n) return std::nullopt;
  return out;
}

void classify_gemm(ExternCall& c) {
  GemmParams g;
  const std::string& t = c.target;
  if (t == "aten::addmm.default") {
    g.c = tensor_at(c, 0, "self"), g.a = tensor_at(c, 1, "mat1"), g.b = tensor_at(c, 2, "mat2");
    std::optional<double> beta = number_at(c, 3, "beta", 1), alpha = number_at(c, 4, "alpha", 1);
    if (g.c < 0 || !beta || !alpha) return;
    g.beta = *beta, g.alpha = *alpha;
  } else {
    g.a = tensor_at(c, 0, "self"), g.b = tensor_at(c, 1, "mat2");
    g.batched = t == "aten::bmm.default";
  }
  if (g.a < 0 || g.b < 0) return;
  size_t rank = g.batched ? 3 : 2;
  if (c.tensors[size_t(g.a)].sizes.size() != rank || c.tensors[size_t(g.b)].sizes.size() != rank) return;
  c.kind = ExternKind::Gemm;
  c.gemm = g;
}

void classify_convolution(ExternCall& c) {
  ConvParams p;
  p.input = tensor_at(c, 0, "input"), p.weight = tensor_at(c, 1, "weight"), p.bias = tensor_at(c, 2, "bias");
  if (p.input < 0 || p.weight < 0) return;
  size_t rank = c.tensors[size_t(p.input)].sizes.size();
  const Arg* transposed = find_arg(c, 6, "transposed");
  // Transposed convolution runs the eager kernel (a fallback): its scatter form has no GEMM fast path here.
  if (rank < 3 || rank > 4 || !transposed || transposed->kind != Arg::Kind::Bool || transposed->b) return;
  size_t spatial = rank - 2;
  auto stride = ints_at(c, 3, "stride", spatial), padding = ints_at(c, 4, "padding", spatial),
       dilation = ints_at(c, 5, "dilation", spatial);
  const Arg* groups = find_arg(c, 8, "groups");
  if (!stride || !padding || !dilation || !groups || groups->kind != Arg::Kind::Int || groups->i < 1) return;
  p.stride = *stride, p.padding = *padding, p.dilation = *dilation, p.groups = groups->i;
  c.kind = ExternKind::Convolution;
  c.conv = p;
}

std::optional<bool> bool_at(const ExternCall& c, size_t pos, std::string_view kw, bool fallback) {
  const Arg* a = find_arg(c, pos, kw);
  if (!a || a->is_none()) return fallback;
  if (a->kind == Arg::Kind::Bool) return a->b;
  return std::nullopt;
}

// Training's efficient attention and its backward (kept whole on the CUDA
// path). The kernels take q, k, v of one head count and one mask: an additive
// bias or the causal diagonal, not both; no dropout. What they cannot take
// stays a Fallback with c.note saying why. `first`: the position of query
// (the backward's grad_out comes before it).
void classify_attention(ExternCall& c, bool backward) {
  const size_t first = backward ? 1 : 0;
  const size_t causal_at = backward ? 11 : 6, scale_at = backward ? 12 : 7, dropout_at = backward ? 9 : 5;
  AttentionParams a;
  a.q = tensor_at(c, first, "query"), a.k = tensor_at(c, first + 1, "key"), a.v = tensor_at(c, first + 2, "value");
  a.mask = tensor_at(c, first + 3, "attn_bias");
  if (backward) a.dout = tensor_at(c, 0, "grad_out_"), a.out = tensor_at(c, 5, "out"), a.lse = tensor_at(c, 6, "logsumexp");
  auto refuse = [&](const std::string& why) { c.note = why; };
  if (a.q < 0 || a.k < 0 || a.v < 0 || (backward && (a.dout < 0 || a.out < 0 || a.lse < 0)))
    return refuse("an operand is not a tensor");
  const BufferView &q = c.tensors[size_t(a.q)], &k = c.tensors[size_t(a.k)], &v = c.tensors[size_t(a.v)];
  if (q.sizes.size() != 4 || k.sizes.size() != 4 || v.sizes.size() != 4) return refuse("query, key and value are not 4-D");
  if (q.sizes[1] != k.sizes[1] || v.sizes[1] != k.sizes[1])
    return refuse("grouped-query attention (" + std::to_string(q.sizes[1]) + " query heads, " +
                  std::to_string(k.sizes[1]) + " key/value heads)");
  std::optional<double> dropout = number_at(c, dropout_at, "dropout_p", 0);
  if (!dropout || *dropout != 0) return refuse("dropout");
  std::optional<bool> causal = bool_at(c, causal_at, "is_causal", false);
  if (!causal) return refuse("is_causal is not a constant");
  if (a.mask >= 0 && *causal) return refuse("an attention bias together with is_causal (the kernels take one mask)");
  if (a.mask >= 0 && c.tensors[size_t(a.mask)].sizes.size() > 4) return refuse("an attention bias of over 4 dims");
  if (backward) {
    const Arg* m = find_arg(c, 10, "grad_input_mask");
    const bool grad_bias = m && m->items.size() == 4 && m->items[3].kind == Arg::Kind::Bool && m->items[3].b;
    if (grad_bias && a.mask >= 0) return refuse("the attention bias's gradient (grad_input_mask[3]) is asked for");
  } else if (!bool_at(c, 4, "compute_log_sumexp", false)) {
    return refuse("compute_log_sumexp is not a constant");
  }
  std::optional<double> scale = number_at(c, scale_at, "scale", 1.0 / std::sqrt(double(q.sizes[3])));
  if (!scale) return refuse("the scale is not a number");
  a.scale = *scale;
  if (*causal) a.causal_offset = 0;  // top-left aligned, as PyTorch's kernels mask: n > m, filled with -inf
  if (a.mask >= 0) a.mask_kind = AttentionMask::Additive;
  c.kind = backward ? ExternKind::AttentionBackward : ExternKind::AttentionForward;
  c.attention = a;
}

}  // namespace

void classify_extern(ExternCall& c) {
  c.kind = ExternKind::Fallback;
  if (c.target == "aten::mm.default" || c.target == "aten::bmm.default" || c.target == "aten::addmm.default")
    classify_gemm(c);
  else if (c.target == "aten::convolution.default")
    classify_convolution(c);
  else if (c.target == "aten::_scaled_dot_product_efficient_attention.default")
    classify_attention(c, false);
  else if (c.target == "aten::_scaled_dot_product_efficient_attention_backward.default")
    classify_attention(c, true);
}

std::optional<BufferView> as_strided_view(const Buffer& buffer, const std::vector<int64_t>& sizes,
                                          const std::function<IndexRef(const std::vector<IndexRef>&)>& to_flat) {
  size_t rank = sizes.size();
  std::vector<IndexRef> idx(rank);
  for (size_t d = 0; d < rank; ++d) idx[d] = sizes[d] == 1 ? index_const(0) : index_var(int64_t(d));
  IndexRanges r = loop_ranges(sizes);
  IndexRef flat = simplify_index(to_flat(idx), r);
  IndexEnv env;
  env.vars.assign(rank, 0);
  BufferView v{buffer.name, sizes, std::vector<int64_t>(rank, 1), evaluate_index(flat, env)};
  std::vector<IndexRef> terms = {index_const(v.offset)};
  for (size_t d = 0; d < rank; ++d) {
    if (sizes[d] == 1) continue;  // its stride never matters
    env.vars[d] = 1;
    v.strides[d] = evaluate_index(flat, env) - v.offset;
    env.vars[d] = 0;
    if (v.strides[d] < 0) return std::nullopt;
    terms.push_back(index_mul({index_const(v.strides[d]), index_var(int64_t(d))}));
  }
  IndexRef rebuilt = terms.size() == 1 ? terms[0] : index_add(terms);
  if (v.offset < 0 || !equal_index(simplify_index(rebuilt, r), flat)) return std::nullopt;
  // A size-1 dim gets the stride a contiguous tensor would have, as torch prints them.
  for (size_t d = rank; d-- > 0;)
    if (sizes[d] == 1) v.strides[d] = d + 1 < rank ? v.strides[d + 1] * std::max<int64_t>(sizes[d + 1], 1) : 1;
  return v;
}

std::vector<int64_t> dense_strides_or_contiguous(const std::vector<int64_t>& sizes,
                                                 const std::vector<int64_t>& strides) {
  std::vector<int64_t> contiguous = contiguous_strides(Shape(sizes.begin(), sizes.end()));
  if (strides.size() != sizes.size()) return contiguous;
  std::vector<size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Innermost first; size-1 dims may carry any stride.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return strides[a] < strides[b]; });
  int64_t expect = 1;
  for (size_t d : order) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expect) return contiguous;
    expect *= sizes[d];
  }
  return strides;
}

}  // namespace kiln::loopir::detail
