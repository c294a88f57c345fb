// Epilogue fusion into GEMM extern kernels (Inductor folds `mm + bias` into
// addmm in its lowering; here it is a scheduler decision, recorded with the
// others). BLAS computes alpha * A @ B + beta * C in one call, so a consumer
// folds in when it is exactly one of:
//   product + C   C a number, or a tensor whose index in the consumer is affine
//                 (a [N] bias row, an [M, N] matrix, anything broadcastable:
//                 the output is filled with C and then beta = 1)
//   product - C   the same with beta = -1
//   product * k, product / k   k a number: alpha (and beta) scale
// and the product has no other reader. Anything else is refused with the
// reason: "relu cannot run inside the BLAS call".
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "compiler/loopir/lower_extern.h"
#include "compiler/loopir/simplify_index.h"
#include "compiler/sched/sched_util.h"

namespace kiln::sched::detail {

using namespace loopir;

namespace {

// 0.5, 1, -2.25: short, as a person writes them.
std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

bool contiguous_layout(const Buffer& b) {
  return b.offset == 0 && b.strides == std::vector<int64_t>(contiguous_strides(Shape(b.sizes.begin(), b.sizes.end())));
}

std::string op_phrase(const ExprRef& body) {
  if (body->op == ExprOp::Maximum &&
      std::any_of(body->operands.begin(), body->operands.end(),
                  [](const ExprRef& o) { return o->op == ExprOp::Constant && o->value == 0; }))
    return "relu";
  return std::string(expr_op_name(body->op));
}

struct Match {
  GemmParams gemm;
  std::optional<BufferView> c_view;  // a new C tensor
  std::string what;                   // "bias arg2 as beta*C"
};

// Why `consumer` cannot fold into the GEMM writing `product`, or "" with `m` filled.
std::string match_epilogue(const Program& p, const Kernel& gemm_kernel, const Kernel& consumer,
                           const std::string& product, Match& m) {
  const ExternCall& call = *gemm_kernel.call;
  const Buffer& out = p.buffer(product);
  const ExprRef& body = consumer.body;
  m.gemm = call.gemm;
  if (consumer.kind != KernelKind::Pointwise) return consumer.output + " is a reduction, not an elementwise epilogue";
  if (consumer.ranges != gemm_kernel.ranges)
    return "it broadcasts the product to " + sizes_string(consumer.ranges) + " (GEMM writes " +
           sizes_string(gemm_kernel.ranges) + ")";
  if (!contiguous_layout(out) || !contiguous_layout(p.buffer(consumer.output)) || !store_is_contiguous(consumer))
    return "a layout GEMM does not write (not contiguous)";
  if (p.buffer(consumer.output).dtype != out.dtype || body->dtype != out.dtype)
    return "it converts the dtype, which BLAS does not";
  IndexRanges r = kernel_index_ranges(consumer);
  IndexRef own = simplify_index(linear_index(consumer.ranges), r);
  auto is_product = [&](const ExprRef& e) {
    return e->op == ExprOp::Load && e->buffer == product && e->dtype == out.dtype &&
           equal_index(simplify_index(e->index, r), own);
  };
  bool add = body->op == ExprOp::Add, sub = body->op == ExprOp::Sub;
  bool mul = body->op == ExprOp::Mul, div = body->op == ExprOp::Div;
  if (!add && !sub && !mul && !div) return op_phrase(body) + " cannot run inside the BLAS call";
  const ExprRef &lhs = body->operands[0], &rhs = body->operands[1];
  bool left = is_product(lhs);
  if (!left && !((add || mul) && is_product(rhs)))
    return "only product + C, product - C, product * k or product / k fold into GEMM (" + op_phrase(body) +
           " of other values)";
  const ExprRef& other = left ? rhs : lhs;
  if (mul || div) {
    if (other->op != ExprOp::Constant) return std::string(mul ? "a product" : "a quotient") +
                                              " by a tensor cannot run inside the BLAS call (only by a number)";
    double k = div ? 1.0 / other->value : other->value;
    m.gemm.alpha *= k, m.gemm.beta *= k;
    m.what = std::string(mul ? "scale by " : "division by ") + num(other->value) + " as alpha";
    return {};
  }
  // product + C: C a number, or a tensor load (optionally times a number: add's alpha).
  double factor = sub ? -1 : 1;
  ExprRef c = other;
  if (c->op == ExprOp::Mul) {
    const ExprRef &a = c->operands[0], &b = c->operands[1];
    if (b->op == ExprOp::Constant && a->op == ExprOp::Load) factor *= b->value, c = a;
    else if (a->op == ExprOp::Constant && b->op == ExprOp::Load) factor *= a->value, c = b;
  }
  bool has_c = m.gemm.c >= 0 || m.gemm.c_constant;
  if (c->op == ExprOp::Constant) {
    if (m.gemm.c >= 0) return "GEMM already adds a tensor C; a second addend does not fit beta*C";
    // beta*C + f*k == 1 * (beta*C + f*k) with C a number.
    double before = m.gemm.c_constant ? *m.gemm.c_constant * m.gemm.beta : 0;
    m.gemm.c_constant = before + factor * c->value;
    m.gemm.beta = 1;
    m.what = "constant " + num(c->value) + " as beta*C";
    return {};
  }
  if (c->op != ExprOp::Load) return "the addend is computed (" + op_phrase(c) + "), not a buffer BLAS can read as C";
  if (has_c) return "GEMM already adds a C; a second addend does not fit beta*C";
  if (c->dtype != out.dtype || p.buffer(c->buffer).dtype != out.dtype) return "the addend has another dtype";
  if (c->buffer == product) return "the addend is the product itself";
  std::map<int64_t, IndexRef> to_view;
  auto view = loopir::detail::as_strided_view(p.buffer(c->buffer), consumer.ranges, [&](const std::vector<IndexRef>& idx) {
    for (size_t d = 0; d < idx.size(); ++d) to_view[int64_t(d)] = idx[d];
    return substitute_vars(c->index, to_view);
  });
  if (!view) return "the addend " + c->buffer + " is not a strided view of its buffer (its index is not affine)";
  m.c_view = *view;
  m.gemm.beta = factor;
  m.what = "bias " + c->buffer + " as beta*C";
  return {};
}

}  // namespace

void fuse_extern_epilogues(Program& p, std::vector<FusionDecision>& decisions) {
  if (std::none_of(p.kernels.begin(), p.kernels.end(), [](const Kernel& k) {
        return k.kind == KernelKind::Extern && k.call->kind == ExternKind::Gemm;
      }))
    return;
  // Kept true as folds move a GEMM to its consumer's place.
  ReadersIndex readers = index_readers(p);
  std::vector<bool> folded_away(p.kernels.size(), false);
  std::set<std::string> products_gone;
  // A folded call sits where its consumer was and is tried again when the
  // loop gets there, so `mm * k + bias` folds in two steps.
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const Kernel& e = p.kernels[i];
    if (e.kind != KernelKind::Extern || e.call->kind != ExternKind::Gemm || e.call->outputs.size() != 1) continue;
    const std::string product = e.output;
    std::vector<size_t> consumers;
    for (size_t j : readers[product])
      if (j > i) consumers.push_back(j);
    if (consumers.empty()) continue;
    const Kernel& c = p.kernels[consumers[0]];
    FusionDecision d{DecisionKind::Epilogue, false, product, c.output, ""};
    std::string op = e.call->gemm.batched ? "bmm" : "mm";
    auto refuse = [&](const std::string& why) {
      d.reason = "not folded " + c.output + " into extern " + op + " " + product + ": " + why;
      decisions.push_back(d);
    };
    if (p.buffer(product).is_output) { refuse(product + " is a graph output (materialized)"); continue; }
    if (consumers.size() > 1) {
      refuse(std::to_string(consumers.size()) + " kernels read the product (" + c.output + ", " +
             p.kernels[consumers[1]].output + (consumers.size() > 2 ? ", ..." : "") + ")");
      continue;
    }
    Match m;
    if (std::string why = match_epilogue(p, e, c, product, m); !why.empty()) { refuse(why); continue; }
    auto call = std::make_shared<ExternCall>(*e.call);
    call->gemm = m.gemm;
    if (m.c_view) {
      call->tensors.push_back(*m.c_view);
      call->gemm.c = int(call->tensors.size() - 1);
      if (std::find(call->inputs.begin(), call->inputs.end(), m.c_view->buffer) == call->inputs.end())
        call->inputs.push_back(m.c_view->buffer);
    }
    bool fused = call->gemm.c >= 0 || call->gemm.c_constant || call->gemm.alpha != 1;
    if (fused) call->target = call->gemm.batched ? "aten::baddbmm.default" : "aten::addmm.default";
    call->outputs[0] = c.output;
    call->epilogue.push_back(c.origin);
    Kernel folded = e;
    folded.output = c.output;
    folded.call = std::move(call);
    d.accepted = true;
    d.reason = "folded " + c.output + " into extern " + op + " " + product + " as " +
               (folded.call->gemm.batched ? "baddbmm" : "addmm") + ": " + m.what + " (alpha=" +
               num(folded.call->gemm.alpha) + ", beta=" + num(folded.call->gemm.beta) + ")";
    decisions.push_back(d);
    // The folded call runs where the consumer ran: C may be computed between the two.
    const size_t at = consumers[0];
    for (const std::string& b : read_buffers(e)) readers[b].erase(i), readers[b].insert(at);
    readers.erase(product);
    products_gone.insert(product);
    folded_away[i] = true;
    p.kernels[at] = std::move(folded);
  }
  std::vector<Kernel> kept;
  for (size_t i = 0; i < p.kernels.size(); ++i)
    if (!folded_away[i]) kept.push_back(std::move(p.kernels[i]));
  p.kernels = std::move(kept);
  std::erase_if(p.buffers, [&](const Buffer& b) { return products_gone.count(b.name) > 0; });
}

}  // namespace kiln::sched::detail
