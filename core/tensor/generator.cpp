#include "core/tensor/generator.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>
#include <type_traits>
#include <vector>

// Each a*b+c below rounds twice unless it is written std::fma: the kernels
// reproduced here fuse some products and not others, and one stray contraction
// changes the last bit. GCC does not contract in ISO mode (-std=c++20) or without
// FMA instructions; clang needs telling.
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace kiln {

// ---------------------------------------------------------------- build choice

namespace {

std::atomic<RandomKernelBuild>& kernel_build_setting() {
  static std::atomic<RandomKernelBuild> build = [] {
    const char* env = std::getenv("ATEN_CPU_CAPABILITY");
    bool portable = env && std::string_view(env) == "default";
    return portable ? RandomKernelBuild::Portable : RandomKernelBuild::Vectorized;
  }();
  return build;
}

}  // namespace

RandomKernelBuild random_kernel_build() { return kernel_build_setting().load(); }
void set_random_kernel_build(RandomKernelBuild build) { kernel_build_setting().store(build); }

// ---------------------------------------------------------------- the engine

CpuGenerator::CpuGenerator(uint64_t seed) { manual_seed(seed); }

CpuGenerator::CpuGenerator(const CpuGenerator& other)
    : seed_(other.seed_),
      state_(other.state_),
      left_(other.left_),
      next_(other.next_),
      next_float_normal_sample_(other.next_float_normal_sample_),
      next_double_normal_sample_(other.next_double_normal_sample_) {}

CpuGenerator& CpuGenerator::operator=(const CpuGenerator& other) {
  if (this == &other) return *this;
  seed_ = other.seed_;
  state_ = other.state_;
  left_ = other.left_;
  next_ = other.next_;
  next_float_normal_sample_ = other.next_float_normal_sample_;
  next_double_normal_sample_ = other.next_double_normal_sample_;
  return *this;
}

void CpuGenerator::manual_seed(uint64_t seed) {
  seed_ = seed;
  state_[0] = uint32_t(seed & 0xffffffffu);
  for (int j = 1; j < kStateSize; ++j)
    state_[j] = 1812433253u * (state_[j - 1] ^ (state_[j - 1] >> 30)) + uint32_t(j);
  left_ = 1;
  next_ = 0;
  next_float_normal_sample_.reset();
  next_double_normal_sample_.reset();
}

void CpuGenerator::twist() {
  constexpr int n = kStateSize, m = 397;
  auto mixed = [](uint32_t u, uint32_t v) {
    uint32_t y = (u & 0x80000000u) | (v & 0x7fffffffu);
    return (y >> 1) ^ ((v & 1u) ? 0x9908b0dfu : 0u);
  };
  for (int k = 0; k < n - m; ++k) state_[k] = state_[k + m] ^ mixed(state_[k], state_[k + 1]);
  for (int k = n - m; k < n - 1; ++k) state_[k] = state_[k + m - n] ^ mixed(state_[k], state_[k + 1]);
  state_[n - 1] = state_[m - 1] ^ mixed(state_[n - 1], state_[0]);
  left_ = n;
  next_ = 0;
}

uint32_t CpuGenerator::random() {
  if (--left_ == 0) twist();
  uint32_t y = state_[next_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

uint64_t CpuGenerator::random64() {
  uint64_t hi = random();
  uint64_t lo = random();
  return (hi << 32) | lo;
}

bool CpuGenerator::operator==(const CpuGenerator& other) const {
  return seed_ == other.seed_ && state_ == other.state_ && left_ == other.left_ && next_ == other.next_ &&
         next_float_normal_sample_ == other.next_float_normal_sample_ &&
         next_double_normal_sample_ == other.next_double_normal_sample_;
}

namespace {
// Offsets in ATen's CPUGeneratorImplState (x86-64 alignment).
constexpr size_t kSeedAt = 0, kLeftAt = 8, kSeededAt = 12, kNextAt = 16, kWordsAt = 24;
constexpr size_t kNormalYAt = 5024, kNormalValidAt = 5040, kFloatSampleAt = 5048, kFloatValidAt = 5052;

template <class T>
void put(std::array<uint8_t, CpuGenerator::kStateBytes>& b, size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof v);
}
template <class T>
T get(const std::array<uint8_t, CpuGenerator::kStateBytes>& b, size_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}
}  // namespace

std::array<uint8_t, CpuGenerator::kStateBytes> CpuGenerator::state_bytes() const {
  std::array<uint8_t, kStateBytes> b{};
  put<uint64_t>(b, kSeedAt, seed_);
  put<int32_t>(b, kLeftAt, left_);
  put<int32_t>(b, kSeededAt, 1);
  put<uint64_t>(b, kNextAt, uint64_t(next_));
  for (int i = 0; i < kStateSize; ++i) put<uint64_t>(b, kWordsAt + 8 * size_t(i), state_[size_t(i)]);
  if (next_double_normal_sample_) {
    put<int32_t>(b, kNormalValidAt, 1);
    put<double>(b, kNormalYAt, *next_double_normal_sample_);
  }
  if (next_float_normal_sample_) {
    put<float>(b, kFloatSampleAt, *next_float_normal_sample_);
    b[kFloatValidAt] = 1;
  }
  return b;
}

bool CpuGenerator::set_state_bytes(const std::array<uint8_t, kStateBytes>& b) {
  const int32_t left = get<int32_t>(b, kLeftAt);
  const uint32_t next = uint32_t(get<uint64_t>(b, kNextAt));
  // at::mt19937::is_valid
  if (get<int32_t>(b, kSeededAt) == 0 || left <= 0 || left > kStateSize || next > uint32_t(kStateSize)) return false;
  seed_ = get<uint64_t>(b, kSeedAt);
  left_ = left;
  next_ = int(next);
  for (int i = 0; i < kStateSize; ++i) state_[size_t(i)] = uint32_t(get<uint64_t>(b, kWordsAt + 8 * size_t(i)));
  next_double_normal_sample_.reset();
  if (get<int32_t>(b, kNormalValidAt)) next_double_normal_sample_ = get<double>(b, kNormalYAt);
  next_float_normal_sample_.reset();
  if (b[kFloatValidAt]) next_float_normal_sample_ = get<float>(b, kFloatSampleAt);
  return true;
}

CpuGenerator& default_cpu_generator() {
  static CpuGenerator generator;
  return generator;
}

namespace {

constexpr double kPi = 3.14159265358979323846;  // c10::pi<double>

bool vectorized_build() { return random_kernel_build() == RandomKernelBuild::Vectorized; }

// ---------------------------------------------------------------- element types

template <class T> inline constexpr bool is_reduced_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// std::numeric_limits<T>::digits as c10 defines it for its 16-bit floats.
template <class T> inline constexpr int kDigits = std::numeric_limits<T>::digits;
template <> inline constexpr int kDigits<Half> = 11;
template <> inline constexpr int kDigits<BFloat16> = 8;

// at::dist_acctype: the precision distributions compute in.
template <class T> using DistAcc = std::conditional_t<std::is_same_v<T, double>, double, float>;

// static_cast<T>(v) with c10's conversions: the 16-bit floats only convert from
// float, so a double rounds twice on the way.
template <class T, class V>
T convert_to(V v) {
  if constexpr (is_reduced_v<T>) return T(float(v));
  else return static_cast<T>(v);
}

// ---------------------------------------------------------------- distributions

// at::uniform_real_distribution<T>: the low `digits` bits of one draw (two for
// double) scaled to [0, 1), then x * (to - from) + from in T's accumulate type,
// where `to - from` itself is rounded to T. The AVX2/AVX512 kernels fuse the
// multiply-add.
template <class T>
struct UniformReal {
  DistAcc<T> span, from;
  bool fused;
  UniformReal(T from_value, T to_value, bool fuse)
      : span(DistAcc<T>(T(DistAcc<T>(to_value) - DistAcc<T>(from_value)))), from(DistAcc<T>(from_value)),
        fused(fuse) {}
  DistAcc<T> operator()(CpuGenerator& g) const {
    DistAcc<T> x;
    if constexpr (std::is_same_v<T, double>) {
      x = double(g.random64() & ((uint64_t(1) << 53) - 1)) * (1.0 / double(uint64_t(1) << 53));
    } else {
      constexpr uint32_t mask = (uint32_t(1) << kDigits<T>) - 1;
      x = float(g.random() & mask) * (1.0f / float(uint32_t(1) << kDigits<T>));
    }
    return fused ? std::fma(x, span, from) : x * span + from;
  }
};

double uniform_unit_double(CpuGenerator& g) { return UniformReal<double>(0.0, 1.0, false)(g); }
float uniform_unit_float(CpuGenerator& g) { return UniformReal<float>(0.0f, 1.0f, false)(g); }

// at::normal_distribution<double>: Box-Muller on two fresh uniforms, keeping the
// sine half for the next call.
double normal_double(CpuGenerator& g, double mean, double std) {
  if (std::optional<double> cached = g.next_double_normal_sample()) {
    g.set_next_double_normal_sample(std::nullopt);
    return *cached * std + mean;
  }
  double u1 = uniform_unit_double(g);
  double u2 = uniform_unit_double(g);
  double radius = std::sqrt(-2.0 * std::log1p(-u2));
  double theta = 2.0 * kPi * u1;
  g.set_next_double_normal_sample(radius * std::sin(theta));
  double ret = radius * std::cos(theta);
  return ret * std + mean;
}

// ---------------------------------------------------------------- avx_mathfun

// ATen's AVX2 normal_ for float evaluates log, sin and cos with the Cephes
// polynomials of avx_mathfun.h. These are those routines for one lane, with an
// std::fma wherever GCC fuses the intrinsics' separate multiply and add (a
// product whose only use is an addition). The constants are written as the
// header writes them, double literals rounded to float.
constexpr float kLogP[9] = {float(7.0376836292E-2),  float(-1.1514610310E-1), float(1.1676998740E-1),
                            float(-1.2420140846E-1), float(+1.4249322787E-1), float(-1.6668057665E-1),
                            float(+2.0000714765E-1), float(-2.4999993993E-1), float(+3.3333331174E-1)};
constexpr float kLogQ1 = float(-2.12194440e-4), kLogQ2 = float(0.693359375);
constexpr float kSqrtHalf = float(0.707106781186547524);
constexpr float kMinusDP1 = float(-0.78515625), kMinusDP2 = float(-2.4187564849853515625e-4),
                kMinusDP3 = float(-3.77489497744594108e-8);
constexpr float kSinCof[3] = {float(-1.9515295891E-4), float(8.3321608736E-3), float(-1.6666654611E-1)};
constexpr float kCosCof[3] = {float(2.443315711809948E-005), float(-1.388731625493765E-003),
                              float(4.166664568298827E-002)};
constexpr float kFourOverPi = float(1.27323954473516);

[[gnu::always_inline]] inline float mathfun_log(float x) {
  x = std::max(x, std::bit_cast<float>(uint32_t(0x00800000)));
  uint32_t bits = std::bit_cast<uint32_t>(x);
  int32_t exponent = int32_t(bits >> 23) - 0x7f;
  x = std::bit_cast<float>((bits & ~uint32_t(0x7f800000)) | std::bit_cast<uint32_t>(0.5f));
  float e = float(exponent) + 1.0f;
  bool below = x < kSqrtHalf;
  float tmp = below ? x : 0.0f;
  x = x - 1.0f;
  e = e - (below ? 1.0f : 0.0f);
  x = x + tmp;
  float z = x * x;
  float y = std::fma(kLogP[0], x, kLogP[1]);
  for (int i = 2; i < 9; ++i) y = std::fma(y, x, kLogP[i]);
  y = y * x;
  y = std::fma(y, z, e * kLogQ1);
  y = std::fma(-z, 0.5f, y);
  x = x + y;
  return std::fma(e, kLogQ2, x);
}

[[gnu::always_inline]] inline void mathfun_sincos(float x, float& sin_out, float& cos_out) {
  uint32_t sign_sin = std::bit_cast<uint32_t>(x) & 0x80000000u;
  x = std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0x7fffffffu);
  int32_t j = int32_t(x * kFourOverPi);
  j = (j + 1) & ~1;
  float y = float(j);
  sign_sin ^= uint32_t(j & 4) << 29;
  uint32_t sign_cos = uint32_t(~(j - 2) & 4) << 29;
  bool first_poly_is_cos = (j & 2) == 0;
  x = std::fma(y, kMinusDP1, x);
  x = std::fma(y, kMinusDP2, x);
  x = std::fma(y, kMinusDP3, x);
  float z = x * x;
  float yc = std::fma(kCosCof[0], z, kCosCof[1]);
  yc = std::fma(yc, z, kCosCof[2]);
  yc = yc * z;
  yc = std::fma(yc, z, -(z * 0.5f));
  yc = yc + 1.0f;
  float ys = std::fma(kSinCof[0], z, kSinCof[1]);
  ys = std::fma(ys, z, kSinCof[2]);
  ys = ys * z;
  ys = std::fma(ys, x, x);
  // The header selects with bit masks and adds zeros; kept as is so signed
  // zeros come out the same.
  float ysin2 = first_poly_is_cos ? ys : 0.0f;
  float ysin1 = first_poly_is_cos ? 0.0f : yc;
  float sin_mag = ysin1 + ysin2;
  float cos_mag = (yc - ysin1) + (ys - ysin2);
  sin_out = std::bit_cast<float>(std::bit_cast<uint32_t>(sin_mag) ^ sign_sin);
  cos_out = std::bit_cast<float>(std::bit_cast<uint32_t>(cos_mag) ^ sign_cos);
}

// ---------------------------------------------------------------- normal fills

// normal_fill_16_AVX2: eight Box-Muller pairs from data[0..8) and data[8..16).
[[gnu::always_inline]] inline void normal_fill_16_avx2_body(float* data, float mean, float std) {
  const float two_pi = float(2.0f * kPi);
  for (int j = 0; j < 8; ++j) {
    float radius = std::sqrt(-2.0f * mathfun_log(1.0f - data[j]));
    float sin_theta, cos_theta;
    mathfun_sincos(two_pi * data[j + 8], sin_theta, cos_theta);
    data[j] = std::fma(radius * cos_theta, std, mean);
    data[j + 8] = std::fma(radius * sin_theta, std, mean);
  }
}

// std::fma is exactly rounded either way; built for the FMA unit it is one
// instruction instead of a libm call, which made weight init (normal_ over
// millions of elements) about half of a ResNet program's first second.
[[gnu::target("fma")]] void normal_fill_16_avx2_fma(float* data, float mean, float std) {
  normal_fill_16_avx2_body(data, mean, std);
}

void normal_fill_16_avx2_libm(float* data, float mean, float std) { normal_fill_16_avx2_body(data, mean, std); }

void normal_fill_16_avx2(float* data, float mean, float std) {
  static const bool has_fma = __builtin_cpu_supports("fma");
  if (has_fma) normal_fill_16_avx2_fma(data, mean, std);
  else normal_fill_16_avx2_libm(data, mean, std);
}

// normal_fill_16<T> with libm, in T's arithmetic. For the 16-bit floats every
// step rounds to T: c10's BFloat16-math.h overloads std::log, sqrt, sin and cos
// to return T, and c10 defines Half * Half, int * Half, ... to return T too.
template <class T>
void normal_fill_16(T* data, T mean, T std, bool fused) {
  for (int j = 0; j < 8; ++j) {
    if constexpr (is_reduced_v<T>) {
      auto rounded = [](float v) { return float(T(v)); };
      float u1 = rounded(1.0f - float(data[j]));
      float radius = rounded(std::sqrt(rounded(-2.0f * rounded(std::log(u1)))));
      float theta = rounded(float(2.0f * kPi * double(float(data[j + 8]))));
      float c = rounded(std::cos(theta)), sn = rounded(std::sin(theta));
      data[j] = T(rounded(rounded(radius * c) * float(std)) + float(mean));
      data[j + 8] = T(rounded(rounded(radius * sn) * float(std)) + float(mean));
    } else {
      T u1 = 1 - data[j];
      T radius = std::sqrt(-2 * std::log(u1));
      T theta = T(2.0f * kPi * double(data[j + 8]));
      T c = std::cos(theta), sn = std::sin(theta);
      data[j] = fused ? std::fma(radius * c, std, mean) : radius * c * std + mean;
      data[j + 8] = fused ? std::fma(radius * sn, std, mean) : radius * sn * std + mean;
    }
  }
}

// normal_fill / normal_fill_AVX2: uniforms for every element first, Box-Muller
// in blocks of 16, and a tail shorter than 16 redone as the last 16 elements
// with fresh uniforms.
template <class T, class Block>
void normal_fill(T* data, int64_t size, CpuGenerator& g, Block&& block) {
  UniformReal<T> uniform(T(0.0f), T(1.0f), false);
  for (int64_t i = 0; i < size; ++i) data[i] = convert_to<T>(uniform(g));
  for (int64_t i = 0; i < size - 15; i += 16) block(data + i);
  if (size % 16 != 0) {
    T* last = data + size - 16;
    for (int i = 0; i < 16; ++i) last[i] = convert_to<T>(uniform(g));
    block(last);
  }
}

// ---------------------------------------------------------------- iteration

// The dims in the order ATen's TensorIterator walks them, fastest first
// (TensorIteratorBase::reorder_dimensions): ascending stride, broadcast dims
// ignored, ties to the smaller size, insertion sort from the reversed dims.
template <size_t N>
std::vector<int64_t> iteration_order(const Shape& sizes, const std::array<const Shape*, N>& strides) {
  const int64_t ndim = int64_t(sizes.size());
  std::vector<int64_t> perm(static_cast<size_t>(ndim));
  for (int64_t i = 0; i < ndim; ++i) perm[size_t(i)] = ndim - 1 - i;
  auto should_swap = [&](int64_t d0, int64_t d1) {
    for (const Shape* operand : strides) {
      int64_t s0 = (*operand)[size_t(d0)], s1 = (*operand)[size_t(d1)];
      if (s0 == 0 || s1 == 0) continue;
      if (s0 < s1) return -1;
      if (s0 > s1) return 1;
      if (sizes[size_t(d0)] > sizes[size_t(d1)]) return 1;
    }
    return 0;
  };
  for (int64_t i = 1; i < ndim; ++i) {
    int64_t dim1 = i;
    for (int64_t dim0 = i - 1; dim0 >= 0; --dim0) {
      int comparison = should_swap(perm[size_t(dim0)], perm[size_t(dim1)]);
      if (comparison > 0) {
        std::swap(perm[size_t(dim0)], perm[size_t(dim1)]);
        dim1 = dim0;
      } else if (comparison < 0) {
        break;
      }
    }
  }
  return perm;
}

// Calls fn(offsets) with each operand's element offset, in TensorIterator order.
template <size_t N, class Fn>
void for_each_element(const Shape& sizes, const std::array<const Shape*, N>& strides, Fn&& fn) {
  const int64_t numel = shape_numel(sizes);
  if (numel == 0) return;
  std::vector<int64_t> perm = iteration_order(sizes, strides);
  std::vector<int64_t> index(sizes.size(), 0);
  std::array<int64_t, N> offsets{};
  for (int64_t i = 0; i < numel; ++i) {
    fn(offsets);
    for (int64_t d : perm) {
      if (++index[size_t(d)] < sizes[size_t(d)]) {
        for (size_t a = 0; a < N; ++a) offsets[a] += (*strides[a])[size_t(d)];
        break;
      }
      for (size_t a = 0; a < N; ++a) offsets[a] -= (*strides[a])[size_t(d)] * (sizes[size_t(d)] - 1);
      index[size_t(d)] = 0;
    }
  }
}

// Stores f() into every element of t, in TensorIterator order.
template <class T, class Draw>
void fill_serial(const Tensor& t, Draw&& draw) {
  T* base = static_cast<T*>(t.raw_data());
  for_each_element<1>(t.sizes(), {&t.strides()}, [&](const std::array<int64_t, 1>& off) { base[off[0]] = draw(); });
}

// ---------------------------------------------------------------- checks

// ATen refuses to write through a broadcast (stride 0) dim.
void check_no_internal_overlap(const Tensor& t, std::string_view op) {
  for (int64_t d = 0; d < t.dim(); ++d)
    KILN_USER_CHECK(!(t.size(d) > 1 && t.stride(d) == 0), op,
                    ": unsupported operation: more than one element of the written-to tensor refers to a single "
                    "memory location. Please clone() the tensor before performing the operation.");
}

// Nothing to draw: empty tensors and meta tensors (shape only) are left alone.
bool nothing_to_fill(const Tensor& t) { return t.is_meta() || t.numel() == 0; }

template <class Fn>
void dispatch_floating(DType dtype, std::string_view op, Fn&& fn) {
  switch (dtype) {
    case DType::Float32: return fn.template operator()<float>();
    case DType::Float64: return fn.template operator()<double>();
    case DType::Float16: return fn.template operator()<Half>();
    case DType::BFloat16: return fn.template operator()<BFloat16>();
    default: break;
  }
  KILN_FAIL(op, ": expected a floating-point tensor, got ", dtype_name(dtype));
}

template <class T>
double lowest_as_double() {
  if constexpr (std::is_same_v<T, Half>) return -65504.0;
  else if constexpr (std::is_same_v<T, BFloat16>) return -double(BFloat16::to_float(0x7f7f));
  else return double(std::numeric_limits<T>::lowest());
}
template <class T>
double max_as_double() {
  return -lowest_as_double<T>();
}

// update_from / update_to: move the bounds of an integer range inward until
// they survive the trip through T, so no draw rounds onto `to`.
template <class T>
int64_t update_from(int64_t from) {
  int64_t from_plus_1 = int64_t(float(convert_to<T>(from + 1)));
  if (from_plus_1 < from) {
    int64_t magnitude = std::abs(from + 1);
    int n = 0;
    while (magnitude >>= 1) ++n;
    from = from_plus_1 + (int64_t(1) << (n - kDigits<T> + 1));
  }
  return from;
}
template <class T>
int64_t update_to(int64_t to) {
  int64_t to_minus_1 = int64_t(double(convert_to<T>(to - 1)));
  if (to_minus_1 >= to) {
    int64_t magnitude = std::abs(to - 1);
    int n = 0;
    while (magnitude >>= 1) ++n;
    to = to_minus_1 - (int64_t(1) << (n - kDigits<T> + 1));
  }
  return to;
}

void check_from_to_in_range(int64_t from, int64_t to_inclusive, DType dtype) {
  auto check = [&](auto lowest, auto highest) {
    KILN_USER_CHECK(from >= lowest && from <= highest, "random_: from is out of bounds for ", dtype_name(dtype));
    KILN_USER_CHECK(to_inclusive >= lowest && to_inclusive <= highest, "random_: to - 1 is out of bounds for ",
                    dtype_name(dtype));
  };
  if (is_floating(dtype)) {
    dispatch_floating(dtype, "random_", [&]<class T>() { check(lowest_as_double<T>(), max_as_double<T>()); });
  } else if (dtype == DType::Bool) {
    check(int64_t(0), int64_t(1));
  } else {
    dispatch_all(dtype, [&]<class T>() {
      check(int64_t(std::numeric_limits<T>::lowest()), int64_t(std::numeric_limits<T>::max()));
    });
  }
}

}  // namespace

// ---------------------------------------------------------------- public fills

void uniform_(const Tensor& t, double from, double to, CpuGenerator& g) {
  dispatch_floating(t.dtype(), "uniform_", [&]<class T>() {
    const double lowest = lowest_as_double<T>(), highest = max_as_double<T>();
    KILN_USER_CHECK(from >= lowest && from <= highest, "uniform_: from is out of bounds for ", dtype_name(t.dtype()));
    KILN_USER_CHECK(to >= lowest && to <= highest, "uniform_: to is out of bounds for ", dtype_name(t.dtype()));
    KILN_USER_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from, " > to=", to);
    KILN_USER_CHECK(to - from <= highest, "uniform_ expects to-from <= std::numeric_limits<", dtype_name(t.dtype()),
                    ">::max(), but found to=", to, " and from=", from);
    if (nothing_to_fill(t)) return;
    check_no_internal_overlap(t, "uniform_");
    std::lock_guard lock(g.mutex());
    UniformReal<T> uniform(convert_to<T>(from), convert_to<T>(to), vectorized_build());
    fill_serial<T>(t, [&] { return convert_to<T>(uniform(g)); });
  });
}

void normal_(const Tensor& t, double mean, double std, CpuGenerator& g) {
  dispatch_floating(t.dtype(), "normal_", [&]<class T>() {
    KILN_USER_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
    if (nothing_to_fill(t)) return;
    check_no_internal_overlap(t, "normal_");
    std::lock_guard lock(g.mutex());
    const bool vectorized = vectorized_build();
    if (t.numel() >= 16 && t.is_contiguous()) {
      T* data = t.data<T>();
      const T m = convert_to<T>(mean), s = convert_to<T>(std);
      if constexpr (std::is_same_v<T, float>) {
        if (vectorized) return normal_fill(data, t.numel(), g, [&](float* b) { normal_fill_16_avx2(b, m, s); });
      }
      normal_fill(data, t.numel(), g, [&](T* b) { normal_fill_16(b, m, s, vectorized); });
      return;
    }
    fill_serial<T>(t, [&] { return convert_to<T>(normal_double(g, mean, std)); });
  });
}

void random_from_to_(const Tensor& t, int64_t from, int64_t to, CpuGenerator& g) {
  KILN_USER_CHECK(from < to, "random_ expects 'from' to be less than 'to', but got from=", from, " >= to=", to);
  const DType dtype = t.dtype();
  if (is_floating(dtype)) {
    dispatch_floating(dtype, "random_", [&]<class T>() {
      from = update_from<T>(from);
      to = update_to<T>(to);
    });
    KILN_USER_CHECK(from < to, "random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, but got "
                    "from=", from, " >= to=", to);
  }
  check_from_to_in_range(from, to - 1, dtype);
  if (nothing_to_fill(t)) return;
  check_no_internal_overlap(t, "random_");
  std::lock_guard lock(g.mutex());
  const uint64_t range = uint64_t(to) - uint64_t(from);
  dispatch_all(dtype, [&]<class T>() {
    // Only these types take 64 random bits for a range of 2^32 or more.
    constexpr bool wide = std::is_same_v<T, int64_t> || std::is_same_v<T, double> || std::is_same_v<T, float> ||
                          std::is_same_v<T, BFloat16>;
    const bool use_64 = wide && range >= (uint64_t(1) << 32);
    fill_serial<T>(t, [&] {
      uint64_t bits = use_64 ? g.random64() : uint64_t(g.random());
      return convert_to<T>(int64_t(bits % range + uint64_t(from)));
    });
  });
}

void random_int64_full_range_(const Tensor& t, CpuGenerator& g) {
  KILN_USER_CHECK(t.dtype() == DType::Int64, "random_int64_full_range_ expects an int64 tensor");
  if (nothing_to_fill(t)) return;
  check_no_internal_overlap(t, "random_");
  std::lock_guard lock(g.mutex());
  // ATen's uniform_int<int64_t>: 64 random bits modulo max + 1 = 2^63.
  fill_serial<int64_t>(t, [&] { return int64_t(g.random64() & ((uint64_t(1) << 63) - 1)); });
}

void bernoulli_(const Tensor& t, double p, CpuGenerator& g) {
  KILN_USER_CHECK(0 <= p && p <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", p);
  if (nothing_to_fill(t)) return;
  check_no_internal_overlap(t, "bernoulli_");
  std::lock_guard lock(g.mutex());
  dispatch_all(t.dtype(), [&]<class T>() {
    fill_serial<T>(t, [&] { return convert_to<T>(uniform_unit_double(g) < p ? 1.0 : 0.0); });
  });
}

void bernoulli_(const Tensor& t, const Tensor& p, CpuGenerator& g) {
  KILN_USER_CHECK(is_floating(p.dtype()), "bernoulli_: expected a floating-point probability tensor, got ",
                  dtype_name(p.dtype()));
  if (nothing_to_fill(t)) return;
  check_no_internal_overlap(t, "bernoulli_");
  Tensor probs = p.expand(t.sizes());
  std::lock_guard lock(g.mutex());
  dispatch_all(t.dtype(), [&]<class T>() {
    dispatch_floating(probs.dtype(), "bernoulli_", [&]<class P>() {
      T* out = static_cast<T*>(t.raw_data());
      const P* prob = static_cast<const P*>(probs.raw_data());
      for_each_element<2>(t.sizes(), {&t.strides(), &probs.strides()}, [&](const std::array<int64_t, 2>& off) {
        // A double p compares in double; every other p in float.
        bool hit;
        if constexpr (std::is_same_v<P, double>) {
          double pv = prob[off[1]];
          KILN_USER_CHECK(pv >= 0 && pv <= 1, "bernoulli_: expected 0 <= p <= 1, got p=", pv);
          hit = uniform_unit_double(g) < pv;
        } else {
          float pv = float(prob[off[1]]);
          KILN_USER_CHECK(pv >= 0 && pv <= 1, "bernoulli_: expected 0 <= p <= 1, got p=", pv);
          hit = uniform_unit_float(g) < pv;
        }
        out[off[0]] = convert_to<T>(hit ? 1.0f : 0.0f);
      });
    });
  });
}

void exponential_(const Tensor& t, double lambd, CpuGenerator& g) {
  dispatch_floating(t.dtype(), "exponential_", [&]<class T>() {
    KILN_USER_CHECK(lambd > 0.0, "exponential_ expects lambda > 0.0, but found lambda=", lambd);
    if (nothing_to_fill(t)) return;
    check_no_internal_overlap(t, "exponential_");
    std::lock_guard lock(g.mutex());
    fill_serial<T>(t, [&] { return convert_to<T>(-1.0 / lambd * std::log1p(-uniform_unit_double(g))); });
  });
}

void multinomial_with_replacement(const Tensor& probs, int64_t n_sample, const Tensor& result, CpuGenerator& g) {
  dispatch_floating(probs.dtype(), "multinomial", [&]<class T>() {
    // The 16-bit floats accumulate in float, the others in their own type.
    using Acc = std::conditional_t<is_reduced_v<T>, float, T>;
    std::lock_guard lock(g.mutex());
    const int64_t n_categories = probs.sizes().back();
    const int64_t n_dist = probs.dim() > 1 ? probs.sizes()[0] : 1;
    const int64_t p_row = probs.dim() > 1 ? probs.strides()[0] : 0, p_col = probs.strides().back();
    const int64_t r_row = result.dim() > 1 ? result.strides()[0] : 0, r_col = result.strides().back();
    const T* p = probs.data<T>();
    int64_t* out = result.data<int64_t>();
    std::vector<Acc> cum(static_cast<size_t>(n_categories));
    for (int64_t i = 0; i < n_dist; ++i) {
      Acc sum = 0;
      for (int64_t j = 0; j < n_categories; ++j) {
        Acc v = Acc(p[i * p_row + j * p_col]);
        KILN_USER_CHECK(v >= 0, "invalid multinomial distribution (encountering probability entry < 0)");
        KILN_USER_CHECK(std::isfinite(v), "invalid multinomial distribution (encountering probability entry = infinity or NaN)");
        sum += v;
        cum[size_t(j)] = sum;
      }
      KILN_USER_CHECK(sum > 0, "invalid multinomial distribution (sum of probabilities <= 0)");
      for (Acc& c : cum) c /= sum;
      // The last bucket ends at exactly 1 whatever the rounding.
      cum.back() = 1;
      for (int64_t j = 0; j < n_sample; ++j) {
        double u = uniform_unit_double(g);
        int64_t left = 0, right = n_categories;
        while (right - left > 0) {
          int64_t mid = left + (right - left) / 2;
          if (double(cum[size_t(mid)]) < u) left = mid + 1;
          else right = mid;
        }
        out[i * r_row + j * r_col] = left;
      }
    }
  });
}

Tensor randperm(int64_t n, DType dtype, CpuGenerator& g) {
  KILN_USER_CHECK(n >= 0, "randperm: n must be non-negative, got ", n);
  KILN_USER_CHECK(dtype != DType::Bool, "randperm: \"randperm\" not implemented for 'Bool'");
  // Beyond these, consecutive integers stop being representable.
  if (dtype == DType::Float16) KILN_USER_CHECK(n <= 2049, "n cannot be greater than 2049 for Half type.");
  if (dtype == DType::Float32)
    KILN_USER_CHECK(n <= (int64_t(1) << 24) + 1, "n cannot be greater than 2^24+1 for Float type.");
  if (dtype == DType::Float64)
    KILN_USER_CHECK(n <= (int64_t(1) << 53) + 1, "n cannot be greater than 2^53+1 for Double type.");
  Tensor result = Tensor::empty({n}, dtype);
  std::lock_guard lock(g.mutex());
  dispatch_all(dtype, [&]<class T>() {
    T* r = result.data<T>();
    if (n < int64_t(std::numeric_limits<uint32_t>::max() / 20)) {
      // Swap position i with a uniform pick from [i, n), 32 random bits each.
      for (int64_t i = 0; i < n; ++i) r[i] = convert_to<T>(i);
      for (int64_t i = 0; i < n - 1; ++i) {
        int64_t z = int64_t(g.random()) % (n - i);
        std::swap(r[i], r[z + i]);
      }
      return;
    }
    // Inside-out Fisher-Yates with 64-bit draws, so huge n is not skewed.
    for (int64_t i = 0; i < n; ++i) {
      int64_t z = int64_t(g.random64() % uint64_t(i + 1));
      r[i] = convert_to<T>(i);
      r[i] = r[z];
      r[z] = convert_to<T>(i);
    }
  });
  return result;
}

}  // namespace kiln
