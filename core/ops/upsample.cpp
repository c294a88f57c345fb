// Upsampling: nearest, nearest-exact and (bi/tri)linear, 1-D to 3-D, and
// bicubic 2-D, with their backwards. Source indices and weights follow
// PyTorch's UpSample.h bit for bit (float32 scales for nearest, weights stored
// in the tensor's dtype), since a one-off index changes a whole output row.
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <type_traits>

#include "core/ops/kernel_util.h"

namespace kiln {
namespace {

constexpr int64_t kMaxSpatial = 3;
using Dims3 = std::array<int64_t, 3>;

enum class Mode { Nearest, NearestExact, Linear, Cubic };

template <class T>
using opmath_t = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

// Spatial sizes right-aligned in 3 slots; leading unused slots are 1 -> 1.
struct Resize {
  int64_t dims = 0, planes = 0;
  Dims3 in{1, 1, 1}, out{1, 1, 1};
  std::array<std::optional<double>, 3> scales;
  bool align_corners = false;
  Shape input_sizes, output_sizes;  // full [N, C, spatial...]
};

// PyTorch's compute_scales_value: the user's scale when positive, else in/out.
template <class S>
S scales_value(std::optional<double> scale, int64_t in, int64_t out) {
  return scale && *scale > 0.0 ? static_cast<S>(1.0 / *scale) : static_cast<S>(in) / static_cast<S>(out);
}

std::vector<int64_t> nearest_table(int64_t in, int64_t out, std::optional<double> scale, bool exact) {
  std::vector<int64_t> idx(static_cast<size_t>(out));
  float s = scales_value<float>(scale, in, out);
  for (int64_t o = 0; o < out; ++o) {
    if (exact) {
      idx[size_t(o)] = std::min(static_cast<int64_t>(std::floor(static_cast<float>((double(o) + 0.5) * s))), in - 1);
    } else if (out == in) {
      idx[size_t(o)] = o;
    } else if (out == 2 * in) {
      idx[size_t(o)] = o >> 1;
    } else {
      idx[size_t(o)] = std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * s)), in - 1);
    }
  }
  return idx;
}

// Two source indices and their weights; weights are stored in T, as PyTorch's
// index/weight tensors are, so float16 weights are rounded before use.
template <class T>
struct Lerp {
  int64_t i0 = 0, i1 = 0;
  T w0{}, w1{};
};

template <class T>
std::vector<Lerp<T>> linear_table(int64_t in, int64_t out, std::optional<double> scale, bool align_corners) {
  using Acc = opmath_t<T>;
  Acc ratio = align_corners ? (out > 1 ? static_cast<Acc>(in - 1) / static_cast<Acc>(out - 1) : Acc(0))
                            : scales_value<Acc>(scale, in, out);
  std::vector<Lerp<T>> tab(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    Lerp<T>& l = tab[size_t(o)];
    if (out == in) {
      l = {o, o, T(1), T(0)};
      continue;
    }
    Acc real = align_corners ? ratio * static_cast<Acc>(o) : ratio * (static_cast<Acc>(o) + Acc(0.5)) - Acc(0.5);
    if (!align_corners && real < Acc(0)) real = Acc(0);
    l.i0 = std::min(static_cast<int64_t>(std::floor(static_cast<float>(real))), in - 1);
    l.i1 = l.i0 + (l.i0 < in - 1 ? 1 : 0);
    l.w1 = T(std::min(std::max(real - static_cast<Acc>(l.i0), Acc(0)), Acc(1)));
    l.w0 = T(Acc(1) - Acc(l.w1));
  }
  return tab;
}

// Interpolates over the active dims K..D-1 of a D-dim op: the outer dim's two
// neighbours, each interpolated over the remaining dims, as PyTorch's
// recursive Interpolate<n> does.
template <int K, int D, class T>
opmath_t<T> lerp_value(const T* src, const std::array<const Lerp<T>*, D>& row, const std::array<int64_t, D>& stride) {
  using Acc = opmath_t<T>;
  const Lerp<T>& l = *row[K];
  if constexpr (K == D - 1) {
    return Acc(src[l.i0 * stride[K]]) * Acc(l.w0) + Acc(src[l.i1 * stride[K]]) * Acc(l.w1);
  } else {
    return lerp_value<K + 1, D, T>(src + l.i0 * stride[K], row, stride) * Acc(l.w0) +
           lerp_value<K + 1, D, T>(src + l.i1 * stride[K], row, stride) * Acc(l.w1);
  }
}

// The adjoint: dst at each neighbour += (product of weights) * g, the weight
// product formed first as in PyTorch's backward kernels.
template <int K, int D, class T, class Acc>
void lerp_scatter(Acc* dst, const std::array<const Lerp<T>*, D>& row, const std::array<int64_t, D>& stride, Acc w,
                  Acc g) {
  const Lerp<T>& l = *row[K];
  if constexpr (K == D - 1) {
    dst[l.i0 * stride[K]] += w * Acc(l.w0) * g;
    dst[l.i1 * stride[K]] += w * Acc(l.w1) * g;
  } else {
    lerp_scatter<K + 1, D, T, Acc>(dst + l.i0 * stride[K], row, stride, w * Acc(l.w0), g);
    lerp_scatter<K + 1, D, T, Acc>(dst + l.i1 * stride[K], row, stride, w * Acc(l.w1), g);
  }
}

// Visits every output position of every plane: fn(plane, od, oh, ow), parallel over rows.
template <class Fn>
void for_outputs(const Resize& r, Fn&& fn) {
  int64_t rows = r.planes * r.out[0] * r.out[1];
  parallel_for(0, rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(r.out[2], 1)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t q = lo; q < hi; ++q) {
                   int64_t c = q / (r.out[0] * r.out[1]), od = (q / r.out[1]) % r.out[0], oh = q % r.out[1];
                   for (int64_t ow = 0; ow < r.out[2]; ++ow) fn(c, od, oh, ow);
                 }
               });
}

std::array<std::vector<int64_t>, 3> nearest_tables(const Resize& r, bool exact) {
  std::array<std::vector<int64_t>, 3> t;
  for (int d = 0; d < 3; ++d) t[size_t(d)] = nearest_table(r.in[size_t(d)], r.out[size_t(d)], r.scales[size_t(d)], exact);
  return t;
}

template <class T>
void nearest_forward(const T* in, T* out, const Resize& r, bool exact) {
  auto t = nearest_tables(r, exact);
  int64_t I = r.in[0] * r.in[1] * r.in[2], H = r.in[1], W = r.in[2];
  for_outputs(r, [&](int64_t c, int64_t od, int64_t oh, int64_t ow) {
    int64_t o = ((c * r.out[0] + od) * r.out[1] + oh) * r.out[2] + ow;
    out[o] = in[c * I + (t[0][size_t(od)] * H + t[1][size_t(oh)]) * W + t[2][size_t(ow)]];
  });
}

// Runs fn(plane) in parallel: a backward scatters within its plane only.
template <class Fn>
void for_planes_backward(const Resize& r, Fn&& fn) {
  int64_t per_plane = r.out[0] * r.out[1] * r.out[2];
  parallel_for(0, r.planes, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(per_plane, 1)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t c = lo; c < hi; ++c) fn(c);
               });
}

template <class T>
void nearest_backward(const T* go, T* gi, const Resize& r, bool exact) {
  auto t = nearest_tables(r, exact);
  int64_t I = r.in[0] * r.in[1] * r.in[2], H = r.in[1], W = r.in[2];
  int64_t O = r.out[0] * r.out[1] * r.out[2];
  for_planes_backward(r, [&](int64_t c) {
    const T* g = go + c * O;
    T* plane = gi + c * I;
    for (int64_t od = 0; od < r.out[0]; ++od)
      for (int64_t oh = 0; oh < r.out[1]; ++oh)
        for (int64_t ow = 0; ow < r.out[2]; ++ow)
          plane[(t[0][size_t(od)] * H + t[1][size_t(oh)]) * W + t[2][size_t(ow)]] +=
              g[(od * r.out[1] + oh) * r.out[2] + ow];
  });
}

// The D active dims' tables and input strides.
template <class T, int D>
struct LinearPlan {
  std::array<std::vector<Lerp<T>>, D> tab;
  std::array<int64_t, D> stride{};
};

template <class T, int D>
LinearPlan<T, D> linear_plan(const Resize& r) {
  LinearPlan<T, D> p;
  Dims3 in_strides{r.in[1] * r.in[2], r.in[2], 1};
  for (int k = 0; k < D; ++k) {
    size_t s = size_t(kMaxSpatial - D + k);
    p.tab[size_t(k)] = linear_table<T>(r.in[s], r.out[s], r.scales[s], r.align_corners);
    p.stride[size_t(k)] = in_strides[s];
  }
  return p;
}

// The table rows that output (od, oh, ow) uses in its D active dims.
template <class T, int D>
std::array<const Lerp<T>*, D> rows_for(const LinearPlan<T, D>& p, int64_t od, int64_t oh, int64_t ow) {
  Dims3 o{od, oh, ow};
  std::array<const Lerp<T>*, D> row;
  for (int k = 0; k < D; ++k) row[size_t(k)] = &p.tab[size_t(k)][size_t(o[size_t(kMaxSpatial - D + k)])];
  return row;
}

template <class T, int D>
void linear_forward(const T* in, T* out, const Resize& r) {
  LinearPlan<T, D> p = linear_plan<T, D>(r);
  int64_t I = r.in[0] * r.in[1] * r.in[2];
  for_outputs(r, [&](int64_t c, int64_t od, int64_t oh, int64_t ow) {
    int64_t o = ((c * r.out[0] + od) * r.out[1] + oh) * r.out[2] + ow;
    out[o] = T(lerp_value<0, D, T>(in + c * I, rows_for(p, od, oh, ow), p.stride));
  });
}

// T is the storage dtype (for the weights); grad buffers are opmath-typed.
template <class T, int D>
void linear_backward(const opmath_t<T>* go, opmath_t<T>* gi, const Resize& r) {
  using Acc = opmath_t<T>;
  LinearPlan<T, D> p = linear_plan<T, D>(r);
  int64_t I = r.in[0] * r.in[1] * r.in[2], O = r.out[0] * r.out[1] * r.out[2];
  for_planes_backward(r, [&](int64_t c) {
    const Acc* g = go + c * O;
    for (int64_t od = 0; od < r.out[0]; ++od)
      for (int64_t oh = 0; oh < r.out[1]; ++oh)
        for (int64_t ow = 0; ow < r.out[2]; ++ow)
          lerp_scatter<0, D, T, Acc>(gi + c * I, rows_for(p, od, oh, ow), p.stride, Acc(1),
                                     g[(od * r.out[1] + oh) * r.out[2] + ow]);
  });
}

// ---------------------------------------------------------------- bicubic

// One output position's four taps along a dim: input indices first..first+3,
// each clamped into [0, in) (the border repeats), and their weights. The
// weights stay in opmath here; the forward kernel stores them in T first (its
// weight tensors have the input's dtype), the backward kernel does not.
template <class Acc>
struct CubicTaps {
  int64_t first = 0;
  std::array<Acc, 4> w{};
  int64_t index(int j, int64_t in) const { return std::max<int64_t>(std::min(first + j, in - 1), 0); }
};

// Keys' cubic convolution with A = -0.75 (OpenCV's), as UpSample.h writes its
// two pieces: the order of operations fixes the rounding.
template <class S>
S cubic_near(S x, S A) {  // |x| <= 1
  return ((A + S(2)) * x - (A + S(3))) * x * x + S(1);
}
template <class S>
S cubic_far(S x, S A) {  // 1 < |x| < 2
  return ((A * x - S(5) * A) * x + S(8) * A) * x - S(4) * A;
}

// HelperInterpCubic::compute_indices_weights (and the backward kernel's loop):
// the source position is never clamped at 0 (cubic=true), the index is
// floorf of it (float, whatever S is) capped at in - 1, and t its clamped
// fractional part; the taps sit at t + 1, t, 1 - t and 2 - t.
template <class Acc>
std::vector<CubicTaps<Acc>> cubic_table(int64_t in, int64_t out, std::optional<double> scale, bool align_corners) {
  Acc ratio = align_corners ? (out > 1 ? static_cast<Acc>(in - 1) / static_cast<Acc>(out - 1) : Acc(0))
                            : scales_value<Acc>(scale, in, out);
  const Acc A = Acc(-0.75);
  std::vector<CubicTaps<Acc>> tab(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    Acc real = align_corners ? ratio * static_cast<Acc>(o) : ratio * (static_cast<Acc>(o) + Acc(0.5)) - Acc(0.5);
    int64_t index = std::min(static_cast<int64_t>(std::floor(static_cast<float>(real))), in - 1);
    Acc t = std::min(std::max(real - static_cast<Acc>(index), Acc(0)), Acc(1));
    Acc x2 = Acc(1) - t;
    tab[size_t(o)] = {index - 1, {cubic_far(t + Acc(1), A), cubic_near(t, A), cubic_near(x2, A), cubic_far(x2 + Acc(1), A)}};
  }
  return tab;
}

// upsample_generic_Nd_kernel_impl with HelperInterpCubic: along W in each of
// the four rows, then along H, each sum started from its first product and
// accumulated in opmath.
template <class T>
void cubic_forward(const T* in, T* out, const Resize& r) {
  using Acc = opmath_t<T>;
  const int64_t H = r.in[1], W = r.in[2];
  auto rows = cubic_table<Acc>(H, r.out[1], r.scales[1], r.align_corners);
  auto cols = cubic_table<Acc>(W, r.out[2], r.scales[2], r.align_corners);
  auto weight = [](Acc w) { return Acc(T(w)); };
  for_outputs(r, [&](int64_t c, int64_t, int64_t oh, int64_t ow) {
    const CubicTaps<Acc>&y = rows[size_t(oh)], &x = cols[size_t(ow)];
    auto along_w = [&](int j) {
      const T* row = in + (c * H + y.index(j, H)) * W;
      Acc v = Acc(row[x.index(0, W)]) * weight(x.w[0]);
      for (int i = 1; i < 4; ++i) v += Acc(row[x.index(i, W)]) * weight(x.w[i]);
      return v;
    };
    Acc v = along_w(0) * weight(y.w[0]);
    for (int j = 1; j < 4; ++j) v += along_w(j) * weight(y.w[j]);
    out[(c * r.out[1] + oh) * r.out[2] + ow] = T(v);
  });
}

// upsample_bicubic2d_backward_out_frame: each output's gradient times its 16
// weights, (g * wy) * wx, added to the (clamped) input positions, x taps
// outer, in output order.
template <class T>
void cubic_backward(const opmath_t<T>* go, opmath_t<T>* gi, const Resize& r) {
  using Acc = opmath_t<T>;
  const int64_t H = r.in[1], W = r.in[2], OH = r.out[1], OW = r.out[2];
  auto rows = cubic_table<Acc>(H, OH, r.scales[1], r.align_corners);
  auto cols = cubic_table<Acc>(W, OW, r.scales[2], r.align_corners);
  for_planes_backward(r, [&](int64_t c) {
    Acc* plane = gi + c * H * W;
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        const CubicTaps<Acc>&y = rows[size_t(oh)], &x = cols[size_t(ow)];
        Acc g = go[(c * OH + oh) * OW + ow];
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 4; ++j) plane[y.index(j, H) * W + x.index(i, W)] += g * y.w[size_t(j)] * x.w[size_t(i)];
      }
  });
}

// ---------------------------------------------------------------- arguments

struct OpKind {
  Mode mode;
  int64_t dims;
  bool vec;       // .vec overload: output_size? and scale_factors?
  bool backward;  // (grad_output, output_size, input_size, ...)
  std::string name;
};

std::string dims_word(int64_t dims) { return std::to_string(dims + 2) + "D"; }

void check_sizes(const Resize& r, std::string_view op) {
  bool ok = true;
  std::string in_s, out_s;
  static const char* kNames[] = {"D", "H", "W"};
  for (int64_t d = 0; d < r.dims; ++d) {
    size_t i = size_t(kMaxSpatial - r.dims + d);
    ok &= r.in[i] > 0 && r.out[i] > 0;
    const char* n = kNames[kMaxSpatial - r.dims + d];
    in_s += std::string(d ? ", " : "") + n + ": " + std::to_string(r.in[i]);
    out_s += std::string(d ? ", " : "") + n + ": " + std::to_string(r.out[i]);
  }
  KILN_USER_CHECK(ok, op, ": Input and output sizes should be greater than 0, but got input (", in_s, ") output (",
                  out_s, ")");
}

// Output sizes from output_size or scale_factors (exactly one given), as
// upsample::compute_output_size does; the scales then reach the kernel too.
Shape vec_output_size(const OpArgs& args, const Shape& input, int64_t dims, size_t scales_at,
                      std::array<std::optional<double>, 3>& scales) {
  auto out = args.opt_ints(1);
  bool has_scales = !args[scales_at].is_none();
  KILN_USER_CHECK(out.has_value() != has_scales, "Must specify exactly one of output_size and scale_factors");
  if (out) {
    KILN_USER_CHECK(int64_t(out->size()) == dims, "It is expected output_size equals to ", dims, ", but got size ",
                    out->size());
    return *out;
  }
  Shape sizes;
  const ValueList& f = args[scales_at].to_list();
  KILN_USER_CHECK(int64_t(f.size()) == dims, "It is expected scale_factors equals to ", dims, ", but got size ",
                  f.size());
  for (int64_t d = 0; d < dims; ++d) {
    double s = f[size_t(d)].to_double();
    scales[size_t(kMaxSpatial - dims + d)] = s;
    sizes.push_back(static_cast<int64_t>(double(input[size_t(2 + d)]) * s));
  }
  return sizes;
}

Resize parse_resize(const OpArgs& args, const OpKind& k) {
  Resize r;
  r.dims = k.dims;
  bool takes_align = k.mode == Mode::Linear || k.mode == Mode::Cubic;
  const Tensor& t = args.tensor(0);
  size_t after = k.backward ? 3 : 2;  // first argument after the sizes
  if (takes_align) r.align_corners = args.boolean(after);
  size_t scales_at = after + (takes_align ? 1 : 0);
  Shape out;
  if (k.vec) {
    r.input_sizes = t.sizes();
    KILN_USER_CHECK(t.dim() == k.dims + 2, k.name, ": Non-empty ", dims_word(k.dims),
                    " data tensor expected but got a tensor with sizes ", shape_str(t.sizes()));
    out = vec_output_size(args, t.sizes(), k.dims, scales_at, r.scales);
  } else {
    out = args.ints(1);
    KILN_USER_CHECK(int64_t(out.size()) == k.dims, "It is expected output_size equals to ", k.dims, ", but got size ",
                    out.size());
    if (k.backward) {
      r.input_sizes = args.ints(2);
      KILN_USER_CHECK(int64_t(r.input_sizes.size()) == k.dims + 2, "It is expected input_size equals to ", k.dims + 2,
                      ", but got size ", r.input_sizes.size());
    } else {
      r.input_sizes = t.sizes();
      KILN_USER_CHECK(t.dim() == k.dims + 2, k.name, ": Non-empty ", dims_word(k.dims),
                      " data tensor expected but got a tensor with sizes ", shape_str(t.sizes()));
    }
    for (int64_t d = 0; d < k.dims; ++d) {
      auto s = args.opt_real(scales_at + size_t(d));
      r.scales[size_t(kMaxSpatial - k.dims + d)] = s;
    }
  }
  for (int64_t d = 0; d < k.dims; ++d) {
    r.in[size_t(kMaxSpatial - k.dims + d)] = r.input_sizes[size_t(2 + d)];
    r.out[size_t(kMaxSpatial - k.dims + d)] = out[size_t(d)];
  }
  check_sizes(r, k.name);
  r.planes = r.input_sizes[0] * r.input_sizes[1];
  r.output_sizes = {r.input_sizes[0], r.input_sizes[1]};
  r.output_sizes.insert(r.output_sizes.end(), out.begin(), out.end());
  if (!k.backward)
    KILN_USER_CHECK(t.numel() != 0 || shape_numel(std::span(t.sizes()).subspan(1)) != 0, k.name,
                    ": Non-empty ", dims_word(k.dims), " data tensor expected but got a tensor with sizes ",
                    shape_str(t.sizes()));
  return r;
}

// Nearest forward also takes uint8 (images); everything else is float-only.
// ATen's bicubic takes uint8 too, but computes it with fixed-point weights
// (a separable AVX2 path), which Kiln does not reproduce.
void check_dtype(DType t, const OpKind& k) {
  KILN_USER_CHECK(!(k.mode == Mode::Cubic && t == DType::UInt8), k.name,
                  ": uint8 input is not supported by Kiln (ATen interpolates uint8 images with fixed-point "
                  "weights); convert to float first");
  bool ok = is_floating(t) || (k.mode != Mode::Linear && !k.backward && t == DType::UInt8);
  KILN_USER_CHECK(ok, "\"", k.name, "\" not implemented for '", dtype_name(t), "'");
}

ValueList upsample_meta(const OpArgs& args, const OpKind& k) {
  Resize r = parse_resize(args, k);
  const Tensor& t = args.tensor(0);
  check_dtype(t.dtype(), k);
  if (k.backward) {
    KILN_USER_CHECK(t.sizes() == r.output_sizes, k.name, ": expected grad_output of size ", shape_str(r.output_sizes),
                    ", but got ", shape_str(t.sizes()));
    return one(Tensor::meta(r.input_sizes, t.dtype()));
  }
  return one(Tensor::meta(r.output_sizes, t.dtype()));
}

template <class T>
void linear_forward_dims(const T* in, T* out, const Resize& r) {
  switch (r.dims) {
    case 1: return linear_forward<T, 1>(in, out, r);
    case 2: return linear_forward<T, 2>(in, out, r);
    default: return linear_forward<T, 3>(in, out, r);
  }
}

template <class T>
void linear_backward_dims(const opmath_t<T>* go, opmath_t<T>* gi, const Resize& r) {
  switch (r.dims) {
    case 1: return linear_backward<T, 1>(go, gi, r);
    case 2: return linear_backward<T, 2>(go, gi, r);
    default: return linear_backward<T, 3>(go, gi, r);
  }
}

void upsample_forward(const OpArgs& args, const OpKind& k, const Tensor& out) {
  Resize r = parse_resize(args, k);
  if (out.numel() == 0) return;
  Tensor x = args.tensor(0).contiguous();
  dispatch_all(x.dtype(), [&]<class T>() {
    if constexpr (is_floating_v<T>) {
      if (k.mode == Mode::Linear) linear_forward_dims<T>(x.data<T>(), out.data<T>(), r);
      else if (k.mode == Mode::Cubic) cubic_forward<T>(x.data<T>(), out.data<T>(), r);
      else nearest_forward<T>(x.data<T>(), out.data<T>(), r, k.mode == Mode::NearestExact);
    } else if constexpr (std::is_same_v<T, uint8_t>) {
      nearest_forward<T>(x.data<T>(), out.data<T>(), r, k.mode == Mode::NearestExact);
    }
  });
}

// Accumulates in opmath (float32 for the 16-bit floats) and rounds once.
void upsample_backward(const OpArgs& args, const OpKind& k, const Tensor& grad_in) {
  Resize r = parse_resize(args, k);
  Tensor go = upcast(args.tensor(0)).contiguous();
  Tensor acc = Tensor::zeros(grad_in.sizes(), go.dtype());
  if (acc.numel() > 0) {
    dispatch_all(grad_in.dtype(), [&]<class T>() {
      using Acc = opmath_t<T>;
      if constexpr (is_floating_v<T>) {
        if (k.mode == Mode::Linear) linear_backward_dims<T>(go.data<Acc>(), acc.data<Acc>(), r);
        else if (k.mode == Mode::Cubic) cubic_backward<T>(go.data<Acc>(), acc.data<Acc>(), r);
        else nearest_backward<Acc>(go.data<Acc>(), acc.data<Acc>(), r, k.mode == Mode::NearestExact);
      }
    });
  }
  grad_in.copy_(acc);
}

// ---------------------------------------------------------------- schemas

std::string op_name(Mode m, int64_t dims) {
  std::string n = std::to_string(dims) + "d";
  switch (m) {
    case Mode::Nearest: return "upsample_nearest" + n;
    case Mode::NearestExact: return "_upsample_nearest_exact" + n;
    case Mode::Linear: return dims == 1 ? "upsample_linear1d" : dims == 2 ? "upsample_bilinear2d" : "upsample_trilinear3d";
    case Mode::Cubic: return "upsample_bicubic" + n;
  }
  return "";
}

std::string scale_args(int64_t dims) {
  static const char* k1[] = {"scales"};
  static const char* k3[] = {"scales_d", "scales_h", "scales_w"};
  std::string s;
  for (int64_t d = 0; d < dims; ++d)
    s += std::string(", float? ") + (dims == 1 ? k1[0] : k3[kMaxSpatial - dims + d]) + "=None";
  return s;
}

std::string schema_for(const OpKind& k) {
  std::string n = std::to_string(k.dims);
  std::string align = k.mode == Mode::Linear || k.mode == Mode::Cubic ? ", bool align_corners" : "";
  if (k.vec)
    return "aten::" + k.name + ".vec(Tensor input, SymInt[]? output_size" + align +
           ", float[]? scale_factors) -> Tensor";
  if (k.backward)
    return "aten::" + k.name + "(Tensor grad_output, SymInt[" + n + "] output_size, SymInt[" +
           std::to_string(k.dims + 2) + "] input_size" + align + scale_args(k.dims) + ") -> Tensor";
  return "aten::" + k.name + "(Tensor self, SymInt[" + n + "] output_size" + align + scale_args(k.dims) + ") -> Tensor";
}

void add_upsample(OpRegistry& r, OpKind k) {
  std::string schema = schema_for(k);
  OpFn meta = [k](const OpArgs& args) { return upsample_meta(args, k); };
  ComputeFn compute = [k](const OpArgs& args, const std::vector<Tensor>& outs) {
    if (k.backward) upsample_backward(args, k, outs[0]);
    else upsample_forward(args, k, outs[0]);
  };
  add_op_with_outputs(r, schema, std::move(meta), std::move(compute));
}

}  // namespace

void register_upsample_ops(OpRegistry& r) {
  for (Mode m : {Mode::Nearest, Mode::NearestExact, Mode::Linear}) {
    for (int64_t dims = 1; dims <= kMaxSpatial; ++dims) {
      std::string name = op_name(m, dims);
      add_upsample(r, {m, dims, false, false, name});
      add_upsample(r, {m, dims, true, false, name});
      add_upsample(r, {m, dims, false, true, name + "_backward"});
    }
  }
  const std::string bicubic = op_name(Mode::Cubic, 2);
  add_upsample(r, {Mode::Cubic, 2, false, false, bicubic});
  add_upsample(r, {Mode::Cubic, 2, true, false, bicubic});
  add_upsample(r, {Mode::Cubic, 2, false, true, bicubic + "_backward"});
}

}  // namespace kiln
