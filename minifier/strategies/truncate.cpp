// Truncate: the graph cut after one node. A cut keeps the whole prefix, its
// values that nothing in the prefix reads becoming the outputs, so a failure
// caused by some node is in every cut after it: the smallest failing cut is
// found by bisection (with -j N, N probes a round), log2(nodes) evaluations,
// not ddmin. The node it ends at is the prime suspect: its value alone as
// the output (only its ancestors kept) is tried next.
#include "minifier/strategies/strategies.h"

namespace kiln::minify {

namespace {

class Truncate : public Strategy {
 public:
  const char* name() const override { return "truncate"; }

  bool run(ReductionContext& ctx) override {
    const Candidate base = ctx.current();
    const Graph& g = base.graph;
    std::vector<NodeId> cuts;
    for (size_t i = 0; i < g.size(); ++i)
      if (g.nodes[i].op == OpKind::CallFunction && g.nodes[i].meta.val.is_tensor()) cuts.push_back(NodeId(i));
    if (cuts.size() < 2) return false;
    std::vector<std::vector<NodeId>> users = compute_users(g);
    auto prefix = [&](size_t k) -> std::optional<Candidate> {
      std::vector<Arg> outs;
      for (size_t i = 0; i <= size_t(cuts[k]); ++i) {
        if (g.nodes[i].op != OpKind::CallFunction || !g.nodes[i].meta.val.is_tensor()) continue;
        bool read_in_prefix = false;
        for (NodeId u : users[i]) read_in_prefix |= u <= cuts[k] && g[u].op != OpKind::Output;
        if (!read_in_prefix) outs.push_back(Arg::node(NodeId(i)));
      }
      Candidate c = base;
      set_outputs(c.graph, std::move(outs));
      prune(c);
      if (op_count(c.graph) >= op_count(g)) return std::nullopt;
      return c;
    };
    // Smallest interesting cut in [lo, hi].
    size_t lo = 0, hi = cuts.size() - 1;
    std::optional<Candidate> best;
    size_t best_k = 0;
    const size_t probes = size_t(std::max(ctx.jobs(), 1));
    while (lo <= hi && !ctx.cancelled()) {
      std::vector<size_t> at;
      for (size_t i = 0; i < probes; ++i) {
        size_t k = lo + (hi - lo) * (i + 1) / (probes + 1);
        if (at.empty() || k > at.back()) at.push_back(k);
      }
      std::vector<std::optional<Candidate>> candidates;
      for (size_t k : at) candidates.push_back(prefix(k));
      int first = ctx.first_interesting(candidates);
      if (first < 0) {
        lo = at.back() + 1;
        continue;
      }
      best = std::move(candidates[size_t(first)]);
      best_k = at[size_t(first)];
      if (first > 0) lo = at[size_t(first) - 1] + 1;
      if (best_k == 0) break;
      hi = best_k - 1;
    }
    // The suspect alone at the end, even when no shorter prefix failed.
    if (!best) best_k = cuts.size() - 1;
    Candidate ending = base;
    set_outputs(ending.graph, {Arg::node(cuts[best_k])});
    prune(ending);
    std::vector<std::optional<Candidate>> suspect;
    suspect.push_back(std::move(ending));
    if (op_count(suspect[0]->graph) < (best ? op_count(best->graph) : op_count(g)) && ctx.first_interesting(suspect) == 0) {
      ctx.accept(std::move(*suspect[0]), "cut after node " + g[cuts[best_k]].name + ", only what it reads kept");
      return true;
    }
    if (!best) return false;
    ctx.accept(std::move(*best), "cut after node " + g[cuts[best_k]].name);
    return true;
  }
};

}  // namespace

std::unique_ptr<Strategy> make_truncate() { return std::make_unique<Truncate>(); }

}  // namespace kiln::minify
