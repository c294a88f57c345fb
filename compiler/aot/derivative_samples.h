#pragma once
// Small valid inputs for every op with a derivative formula, in float64, for
// the finite-difference check (kiln-cli grad-check --finite-diff and
// tests/compiler/test_derivatives.cpp). Each op has one or more sample specs
// in a table, written in a tiny notation (see derivative_samples.cpp), so
// adding an op is adding a line.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/ops/schema.h"
#include "core/ops/value.h"

namespace kiln::aot {

struct DerivativeSample {
  std::string spec;  // the notation it was made from, for messages
  ValueList args;
  KwargList kwargs;
  // Per positional argument, the structure of a matrix input whose op reads
  // only part of it: 'H' symmetric (one triangle read; perturbed in pairs),
  // 'L' / 'U' lower / upper triangular (the other triangle is not perturbed);
  // 0 for anything else.
  std::vector<char> structure;
};

// The samples of `op`, with random tensors drawn from a generator seeded by
// the op name and `seed` (so runs repeat). Empty when the table has none.
std::vector<DerivativeSample> derivative_samples(std::string_view op, uint64_t seed = 0);

// Ops the table has samples for.
std::vector<std::string> ops_with_samples();

// Parses one spec, e.g. "f[3,4] p[4] alpha=2.0" (exposed for tests).
DerivativeSample parse_sample(std::string_view spec, uint64_t seed);

}  // namespace kiln::aot
