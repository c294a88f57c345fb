// Replace nodes by inputs: computed nodes become placeholders fed with the
// values a reference (eager) run recorded, so what feeds the failing node
// needs no computation at all. First, greedily, everything but the nodes the
// output reads; then ddmin over the nodes still computed.
#include "minifier/strategies/strategies.h"

namespace kiln::minify {

namespace {

class ReplaceWithInputs : public Strategy {
 public:
  const char* name() const override { return "replace-with-inputs"; }

  bool run(ReductionContext& ctx) override {
    if (op_count(ctx.current().graph) < 2) return false;
    const Recording* rec = ctx.recording();
    if (!rec) return false;
    const Candidate base = ctx.current();
    const Recording values = *rec;
    std::vector<NodeId> nodes;
    for (size_t i = 0; i < base.graph.size(); ++i) {
      const Node& n = base.graph.nodes[i];
      if (n.op == OpKind::CallFunction && values.eager.count(n.name)) nodes.push_back(NodeId(i));
    }
    std::vector<bool> keep(base.graph.size(), false);
    for (const Arg& a : output_items(base.graph))
      for_each_node_ref(a, [&](NodeId id) { keep[size_t(id)] = true; });
    std::vector<std::optional<Candidate>> greedy;
    greedy.push_back(replace_nodes_by_inputs(base, keep, values));
    if (ctx.first_interesting(greedy) == 0) {
      ctx.accept(std::move(*greedy[0]), "fed the output's nodes with recorded values");
      return true;
    }
    auto build = [&](const Candidate& b, const std::vector<size_t>& kept) -> std::optional<Candidate> {
      std::vector<bool> keep_node(b.graph.size(), false);
      for (size_t k : kept) keep_node[size_t(nodes[k])] = true;
      return replace_nodes_by_inputs(b, keep_node, values);
    };
    return reduce_by_ddmin(ctx, nodes.size(), build, [](size_t removed, size_t of) {
      return "replaced " + std::to_string(removed) + " of " + std::to_string(of) + " nodes by recorded inputs";
    });
  }
};

}  // namespace

std::unique_ptr<Strategy> make_replace_with_inputs() { return std::make_unique<ReplaceWithInputs>(); }

}  // namespace kiln::minify
