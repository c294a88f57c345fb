// Simplify dtypes: inputs in less common dtypes become float32 (floating)
// or int64 (integers), the dtypes a reader expects; ddmin over those inputs.
#include "minifier/strategies/strategies.h"

namespace kiln::minify {

namespace {

std::optional<DType> simpler(DType d) {
  switch (d) {
    case DType::Float64:
    case DType::Float16:
    case DType::BFloat16: return DType::Float32;
    case DType::UInt8:
    case DType::Int8:
    case DType::Int16:
    case DType::Int32: return DType::Int64;
    default: return std::nullopt;
  }
}

class SimplifyDtypes : public Strategy {
 public:
  const char* name() const override { return "simplify-dtypes"; }

  bool run(ReductionContext& ctx) override {
    std::vector<size_t> unusual;
    for (size_t i = 0; i < ctx.current().inputs.size(); ++i)
      if (simpler(ctx.current().inputs[i].dtype())) unusual.push_back(i);
    if (unusual.empty()) return false;
    auto build = [unusual](const Candidate& base, const std::vector<size_t>& keep) -> std::optional<Candidate> {
      std::vector<bool> convert(unusual.size(), true);
      for (size_t k : keep) convert[k] = false;
      Candidate c = base;
      for (size_t k = 0; k < unusual.size(); ++k) {
        if (!convert[k]) continue;
        Tensor& t = c.inputs[unusual[k]];
        t = from_doubles(to_doubles(t), t.sizes(), *simpler(t.dtype()));
      }
      return c;
    };
    return reduce_by_ddmin(ctx, unusual.size(), build, [](size_t removed, size_t) {
      return "simplified the dtype of " + std::to_string(removed) + " inputs";
    });
  }
};

}  // namespace

std::unique_ptr<Strategy> make_simplify_dtypes() { return std::make_unique<SimplifyDtypes>(); }

}  // namespace kiln::minify
