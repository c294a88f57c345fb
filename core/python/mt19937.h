#pragma once
// The Mersenne Twister shared by `random` (CPython's _randommodule.c) and
// numpy.random's legacy RandomState (numpy/random/src/mt19937): both draw
// the same 32-bit words from the same state; they differ only in seeding
// (CPython: init_by_array over a seed's words; NumPy's seed(int):
// init_genrand) and in what they build from the words.
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace kiln::py {

struct MersenneTwister {
  static constexpr int N = 624, M = 397;
  std::array<uint32_t, N> mt{};
  int index = N + 1;

  void init_genrand(uint32_t s) {
    mt[0] = s;
    for (int i = 1; i < N; ++i) mt[i] = 1812433253u * (mt[i - 1] ^ (mt[i - 1] >> 30)) + uint32_t(i);
    index = N;
  }

  void init_by_array(const std::vector<uint32_t>& key) {
    init_genrand(19650218u);
    size_t i = 1, j = 0;
    const size_t len = key.size();
    for (size_t k = std::max<size_t>(N, len); k; --k) {
      mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525u)) + key[j] + uint32_t(j);
      if (++i >= N) { mt[0] = mt[N - 1]; i = 1; }
      if (++j >= len) j = 0;
    }
    for (size_t k = N - 1; k; --k) {
      mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941u)) - uint32_t(i);
      if (++i >= N) { mt[0] = mt[N - 1]; i = 1; }
    }
    mt[0] = 0x80000000u;
  }

  uint32_t genrand() {
    static constexpr uint32_t mag01[2] = {0x0u, 0x9908b0dfu};
    if (index >= N) {
      int kk = 0;
      for (; kk < N - M; ++kk) {
        uint32_t y = (mt[kk] & 0x80000000u) | (mt[kk + 1] & 0x7fffffffu);
        mt[kk] = mt[kk + M] ^ (y >> 1) ^ mag01[y & 1u];
      }
      for (; kk < N - 1; ++kk) {
        uint32_t y = (mt[kk] & 0x80000000u) | (mt[kk + 1] & 0x7fffffffu);
        mt[kk] = mt[kk + (M - N)] ^ (y >> 1) ^ mag01[y & 1u];
      }
      uint32_t y = (mt[N - 1] & 0x80000000u) | (mt[0] & 0x7fffffffu);
      mt[N - 1] = mt[M - 1] ^ (y >> 1) ^ mag01[y & 1u];
      index = 0;
    }
    uint32_t y = mt[index++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
  }

  double random() {
    uint32_t a = genrand() >> 5, b = genrand() >> 6;
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
  }
};

}  // namespace kiln::py
