#include "compiler/decomp/decomp_util.h"

#include <limits>

#include "core/ops/registry.h"

namespace kiln::decomp {

std::string full_op_name(std::string_view op) {
  size_t colon = op.find("::");
  std::string_view rest = colon == std::string_view::npos ? op : op.substr(colon + 2);
  if (rest.find('.') == std::string_view::npos) return std::string(op) + ".default";
  return std::string(op);
}

// ---- Bound ----

Bound::Bound(const DecompCall& call) : op_(full_op_name(call.op)) {
  const OpDef* def = op_registry().find(op_);
  if (!def) throw Error("decomposition of unknown op '" + op_ + "'");
  const Schema& s = def->schema;
  KILN_USER_CHECK(call.args.size() <= s.args.size(), op_, "() takes ", s.args.size(), " arguments but ",
                  call.args.size(), " were given");
  std::vector<std::optional<EArg>> bound(s.args.size());
  for (size_t i = 0; i < call.args.size(); ++i) bound[i] = call.args[i];
  for (const auto& [name, a] : call.kwargs) {
    int idx = s.index_of(name);
    KILN_USER_CHECK(idx >= 0, op_, "() got an unexpected keyword argument '", name, "'");
    KILN_USER_CHECK(!bound[size_t(idx)], op_, "() got multiple values for argument '", name, "'");
    bound[size_t(idx)] = a;
  }
  for (size_t i = 0; i < bound.size(); ++i) {
    if (!bound[i]) {
      KILN_USER_CHECK(s.args[i].default_value.has_value(), op_, "() missing required argument '", s.args[i].name, "'");
      bound[i] = EArg(*s.args[i].default_value);
    }
    args_.push_back(std::move(*bound[i]));
  }
}

bool Bound::is_none(size_t i) const {
  const EArg& a = args_.at(i);
  return a.kind == EArg::Kind::Const && a.value.is_none();
}

Var Bound::var(size_t i) const {
  const EArg& a = args_.at(i);
  KILN_USER_CHECK(a.kind == EArg::Kind::Var, op_, ": argument ", i, " must be a tensor");
  return a.var;
}

std::optional<Var> Bound::opt_var(size_t i) const {
  if (is_none(i)) return std::nullopt;
  return var(i);
}

std::vector<Var> Bound::vars(size_t i) const {
  const EArg& a = args_.at(i);
  KILN_USER_CHECK(a.kind == EArg::Kind::VarList, op_, ": argument ", i, " must be a list of tensors");
  return a.vars;
}

const Value& Bound::value(size_t i) const {
  const EArg& a = args_.at(i);
  KILN_USER_CHECK(a.kind == EArg::Kind::Const, op_, ": argument ", i, " must be a constant, not a tensor");
  return a.value;
}

std::optional<int64_t> Bound::opt_integer(size_t i) const {
  if (is_none(i)) return std::nullopt;
  return integer(i);
}
std::optional<double> Bound::opt_real(size_t i) const {
  if (is_none(i)) return std::nullopt;
  return real(i);
}
std::optional<DType> Bound::opt_dtype(size_t i) const {
  if (is_none(i)) return std::nullopt;
  return value(i).to_dtype();
}
std::optional<std::vector<int64_t>> Bound::opt_ints(size_t i, size_t n) const {
  if (is_none(i)) return std::nullopt;
  return ints(i, n);
}
std::optional<std::vector<double>> Bound::opt_reals(size_t i) const {
  if (is_none(i)) return std::nullopt;
  std::vector<double> out;
  for (const Value& v : value(i).to_list()) out.push_back(v.to_double());
  return out;
}

// ---- emitting helpers ----

Var add(Emitter& e, Var a, Var b) { return e.call1("aten::add.Tensor", {a, b}); }
Var add(Emitter& e, Var a, EArg s) { return e.call1("aten::add.Scalar", {a, std::move(s)}); }
Var sub(Emitter& e, Var a, Var b) { return e.call1("aten::sub.Tensor", {a, b}); }
Var sub(Emitter& e, Var a, EArg s) { return e.call1("aten::sub.Scalar", {a, std::move(s)}); }
Var mul(Emitter& e, Var a, Var b) { return e.call1("aten::mul.Tensor", {a, b}); }
Var mul(Emitter& e, Var a, EArg s) { return e.call1("aten::mul.Scalar", {a, std::move(s)}); }
Var div(Emitter& e, Var a, Var b) { return e.call1("aten::div.Tensor", {a, b}); }
Var div(Emitter& e, Var a, EArg s) { return e.call1("aten::div.Scalar", {a, std::move(s)}); }
Var neg(Emitter& e, Var a) { return e.call1("aten::neg.default", {a}); }
Var unary(Emitter& e, std::string_view name, Var a) { return e.call1("aten::" + std::string(name) + ".default", {a}); }
Var where(Emitter& e, Var cond, Var a, Var b) { return e.call1("aten::where.self", {cond, a, b}); }
Var where_scalar_then(Emitter& e, Var cond, double a, Var b) {
  return where(e, cond, scalar_tensor(e, a, e.dtype(b)), b);
}
Var where_scalar_else(Emitter& e, Var cond, Var a, double b) {
  return where(e, cond, a, scalar_tensor(e, b, e.dtype(a)));
}
Var compare(Emitter& e, std::string_view name, Var a, EArg b) {
  bool tensor = b.kind == EArg::Kind::Var;
  return e.call1("aten::" + std::string(name) + (tensor ? ".Tensor" : ".Scalar"), {a, std::move(b)});
}
Var scalar_tensor(Emitter& e, EArg value, DType dtype) {
  return e.call1("aten::scalar_tensor.default", {std::move(value)}, {{"dtype", dtype}});
}
Var full(Emitter& e, Shape sizes, EArg value, DType dtype) {
  return e.call1("aten::full.default", {sizes, std::move(value)}, {{"dtype", dtype}});
}
Var to_dtype(Emitter& e, Var a, DType dtype) {
  if (e.dtype(a) == dtype) return a;
  return e.call1("aten::_to_copy.default", {a}, {{"dtype", dtype}});
}
Var view(Emitter& e, Var a, Shape sizes) { return e.call1("aten::view.default", {a, sizes}); }
Var reshape(Emitter& e, Var a, Shape sizes) {
  if (e.sizes(a) == sizes) return a;
  // clone keeps a dense input's strides unless told otherwise, and those would not view either.
  if (!viewable(e.tensor(a), sizes)) a = e.call1("aten::clone.default", {a}, {{"memory_format", "contiguous_format"}});
  return view(e, a, sizes);
}
Var permute(Emitter& e, Var a, const std::vector<int64_t>& dims) { return e.call1("aten::permute.default", {a, dims}); }
Var unsqueeze(Emitter& e, Var a, int64_t dim) { return e.call1("aten::unsqueeze.default", {a, dim}); }
Var squeeze_dims(Emitter& e, Var a, const std::vector<int64_t>& dims) {
  if (dims.empty()) return a;
  return e.call1("aten::squeeze.dims", {a, dims});
}
Var expand(Emitter& e, Var a, Shape sizes) { return e.call1("aten::expand.default", {a, sizes}); }
Var slice(Emitter& e, Var a, int64_t dim, int64_t start, int64_t end, int64_t step) {
  return e.call1("aten::slice.Tensor", {a, dim, start, end, step});
}
Var cat(Emitter& e, const std::vector<Var>& xs, int64_t dim) {
  return e.call1("aten::cat.default", {EArg::list(xs), dim});
}
Var sum(Emitter& e, Var a, const std::vector<int64_t>& dims, bool keepdim) {
  return e.call1("aten::sum.dim_IntList", {a, dims, keepdim});
}
Var mean(Emitter& e, Var a, const std::vector<int64_t>& dims, bool keepdim) {
  return e.call1("aten::mean.dim", {a, dims, keepdim});
}
Var amax(Emitter& e, Var a, const std::vector<int64_t>& dims, bool keepdim) {
  return e.call1("aten::amax.default", {a, dims, keepdim});
}
Var arange(Emitter& e, int64_t n, DType dtype) {
  return e.call1("aten::arange.start_step", {int64_t(0), n, int64_t(1)}, {{"dtype", dtype}});
}
Var mm(Emitter& e, Var a, Var b) { return e.call1("aten::mm.default", {a, b}); }

// ---- shapes ----

std::vector<int64_t> wrap_dims(const std::vector<int64_t>& dims, int64_t ndim) {
  std::vector<int64_t> out;
  for (int64_t d : dims) out.push_back(wrap_dim(d, ndim));
  return out;
}

std::vector<int64_t> all_dims(int64_t ndim) {
  std::vector<int64_t> out;
  for (int64_t d = 0; d < ndim; ++d) out.push_back(d);
  return out;
}

std::vector<int64_t> reduction_dims(const Bound& b, size_t i, int64_t ndim) {
  std::optional<std::vector<int64_t>> dims = b.opt_ints(i);
  if (!dims || dims->empty()) return all_dims(ndim);
  return wrap_dims(*dims, std::max<int64_t>(ndim, 1));
}

int64_t numel_of(const Shape& s, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= s.empty() ? 1 : s[size_t(d)];
  return n;
}

bool viewable(const Tensor& t, const Shape& sizes) {
  Tensor m = Tensor::meta_strided(t.sizes(), t.strides(), t.dtype());
  return call_meta("aten::view.default", {Value(m), Value::int_list(sizes)}).ok();
}

// ---- dtypes ----

DType opmath_dtype(DType t) { return is_reduced_float(t) ? DType::Float32 : t; }

DType result_with_scalar(DType t, const Value& scalar) {
  if (scalar.is_float()) return is_floating(t) ? t : kDefaultFloat;
  if (scalar.is_int()) return t == DType::Bool ? DType::Int64 : t;
  return t;
}

double max_finite(DType t) {
  switch (t) {
    case DType::Float16:
      return 65504.0;
    case DType::BFloat16:
      return 3.3895313892515355e38;
    case DType::Float32:
      return double(std::numeric_limits<float>::max());
    default:
      return std::numeric_limits<double>::max();
  }
}

}  // namespace kiln::decomp
