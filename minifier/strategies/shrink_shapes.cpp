// Shrink shapes: inputs cut to their first element along every dim at once
// (one evaluation, which often keeps the failure), else ddmin over dim
// groups, each step halving a group. A group is one (position counted from
// the last dim, size) pair across all inputs, the dims that broadcasting and
// elementwise ops tie together: halving x's rows alone would break x * w.
// Graphs that spell sizes out (view, expand) reject most cuts in the meta
// functions, at no evaluation cost. The driver's rounds repeat the halving.
#include <map>

#include "minifier/strategies/strategies.h"

namespace kiln::minify {

namespace {

class ShrinkShapes : public Strategy {
 public:
  const char* name() const override { return "shrink-shapes"; }

  bool run(ReductionContext& ctx) override {
    const Candidate base = ctx.current();
    std::vector<std::pair<int64_t, int64_t>> groups;  // (dims from the end, size)
    for (const Tensor& t : base.inputs)
      for (int64_t d = 0; d < t.dim(); ++d) {
        std::pair<int64_t, int64_t> g{t.dim() - d, t.sizes()[size_t(d)]};
        if (g.second > 1 && std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
      }
    if (groups.empty()) return false;
    auto cut = [groups](const Candidate& b, const std::vector<bool>& shrink, bool to_one) {
      Candidate c = b;
      for (Tensor& t : c.inputs) {
        for (int64_t d = 0; d < t.dim(); ++d) {
          int64_t size = t.sizes()[size_t(d)];
          auto at = std::find(groups.begin(), groups.end(), std::pair<int64_t, int64_t>{t.dim() - d, size});
          if (at == groups.end() || !shrink[size_t(at - groups.begin())]) continue;
          t = t.narrow(d, 0, to_one ? 1 : (size + 1) / 2);
        }
        t = compact_copy(t);
      }
      return c;
    };
    std::vector<std::optional<Candidate>> all;
    all.push_back(cut(base, std::vector<bool>(groups.size(), true), true));
    if (ctx.first_interesting(all) == 0) {
      ctx.accept(std::move(*all[0]), "cut every input to one element per dim");
      return true;
    }
    auto build = [&](const Candidate& b, const std::vector<size_t>& keep) -> std::optional<Candidate> {
      std::vector<bool> shrink(groups.size(), true);
      for (size_t k : keep) shrink[k] = false;
      return cut(b, shrink, false);
    };
    return reduce_by_ddmin(ctx, groups.size(), build, [](size_t removed, size_t) {
      return "halved " + std::to_string(removed) + " dim groups";
    });
  }
};

}  // namespace

std::unique_ptr<Strategy> make_shrink_shapes() { return std::make_unique<ShrinkShapes>(); }

}  // namespace kiln::minify
