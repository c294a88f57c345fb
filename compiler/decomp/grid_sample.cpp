// Spatial transformers. affine_grid_generator (and its backward) is the base
// grid of output positions times theta, built from linspace and bmm as ATen's
// kernel builds it. grid_sampler_2d, core in PyTorch and in Kiln, becomes
// gathers and pointwise ops for bilinear sampling, computed operation for
// operation as the kernel computes it (its fused multiply-adds as
// prims::fma), so the numbers are the kernel's. Nearest (and bicubic)
// sampling declines and stays the kernel: a nearest decomposition reaches the
// grid only through integer indices, so the joint graph of a decomposed
// region would give the grid no gradient at all where PyTorch gives zeros.
// The backward stays a kernel, as the other resampling backwards do (a
// scatter-add no simpler for a backend).
#include "compiler/decomp/decomp_util.h"

namespace kiln::decomp {
namespace {

// ---- affine grids ----

// linspace_from_neg_one: -1..1 over `steps` (pulled in by (steps - 1) / steps
// without align_corners), a 0-d zero for a single step.
Var linspace_from_neg_one(Emitter& e, int64_t steps, bool align, DType t) {
  if (steps <= 1) return scalar_tensor(e, 0.0, t);
  Var r = e.call1("aten::linspace.default", {int64_t(-1), int64_t(1), steps}, {{"dtype", t}});
  if (align) return r;
  return div(e, mul(e, r, steps - 1), steps);
}

// [N, H * W, 3]: x, y, 1 per output position, or nothing for sizes the
// kernel refuses (5-D) or rejects (negative), so that it says why.
std::optional<Var> base_grid(Emitter& e, const std::vector<int64_t>& size, bool align, DType t) {
  if (size.size() != 4 || !is_floating(t)) return std::nullopt;
  const int64_t N = size[0], H = size[2], W = size[3];
  if (N < 0 || H < 0 || W < 0) return std::nullopt;
  Shape column{N, H, W, 1};
  // A single step is a 0-d zero, broadcast like the others.
  auto along = [&](int64_t steps, Shape shape) {
    return expand(e, view(e, linspace_from_neg_one(e, steps, align, t), steps <= 1 ? Shape{1, 1, 1, 1} : shape), column);
  };
  Var xs = along(W, {1, 1, W, 1}), ys = along(H, {1, H, 1, 1});
  Var base = cat(e, {xs, ys, full(e, column, 1.0, t)}, -1);
  return view(e, base, {N, H * W, 3});
}

std::vector<Var> affine_grid_generator(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var theta = b.var(0);
  std::vector<int64_t> size = b.ints(1);
  std::optional<Var> base = base_grid(e, size, b.boolean(2), e.dtype(theta));
  if (!base || e.sizes(theta) != Shape{size[0], 2, 3}) return {};  // the kernel says what is wrong
  Var grid = e.call1("aten::bmm.default", {*base, permute(e, theta, {0, 2, 1})});
  return one(view(e, grid, {size[0], size[2], size[3], 2}));
}

// base^T @ grad, transposed: a [N, 2, 3] view of the [N, 3, 2] product, as ATen returns it.
std::vector<Var> affine_grid_generator_backward(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var grad = b.var(0);
  std::vector<int64_t> size = b.ints(1);
  std::optional<Var> base = base_grid(e, size, b.boolean(2), e.dtype(grad));
  if (!base || e.sizes(grad) != Shape{size[0], size[2], size[3], 2}) return {};
  Var g = reshape(e, grad, {size[0], size[2] * size[3], 2});
  Var product = e.call1("aten::bmm.default", {permute(e, *base, {0, 2, 1}), g});
  return one(permute(e, product, {0, 2, 1}));
}

// ---- grid sampling ----

// One spatial dim (the kernel's Axis): grid values to pixel positions.
struct Axis {
  int64_t size;
  int64_t padding;  // 0 zeros, 1 border, 2 reflection
  bool align;
  DType t;
  double max_val() const { return double(size - 1); }
  double scale() const { return align ? double(size - 1) / 2 : double(size) / 2; }
  double low() const { return align ? 0.0 : -0.5; }
  double twice_span() const { return align ? double(size - 1) * 2 : double(size) * 2; }
  bool empty() const { return align ? size <= 1 : size <= 0; }
};

Var fma(Emitter& e, Var a, Var b, Var c) { return e.call1("prims::fma.default", {a, b, c}); }

Var unnormalize(Emitter& e, Var g, const Axis& a) {
  Var g1 = add(e, g, 1.0);
  if (a.align) return mul(e, g1, a.scale());
  return fma(e, g1, scalar_tensor(e, a.scale(), a.t), scalar_tensor(e, -0.5, a.t));
}

// Into [0, size - 1], NaN to 0 (the kernel's clamps keep their operand order for that).
Var clip(Emitter& e, Var v, const Axis& a) {
  Var lo = where_scalar_else(e, compare(e, "gt", v, 0.0), v, 0.0);
  return where_scalar_else(e, compare(e, "lt", lo, a.max_val()), lo, a.max_val());
}

// Folds positions back and forth over [low, low + span] (NaN stays NaN; the clip after it zeroes it).
Var reflect(Emitter& e, Var v, const Axis& a) {
  if (a.align && a.empty()) return full(e, e.sizes(v), 0.0, a.t);
  Var span2 = scalar_tensor(e, a.twice_span(), a.t);
  Var d = unary(e, "abs", a.align ? v : sub(e, v, a.low()));
  Var flips = unary(e, "trunc", div(e, d, a.twice_span()));
  Var extra = fma(e, neg(e, flips), span2, d);
  Var r = e.call1("aten::minimum.default", {extra, sub(e, span2, extra)});
  return a.align ? r : add(e, r, a.low());
}

Var position(Emitter& e, Var g, const Axis& a) {
  Var v = unnormalize(e, g, a);
  if (a.padding == 1) return clip(e, v, a);
  if (a.padding == 2) return clip(e, reflect(e, v, a), a);
  return v;
}

// Samples input [N, C, H, W] at the whole-number positions (x, y) [N, oH, oW],
// 0 outside: [N, C, oH, oW].
Var gather(Emitter& e, Var input, Var x, Var y) {
  const Shape s = e.sizes(input);
  const int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  Var inside = e.call1("aten::logical_and.default",
                       {e.call1("aten::logical_and.default", {compare(e, "ge", x, 0.0), compare(e, "lt", x, double(W))}),
                        e.call1("aten::logical_and.default", {compare(e, "ge", y, 0.0), compare(e, "lt", y, double(H))})});
  auto index = [&](Var p) { return unsqueeze(e, to_dtype(e, where_scalar_else(e, inside, p, 0.0), DType::Int64), 1); };
  Var n = view(e, arange(e, N, DType::Int64), {N, 1, 1, 1});
  Var c = view(e, arange(e, C, DType::Int64), {1, C, 1, 1});
  Var values = e.call1("aten::index.Tensor", {input, EArg::list({n, c, index(y), index(x)})});
  return where_scalar_else(e, unsqueeze(e, inside, 1), values, 0.0);
}

std::vector<Var> grid_sampler_2d(Emitter& e, const DecompCall& call) {
  Bound b(call);
  Var input = b.var(0), grid = b.var(1);
  const int64_t mode = b.integer(2), padding = b.integer(3);
  const DType t = e.dtype(input);
  // Nearest, bicubic and whatever the kernel rejects stay the kernel.
  if (mode != 0 || padding < 0 || padding > 2 || (t != DType::Float32 && t != DType::Float64) ||
      e.dtype(grid) != t || e.dim(input) != 4 || e.dim(grid) != 4)
    return {};
  const Shape s = e.sizes(input);
  const Axis ax{s[3], padding, b.boolean(4), t}, ay{s[2], padding, b.boolean(4), t};
  Var x = position(e, e.call1("aten::select.int", {grid, int64_t(-1), int64_t(0)}), ax);
  Var y = position(e, e.call1("aten::select.int", {grid, int64_t(-1), int64_t(1)}), ay);
  Var xw = unary(e, "floor", x), yn = unary(e, "floor", y);
  Var one_t = scalar_tensor(e, 1.0, t);
  Var w = sub(e, x, xw), n = sub(e, y, yn);
  Var east = sub(e, one_t, w), south = sub(e, one_t, n);
  auto weight = [&](Var a, Var c) { return unsqueeze(e, mul(e, a, c), 1); };
  Var nw = weight(south, east), ne = weight(south, w), sw = weight(n, east), se = weight(n, w);
  Var xe = add(e, xw, 1.0), ys = add(e, yn, 1.0);
  Var v_nw = gather(e, input, xw, yn), v_ne = gather(e, input, xe, yn);
  Var v_sw = gather(e, input, xw, ys), v_se = gather(e, input, xe, ys);
  return one(fma(e, v_se, se, fma(e, v_sw, sw, fma(e, v_ne, ne, mul(e, v_nw, nw)))));
}

}  // namespace

void add_grid_sample_decomps(DecompTable& t) {
  t["aten::affine_grid_generator.default"] = affine_grid_generator;
  t["aten::affine_grid_generator_backward.default"] = affine_grid_generator_backward;
  t["aten::grid_sampler_2d.default"] = grid_sampler_2d;
}

}  // namespace kiln::decomp
