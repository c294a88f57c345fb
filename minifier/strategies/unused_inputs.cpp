// Unused inputs: placeholders nothing reads go, with their tensors.
#include "minifier/strategies/strategies.h"

namespace kiln::minify {

namespace {

class UnusedInputs : public Strategy {
 public:
  const char* name() const override { return "unused-inputs"; }

  bool run(ReductionContext& ctx) override {
    Candidate c = ctx.current();
    std::vector<std::vector<NodeId>> users = compute_users(c.graph);
    std::vector<bool> remove(c.graph.size(), false);
    std::vector<Tensor> kept;
    size_t input = 0, removed = 0;
    for (size_t i = 0; i < c.graph.size(); ++i) {
      if (c.graph.nodes[i].op != OpKind::Placeholder) continue;
      if (users[i].empty()) {
        remove[i] = true;
        ++removed;
      } else {
        kept.push_back(c.inputs[input]);
      }
      ++input;
    }
    if (removed == 0) return false;
    remove_nodes(c.graph, remove);
    c.inputs = std::move(kept);
    std::vector<std::optional<Candidate>> candidates;
    candidates.push_back(std::move(c));
    if (ctx.first_interesting(candidates) != 0) return false;
    ctx.accept(std::move(*candidates[0]), "removed " + std::to_string(removed) + " unused inputs");
    return true;
  }
};

}  // namespace

std::unique_ptr<Strategy> make_unused_inputs() { return std::make_unique<UnusedInputs>(); }

}  // namespace kiln::minify
