#pragma once
// A float32 sum in the order ATen's CPU kernel takes (SumKernel.cpp's
// cascade_sum, AVX2's 8-float vectors), for the layouts it runs in one thread:
// fewer than GRAIN_SIZE elements, contiguous, the reduced dims one block
// before or after the kept ones. Kiln's own sums accumulate in double, closer
// to the exact sum than ATen's float; a training loop whose stopping test or
// symmetric data hinges on the last bit (a bias gradient, a loss summed over an
// odd function) then takes other steps than PyTorch. Other layouts keep Kiln's.
#include <cstdint>
#include <optional>
#include <vector>

#include "core/ops/reduce_util.h"

namespace kiln::reduction::aten_order {

// multi_row_sum for one lane: four levels of partial sums, each emptied into
// the next every 16 steps (level_power is 4 below 2^20 rows).
inline float cascade(const float* x, int64_t stride, int64_t size) {
  constexpr int64_t levels = 4, power = 4, step = int64_t(1) << power, mask = step - 1;
  float acc[levels] = {};
  int64_t i = 0;
  while (i + step <= size) {
    for (int64_t j = 0; j < step; ++j, ++i) acc[0] += x[i * stride];
    for (int64_t j = 1; j < levels; ++j) {
      acc[j] += acc[j - 1];
      acc[j - 1] = 0.0f;
      if ((i & (mask << (j * power))) != 0) break;
    }
  }
  for (; i < size; ++i) acc[0] += x[i * stride];
  for (int64_t j = 1; j < levels; ++j) acc[0] += acc[j];
  return acc[0];
}

// row_sum: four interleaved lanes (each a cascade), leftovers into lane 0,
// then the lanes in order.
inline float row_sum(const float* x, int64_t stride, int64_t size) {
  constexpr int64_t ilp = 4;
  const int64_t rows = size / ilp;
  float lane[ilp];
  for (int64_t k = 0; k < ilp; ++k) lane[k] = cascade(x + k * stride, ilp * stride, rows);
  for (int64_t i = rows * ilp; i < size; ++i) lane[0] += x[i * stride];
  for (int64_t k = 1; k < ilp; ++k) lane[0] += lane[k];
  return lane[0];
}

inline constexpr int64_t kWidth = 8;  // floats in an AVX2 vector

// One contiguous row: vectorized_inner_sum (row_sum lane by lane over whole
// vectors; the scalar tail first, then the lanes) or, shorter than a vector,
// scalar_inner_sum.
inline float inner_sum(const float* x, int64_t n) {
  if (n < kWidth) return row_sum(x, 1, n) + 0.0f;
  const int64_t vectors = n / kWidth;
  float total = 0.0f;
  for (int64_t k = vectors * kWidth; k < n; ++k) total += x[k];
  for (int64_t lane = 0; lane < kWidth; ++lane) total += row_sum(x + lane, kWidth, vectors);
  return total;
}

// Column j of an n x c block summed down its rows: vectorized_outer_sum (c of
// at least a vector: groups of four vectors take one cascade per column, the
// rest row_sum) or scalar_outer_sum (groups of four columns, then row_sum).
inline float outer_sum(const float* x, int64_t n, int64_t c, int64_t j) {
  const int64_t grouped = c >= kWidth ? c / (4 * kWidth) * (4 * kWidth) : c / 4 * 4;
  return (j < grouped ? cascade(x + j, c, n) : row_sum(x + j, c, n)) + 0.0f;
}

// The sums of a contiguous float32 tensor over `mask`, in output order, when
// ATen's single-threaded order applies; nullopt otherwise.
inline std::optional<std::vector<float>> sums(const Tensor& x, const DimMask& mask) {
  constexpr int64_t kGrain = 32768;  // at::internal::GRAIN_SIZE
  if (x.dtype() != DType::Float32 || !x.is_contiguous() || x.numel() == 0 || x.numel() >= kGrain) return std::nullopt;
  // Non-unit dims in order: reduced first then kept (outer), or kept then reduced (inner).
  int64_t reduced = 1, kept = 1, switches = 0;
  int last = -1;
  bool reduced_first = false;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (x.size(d) == 1) continue;
    const int kind = mask[size_t(d)] ? 1 : 0;
    if (last < 0) reduced_first = kind == 1;
    else if (kind != last) ++switches;
    last = kind;
    (kind ? reduced : kept) *= x.size(d);
  }
  if (switches > 1) return std::nullopt;
  const float* p = x.data<float>();
  std::vector<float> out(static_cast<size_t>(kept));
  if (kept == 1 || !reduced_first) {
    for (int64_t r = 0; r < kept; ++r) out[size_t(r)] = inner_sum(p + r * reduced, reduced);
  } else {
    for (int64_t j = 0; j < kept; ++j) out[size_t(j)] = outer_sum(p, reduced, kept, j);
  }
  return out;
}

}  // namespace kiln::reduction::aten_order
