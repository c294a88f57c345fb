#pragma once
// Whether a backend printed what plain eager printed: the same lines, each
// token the same text or, for two numbers, within a tolerance that covers
// compiled code's other summation order (and its growth over a few Adam or
// SGD steps) but not a wrong gradient.
#include <string>
#include <utility>

#include "runner.h"

namespace kiln::fuzz {

struct Tolerance {
  double rtol = 2e-3;
  double atol = 2e-4;
  double line_rtol = 2e-4;  // times the largest magnitude on the expected line
};

// Empty when `got` agrees with `expected`, else where they first differ:
// "line 12, token 4: 0.5 vs 0.75".
std::string compare_outputs(const std::string& expected, const std::string& got, const Tolerance& tol = {});

// How a backend's run differs from plain eager's: {kind, detail} with kind
// one of timeout, crash, error (another exit code), wrong-output; both empty
// when they agree.
std::pair<std::string, std::string> classify_run(const RunResult& reference, const RunResult& got,
                                                 const Tolerance& tol = {});

}  // namespace kiln::fuzz
