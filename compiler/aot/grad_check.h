#pragma once
// Checks derivative formulas two ways (kiln-cli grad-check, and the tests):
// against PyTorch's gradients in the op corpus, and against float64 central
// differences on the sample inputs of derivative_samples.h. The second also
// emits each formula into an ATen graph and runs it, so a formula that reads
// data (which a meta tensor does not have) or builds a bad graph fails there.
#include <string_view>
#include <vector>

#include "core/corpus/conformance.h"

namespace kiln::aot {

// One corpus case with grad_outputs: the forward runs eagerly, the formula
// gets the corpus' grad_outputs, and every gradient the corpus lists is
// compared with compare_tensors (the conformance tolerances per dtype).
// Skipped (with a reason) when the case has no gradients or the op no formula.
CaseResult grad_check_case(const CorpusCase& c);

// Central differences (h = 1e-6) of a random projection of the outputs, for
// every differentiable floating input of every sample of `op`; the case id is
// the op. Skipped when the op has no samples.
CaseResult finite_difference_check(std::string_view op, uint64_t seed = 0);

struct DerivativeDef;
struct DerivativeSample;
// The same for a given formula and samples (tests check a wrong formula fails).
CaseResult finite_difference_check(const DerivativeDef& def, const std::vector<DerivativeSample>& samples,
                                   uint64_t seed = 0);

}  // namespace kiln::aot
