#pragma once
// Delta debugging (Zeller's ddmin) over a program's removable lines: a
// smaller program that still shows the same failure, so a mismatch is
// reported as the few statements that cause it.
#include <functional>
#include <string>

#include "program_text.h"

namespace kiln::fuzz {

struct Reduced {
  std::string program;
  size_t lines_before = 0, lines_after = 0;  // removable lines kept
  int tests = 0;                             // candidate programs tried
  bool budget_hit = false;                   // stopped at max_tests, maybe not 1-minimal
};

// `still_fails(source)` says whether a candidate shows the failure. Stops
// after `max_tests` candidates with the smallest program found so far.
Reduced reduce_program(const ProgramText& program, const std::function<bool(const std::string&)>& still_fails,
                       int max_tests);

}  // namespace kiln::fuzz
