// Indexing ops down to index, index_put, gather/scatter and where; argsort and
// msort as sort; the factory functions down to full, full_like, empty, empty_strided and arange.
#include "compiler/decomp/decomp_util.h"

namespace kiln::decomp {
namespace {

std::vector<Var> unsafe_index(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(e.call1("aten::index.Tensor", {b[0], b[1]}));
}
std::vector<Var> unsafe_index_put(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(e.call1("aten::index_put.default", {b[0], b[1], b[2], b[3]}));
}

// `index` (a 1-D or 0-D list of positions along dim) shaped to broadcast along dim
// of a tensor of `ndim` dims.
Var along_dim(Emitter& e, Var index, int64_t dim, int64_t ndim) {
  Shape s(size_t(std::max<int64_t>(ndim, 1)), 1);
  s[size_t(dim)] = e.tensor(index).numel();
  return reshape(e, index, s);
}

// index_add(self, dim, index, source, alpha): scatter_add with the index spread over source's shape.
std::vector<Var> index_add(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0), index = b.var(2), src = b.var(3);
  int64_t dim = wrap_dim(b.integer(1), std::max<int64_t>(e.dim(x), 1));
  if (b.value(4).to_double() != 1.0) src = mul(e, src, b[4]);
  if (e.dim(src) == 0) src = reshape(e, src, {1});
  Var x1 = e.dim(x) == 0 ? reshape(e, x, {1}) : x;
  Var idx = expand(e, along_dim(e, index, dim, e.dim(src)), e.sizes(src));
  Var out = e.call1("aten::scatter_add.default", {x1, dim, idx, src});
  return one(e.dim(x) == 0 ? reshape(e, out, {}) : out);
}

// index_fill: a mask of the listed positions along dim, then where.
Var index_fill_of(Emitter& e, Var x, int64_t dim, Var index, Var value) {
  const int64_t nd = e.dim(x);
  dim = wrap_dim(dim, std::max<int64_t>(nd, 1));
  int64_t n = nd == 0 ? 1 : e.sizes(x)[size_t(dim)];
  Var positions = unsqueeze(e, arange(e, n, DType::Int64), 1);
  Var listed = reshape(e, index, {e.tensor(index).numel()});
  Var mask = e.call1("aten::any.dim", {compare(e, "eq", positions, listed), int64_t(1), false});
  if (nd > 0)
    mask = along_dim(e, mask, dim, nd);
  else
    mask = reshape(e, mask, {});
  return where(e, mask, value, x);
}
std::vector<Var> index_fill_scalar(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  return one(index_fill_of(e, x, b.integer(1), b.var(2), scalar_tensor(e, b[3], e.dtype(x))));
}
std::vector<Var> index_fill_tensor(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  return one(index_fill_of(e, x, b.integer(1), b.var(2), to_dtype(e, b.var(3), e.dtype(x))));
}

std::vector<Var> take(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  Var flat = reshape(e, x, {e.tensor(x).numel()});
  return one(e.call1("aten::index.Tensor", {flat, EArg::list({b.var(1)})}));
}

std::vector<Var> argwhere(Emitter& e, const DecompCall& c) { return one(unary(e, "nonzero", Bound(c).var(0))); }

// scatter's reduce names are add/multiply, scatter_reduce's sum/prod.
std::string scatter_reduce_name(const std::string& reduce) {
  if (reduce == "add") return "sum";
  if (reduce == "multiply") return "prod";
  throw Error("reduce argument must be either add or multiply, got " + reduce);
}
std::vector<Var> scatter_reduce(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(e.call1("aten::scatter_reduce.two",
                     {b.var(0), b[1], b.var(2), b.var(3), EArg(Value(scatter_reduce_name(b.str(4))))},
                     {{"include_self", true}}));
}
std::vector<Var> scatter_value_reduce(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0), index = b.var(2);
  Var src = full(e, e.sizes(index), b[3], e.dtype(x));
  return one(e.call1("aten::scatter_reduce.two", {x, b[1], index, src, EArg(Value(scatter_reduce_name(b.str(4))))},
                     {{"include_self", true}}));
}

std::vector<Var> embedding_backward(Emitter& e, const DecompCall& c) {
  Bound b(c);
  KILN_USER_CHECK(!b.boolean(5), "embedding_backward: sparse gradients are not supported");
  return one(e.call1("aten::embedding_dense_backward.default", {b[0], b[1], b[2], b[3], b[4]}));
}

// ---- sorting: the indices or values of sort ----

std::vector<Var> argsort(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return {e.call("aten::sort.default", {b[0], b[1], b[2]}).at(1)};
}
std::vector<Var> argsort_stable(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return {e.call("aten::sort.stable", {b[0]}, {{"stable", b[1]}, {"dim", b[2]}, {"descending", b[3]}}).at(1)};
}
std::vector<Var> msort(Emitter& e, const DecompCall& c) {
  return {e.call("aten::sort.default", {Bound(c).var(0), int64_t(0)}).at(0)};
}

// ---- factories ----

// The dtype keyword of a factory, if given.
EKwargs dtype_kwarg(const Bound& b, size_t i) {
  if (b.is_none(i)) return {};
  return {{"dtype", b[i]}};
}

std::vector<Var> arange_end(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(e.call1("aten::arange.start_step", {int64_t(0), b[0], int64_t(1)}, dtype_kwarg(b, 1)));
}
std::vector<Var> arange_start(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(e.call1("aten::arange.start_step", {b[0], b[1], int64_t(1)}, dtype_kwarg(b, 2)));
}

// Inductor's iota: `length` integers from `start` by `step`.
std::vector<Var> iota(Emitter& e, const DecompCall& c) {
  Bound b(c);
  const int64_t length = b.integer(0), start = b.integer(1);
  int64_t step = b.integer(2);
  int64_t span = 0, end = 0;
  KILN_USER_CHECK(length >= 0 && !__builtin_mul_overflow(length, step, &span) && !__builtin_add_overflow(start, span, &end),
                  "prims::iota: length ", length, " from ", start, " by ", step, " has no 64-bit end");
  if (length == 0) end = start, step = 1;
  return one(e.call1("aten::arange.start_step", {start, end, step}, dtype_kwarg(b, 3)));
}

// eye: row index == column index.
Var eye_of(Emitter& e, int64_t n, int64_t m, std::optional<DType> dtype) {
  Var mask = compare(e, "eq", unsqueeze(e, arange(e, n, DType::Int64), 1), arange(e, m, DType::Int64));
  return to_dtype(e, mask, dtype.value_or(kDefaultFloat));
}
std::vector<Var> eye(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(eye_of(e, b.integer(0), b.integer(0), b.opt_dtype(1)));
}
std::vector<Var> eye_m(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(eye_of(e, b.integer(0), b.integer(1), b.opt_dtype(2)));
}

// ones/zeros(size, dtype): full with the default float dtype when none is given.
template <int Fill>
std::vector<Var> filled(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(full(e, b.ints(0), int64_t(Fill), b.opt_dtype(1).value_or(kDefaultFloat)));
}
template <int Fill>
std::vector<Var> filled_like(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(e.call1("aten::full_like.default", {b.var(0), int64_t(Fill)}, dtype_kwarg(b, 1)));
}
std::vector<Var> empty_like(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0);
  DType t = b.opt_dtype(1).value_or(e.dtype(x));
  return one(e.call1("aten::empty.memory_format", {e.sizes(x)}, {{"dtype", t}}));
}

// new_*(self, size, ...): a factory with self's dtype unless another is given.
std::vector<Var> new_empty(Emitter& e, const DecompCall& c) {
  Bound b(c);
  DType t = b.opt_dtype(2).value_or(e.dtype(b.var(0)));
  return one(e.call1("aten::empty.memory_format", {b[1]}, {{"dtype", t}}));
}
std::vector<Var> new_empty_strided(Emitter& e, const DecompCall& c) {
  Bound b(c);
  DType t = b.opt_dtype(3).value_or(e.dtype(b.var(0)));
  return one(e.call1("aten::empty_strided.default", {b[1], b[2]}, {{"dtype", t}}));
}
std::vector<Var> new_full(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(full(e, b.ints(1), b[2], b.opt_dtype(3).value_or(e.dtype(b.var(0)))));
}
template <int Fill>
std::vector<Var> new_filled(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(full(e, b.ints(1), int64_t(Fill), b.opt_dtype(2).value_or(e.dtype(b.var(0)))));
}

// Inductor's prims::inductor_lookup_seed: seeds[index].clone(), a pure pick
// (only the seed factories draw).
std::vector<Var> lookup_seed(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var picked = e.call1("aten::select.int", {b.var(0), int64_t(0), b[1]});
  return one(e.call1("aten::clone.default", {picked}));
}

}  // namespace

void add_indexing_decomps(DecompTable& t) {
  t["prims::inductor_lookup_seed.default"] = lookup_seed;
  t["aten::_unsafe_index.Tensor"] = unsafe_index;
  t["aten::_unsafe_index_put.default"] = unsafe_index_put;
  t["aten::_index_put_impl.default"] = unsafe_index_put;
  t["aten::index_add.default"] = index_add;
  t["aten::index_fill.int_Scalar"] = index_fill_scalar;
  t["aten::index_fill.int_Tensor"] = index_fill_tensor;
  t["aten::take.default"] = take;
  t["aten::argwhere.default"] = argwhere;
  t["aten::scatter.reduce"] = scatter_reduce;
  t["aten::scatter.value_reduce"] = scatter_value_reduce;
  t["aten::embedding_backward.default"] = embedding_backward;
  t["aten::argsort.default"] = argsort;
  t["aten::argsort.stable"] = argsort_stable;
  t["aten::msort.default"] = msort;
  t["aten::arange.default"] = arange_end;
  t["aten::arange.start"] = arange_start;
  t["prims::iota.default"] = iota;
  t["aten::eye.default"] = eye;
  t["aten::eye.m"] = eye_m;
  t["aten::ones.default"] = filled<1>;
  t["aten::zeros.default"] = filled<0>;
  t["aten::ones_like.default"] = filled_like<1>;
  t["aten::zeros_like.default"] = filled_like<0>;
  t["aten::empty_like.default"] = empty_like;
  t["aten::new_empty.default"] = new_empty;
  t["aten::new_empty_strided.default"] = new_empty_strided;
  t["aten::new_full.default"] = new_full;
  t["aten::new_ones.default"] = new_filled<1>;
  t["aten::new_zeros.default"] = new_filled<0>;
}

}  // namespace kiln::decomp
