// Inlining and fusion; the rules and why each holds are in docs/sched.md.
#include "compiler/sched/schedule.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

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

IndexRef own_point_index(const Kernel& k) {
  // Kernels share a handful of shapes; simplifying the same index for each
  // was most of the scheduler's time on a 200,000-node chain. The key (ranges,
  // -1, reduction ranges) is built in a reused vector: no allocation per call.
  thread_local std::map<std::vector<int64_t>, IndexRef> cache;
  thread_local std::vector<int64_t> key;
  key.assign(k.ranges.begin(), k.ranges.end());
  key.push_back(-1);
  key.insert(key.end(), k.reduction_ranges.begin(), k.reduction_ranges.end());
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() > 1024) cache.clear();
  return cache.emplace(key, simplify_index(linear_index(k.ranges), kernel_index_ranges(k))).first->second;
}

bool store_is_contiguous(const Kernel& k) {
  const IndexRef own = own_point_index(k);
  // Lowering stores at a simplified index; equal as written means equal.
  if (equal_index(k.store_index, own)) return true;
  return equal_index(simplify_index(k.store_index, kernel_index_ranges(k)), own);
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

ReadersIndex index_readers(const Program& p) {
  ReadersIndex readers;
  for (size_t j = 0; j < p.kernels.size(); ++j)
    for (const std::string& b : read_buffers(p.kernels[j])) readers[b].insert(j);
  return readers;
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
  std::unordered_map<const Expr*, ExprRef> memo_;
};

// The producer's body at the element `index` of its buffer, in the consumer's
// variables: x_i of the producer becomes (index // stride_i) % range_i, simplified
// with the consumer's ranges (usually back to plain variables).
ExprRef producer_body_at(const Kernel& producer, const IndexRef& index, const IndexRanges& consumer_ranges,
                         DType load_dtype) {
  // The common case, a consumer that reads the producer's element at its own
  // point over the same ranges: the producer's loads were simplified with
  // these ranges when it was lowered or inlined into, and simplify_index is
  // idempotent, so its body serves as it is (shared, not copied). Rewriting
  // it at every step of a chain made inlining cost the body's length per node.
  auto same_ranges = [&] {
    for (size_t d = 0; d < producer.ranges.size(); ++d) {
      auto extent = consumer_ranges.var_extents.find(int64_t(d));
      if (extent == consumer_ranges.var_extents.end() || !is_const(extent->second, producer.ranges[d]))
        return false;
    }
    return true;
  };
  if (equal_index(index, own_point_index(producer)) && same_ranges()) return expr_cast(producer.body, load_dtype);
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
// A producer read by broadcast (a batch norm's rsqrt(var + eps) over channels,
// read by every pixel) is recomputed per consumer point when it is at most
// this long and reads graph inputs only: a few ops per element cost nothing in
// a memory-bound kernel, while such a producer, fusing with nothing, costs a
// kernel launch of its own (20 of ResNet-18's 38 kernels were these). One that
// reads a computed buffer (a layer norm's rsqrt of its variance) stays: it is
// the epilogue of that reduction, computed once per row.
constexpr int64_t kBroadcastRecomputeOps = 8;

// Nodes of an expression counted as a tree (each use of a shared node
// again), up to kInlinedBodyLimit + 1. Remembered per node: along a chain the
// same shared body is measured at every step, and the map holds each node, so
// no address is reused by another while it runs.
class TreeSizes {
 public:
  static constexpr int64_t kCap = kInlinedBodyLimit + 1;
  int64_t of(const ExprRef& e) {
    auto it = sizes_.find(e.get());
    if (it != sizes_.end()) return it->second.second;
    int64_t n = 1;
    for (const ExprRef& o : e->operands) n = std::min(kCap, n + of(o));
    sizes_.emplace(e.get(), std::make_pair(e, n));
    return n;
  }

 private:
  std::unordered_map<const Expr*, std::pair<ExprRef, int64_t>> sizes_;
};

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
  // Per buffer its readers, and per kernel the buffers it reads: both follow
  // the loads that inlining moves (asking every later kernel instead made
  // inlining quadratic: 33 s of a 20,000-node chain).
  ReadersIndex readers = index_readers(p);
  std::vector<std::set<std::string>> reads_of(p.kernels.size());
  for (const auto& [buffer, kernels] : readers)
    for (size_t j : kernels) reads_of[j].insert(buffer);
  TreeSizes tree_size;
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const Kernel& k = p.kernels[i];
    if (k.kind != KernelKind::Pointwise) continue;
    std::vector<size_t> consumers;
    std::vector<std::string> names, reductions, externs;
    for (size_t j : readers[k.output]) {
      if (j <= i || removed[j]) continue;
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
    const int64_t body = tree_size.of(k.body);
    std::string mismatch;
    for (size_t j : consumers) {
      const Kernel& c = p.kernels[j];
      int64_t space = numel(c.ranges) * numel(c.reduction_ranges);
      if (space != numel(k.ranges)) {
        mismatch = "iteration space " + sizes_string(k.ranges) + " vs " + sizes_string(c.ranges) +
                   (c.reduction_ranges.empty() ? "" : " x " + sizes_string(c.reduction_ranges)) + " of " +
                   c.output + " (a broadcast read would recompute its " + std::to_string(body) + " ops per point)";
        break;
      }
    }
    const bool broadcast = !mismatch.empty();
    const bool reads_inputs_only = std::all_of(reads_of[i].begin(), reads_of[i].end(), [&](const std::string& b) {
      return p.buffer(b).role == BufferRole::Input;
    });
    if (broadcast && (body > kBroadcastRecomputeOps || !reads_inputs_only)) { refuse(mismatch); continue; }
    if (reductions.size() >= 2) {
      refuse("read by " + std::to_string(reductions.size()) + " reductions (" + join(reductions) +
             "): inlining would recompute it in each, kept materialized");
      continue;
    }
    if (consumers.size() >= 2 && body > kRecomputedOpsLimit) {
      refuse("read by " + std::to_string(consumers.size()) + " kernels and " + std::to_string(body) +
             " ops long: recomputing it in each would multiply the code, kept materialized");
      continue;
    }
    std::string too_big;
    for (size_t j : consumers) {
      const Kernel& c = p.kernels[j];
      const int64_t loads = tree_loads(c.body, k.output, kInlinedBodyLimit + 1);
      const int64_t after = tree_size.of(c.body) + loads * body;
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
    // The consumers now load what the producer loaded, and no longer its output.
    for (const std::string& b : reads_of[i]) {
      std::set<size_t>& r = readers[b];
      r.erase(i);
      r.insert(consumers.begin(), consumers.end());
    }
    for (size_t j : consumers) {
      reads_of[j].erase(k.output);
      reads_of[j].insert(reads_of[i].begin(), reads_of[i].end());
    }
    readers.erase(k.output);
    removed[i] = true;
    d.accepted = true;
    d.reason = "inlined " + k.output + " into " + join(names) + ": pointwise, " +
               (consumers.size() == 1 ? std::string("single consumer")
                                      : std::to_string(consumers.size()) + " consumers, recomputed in each") +
               (broadcast ? " (" + std::to_string(body) + " ops, recomputed per point of a broadcast read)" : "");
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

}  // namespace

ScheduledProgram schedule(const Program& program) { return schedule(Program(program)); }

ScheduledProgram schedule(Program&& program) { return schedule(std::move(program), ScheduleOptions{}); }

ScheduledProgram schedule(Program&& program, const ScheduleOptions& options) {
  ScheduledProgram s;
  s.program = std::move(program);
  // First: the epilogue folds and inlining would take apart the bmm, softmax, bmm it looks for.
  if (options.fuse_attention) fuse_attention(s.program, s.decisions, options.constant_value);
  fuse_extern_epilogues(s.program, s.decisions);
  inline_producers(s.program, s.decisions);
  std::vector<Kernel> ordered;
  for (const std::vector<size_t>& ks : fuse_groups(s.program, s.decisions)) {
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
  plan_lt_epilogues(s);
  return s;
}

}  // namespace kiln::sched
