#include "compiler/aot/grad_ops.h"

#include <algorithm>
#include <string>

#include "core/util/status.h"

namespace kiln::aot {

int64_t wrap(int64_t dim, int64_t ndim) {
  int64_t n = std::max<int64_t>(ndim, 1);
  KILN_USER_CHECK(dim >= -n && dim < n, "dimension ", dim, " out of range for a ", ndim, "-d tensor");
  return dim < 0 ? dim + n : dim;
}

Var mul(Emitter& e, Var a, Var b) { return e.call1("aten::mul.Tensor", {a, b}); }
Var mul(Emitter& e, Var a, const Value& scalar) { return e.call1("aten::mul.Scalar", {a, scalar}); }
Var mul(Emitter& e, Var a, double scalar) { return e.call1("aten::mul.Scalar", {a, scalar}); }
Var div(Emitter& e, Var a, Var b) { return e.call1("aten::div.Tensor", {a, b}); }
Var div(Emitter& e, Var a, double scalar) { return e.call1("aten::div.Scalar", {a, scalar}); }
Var add(Emitter& e, Var a, Var b) { return e.call1("aten::add.Tensor", {a, b}); }
Var add(Emitter& e, Var a, double scalar) { return e.call1("aten::add.Scalar", {a, scalar}); }
Var sub(Emitter& e, Var a, Var b) { return e.call1("aten::sub.Tensor", {a, b}); }
Var rsub(Emitter& e, double scalar, Var a) { return e.call1("aten::rsub.Scalar", {a, scalar}); }
Var neg(Emitter& e, Var a) { return e.call1("aten::neg.default", {a}); }
Var unary(Emitter& e, const char* op, Var a) { return e.call1(op, {a}); }

Var where(Emitter& e, Var cond, Var a, Var b) { return e.call1("aten::where.self", {cond, a, b}); }
Var where(Emitter& e, Var cond, Var a, double b) { return e.call1("aten::where.ScalarOther", {cond, a, b}); }
Var where(Emitter& e, Var cond, double a, Var b) { return e.call1("aten::where.ScalarSelf", {cond, a, b}); }
Var masked_fill(Emitter& e, Var a, Var mask, double value) {
  return e.call1("aten::masked_fill.Scalar", {a, mask, value});
}
Var compare(Emitter& e, const char* how, Var a, double scalar) {
  return e.call1(std::string("aten::") + how + ".Scalar", {a, scalar});
}
Var compare(Emitter& e, const char* how, Var a, Var b) {
  return e.call1(std::string("aten::") + how + ".Tensor", {a, b});
}
Var logical_and(Emitter& e, Var a, Var b) { return e.call1("aten::logical_and.default", {a, b}); }
Var logical_or(Emitter& e, Var a, Var b) { return e.call1("aten::logical_or.default", {a, b}); }
Var logical_not(Emitter& e, Var a) { return e.call1("aten::logical_not.default", {a}); }

Var zeros_like(Emitter& e, Var like) { return e.call1("aten::zeros_like.default", {like}); }
Var ones_like(Emitter& e, Var like) { return e.call1("aten::ones_like.default", {like}); }
Var full_like(Emitter& e, Var like, double value) { return e.call1("aten::full_like.default", {like, value}); }
Var zeros(Emitter& e, Shape sizes, DType dtype) {
  return e.call1("aten::zeros.default", {std::vector<int64_t>(sizes.begin(), sizes.end())}, {{"dtype", dtype}});
}
Var cast(Emitter& e, Var a, DType dtype) {
  if (e.dtype(a) == dtype) return a;
  return e.call1("aten::_to_copy.default", {a}, {{"dtype", dtype}});
}

Var reshape(Emitter& e, Var a, Shape sizes) {
  if (e.sizes(a) == sizes) return a;
  return e.call1("aten::reshape.default", {a, std::vector<int64_t>(sizes.begin(), sizes.end())});
}
Var expand(Emitter& e, Var a, Shape sizes) {
  if (e.sizes(a) == sizes) return a;
  return e.call1("aten::expand.default", {a, std::vector<int64_t>(sizes.begin(), sizes.end())});
}
Var unsqueeze(Emitter& e, Var a, int64_t dim) { return e.call1("aten::unsqueeze.default", {a, dim}); }
Var squeeze(Emitter& e, Var a, int64_t dim) { return e.call1("aten::squeeze.dim", {a, dim}); }
Var permute(Emitter& e, Var a, const std::vector<int64_t>& dims) { return e.call1("aten::permute.default", {a, dims}); }
Var transpose(Emitter& e, Var a, int64_t d0, int64_t d1) { return e.call1("aten::transpose.int", {a, d0, d1}); }
Var contiguous(Emitter& e, Var a) { return e.call1("aten::clone.default", {a}); }
Var sum(Emitter& e, Var a, const std::vector<int64_t>& dims, bool keepdim) {
  return e.call1("aten::sum.dim_IntList", {a, dims, keepdim});
}
Var sum_all(Emitter& e, Var a) { return e.call1("aten::sum.default", {a}); }
Var mm(Emitter& e, Var a, Var b) { return e.call1("aten::mm.default", {a, b}); }
Var bmm(Emitter& e, Var a, Var b) { return e.call1("aten::bmm.default", {a, b}); }

Var sum_to(Emitter& e, Var g, Shape sizes) {
  const Shape have = e.sizes(g);
  if (have == sizes) return g;
  int64_t lead = int64_t(have.size()) - int64_t(sizes.size());
  KILN_CHECK(lead >= 0, "gradient of shape ", shape_str(have), " cannot sum to ", shape_str(sizes));
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < lead; ++d) dims.push_back(d);
  for (size_t i = 0; i < sizes.size(); ++i) {
    int64_t d = lead + int64_t(i);
    if (sizes[i] == 1 && have[size_t(d)] != 1) dims.push_back(d);
    else KILN_CHECK(sizes[i] == have[size_t(d)], "gradient of shape ", shape_str(have), " cannot sum to ", shape_str(sizes));
  }
  Var r = dims.empty() ? g : sum(e, g, dims, true);
  return reshape(e, r, sizes);
}

std::vector<int64_t> reduced_dims(const std::vector<int64_t>& dims, int64_t ndim) {
  std::vector<int64_t> out;
  if (dims.empty()) {
    for (int64_t d = 0; d < ndim; ++d) out.push_back(d);
    return out;
  }
  for (int64_t d : dims) out.push_back(wrap(d, ndim));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (ndim == 0) out.clear();
  return out;
}

Var restore_reduced_dims(Emitter& e, Var g, const std::vector<int64_t>& dims, bool keepdim, int64_t ndim) {
  if (keepdim) return g;
  for (int64_t d : reduced_dims(dims, ndim)) g = unsqueeze(e, g, d);
  return g;
}

int64_t reduced_count(Shape sizes, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : reduced_dims(dims, int64_t(sizes.size()))) n *= sizes[size_t(d)];
  return n;
}

Var slice_backward(Emitter& e, Var g, Shape sizes, int64_t dim, int64_t start, int64_t end, int64_t step) {
  int64_t ndim = int64_t(sizes.size());
  dim = wrap(dim, ndim);
  int64_t n = sizes[size_t(dim)];
  if (step == 1) {
    std::vector<int64_t> pad(size_t(2 * (ndim - dim)), 0);
    pad[pad.size() - 2] = start;
    pad[pad.size() - 1] = n - end;
    return e.call1("aten::constant_pad_nd.default", {g, pad, 0.0});
  }
  // Strided slices scatter their elements back with index_add at start, start+step, ...
  Var index = e.call1("aten::arange.start_step", {start, end, step}, {{"dtype", DType::Int64}});
  Var base = zeros(e, sizes, e.dtype(g));
  return e.call1("aten::index_add.default", {base, dim, index, g});
}

Var select_backward(Emitter& e, Var g, Shape sizes, int64_t dim, int64_t index) {
  int64_t ndim = int64_t(sizes.size());
  dim = wrap(dim, ndim);
  if (index < 0) index += sizes[size_t(dim)];
  return slice_backward(e, unsqueeze(e, g, dim), sizes, dim, index, index + 1, 1);
}

}  // namespace kiln::aot
