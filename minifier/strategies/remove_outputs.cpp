// Remove outputs: ddmin over the returned values; what only a removed output
// needed goes with it.
#include "minifier/strategies/strategies.h"

namespace kiln::minify {

namespace {

class RemoveOutputs : public Strategy {
 public:
  const char* name() const override { return "remove-outputs"; }

  bool run(ReductionContext& ctx) override {
    const size_t n = output_items(ctx.current().graph).size();
    if (n < 2) return false;
    auto build = [](const Candidate& base, const std::vector<size_t>& keep) -> std::optional<Candidate> {
      if (keep.empty()) return std::nullopt;
      std::vector<Arg> items = output_items(base.graph), kept;
      for (size_t k : keep) kept.push_back(items[k]);
      Candidate c = base;
      set_outputs(c.graph, std::move(kept));
      prune(c);
      return c;
    };
    return reduce_by_ddmin(ctx, n, build, [](size_t removed, size_t of) {
      return "removed " + std::to_string(removed) + " of " + std::to_string(of) + " outputs";
    });
  }
};

}  // namespace

std::unique_ptr<Strategy> make_remove_outputs() { return std::make_unique<RemoveOutputs>(); }

}  // namespace kiln::minify
