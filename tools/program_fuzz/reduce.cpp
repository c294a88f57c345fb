#include "reduce.h"

#include <algorithm>

namespace kiln::fuzz {

Reduced reduce_program(const ProgramText& program, const std::function<bool(const std::string&)>& still_fails,
                       int max_tests) {
  std::vector<size_t> kept = program.removable();
  Reduced r;
  r.lines_before = kept.size();
  auto test = [&](const std::vector<size_t>& candidate) {
    if (r.tests >= max_tests) {
      r.budget_hit = true;
      return false;
    }
    ++r.tests;
    return still_fails(program.render(&candidate));
  };
  // ddmin on complements: drop one of n chunks at a time, refining n when none can go.
  size_t n = 2;
  while (kept.size() >= 2 && !r.budget_hit) {
    const size_t chunk = (kept.size() + n - 1) / n;
    bool dropped = false;
    for (size_t start = 0; start < kept.size(); start += chunk) {
      std::vector<size_t> candidate(kept.begin(), kept.begin() + long(start));
      candidate.insert(candidate.end(), kept.begin() + long(std::min(kept.size(), start + chunk)), kept.end());
      if (test(candidate)) {
        kept = std::move(candidate);
        n = std::max<size_t>(n - 1, 2);
        dropped = true;
        break;
      }
    }
    if (dropped) continue;
    if (n >= kept.size()) break;
    n = std::min(kept.size(), n * 2);
  }
  // Single lines whose removal ddmin's chunks never tried alone.
  for (size_t i = 0; i < kept.size() && !r.budget_hit;) {
    std::vector<size_t> candidate = kept;
    candidate.erase(candidate.begin() + long(i));
    if (test(candidate)) kept = std::move(candidate);
    else ++i;
  }
  r.lines_after = kept.size();
  r.program = program.render(&kept);
  return r;
}

}  // namespace kiln::fuzz
