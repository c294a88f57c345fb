#pragma once
// The random draws the code-generator fuzzer's graph families share: one
// Mersenne Twister per generator, seeded once, so a seed names a graph.
#include <cstdint>
#include <random>
#include <vector>

namespace kiln::test {

class GraphDraws {
 protected:
  explicit GraphDraws(uint32_t seed) : rng_(seed) {}

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  template <class T>
  T one_of(const std::vector<T>& v) { return v[size_t(pick(0, int(v.size()) - 1))]; }

  std::mt19937 rng_;
};

}  // namespace kiln::test
