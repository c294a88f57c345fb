#pragma once
// What every `kiln-cli bench` suite measures with: medians, wall-clock timing
// and seeded random inputs, so the suites agree on how a figure is taken.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

#include "core/tensor/tensor.h"

namespace kiln::cli {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Wall milliseconds of one call of `f`.
template <class F>
double time_ms(F&& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Uniform in [-scale, scale], drawn in float32 and then converted to `dtype`.
inline Tensor random_tensor(Shape sizes, uint32_t seed, DType dtype = DType::Float32, float scale = 2.f) {
  Tensor t = Tensor::empty(std::move(sizes), DType::Float32);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
  return t.to(dtype);
}

}  // namespace kiln::cli
