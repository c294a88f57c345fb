#pragma once
// IEEE binary16 and bfloat16 storage types. Arithmetic happens in float, as in
// PyTorch's CPU kernels; conversion back rounds to nearest even.
#include <bit>
#include <cstdint>
#include <cstring>

namespace kiln {

struct Half {
  uint16_t bits = 0;
  Half() = default;
  Half(float f) : bits(from_float(f)) {}  // NOLINT: implicit like c10::Half
  operator float() const { return to_float(bits); }

  static float to_float(uint16_t h) {
    uint32_t sign = uint32_t(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    uint32_t out;
    if (exp == 0) {
      if (mant == 0) {
        out = sign;
      } else {  // subnormal: renormalise
        int e = -1;
        do {
          ++e;
          mant <<= 1;
        } while ((mant & 0x400) == 0);
        mant &= 0x3ff;
        out = sign | (uint32_t(127 - 15 - e) << 23) | (mant << 13);
      }
    } else if (exp == 0x1f) {
      out = sign | 0x7f800000u | (mant << 13);
    } else {
      out = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    return std::bit_cast<float>(out);
  }

  static uint16_t from_float(float f) {
    uint32_t x = std::bit_cast<uint32_t>(f);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t absx = x & 0x7fffffff;
    if (absx >= 0x7f800000u) {  // inf or nan
      return uint16_t(sign | 0x7c00 | (absx > 0x7f800000u ? 0x200 : 0));
    }
    if (absx >= 0x477ff000u) return uint16_t(sign | 0x7c00);  // rounds to inf
    if (absx < 0x38800000u) {                                 // half subnormal or zero
      // Add a magic number so the FPU does the round-to-nearest-even shift.
      float v = std::bit_cast<float>(absx) + 0.5f;
      return uint16_t(sign | (std::bit_cast<uint32_t>(v) - 0x3f000000u));
    }
    uint32_t mant_odd = (absx >> 13) & 1;
    absx += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round
    return uint16_t(sign | (absx >> 13));
  }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float f) : bits(from_float(f)) {}  // NOLINT
  operator float() const { return to_float(bits); }

  static float to_float(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }
  static uint16_t from_float(float f) {
    uint32_t x = std::bit_cast<uint32_t>(f);
    if ((x & 0x7fffffff) > 0x7f800000u) return uint16_t((x >> 16) | 0x40);  // quiet nan
    uint32_t rounding_bias = 0x7fff + ((x >> 16) & 1);
    return uint16_t((x + rounding_bias) >> 16);
  }
};

}  // namespace kiln
