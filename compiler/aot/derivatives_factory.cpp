// Ops whose output takes only the shape, dtype or device of a tensor input
// (zeros_like, empty_like, new_ones, ...), and bernoulli's draw: no gradient
// flows through them (derivatives.yaml: output_differentiability: [False], and
// zeros for bernoulli's probabilities). Eager autograd records them when a
// binding builds on one (dropout's noise is bernoulli(empty_like(x))), so
// backward must be able to pass them.
#include "compiler/aot/grad_context.h"

namespace kiln::aot {
namespace {

void no_gradient(GradContext&) {}

}  // namespace

void register_factory_derivatives(DerivativeTable& t) {
  for (const char* op : {"aten::empty_like.default", "aten::zeros_like.default", "aten::ones_like.default",
                         "aten::full_like.default", "aten::new_empty.default", "aten::new_zeros.default",
                         "aten::new_ones.default", "aten::new_full.default", "aten::new_empty_strided.default",
                         "aten::bernoulli.p"})
    t.add<no_gradient>(op, {}, kSavesNothing, {false});
}

}  // namespace kiln::aot
