// Spatial transformers: affine_grid_generator (F.affine_grid) with its
// backward, and grid_sampler_2d (F.grid_sample) with its backward, computing
// what PyTorch's CPU kernels compute, bit for bit.
//
// The sampler follows ATen's vectorized kernel (cpu/GridSamplerKernel.cpp),
// which is what runs for float and double, not the scalar fallback in
// GridSampler.cpp. Two properties of that build decide the last bits, and both
// were measured against PyTorch rather than read off the source:
// - it is compiled with FMA contraction: the unnormalization
//   (g + 1) * s - 0.5, the four-corner sum and the grid-gradient sums are
//   fused multiply-adds (which product gets fused is the compiler's choice;
//   the forms below are the ones that reproduce PyTorch's numbers);
// - its backward scatters input gradients corner by corner over groups of
//   AVX2 lanes (8 floats, 4 doubles): the nw weights of a group land first,
//   then ne, sw, se, so additions into one input element happen in that order.
// Bicubic sampling was measured the same way: which of its multiply-adds are
// fused is written out where it is computed. 5-D inputs (grid_sampler_3d)
// are refused.
#include "core/ops/grid_sample.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>

#include "core/ops/kernel_util.h"
#include "core/ops/pointwise_kernels.h"
#include "core/tensor/parallel.h"

namespace kiln {

void check_grid_sampler_common(const Tensor& input, const Tensor& grid) {
  KILN_USER_CHECK(input.dim() >= 1 && grid.dim() >= 1, "grid_sampler(): expected input and grid to have dimensions, "
                  "but got input with sizes ", shape_str(input.sizes()), " and grid with sizes ", shape_str(grid.sizes()));
  KILN_USER_CHECK(input.size(0) == grid.size(0),
                  "grid_sampler(): expected grid and input to have same batch size, but got input with sizes ",
                  shape_str(input.sizes()), " and grid with sizes ", shape_str(grid.sizes()));
  KILN_USER_CHECK(grid.size(-1) == input.dim() - 2, "grid_sampler(): expected grid to have size ", input.dim() - 2,
                  " in last dimension, but got grid with sizes ", shape_str(grid.sizes()));
  for (int64_t i = 2; i < input.dim(); ++i)
    KILN_USER_CHECK(input.size(i) > 0,
                    "grid_sampler(): expected input to have non-empty spatial dimensions, but input has sizes ",
                    shape_str(input.sizes()), " with dimension ", i, " being empty");
}

void check_grid_sampler_rank(const Tensor& input, const Tensor& grid, int64_t dims) {
  KILN_USER_CHECK(input.dim() == dims && input.dim() == grid.dim(), "grid_sampler(): expected ", dims,
                  "D input and grid with same number of dimensions, but got input with sizes ",
                  shape_str(input.sizes()), " and grid with sizes ", shape_str(grid.sizes()));
}

namespace {

enum class Interp : int64_t { Bilinear = 0, Nearest = 1, Bicubic = 2 };
enum class Padding : int64_t { Zeros = 0, Border = 1, Reflection = 2 };

// ---------------------------------------------------------------- arguments

struct Sampler {
  Tensor input, grid;
  Interp interp = Interp::Bilinear;
  Padding padding = Padding::Zeros;
  bool align = false;
};

// grid_sampler_2d_cpu's checks in its order, then Kiln's: the modes must be
// ones ATen's kernel has (it switches on them and leaves the output
// unwritten otherwise).
Sampler sampler_args(const OpArgs& a, size_t first, std::string_view kernel) {
  Sampler s;
  s.input = a.tensor(first);
  s.grid = a.tensor(first + 1);
  check_grid_sampler_common(s.input, s.grid);
  check_grid_sampler_rank(s.input, s.grid, 4);
  DType t = s.input.dtype();
  KILN_USER_CHECK(t == DType::Float32 || t == DType::Float64, kernel, " not implemented for ",
                  pointwise::aten_type_name(t));
  KILN_USER_CHECK(s.grid.dtype() == t, "expected scalar type ", pointwise::aten_type_name(t), " but found ",
                  pointwise::aten_type_name(s.grid.dtype()));
  int64_t mode = a.integer(first + 2), pad = a.integer(first + 3);
  KILN_USER_CHECK(mode >= 0 && mode <= 2, "grid_sampler_2d: interpolation_mode must be 0 (bilinear), 1 (nearest) or ",
                  "2 (bicubic), got ", mode);
  KILN_USER_CHECK(pad >= 0 && pad <= 2, "grid_sampler_2d: padding_mode must be 0 (zeros), 1 (border) or ",
                  "2 (reflection), got ", pad);
  s.interp = Interp(mode);
  s.padding = Padding(pad);
  s.align = a.boolean(first + 4);
  return s;
}

// ---------------------------------------------------------------- positions

// ATen's Vectorized maximum/minimum propagate NaN; _mm256_max_ps/min_ps
// (what clamp_min/clamp_max are) return their second operand on NaN.
template <class T>
T nan_max(T a, T b) {
  return std::isnan(a) ? a : std::isnan(b) ? b : (a > b ? a : b);
}
template <class T>
T nan_min(T a, T b) {
  return std::isnan(a) ? a : std::isnan(b) ? b : (a < b ? a : b);
}

// One spatial dim of the input (ComputeLocation): grid values in [-1, 1] to
// pixel positions, with the padding mode's folding into [0, size - 1].
template <class T>
struct Axis {
  Padding padding;
  bool align;
  T max_val, scale, low, twice_span;
  bool empty;  // align_corners reflection of one pixel: every position is 0

  Axis(int64_t size, Padding p, bool align_corners)
      : padding(p),
        align(align_corners),
        max_val(T(size - 1)),
        scale(align_corners ? T(size - 1) / T(2) : T(size) / T(2)),
        low(align_corners ? T(0) : T(-0.5)),
        twice_span(align_corners ? T(size - 1) * T(2) : T(size) * T(2)),
        empty(align_corners ? size <= 1 : size <= 0) {}

  T unnormalize(T g) const { return align ? (g + T(1)) * scale : std::fma(g + T(1), scale, T(-0.5)); }

  // clamp_max(max, clamp_min(0, v)): NaN becomes 0.
  T clip(T v) const {
    T lo = v > T(0) ? v : T(0);
    return lo < max_val ? lo : max_val;
  }

  T reflect(T v) const {
    if (align && empty) return T(0);
    T a = std::abs(align ? v : v - low);
    T flips = std::trunc(a / twice_span);
    T extra = std::fma(-flips, twice_span, a);
    T r = nan_min(extra, twice_span - extra);
    return align ? r : r + low;
  }

  T apply(T g) const {
    T v = unnormalize(g);
    if (padding == Padding::Border) return clip(v);
    if (padding == Padding::Reflection) return clip(reflect(v));
    return v;
  }

  // The clip with its derivative: 0 at and beyond the borders (NaN passes
  // through here, unlike in clip(): this is what the backward kernel does).
  std::pair<T, bool> clip_inside(T v) const {
    T lo = nan_max(v, T(0));
    T res = nan_min(lo, max_val);
    bool inside = (std::isnan(lo) || lo != T(0)) && (std::isnan(res) || res != max_val);
    return {res, inside};
  }

  // apply_get_grad: the position and d position / d grid value.
  std::pair<T, T> apply_with_grad(T g) const {
    T v = unnormalize(g);
    if (padding == Padding::Zeros) return {v, scale};
    if (padding == Padding::Border) {
      auto [c, inside] = clip_inside(v);
      return {c, inside ? scale : T(0)};
    }
    if (align && empty) return {T(0), T(0)};
    T shifted = align ? v : v - low;
    bool negative = shifted < T(0);
    T a = std::abs(shifted);
    T flips = std::trunc(a / twice_span);
    T extra = std::fma(-flips, twice_span, a);
    T reflected = twice_span - extra;
    bool one_more_flip = extra > reflected;
    T r = one_more_flip ? reflected : extra;
    if (!align) r = r + low;
    T grad = (one_more_flip != negative ? T(-1) : T(1)) * scale;
    auto [c, inside] = clip_inside(r);
    return {c, inside ? grad : T(0)};
  }
};

// ATen converts floored positions to int32 (int64 for double) lanes; values
// out of that range (and NaN) become the most negative integer, which every
// bounds check rejects.
template <class T>
int64_t to_index(T v) {
  constexpr T limit = sizeof(T) == 4 ? T(2147483648.0) : T(9223372036854775808.0);
  return std::abs(v) < limit ? int64_t(v) : std::numeric_limits<int64_t>::min() / 2;
}

// The four corners around a position, their weights, and which lie inside.
template <class T>
struct Bilinear {
  T w{}, e{}, n{}, s{};      // distances to the west, east, north and south sides
  T nw{}, ne{}, sw{}, se{};  // corner weights
  int64_t ix = 0, iy = 0;    // the north-west corner
  std::array<bool, 4> in{};  // nw, ne, sw, se inside the input

  Bilinear() = default;
  Bilinear(T x, T y, int64_t H, int64_t W) {
    T xw = std::floor(x), yn = std::floor(y);
    w = x - xw;
    e = T(1) - w;
    n = y - yn;
    s = T(1) - n;
    nw = s * e;
    ne = s * w;
    sw = n * e;
    se = n * w;
    ix = to_index(xw);
    iy = to_index(yn);
    bool west = ix >= 0 && ix < W, east = ix + 1 >= 0 && ix + 1 < W;
    bool north = iy >= 0 && iy < H, south = iy + 1 >= 0 && iy + 1 < H;
    in = {west && north, east && north, west && south, east && south};
  }
  int64_t offset(int corner, int64_t W) const { return (iy + corner / 2) * W + ix + corner % 2; }
  T weight(int corner) const { return corner == 0 ? nw : corner == 1 ? ne : corner == 2 ? sw : se; }
};

// AVX2 lanes of ATen's vectorized loops, which group the backward's scatters.
template <class T>
constexpr int64_t kLanes = sizeof(T) == 4 ? 8 : 4;

// ---------------------------------------------------------------- bicubic

// Keys' cubic convolution (A = -0.75) at the four taps around t in [0, 1),
// at distances t + 1, t, 1 - t and 2 - t. In ATen's build the outer pieces'
// multiply-adds are fused with the products of A, which are exact, so they
// round as unfused ones; the inner pieces fuse with their sums.
template <class T>
std::array<T, 4> cubic_coefficients(T t) {
  const T A = T(-0.75);
  auto outer = [&](T x) { return ((A * x - T(5) * A) * x + T(8) * A) * x - T(4) * A; };
  auto inner = [&](T x) { return std::fma(std::fma(A + T(2), x, -(A + T(3))) * x, x, T(1)); };
  return {outer(t + T(1)), inner(t), inner(T(1) - t), outer(T(2) - t)};
}

// Their derivatives with respect to the distance (the backward's), unfused
// for the same reason.
template <class T>
std::array<T, 4> cubic_coefficient_grads(T t) {
  const T A = T(-0.75);
  T x0 = T(-1) - t, x1 = T(0) - t, x2 = T(1) - t, x3 = T(2) - t;
  return {((T(-3) * A) * x0 - T(10) * A) * x0 - T(8) * A, ((T(-3) * (A + T(2))) * x1 - T(2) * (A + T(3))) * x1,
          ((T(3) * (A + T(2))) * x2 - T(2) * (A + T(3))) * x2, ((T(3) * A) * x3 - T(10) * A) * x3 + T(8) * A};
}

// The 4 x 4 taps around an unpadded position: tap (i, j) sits at x - 1 + i,
// y - 1 + j folded by the padding mode, or outside the input (zeros).
template <class T>
struct Bicubic {
  std::array<T, 4> cx{}, cy{}, gx{}, gy{};  // coefficients along x, y; their derivatives
  std::array<int64_t, 4> col{}, row{};      // tap columns and rows (-1: outside)

  Bicubic() = default;
  Bicubic(const Axis<T>& ax, const Axis<T>& ay, T x, T y, int64_t H, int64_t W) {
    T ix = std::floor(x), iy = std::floor(y);
    cx = cubic_coefficients(x - ix);
    cy = cubic_coefficients(y - iy);
    gx = cubic_coefficient_grads(x - ix);
    gy = cubic_coefficient_grads(y - iy);
    for (int k = 0; k < 4; ++k) {
      col[size_t(k)] = tap(ax, ix + T(k - 1), W);
      row[size_t(k)] = tap(ay, iy + T(k - 1), H);
    }
  }
  static int64_t tap(const Axis<T>& a, T v, int64_t size) {
    if (a.padding == Padding::Border) v = a.clip(v);
    if (a.padding == Padding::Reflection) v = a.clip(a.reflect(v));
    int64_t i = to_index(v);
    return i >= 0 && i < size ? i : -1;
  }
  T value(const T* plane, int i, int j, int64_t W) const {
    int64_t c = col[size_t(i)], r = row[size_t(j)];
    return c >= 0 && r >= 0 ? plane[r * W + c] : T(0);
  }
  // Along x in each of the four rows (the first two products fused, the rest
  // rounded), then along y (a chain of fused multiply-adds).
  T interpolate(const T* plane, int64_t W) const {
    std::array<T, 4> rows;
    for (int j = 0; j < 4; ++j) {
      T v0 = value(plane, 0, j, W), v1 = value(plane, 1, j, W), v2 = value(plane, 2, j, W), v3 = value(plane, 3, j, W);
      rows[size_t(j)] = std::fma(cx[0], v0, cx[1] * v1) + cx[2] * v2 + cx[3] * v3;
    }
    return std::fma(cy[3], rows[3], std::fma(cy[2], rows[2], std::fma(cy[1], rows[1], cy[0] * rows[0])));
  }
};

// ---------------------------------------------------------------- forward

template <class T>
void sample_forward(const Sampler& s, const Tensor& out) {
  const Tensor x = s.input.contiguous();
  const T* in = x.data<T>();
  const T* gp = s.grid.data<T>();
  T* op = out.data<T>();
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t oH = s.grid.size(1), oW = s.grid.size(2);
  const int64_t gsN = s.grid.stride(0), gsH = s.grid.stride(1), gsW = s.grid.stride(2), gsC = s.grid.stride(3);
  const Axis<T> ax(W, s.padding, s.align), ay(H, s.padding, s.align);
  parallel_for(0, N * oH, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(oW * C, 1)), [&](int64_t lo, int64_t hi) {
    for (int64_t row = lo; row < hi; ++row) {
      const int64_t n = row / oH, h = row % oH;
      const T* plane = in + n * C * H * W;
      T* dst = op + n * C * oH * oW + h * oW;
      for (int64_t w = 0; w < oW; ++w) {
        const T* g = gp + n * gsN + h * gsH + w * gsW;
        if (s.interp == Interp::Bicubic) {
          Bicubic<T> q(ax, ay, ax.unnormalize(g[0]), ay.unnormalize(g[gsC]), H, W);
          for (int64_t c = 0; c < C; ++c) dst[c * oH * oW + w] = q.interpolate(plane + c * H * W, W);
          continue;
        }
        T x_pos = ax.apply(g[0]), y_pos = ay.apply(g[gsC]);
        if (s.interp == Interp::Nearest) {
          int64_t ix = to_index(std::nearbyint(x_pos)), iy = to_index(std::nearbyint(y_pos));
          bool inside = ix >= 0 && ix < W && iy >= 0 && iy < H;
          for (int64_t c = 0; c < C; ++c) dst[c * oH * oW + w] = inside ? plane[(c * H + iy) * W + ix] : T(0);
          continue;
        }
        Bilinear<T> b(x_pos, y_pos, H, W);
        for (int64_t c = 0; c < C; ++c) {
          const T* p = plane + c * H * W;
          std::array<T, 4> v;
          for (int k = 0; k < 4; ++k) v[size_t(k)] = b.in[size_t(k)] ? p[b.offset(k, W)] : T(0);
          dst[c * oH * oW + w] = std::fma(v[3], b.se, std::fma(v[2], b.sw, std::fma(v[1], b.ne, v[0] * b.nw)));
        }
      }
    }
  });
}

// ---------------------------------------------------------------- backward

// geometry_is_contiguous: strides of size-1 dims do not matter.
bool geometry_contiguous(std::initializer_list<int64_t> sizes, std::initializer_list<int64_t> strides) {
  std::vector<int64_t> sz(sizes), st(strides);
  int64_t expected = 1;
  for (size_t i = sz.size(); i-- > 0;) {
    if (sz[i] == 0) return true;
    if (sz[i] != 1 && st[i] != expected) return false;
    expected *= sz[i];
  }
  return true;
}

// grid_sample_2d_grid_slice_iterator's groups of lanes: over the flattened
// H * W positions when the grid slice allows it, else row by row.
template <class T, class Fn>
void for_lane_groups(const Tensor& grid, const Fn& fn) {
  const int64_t oH = grid.size(1), oW = grid.size(2);
  const int64_t sH = grid.stride(1), sW = grid.stride(2), sC = grid.stride(3);
  bool flat = geometry_contiguous({oH, oW, 2}, {sH, sW, sC}) ||
              ((sW == 1 || oW == 1) && geometry_contiguous({oH, oW}, {sH, sW}));
  const int64_t L = kLanes<T>;
  if (flat) {
    for (int64_t p = 0; p < oH * oW; p += L) fn(p, std::min(L, oH * oW - p));
    return;
  }
  for (int64_t h = 0; h < oH; ++h)
    for (int64_t w = 0; w < oW; w += L) fn(h * oW + w, std::min(L, oW - w));
}

template <class T>
void sample_backward(const Sampler& s, const Tensor& grad_out, const Tensor& grad_in, const Tensor& grad_grid) {
  const Tensor x = s.input.contiguous(), go = grad_out.contiguous();
  const T* in = x.data<T>();
  const T* gop = go.data<T>();
  const T* gp = s.grid.data<T>();
  T* gin = grad_in.defined() ? grad_in.data<T>() : nullptr;
  T* ggp = grad_grid.data<T>();
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t oH = s.grid.size(1), oW = s.grid.size(2), P = oH * oW;
  const int64_t gsN = s.grid.stride(0), gsH = s.grid.stride(1), gsW = s.grid.stride(2), gsC = s.grid.stride(3);
  const Axis<T> ax(W, s.padding, s.align), ay(H, s.padding, s.align);
  constexpr int64_t L = kLanes<T>;
  auto grid_at = [&](int64_t n, int64_t p) { return gp + n * gsN + (p / oW) * gsH + (p % oW) * gsW; };
  // Each batch element writes its own slices of both gradients.
  parallel_for(0, N, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t n = lo; n < hi; ++n) {
      const T* plane = in + n * C * H * W;
      const T* gplane = gop + n * C * P;
      T* giplane = gin ? gin + n * C * H * W : nullptr;
      T* gg = ggp + n * P * 2;
      for_lane_groups<T>(s.grid, [&](int64_t first, int64_t len) {
        if (s.interp == Interp::Nearest) {
          if (giplane) {
            std::array<int64_t, L> off{};
            std::array<bool, L> inside{};
            for (int64_t l = 0; l < len; ++l) {
              const T* g = grid_at(n, first + l);
              int64_t ix = to_index(std::nearbyint(ax.apply(g[0]))), iy = to_index(std::nearbyint(ay.apply(g[gsC])));
              inside[size_t(l)] = ix >= 0 && ix < W && iy >= 0 && iy < H;
              off[size_t(l)] = inside[size_t(l)] ? iy * W + ix : 0;
            }
            for (int64_t c = 0; c < C; ++c)
              for (int64_t l = 0; l < len; ++l)
                if (inside[size_t(l)]) giplane[c * H * W + off[size_t(l)]] += gplane[c * P + first + l];
          }
          for (int64_t l = 0; l < len; ++l) gg[(first + l) * 2] = gg[(first + l) * 2 + 1] = T(0);
          return;
        }
        if (s.interp == Interp::Bicubic) {
          std::array<Bicubic<T>, L> q{};
          std::array<T, L> gx{}, gy{};
          for (int64_t l = 0; l < len; ++l) {
            const T* g = grid_at(n, first + l);
            q[size_t(l)] = Bicubic<T>(ax, ay, ax.unnormalize(g[0]), ay.unnormalize(g[gsC]), H, W);
          }
          // Per channel, per tap: the scatters of the group's lanes, then the
          // grid-gradient terms, as ATen's loop orders them.
          for (int64_t c = 0; c < C; ++c) {
            const T* p = plane + c * H * W;
            const T* gout = gplane + c * P + first;
            for (int i = 0; i < 4; ++i)
              for (int j = 0; j < 4; ++j) {
                if (giplane)
                  for (int64_t l = 0; l < len; ++l) {
                    const Bicubic<T>& t = q[size_t(l)];
                    int64_t col = t.col[size_t(i)], row = t.row[size_t(j)];
                    if (col >= 0 && row >= 0) giplane[c * H * W + row * W + col] += gout[l] * t.cx[size_t(i)] * t.cy[size_t(j)];
                  }
                for (int64_t l = 0; l < len; ++l) {
                  const Bicubic<T>& t = q[size_t(l)];
                  T vg = t.value(p, i, j, W) * gout[l];
                  gx[size_t(l)] = std::fma(-(vg * t.gx[size_t(i)]), t.cy[size_t(j)], gx[size_t(l)]);
                  gy[size_t(l)] = std::fma(-(vg * t.gy[size_t(j)]), t.cx[size_t(i)], gy[size_t(l)]);
                }
              }
          }
          for (int64_t l = 0; l < len; ++l) {
            gg[(first + l) * 2] = gx[size_t(l)] * ax.scale;
            gg[(first + l) * 2 + 1] = gy[size_t(l)] * ay.scale;
          }
          return;
        }
        std::array<Bilinear<T>, L> b{};
        std::array<T, L> mx{}, my{}, gx{}, gy{};
        for (int64_t l = 0; l < len; ++l) {
          const T* g = grid_at(n, first + l);
          auto [xp, xm] = ax.apply_with_grad(g[0]);
          auto [yp, ym] = ay.apply_with_grad(g[gsC]);
          // ATen's kernel then scatters and gathers at offsets computed from
          // NaN: out of bounds, undefined behaviour with no number to match.
          KILN_USER_CHECK(s.padding == Padding::Zeros || !(std::isnan(xp) || std::isnan(yp)),
                          "grid_sampler_2d_backward: the grid holds a value (NaN, or infinite for reflection) that "
                          "gives no sampling position; PyTorch's CPU kernel then reads and writes out of bounds "
                          "with padding_mode='", s.padding == Padding::Border ? "border" : "reflection",
                          "', so Kiln refuses it");
          b[size_t(l)] = Bilinear<T>(xp, yp, H, W);
          mx[size_t(l)] = xm;
          my[size_t(l)] = ym;
        }
        for (int64_t c = 0; c < C; ++c) {
          const T* p = plane + c * H * W;
          const T* gout = gplane + c * P + first;
          if (giplane) {
            T* dst = giplane + c * H * W;
            for (int k = 0; k < 4; ++k)
              for (int64_t l = 0; l < len; ++l) {
                const Bilinear<T>& q = b[size_t(l)];
                if (q.in[size_t(k)]) dst[q.offset(k, W)] += q.weight(k) * gout[l];
              }
          }
          for (int64_t l = 0; l < len; ++l) {
            const Bilinear<T>& q = b[size_t(l)];
            std::array<T, 4> v;
            for (int k = 0; k < 4; ++k) v[size_t(k)] = q.in[size_t(k)] ? p[q.offset(k, W)] : T(0);
            T tx = std::fma(v[3] - v[2], q.n, (v[1] - v[0]) * q.s);
            T ty = std::fma(v[3] - v[1], q.w, (v[2] - v[0]) * q.e);
            gx[size_t(l)] = std::fma(tx, gout[l], gx[size_t(l)]);
            gy[size_t(l)] = std::fma(ty, gout[l], gy[size_t(l)]);
          }
        }
        for (int64_t l = 0; l < len; ++l) {
          gg[(first + l) * 2] = gx[size_t(l)] * mx[size_t(l)];
          gg[(first + l) * 2 + 1] = gy[size_t(l)] * my[size_t(l)];
        }
      });
    }
  });
}

// ---------------------------------------------------------------- sampler ops

ValueList sampler_meta(const OpArgs& a) {
  Sampler s = sampler_args(a, 0, "grid_sampler_2d_cpu");
  return one(Tensor::meta({s.input.size(0), s.input.size(1), s.grid.size(1), s.grid.size(2)}, s.input.dtype()));
}

void sampler_compute(const OpArgs& a, const std::vector<Tensor>& outs) {
  Sampler s = sampler_args(a, 0, "grid_sampler_2d_cpu");
  if (outs[0].numel() == 0) return;
  dispatch_float(s.input.dtype(), "grid_sampler_2d_cpu", [&]<class T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) sample_forward<T>(s, outs[0]);
  });
}

struct BackwardCall {
  Sampler s;
  Tensor grad_output;
  bool input_grad = true;
};

BackwardCall backward_args(const OpArgs& a) {
  BackwardCall b;
  b.s = sampler_args(a, 1, "grid_sampler_2d_backward_cpu");
  b.grad_output = a.tensor(0);
  Shape want{b.s.input.size(0), b.s.input.size(1), b.s.grid.size(1), b.s.grid.size(2)};
  KILN_USER_CHECK(b.grad_output.sizes() == want, "grid_sampler(): expected grad_output to have sizes ",
                  shape_str(want), " but got grad_output with sizes ", shape_str(b.grad_output.sizes()));
  KILN_USER_CHECK(b.grad_output.dtype() == b.s.input.dtype(), "expected scalar type ",
                  pointwise::aten_type_name(b.s.input.dtype()), " but found ",
                  pointwise::aten_type_name(b.grad_output.dtype()));
  const ValueList& mask = a[6].to_list();
  KILN_USER_CHECK(mask.size() == 2, "grid_sampler_2d_backward: output_mask must have 2 entries, got ", mask.size());
  // The grid's gradient is computed whatever output_mask[1] says, as ATen does.
  b.input_grad = mask[0].to_bool();
  return b;
}

ValueList sampler_backward_meta(const OpArgs& a) {
  BackwardCall b = backward_args(a);
  DType t = b.s.input.dtype();
  Value gi = b.input_grad ? Value(Tensor::meta(b.s.input.sizes(), t)) : Value();
  return {gi, Value(Tensor::meta(b.s.grid.sizes(), t))};
}

ValueList sampler_backward_cpu(const OpArgs& a) {
  if (any_meta(a)) return sampler_backward_meta(a);
  BackwardCall b = backward_args(a);
  DType t = b.s.input.dtype();
  Tensor gi = b.input_grad ? Tensor::zeros(b.s.input.sizes(), t) : Tensor();
  Tensor gg = Tensor::zeros(b.s.grid.sizes(), t);
  if (b.grad_output.numel() > 0) {
    dispatch_float(t, "grid_sampler_2d_backward_cpu", [&]<class T>() {
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) sample_backward<T>(b.s, b.grad_output, gi, gg);
    });
  }
  return {gi.defined() ? Value(gi) : Value(), Value(gg)};
}

// ---------------------------------------------------------------- affine grids

struct AffineSize {
  int64_t N = 0, H = 0, W = 0;
};

// affine_grid_generator's checks, and those of the bmm and view its ATen
// kernel runs (a wrong theta fails there, with their messages).
AffineSize affine_size(const Tensor& theta, const std::vector<int64_t>& size, std::string_view op) {
  KILN_USER_CHECK(size.size() == 4 || size.size() == 5,
                  "AffineGridGenerator needs 4d (spatial) or 5d (volumetric) inputs.");
  KILN_USER_CHECK(size.size() == 4, op, ": 5-D sizes (volumetric grids, F.affine_grid with 3-D affine matrices) are "
                                        "not supported by Kiln");
  KILN_USER_CHECK(is_floating(theta.dtype()), op, ": theta of dtype ", dtype_name(theta.dtype()),
                  " is not supported by Kiln (ATen's integer path truncates its base grid); use a floating-point theta");
  AffineSize s{size[0], size[2], size[3]};
  Shape base{s.N, s.H, s.W, 3};
  for (int64_t d : base)
    KILN_USER_CHECK(d >= 0, "Trying to create tensor with negative dimension ", d, ": ", shape_str(base));
  return s;
}

// The grid at align_corners positions along one dim (linspace_from_neg_one):
// -1..1, pulled in by (n - 1) / n without align_corners, 0 for one step.
Tensor linspace_from_neg_one(DType t, int64_t steps, bool align) {
  if (steps <= 1) return Tensor::zeros({}, t);
  Tensor r = invoke_tensor("aten::linspace", {Value(int64_t(-1)), Value(int64_t(1)), Value(steps)}, {{"dtype", Value(t)}});
  if (!align) {
    r = invoke_tensor("aten::mul.Scalar", {Value(r), Value(steps - 1)});
    r = invoke_tensor("aten::div.Scalar", {Value(r), Value(steps)});
  }
  return r;
}

// [N, H, W, 3]: x, y, 1 at every output position.
Tensor base_grid(DType t, const AffineSize& s, bool align) {
  Tensor base = Tensor::empty({s.N, s.H, s.W, 3}, t);
  base.select(-1, 0).copy_(linspace_from_neg_one(t, s.W, align).expand({s.N, s.H, s.W}));
  Tensor ys = linspace_from_neg_one(t, s.H, align);
  base.select(-1, 1).copy_((ys.dim() ? ys.unsqueeze(-1) : ys).expand({s.N, s.H, s.W}));
  base.select(-1, 2).fill_(Scalar(1.0));
  return base;
}

ValueList affine_meta(const OpArgs& a) {
  const Tensor& theta = a.tensor(0);
  AffineSize s = affine_size(theta, a.ints(1), "affine_grid_generator");
  KILN_USER_CHECK(theta.dim() == 3, "batch2 must be a 3D tensor");
  KILN_USER_CHECK(theta.size(0) == s.N && theta.size(2) == 3, "Expected size for first two dimensions of batch2 tensor to be: [",
                  s.N, ", 3] but got: [", theta.size(0), ", ", theta.size(2), "].");
  KILN_USER_CHECK(theta.size(1) == 2, "shape '", shape_str(Shape{s.N, s.H, s.W, 2}), "' is invalid for input of size ",
                  s.N * s.H * s.W * theta.size(1));
  return one(Tensor::meta({s.N, s.H, s.W, 2}, theta.dtype()));
}

// base_grid.view(N, H*W, 3).bmm(theta.transpose(1, 2)): through Kiln's bmm,
// so the products round as that op's do.
void affine_compute(const OpArgs& a, const std::vector<Tensor>& outs) {
  const Tensor& theta = a.tensor(0);
  AffineSize s = affine_size(theta, a.ints(1), "affine_grid_generator");
  Tensor base = base_grid(theta.dtype(), s, a.boolean(2)).view({s.N, s.H * s.W, 3});
  Tensor grid = invoke_tensor("aten::bmm", {Value(base), Value(theta.transpose(1, 2))});
  outs[0].copy_(grid.view({s.N, s.H, s.W, 2}));
}

// The transpose of the map above: base^T @ grad, returned transposed (a
// [N, 2, 3] view of a [N, 3, 2] result, strides and all, as ATen's is).
ValueList affine_backward_meta(const OpArgs& a) {
  const Tensor& grad = a.tensor(0);
  AffineSize s = affine_size(grad, a.ints(1), "affine_grid_generator_backward");
  KILN_USER_CHECK(grad.sizes() == (Shape{s.N, s.H, s.W, 2}), "affine_grid_generator_backward: expected grad of size ",
                  shape_str(Shape{s.N, s.H, s.W, 2}), ", but got ", shape_str(grad.sizes()));
  return one(Tensor::meta_strided({s.N, 2, 3}, {6, 1, 2}, grad.dtype()));
}

void affine_backward_compute(const OpArgs& a, const std::vector<Tensor>& outs) {
  const Tensor& grad = a.tensor(0);
  AffineSize s = affine_size(grad, a.ints(1), "affine_grid_generator_backward");
  Tensor base = base_grid(grad.dtype(), s, a.boolean(2)).view({s.N, s.H * s.W, 3});
  Tensor g = invoke_tensor("aten::bmm", {Value(base.transpose(1, 2)), Value(grad.reshape({s.N, s.H * s.W, 2}))});
  outs[0].copy_(g.transpose(1, 2));
}

}  // namespace

void register_grid_sample_ops(OpRegistry& r) {
  add_op_with_outputs(r,
                      "aten::grid_sampler_2d(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, "
                      "bool align_corners) -> Tensor",
                      sampler_meta, sampler_compute);
  r.add("aten::grid_sampler_2d_backward(Tensor grad_output, Tensor input, Tensor grid, int interpolation_mode, "
        "int padding_mode, bool align_corners, bool[2] output_mask) -> (Tensor, Tensor)",
        sampler_backward_meta, sampler_backward_cpu);
  add_op_with_outputs(r, "aten::affine_grid_generator(Tensor theta, SymInt[] size, bool align_corners) -> Tensor",
                      affine_meta, affine_compute);
  add_op_with_outputs(r,
                      "aten::affine_grid_generator_backward(Tensor grad, SymInt[] size, bool align_corners) -> Tensor",
                      affine_backward_meta, affine_backward_compute);
}

}  // namespace kiln
