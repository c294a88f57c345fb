// Causal masks computed in the graph (triu / tril of ones, arange comparisons,
// which constant folding leaves alone above its size limit) recognised from
// the kernels that compute them, symbolically: each value is a number, an
// integer affine form a*m + b*n + c of the mask's row and column (an arange
// read at them), or a choice between two numbers by the sign of such a form.
// Exact for every element without visiting one, so a [2048, 2048] mask costs
// what a [4, 4] one does. Anything else is "not known" and the caller falls
// back to evaluating the mask.
#include <cmath>
#include <optional>

#include "compiler/loopir/view_index.h"
#include "compiler/sched/sched_util.h"

namespace kiln::sched::detail {

using namespace loopir;

namespace {

struct Affine {
  int64_t m = 0, n = 0, c = 0;
};

// A value of the mask's computation at its element (m, n).
struct Sym {
  enum class Kind { Number, Affine, Choice } kind = Kind::Number;
  double value = 0;  // Number
  Affine a;          // Affine; Choice: the form compared with 0
  ExprOp op = ExprOp::Gt;             // Choice: a OP 0
  double if_true = 1, if_false = 0;   // Choice
};

Sym number(double v) {
  Sym s;
  s.value = v;
  return s;
}

bool integral(double v) { return std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15; }

class MaskEvaluator {
 public:
  MaskEvaluator(const Program& p, const std::map<std::string, size_t>& writer,
                const std::function<const Tensor*(const std::string&)>& constant_value, int64_t m_var, int64_t n_var)
      : p_(p), writer_(writer), constant_value_(constant_value), m_var_(m_var), n_var_(n_var) {}

  // `e` in the variables of a kernel over `ranges`.
  std::optional<Sym> eval(const ExprRef& e, const IndexRanges& ranges, int depth = 0) {
    if (depth > 64) return std::nullopt;
    switch (e->op) {
      case ExprOp::Constant: return number(e->value);
      case ExprOp::Load: return load(e, ranges, depth);
      case ExprOp::ToDtype: {
        std::optional<Sym> x = eval(e->operands[0], ranges, depth + 1);
        if (!x) return std::nullopt;
        if (e->dtype == DType::Bool) return truth(*x);
        if (is_floating(e->dtype) || x->kind != Sym::Kind::Number) return x;  // integers and choices of them stay exact
        return number(std::trunc(x->value));
      }
      case ExprOp::Neg: {
        std::optional<Sym> x = eval(e->operands[0], ranges, depth + 1);
        if (!x || x->kind == Sym::Kind::Choice) return std::nullopt;
        if (x->kind == Sym::Kind::Number) return number(-x->value);
        x->a = {-x->a.m, -x->a.n, -x->a.c};
        return x;
      }
      case ExprOp::Add: case ExprOp::Sub: case ExprOp::Mul: {
        std::optional<Sym> x = eval(e->operands[0], ranges, depth + 1), y = eval(e->operands[1], ranges, depth + 1);
        if (!x || !y) return std::nullopt;
        return arith(e->op, *x, *y);
      }
      case ExprOp::Eq: case ExprOp::Ne: case ExprOp::Lt: case ExprOp::Le: case ExprOp::Gt: case ExprOp::Ge: {
        std::optional<Sym> x = eval(e->operands[0], ranges, depth + 1), y = eval(e->operands[1], ranges, depth + 1);
        if (!x || !y) return std::nullopt;
        return compare(e->op, *x, *y);
      }
      case ExprOp::Where: {
        std::optional<Sym> c = eval(e->operands[0], ranges, depth + 1);
        std::optional<Sym> x = eval(e->operands[1], ranges, depth + 1), y = eval(e->operands[2], ranges, depth + 1);
        if (!c || !x || !y || x->kind != Sym::Kind::Number || y->kind != Sym::Kind::Number) return std::nullopt;
        if (c->kind == Sym::Kind::Number) return c->value != 0 ? x : y;
        if (c->kind != Sym::Kind::Choice) return std::nullopt;
        Sym s = *c;
        s.if_true = c->if_true != 0 ? x->value : y->value;
        s.if_false = c->if_false != 0 ? x->value : y->value;
        return s;
      }
      default: return std::nullopt;
    }
  }

 private:
  static Sym truth(Sym x) {
    if (x.kind == Sym::Kind::Number) return number(x.value != 0);
    if (x.kind == Sym::Kind::Choice) {
      x.if_true = x.if_true != 0, x.if_false = x.if_false != 0;
      return x;
    }
    Sym s;  // an affine form's truth: a != 0
    s.kind = Sym::Kind::Choice, s.a = x.a, s.op = ExprOp::Ne;
    return s;
  }

  static std::optional<Sym> arith(ExprOp op, const Sym& x, const Sym& y) {
    using K = Sym::Kind;
    if (x.kind == K::Number && y.kind == K::Number)
      return number(op == ExprOp::Add ? x.value + y.value : op == ExprOp::Sub ? x.value - y.value : x.value * y.value);
    if (x.kind == K::Choice || y.kind == K::Choice) return std::nullopt;
    if (op == ExprOp::Mul) {
      const Sym& f = x.kind == K::Number ? x : y;
      const Sym& a = x.kind == K::Number ? y : x;
      if (f.kind != K::Number || !integral(f.value)) return std::nullopt;
      const int64_t k = int64_t(f.value);
      Sym s = a;
      s.a = {a.a.m * k, a.a.n * k, a.a.c * k};
      return s;
    }
    auto as_affine = [](const Sym& s) -> std::optional<Affine> {
      if (s.kind == K::Affine) return s.a;
      if (integral(s.value)) return Affine{0, 0, int64_t(s.value)};
      return std::nullopt;
    };
    std::optional<Affine> a = as_affine(x), b = as_affine(y);
    if (!a || !b) return std::nullopt;
    const int64_t sign = op == ExprOp::Sub ? -1 : 1;
    Sym s;
    s.kind = K::Affine;
    s.a = {a->m + sign * b->m, a->n + sign * b->n, a->c + sign * b->c};
    return s;
  }

  static std::optional<Sym> compare(ExprOp op, const Sym& x, const Sym& y) {
    using K = Sym::Kind;
    auto holds = [&](double l, double r) {
      switch (op) {
        case ExprOp::Eq: return l == r;
        case ExprOp::Ne: return l != r;
        case ExprOp::Lt: return l < r;
        case ExprOp::Le: return l <= r;
        case ExprOp::Gt: return l > r;
        default: return l >= r;
      }
    };
    if (x.kind == K::Number && y.kind == K::Number) return number(holds(x.value, y.value));
    // A choice compared with a number: each branch compared.
    if (x.kind == K::Choice && y.kind == K::Number) {
      Sym s = x;
      s.if_true = holds(x.if_true, y.value), s.if_false = holds(x.if_false, y.value);
      return s;
    }
    if (x.kind == K::Choice || y.kind == K::Choice) return std::nullopt;
    std::optional<Sym> d = arith(ExprOp::Sub, x, y);
    if (!d) return std::nullopt;
    Sym s;
    s.kind = K::Choice, s.a = d->kind == K::Affine ? d->a : Affine{0, 0, int64_t(d->value)}, s.op = op;
    return s;
  }

  // An index of the kernel's variables as a*m + b*n + c, or nullopt.
  std::optional<Affine> affine_index(const IndexRef& raw, const IndexRanges& ranges) const {
    const IndexRef e = simplify_index(raw, ranges);
    Affine a;
    auto term = [&](const IndexRef& t) {
      int64_t k = 1;
      IndexRef v = t;
      if (t->kind == IndexKind::Mul) {
        if (t->operands.size() != 2 || t->operands[0]->kind != IndexKind::Const) return false;
        k = t->operands[0]->value, v = t->operands[1];
      }
      if (v->kind == IndexKind::Const) return a.c += k * v->value, true;
      if (v->kind != IndexKind::Var) return false;
      if (v->value == m_var_) return a.m += k, true;
      if (v->value == n_var_) return a.n += k, true;
      return false;
    };
    if (e->kind == IndexKind::Add) {
      for (const IndexRef& t : e->operands)
        if (!term(t)) return std::nullopt;
      return a;
    }
    if (!term(e)) return std::nullopt;
    return a;
  }

  std::optional<Sym> load(const ExprRef& e, const IndexRanges& ranges, int depth) {
    auto w = writer_.find(e->buffer);
    if (w == writer_.end()) return constant_load(e, ranges);
    const Kernel& k = p_.kernels[w->second];
    if (k.kind == KernelKind::Extern) {
      if (k.call->kind != ExternKind::Fallback) return std::nullopt;
      const std::vector<Arg>& args = k.call->args;
      auto num = [](const Arg& a) -> std::optional<double> {
        if (a.kind == Arg::Kind::Int) return double(a.i);
        if (a.kind == Arg::Kind::Float) return a.f;
        if (a.kind == Arg::Kind::Bool) return a.b ? 1.0 : 0.0;
        return std::nullopt;
      };
      if (k.call->target == "aten::full.default" && args.size() >= 2) {
        std::optional<double> v = num(args[1]);
        return v ? std::optional<Sym>(number(*v)) : std::nullopt;
      }
      if (k.call->target == "aten::scalar_tensor.default" && !args.empty()) {
        std::optional<double> v = num(args[0]);
        return v ? std::optional<Sym>(number(*v)) : std::nullopt;
      }
      if (k.call->target == "aten::arange.start_step" && args.size() >= 3 && is_integral(p_.buffer(e->buffer).dtype, false)) {
        std::optional<double> start = num(args[0]), step = num(args[2]);
        const Buffer& b = p_.buffer(e->buffer);
        std::optional<Affine> at = affine_index(e->index, ranges);
        if (!start || !step || !integral(*start) || !integral(*step) || !at || b.offset != 0 || b.strides != std::vector<int64_t>{1})
          return std::nullopt;
        Sym s;
        s.kind = Sym::Kind::Affine;
        const int64_t s0 = int64_t(*start), st = int64_t(*step);
        s.a = {at->m * st, at->n * st, s0 + at->c * st};
        return s;
      }
      return std::nullopt;
    }
    if (k.kind != KernelKind::Pointwise || !store_is_contiguous(k)) return std::nullopt;
    // The producer's body at the element this load reads, in this kernel's variables.
    std::map<int64_t, IndexRef> decode;
    if (!k.ranges.empty()) {
      std::vector<IndexRef> digits = reshape_indices(k.ranges, {numel(k.ranges)}, {e->index});
      for (size_t i = 0; i < digits.size(); ++i) decode[int64_t(i)] = simplify_index(digits[i], ranges);
    }
    struct Move : ExprMutator {
      const std::map<int64_t, IndexRef>* to;
      const IndexRanges* r;
      ExprRef mutate_node(const ExprRef& rebuilt, const ExprRef&) override {
        if (rebuilt->op != ExprOp::Load) return rebuilt;
        return expr_load(rebuilt->buffer, simplify_index(substitute_vars(rebuilt->index, *to), *r), rebuilt->dtype);
      }
    } move;
    move.to = &decode;
    move.r = &ranges;
    return eval(move.mutate(k.body), ranges, depth + 1);
  }

  // A folded constant: one number throughout, or (a folded arange, maybe
  // unsqueezed) an integer progression start + step * i over its flat index i.
  std::optional<Sym> constant_load(const ExprRef& e, const IndexRanges& ranges) {
    const Tensor* t = constant_value_ ? constant_value_(e->buffer) : nullptr;
    const Buffer& b = p_.buffer(e->buffer);
    if (!t || t->numel() == 0 || t->sizes() != Shape(b.sizes.begin(), b.sizes.end())) return std::nullopt;
    const Tensor d = t->to(DType::Float64).contiguous();
    const double* v = d.data<double>();
    const int64_t count = d.numel();
    bool uniform = true;
    for (int64_t i = 1; i < count && uniform; ++i) uniform = v[i] == v[0];
    if (uniform) return number(v[0]);
    // Flat progressions only (an arange, or one unsqueezed): element f at flat index f.
    if (b.strides != std::vector<int64_t>(contiguous_strides(Shape(b.sizes.begin(), b.sizes.end()))) || b.offset != 0 ||
        !integral(v[0]) || !integral(v[1] - v[0]))
      return std::nullopt;
    for (int64_t i = 1; i < count; ++i)
      if (v[i] != v[0] + double(i) * (v[1] - v[0])) return std::nullopt;
    std::optional<Affine> at = affine_index(e->index, ranges);
    if (!at) return std::nullopt;
    const int64_t s0 = int64_t(v[0]), st = int64_t(v[1] - v[0]);
    Sym s;
    s.kind = Sym::Kind::Affine;
    s.a = {at->m * st, at->n * st, s0 + at->c * st};
    return s;
  }

  const Program& p_;
  const std::map<std::string, size_t>& writer_;
  const std::function<const Tensor*(const std::string&)>& constant_value_;
  int64_t m_var_, n_var_;
};

}  // namespace

std::optional<int64_t> causal_offset_from_kernels(const Program& p, const std::map<std::string, size_t>& writer,
                                                  const std::function<const Tensor*(const std::string&)>& constant_value,
                                                  const std::string& buffer,
                                                  const std::function<std::optional<bool>(double)>& masks) {
  auto w = writer.find(buffer);
  if (w == writer.end()) return std::nullopt;
  const Kernel& k = p.kernels[w->second];
  if (k.kind != KernelKind::Pointwise || k.ranges.size() < 2 || !store_is_contiguous(k)) return std::nullopt;
  const int64_t r = int64_t(k.ranges.size());
  IndexRanges ranges = kernel_index_ranges(k);
  MaskEvaluator ev(p, writer, constant_value, r - 2, r - 1);
  std::optional<Sym> s = ev.eval(k.body, ranges);
  if (!s || s->kind != Sym::Kind::Choice) return std::nullopt;
  std::optional<bool> t = masks(s->if_true), f = masks(s->if_false);
  if (!t || !f || *t == *f) return std::nullopt;
  // masked <=> (a OP 0), flipped when the false branch is the masked one.
  Affine a = s->a;
  ExprOp op = s->op;
  if (!*t) {
    switch (op) {
      case ExprOp::Gt: op = ExprOp::Le; break;
      case ExprOp::Ge: op = ExprOp::Lt; break;
      case ExprOp::Lt: op = ExprOp::Ge; break;
      case ExprOp::Le: op = ExprOp::Gt; break;
      default: return std::nullopt;
    }
  }
  if (op == ExprOp::Lt || op == ExprOp::Le) {  // a < 0 <=> -a > 0
    a = {-a.m, -a.n, -a.c};
    op = op == ExprOp::Lt ? ExprOp::Gt : ExprOp::Ge;
  }
  if (op != ExprOp::Gt && op != ExprOp::Ge) return std::nullopt;
  if (a.n != 1 || a.m != -1) return std::nullopt;
  // n - m + c > 0 <=> n > m - c;  n - m + c >= 0 <=> n > m - c - 1.
  const int64_t offset = op == ExprOp::Gt ? -a.c : -a.c - 1;
  if (offset < 0) return std::nullopt;  // the diagonal itself masked: left to the evaluated path
  return offset;
}

}  // namespace kiln::sched::detail
