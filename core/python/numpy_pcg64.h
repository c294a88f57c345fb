#pragma once
// numpy.random's Generator over PCG64, draw for draw NumPy's (1.17 to 2.x):
// SeedSequence's hash of the entropy into the pool and the pool into words
// (bit_generator.pyx), PCG XSL-RR 128/64 (src/pcg64/pcg64.h) with the 32-bit
// half kept for the next 32-bit draw, and what Generator builds from the
// words (src/distributions/distributions.c).
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/python/numpy_ziggurat.h"

namespace kiln::py {

// SeedSequence (O'Neill's seed_seq alternative as NumPy has it).
struct SeedSequenceMix {
  static constexpr uint32_t INIT_A = 0x43b0d7e5u, MULT_A = 0x931e8875u, INIT_B = 0x8b51f9ddu, MULT_B = 0x58f38dedu;
  static constexpr uint32_t MIX_MULT_L = 0xca01f9ddu, MIX_MULT_R = 0x4973f715u;

  static uint32_t hashmix(uint32_t value, uint32_t& hash_const) {
    value ^= hash_const;
    hash_const *= MULT_A;
    value *= hash_const;
    return value ^ (value >> 16);
  }
  static uint32_t mix(uint32_t x, uint32_t y) {
    uint32_t r = MIX_MULT_L * x - MIX_MULT_R * y;
    return r ^ (r >> 16);
  }

  // The pool of pool_size words from the assembled entropy words.
  static std::vector<uint32_t> pool(const std::vector<uint32_t>& entropy, size_t pool_size) {
    std::vector<uint32_t> m(pool_size);
    uint32_t hc = INIT_A;
    for (size_t i = 0; i < pool_size; ++i) m[i] = hashmix(i < entropy.size() ? entropy[i] : 0u, hc);
    for (size_t s = 0; s < pool_size; ++s)
      for (size_t d = 0; d < pool_size; ++d)
        if (s != d) m[d] = mix(m[d], hashmix(m[s], hc));
    for (size_t s = pool_size; s < entropy.size(); ++s)
      for (size_t d = 0; d < pool_size; ++d) m[d] = mix(m[d], hashmix(entropy[s], hc));
    return m;
  }

  // generate_state(n_words, uint32): the pool cycled through the second hash.
  static std::vector<uint32_t> generate(const std::vector<uint32_t>& pool, size_t n_words) {
    std::vector<uint32_t> out(n_words);
    uint32_t hc = INIT_B;
    for (size_t i = 0; i < n_words; ++i) {
      uint32_t v = pool[i % pool.size()];
      v ^= hc;
      hc *= MULT_B;
      v *= hc;
      out[i] = v ^ (v >> 16);
    }
    return out;
  }
};

struct Pcg64 {
  using u128 = unsigned __int128;
  static constexpr u128 MULT = (u128(2549297995355413924ull) << 64) | 4865540595714422341ull;
  u128 state = 0, inc = 1;
  bool has_uint32 = false;
  uint32_t uinteger = 0;

  // pcg64_set_seed from SeedSequence.generate_state(4, uint64): the uint32
  // words read as little-endian uint64s, state from the first two, the
  // stream from the last two.
  void seed_from_pool(const std::vector<uint32_t>& pool) {
    const std::vector<uint32_t> w = SeedSequenceMix::generate(pool, 8);
    uint64_t v[4];
    for (int k = 0; k < 4; ++k) v[k] = uint64_t(w[size_t(2 * k)]) | (uint64_t(w[size_t(2 * k + 1)]) << 32);
    const u128 initstate = (u128(v[0]) << 64) | v[1], initseq = (u128(v[2]) << 64) | v[3];
    state = 0;
    inc = (initseq << 1) | 1u;
    step();
    state += initstate;
    step();
    has_uint32 = false;
    uinteger = 0;
  }
  void step() { state = state * MULT + inc; }
  uint64_t next64() {
    step();
    const uint64_t hi = uint64_t(state >> 64), lo = uint64_t(state);
    const unsigned rot = unsigned(state >> 122);
    const uint64_t x = hi ^ lo;
    return (x >> rot) | (x << ((-rot) & 63u));
  }
  // The low half first; the high half waits for the next 32-bit draw.
  uint32_t next32() {
    if (has_uint32) {
      has_uint32 = false;
      return uinteger;
    }
    const uint64_t n = next64();
    has_uint32 = true;
    uinteger = uint32_t(n >> 32);
    return uint32_t(n & 0xffffffffu);
  }
  double next_double() { return double(next64() >> 11) * (1.0 / 9007199254740992.0); }
  float next_float() { return float(next32() >> 8) * (1.0f / 16777216.0f); }

  // random_standard_normal: the ziggurat on one 64-bit word (8 bits of
  // layer, a sign bit, 52 bits of magnitude).
  double standard_normal() {
    using namespace ziggurat;
    for (;;) {
      uint64_t r = next64();
      const int idx = int(r & 0xff);
      r >>= 8;
      const int sign = int(r & 1);
      const uint64_t rabs = (r >> 1) & 0x000fffffffffffffull;
      double x = double(rabs) * wi[idx];
      if (sign) x = -x;
      if (rabs < ki[idx]) return x;
      if (idx == 0) {
        for (;;) {
          const double xx = -nor_inv_r * std::log1p(-next_double());
          const double yy = -std::log1p(-next_double());
          if (yy + yy > xx * xx) return ((rabs >> 8) & 1) ? -(nor_r + xx) : nor_r + xx;
        }
      }
      if ((fi[idx - 1] - fi[idx]) * next_double() + fi[idx] < std::exp(-0.5 * x * x)) return x;
    }
  }

  double standard_exponential() {
    using namespace ziggurat;
    for (;;) {
      uint64_t ri = next64() >> 3;
      const int idx = int(ri & 0xff);
      ri >>= 8;
      const double x = double(ri) * we[idx];
      if (ri < ke[idx]) return x;
      if (idx == 0) return exp_r - std::log1p(-next_double());
      if ((fe[idx - 1] - fe[idx]) * next_double() + fe[idx] < std::exp(-x)) return x;
    }
  }

  // Lemire's bounded method, [0, rng] with rng below 2^32 - 1: 32-bit draws.
  uint32_t lemire32(uint32_t rng) {
    const uint32_t excl = rng + 1;
    uint64_t m = uint64_t(next32()) * excl;
    uint32_t left = uint32_t(m);
    if (left < excl) {
      const uint32_t threshold = (UINT32_MAX - rng) % excl;
      while (left < threshold) {
        m = uint64_t(next32()) * excl;
        left = uint32_t(m);
      }
    }
    return uint32_t(m >> 32);
  }
  uint64_t lemire64(uint64_t rng) {
    const uint64_t excl = rng + 1;
    u128 m = u128(next64()) * excl;
    uint64_t left = uint64_t(m);
    if (left < excl) {
      const uint64_t threshold = (UINT64_MAX - rng) % excl;
      while (left < threshold) {
        m = u128(next64()) * excl;
        left = uint64_t(m);
      }
    }
    return uint64_t(m >> 64);
  }
  // random_bounded_uint64 (Generator: never masked): a value in [0, rng].
  uint64_t bounded64(uint64_t rng) {
    if (rng == 0) return 0;
    if (rng <= 0xffffffffull) return rng == 0xffffffffull ? next32() : lemire32(uint32_t(rng));
    if (rng == ~0ull) return next64();
    return lemire64(rng);
  }
  // random_bounded_uint32_fill's element.
  uint32_t bounded32(uint32_t rng) {
    if (rng == 0) return 0;
    if (rng == 0xffffffffu) return next32();
    return lemire32(rng);
  }
  // random_interval (shuffle, permutation): masked rejection in [0, max].
  uint64_t interval(uint64_t max) {
    if (max == 0) return 0;
    uint64_t mask = max;
    for (int s : {1, 2, 4, 8, 16, 32}) mask |= mask >> s;
    uint64_t v;
    if (max <= 0xffffffffull) {
      while ((v = (next32() & mask)) > max) {
      }
    } else {
      while ((v = (next64() & mask)) > max) {
      }
    }
    return v;
  }
};

}  // namespace kiln::py
