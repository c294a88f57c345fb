#pragma once
// Whether a backend printed what plain eager printed: the same lines, each
// token the same text or, for two numbers, within a tolerance that covers
// compiled code's other summation order (and its growth over a few Adam or
// SGD steps) but not a wrong gradient.
#include <string>

namespace kiln::fuzz {

struct Tolerance {
  double rtol = 2e-3;
  double atol = 2e-4;
};

// Empty when `got` agrees with `expected`, else where they first differ:
// "line 12, token 4: 0.5 vs 0.75".
std::string compare_outputs(const std::string& expected, const std::string& got, const Tolerance& tol = {});

}  // namespace kiln::fuzz
