// Dead code: nodes nothing reads, removed by the compiler's own DCE pass
// (effectful nodes stay). Other strategies prune as they go; this catches
// graphs that arrive with dead code.
#include "compiler/passes/dead_code_elimination.h"
#include "minifier/strategies/strategies.h"

namespace kiln::minify {

namespace {

class DeadCode : public Strategy {
 public:
  const char* name() const override { return "dead-code"; }

  bool run(ReductionContext& ctx) override {
    Candidate c = ctx.current();
    const size_t before = c.graph.size();
    pipeline::eliminate_dead_code(c.graph, pipeline::PassContext{});
    if (c.graph.size() == before) return false;
    std::vector<std::optional<Candidate>> candidates;
    const size_t removed = before - c.graph.size();
    candidates.push_back(std::move(c));
    if (ctx.first_interesting(candidates) != 0) return false;
    ctx.accept(std::move(*candidates[0]), "removed " + std::to_string(removed) + " dead nodes");
    return true;
  }
};

}  // namespace

std::unique_ptr<Strategy> make_dead_code() { return std::make_unique<DeadCode>(); }

}  // namespace kiln::minify
