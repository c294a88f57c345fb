// View and layout ops down to view, permute, expand, slice, select, squeeze,
// unsqueeze and cat; copies of views (`*_copy`) are the views themselves, since
// a functional graph never writes through an alias.
#include <algorithm>

#include "compiler/decomp/decomp_util.h"

namespace kiln::decomp {
namespace {

// sizes with a -1 replaced by what makes numel elements.
Shape infer_size(Shape sizes, int64_t numel) {
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      KILN_USER_CHECK(infer < 0, "only one dimension can be inferred");
      infer = int64_t(i);
    } else {
      known *= sizes[i];
    }
  }
  if (infer >= 0) {
    KILN_USER_CHECK(known != 0 && numel % known == 0, "shape '", shape_str(sizes), "' is invalid for input of size ",
                    numel);
    sizes[size_t(infer)] = numel / known;
  }
  KILN_USER_CHECK(shape_numel(sizes) == numel, "shape '", shape_str(sizes), "' is invalid for input of size ", numel);
  return sizes;
}

Var reshape_to(Emitter& e, Var x, const Shape& sizes) { return reshape(e, x, infer_size(sizes, e.tensor(x).numel())); }

// ---- splitting ----

std::vector<Var> split_sizes(Emitter& e, Var x, const std::vector<int64_t>& sizes, int64_t dim) {
  return e.call("aten::split_with_sizes.default", {x, sizes, dim});
}

std::vector<int64_t> even_split(int64_t n, int64_t split_size) {
  KILN_USER_CHECK(split_size >= 0, "split expects split_size be non-negative, but got split_size=", split_size);
  KILN_USER_CHECK(split_size > 0 || n == 0,
                  "split_size can only be 0 if dimension size is 0, but got dimension size of ", n);
  std::vector<int64_t> sizes;
  if (n == 0) return {0};
  for (int64_t start = 0; start < n; start += split_size) sizes.push_back(std::min(split_size, n - start));
  return sizes;
}

std::vector<Var> split_tensor(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  int64_t dim = wrap_dim(b.integer(2), e.dim(x));
  return split_sizes(e, x, even_split(e.sizes(x)[size_t(dim)], b.integer(1)), dim);
}
std::vector<Var> split_with_sizes(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return split_sizes(e, b.var(0), b.ints(1), b.integer(2));
}

std::vector<Var> chunk(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  int64_t chunks = b.integer(1), dim = wrap_dim(b.integer(2), e.dim(x));
  KILN_USER_CHECK(chunks > 0, "chunk expects `chunks` to be greater than 0, got: ", chunks);
  int64_t n = e.sizes(x)[size_t(dim)];
  int64_t split_size = (n + chunks - 1) / chunks;
  if (split_size == 0 && n == 0) return split_sizes(e, x, std::vector<int64_t>(size_t(chunks), 0), dim);
  return split_sizes(e, x, even_split(n, split_size), dim);
}

std::vector<Var> unbind(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  int64_t dim = wrap_dim(b.integer(1), e.dim(x));
  std::vector<Var> out;
  for (int64_t i = 0; i < e.sizes(x)[size_t(dim)]; ++i) out.push_back(e.call1("aten::select.int", {x, dim, i}));
  return out;
}

// Slices between consecutive boundaries (clamped to [0, n]).
std::vector<Var> slices_at(Emitter& e, Var x, int64_t dim, const std::vector<int64_t>& bounds) {
  std::vector<Var> out;
  int64_t n = e.sizes(x)[size_t(dim)];
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    int64_t lo = std::clamp<int64_t>(bounds[i], 0, n), hi = std::clamp<int64_t>(bounds[i + 1], 0, n);
    out.push_back(slice(e, x, dim, lo, std::max(lo, hi)));
  }
  return out;
}
std::vector<Var> tensor_split_sections(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  int64_t sections = b.integer(1), dim = wrap_dim(b.integer(2), e.dim(x));
  KILN_USER_CHECK(sections > 0, "number of sections must be larger than 0, got ", sections);
  int64_t n = e.sizes(x)[size_t(dim)], base = n / sections, extra = n % sections;
  std::vector<int64_t> bounds{0};
  for (int64_t i = 0; i < sections; ++i) bounds.push_back(bounds.back() + base + (i < extra ? 1 : 0));
  return slices_at(e, x, dim, bounds);
}
std::vector<Var> tensor_split_indices(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  int64_t dim = wrap_dim(b.integer(2), e.dim(x)), n = e.sizes(x)[size_t(dim)];
  std::vector<int64_t> bounds{0};
  for (int64_t i : b.ints(1)) bounds.push_back(i < 0 ? i + n : i);
  bounds.push_back(n);
  return slices_at(e, x, dim, bounds);
}

// ---- joining ----

std::vector<Var> stack(Emitter& e, const DecompCall& c) {
  Bound b(c);
  std::vector<Var> xs = b.vars(0);
  KILN_USER_CHECK(!xs.empty(), "stack expects a non-empty TensorList");
  int64_t dim = wrap_dim(b.integer(1), e.dim(xs[0]) + 1);
  std::vector<Var> parts;
  for (Var x : xs) parts.push_back(unsqueeze(e, x, dim));
  return one(cat(e, parts, dim));
}

Var at_least(Emitter& e, Var x, int64_t dims) {
  if (e.dim(x) >= dims) return x;
  Shape s = e.sizes(x);
  while (int64_t(s.size()) < dims) s.insert(s.begin(), 1);
  return view(e, x, s);
}
std::vector<Var> hstack(Emitter& e, const DecompCall& c) {
  std::vector<Var> xs;
  for (Var x : Bound(c).vars(0)) xs.push_back(at_least(e, x, 1));
  KILN_USER_CHECK(!xs.empty(), "hstack expects a non-empty TensorList");
  return one(cat(e, xs, e.dim(xs[0]) == 1 ? 0 : 1));
}
std::vector<Var> vstack(Emitter& e, const DecompCall& c) {
  std::vector<Var> xs;
  for (Var x : Bound(c).vars(0)) xs.push_back(at_least(e, x, 2));
  return one(cat(e, xs, 0));
}

// repeat: each dim i becomes a (repeats[i], size[i]) pair through unsqueeze and
// expand, and the pairs merge into one dim by a reshape.
Var repeat_of(Emitter& e, Var x, const std::vector<int64_t>& repeats) {
  const int64_t nd = int64_t(repeats.size());
  KILN_USER_CHECK(nd >= e.dim(x),
                  "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  while (e.dim(x) < nd) x = unsqueeze(e, x, 0);
  const Shape s = e.sizes(x);
  Shape expanded, merged;
  for (int64_t i = 0; i < nd; ++i) {
    x = unsqueeze(e, x, 2 * i);
    expanded.push_back(repeats[size_t(i)]);
    expanded.push_back(s[size_t(i)]);
    merged.push_back(repeats[size_t(i)] * s[size_t(i)]);
  }
  return reshape(e, expand(e, x, expanded), merged);
}
std::vector<Var> repeat(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(repeat_of(e, b.var(0), b.ints(1)));
}
std::vector<Var> tile(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  std::vector<int64_t> dims = b.ints(1);
  while (int64_t(dims.size()) < e.dim(x)) dims.insert(dims.begin(), 1);
  return one(e.call1("aten::repeat.default", {x, dims}));
}

// ---- permutations ----

std::vector<Var> transpose_dims(Emitter& e, Var x, int64_t d0, int64_t d1) {
  const int64_t nd = e.dim(x);
  if (nd == 0) return one(unary(e, "alias", x));
  std::vector<int64_t> perm = all_dims(nd);
  std::swap(perm[size_t(wrap_dim(d0, nd))], perm[size_t(wrap_dim(d1, nd))]);
  return one(permute(e, x, perm));
}
std::vector<Var> transpose(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return transpose_dims(e, b.var(0), b.integer(1), b.integer(2));
}
std::vector<Var> t_op(Emitter& e, const DecompCall& c) {
  Var x = Bound(c).var(0);
  KILN_USER_CHECK(e.dim(x) <= 2, "t() expects a tensor with <= 2 dimensions, but self is ", e.dim(x), "D");
  if (e.dim(x) < 2) return one(unary(e, "alias", x));
  return one(permute(e, x, {1, 0}));
}
std::vector<Var> numpy_t(Emitter& e, const DecompCall& c) {
  Var x = Bound(c).var(0);
  std::vector<int64_t> perm = all_dims(e.dim(x));
  std::reverse(perm.begin(), perm.end());
  return one(permute(e, x, perm));
}
std::vector<Var> permute_copy(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(permute(e, b.var(0), b.ints(1)));
}

// movedim: sources go to their destinations, the other dims keep their order.
Var movedim_of(Emitter& e, Var x, std::vector<int64_t> src, std::vector<int64_t> dst) {
  const int64_t nd = e.dim(x);
  KILN_USER_CHECK(src.size() == dst.size(), "movedim: Invalid source or destination dims: source (", shape_str(src),
                  " dims) should contain the same number of dims as destination (", shape_str(dst), " dims)");
  src = wrap_dims(src, std::max<int64_t>(nd, 1));
  dst = wrap_dims(dst, std::max<int64_t>(nd, 1));
  std::vector<int64_t> perm(size_t(nd), -1);
  std::vector<bool> used(size_t(nd), false);
  for (size_t i = 0; i < src.size(); ++i) {
    perm[size_t(dst[i])] = src[i];
    used[size_t(src[i])] = true;
  }
  int64_t next = 0;
  for (int64_t& p : perm) {
    if (p >= 0) continue;
    while (used[size_t(next)]) ++next;
    p = next++;
  }
  return permute(e, x, perm);
}
std::vector<Var> movedim_int(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(movedim_of(e, b.var(0), {b.integer(1)}, {b.integer(2)}));
}
std::vector<Var> movedim_list(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(movedim_of(e, b.var(0), b.ints(1), b.ints(2)));
}

// ---- reshapes ----

std::vector<Var> reshape_op(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(reshape_to(e, b.var(0), b.ints(1)));
}
std::vector<Var> view_copy(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(view(e, b.var(0), b.ints(1)));
}
std::vector<Var> view_as(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(view(e, b.var(0), e.sizes(b.var(1))));
}
std::vector<Var> flatten(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  const int64_t nd = e.dim(x);
  if (nd == 0) return one(reshape(e, x, {1}));
  int64_t start = wrap_dim(b.integer(1), nd), end = wrap_dim(b.integer(2), nd);
  KILN_USER_CHECK(start <= end, "flatten() has invalid args: start_dim cannot come after end_dim");
  const Shape s = e.sizes(x);
  Shape out(s.begin(), s.begin() + start);
  int64_t merged = 1;
  for (int64_t d = start; d <= end; ++d) merged *= s[size_t(d)];
  out.push_back(merged);
  out.insert(out.end(), s.begin() + end + 1, s.end());
  return one(reshape(e, x, out));
}
std::vector<Var> unflatten(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  const Shape s = e.sizes(x);
  int64_t dim = wrap_dim(b.integer(1), e.dim(x));
  Shape inner = infer_size(b.ints(2), s[size_t(dim)]);
  Shape out(s.begin(), s.begin() + dim);
  out.insert(out.end(), inner.begin(), inner.end());
  out.insert(out.end(), s.begin() + dim + 1, s.end());
  return one(reshape(e, x, out));
}
std::vector<Var> ravel(Emitter& e, const DecompCall& c) {
  Var x = Bound(c).var(0);
  return one(reshape(e, x, {e.tensor(x).numel()}));
}

std::vector<Var> expand_as(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(expand(e, b.var(0), e.sizes(b.var(1))));
}
std::vector<Var> expand_copy(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(expand(e, b.var(0), b.ints(1)));
}

std::vector<Var> squeeze_all(Emitter& e, const DecompCall& c) {
  Var x = Bound(c).var(0);
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < e.dim(x); ++d)
    if (e.sizes(x)[size_t(d)] == 1) dims.push_back(d);
  if (dims.empty()) return one(unary(e, "alias", x));
  return one(squeeze_dims(e, x, dims));
}

// One view op under another name, with the same arguments (the `*_copy` ops).
template <const char* Op>
std::vector<Var> same_args(Emitter& e, const DecompCall& c) {
  return e.call(Op, c.args, c.kwargs);
}
constexpr char kSqueezeDim[] = "aten::squeeze.dim";
constexpr char kSqueezeDims[] = "aten::squeeze.dims";
constexpr char kSqueeze[] = "aten::squeeze.default";
constexpr char kUnsqueeze[] = "aten::unsqueeze.default";
constexpr char kSelect[] = "aten::select.int";
constexpr char kSlice[] = "aten::slice.Tensor";
constexpr char kDiagonal[] = "aten::diagonal.default";
constexpr char kAlias[] = "aten::alias.default";
constexpr char kAsStrided[] = "aten::as_strided.default";
constexpr char kTranspose[] = "aten::transpose.int";
constexpr char kT[] = "aten::t.default";
constexpr char kUnbind[] = "aten::unbind.int";
constexpr char kSplit[] = "aten::split.Tensor";
constexpr char kSplitWithSizes[] = "aten::split_with_sizes.default";
constexpr char kUnfold[] = "aten::unfold.default";
constexpr char kExpand[] = "aten::expand.default";
constexpr char kReshapeAlias[] = "aten::_reshape_alias.default";

std::vector<Var> alias_of_first(Emitter& e, const DecompCall& c) { return one(unary(e, "alias", Bound(c).var(0))); }
std::vector<Var> clone_of_first(Emitter& e, const DecompCall& c) {
  return one(e.call1("aten::clone.default", {Bound(c).var(0)}));
}
std::vector<Var> contiguous(Emitter& e, const DecompCall& c) {
  Var x = Bound(c).var(0);
  if (e.tensor(x).is_contiguous()) return one(unary(e, "alias", x));
  return one(e.call1("aten::clone.default", {x}, {{"memory_format", "contiguous_format"}}));
}

// _reshape_alias(self, size, stride): a reshape whose strides were worked out beforehand.
std::vector<Var> reshape_alias(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(reshape(e, b.var(0), b.ints(1)));
}

std::vector<Var> narrow(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  int64_t dim = wrap_dim(b.integer(1), e.dim(x)), n = e.sizes(x)[size_t(dim)];
  int64_t start = b.integer(2), length = b.integer(3);
  if (start < 0) start += n;
  KILN_USER_CHECK(start >= 0 && length >= 0 && start + length <= n, "start (", b.integer(2), ") + length (", length,
                  ") exceeds dimension size (", n, ").");
  return one(slice(e, x, dim, start, start + length));
}

// ---- dtype conversions ----

Var to_of(Emitter& e, Var x, std::optional<DType> dtype, bool copy) {
  if (dtype && *dtype != e.dtype(x)) return to_dtype(e, x, *dtype);
  return copy ? e.call1("aten::clone.default", {x}) : unary(e, "alias", x);
}
std::vector<Var> to_dtype_op(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(to_of(e, b.var(0), b.value(1).to_dtype(), b.boolean(3)));
}
std::vector<Var> to_device(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(to_of(e, b.var(0), b.value(2).to_dtype(), b.boolean(4)));
}
std::vector<Var> to_dtype_layout(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(to_of(e, b.var(0), b.opt_dtype(1), b.boolean(6)));
}
std::vector<Var> to_other(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(to_of(e, b.var(0), e.dtype(b.var(1)), b.boolean(3)));
}

std::vector<Var> fill_tensor(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0), v = b.var(1);
  KILN_USER_CHECK(e.dim(v) == 0, "fill_ only supports 0-dimension value tensor but got tensor with ", e.dim(v),
                  " dimensions.");
  return one(e.call1("aten::clone.default", {expand(e, to_dtype(e, v, e.dtype(x)), e.sizes(x))}));
}
std::vector<Var> zero(Emitter& e, const DecompCall& c) {
  return one(e.call1("aten::fill.Scalar", {Bound(c).var(0), int64_t(0)}));
}

// ---- reorderings ----

Var roll_dim(Emitter& e, Var x, int64_t shift, int64_t dim) {
  int64_t n = e.sizes(x)[size_t(dim)];
  if (n == 0) return x;
  int64_t s = ((shift % n) + n) % n;
  if (s == 0) return x;
  return cat(e, {slice(e, x, dim, n - s, n), slice(e, x, dim, 0, n - s)}, dim);
}
std::vector<Var> roll(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  std::vector<int64_t> shifts = b.ints(1), dims = b.ints(2);
  if (dims.empty()) {
    KILN_USER_CHECK(shifts.size() == 1, "roll: shifts and dims must align when dims is empty");
    Shape s = e.sizes(x);
    Var flat = roll_dim(e, reshape(e, x, {e.tensor(x).numel()}), shifts[0], 0);
    return one(reshape(e, flat, s));
  }
  KILN_USER_CHECK(shifts.size() == dims.size(), "shifts and dimensions must align. shifts: ", shifts.size(),
                  ", dims:", dims.size());
  for (size_t i = 0; i < dims.size(); ++i) x = roll_dim(e, x, shifts[i], wrap_dim(dims[i], e.dim(x)));
  if (x == b.var(0)) x = e.call1("aten::clone.default", {x});
  return one(x);
}

std::vector<Var> fliplr(Emitter& e, const DecompCall& c) {
  return one(e.call1("aten::flip.default", {Bound(c).var(0), std::vector<int64_t>{1}}));
}
std::vector<Var> flipud(Emitter& e, const DecompCall& c) {
  return one(e.call1("aten::flip.default", {Bound(c).var(0), std::vector<int64_t>{0}}));
}

// tril/triu: keep the elements whose column - row is on the right side of `diagonal`.
std::vector<Var> triangle(Emitter& e, const DecompCall& c, const char* keep_cmp) {
  Bound b(c);
  Var x = b.var(0);
  KILN_USER_CHECK(e.dim(x) >= 2, "tril/triu: input tensor must have at least 2 dimensions");
  const Shape s = e.sizes(x);
  Var rows = unsqueeze(e, arange(e, s[s.size() - 2], DType::Int64), 1);
  Var cols = arange(e, s.back(), DType::Int64);
  Var keep = compare(e, keep_cmp, sub(e, cols, rows), b.integer(1));
  return one(where_scalar_else(e, keep, x, 0.0));
}
std::vector<Var> tril(Emitter& e, const DecompCall& c) { return triangle(e, c, "le"); }
std::vector<Var> triu(Emitter& e, const DecompCall& c) { return triangle(e, c, "ge"); }

// unfold(dimension, size, step): the windows gathered with index_select, the
// window axis moved last.
std::vector<Var> unfold(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  const int64_t nd = e.dim(x);
  int64_t dim = wrap_dim(b.integer(1), std::max<int64_t>(nd, 1)), size = b.integer(2), step = b.integer(3);
  KILN_USER_CHECK(nd > 0, "unfold of a 0-dim tensor is not decomposed");
  int64_t n = e.sizes(x)[size_t(dim)];
  KILN_USER_CHECK(size <= n && step > 0, "maximum size for tensor at dimension ", dim, " is ", n, " but size is ",
                  size);
  int64_t count = (n - size) / step + 1;
  Var starts = unsqueeze(e, mul(e, arange(e, count, DType::Int64), step), 1);
  Var index = reshape(e, add(e, starts, arange(e, size, DType::Int64)), {count * size});
  Var gathered = e.call1("aten::index_select.default", {x, dim, index});
  Shape split = e.sizes(x);
  split[size_t(dim)] = count;
  split.insert(split.begin() + dim + 1, size);
  std::vector<int64_t> perm;
  for (int64_t d = 0; d <= nd; ++d)
    if (d != dim + 1) perm.push_back(d);
  perm.push_back(dim + 1);
  return one(permute(e, view(e, gathered, split), perm));
}

}  // namespace

void add_shape_decomps(DecompTable& t) {
  t["aten::split.Tensor"] = split_tensor;
  t["aten::split.sizes"] = split_with_sizes;
  t["aten::chunk.default"] = chunk;
  t["aten::unbind.int"] = unbind;
  t["aten::tensor_split.sections"] = tensor_split_sections;
  t["aten::tensor_split.indices"] = tensor_split_indices;
  t["aten::stack.default"] = stack;
  t["aten::hstack.default"] = hstack;
  t["aten::vstack.default"] = vstack;
  t["aten::repeat.default"] = repeat;
  t["aten::tile.default"] = tile;
  t["aten::t.default"] = t_op;
  t["aten::t_copy.default"] = same_args<kT>;
  t["aten::transpose.int"] = transpose;
  t["aten::transpose_copy.int"] = same_args<kTranspose>;
  t["aten::swapaxes.default"] = transpose;
  t["aten::swapdims.default"] = transpose;
  t["aten::numpy_T.default"] = numpy_t;
  t["aten::permute_copy.default"] = permute_copy;
  t["aten::movedim.int"] = movedim_int;
  t["aten::moveaxis.int"] = movedim_int;
  t["aten::movedim.intlist"] = movedim_list;
  t["aten::moveaxis.intlist"] = movedim_list;
  t["aten::reshape.default"] = reshape_op;
  t["aten::_unsafe_view.default"] = reshape_op;
  t["aten::_reshape_alias.default"] = reshape_alias;
  t["aten::_reshape_alias_copy.default"] = same_args<kReshapeAlias>;
  t["aten::view_copy.default"] = view_copy;
  t["aten::view_as.default"] = view_as;
  t["aten::flatten.using_ints"] = flatten;
  t["aten::unflatten.int"] = unflatten;
  t["aten::ravel.default"] = ravel;
  t["aten::expand_as.default"] = expand_as;
  t["aten::broadcast_to.default"] = expand_copy;
  t["aten::expand_copy.default"] = same_args<kExpand>;
  t["aten::squeeze.default"] = squeeze_all;
  t["aten::squeeze_copy.default"] = same_args<kSqueeze>;
  t["aten::squeeze_copy.dim"] = same_args<kSqueezeDim>;
  t["aten::squeeze_copy.dims"] = same_args<kSqueezeDims>;
  t["aten::unsqueeze_copy.default"] = same_args<kUnsqueeze>;
  t["aten::select_copy.int"] = same_args<kSelect>;
  t["aten::slice_copy.Tensor"] = same_args<kSlice>;
  t["aten::diagonal_copy.default"] = same_args<kDiagonal>;
  t["aten::alias_copy.default"] = same_args<kAlias>;
  t["aten::as_strided_copy.default"] = same_args<kAsStrided>;
  t["aten::unbind_copy.int"] = same_args<kUnbind>;
  t["aten::split_copy.Tensor"] = same_args<kSplit>;
  t["aten::split_with_sizes_copy.default"] = same_args<kSplitWithSizes>;
  t["aten::unfold_copy.default"] = same_args<kUnfold>;
  t["aten::narrow.default"] = narrow;
  t["aten::narrow_copy.default"] = narrow;
  t["aten::detach.default"] = alias_of_first;
  t["aten::detach_copy.default"] = alias_of_first;
  t["aten::lift_fresh.default"] = alias_of_first;
  t["aten::lift_fresh_copy.default"] = clone_of_first;
  t["aten::contiguous.default"] = contiguous;
  t["aten::to.dtype"] = to_dtype_op;
  t["aten::to.device"] = to_device;
  t["aten::to.dtype_layout"] = to_dtype_layout;
  t["aten::to.other"] = to_other;
  t["aten::fill.Tensor"] = fill_tensor;
  t["aten::zero.default"] = zero;
  t["aten::roll.default"] = roll;
  t["aten::fliplr.default"] = fliplr;
  t["aten::flipud.default"] = flipud;
  t["aten::tril.default"] = tril;
  t["aten::triu.default"] = triu;
  t["aten::unfold.default"] = unfold;
}

}  // namespace kiln::decomp
