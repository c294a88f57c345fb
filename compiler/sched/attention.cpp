// Attention fusion: softmax(scale * q @ k^T [+ mask]) @ v, whatever order the
// graph writes it in, becomes one Attention extern kernel (extern_call.h) that
// the CUDA backend runs as a flash kernel: the [B, M, N] scores and
// probabilities are never stored.
//
// The match works on the loop IR as lowering leaves it (before inlining): from
// a bmm whose left operand is a pointwise kernel P, P's value at a point is
// expanded through the pointwise kernels it loads (virtual inlining), and has
// to read
//     E / sum_n E        with E = exp(X - max_n X)
// where the sum and max are reduction kernels over the last dimension whose
// bodies expand to the same E and X, and X, the scores, is a bmm's product S
// (its only readers in the chain) under
//     * k, / k           scale (k a number)
//     + A, - A           an additive mask A (a tensor, any layout a strided view gives)
//     where(c, f, X), where(c, X, f), masked_fill   a boolean mask c (a tensor,
//                        or c == 0 / c != 0 of one) with a number f
// and casts between floating types (the kernel computes in float32 and rounds
// once, as flash attention does: intermediate float16 roundings of the graph
// are not reproduced). Anything else is left as it is, with the reason.
// A mask whose value is known while compiling (a folded constant, or kernels
// computing it from factories: triu/tril of ones, arange comparisons) that
// masks exactly the columns n > m + c is recorded as causal: the kernel reads
// no mask, and with a -inf fill skips the tiles above the diagonal.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "compiler/loopir/lower_extern.h"
#include "compiler/sched/sched_util.h"

namespace kiln::sched::detail {

using namespace loopir;

namespace {

std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

ExprRef strip_casts(ExprRef e) {
  while (e->op == ExprOp::ToDtype && is_floating(e->dtype) && is_floating(e->operands[0]->dtype)) e = e->operands[0];
  return e;
}

// Structural equality, float casts ignored (the fused kernel keeps float32 throughout).
bool same_value(const ExprRef& x, const ExprRef& y) {
  const ExprRef a = strip_casts(x), b = strip_casts(y);
  if (a == b) return true;
  if (a->op != b->op || a->operands.size() != b->operands.size()) return false;
  if (a->op == ExprOp::Constant) return a->value == b->value || (std::isnan(a->value) && std::isnan(b->value));
  if (a->op == ExprOp::Load) return a->buffer == b->buffer && equal_index(a->index, b->index);
  if (a->op == ExprOp::ToDtype && a->dtype != b->dtype) return false;
  for (size_t i = 0; i < a->operands.size(); ++i)
    if (!same_value(a->operands[i], b->operands[i])) return false;
  return true;
}

bool is_batched_plain_bmm(const Kernel& k) {
  if (k.kind != KernelKind::Extern || !k.call || k.call->kind != ExternKind::Gemm) return false;
  const GemmParams& g = k.call->gemm;
  return g.batched && g.alpha == 1 && g.c < 0 && !g.c_constant && k.call->outputs.size() == 1;
}

bool contiguous_view(const Program& p, const BufferView& v) {
  const Buffer& b = p.buffer(v.buffer);
  Shape sizes(v.sizes.begin(), v.sizes.end());
  return v.offset == 0 && b.offset == 0 && v.strides == std::vector<int64_t>(contiguous_strides(sizes)) &&
         b.strides == std::vector<int64_t>(contiguous_strides(Shape(b.sizes.begin(), b.sizes.end()))) &&
         numel(b.sizes) == numel(v.sizes);
}

// One bmm P @ V being matched: the canonical point is P's loop variables x0
// .. x<r-1> over P's ranges [..., M, N]; every kernel of the chain is
// expanded into them.
class Matcher {
 public:
  Matcher(const Program& p, const ReadersIndex& readers, const std::map<std::string, size_t>& writer,
          const std::function<const Tensor*(const std::string&)>& constant_value)
      : p_(p), readers_(readers), writer_(writer), constant_value_(constant_value) {}

  // Fills `call` and `chain` or returns why not; `looked_like` says whether a
  // bmm's product reached P through a reduction (worth a refusal message).
  std::string match(size_t g2_index, ExternCall& call, std::set<size_t>& chain, std::string& summary);
  bool looked_like = false;
  std::set<size_t> mask_closure_;  // the kernels computing a constant mask (dead once it is known causal)

 private:
  std::optional<size_t> writer_of(const std::string& buffer) const {
    auto it = writer_.find(buffer);
    if (it == writer_.end()) return std::nullopt;
    return it->second;
  }
  std::string expand(const ExprRef& e, ExprRef& out);
  std::string expand_kernel(size_t kernel, ExprRef& out);
  std::string scores(const ExprRef& e);
  std::optional<double> constant_of(const ExprRef& e) const;
  std::string mask_view(const ExprRef& load, BufferView& view);
  std::optional<Tensor> constant_buffer(const std::string& buffer);
  // The kernels `buffer` is computed by, or nullopt when it reads a graph input that is no constant.
  std::optional<std::set<size_t>> closure_of(const std::string& buffer, std::vector<std::string>* inputs,
                                             std::vector<Tensor>* values);
  void detect_causal(AttentionParams& a, const BufferView& mask);

  const Program& p_;
  const ReadersIndex& readers_;
  const std::map<std::string, size_t>& writer_;
  const std::function<const Tensor*(const std::string&)>& constant_value_;
  std::vector<int64_t> ranges_;  // P's: [..., M, N]
  IndexRanges canon_;
  IndexRef own_;                 // linear_index(ranges_), simplified
  IndexRef row_own_;             // the row's index: linear_index of ranges_ without N
  std::string scores_buffer_;    // S, once found
  std::set<size_t> chain_;
  std::set<size_t> reductions_;
  std::map<size_t, ExprRef> reduced_body_;  // per reduction kernel, its expanded body
  // Keyed by node, holding the node: expand_kernel's moved bodies are temporaries.
  std::map<const Expr*, std::pair<ExprRef, ExprRef>> memo_;
  // The score expression's parts (scores()).
  double scale_ = 1;
  ExprRef add_mask_, bool_mask_;  // the mask's load
  double add_factor_ = 1, fill_ = 0;
  bool masked_when_nonzero_ = true;
};

std::optional<double> Matcher::constant_of(const ExprRef& x) const {
  const ExprRef e = strip_casts(x);
  if (e->op == ExprOp::Constant) return e->value;
  if (e->op != ExprOp::Load) return std::nullopt;
  // A 0-d scalar_tensor / full (masked_fill's -inf): a fallback, or lowered to a constant kernel.
  std::optional<size_t> w = writer_of(e->buffer);
  if (!w) return std::nullopt;
  const Kernel& k = p_.kernels[*w];
  if (numel(p_.buffer(e->buffer).sizes) != 1) return std::nullopt;
  // A fill lowered to a pointwise kernel storing a constant.
  if (k.kind == KernelKind::Pointwise && strip_casts(k.body)->op == ExprOp::Constant) return strip_casts(k.body)->value;
  if (k.kind != KernelKind::Extern || k.call->kind != ExternKind::Fallback) return std::nullopt;
  const ExternCall& c = *k.call;
  const Arg* v = nullptr;
  if (c.target == "aten::scalar_tensor.default" && !c.args.empty()) v = &c.args[0];
  if (c.target == "aten::full.default" && c.args.size() >= 2) v = &c.args[1];
  if (!v) return std::nullopt;
  if (v->kind == Arg::Kind::Float) return v->f;
  if (v->kind == Arg::Kind::Int) return double(v->i);
  return std::nullopt;
}

// A reduction kernel's body in the canonical variables: its outer variables
// are the row's, its reduction variable is N's.
std::string Matcher::expand_kernel(size_t kernel, ExprRef& out) {
  const Kernel& k = p_.kernels[kernel];
  const size_t r = ranges_.size();
  std::map<int64_t, IndexRef> to_canon;
  std::vector<int64_t> row(ranges_.begin(), ranges_.end() - 1);
  std::vector<int64_t> row_keep = row;
  row_keep.push_back(1);
  if (k.reduction_ranges != std::vector<int64_t>{ranges_.back()}) return k.output + " reduces over other than the last dimension";
  if (k.ranges == row) {
    for (size_t i = 0; i < r; ++i) to_canon[int64_t(i)] = index_var(int64_t(i));
  } else if (k.ranges == row_keep) {
    for (size_t i = 0; i + 1 < r; ++i) to_canon[int64_t(i)] = index_var(int64_t(i));
    to_canon[int64_t(r - 1)] = index_const(0);
    to_canon[int64_t(r)] = index_var(int64_t(r - 1));
  } else {
    return k.output + " reduces rows of " + sizes_string(k.ranges) + ", not the scores' " + sizes_string(row);
  }
  if (!store_is_contiguous(k)) return k.output + "'s store is not contiguous";
  struct Move : ExprMutator {
    const std::map<int64_t, IndexRef>* to;
    const IndexRanges* canon;
    ExprRef mutate_node(const ExprRef& rebuilt, const ExprRef&) override {
      if (rebuilt->op != ExprOp::Load) return rebuilt;
      return expr_load(rebuilt->buffer, simplify_index(substitute_vars(rebuilt->index, *to), *canon), rebuilt->dtype);
    }
  } move;
  move.to = &to_canon;
  move.canon = &canon_;
  return expand(move.mutate(k.body), out);
}

// `e` (in canonical variables) with every load of a pointwise kernel of the
// chain replaced by its body, a constant scalar buffer by its number.
std::string Matcher::expand(const ExprRef& e, ExprRef& out) {
  if (auto it = memo_.find(e.get()); it != memo_.end()) {
    out = it->second.second;
    return {};
  }
  if (e->op != ExprOp::Load) {
    std::vector<ExprRef> ops;
    bool changed = false;
    for (const ExprRef& o : e->operands) {
      ExprRef x;
      if (std::string why = expand(o, x); !why.empty()) return why;
      changed |= x != o;
      ops.push_back(std::move(x));
    }
    if (changed) {
      auto rebuilt = std::make_shared<Expr>(*e);
      rebuilt->operands = std::move(ops);
      out = rebuilt;
    } else {
      out = e;
    }
    memo_[e.get()] = {e, out};
    return {};
  }
  out = e;
  if (std::optional<double> c = constant_of(e); c && e->op == ExprOp::Load && writer_of(e->buffer)) {
    out = expr_constant(*c, e->dtype);
    memo_[e.get()] = {e, out};
    return {};
  }
  std::optional<size_t> w = writer_of(e->buffer);
  if (!w) return {};  // a graph input: a mask, checked by scores()
  const Kernel& k = p_.kernels[*w];
  const IndexRef at = simplify_index(e->index, canon_);
  if (is_batched_plain_bmm(k)) {
    if (!equal_index(at, own_)) return "the product " + e->buffer + " is read at another element than the point's";
    if (scores_buffer_.empty()) scores_buffer_ = e->buffer;
    if (scores_buffer_ != e->buffer) return "two products (" + scores_buffer_ + ", " + e->buffer + ") feed the softmax";
    chain_.insert(*w);
    looked_like = looked_like || !reductions_.empty();
    return {};
  }
  if (k.kind == KernelKind::Reduction) {
    if (!equal_index(at, row_own_)) return "reduction " + k.output + " is read at another row than the point's";
    if (reductions_.insert(*w).second) {
      chain_.insert(*w);
      ExprRef body;
      if (std::string why = expand_kernel(*w, body); !why.empty()) return why;
      reduced_body_[*w] = body;
    }
    return {};
  }
  if (k.kind != KernelKind::Pointwise) return {};  // another extern's output: a mask candidate
  if (k.ranges != ranges_) return {};               // a broadcast operand (a mask computed in the graph)
  if (!equal_index(at, own_) || !store_is_contiguous(k)) return k.output + " is read at another element than the point's";
  chain_.insert(*w);
  ExprRef body;
  if (std::string why = expand(k.body, body); !why.empty()) return why;
  out = expr_cast(body, e->dtype);
  memo_[e.get()] = {e, out};
  return {};
}

std::string Matcher::mask_view(const ExprRef& load, BufferView& view) {
  const Buffer& b = p_.buffer(load->buffer);
  auto v = loopir::detail::as_strided_view(b, ranges_, [&](const std::vector<IndexRef>& idx) {
    std::map<int64_t, IndexRef> to;
    for (size_t d = 0; d < idx.size(); ++d) to[int64_t(d)] = idx[d];
    return substitute_vars(load->index, to);
  });
  if (!v) return "the mask " + load->buffer + " is not a strided view of its buffer";
  // The batch dimensions (all but M, N) as [outer, inner]: at most two runs of collapsible strides.
  const size_t r = ranges_.size();
  std::vector<std::pair<int64_t, int64_t>> runs;  // (size, stride), outermost first
  for (size_t d = 0; d + 2 < r; ++d) {
    if (ranges_[d] == 1) continue;
    if (!runs.empty() && runs.back().second == v->strides[d] * ranges_[d])
      runs.back() = {runs.back().first * ranges_[d], v->strides[d]};
    else
      runs.push_back({ranges_[d], v->strides[d]});
  }
  if (runs.size() > 2) return "the mask " + load->buffer + "'s batch strides do not collapse to two";
  while (runs.size() < 2) runs.insert(runs.begin(), {1, 0});
  view.buffer = load->buffer;
  view.sizes = {runs[0].first, runs[1].first, ranges_[r - 2], ranges_[r - 1]};
  view.strides = {runs[0].second, runs[1].second, v->strides[r - 2], v->strides[r - 1]};
  view.offset = v->offset;
  return {};
}

// X, the scores, as scale * S [+ factor * A] or where(mask, fill, scale * S).
std::string Matcher::scores(const ExprRef& x) {
  const ExprRef e = strip_casts(x);
  if (e->op == ExprOp::ToDtype) return "the scores are cast to " + std::string(dtype_name(e->dtype));
  if (e->op == ExprOp::Load) {
    if (e->buffer != scores_buffer_) return "the scores read " + e->buffer + " where the product was expected";
    scale_ = 1;
    return {};
  }
  auto scaled = [&](double k) -> std::string {
    if (!std::isfinite(k) || k == 0) return "the scores are scaled by " + num(k);
    if (bool_mask_ && std::isinf(fill_) && k < 0) return "a negative scale turns the -inf fill into +inf";
    scale_ *= k, add_factor_ *= k, fill_ *= k;
    return {};
  };
  const bool binary = e->operands.size() == 2;
  if (binary && (e->op == ExprOp::Mul || e->op == ExprOp::Div)) {
    const bool right = constant_of(e->operands[1]).has_value();
    const bool left = e->op == ExprOp::Mul && constant_of(e->operands[0]).has_value();
    if (!right && !left) return std::string("the scores are ") + (e->op == ExprOp::Mul ? "multiplied" : "divided") + " by a tensor";
    const double k = *constant_of(e->operands[right ? 1 : 0]);
    if (std::string why = scores(e->operands[right ? 0 : 1]); !why.empty()) return why;
    return scaled(e->op == ExprOp::Div ? 1.0 / k : k);
  }
  if (binary && (e->op == ExprOp::Add || e->op == ExprOp::Sub)) {
    // One side is the scores, the other a tensor load (times a number).
    for (int side = 0; side < 2; ++side) {
      if (side == 0 && e->op == ExprOp::Sub) continue;  // A - X negates the scores
      ExprRef m = strip_casts(e->operands[size_t(side)]);
      double factor = e->op == ExprOp::Sub ? -1 : 1;
      if (m->op == ExprOp::Mul) {
        for (int j = 0; j < 2; ++j)
          if (auto k = constant_of(m->operands[size_t(1 - j)]); k && strip_casts(m->operands[size_t(j)])->op == ExprOp::Load) {
            factor *= *k, m = strip_casts(m->operands[size_t(j)]);
            break;
          }
      }
      if (m->op != ExprOp::Load || m->buffer == scores_buffer_) continue;
      if (constant_of(m)) return "a number is added to the scores";
      if (add_mask_ || bool_mask_) return "the scores have two masks";
      if (std::string why = scores(e->operands[size_t(1 - side)]); !why.empty()) return why;
      if (bool_mask_ && !std::isinf(fill_)) return "a mask is added to scores filled with a finite number";
      if (add_mask_) return "the scores have two masks";
      add_mask_ = m, add_factor_ = factor;
      return {};
    }
    return std::string("the scores go through ") + std::string(expr_op_name(e->op)) + " with a computed value";
  }
  if (e->op == ExprOp::Where) {
    std::optional<double> t = constant_of(e->operands[1]), f = constant_of(e->operands[2]);
    if (t.has_value() == f.has_value()) return "where() of the scores does not pick between them and a number";
    ExprRef cond = strip_casts(e->operands[0]);
    bool nonzero = true;
    if ((cond->op == ExprOp::Eq || cond->op == ExprOp::Ne) && constant_of(cond->operands[1]) == 0.0) {
      nonzero = cond->op == ExprOp::Ne;
      cond = strip_casts(cond->operands[0]);
    }
    if (cond->op != ExprOp::Load) return "the mask is computed (" + std::string(expr_op_name(cond->op)) + "), not a tensor";
    if (bool_mask_ || add_mask_) return "the scores have two masks";
    if (std::string why = scores(e->operands[t ? 2 : 1]); !why.empty()) return why;
    if (bool_mask_ || add_mask_) return "the scores have two masks";
    bool_mask_ = cond;
    masked_when_nonzero_ = t ? nonzero : !nonzero;
    fill_ = t ? *t : *f;
    if (std::isnan(fill_) || fill_ == std::numeric_limits<double>::infinity()) return "the mask fills with " + num(fill_);
    return {};
  }
  return "the scores go through " + std::string(expr_op_name(e->op));
}

// The value of a buffer that depends on no graph input: a bound constant, or
// what the kernels computing it from constants and factories (full, arange,
// triu's comparisons) give, run here by the reference interpreter.
std::optional<std::set<size_t>> Matcher::closure_of(const std::string& buffer, std::vector<std::string>* inputs,
                                                    std::vector<Tensor>* values) {
  std::set<size_t> closure;
  std::vector<std::string> todo{buffer};
  while (!todo.empty()) {
    const std::string x = todo.back();
    todo.pop_back();
    std::optional<size_t> w = writer_of(x);
    if (!w) {
      const Tensor* c = constant_value_ ? constant_value_(x) : nullptr;
      if (!c) return std::nullopt;  // a graph input
      if (inputs && std::find(inputs->begin(), inputs->end(), x) == inputs->end())
        inputs->push_back(x), values->push_back(*c);
      continue;
    }
    if (!closure.insert(*w).second) continue;
    for (const std::string& r : read_buffers(p_.kernels[*w])) todo.push_back(r);
  }
  return closure;
}

std::optional<Tensor> Matcher::constant_buffer(const std::string& buffer) {
  const Buffer& b = p_.buffer(buffer);
  if (writer_of(buffer)) {
    // Element by element in the reference interpreter: only small masks (about
    // 10 us an element); large causal ones are recognised symbolically instead.
    if (numel(b.sizes) > (int64_t(1) << 16)) return std::nullopt;
  } else if (const Tensor* c = constant_value_ ? constant_value_(buffer) : nullptr) {
    return *c;
  } else {
    return std::nullopt;
  }
  std::vector<std::string> inputs;
  std::vector<Tensor> values;
  std::optional<std::set<size_t>> found = closure_of(buffer, &inputs, &values);
  if (!found) return std::nullopt;
  const std::set<size_t>& closure = *found;
  Program sub;
  sub.buffers = p_.buffers;
  for (size_t k : closure) sub.kernels.push_back(p_.kernels[k]);
  sub.inputs = inputs;
  sub.outputs = {buffer};
  try {
    std::vector<Tensor> out = run_loops(sub, values);
    mask_closure_ = closure;
    return out.at(0);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void Matcher::detect_causal(AttentionParams& a, const BufferView& v) {
  if (v.strides[0] * (v.sizes[0] - 1) != 0 || v.strides[1] * (v.sizes[1] - 1) != 0) return;
  if (a.mask_kind == AttentionMask::Additive && a.mask_scale <= 0) return;
  const Buffer& b = p_.buffer(v.buffer);
  // Computed by kernels the symbolic evaluation follows, read at its own (m, n).
  const size_t rb = b.sizes.size();
  if (rb >= 2 && v.offset == 0 && b.offset == 0 && v.strides[3] == 1 && b.strides[rb - 1] == 1 &&
      v.strides[2] == b.strides[rb - 2] && v.sizes[2] <= b.sizes[rb - 2] && v.sizes[3] <= b.sizes[rb - 1]) {
    auto masks = [&](double x) -> std::optional<bool> {
      if (a.mask_kind == AttentionMask::Boolean) return (x != 0) == a.masked_when_nonzero;
      if (x == -std::numeric_limits<double>::infinity()) return true;
      if (x == 0) return false;
      return std::nullopt;
    };
    if (std::optional<int64_t> offset = causal_offset_from_kernels(p_, writer_, constant_value_, v.buffer, masks)) {
      if (std::optional<std::set<size_t>> closure = closure_of(v.buffer, nullptr, nullptr)) {
        a.causal_offset = offset;
        mask_closure_ = *closure;
        return;
      }
    }
  }
  std::optional<Tensor> value = constant_buffer(v.buffer);
  if (!value || value->sizes() != Shape(b.sizes.begin(), b.sizes.end()) ||
      b.strides != std::vector<int64_t>(contiguous_strides(Shape(b.sizes.begin(), b.sizes.end()))) || b.offset != 0)
    return;
  const Tensor t = value->to(DType::Float64).contiguous();
  const double* d = t.data<double>();
  const int64_t M = v.sizes[2], N = v.sizes[3];
  auto at = [&](int64_t m, int64_t n) { return d[v.offset + m * v.strides[2] + n * v.strides[3]]; };
  auto masked = [&](int64_t m, int64_t n, bool& ok) {
    const double x = at(m, n);
    if (a.mask_kind == AttentionMask::Boolean) return (x != 0) == a.masked_when_nonzero;
    if (x == -std::numeric_limits<double>::infinity()) return true;
    ok = ok && x == 0;  // an additive mask of other values is not only a causal one
    return false;
  };
  bool ok = true;
  int64_t first = -1;
  for (int64_t n = 0; n < N && first < 0; ++n)
    if (masked(0, n, ok)) first = n;
  if (first <= 0) return;  // row 0 wholly unmasked, or its first column masked
  const int64_t offset = first - 1;
  for (int64_t m = 0; m < M && ok; ++m)
    for (int64_t n = 0; n < N && ok; ++n) ok = masked(m, n, ok) == (n > m + offset) && ok;
  if (ok) a.causal_offset = offset;
}

std::string Matcher::match(size_t g2_index, ExternCall& call, std::set<size_t>& chain, std::string& summary) {
  const Kernel& g2 = p_.kernels[g2_index];
  const ExternCall& c2 = *g2.call;
  const BufferView& pa = c2.tensors[size_t(c2.gemm.a)];
  std::optional<size_t> pw = writer_of(pa.buffer);
  if (!pw || p_.kernels[*pw].kind != KernelKind::Pointwise) return "-";
  const Kernel& kp = p_.kernels[*pw];
  ranges_ = kp.ranges;
  const size_t r = ranges_.size();
  if (r < 2 || !contiguous_view(p_, pa) || numel(ranges_) != numel(pa.sizes) || ranges_[r - 1] != pa.sizes[2] ||
      ranges_[r - 2] != pa.sizes[1] || !store_is_contiguous(kp))
    return "-";
  for (size_t i = 0; i < r; ++i) canon_.extent(int64_t(i), ranges_[i]);
  own_ = simplify_index(linear_index(ranges_), canon_);
  row_own_ = simplify_index(linear_index(std::vector<int64_t>(ranges_.begin(), ranges_.end() - 1)), canon_);
  chain_.insert(*pw);
  ExprRef pv;
  std::string why = expand(kp.body, pv);
  if (scores_buffer_.empty() || reductions_.empty()) return "-";  // not a softmax of a product
  looked_like = true;
  if (!why.empty()) return why;
  // P = E / sum(E), E = exp(X - max(X)).
  ExprRef top = strip_casts(pv);
  if (top->op != ExprOp::Div) return "the probabilities are " + std::string(expr_op_name(top->op)) + ", not exp / sum";
  const ExprRef num_e = strip_casts(top->operands[0]), den = strip_casts(top->operands[1]);
  auto reduction_of = [&](const ExprRef& e, ReductionType type) -> std::optional<size_t> {
    if (e->op != ExprOp::Load) return std::nullopt;
    std::optional<size_t> w = writer_of(e->buffer);
    if (!w || !reductions_.count(*w) || p_.kernels[*w].reduction != type) return std::nullopt;
    return w;
  };
  std::optional<size_t> sum = reduction_of(den, ReductionType::Sum);
  if (!sum) return "the probabilities are not divided by a sum over the last dimension";
  if (num_e->op != ExprOp::Exp) return "the numerator is " + std::string(expr_op_name(num_e->op)) + ", not exp";
  const ExprRef diff = strip_casts(num_e->operands[0]);
  if (diff->op != ExprOp::Sub) return "exp of " + std::string(expr_op_name(diff->op)) + ", not of the scores minus their max";
  std::optional<size_t> max = reduction_of(strip_casts(diff->operands[1]), ReductionType::Max);
  if (!max) return "exp of the scores minus other than their max over the last dimension";
  const ExprRef x = diff->operands[0];
  if (!same_value(reduced_body_.at(*sum), num_e)) return "the sum reduces other values than the numerator's exp";
  if (!same_value(reduced_body_.at(*max), x)) return "the max reduces other values than the scores";
  if (reductions_.size() != 2) return std::to_string(reductions_.size()) + " reductions in the softmax";
  if (std::string w = scores(x); !w.empty()) return w;
  // The first bmm: q @ k^T.
  const size_t g1_index = writer_.at(scores_buffer_);
  const Kernel& g1 = p_.kernels[g1_index];
  const ExternCall& c1 = *g1.call;
  if (!contiguous_view(p_, {scores_buffer_, p_.buffer(scores_buffer_).sizes, p_.buffer(scores_buffer_).strides, 0}) ||
      numel(p_.buffer(scores_buffer_).sizes) != numel(ranges_))
    return "the product " + scores_buffer_ + " is not contiguous";
  const BufferView &q = c1.tensors[size_t(c1.gemm.a)], &kt = c1.tensors[size_t(c1.gemm.b)],
                   &v = c2.tensors[size_t(c2.gemm.b)];
  if (q.sizes[0] != pa.sizes[0] || q.sizes[1] != pa.sizes[1] || kt.sizes[2] != pa.sizes[2])
    return "the two products' shapes do not chain";
  const DType dt = p_.buffer(g2.output).dtype;
  for (const std::string& b : {q.buffer, kt.buffer, v.buffer, scores_buffer_, pa.buffer})
    if (p_.buffer(b).dtype != dt) return "mixed dtypes (" + b + " is " + std::string(dtype_name(p_.buffer(b).dtype)) + ")";
  if (dt != DType::Float16 && dt != DType::BFloat16 && dt != DType::Float32)
    return "no fused attention for " + std::string(dtype_name(dt));
  // Every buffer of the chain is read only inside it (and P by the second bmm).
  chain_.insert(g1_index);
  for (size_t k : chain_) {
    const std::string& out = p_.kernels[k].output;
    if (p_.buffer(out).is_output) return out + " is a graph output (materialized)";
    auto it = readers_.find(out);
    if (it == readers_.end()) continue;
    for (size_t j : it->second)
      if (!chain_.count(j) && j != g2_index) return out + " is also read by " + p_.kernels[j].output;
    if (k == *pw && it->second.size() != 1) return out + " is also read by another kernel";
  }
  // The call.
  call = ExternCall{};
  call.kind = ExternKind::Attention;
  call.target = "kiln::flash_attention";
  call.outputs = c2.outputs;
  call.output_results = c2.output_results;
  AttentionParams& a = call.attention;
  BufferView k_view = kt;
  std::swap(k_view.sizes[1], k_view.sizes[2]);
  std::swap(k_view.strides[1], k_view.strides[2]);
  call.tensors = {q, k_view, v};
  a.q = 0, a.k = 1, a.v = 2;
  a.scale = scale_;
  std::string mask_text;
  if (add_mask_ || bool_mask_) {
    BufferView mv;
    if (std::string w = mask_view(add_mask_ ? add_mask_ : bool_mask_, mv); !w.empty()) return w;
    a.mask = 3;
    call.tensors.push_back(mv);
    a.mask_kind = add_mask_ ? AttentionMask::Additive : AttentionMask::Boolean;
    a.mask_scale = add_factor_;
    if (bool_mask_) a.fill = fill_;
    a.masked_when_nonzero = masked_when_nonzero_;
    detect_causal(a, mv);
    if (a.causal_offset) {  // the mask is not read: its kernels may go
      call.tensors.pop_back();
      a.mask = -1;
    }
    if (a.causal_offset)
      mask_text = ", causal mask " + mv.buffer + " (n > m" + (*a.causal_offset ? " + " + std::to_string(*a.causal_offset) : "") +
                  (std::isinf(a.fill) ? "): tiles above the diagonal skipped"
                                      : ", filled with " + num(a.fill) + ": every tile computed)");
    else if (add_mask_)
      mask_text = ", additive mask " + mv.buffer + (add_factor_ != 1 ? " times " + num(add_factor_) : "");
    else
      mask_text = ", boolean mask " + mv.buffer + " (masked where " + (masked_when_nonzero_ ? "true" : "false") +
                  ", filled with " + num(fill_) + ")";
  }
  for (const BufferView& t : call.tensors)
    if (std::find(call.inputs.begin(), call.inputs.end(), t.buffer) == call.inputs.end()) call.inputs.push_back(t.buffer);
  chain = chain_;
  std::string softmax;
  for (size_t k : chain_)
    if (k != g1_index) softmax += (softmax.empty() ? "" : ", ") + p_.kernels[k].output;
  summary = "fused bmm " + scores_buffer_ + ", softmax (" + softmax + ") and bmm " + g2.output +
            " into flash attention " + g2.output + ": scale " + num(scale_) + mask_text + "; " +
            std::string(dtype_name(dt)) + " " + sizes_string({pa.sizes[0], pa.sizes[1], pa.sizes[2]}) +
            " scores never stored";
  return {};
}

// The pointwise kernel that only copies `buffer` element for element into a
// contiguous buffer of the same dtype and element count, when it is the
// buffer's only reader and the buffer no graph output.
std::optional<size_t> identity_copy_of(const Program& p, const ReadersIndex& readers, const std::string& buffer) {
  auto it = readers.find(buffer);
  const Buffer& b = p.buffer(buffer);
  if (b.is_output || it == readers.end() || it->second.size() != 1) return std::nullopt;
  const size_t j = *it->second.begin();
  const Kernel& k = p.kernels[j];
  if (k.kind != KernelKind::Pointwise || !store_is_contiguous(k)) return std::nullopt;
  const Buffer& out = p.buffer(k.output);
  const ExprRef body = k.body;
  auto contiguous = [](const Buffer& x) {
    return x.offset == 0 && x.strides == std::vector<int64_t>(contiguous_strides(Shape(x.sizes.begin(), x.sizes.end())));
  };
  if (out.dtype != b.dtype || !contiguous(out) || !contiguous(b) || numel(out.sizes) != numel(b.sizes) ||
      body->op != ExprOp::Load || body->buffer != buffer || body->dtype != b.dtype)
    return std::nullopt;
  if (!equal_index(simplify_index(body->index, kernel_index_ranges(k)), own_point_index(k))) return std::nullopt;
  return j;
}

}  // namespace

void fuse_attention(Program& p, std::vector<FusionDecision>& decisions,
                    const std::function<const Tensor*(const std::string&)>& constant_value) {
  if (std::count_if(p.kernels.begin(), p.kernels.end(), [](const Kernel& k) { return is_batched_plain_bmm(k); }) < 2)
    return;
  ReadersIndex readers = index_readers(p);
  std::map<std::string, size_t> writer;
  for (size_t i = 0; i < p.kernels.size(); ++i)
    for (const std::string& b : written_buffers(p.kernels[i])) writer[b] = i;
  std::set<size_t> removed, maybe_dead;
  std::set<std::string> dropped, retargeted;  // outputs replaced by the copy's buffer, and those buffers
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    if (!is_batched_plain_bmm(p.kernels[i]) || removed.count(i)) continue;
    Matcher m(p, readers, writer, constant_value);
    ExternCall call;
    std::set<size_t> chain;
    std::string summary;
    std::string why = m.match(i, call, chain, summary);
    for (size_t k : chain)
      if (removed.count(k)) why = "its kernels overlap another fused attention";
    FusionDecision d{DecisionKind::Attention, false, "", p.kernels[i].output, ""};
    if (!why.empty()) {
      if (!m.looked_like) continue;
      d.reason = "not fused attention into bmm " + p.kernels[i].output + ": " + why;
      decisions.push_back(d);
      continue;
    }
    for (size_t k : chain)
      if (p.kernels[k].kind == KernelKind::Extern) d.producer = p.kernels[k].output;
    d.accepted = true;
    d.reason = summary;
    decisions.push_back(d);
    Kernel fused = p.kernels[i];
    auto c = std::make_shared<ExternCall>(std::move(call));
    for (size_t k : chain) c->epilogue.push_back(p.kernels[k].origin);
    for (const std::string& b : c->inputs) readers[b].insert(i);
    // A 4-D matmul's output is a view of the bmm's, which lowering copies when
    // the graph returns it: the kernel writes the copy's buffer itself.
    if (std::optional<size_t> copy = identity_copy_of(p, readers, fused.output)) {
      const Kernel& ck = p.kernels[*copy];
      decisions.back().reason += "; writes " + ck.output + " directly (the copy of its view is gone)";
      c->outputs[0] = ck.output;
      removed.insert(*copy);
      dropped.insert(fused.output);
      retargeted.insert(ck.output);
      fused.output = ck.output;
      fused.origin = ck.origin;
      fused.ranges = ck.ranges;
    }
    fused.call = std::move(c);
    p.kernels[i] = std::move(fused);
    removed.insert(chain.begin(), chain.end());
    maybe_dead.insert(m.mask_closure_.begin(), m.mask_closure_.end());
  }
  if (removed.empty()) return;
  // What only the fused kernels read is dead now: masked_fill's -inf (a 0-d
  // scalar_tensor) and a causal mask's full/arange/comparison kernels (which
  // would otherwise still run, some of them on the host, at every call).
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const Kernel& k = p.kernels[i];
    if (k.kind == KernelKind::Extern && k.call->kind == ExternKind::Fallback && k.call->outputs.size() == 1 &&
        numel(p.buffer(k.output).sizes) == 1)
      maybe_dead.insert(i);
    if (k.kind == KernelKind::Pointwise && numel(p.buffer(k.output).sizes) == 1 && strip_casts(k.body)->op == ExprOp::Constant)
      maybe_dead.insert(i);  // the same fill, lowered
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i : maybe_dead) {
      if (removed.count(i)) continue;
      bool dead = true;
      for (const std::string& out : written_buffers(p.kernels[i])) {
        if (p.buffer(out).is_output) dead = false;
        auto it = readers.find(out);
        if (it != readers.end())
          for (size_t j : it->second) dead = dead && removed.count(j) > 0;
      }
      if (dead) removed.insert(i), changed = true;
    }
  }
  std::set<std::string> gone;
  std::vector<Kernel> kept;
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    if (removed.count(i))
      for (const std::string& out : written_buffers(p.kernels[i])) gone.insert(out);
    else kept.push_back(std::move(p.kernels[i]));
  }
  p.kernels = std::move(kept);
  gone.insert(dropped.begin(), dropped.end());
  for (const std::string& b : retargeted) gone.erase(b);
  std::erase_if(p.buffers, [&](const Buffer& b) { return gone.count(b.name) > 0; });
}

}  // namespace kiln::sched::detail
