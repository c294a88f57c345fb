#pragma once
// How one tensor differs from its reference, element by element: what the
// numerics panel needs to tell a bug from noise (a count and share of elements
// over the tolerance, a histogram of errors by decade, the worst elements).
//
// The error of an element is |x - ref| / s, where s is the largest finite
// magnitude of either tensor. Dividing by the tensor's scale rather than by
// |ref| keeps an element whose reference is zero (relu's, a subtraction's)
// from reading as 1e+30, and bounds a finite error by 2; the node's relative
// error is the largest element error, so a node is over the tolerance exactly
// when some element is. Bool and integer tensors are compared exactly: an
// element over is one that differs. A NaN or Inf that the reference does not
// have (or the other way round) is always over, with an infinite error.
// tests/session/test_numerics_stats.cpp.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/tensor/tensor.h"

namespace kiln::session {

// Buckets: equal; error below 1e-10; one per decade [1e-10, 1e-9) .. [0.1, 1);
// 1 and above; NaN/Inf mismatches.
struct ErrorHistogram {
  static constexpr int kDecades = 10;
  static constexpr int kEqual = 0, kBelow = 1, kFirstDecade = 2, kAbove = kFirstDecade + kDecades,
                       kNonFinite = kAbove + 1, kBuckets = kNonFinite + 1;
  int64_t counts[kBuckets] = {};
  static int bucket_of(double error);        // error: inf for a NaN/Inf mismatch, 0 for equal
  static double lower_edge(int bucket);      // 0 for kEqual and kBelow, inf for kNonFinite
  static std::string label(int bucket);      // "0", "<1e-10", "1e-4", ">=1", "NaN/Inf"
};

struct WorstElement {
  std::vector<int64_t> index;  // one per dimension, row-major
  double reference = 0, value = 0;
  double error = 0;  // as above; inf for a NaN/Inf mismatch
};

struct TensorErrors {
  bool measured = false;  // false: no value on this rung, or its shape differs from the reference's
  bool exact = false;     // bool or integer reference: compared exactly
  int64_t elements = 0;
  int64_t over = 0;       // elements over the tolerance (exact: that differ)
  int64_t non_finite = 0; // of those, NaN/Inf mismatches
  double max_abs = 0;     // inf when there is a NaN/Inf mismatch
  double max_error = 0;   // the largest element error; inf when there is a NaN/Inf mismatch
  double scale = 0;       // the s above
  ErrorHistogram histogram;
  std::vector<WorstElement> worst;  // largest error first; ties in index order
  double share() const { return elements > 0 ? double(over) / double(elements) : 0.0; }
};

inline constexpr int kWorstElements = 10;

// The rule, as the panel and the CLI state it.
const char* error_rule();

// `value` and `reference` in row-major order, one per element of `sizes`.
TensorErrors compare_elements(std::span<const double> value, std::span<const double> reference,
                              const std::vector<int64_t>& sizes, bool exact, double tolerance,
                              int worst_k = kWorstElements);

// Tensors of any dtype and layout; exact when the reference is bool or integer.
TensorErrors compare_tensors(const Tensor& value, const Tensor& reference, double tolerance,
                             int worst_k = kWorstElements);

}  // namespace kiln::session
