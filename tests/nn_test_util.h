#pragma once
// Helpers for the linalg / convolution / pooling / upsample / embedding /
// padding tests: deterministic random tensors, tolerant comparison with a
// message, error-message checks, and a dot product for adjoint identities.
#include "test_support.h"

#include <cstdint>
#include <string>
#include <vector>

#include "core/ops/registry.h"

namespace kiln::test {

// Uniform values in [-1, 1) from a fixed-seed LCG: same numbers on every run.
inline Tensor random_tensor(Shape sizes, uint64_t seed, DType dtype = DType::Float32) {
  std::vector<double> v(static_cast<size_t>(shape_numel(sizes)));
  uint64_t s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (double& x : v) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    x = double(s >> 11) / double(1ULL << 53) * 2.0 - 1.0;
  }
  return Tensor::from_vector(v, std::move(sizes)).to(dtype);
}

// Empty string when every element is within atol + rtol * |want|, else the first mismatch.
inline std::string close_report(const Tensor& got, const std::vector<double>& want, double rtol, double atol) {
  std::vector<double> g = values(got);
  if (g.size() != want.size())
    return "size " + std::to_string(g.size()) + " vs " + std::to_string(want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    bool both_nan = std::isnan(g[i]) && std::isnan(want[i]);
    if (!both_nan && !(std::abs(g[i] - want[i]) <= atol + rtol * std::abs(want[i])))
      return "element " + std::to_string(i) + ": got " + std::to_string(g[i]) + ", want " + std::to_string(want[i]);
  }
  return "";
}

// The op's error message, or "" when it succeeded.
inline std::string error_of(std::string_view op, const ValueList& args, const KwargList& kwargs = {}) {
  auto r = call_op(op, args, kwargs);
  return r.ok() ? std::string() : r.status().message();
}

inline double dot_all(const Tensor& a, const Tensor& b) {
  std::vector<double> x = values(a), y = values(b);
  double s = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) s += x[i] * y[i];
  return s;
}


}  // namespace kiln::test

#define KILN_EXPECT_CLOSE(got, want, rtol, atol)                        \
  do {                                                                  \
    std::string r_ = ::kiln::test::close_report((got), (want), (rtol), (atol)); \
    QVERIFY2(r_.empty(), r_.c_str());                                   \
  } while (0)

#define KILN_EXPECT_ERROR(msg, phrase)                                                   \
  do {                                                                                   \
    std::string m_ = (msg);                                                              \
    QVERIFY2(m_.find(phrase) != std::string::npos, ("message was: '" + m_ + "'").c_str()); \
  } while (0)
