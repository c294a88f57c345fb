// Pooling, padding and upsampling. Adaptive average pooling whose windows tile
// the input evenly is a mean over a reshaped input ("pooling where it pays");
// nearest upsampling is an index with source positions computed as the kernel
// computes them; the 1-D variants run through their 2-D ops on a height of 1.
#include <cmath>

#include "compiler/decomp/decomp_util.h"

namespace kiln::decomp {
namespace {

// The mean of equal windows over the last k dims, or nothing when the windows are unequal.
std::optional<Var> adaptive_mean(Emitter& e, Var x, const std::vector<int64_t>& out) {
  const int64_t k = int64_t(out.size()), nd = e.dim(x);
  if (nd < k) return std::nullopt;
  const Shape s = e.sizes(x);
  bool global = true;
  for (int64_t d = 0; d < k; ++d) {
    int64_t in = s[size_t(nd - k + d)], o = out[size_t(d)];
    if (o <= 0 || in % o != 0) return std::nullopt;
    global &= o == 1;
  }
  if (global) {
    std::vector<int64_t> spatial;
    for (int64_t d = nd - k; d < nd; ++d) spatial.push_back(d);
    return mean(e, x, spatial, true);
  }
  Shape split(s.begin(), s.end() - k);
  std::vector<int64_t> window_dims;
  for (int64_t d = 0; d < k; ++d) {
    split.push_back(out[size_t(d)]);
    split.push_back(s[size_t(nd - k + d)] / out[size_t(d)]);
    window_dims.push_back(int64_t(split.size()) - 1);
  }
  return mean(e, reshape(e, x, split), window_dims, false);
}

// Core ops that decline unless they are a mean.
template <size_t K>
std::vector<Var> adaptive_avg_if_mean(Emitter& e, const DecompCall& c) {
  Bound b(c);
  if (std::optional<Var> m = adaptive_mean(e, b.var(0), b.ints(1, K))) return one(*m);
  return {};
}
// The public ops: a mean when they are one, else the core kernel.
template <size_t K>
std::vector<Var> adaptive_avg(Emitter& e, const DecompCall& c) {
  Bound b(c);
  if (std::optional<Var> m = adaptive_mean(e, b.var(0), b.ints(1, K))) return one(*m);
  return one(e.call1(K == 2 ? "aten::_adaptive_avg_pool2d.default" : "aten::_adaptive_avg_pool3d.default",
                     {b.var(0), b.ints(1, K)}));
}

// _adaptive_avg_poolNd_backward(grad_output, self) where the windows tile the
// input evenly: each input element gets its window's gradient divided by the
// window's extent along each dim in turn, as the kernel divides, and nothing
// else (windows that tile do not overlap). Declines other sizes.
template <size_t K>
std::vector<Var> adaptive_avg_backward_if_tiled(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var g = b.var(0);
  const Shape in = e.sizes(b.var(1)), out = e.sizes(g);
  const int64_t k = int64_t(K), nd = int64_t(in.size());
  if (nd < k || int64_t(out.size()) != nd) return {};
  Shape split(in.begin(), in.end() - k), spread = split;
  std::vector<int64_t> window;
  for (int64_t d = nd - k; d < nd; ++d) {
    const int64_t i = in[size_t(d)], o = out[size_t(d)];
    if (o <= 0 || i % o != 0) return {};
    window.push_back(i / o);
    split.insert(split.end(), {o, 1});
    spread.insert(spread.end(), {o, i / o});
  }
  OpMath om(e, e.dtype(g));
  Var delta = om.up(g);
  for (int64_t w : window) delta = div(e, delta, double(w));
  Var spread_out = expand(e, reshape(e, delta, split), spread);
  return one(om.down(reshape(e, spread_out, in)));
}

std::vector<Var> max_pool2d(Emitter& e, const DecompCall& c) {
  return {e.call("aten::max_pool2d_with_indices.default", c.args, c.kwargs).at(0)};
}
std::vector<Var> max_pool3d(Emitter& e, const DecompCall& c) {
  return {e.call("aten::max_pool3d_with_indices.default", c.args, c.kwargs).at(0)};
}

// max_pool1d over [.., L] is max_pool2d over [.., 1, L]; indices stay column numbers.
std::vector<Var> max_pool1d_with_indices(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = unsqueeze(e, b.var(0), -2);
  int64_t k = b.ints(1, 1)[0];
  std::vector<int64_t> stride = b.ints(2);
  int64_t s = stride.empty() ? k : stride[0];
  std::vector<Var> r =
      e.call("aten::max_pool2d_with_indices.default",
             {x, std::vector<int64_t>{1, k}, std::vector<int64_t>{1, s}, std::vector<int64_t>{0, b.ints(3, 1)[0]},
              std::vector<int64_t>{1, b.ints(4, 1)[0]}, b[5]});
  return {squeeze_dims(e, r.at(0), {e.dim(r[0]) - 2}), squeeze_dims(e, r.at(1), {e.dim(r[1]) - 2})};
}
std::vector<Var> max_pool1d(Emitter& e, const DecompCall& c) {
  return {e.call("aten::max_pool1d_with_indices.default", c.args, c.kwargs).at(0)};
}

std::vector<Var> adaptive_max_pool1d(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = unsqueeze(e, b.var(0), -2);
  std::vector<Var> r = e.call("aten::adaptive_max_pool2d.default", {x, std::vector<int64_t>{1, b.ints(1, 1)[0]}});
  return {squeeze_dims(e, r.at(0), {e.dim(r[0]) - 2}), squeeze_dims(e, r.at(1), {e.dim(r[1]) - 2})};
}

// ---- padding ----

std::vector<Var> replication_pad1d(Emitter& e, const DecompCall& c) {
  Bound b(c);
  std::vector<int64_t> p = b.ints(1, 2);
  Var r =
      e.call1("aten::replication_pad2d.default", {unsqueeze(e, b.var(0), -2), std::vector<int64_t>{p[0], p[1], 0, 0}});
  return one(squeeze_dims(e, r, {e.dim(r) - 2}));
}

// Circular padding: the wrapped-around slices glued on, last dim first.
Var circular_pad(Emitter& e, Var x, const std::vector<int64_t>& pad) {
  const int64_t nd = e.dim(x);
  for (size_t i = 0; i + 1 < pad.size(); i += 2) {
    int64_t dim = nd - 1 - int64_t(i / 2), n = e.sizes(x)[size_t(dim)];
    int64_t left = pad[i], right = pad[i + 1];
    KILN_USER_CHECK(left <= n && right <= n, "Padding value causes wrapping around more than once.");
    std::vector<Var> parts;
    if (left > 0) parts.push_back(slice(e, x, dim, n - left, n));
    parts.push_back(slice(e, x, dim, std::max<int64_t>(0, -left), n - std::max<int64_t>(0, -right)));
    if (right > 0) parts.push_back(slice(e, x, dim, 0, right));
    x = cat(e, parts, dim);
  }
  return x;
}

std::vector<Var> pad(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  std::vector<int64_t> p = b.ints(1);
  std::string mode = b.str(2);
  KILN_USER_CHECK(p.size() % 2 == 0, "Padding length must be divisible by 2");
  if (mode == "constant") return one(e.call1("aten::constant_pad_nd.default", {x, p, b.opt_real(3).value_or(0.0)}));
  KILN_USER_CHECK(b.is_none(3), "Padding mode \"", mode, "\" doesn't take in value argument");
  std::string k = std::to_string(p.size() / 2);
  if (mode == "reflect") return one(e.call1("aten::reflection_pad" + k + "d.default", {x, p}));
  if (mode == "replicate") return one(e.call1("aten::replication_pad" + k + "d.default", {x, p}));
  if (mode == "circular") return one(circular_pad(e, x, p));
  throw Error("Unrecognised padding mode " + mode);
}

// ---- upsampling ----

// Output sizes and per-dim scales of an upsample call: the `.vec` overloads give
// output_size or scale_factors, the others output_size and optional scales.
struct Resize {
  Shape out;
  std::vector<std::optional<double>> scales;
};
Resize resize_of(Emitter& e, const Bound& b, size_t k, bool vec, size_t scales_at) {
  const Shape s = e.sizes(b.var(0));
  KILN_USER_CHECK(e.dim(b.var(0)) == int64_t(k) + 2, "upsample: expected a ", k + 2, "-D input, got ", shape_str(s));
  Resize r;
  r.scales.assign(k, std::nullopt);
  if (vec) {
    std::optional<std::vector<int64_t>> out = b.opt_ints(1);
    std::optional<std::vector<double>> factors = b.opt_reals(scales_at);
    KILN_USER_CHECK(out.has_value() != factors.has_value(),
                    "Must specify exactly one of output_size and scale_factors");
    if (out) {
      r.out = *out;
    } else {
      KILN_USER_CHECK(factors->size() == k, "It is expected scale_factors equals to ", k);
      for (size_t d = 0; d < k; ++d) {
        r.scales[d] = (*factors)[d];
        r.out.push_back(int64_t(double(s[2 + d]) * (*factors)[d]));
      }
    }
  } else {
    r.out = b.ints(1, k);
    for (size_t d = 0; d < k; ++d) r.scales[d] = b.opt_real(scales_at + d);
  }
  KILN_USER_CHECK(r.out.size() == k, "It is expected output_size equals to ", k);
  return r;
}

// Source positions of nearest (or nearest-exact) upsampling along one dim, in
// the kernel's float32 arithmetic: floor(o * scale) or floor((o + 0.5) * scale),
// clamped to in - 1; scale is 1/scale_factor when given, else in/out.
Var nearest_source(Emitter& e, int64_t in, int64_t out, std::optional<double> scale, bool exact) {
  float s = scale && *scale > 0 ? float(1.0 / *scale) : float(in) / float(out);
  Var pos;
  if (exact) {
    Var centers = add(e, arange(e, out, DType::Float64), 0.5);
    pos = to_dtype(e, mul(e, centers, double(s)), DType::Float32);
  } else {
    // The kernel's fast paths for equal and doubled sizes.
    if (out == in)
      s = 1.0f;
    else if (out == 2 * in)
      s = 0.5f;
    pos = mul(e, arange(e, out, DType::Float32), double(s));
  }
  Var index = to_dtype(e, unary(e, "floor", pos), DType::Int64);
  return e.call1("aten::clamp.default", {index, EArg::none(), in - 1});
}

Var upsample_nearest(Emitter& e, Var x, const Resize& r, bool exact) {
  const size_t k = r.out.size();
  const Shape s = e.sizes(x);
  std::vector<Var> indices{Var{}, Var{}};  // batch and channel dims: all of them
  for (size_t d = 0; d < k; ++d) {
    Var idx = nearest_source(e, s[2 + d], r.out[d], r.scales[d], exact);
    Shape shape(k - d, 1);
    shape[0] = r.out[d];
    indices.push_back(reshape(e, idx, shape));
  }
  return e.call1("aten::index.Tensor", {x, EArg::list(indices)});
}

// upsample_bicubic2d.vec is CompositeImplicit in ATen: the output size from
// output_size or scale_factors, and the factors passed on as the scales.
std::vector<Var> bicubic_vec(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Resize r = resize_of(e, b, 2, true, 3);
  auto scale = [](std::optional<double> s) { return s ? EArg(*s) : EArg::none(); };
  return one(e.call1("aten::upsample_bicubic2d.default", {b.var(0), r.out, b[2], scale(r.scales[0]), scale(r.scales[1])}));
}

template <size_t K, bool Exact, bool Vec>
std::vector<Var> nearest(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(upsample_nearest(e, b.var(0), resize_of(e, b, K, Vec, 2), Exact));
}

// A scales-carrying call as the `.vec` form, when its sizes are the ones the scales give.
std::optional<std::vector<double>> scales_as_factors(const Resize& r, const Shape& in) {
  std::vector<double> f;
  for (size_t d = 0; d < r.out.size(); ++d) {
    if (!r.scales[d]) return std::nullopt;
    if (int64_t(double(in[2 + d]) * *r.scales[d]) != r.out[d]) return std::nullopt;
    f.push_back(*r.scales[d]);
  }
  return f;
}
bool any_scale(const Resize& r) {
  for (const auto& s : r.scales)
    if (s) return true;
  return false;
}

// (bi/tri)linear(self, output_size, align_corners, scales...) as the `.vec` overload.
// Declines scales that do not match the output size (the `.vec` form cannot say that).
template <size_t K>
std::vector<Var> linear_to_vec(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  Resize r = resize_of(e, b, K, false, 3);
  const char* op = K == 2 ? "aten::upsample_bilinear2d.vec" : "aten::upsample_trilinear3d.vec";
  if (!any_scale(r)) return one(e.call1(op, {x, r.out, b[2], EArg::none()}));
  std::optional<std::vector<double>> f = scales_as_factors(r, e.sizes(x));
  if (!f) return {};
  return one(e.call1(op, {x, EArg::none(), b[2], EArg(Value(ValueList(f->begin(), f->end())))}));
}

// linear1d over [N, C, L] is bilinear2d over [N, C, 1, L] with a height scale of 1.
template <bool Vec>
std::vector<Var> linear1d(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  Resize r = resize_of(e, b, 1, Vec, 3);
  Var x2 = unsqueeze(e, x, 2);
  Var out;
  if (!any_scale(r)) {
    out = e.call1("aten::upsample_bilinear2d.vec", {x2, std::vector<int64_t>{1, r.out[0]}, b[2], EArg::none()});
  } else {
    std::optional<std::vector<double>> f = scales_as_factors(r, e.sizes(x));
    if (!f) return {};
    out = e.call1("aten::upsample_bilinear2d.vec", {x2, EArg::none(), b[2], EArg(Value(ValueList{1.0, (*f)[0]}))});
  }
  return one(squeeze_dims(e, out, {2}));
}

// Inductor's max-pool prims (core/ops/inductor_prims.cpp) as PyTorch defines
// them: max_poolNd_with_indices plus index arithmetic. `first` is o * stride -
// padding, the input position where window o starts along spatial dim d.
struct PoolDims {
  std::vector<int64_t> k, s, p, dil;
};
PoolDims pool_dims(const Bound& b, size_t ki, size_t si, size_t pi, size_t di) {
  PoolDims w{b.ints(ki), b.ints(si), b.ints(pi), b.ints(di)};
  size_t n = w.k.size();
  KILN_USER_CHECK((n == 2 || n == 3) && w.s.size() == n && w.p.size() == n && w.dil.size() == n, b.op(),
                  ": kernel_size, stride, padding and dilation must have 2 or 3 entries each, alike");
  return w;
}
Var window_first(Emitter& e, Var like, const PoolDims& w, size_t d) {
  const int64_t nd = e.dim(like), n = int64_t(w.k.size());
  Shape bh(size_t(nd), 1);
  bh[size_t(nd - n + int64_t(d))] = e.sizes(like)[size_t(nd - n + int64_t(d))];
  Var o = view(e, arange(e, bh[size_t(nd - n + int64_t(d))], DType::Int64), bh);
  return sub(e, mul(e, o, EArg(w.s[d])), EArg(w.p[d]));
}
Var floor_div(Emitter& e, Var a, int64_t b) {
  return e.call1("aten::div.Scalar_mode", {a, b}, {{"rounding_mode", "floor"}});
}

std::vector<Var> max_pool_with_offsets(Emitter& e, const DecompCall& c) {
  Bound b(c);
  PoolDims w = pool_dims(b, 1, 2, 3, 4);
  const size_t n = w.k.size();
  std::vector<Var> r = e.call(n == 2 ? "aten::max_pool2d_with_indices.default" : "aten::max_pool3d_with_indices.default",
                              {b.var(0), w.k, w.s, w.p, w.dil, b[5]});
  Shape in = e.sizes(b.var(0));
  Var rest = r.at(1), offset;
  for (size_t d = 0; d < n; ++d) {
    int64_t inner = 1;
    for (size_t j = d + 1; j < n; ++j) inner *= in[in.size() - n + j];
    Var pos = floor_div(e, rest, inner);
    rest = sub(e, rest, mul(e, pos, EArg(inner)));
    Var inc = floor_div(e, sub(e, pos, window_first(e, r[1], w, d)), w.dil[d]);
    offset = d == 0 ? inc : add(e, mul(e, offset, EArg(w.k[d])), inc);
  }
  return {r[0], to_dtype(e, offset, DType::Int8)};
}

std::vector<Var> max_pool_offsets_to_indices(Emitter& e, const DecompCall& c) {
  Bound b(c);
  PoolDims w = pool_dims(b, 1, 3, 4, 5);
  std::vector<int64_t> in = b.ints(2);
  const size_t n = w.k.size();
  KILN_USER_CHECK(in.size() == n, b.op(), ": input_size must have ", n, " entries");
  Var rest = to_dtype(e, b.var(0), DType::Int64), flat;
  for (size_t d = 0; d < n; ++d) {
    int64_t inner = 1;
    for (size_t j = d + 1; j < n; ++j) inner *= w.k[j];
    Var kpos = d + 1 < n ? floor_div(e, rest, inner) : rest;
    if (d + 1 < n) rest = sub(e, rest, mul(e, kpos, EArg(inner)));
    Var pos = add(e, window_first(e, b.var(0), w, d), mul(e, kpos, EArg(w.dil[d])));
    flat = d == 0 ? pos : add(e, mul(e, flat, EArg(in[d])), pos);
  }
  return one(flat);
}

}  // namespace

void add_pooling_decomps(DecompTable& t) {
  t["prims::_low_memory_max_pool_with_offsets.default"] = max_pool_with_offsets;
  t["prims::_low_memory_max_pool2d_with_offsets.default"] = max_pool_with_offsets;  // the 2.5-2.8 name, same arguments
  t["prims::_low_memory_max_pool_offsets_to_indices.default"] = max_pool_offsets_to_indices;
  t["aten::_adaptive_avg_pool2d.default"] = adaptive_avg_if_mean<2>;
  t["aten::_adaptive_avg_pool3d.default"] = adaptive_avg_if_mean<3>;
  t["aten::adaptive_avg_pool1d.default"] = adaptive_avg_if_mean<1>;
  t["aten::_adaptive_avg_pool2d_backward.default"] = adaptive_avg_backward_if_tiled<2>;
  t["aten::_adaptive_avg_pool3d_backward.default"] = adaptive_avg_backward_if_tiled<3>;
  t["aten::adaptive_avg_pool2d.default"] = adaptive_avg<2>;
  t["aten::adaptive_avg_pool3d.default"] = adaptive_avg<3>;
  t["aten::max_pool2d.default"] = max_pool2d;
  t["aten::max_pool3d.default"] = max_pool3d;
  t["aten::max_pool1d_with_indices.default"] = max_pool1d_with_indices;
  t["aten::max_pool1d.default"] = max_pool1d;
  t["aten::adaptive_max_pool1d.default"] = adaptive_max_pool1d;
  t["aten::replication_pad1d.default"] = replication_pad1d;
  t["aten::pad.default"] = pad;
  t["aten::upsample_nearest1d.default"] = nearest<1, false, false>;
  t["aten::upsample_nearest2d.default"] = nearest<2, false, false>;
  t["aten::upsample_nearest3d.default"] = nearest<3, false, false>;
  t["aten::upsample_nearest1d.vec"] = nearest<1, false, true>;
  t["aten::upsample_nearest2d.vec"] = nearest<2, false, true>;
  t["aten::upsample_nearest3d.vec"] = nearest<3, false, true>;
  t["aten::_upsample_nearest_exact1d.default"] = nearest<1, true, false>;
  t["aten::_upsample_nearest_exact2d.default"] = nearest<2, true, false>;
  t["aten::_upsample_nearest_exact3d.default"] = nearest<3, true, false>;
  t["aten::_upsample_nearest_exact1d.vec"] = nearest<1, true, true>;
  t["aten::_upsample_nearest_exact2d.vec"] = nearest<2, true, true>;
  t["aten::_upsample_nearest_exact3d.vec"] = nearest<3, true, true>;
  t["aten::upsample_bilinear2d.default"] = linear_to_vec<2>;
  t["aten::upsample_trilinear3d.default"] = linear_to_vec<3>;
  t["aten::upsample_linear1d.default"] = linear1d<false>;
  t["aten::upsample_linear1d.vec"] = linear1d<true>;
  t["aten::upsample_bicubic2d.vec"] = bicubic_vec;
}

}  // namespace kiln::decomp
