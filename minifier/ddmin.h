#pragma once
// The delta-debugging core shared by every reduction strategy, in llvm-reduce's
// form: chunks of the candidate list, sized from the largest power of two down
// to one, are each tried for removal; a removal is kept when the rest is still
// interesting. The result is 1-minimal: removing any single kept element makes
// it uninteresting.
#include <cstddef>
#include <functional>
#include <vector>

namespace kiln {

struct DdminStats {
  int tests = 0;     // calls of the interestingness test
  int accepted = 0;  // removals kept
};

// `interesting(keep)` says whether the candidate made of the elements listed in
// `keep` (indices into [0, n), ascending) still shows the failure. It is assumed
// to hold for all n elements. `cancelled` (optional) is polled between tests.
std::vector<size_t> ddmin(size_t n, const std::function<bool(const std::vector<size_t>&)>& interesting,
                          DdminStats* stats = nullptr, const std::function<bool()>& cancelled = {});

// The same reduction with several removals tried at once: `first_interesting`
// gets up to `batch` candidates (the removals of consecutive chunks, each from
// the current list) and returns the index of the first interesting one, or -1.
// Taking the first in order makes the result independent of `batch`: it is
// what ddmin() finds with the same test.
std::vector<size_t> ddmin_batched(size_t n,
                                  const std::function<int(const std::vector<std::vector<size_t>>&)>& first_interesting,
                                  size_t batch, DdminStats* stats = nullptr, const std::function<bool()>& cancelled = {});

}  // namespace kiln
