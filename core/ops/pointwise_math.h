#pragma once
// Vectorizable float32 math for the hot unary ops. glibc's sinf/cosf are
// scalar calls, several times slower than the SIMD Sleef kernels PyTorch
// uses; these formulas have no branches or calls, so the compiler vectorizes
// loops over them. Each is exact only on part of the domain; the unary loop
// recomputes the other elements with the library function (see Patched in
// pointwise_kernels.h).
#include <bit>
#include <cmath>
#include <cstdint>

namespace kiln::pointwise {

// Largest |x| the fast sin/cos accept: m * (pi/2)'s leading part below stays
// exact while m < 2^20.
inline constexpr float kTrigFastLimit = 524288.0f;  // 2^19

// sin(x + phase * pi) in double for |x| <= 2^19 (phase 0: sin, 0.5: cos).
// x = n * pi - phase * pi + r with |r| <= pi/2, so the result is
// (-1)^n sin(r); r comes from a two-part pi/2 (Cody-Waite) and sin(r) from its
// Taylor series to r^13 (error < 7e-10, far below a float ulp). Rounded to
// float the result is within one ulp of the correctly rounded value.
inline double sin_phase_small(double x, double phase) {
  const double kShift = 6755399441055744.0;  // 1.5 * 2^52: adding it rounds to an integer
  double shifted = (x * 0.31830988618379067154 + phase) + kShift;
  double n = shifted - kShift;
  uint64_t sign = std::bit_cast<uint64_t>(shifted) << 63;  // n's parity, as a sign bit
  double m = 2.0 * (n - phase);                            // x = m * pi/2 + r
  double r = (x - m * 1.57079632673412561417e+00) - m * 6.07710050650619224932e-11;
  double r2 = r * r;
  double p = 1.0 / 6227020800.0;
  p = p * r2 - 1.0 / 39916800.0;
  p = p * r2 + 1.0 / 362880.0;
  p = p * r2 - 1.0 / 5040.0;
  p = p * r2 + 1.0 / 120.0;
  p = p * r2 - 1.0 / 6.0;
  double s = r * (1.0 + r2 * p);  // this form keeps sin(-0) = -0
  return std::bit_cast<double>(std::bit_cast<uint64_t>(s) ^ sign);
}

}  // namespace kiln::pointwise
