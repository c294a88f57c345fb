#include "compiler/codegen/cpu/loop_plan.h"

#include <algorithm>
#include <map>

#include "core/util/status.h"

namespace kiln::codegen::cpu {

using namespace loopir;

namespace {

int64_t product(const std::vector<int64_t>& v, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= v[i];
  return p;
}

// Rows shorter than this gain nothing from an inner loop of their own: the
// flat outer loop vectorizes just as well, and keeps every thread busy.
constexpr int64_t kMinInnerRow = 16;
constexpr int64_t kMinOuterRows = 64;

// The outer point count: the reductions' output size, or for pointwise
// groups whose kernels share one shape, the rows of that shape (so a
// broadcast along the last dimension stays a unit-stride inner loop), else
// every element.
int64_t choose_outer(const Program& p, const sched::FusedGroup& g, const PlanOptions& options) {
  if (g.has_reduction) return g.outer_numel;
  const std::vector<int64_t>& r0 = p.kernels[g.kernels.front()].ranges;
  if (options.flat_pointwise) return product(r0, 0, r0.size());
  bool same = std::all_of(g.kernels.begin(), g.kernels.end(), [&](size_t k) { return p.kernels[k].ranges == r0; });
  if (same && r0.size() >= 2 && r0.back() >= kMinInnerRow && product(r0, 0, r0.size() - 1) >= kMinOuterRows)
    return product(r0, 0, r0.size() - 1);
  return product(r0, 0, r0.size());
}

// Substitutes the outer decoding into every load, once per shared
// subexpression: inlined producers make bodies DAGs, and the emitter relies on
// shared nodes staying shared to compute them once.
class Reindex {
 public:
  Reindex(const std::map<int64_t, IndexRef>& decode, const IndexRanges& ranges) : decode_(decode), ranges_(ranges) {}
  IndexRef index(const IndexRef& i) const { return simplify_index(substitute_vars(i, decode_), ranges_); }

  ExprRef expr(const ExprRef& e) {
    if (auto it = done_.find(e.get()); it != done_.end()) return it->second;
    ExprRef result;
    if (e->op == ExprOp::Load) {
      result = expr_load(e->buffer, index(e->index), e->dtype);
    } else {
      auto copy = std::make_shared<Expr>(*e);
      for (ExprRef& o : copy->operands) o = expr(o);
      result = copy;
    }
    done_[e.get()] = result;
    return result;
  }

 private:
  const std::map<int64_t, IndexRef>& decode_;
  const IndexRanges& ranges_;
  std::map<const Expr*, ExprRef> done_;
};

}  // namespace

GroupLoops plan_group(const Program& p, const sched::FusedGroup& g, const PlanOptions& options) {
  GroupLoops out;
  if (p.kernels[g.kernels.front()].kind == KernelKind::Extern) {
    out.is_extern = true;
    return out;
  }
  out.outer_numel = choose_outer(p, g, options);
  out.work_per_outer = 0;
  for (size_t k : g.kernels) {
    const Kernel& K = p.kernels[k];
    KILN_CHECK(K.kind == KernelKind::Pointwise || K.kind == KernelKind::Reduction, "cpu codegen: kernel ", K.output,
               " is not a loop kernel");
    size_t prefix = 0;
    if (out.outer_numel > 0) {
      while (prefix < K.ranges.size() && product(K.ranges, 0, prefix) != out.outer_numel) ++prefix;
      KILN_CHECK(product(K.ranges, 0, prefix) == out.outer_numel, "cpu codegen: ", K.output, " has no outer prefix of ",
                 out.outer_numel, " points");
      // Trailing size-1 dimensions belong to the outer part too: they need no loop.
      while (prefix < K.ranges.size() && K.ranges[prefix] == 1) ++prefix;
    }
    KernelLoops kl;
    kl.kernel = &K;
    kl.first_inner = int64_t(prefix);
    kl.inner_ranges.assign(K.ranges.begin() + long(prefix), K.ranges.end());
    kl.ranges.extent(kOuterVar, std::max<int64_t>(out.outer_numel, 1));
    for (size_t i = prefix; i < K.ranges.size(); ++i) kl.ranges.extent(int64_t(i), K.ranges[i]);
    for (size_t i = 0; i < K.reduction_ranges.size(); ++i)
      kl.ranges.extent(int64_t(K.ranges.size() + i), K.reduction_ranges[i]);
    std::map<int64_t, IndexRef> decode;
    int64_t stride = 1;
    for (size_t i = prefix; i-- > 0;) {
      IndexRef x = stride == 1 ? index_var(kOuterVar) : index_floordiv(index_var(kOuterVar), index_const(stride));
      if (i > 0) x = index_mod(x, index_const(K.ranges[i]));
      decode[int64_t(i)] = x;
      stride *= K.ranges[i];
    }
    Reindex reindex(decode, kl.ranges);
    kl.body = reindex.expr(K.body);
    kl.store_index = reindex.index(K.store_index);
    out.work_per_outer += std::max<int64_t>(1, product(kl.inner_ranges, 0, kl.inner_ranges.size()) *
                                                  product(K.reduction_ranges, 0, K.reduction_ranges.size()));
    out.kernels.push_back(std::move(kl));
  }
  return out;
}

}  // namespace kiln::codegen::cpu
