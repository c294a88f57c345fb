#pragma once
// Helpers shared by the pointwise op tests: small tensor literals, error
// capture, and a value check that also accepts matching infinities and NaNs.
#include "test_support.h"

#include <limits>

namespace kiln::test::pointwise {

template <class T>
Tensor vec(std::vector<T> v) {
  Shape s{int64_t(v.size())};
  return Tensor::from_vector(v, s);
}
inline Tensor f32(std::vector<float> v) { return vec(std::move(v)); }
inline Tensor f64(std::vector<double> v) { return vec(std::move(v)); }
inline Tensor i64(std::vector<int64_t> v) { return vec(std::move(v)); }
inline Tensor boolean(std::vector<bool> v) { return vec(std::move(v)); }

// The op's error message, or "" when it succeeded.
inline std::string error_of(std::string_view op, const ValueList& args, const KwargList& kwargs = {}) {
  auto r = call_op(op, args, kwargs);
  return r ? std::string() : r.status().message();
}
inline bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

inline const double kNan = std::numeric_limits<double>::quiet_NaN();
inline const double kInf = std::numeric_limits<double>::infinity();
inline const float kNanF = std::numeric_limits<float>::quiet_NaN();
inline const float kInfF = std::numeric_limits<float>::infinity();

// "" when every element matches (1e-5 relative and absolute; equal infinities
// and NaN for NaN count as matches), else a description of the first mismatch.
inline QString mismatch(const Tensor& t, const std::vector<double>& want) {
  std::vector<double> got = values(t);
  if (got.size() != want.size()) return QString("got %1 elements, want %2").arg(got.size()).arg(want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    double g = got[i], w = want[i];
    bool same = std::isnan(w) ? std::isnan(g) : std::isinf(w) ? g == w : std::abs(g - w) <= 1e-5 + 1e-5 * std::abs(w);
    if (!same) return QString("element %1: got %2, want %3").arg(i).arg(g, 0, 'g', 10).arg(w, 0, 'g', 10);
  }
  return {};
}

}  // namespace kiln::test::pointwise

#define KILN_EXPECT_VALUES(tensor, ...)                                                           \
  do {                                                                                            \
    QString why_ = ::kiln::test::pointwise::mismatch((tensor), std::vector<double> __VA_ARGS__); \
    QVERIFY2(why_.isEmpty(), qPrintable(why_));                                                   \
  } while (0)
