// Step 2 of the scheduler: fusion of the kernels left after inlining into
// groups (docs/sched.md has the rules). Built to stay near linear in the
// number of kernels: a 20,000-kernel chain took 42 s when every merge copied
// the whole group, every cycle check walked the whole graph and the final
// order was picked by a scan per group.
//
// - A group holds at most kMaxGroupKernels kernels (Inductor's
//   max_fusion_size is 64 too): merges and the code of one loop nest stay
//   small.
// - The fuser keeps a topological order of the groups. A path between two
//   groups runs only through groups placed between them, so the cycle check
//   looks there and nowhere else, and gives up (no fusion) past
//   kFusionWindow groups.
// - Sibling reductions are paired only within kFusionWindow kernels, as
//   Inductor tries pairs of nearby nodes only.
#include <algorithm>
#include <map>
#include <queue>
#include <set>
#include <unordered_map>

#include "compiler/sched/sched_util.h"
#include "core/util/status.h"

namespace kiln::sched::detail {

using namespace loopir;

namespace {

constexpr size_t kMaxGroupKernels = 64;
constexpr size_t kFusionWindow = 64;
constexpr size_t kNoGroup = SIZE_MAX;
constexpr size_t kNoKernel = SIZE_MAX;

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
    const size_t n = p.kernels.size();
    group_of_.resize(n);
    loads_.resize(n);
    load_writer_.resize(n);
    producers_.resize(n);
    succ_.resize(n);
    pred_.resize(n);
    slot_.resize(n);
    contiguous_.assign(n, -1);
    for (size_t i = 0; i < n; ++i) {
      group_of_[i] = i;
      members_[i] = {i};
      slot_[i] = i;
      order_.push_back(i);
      for (const std::string& b : written_buffers(p.kernels[i])) writer_[b] = i;
    }
    for (size_t i = 0; i < n; ++i) {
      // An extern has no load sites, only whole buffers it reads: dependencies, never fusion candidates' indices.
      loads_[i] = collect_loads(p.kernels[i].body);
      for (const LoadSite& l : loads_[i]) {
        auto w = writer_.find(l.buffer);
        load_writer_[i].push_back(w == writer_.end() ? kNoKernel : w->second);
      }
      for (const std::string& b : read_buffers(p.kernels[i])) {
        auto w = writer_.find(b);
        if (w == writer_.end() || w->second == i) continue;
        KILN_CHECK(w->second < i, "scheduler: ", p.kernels[i].output, " reads ", b, ", written later");
        producers_[i].insert(w->second);
        succ_[w->second].insert(i);
        pred_[i].insert(w->second);
      }
    }
  }

  void run() {
    fuse_siblings();
    fuse_vertical();
  }

  // Groups in a valid execution order, kernels in program order inside each:
  // of the groups whose producers have all run, the one with the smallest
  // first kernel runs next, so ties keep program order.
  std::vector<std::vector<size_t>> ordered_groups() const {
    std::map<size_t, size_t> waiting;  // group -> producer groups not yet run
    std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
    for (const auto& [g, ks] : members_) {
      waiting[g] = pred_[g].size();
      if (pred_[g].empty()) ready.push(g);
    }
    std::vector<std::vector<size_t>> order;
    while (!ready.empty()) {
      size_t g = ready.top();
      ready.pop();
      order.push_back(std::vector<size_t>(members_.at(g).begin(), members_.at(g).end()));
      for (size_t s : succ_[g])
        if (--waiting[s] == 0) ready.push(s);
    }
    KILN_CHECK(order.size() == members_.size(), "scheduler: fused groups form a cycle");
    return order;
  }

 private:
  const Kernel& kernel(size_t i) const { return p_.kernels[i]; }

  void fuse_siblings() {
    // Reductions by the buffers they load, so a reduction meets only those it shares a buffer with.
    std::map<std::string, std::vector<size_t>> reductions_loading;
    for (size_t i = 0; i < p_.kernels.size(); ++i) {
      if (kernel(i).kind != KernelKind::Reduction) continue;
      for (const LoadSite& l : loads_[i]) {
        std::vector<size_t>& r = reductions_loading[l.buffer];
        if (r.empty() || r.back() != i) r.push_back(i);
      }
    }
    for (size_t i = 0; i < p_.kernels.size(); ++i) {
      if (kernel(i).kind != KernelKind::Reduction) continue;
      std::set<size_t> candidates;
      for (const LoadSite& l : loads_[i])
        for (size_t j : reductions_loading[l.buffer])
          if (j > i && j - i <= kFusionWindow) candidates.insert(j);
      for (size_t j : candidates) {
        if (group_of_[i] == group_of_[j]) continue;
        std::string shared;
        for (const LoadSite& a : loads_[i])
          for (const LoadSite& b : loads_[j])
            if (shared.empty() && a.buffer == b.buffer) shared = a.buffer;
        // One that needs the other's result is not a sibling (the vertical pass sees it).
        if (might_reach(group_of_[i], group_of_[j])) continue;
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

  bool contiguous(size_t k) {
    if (contiguous_[k] < 0) contiguous_[k] = store_is_contiguous(kernel(k));
    return contiguous_[k] > 0;
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
    const size_t size = members_.at(ga).size() + members_.at(gb).size();
    if (size > kMaxGroupKernels)
      return "the group would hold " + std::to_string(size) + " kernels (at most " + std::to_string(kMaxGroupKernels) +
             " in one loop nest)";
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
      if (!contiguous(k)) return K.output + "'s store is not contiguous";
      prefix[k] = at;
    }
    // A group's own reads were checked when it formed; with the same outer
    // points and the same kind of group they hold still, and only the reads
    // across the two groups need a look. Otherwise every read is checked.
    const bool same_outer = outer_numel(members_.at(ga)) == n && outer_numel(members_.at(gb)) == n &&
                            has_reduction(ga) == any_reduction && has_reduction(gb) == any_reduction;
    for (size_t k : all) {
      const Kernel& K = kernel(k);
      IndexRanges r;
      IndexRef own;
      for (size_t li = 0; li < loads_[k].size(); ++li) {
        const LoadSite& l = loads_[k][li];
        const size_t w = load_writer_[k][li];
        if (w == kNoKernel || !all.count(w)) continue;
        if (same_outer && group_of_[w] == group_of_[k]) continue;
        if (!own) {
          r = kernel_index_ranges(K);
          own = size_t(prefix[k]) == K.ranges.size()
                    ? own_point_index(K)
                    : simplify_index(linear_index(std::vector<int64_t>(K.ranges.begin(), K.ranges.begin() + prefix[k])), r);
        }
        int64_t inner = numel(kernel(w).ranges) / n;
        // Load indices are simplified already: one row per element needs no division.
        IndexRef row = inner == 1 ? l.index : simplify_index(index_floordiv(l.index, index_const(inner)), r);
        if (!equal_index(row, own))
          return K.output + " reads " + l.buffer + " at " + to_string(l.index) + ", outside its own outer point " +
                 to_string(own);
      }
    }
    const bool a_first = slot_[ga] < slot_[gb];
    const size_t first = a_first ? ga : gb, second = a_first ? gb : ga;
    std::vector<size_t> between;
    if (!groups_between(first, second, between))
      return "over " + std::to_string(kFusionWindow) + " groups run between them (fusion looks no further)";
    std::set<size_t> after_first;  // groups between that depend on `first`: they must move after the merged group
    if (std::string via = path_through_other(first, second, after_first); !via.empty())
      return "fusing would create a cycle through " + via;
    merge(first, second, between, after_first);
    return {};
  }

  // The groups placed strictly between a and b (a before b), or false when over kFusionWindow.
  bool groups_between(size_t a, size_t b, std::vector<size_t>& out) const {
    for (size_t s = slot_[a] + 1; s < slot_[b]; ++s) {
      if (order_[s] == kNoGroup) continue;
      if (out.size() == kFusionWindow) return false;
      out.push_back(order_[s]);
    }
    return true;
  }

  // A group other than `from` and `to` on a dependency path from `from` to
  // `to` (fusing them would need it both before and after), or "". `from`
  // runs before `to`, so such a path runs through groups placed between them;
  // `reached` gets the groups between that depend on `from`.
  std::string path_through_other(size_t from, size_t to, std::set<size_t>& reached) const {
    std::vector<size_t> stack;
    for (size_t g : succ_[from])
      if (g != to && slot_[g] < slot_[to]) stack.push_back(g);
    while (!stack.empty()) {
      size_t g = stack.back();
      stack.pop_back();
      if (!reached.insert(g).second) continue;
      if (succ_[g].count(to)) return kernel(*members_.at(g).begin()).output;
      for (size_t s : succ_[g])
        if (slot_[s] < slot_[to]) stack.push_back(s);
    }
    return {};
  }

  // Whether `to` may depend on `from`: true when it does, and when they are
  // too far apart to tell cheaply.
  bool might_reach(size_t from, size_t to) const {
    if (slot_[from] > slot_[to]) return false;  // the order is topological
    if (succ_[from].count(to)) return true;
    std::vector<size_t> between;
    if (!groups_between(from, to, between)) return true;
    std::set<size_t> reached;
    return !path_through_other(from, to, reached).empty();
  }

  // Joins `second` into `first` (the group kept is the one with the smaller
  // first kernel) and keeps the order topological: of the groups between,
  // those that depend on `first` move after the merged group, the others
  // stay before it.
  void merge(size_t first, size_t second, const std::vector<size_t>& between, const std::set<size_t>& after_first) {
    const size_t keep = std::min(first, second), drop = std::max(first, second);
    std::vector<size_t> arranged;
    for (size_t g : between)
      if (!after_first.count(g)) arranged.push_back(g);
    arranged.push_back(keep);
    for (size_t g : between)
      if (after_first.count(g)) arranged.push_back(g);
    const size_t lo = slot_[first], hi = slot_[second];
    for (size_t s = lo; s <= hi; ++s) order_[s] = kNoGroup;
    // The holes gather at the front of the span, so a chain fused step by step stays next to its next kernel.
    size_t s = hi + 1 - arranged.size();
    for (size_t g : arranged) order_[s] = g, slot_[g] = s, ++s;

    for (size_t k : members_.at(drop)) group_of_[k] = keep;
    members_[keep].insert(members_.at(drop).begin(), members_.at(drop).end());
    members_.erase(drop);
    for (size_t g : pred_[drop]) succ_[g].erase(drop), succ_[g].insert(keep);
    for (size_t g : succ_[drop]) pred_[g].erase(drop), pred_[g].insert(keep);
    succ_[keep].insert(succ_[drop].begin(), succ_[drop].end());
    pred_[keep].insert(pred_[drop].begin(), pred_[drop].end());
    for (auto* edges : {&succ_[keep], &pred_[keep]}) edges->erase(keep), edges->erase(drop);
    succ_[drop].clear();
    pred_[drop].clear();
    if (++holes_ > order_.size() / 2) compact_order();
  }

  // Drops the holes merges leave, so walking between two groups costs what lies between them.
  void compact_order() {
    std::vector<size_t> live;
    for (size_t g : order_)
      if (g != kNoGroup) slot_[g] = live.size(), live.push_back(g);
    order_ = std::move(live);
    holes_ = 0;
  }

  const Program& p_;
  std::vector<FusionDecision>& decisions_;
  std::vector<size_t> group_of_;
  std::map<size_t, std::set<size_t>> members_;  // keyed by the group's smallest kernel index
  std::unordered_map<std::string, size_t> writer_;
  std::vector<std::vector<size_t>> load_writer_;  // per kernel, per load site: the kernel writing it, or kNoKernel
  std::vector<std::vector<LoadSite>> loads_;
  std::vector<std::set<size_t>> producers_;  // per kernel, the kernels writing what it reads
  std::vector<std::set<size_t>> succ_, pred_;  // per group (by its key), the groups that read from / write for it
  std::vector<size_t> order_;                  // groups in a topological order, kNoGroup where a merge left a hole
  std::vector<size_t> slot_;                   // per group, its place in order_
  size_t holes_ = 0;
  std::vector<int8_t> contiguous_;  // per kernel: store_is_contiguous, -1 until asked
};

}  // namespace

std::vector<std::vector<size_t>> fuse_groups(const Program& p, std::vector<FusionDecision>& decisions) {
  Fuser fuser(p, decisions);
  fuser.run();
  return fuser.ordered_groups();
}

}  // namespace kiln::sched::detail
