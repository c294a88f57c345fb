#pragma once
// PyTorch's CPU random number generator, reproduced bit for bit: a seeded Kiln
// program draws the same numbers as the same calls in PyTorch 2.11 on the CPU.
//
// The engine is the 32-bit Mersenne Twister (at::mt19937, seeded with
// init_genrand), and the fills below follow ATen's CPU kernels draw for draw:
// which elements consume random() versus random64(), in which order, and with
// the same float/double arithmetic. Two things make the numbers depend on more
// than the seed, exactly as in PyTorch:
//   - ATen compiles its distribution kernels once per CPU capability and picks
//     one at run time (ATEN_CPU_CAPABILITY). The AVX2 and AVX512 builds contract
//     a*b+c into fused multiply-adds and draw normal_ on float tensors of 16+
//     contiguous elements through a polynomial sin/cos/log; the portable
//     ("default") build does neither. See RandomKernelBuild.
//   - The normal sampler keeps the second value of each Box-Muller pair in the
//     generator, so the next scalar-path normal_ starts from it.
#include <array>
#include <cstdint>
#include <mutex>
#include <optional>

#include "core/tensor/tensor.h"

namespace kiln {

// PyTorch's default_rng_seed_val: the seed of a freshly made torch.Generator().
inline constexpr uint64_t kDefaultRngSeed = 67280421310721ULL;

// Which build of ATen's CPU distribution kernels to reproduce.
enum class RandomKernelBuild : uint8_t {
  Vectorized,  // ATEN_CPU_CAPABILITY avx2 or avx512: PyTorch's choice on any x86 CPU with AVX2
  Portable,    // ATEN_CPU_CAPABILITY=default (and CPUs without AVX2)
};
// Vectorized unless the environment says ATEN_CPU_CAPABILITY=default, read once
// on first use, so `ATEN_CPU_CAPABILITY=default` makes Kiln and PyTorch agree.
RandomKernelBuild random_kernel_build();
void set_random_kernel_build(RandomKernelBuild build);

class CpuGenerator {
 public:
  explicit CpuGenerator(uint64_t seed = kDefaultRngSeed);
  CpuGenerator(const CpuGenerator& other);
  CpuGenerator& operator=(const CpuGenerator& other);

  // Also drops the cached normal samples, as torch.manual_seed does. Only the
  // low 32 bits reach the engine; initial_seed() keeps all 64.
  void manual_seed(uint64_t seed);
  uint64_t initial_seed() const { return seed_; }

  uint32_t random();    // one mt19937 draw
  uint64_t random64();  // two draws, the first in the high half (CPUGeneratorImpl::random64)

  // The second value of the last Box-Muller pair, returned by the next normal
  // draw of that precision instead of drawing.
  std::optional<float> next_float_normal_sample() const { return next_float_normal_sample_; }
  std::optional<double> next_double_normal_sample() const { return next_double_normal_sample_; }
  void set_next_float_normal_sample(std::optional<float> v) { next_float_normal_sample_ = v; }
  void set_next_double_normal_sample(std::optional<double> v) { next_double_normal_sample_ = v; }

  // Same engine position and cached samples.
  bool operator==(const CpuGenerator& other) const;

  // torch.get_rng_state()'s bytes: ATen's CPUGeneratorImplState as x86-64
  // lays it out (5056 bytes: the legacy TH state with the 624 words widened to
  // 64 bits, then the cached float sample), so a state printed, saved or
  // restored reads as PyTorch's does.
  static constexpr size_t kStateBytes = 5056;
  std::array<uint8_t, kStateBytes> state_bytes() const;
  // False (and no change) when the bytes hold no valid engine state.
  bool set_state_bytes(const std::array<uint8_t, kStateBytes>& bytes);

  // Held by the fill functions for a whole fill, as ATen holds generator->mutex_.
  std::mutex& mutex() const { return mutex_; }

 private:
  static constexpr int kStateSize = 624;
  void twist();

  uint64_t seed_ = kDefaultRngSeed;
  std::array<uint32_t, kStateSize> state_{};
  int left_ = 1;  // draws until the next twist, plus one (MT19937RNGEngine's layout)
  int next_ = 0;
  std::optional<float> next_float_normal_sample_;
  std::optional<double> next_double_normal_sample_;
  mutable std::mutex mutex_;
};

// The process-wide generator that torch.manual_seed seeds. PyTorch seeds its own
// from /dev/urandom at start-up; this one starts at kDefaultRngSeed so an
// unseeded Kiln run is at least repeatable.
CpuGenerator& default_cpu_generator();

// In-place fills, as Tensor.uniform_(from, to), normal_(mean, std),
// random_(from, to), bernoulli_(p), exponential_(lambd). Each works on float32,
// float64, float16 and bfloat16 tensors of any strides (random_from_to_ and
// bernoulli_ on integer and bool tensors too) and visits elements in the order
// ATen's TensorIterator does, so strided tensors match as well.
void uniform_(const Tensor& t, double from, double to, CpuGenerator& g = default_cpu_generator());
void normal_(const Tensor& t, double mean, double std, CpuGenerator& g = default_cpu_generator());
// Uniform integers in [from, to_exclusive): torch.randint and Tensor.random_(from, to).
void random_from_to_(const Tensor& t, int64_t from, int64_t to_exclusive,
                     CpuGenerator& g = default_cpu_generator());
// Tensor.random_() on an int64 tensor: a draw from [0, 2^63) (the range
// random_from_to_ cannot name), as ATen's random_kernel takes it.
void random_int64_full_range_(const Tensor& t, CpuGenerator& g = default_cpu_generator());
// Tensor.bernoulli_(p) with a scalar p; dropout's mask is bernoulli_(1 - p).
void bernoulli_(const Tensor& t, double p, CpuGenerator& g = default_cpu_generator());
// Tensor.bernoulli_(p) with a tensor p broadcast to t; torch.bernoulli(p) is
// bernoulli_(empty_like(p), p). Float p compares in float, double p in double.
void bernoulli_(const Tensor& t, const Tensor& p, CpuGenerator& g = default_cpu_generator());
void exponential_(const Tensor& t, double lambd, CpuGenerator& g = default_cpu_generator());
// torch.multinomial's draw with replacement (ATen's CPU kernel): per row of a
// 1-D or 2-D float `probs`, the normalised cumulative sum searched with one
// double uniform per sample; writes `result`, int64 [n_sample] or [rows, n_sample].
void multinomial_with_replacement(const Tensor& probs, int64_t n_sample, const Tensor& result,
                                  CpuGenerator& g = default_cpu_generator());
// torch.randperm(n, dtype=dtype).
Tensor randperm(int64_t n, DType dtype, CpuGenerator& g = default_cpu_generator());

}  // namespace kiln
