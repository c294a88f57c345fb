// Views, copies and dtype conversions: the gradient is the inverse layout
// change (reshape back, permute back, pad back what a slice cut away).
// Broadcasting views (expand) need nothing: GradContext::set sums to shape.
#include <algorithm>
#include <numeric>

#include "compiler/aot/grad_context.h"
#include "compiler/aot/grad_ops.h"

namespace kiln::aot {
namespace {

void identity_grad(GradContext& x) { x.set("self", x.grad()); }

void reshape_grad(GradContext& x) { x.set("self", reshape(x.e, x.grad(), x.e.sizes(x.var("self")))); }

void permute_grad(GradContext& x) {
  int64_t n = x.e.dim(x.var("self"));
  std::vector<int64_t> dims = x.ints("dims"), inverse(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) inverse[size_t(wrap(dims[size_t(i)], n))] = i;
  x.set("self", permute(x.e, x.grad(), inverse));
}

void transpose_grad(GradContext& x) {
  const char* a = x.call.op == "aten::swapaxes.default" ? "axis0" : "dim0";
  const char* b = x.call.op == "aten::swapaxes.default" ? "axis1" : "dim1";
  x.set("self", transpose(x.e, x.grad(), x.integer(a), x.integer(b)));
}

void t_grad(GradContext& x) {
  Var g = x.grad();
  x.set("self", x.e.dim(g) < 2 ? g : transpose(x.e, g, 0, 1));
}

void numpy_t_grad(GradContext& x) {
  int64_t n = x.e.dim(x.grad());
  std::vector<int64_t> rev(static_cast<size_t>(n));
  std::iota(rev.rbegin(), rev.rend(), 0);
  x.set("self", permute(x.e, x.grad(), rev));
}

void movedim_grad(GradContext& x) {
  x.set("self", x.e.call1(x.call.op, {x.grad(), x.arg("destination"), x.arg("source")}));
}

void select_grad(GradContext& x) {
  Shape sizes = x.e.sizes(x.var("self"));
  x.set("self", select_backward(x.e, x.grad(), sizes, x.integer("dim"), x.integer("index")));
}

// Clamps slice bounds as ATen does: negative from the end, then into [0, n].
std::pair<int64_t, int64_t> slice_bounds(std::optional<int64_t> start, std::optional<int64_t> end, int64_t n) {
  int64_t s = start.value_or(0), t = end.value_or(n);
  if (s < 0) s += n;
  if (t < 0) t += n;
  s = std::clamp<int64_t>(s, 0, n);
  t = std::clamp<int64_t>(t, s, n);
  return {s, t};
}

void slice_grad(GradContext& x) {
  Shape sizes = x.e.sizes(x.var("self"));
  int64_t dim = wrap(x.integer("dim"), int64_t(sizes.size()));
  auto [s, t] = slice_bounds(x.opt_integer("start"), x.opt_integer("end"), sizes[size_t(dim)]);
  x.set("self", slice_backward(x.e, x.grad(), sizes, dim, s, t, x.integer("step")));
}

void narrow_grad(GradContext& x) {
  Emitter& e = x.e;
  Shape sizes = e.sizes(x.var("self"));
  int64_t dim = wrap(x.integer("dim"), int64_t(sizes.size()));
  int64_t length = x.integer("length");
  if (x.call.op == "aten::narrow.Tensor") {
    // The start is a tensor, unknown to a graph: scatter through index_add at start + arange(length).
    Var index = add(e, e.call1("aten::arange.default", {length}, {{"dtype", DType::Int64}}), x.var("start"));
    return x.set("self", e.call1("aten::index_add.default", {zeros(e, sizes, e.dtype(x.grad())), dim, index, x.grad()}));
  }
  int64_t start = x.integer("start");
  if (start < 0) start += sizes[size_t(dim)];
  x.set("self", slice_backward(e, x.grad(), sizes, dim, start, start + length, 1));
}

// The diagonal's gradient placed back with a one-hot [L, n1, n2] pattern, so
// no in-place write (PyTorch's diagonal_backward copies into a view).
void diagonal_grad(GradContext& x) {
  Emitter& e = x.e;
  Var self = x.var("self");
  Shape sizes = e.sizes(self);
  int64_t nd = int64_t(sizes.size());
  int64_t d1 = wrap(x.integer("dim1"), nd), d2 = wrap(x.integer("dim2"), nd), offset = x.integer("offset");
  int64_t n1 = sizes[size_t(d1)], n2 = sizes[size_t(d2)];
  Var g = x.grad();
  int64_t len = e.sizes(g).back();
  auto arange = [&](int64_t n) { return e.call1("aten::arange.default", {n}, {{"dtype", DType::Int64}}); };
  Var l = reshape(e, arange(len), {len, 1, 1});
  Var rows = reshape(e, arange(n1), {1, n1, 1});
  Var cols = reshape(e, arange(n2), {1, 1, n2});
  Var on_row = compare(e, "eq", rows, e.call1("aten::add.Scalar", {l, std::max<int64_t>(-offset, 0)}));
  Var on_col = compare(e, "eq", cols, e.call1("aten::add.Scalar", {l, std::max<int64_t>(offset, 0)}));
  Var pattern = cast(e, logical_and(e, on_row, on_col), e.dtype(g));  // [L, n1, n2]
  Var placed = sum(e, mul(e, unsqueeze(e, unsqueeze(e, g, -1), -1), pattern), {-3}, false);  // [..., n1, n2]
  x.set("self", e.call1("aten::movedim.intlist", {placed, std::vector<int64_t>{-2, -1}, std::vector<int64_t>{d1, d2}}));
}

// unfold: window w, offset k reads input index w * step + k; index_add sums overlaps.
void unfold_grad(GradContext& x) {
  Emitter& e = x.e;
  Var self = x.var("self");
  Shape sizes = e.sizes(self);
  if (sizes.empty()) return x.set("self", reshape(e, x.grad(), {}));
  int64_t dim = wrap(x.integer("dimension"), int64_t(sizes.size()));
  int64_t size = x.integer("size"), step = x.integer("step");
  Var g = e.call1("aten::movedim.int", {x.grad(), dim, int64_t(-2)});  // [..., W, size]
  Shape gs = e.sizes(g);
  int64_t windows = gs[gs.size() - 2];
  Shape flat(gs.begin(), gs.end() - 2);
  flat.push_back(windows * size);
  g = reshape(e, g, flat);
  Var w = e.call1("aten::mul.Scalar", {e.call1("aten::arange.default", {windows}, {{"dtype", DType::Int64}}), step});
  Var k = e.call1("aten::arange.default", {size}, {{"dtype", DType::Int64}});
  Var index = reshape(e, add(e, unsqueeze(e, w, 1), unsqueeze(e, k, 0)), {windows * size});
  Shape moved = sizes;
  moved.erase(moved.begin() + dim);
  moved.push_back(sizes[size_t(dim)]);
  Var acc = e.call1("aten::index_add.default", {zeros(e, moved, e.dtype(g)), int64_t(-1), index, g});
  x.set("self", e.call1("aten::movedim.int", {acc, int64_t(-1), dim}));
}

// The storage positions an as_strided view reads, flattened in its order.
Var strided_positions(Emitter& e, const Shape& sz, const Shape& st, int64_t base) {
  Var pos = e.call1("aten::scalar_tensor.default", {base}, {{"dtype", DType::Int64}});
  for (size_t d = 0; d < sz.size(); ++d) {
    Shape view(sz.size(), 1);
    view[d] = sz[d];
    Var r = e.call1("aten::mul.Scalar", {e.call1("aten::arange.default", {sz[d]}, {{"dtype", DType::Int64}}), st[d]});
    pos = add(e, pos, reshape(e, r, view));
  }
  return reshape(e, expand(e, pos, sz), {shape_numel(sz)});
}

// as_strided over the input's own storage geometry: every output element
// adds into the storage position it reads, and the input reads its positions
// back out of that storage.
void as_strided_grad(GradContext& x) {
  Emitter& e = x.e;
  Var self = x.var("self");
  const Tensor& meta = e.tensor(self);
  Shape in_sizes = meta.sizes(), in_strides = meta.strides();
  int64_t in_offset = meta.storage_offset();
  Shape sizes = x.ints("size"), strides = x.ints("stride");
  int64_t offset = x.opt_integer("storage_offset").value_or(in_offset);
  auto positions = [&](const Shape& sz, const Shape& st, int64_t base) { return strided_positions(e, sz, st, base); };
  auto extent = [](const Shape& sz, const Shape& st, int64_t base) {
    int64_t hi = base;
    for (size_t d = 0; d < sz.size(); ++d) hi += (sz[d] - 1) * st[d];
    return hi + 1;
  };
  int64_t storage = std::max(extent(sizes, strides, offset), extent(in_sizes, in_strides, in_offset));
  Var g = reshape(e, contiguous(e, x.grad()), {shape_numel(sizes)});
  Var acc = e.call1("aten::index_add.default",
                    {zeros(e, {storage}, e.dtype(g)), int64_t(0), positions(sizes, strides, offset), g});
  Var back = e.call1("aten::index_select.default", {acc, int64_t(0), positions(in_sizes, in_strides, in_offset)});
  x.set("self", reshape(e, back, in_sizes));
}

// as_strided_scatter(self, src, size, stride, offset) writes src over the
// positions of a contiguous self that the view reads (x[i] = v recorded on a
// tensor): self's gradient is the output's with those positions zeroed, src's
// the output's at those positions.
void as_strided_scatter_grad(GradContext& x) {
  Emitter& e = x.e;
  const Shape self_sizes = e.tensor(x.var("self")).sizes();
  const Shape sizes = x.ints("size"), strides = x.ints("stride");
  Var flat = reshape(e, contiguous(e, x.grad()), {shape_numel(self_sizes)});
  Var pos = strided_positions(e, sizes, strides, x.opt_integer("storage_offset").value_or(0));
  if (x.needs("self"))
    x.set("self", reshape(e, e.call1("aten::index_fill.int_Scalar", {flat, int64_t(0), pos, 0.0}), self_sizes));
  if (x.needs("src")) x.set("src", reshape(e, e.call1("aten::index_select.default", {flat, int64_t(0), pos}), sizes));
}

// Multi-output splits: concatenate the pieces' gradients (zeros where none).
void split_grad(GradContext& x) {
  Emitter& e = x.e;
  std::vector<Var> gs;
  for (size_t i = 0; i < x.num_outputs(); ++i) gs.push_back(x.grad_or_zeros(i));
  int64_t dim = x.integer("dim");
  if (x.call.op.rfind("aten::unbind", 0) == 0)
    return x.set("self", e.call1("aten::stack.default", {EArg::list(gs), dim}));
  x.set("self", e.call1("aten::cat.default", {EArg::list(gs), dim}));
}

void zeros_grad(GradContext& x) { x.set("self", zeros_like(x.e, x.var("self"))); }

void fill_tensor_grad(GradContext& x) {
  x.set("self", zeros_like(x.e, x.var("self")));
  if (x.needs("value")) x.set("value", sum_all(x.e, x.grad()));
}

void copy_grad(GradContext& x) {
  x.set("self", zeros_like(x.e, x.var("self")));
  x.set("src", x.grad());
}

}  // namespace

void register_view_derivatives(DerivativeTable& t) {
  const std::vector<std::string> self{"self"};
  for (const char* op : {"aten::alias.default", "aten::alias_copy.default", "aten::clone.default",
                         "aten::contiguous.default", "aten::lift_fresh.default", "aten::lift_fresh_copy.default",
                         "aten::expand.default", "aten::expand_copy.default", "aten::expand_as.default",
                         "aten::broadcast_to.default"})
    t.add<identity_grad>(op, self, kSavesNothing);
  // Conversions: the gradient goes back in the input's dtype (set casts).
  for (const char* op : {"aten::_to_copy.default", "aten::to.dtype", "aten::to.device", "aten::to.dtype_layout",
                         "aten::to.other"})
    t.add<identity_grad>(op, self, kSavesNothing);
  for (const char* op : {"aten::view.default", "aten::view_copy.default", "aten::_unsafe_view.default",
                         "aten::reshape.default", "aten::_reshape_alias.default", "aten::_reshape_alias_copy.default",
                         "aten::view_as.default", "aten::flatten.using_ints", "aten::unflatten.int", "aten::ravel.default",
                         "aten::squeeze.default", "aten::squeeze.dim", "aten::squeeze.dims", "aten::squeeze_copy.default",
                         "aten::squeeze_copy.dim", "aten::squeeze_copy.dims", "aten::unsqueeze.default",
                         "aten::unsqueeze_copy.default"})
    t.add<reshape_grad>(op, self, kSavesNothing);
  t.add<permute_grad>("aten::permute.default", self, kSavesNothing);
  t.add<permute_grad>("aten::permute_copy.default", self, kSavesNothing);
  for (const char* op : {"aten::transpose.int", "aten::transpose_copy.int", "aten::swapaxes.default",
                         "aten::swapdims.default"})
    t.add<transpose_grad>(op, self, kSavesNothing);
  t.add<t_grad>("aten::t.default", self, kSavesNothing);
  t.add<t_grad>("aten::t_copy.default", self, kSavesNothing);
  t.add<numpy_t_grad>("aten::numpy_T.default", self, kSavesNothing);
  for (const char* op : {"aten::movedim.int", "aten::movedim.intlist", "aten::moveaxis.int", "aten::moveaxis.intlist"})
    t.add<movedim_grad>(op, self, kSavesNothing);
  t.add<select_grad>("aten::select.int", self, kSavesNothing);
  t.add<select_grad>("aten::select_copy.int", self, kSavesNothing);
  t.add<slice_grad>("aten::slice.Tensor", self, kSavesNothing);
  t.add<slice_grad>("aten::slice_copy.Tensor", self, kSavesNothing);
  for (const char* op : {"aten::narrow.default", "aten::narrow_copy.default", "aten::narrow.Tensor"})
    t.add<narrow_grad>(op, self, kSavesNothing);
  t.add<diagonal_grad>("aten::diagonal.default", self, kSavesNothing);
  t.add<diagonal_grad>("aten::diagonal_copy.default", self, kSavesNothing);
  t.add<unfold_grad>("aten::unfold.default", self, kSavesNothing);
  t.add<unfold_grad>("aten::unfold_copy.default", self, kSavesNothing);
  t.add<as_strided_grad>("aten::as_strided.default", self, kSavesNothing);
  t.add<as_strided_grad>("aten::as_strided_copy.default", self, kSavesNothing);
  for (const char* op : {"aten::split.Tensor", "aten::split.sizes", "aten::split_copy.Tensor",
                         "aten::split_with_sizes.default", "aten::split_with_sizes_copy.default", "aten::chunk.default",
                         "aten::tensor_split.sections", "aten::tensor_split.indices",
                         "aten::tensor_split.tensor_indices_or_sections", "aten::unbind.int", "aten::unbind_copy.int"})
    t.add<split_grad>(op, self, kSavesNothing);
  t.add<zeros_grad>("aten::fill.Scalar", self, kSavesNothing);
  t.add<zeros_grad>("aten::zero.default", self, kSavesNothing);
  t.add<fill_tensor_grad>("aten::fill.Tensor", {"self", "value"}, kSavesNothing);
  t.add<copy_grad>("aten::copy.default", {"self", "src"}, kSavesNothing);
  t.add<as_strided_scatter_grad>("aten::as_strided_scatter.default", {"self", "src"}, kSavesNothing);
}

}  // namespace kiln::aot
