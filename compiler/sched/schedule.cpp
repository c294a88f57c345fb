// Inlining and fusion; the rules and why each holds are in docs/sched.md.
#include "compiler/sched/schedule.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "compiler/loopir/view_index.h"
#include "compiler/sched/sched_util.h"
#include "core/util/status.h"

namespace kiln::sched {

using namespace loopir;

namespace detail {

int64_t numel(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

std::string sizes_string(const std::vector<int64_t>& sizes) {
  std::string out = "[";
  for (size_t i = 0; i < sizes.size(); ++i) out += (i ? ", " : "") + std::to_string(sizes[i]);
  return out + "]";
}

IndexRanges kernel_index_ranges(const Kernel& k) {
  IndexRanges r;
  int64_t v = 0;
  for (int64_t s : k.ranges) r.extent(v++, s);
  for (int64_t s : k.reduction_ranges) r.extent(v++, s);
  return r;
}

IndexRef linear_index(const std::vector<int64_t>& sizes, int64_t first_var) {
  std::vector<IndexRef> terms;
  int64_t stride = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    // A size-1 dimension's variable is always 0; leaving it out keeps the form canonical.
    if (sizes[i] != 1) terms.push_back(index_const(stride) * index_var(first_var + int64_t(i)));
    stride *= sizes[i];
  }
  if (terms.empty()) return index_const(0);
  if (terms.size() == 1) return terms[0];
  return index_add(std::move(terms));
}

bool store_is_contiguous(const Kernel& k) {
  IndexRanges r = kernel_index_ranges(k);
  return equal_index(simplify_index(k.store_index, r), simplify_index(linear_index(k.ranges), r));
}

std::vector<LoadSite> collect_loads(const ExprRef& body) {
  if (!body) return {};
  struct Collector : ExprVisitor {
    std::vector<LoadSite> sites;
    void visit_node(const ExprRef& e) override {
      if (e->op == ExprOp::Load) sites.push_back({e->buffer, e->index});
    }
  } c;
  c.visit(body);
  return c.sites;
}

std::vector<std::string> read_buffers(const Kernel& k) {
  if (k.kind == KernelKind::Extern) return extern_inputs(k);
  std::vector<std::string> out;
  for (const LoadSite& l : collect_loads(k.body))
    if (std::find(out.begin(), out.end(), l.buffer) == out.end()) out.push_back(l.buffer);
  return out;
}

std::vector<std::string> written_buffers(const Kernel& k) {
  if (k.kind == KernelKind::Extern) return extern_outputs(k);
  return {k.output};
}

bool reads(const Kernel& k, const std::string& buffer) {
  if (k.kind == KernelKind::Extern) {
    std::vector<std::string> in = extern_inputs(k);
    return std::find(in.begin(), in.end(), buffer) != in.end();
  }
  for (const LoadSite& l : collect_loads(k.body))
    if (l.buffer == buffer) return true;
  return false;
}

}  // namespace detail

using namespace detail;

namespace {

// Rewrites expressions once per distinct node, so a body that shares a
// subexpression stays a DAG after inlining instead of growing into a tree.
class MemoMutator {
 public:
  explicit MemoMutator(std::function<ExprRef(const ExprRef&)> on_load) : on_load_(std::move(on_load)) {}
  ExprRef mutate(const ExprRef& e) {
    auto it = memo_.find(e.get());
    if (it != memo_.end()) return it->second;
    ExprRef result;
    if (e->op == ExprOp::Load) {
      result = on_load_(e);
    } else {
      std::vector<ExprRef> operands;
      bool changed = false;
      for (const ExprRef& o : e->operands) {
        operands.push_back(mutate(o));
        changed |= operands.back() != o;
      }
      if (changed) {
        auto rebuilt = std::make_shared<Expr>(*e);
        rebuilt->operands = std::move(operands);
        result = rebuilt;
      } else {
        result = e;
      }
    }
    memo_.emplace(e.get(), result);
    return result;
  }

 private:
  std::function<ExprRef(const ExprRef&)> on_load_;
  std::map<const Expr*, ExprRef> memo_;
};

// The producer's body at the element `index` of its buffer, in the consumer's
// variables: x_i of the producer becomes (index // stride_i) % range_i, simplified
// with the consumer's ranges (usually back to plain variables).
ExprRef producer_body_at(const Kernel& producer, const IndexRef& index, const IndexRanges& consumer_ranges,
                         DType load_dtype) {
  std::map<int64_t, IndexRef> decode;
  if (!producer.ranges.empty()) {
    std::vector<IndexRef> digits = reshape_indices(producer.ranges, {numel(producer.ranges)}, {index});
    for (size_t i = 0; i < digits.size(); ++i) decode[int64_t(i)] = simplify_index(digits[i], consumer_ranges);
  }
  MemoMutator m([&](const ExprRef& load) -> ExprRef {
    IndexRef moved = simplify_index(substitute_vars(load->index, decode), consumer_ranges);
    return expr_load(load->buffer, moved, load->dtype);
  });
  // The store rounded to the buffer's dtype; the cast keeps that rounding.
  return expr_cast(m.mutate(producer.body), load_dtype);
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
  return out;
}

// Inlining copies a producer's body into each consumer, at each load of it.
// Along a chain of diamonds (a residual block's x feeding both the norm and
// the add) that doubles the code per block: 12 layer_norm/MLP/softmax blocks
// grew to 461k lines of loop IR and 1.3M lines of LLVM IR. Inductor bounds
// the same thing (realize_reads_threshold / realize_opcount_threshold); these
// bounds count expression nodes as written out, not shared.
constexpr int64_t kRecomputedOpsLimit = 24;   // a body recomputed by two or more consumers
constexpr int64_t kInlinedBodyLimit = 400;    // a consumer's body after inlining

// Nodes of `e` counted as a tree (each use of a shared node again), stopping at `cap`.
int64_t tree_size(const ExprRef& e, int64_t cap) {
  int64_t n = 1;
  for (const ExprRef& o : e->operands) {
    if (n >= cap) break;
    n += tree_size(o, cap - n);
  }
  return n;
}

// Loads of `buffer` in `e`, counted as a tree, stopping at `cap`.
int64_t tree_loads(const ExprRef& e, const std::string& buffer, int64_t cap) {
  if (e->op == ExprOp::Load) return e->buffer == buffer ? 1 : 0;
  int64_t n = 0;
  for (const ExprRef& o : e->operands) {
    if (n >= cap) break;
    n += tree_loads(o, buffer, cap - n);
  }
  return n;
}

// Step 1. Kernels stay in program order; inlined ones are dropped.
void inline_producers(Program& p, std::vector<FusionDecision>& decisions) {
  std::vector<bool> removed(p.kernels.size(), false);
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const Kernel& k = p.kernels[i];
    if (k.kind != KernelKind::Pointwise) continue;
    std::vector<size_t> consumers;
    std::vector<std::string> names, reductions, externs;
    for (size_t j = i + 1; j < p.kernels.size(); ++j)
      if (!removed[j] && reads(p.kernels[j], k.output)) {
        consumers.push_back(j);
        names.push_back(p.kernels[j].output);
        if (p.kernels[j].kind == KernelKind::Reduction) reductions.push_back(p.kernels[j].output);
        if (p.kernels[j].kind == KernelKind::Extern) externs.push_back(p.kernels[j].output);
      }
    FusionDecision d{DecisionKind::Inline, false, k.output, join(names), ""};
    auto refuse = [&](const std::string& why) {
      d.reason = "not inlined " + k.output + ": " + why;
      decisions.push_back(d);
    };
    if (p.buffer(k.output).is_output) { refuse("graph output (materialized)"); continue; }
    if (consumers.empty()) { refuse("no consumers"); continue; }
    if (!externs.empty()) {
      refuse("read by extern kernel " + join(externs) + " (a library call reads it from memory)");
      continue;
    }
    if (!store_is_contiguous(k)) { refuse("its store is not contiguous"); continue; }
    std::string mismatch;
    for (size_t j : consumers) {
      const Kernel& c = p.kernels[j];
      int64_t space = numel(c.ranges) * numel(c.reduction_ranges);
      if (space != numel(k.ranges)) {
        mismatch = "iteration space " + sizes_string(k.ranges) + " vs " + sizes_string(c.ranges) +
                   (c.reduction_ranges.empty() ? "" : " x " + sizes_string(c.reduction_ranges)) + " of " +
                   c.output + " (a broadcast read would recompute it)";
        break;
      }
    }
    if (!mismatch.empty()) { refuse(mismatch); continue; }
    if (reductions.size() >= 2) {
      refuse("read by " + std::to_string(reductions.size()) + " reductions (" + join(reductions) +
             "): inlining would recompute it in each, kept materialized");
      continue;
    }
    const int64_t body = tree_size(k.body, kInlinedBodyLimit + 1);
    if (consumers.size() >= 2 && body > kRecomputedOpsLimit) {
      refuse("read by " + std::to_string(consumers.size()) + " kernels and " + std::to_string(body) +
             " ops long: recomputing it in each would multiply the code, kept materialized");
      continue;
    }
    std::string too_big;
    for (size_t j : consumers) {
      const Kernel& c = p.kernels[j];
      const int64_t loads = tree_loads(c.body, k.output, kInlinedBodyLimit + 1);
      const int64_t after = tree_size(c.body, kInlinedBodyLimit + 1) + loads * body;
      if (after > kInlinedBodyLimit) {
        too_big = c.output + "'s body would grow to " + (after > kInlinedBodyLimit * 2 ? "over " : "") +
                  std::to_string(std::min(after, kInlinedBodyLimit * 2)) + " ops (" + std::to_string(loads) +
                  " loads of a " + std::to_string(body) + "-op body)";
        break;
      }
    }
    if (!too_big.empty()) { refuse(too_big + ", kept materialized"); continue; }
    for (size_t j : consumers) {
      Kernel& c = p.kernels[j];
      IndexRanges r = kernel_index_ranges(c);
      MemoMutator m([&](const ExprRef& load) -> ExprRef {
        if (load->buffer != k.output) return load;
        return producer_body_at(k, load->index, r, load->dtype);
      });
      c.body = m.mutate(c.body);
    }
    removed[i] = true;
    d.accepted = true;
    d.reason = "inlined " + k.output + " into " + join(names) + ": pointwise, " +
               (consumers.size() == 1 ? std::string("single consumer")
                                      : std::to_string(consumers.size()) + " consumers, recomputed in each");
    decisions.push_back(d);
  }
  std::vector<Kernel> kept;
  std::set<std::string> gone;
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    if (removed[i]) gone.insert(p.kernels[i].output);
    else kept.push_back(std::move(p.kernels[i]));
  }
  p.kernels = std::move(kept);
  std::erase_if(p.buffers, [&](const Buffer& b) { return gone.count(b.name) > 0; });
}

// The smallest k with prod(ranges[:k]) == n, or -1: the kernel's loops split
// into an outer part of n points and an inner part.
int outer_prefix(const std::vector<int64_t>& ranges, int64_t n) {
  int64_t prod = 1;
  for (size_t k = 0;; ++k) {
    if (prod == n) return int(k);
    if (k == ranges.size() || prod > n) return -1;
    prod *= ranges[k];
  }
}

class Fuser {
 public:
  Fuser(const Program& p, std::vector<FusionDecision>& decisions) : p_(p), decisions_(decisions) {
    for (size_t i = 0; i < p.kernels.size(); ++i) {
      group_of_.push_back(i);
      members_[i] = {i};
      for (const std::string& b : written_buffers(p.kernels[i])) writer_[b] = i;
    }
    for (size_t i = 0; i < p.kernels.size(); ++i) {
      // An extern has no load sites, only whole buffers it reads: dependencies, never fusion candidates' indices.
      for (const LoadSite& l : collect_loads(p.kernels[i].body)) loads_[i].push_back(l);
      for (const std::string& b : read_buffers(p.kernels[i])) {
        auto w = writer_.find(b);
        if (w != writer_.end()) producers_[i].insert(w->second);
      }
    }
  }

  void run() {
    fuse_siblings();
    fuse_vertical();
  }

  // Groups in a valid execution order, kernels in program order inside each.
  std::vector<std::vector<size_t>> ordered_groups() const {
    std::map<size_t, std::set<size_t>> preds;
    for (auto& [g, ks] : members_) {
      preds[g];
      for (size_t k : ks)
        for (size_t w : producers_.count(k) ? producers_.at(k) : std::set<size_t>{})
          if (group_of_[w] != g) preds[g].insert(group_of_[w]);
    }
    std::vector<std::vector<size_t>> order;
    std::set<size_t> done;
    while (done.size() < members_.size()) {
      size_t pick = SIZE_MAX;
      for (auto& [g, ps] : preds) {  // keyed by the group's first kernel: ties go to program order
        if (done.count(g)) continue;
        if (std::all_of(ps.begin(), ps.end(), [&](size_t q) { return done.count(q) > 0; })) { pick = g; break; }
      }
      KILN_CHECK(pick != SIZE_MAX, "scheduler: fused groups form a cycle");
      done.insert(pick);
      order.push_back(std::vector<size_t>(members_.at(pick).begin(), members_.at(pick).end()));
    }
    return order;
  }

 private:
  const Kernel& kernel(size_t i) const { return p_.kernels[i]; }

  void fuse_siblings() {
    for (size_t i = 0; i < p_.kernels.size(); ++i) {
      if (kernel(i).kind != KernelKind::Reduction) continue;
      for (size_t j = i + 1; j < p_.kernels.size(); ++j) {
        if (kernel(j).kind != KernelKind::Reduction || group_of_[i] == group_of_[j]) continue;
        std::string shared;
        for (const LoadSite& a : loads_[i])
          for (const LoadSite& b : loads_[j])
            if (shared.empty() && a.buffer == b.buffer) shared = a.buffer;
        // One that needs the other's result is not a sibling (the vertical pass sees it).
        if (shared.empty() || reachable(group_of_[i], group_of_[j])) continue;
        const Kernel &a = kernel(i), &b = kernel(j);
        FusionDecision d{DecisionKind::Fuse, false, a.output, b.output, ""};
        std::string pair = a.output + " and " + b.output;
        if (a.ranges != b.ranges || a.reduction_ranges != b.reduction_ranges) {
          d.reason = "not fused " + pair + ": both read " + shared + " but ranges differ " + sizes_string(a.ranges) +
                     " x " + sizes_string(a.reduction_ranges) + " vs " + sizes_string(b.ranges) + " x " +
                     sizes_string(b.reduction_ranges);
        } else if (std::string why = try_merge(group_of_[i], group_of_[j]); !why.empty()) {
          d.reason = "not fused " + pair + ": " + why;
        } else {
          d.accepted = true;
          d.reason = "fused " + pair + ": sibling reductions over " + shared + ", ranges " + sizes_string(a.ranges) +
                     " x " + sizes_string(a.reduction_ranges) + " (one pass over " + shared + ")";
        }
        decisions_.push_back(d);
      }
    }
  }

  void fuse_vertical() {
    for (size_t j = 0; j < p_.kernels.size(); ++j) {
      for (size_t i : producers_[j]) {
        if (group_of_[i] == group_of_[j]) continue;
        const Kernel &a = kernel(i), &b = kernel(j);
        FusionDecision d{DecisionKind::Fuse, false, a.output, b.output, ""};
        bool ra = a.kind == KernelKind::Reduction, rb = b.kind == KernelKind::Reduction;
        bool group_reduces = has_reduction(group_of_[i]);
        if (std::string why = try_merge(group_of_[i], group_of_[j]); !why.empty()) {
          d.reason = "not fused " + b.output + " with " + a.output + ": " + why;
        } else {
          d.accepted = true;
          std::string what = ra && !rb             ? "pointwise epilogue of reduction " + a.output
                             : !rb && group_reduces ? "pointwise epilogue in a reduction's group"
                             : ra && rb             ? "reduction reading " + a.output + "'s result at its own outer point"
                             : rb                   ? "materialized pointwise prologue " + a.output + " of the reduction"
                                                    : "pointwise, same iteration space";
          d.reason = "fused " + b.output + " into the group of " + a.output + ": " + what + ", outer numel " +
                     std::to_string(outer_numel(members_.at(group_of_[j])));
        }
        decisions_.push_back(d);
      }
    }
  }

  bool has_reduction(size_t g) const {
    const std::set<size_t>& ks = members_.at(g);
    return std::any_of(ks.begin(), ks.end(), [&](size_t k) { return kernel(k).kind == KernelKind::Reduction; });
  }

  // The outer point count of a set of kernels: the reductions' output numel,
  // else the first kernel's numel.
  int64_t outer_numel(const std::set<size_t>& ks) const {
    for (size_t k : ks)
      if (kernel(k).kind == KernelKind::Reduction) return numel(kernel(k).ranges);
    return numel(kernel(*ks.begin()).ranges);
  }

  // Merges the two groups when legal; else returns why not.
  std::string try_merge(size_t ga, size_t gb) {
    std::set<size_t> all = members_.at(ga);
    all.insert(members_.at(gb).begin(), members_.at(gb).end());
    for (size_t k : all)
      if (kernel(k).kind == KernelKind::Extern)
        return "extern kernel " + kernel(k).output + " runs alone (a library call, not a loop nest)";
    int64_t n = outer_numel(all);
    if (n == 0) return "empty iteration space";
    bool any_reduction = std::any_of(all.begin(), all.end(), [&](size_t q) {
      return kernel(q).kind == KernelKind::Reduction;
    });
    // The kernel that sets the outer ranges, for messages.
    const Kernel& ref = kernel(*std::find_if(all.begin(), all.end(), [&](size_t q) {
      return !any_reduction || kernel(q).kind == KernelKind::Reduction;
    }));
    std::map<size_t, int> prefix;
    for (size_t k : all) {
      const Kernel& K = kernel(k);
      int whole = numel(K.ranges) == n ? int(K.ranges.size()) : -1;
      // Only a reduction's group has an inner loop a pointwise kernel can put its inner dims in.
      int at = K.kind == KernelKind::Pointwise && any_reduction ? outer_prefix(K.ranges, n) : whole;
      if (at < 0)
        return "ranges differ " + sizes_string(K.ranges) + " vs " + sizes_string(ref.ranges) + " (" + K.output +
               " vs " + ref.output + ")";
      if (!store_is_contiguous(K)) return K.output + "'s store is not contiguous";
      prefix[k] = at;
    }
    for (size_t k : all) {
      const Kernel& K = kernel(k);
      IndexRanges r = kernel_index_ranges(K);
      std::vector<int64_t> outer(K.ranges.begin(), K.ranges.begin() + prefix[k]);
      IndexRef own = simplify_index(linear_index(outer), r);
      for (const LoadSite& l : loads_.at(k)) {
        auto w = writer_.find(l.buffer);
        if (w == writer_.end() || !all.count(w->second)) continue;
        int64_t inner = numel(kernel(w->second).ranges) / n;
        IndexRef row = simplify_index(index_floordiv(l.index, index_const(inner)), r);
        if (!equal_index(row, own))
          return K.output + " reads " + l.buffer + " at " + to_string(l.index) + ", outside its own outer point " +
                 to_string(own);
      }
    }
    if (std::string via = path_through_other(ga, gb); !via.empty()) return "fusing would create a cycle through " + via;
    if (std::string via = path_through_other(gb, ga); !via.empty()) return "fusing would create a cycle through " + via;
    size_t keep = std::min(ga, gb), drop = std::max(ga, gb);
    for (size_t k : members_.at(drop)) group_of_[k] = keep;
    members_[keep] = all;
    members_.erase(drop);
    return {};
  }

  // A group other than `from` and `to` on a dependency path from `from` to
  // `to` (fusing them would need it both before and after), or "".
  std::string path_through_other(size_t from, size_t to) const {
    std::set<size_t> seen;
    std::vector<size_t> stack;
    for (size_t g : successors(from))
      if (g != to) stack.push_back(g);
    while (!stack.empty()) {
      size_t g = stack.back();
      stack.pop_back();
      if (!seen.insert(g).second) continue;
      for (size_t s : successors(g)) {
        if (s == to) return kernel(*members_.at(g).begin()).output;
        if (s != from) stack.push_back(s);
      }
    }
    return {};
  }

  bool reachable(size_t from, size_t to) const {
    std::set<size_t> seen;
    std::vector<size_t> stack = {from};
    while (!stack.empty()) {
      size_t g = stack.back();
      stack.pop_back();
      if (g == to) return true;
      if (!seen.insert(g).second) continue;
      for (size_t s : successors(g)) stack.push_back(s);
    }
    return false;
  }

  std::set<size_t> successors(size_t g) const {
    std::set<size_t> out;
    for (auto& [k, ps] : producers_)
      for (size_t w : ps)
        if (group_of_[w] == g && group_of_[k] != g) out.insert(group_of_[k]);
    return out;
  }

  const Program& p_;
  std::vector<FusionDecision>& decisions_;
  std::vector<size_t> group_of_;
  std::map<size_t, std::set<size_t>> members_;  // keyed by the group's smallest kernel index
  std::map<std::string, size_t> writer_;
  std::map<size_t, std::vector<LoadSite>> loads_;
  std::map<size_t, std::set<size_t>> producers_;
};

}  // namespace

ScheduledProgram schedule(const Program& program) {
  ScheduledProgram s;
  s.program = program;
  fuse_extern_epilogues(s.program, s.decisions);
  inline_producers(s.program, s.decisions);
  Fuser fuser(s.program, s.decisions);
  fuser.run();
  std::vector<Kernel> ordered;
  for (const std::vector<size_t>& ks : fuser.ordered_groups()) {
    FusedGroup g;
    for (size_t k : ks) {
      const Kernel& K = s.program.kernels[k];
      g.name += (g.name.empty() ? "" : "_") + K.output;
      g.kernels.push_back(ordered.size());
      if (K.kind == KernelKind::Reduction && !g.has_reduction) g.has_reduction = true, g.outer_numel = numel(K.ranges);
      ordered.push_back(K);
    }
    if (!g.has_reduction) g.outer_numel = numel(ordered[g.kernels.front()].ranges);
    s.groups.push_back(std::move(g));
  }
  s.program.kernels = std::move(ordered);
  plan_buffers(s);
  return s;
}

}  // namespace kiln::sched
