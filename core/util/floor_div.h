#pragma once
// Integer division and remainder rounding toward -inf, as Python's // and %
// (and Inductor's FloorDiv / ModularIndexing) define them; C++ rounds toward 0.
#include <cstdint>

namespace kiln {

inline int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

inline int64_t floor_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

}  // namespace kiln
