// Consolidate inputs: placeholders fed with identical tensors (same dtype,
// sizes and bytes) are read through the first of them; ddmin over the duplicates.
#include <functional>

#include "minifier/strategies/strategies.h"

namespace kiln::minify {

namespace {

class ConsolidateInputs : public Strategy {
 public:
  const char* name() const override { return "consolidate-inputs"; }

  bool run(ReductionContext& ctx) override {
    const Candidate& cur = ctx.current();
    std::vector<NodeId> ph = placeholders(cur.graph);
    // (duplicate placeholder index, the earlier one it equals)
    std::vector<std::pair<size_t, size_t>> dups;
    for (size_t i = 0; i < ph.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (same_bytes(cur.inputs[i], cur.inputs[j])) {
          dups.emplace_back(i, j);
          break;
        }
    if (dups.empty()) return false;
    auto build = [dups](const Candidate& base, const std::vector<size_t>& keep) -> std::optional<Candidate> {
      std::vector<bool> merge(dups.size(), true);
      for (size_t k : keep) merge[k] = false;
      Candidate c = base;
      std::vector<NodeId> ph = placeholders(c.graph);
      std::vector<NodeId> target(c.graph.size());
      for (size_t i = 0; i < target.size(); ++i) target[i] = NodeId(i);
      for (size_t d = 0; d < dups.size(); ++d) {
        if (!merge[d]) continue;
        // The earlier one is the first of its group (the search above stops there), never itself merged.
        target[size_t(ph[dups[d].first])] = ph[dups[d].second];
      }
      std::function<void(Arg&)> redirect = [&](Arg& a) {
        if (a.kind == Arg::Kind::Node) a.i = target[size_t(a.i)];
        for (Arg& item : a.items) redirect(item);
      };
      for (Node& n : c.graph.nodes) {
        if (n.op == OpKind::Placeholder) continue;
        for (Arg& a : n.args) redirect(a);
        for (auto& kv : n.kwargs) redirect(kv.second);
      }
      prune(c);
      if (c.inputs.size() == base.inputs.size()) return std::nullopt;
      return c;
    };
    return reduce_by_ddmin(ctx, dups.size(), build, [](size_t removed, size_t) {
      return "merged " + std::to_string(removed) + " duplicate inputs";
    });
  }
};

}  // namespace

std::unique_ptr<Strategy> make_consolidate_inputs() { return std::make_unique<ConsolidateInputs>(); }

}  // namespace kiln::minify
