#include "compiler/codegen/cpu/reuse_row_values.h"

#include <functional>
#include <map>
#include <set>

#include "compiler/sched/sched_util.h"

namespace kiln::codegen::cpu {

using namespace loopir;

namespace {

// Worth a store and a load per element: a call into the math routines.
// Arithmetic is cheaper to redo than to write back and read again.
bool is_expensive_op(ExprOp op) {
  switch (op) {
    case ExprOp::Exp: case ExprOp::Log: case ExprOp::Sin: case ExprOp::Cos:
    case ExprOp::Tanh: case ExprOp::Sigmoid:
      return true;
    default:
      return false;
  }
}

// Rebuilds an expression bottom-up once per shared node (bodies are DAGs), with
// `leaf` deciding a node's replacement before its children are looked at.
class DagRewriter {
 public:
  using Leaf = std::function<ExprRef(const ExprRef&)>;  // null: rebuild from the children
  explicit DagRewriter(Leaf leaf) : leaf_(std::move(leaf)) {}

  ExprRef operator()(const ExprRef& e) {
    if (auto it = done_.find(e.get()); it != done_.end()) return it->second;
    ExprRef result = leaf_(e);
    if (!result) {
      auto copy = std::make_shared<Expr>(*e);
      bool changed = false;
      for (ExprRef& o : copy->operands) {
        ExprRef r = (*this)(o);
        changed |= r != o;
        o = r;
      }
      result = changed ? ExprRef(copy) : e;
    }
    done_[e.get()] = result;
    return result;
  }

 private:
  Leaf leaf_;
  std::map<const Expr*, ExprRef> done_;
};

class StructuralEq {
 public:
  bool operator()(const ExprRef& a, const ExprRef& b) {
    if (a == b) return true;
    if (equal_.count({a.get(), b.get()})) return true;
    if (a->op != b->op || a->dtype != b->dtype || a->operands.size() != b->operands.size()) return false;
    if (a->op == ExprOp::Constant && !(a->value == b->value)) return false;
    if (a->op == ExprOp::Load && (a->buffer != b->buffer || !equal_index(a->index, b->index))) return false;
    for (size_t i = 0; i < a->operands.size(); ++i)
      if (!(*this)(a->operands[i], b->operands[i])) return false;
    equal_.insert({a.get(), b.get()});
    return true;
  }

 private:
  std::set<std::pair<const Expr*, const Expr*>> equal_;
};

void collect_nodes(const ExprRef& e, std::set<const Expr*>& seen, std::vector<ExprRef>& out) {
  if (!seen.insert(e.get()).second) return;
  for (const ExprRef& o : e->operands) collect_nodes(o, seen, out);
  out.push_back(e);
}

bool contains_expensive(const ExprRef& e, std::map<const Expr*, bool>& memo) {
  if (auto it = memo.find(e.get()); it != memo.end()) return it->second;
  bool r = is_expensive_op(e->op);
  for (const ExprRef& o : e->operands) r = contains_expensive(o, memo) || r;
  memo[e.get()] = r;
  return r;
}

IndexRef rename(const IndexRef& i, const std::map<int64_t, IndexRef>& names, const IndexRanges& ranges) {
  return simplify_index(substitute_vars(i, names), ranges);
}

// The reduction's body node that `pointwise` (already renamed to the
// reduction's variables) computes too: the largest one containing an
// expensive op, found top-down so a match is never a part of a larger one.
std::pair<ExprRef, ExprRef> find_shared_value(const ExprRef& pointwise, const ExprRef& reduction) {
  std::set<const Expr*> seen;
  std::vector<ExprRef> candidates;
  collect_nodes(reduction, seen, candidates);
  std::map<const Expr*, bool> expensive;
  std::erase_if(candidates, [&](const ExprRef& c) { return !contains_expensive(c, expensive); });
  if (candidates.empty()) return {};
  StructuralEq eq;
  std::vector<ExprRef> frontier{pointwise};
  std::set<const Expr*> visited;
  while (!frontier.empty()) {
    std::vector<ExprRef> next;
    for (const ExprRef& n : frontier) {
      if (!visited.insert(n.get()).second || !contains_expensive(n, expensive)) continue;
      for (const ExprRef& c : candidates)
        if (eq(n, c)) return {n, c};
      for (const ExprRef& o : n->operands) next.push_back(o);
    }
    frontier = std::move(next);
  }
  return {};
}

}  // namespace

std::vector<std::string> reuse_row_values(const Program& p, GroupLoops& plan) {
  std::vector<std::string> notes;
  for (size_t j = 0; j < plan.kernels.size(); ++j) {
    KernelLoops& pw = plan.kernels[j];
    if (pw.kernel->kind != KernelKind::Pointwise || pw.inner_ranges.empty()) continue;
    const Buffer& out = p.buffer(pw.kernel->output);
    // The nearest reduction first: its values are the likeliest still to be in cache.
    for (size_t i = j; i-- > 0;) {
      KernelLoops& red = plan.kernels[i];
      if (red.kernel->kind != KernelKind::Reduction || red.kernel->reduction_ranges != pw.inner_ranges) continue;
      const int64_t first_red = int64_t(red.kernel->ranges.size());
      std::map<int64_t, IndexRef> to_red, to_pw;
      for (size_t d = 0; d < pw.inner_ranges.size(); ++d) {
        to_red[pw.first_inner + int64_t(d)] = index_var(first_red + int64_t(d));
        to_pw[first_red + int64_t(d)] = index_var(pw.first_inner + int64_t(d));
      }
      DagRewriter to_reduction_vars([&](const ExprRef& e) -> ExprRef {
        if (e->op != ExprOp::Load) return nullptr;
        return expr_load(e->buffer, rename(e->index, to_red, red.ranges), e->dtype);
      });
      ExprRef renamed = to_reduction_vars(pw.body);
      auto [in_pointwise, in_reduction] = find_shared_value(renamed, red.body);
      if (!in_reduction || in_reduction->dtype != out.dtype) continue;

      IndexRef out_index = rename(pw.store_index, to_red, red.ranges);
      red.side_stores.push_back({out.name, out_index, in_reduction});
      // Replace the shared value in the renamed body, then rename back.
      ExprRef reload = expr_load(out.name, out_index, out.dtype);
      DagRewriter replace([&](const ExprRef& e) -> ExprRef { return e == in_pointwise ? reload : nullptr; });
      DagRewriter to_pointwise_vars([&](const ExprRef& e) -> ExprRef {
        if (e->op != ExprOp::Load) return nullptr;
        return expr_load(e->buffer, rename(e->index, to_pw, pw.ranges), e->dtype);
      });
      pw.body = to_pointwise_vars(replace(renamed));
      notes.push_back(out.name + " reuses " + std::string(expr_op_name(in_reduction->op)) + " computed by " +
                      red.kernel->output);
      break;
    }
  }
  return notes;
}

}  // namespace kiln::codegen::cpu
