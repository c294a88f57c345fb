// Reductions: sum, mean, prod, amax/amin, max/min, argmax/argmin, var/std,
// logsumexp, any/all, norm, count_nonzero, cumsum/cumprod. All full and
// dim reductions run on the engine in reduce_util.h; ops that also need the
// position of the winner (max.dim, argmax) or a running value (cumsum) walk 1-D
// lanes instead.
#include <cmath>
#include <limits>

#include "core/ops/aten_sum_order.h"
#include "core/ops/kernel_util.h"
#include "core/ops/reduce_util.h"

namespace kiln::reduction {

namespace {

// ---------------------------------------------------------------- ops

// The accumulator a value of T lives in for comparisons: float for the 16-bit
// floats, uint8 for bool (so vectors of it are real arrays), T otherwise.
template <class T>
using value_t = std::conditional_t<std::is_same_v<T, bool>, uint8_t, decltype(value_of(T{}))>;

template <class V>
inline bool is_nan(V v) {
  if constexpr (std::is_floating_point_v<V>) return v != v;
  else return false;
}

template <class T>
struct ProdOp {
  using acc_t = sum_acc_t<T>;
  using ctx_t = NoCtx;
  static acc_t identity() { return 1; }
  ctx_t ctx(int64_t) const { return {}; }
  void step(acc_t& a, T x, ctx_t) const { combine(a, acc_t(value_of(x))); }
  void combine(acc_t& a, acc_t b) const {
    if constexpr (std::is_integral_v<acc_t>) a = acc_t(uint64_t(a) * uint64_t(b));  // wraps, no UB
    else a *= b;
  }
};

// max (IsMax) or min where NaN wins, as torch.amax.
template <class T, bool IsMax>
struct ExtremeOp {
  static constexpr bool kSelectLanes = true;
  using acc_t = value_t<T>;
  using ctx_t = NoCtx;
  static acc_t identity() {
    if constexpr (std::is_floating_point_v<acc_t>)
      return IsMax ? -std::numeric_limits<acc_t>::infinity() : std::numeric_limits<acc_t>::infinity();
    else if constexpr (std::is_same_v<T, bool>)
      return IsMax ? 0 : 1;
    else
      return IsMax ? std::numeric_limits<acc_t>::lowest() : std::numeric_limits<acc_t>::max();
  }
  ctx_t ctx(int64_t) const { return {}; }
  void step(acc_t& a, T x, ctx_t) const { combine(a, acc_t(value_of(x))); }
  void combine(acc_t& a, acc_t v) const {
    // Branch-free, so the lanes vectorize: !(v <= a) is "v > a or either is
    // NaN", and a NaN already in `a` must stay.
    bool better;
    if constexpr (std::is_floating_point_v<acc_t>) better = (IsMax ? !(v <= a) : !(v >= a)) & (a == a);
    else better = IsMax ? v > a : v < a;
    a = better ? v : a;
  }
};

// any (IsAny) / all: whether some / every element is nonzero.
template <class T, bool IsAny>
struct AnyAllOp {
  using acc_t = uint8_t;
  using ctx_t = NoCtx;
  static acc_t identity() { return IsAny ? 0 : 1; }
  ctx_t ctx(int64_t) const { return {}; }
  void step(acc_t& a, T x, ctx_t) const { combine(a, acc_t(value_of(x) != 0)); }
  void combine(acc_t& a, acc_t b) const { a = IsAny ? (a | b) : (a & b); }
};

template <class T>
struct CountNonzeroOp {
  using acc_t = int64_t;
  using ctx_t = NoCtx;
  static acc_t identity() { return 0; }
  ctx_t ctx(int64_t) const { return {}; }
  void step(acc_t& a, T x, ctx_t) const { a += value_of(x) != 0; }
  void combine(acc_t& a, acc_t b) const { a += b; }
};

// Sum of exp(x - shift) with a per-output shift: logsumexp's second pass.
template <class T>
struct ShiftedExpSumOp {
  using acc_t = double;
  using ctx_t = double;
  const double* shift;
  static acc_t identity() { return 0; }
  ctx_t ctx(int64_t o) const { return shift[o]; }
  void step(acc_t& a, T x, ctx_t s) const { a += std::exp(double(value_of(x)) - s); }
  void combine(acc_t& a, acc_t b) const { a += b; }
};

// Vector p-norm accumulation: sum |x|^p, or max/min |x| for p = +-inf.
template <class T>
struct NormOp {
  enum Kind { Zero, One, Two, General, Inf, NegInf };
  using acc_t = double;
  using ctx_t = NoCtx;
  Kind kind;
  double p;
  acc_t identity() const { return kind == NegInf ? std::numeric_limits<double>::infinity() : 0.0; }
  ctx_t ctx(int64_t) const { return {}; }
  void step(acc_t& a, T x, ctx_t) const {
    double v = std::abs(double(value_of(x)));
    switch (kind) {
      case Zero: a += v != 0; break;
      case One: a += v; break;
      case Two: a += v * v; break;
      case General: a += std::pow(v, p); break;
      default: combine(a, v); break;
    }
  }
  void combine(acc_t& a, acc_t b) const {
    if (kind == Inf) a = (b > a || b != b) ? b : a;
    else if (kind == NegInf) a = (b < a || b != b) ? b : a;
    else a += b;
  }
  double finish(double a) const {
    if (kind == Two) return std::sqrt(a);
    if (kind == General) return std::pow(a, 1.0 / p);
    return a;
  }
};

// ---------------------------------------------------------------- op arguments

// Where a reduction overload keeps its optional arguments (-1: absent).
struct ReduceSig {
  int dim = -1;
  int keepdim = -1;
  int dtype = -1;
  int p = -1;
};

struct ReduceCall {
  Tensor x;
  DimMask mask;
  bool keepdim = false;
  std::optional<DType> dtype;
  std::optional<Scalar> p;
};

ReduceCall parse_reduce(const OpArgs& a, const ReduceSig& s) {
  ReduceCall c;
  c.x = a.tensor(0);
  std::optional<std::vector<int64_t>> dims;
  if (s.dim >= 0) dims = a.opt_ints(size_t(s.dim));
  c.mask = dim_mask(c.x.dim(), dims);
  if (s.keepdim >= 0) c.keepdim = a.boolean(size_t(s.keepdim));
  if (s.dtype >= 0) c.dtype = a.opt_dtype(size_t(s.dtype));
  if (s.p >= 0) c.p = a.opt_scalar(size_t(s.p));
  return c;
}

// A reduction op: its output dtype rule (which also rejects bad dtypes) and the
// kernel filling an allocated contiguous output.
struct Reducer {
  DType (*out_dtype)(const ReduceCall&);
  void (*compute)(const ReduceCall&, const Tensor& out);
};

// ----- dtype rules

DType sum_dtype(const ReduceCall& c) {
  if (c.dtype) return *c.dtype;
  return is_integral(c.x.dtype(), true) ? DType::Int64 : c.x.dtype();
}

DType mean_dtype(const ReduceCall& c) {
  DType t = c.dtype.value_or(c.x.dtype());
  KILN_USER_CHECK(is_floating(t), "mean(): could not infer output dtype. Input dtype must be either a "
                  "floating point or complex dtype. Got: ", dtype_name(t));
  return t;
}

DType same_dtype(const ReduceCall& c) { return c.x.dtype(); }

DType any_all_dtype(const ReduceCall& c) {
  return c.x.dtype() == DType::UInt8 ? DType::UInt8 : DType::Bool;
}

DType float_or_default(const ReduceCall& c) {
  return is_integral(c.x.dtype(), true) ? kDefaultFloat : c.x.dtype();
}

DType norm_dtype(const ReduceCall& c) {
  KILN_USER_CHECK(is_floating(c.x.dtype()), "norm(): input dtype should be either floating point or "
                  "complex. Got ", dtype_name(c.x.dtype()), " instead.");
  return c.x.dtype();
}

DType int64_dtype(const ReduceCall&) { return DType::Int64; }

// ----- kernels

// Runs `op` over an input of element type T and writes fin(acc) into `out`.
template <class T, class Op, class Fin>
void reduce_with(const Tensor& x, const DimMask& mask, const Tensor& out, const Op& op, Fin fin) {
  auto acc = accumulate<T>(x, mask, op);
  write_outputs(out, [&](int64_t i) { return fin(acc[size_t(i)]); });
}

// The same with a stateless Op<T> for whatever dtype x has.
template <template <class> class Op, class Fin>
void reduce_into(const Tensor& x, const DimMask& mask, const Tensor& out, Fin fin) {
  dispatch_all(x.dtype(), [&]<class T>() { reduce_with<T>(x, mask, out, Op<T>{}, fin); });
}

auto identity_fin = [](auto v) { return v; };

// ATen casts the input to the output dtype before summing. Where that cast is
// exact (integers into int64, a float into a wider float) the accumulators see
// the same values without it, so the copy is skipped.
Tensor as_sum_input(const Tensor& x, DType out) {
  DType in = x.dtype();
  bool exact = in == out || (is_integral(in, true) && out == DType::Int64) ||
               (is_floating(in) && is_floating(out) && element_size(out) > element_size(in));
  return exact ? x : x.to(out);
}

// A float32 sum PyTorch computes in one thread, summed in its order (aten_sum_order.h).
bool aten_order_sum(const ReduceCall& c, const Tensor& out, float divisor) {
  if (out.dtype() != DType::Float32 || !out.is_contiguous()) return false;
  std::optional<std::vector<float>> s = aten_order::sums(c.x, c.mask);
  if (!s || int64_t(s->size()) != out.numel()) return false;
  float* o = out.data<float>();
  for (size_t i = 0; i < s->size(); ++i) o[i] = divisor == 1.0f ? (*s)[i] : (*s)[i] / divisor;
  return true;
}

void sum_compute(const ReduceCall& c, const Tensor& out) {
  if (aten_order_sum(c, out, 1.0f)) return;
  reduce_into<SumOp>(as_sum_input(c.x, out.dtype()), c.mask, out, identity_fin);
}

void prod_compute(const ReduceCall& c, const Tensor& out) {
  reduce_into<ProdOp>(as_sum_input(c.x, out.dtype()), c.mask, out, identity_fin);
}

void mean_compute(const ReduceCall& c, const Tensor& out) {
  // As ATen on CPU: the sum, rounded to float unless double, divided by the count.
  const int64_t n = reduced_count(c.x.sizes(), c.mask);
  const bool f64 = out.dtype() == DType::Float64;
  if (aten_order_sum(c, out, float(n))) return;
  reduce_into<SumOp>(as_sum_input(c.x, out.dtype()), c.mask, out, [&](double s) {
    return f64 ? s / double(n) : double(float(s) / float(n));
  });
}

template <class T> using MaxOp = ExtremeOp<T, true>;
template <class T> using MinOp = ExtremeOp<T, false>;
template <class T> using AnyOp = AnyAllOp<T, true>;
template <class T> using AllOp = AnyAllOp<T, false>;

template <bool IsMax>
void extreme_compute(const ReduceCall& c, const Tensor& out) {
  check_nonempty_reduction(c.x, c.mask, IsMax ? "amax" : "amin");
  if constexpr (IsMax) reduce_into<MaxOp>(c.x, c.mask, out, identity_fin);
  else reduce_into<MinOp>(c.x, c.mask, out, identity_fin);
}

template <bool IsAny>
void any_all_compute(const ReduceCall& c, const Tensor& out) {
  if constexpr (IsAny) reduce_into<AnyOp>(c.x, c.mask, out, identity_fin);
  else reduce_into<AllOp>(c.x, c.mask, out, identity_fin);
}

void count_nonzero_compute(const ReduceCall& c, const Tensor& out) {
  reduce_into<CountNonzeroOp>(c.x, c.mask, out, identity_fin);
}

void logsumexp_compute(const ReduceCall& c, const Tensor& out) {
  Tensor x = c.x.to(out.dtype());
  dispatch_any_float(x.dtype(), "logsumexp", [&]<class T>() {
    std::vector<double> shift;
    if (x.numel() != 0) {
      auto maxes = accumulate<T>(x, c.mask, MaxOp<T>{});
      for (auto m : maxes) shift.push_back(std::isinf(double(m)) ? 0.0 : double(m));
    } else {
      shift.assign(size_t(shape_numel(out.sizes())), 0.0);
    }
    auto sums = accumulate<T>(x, c.mask, ShiftedExpSumOp<T>{shift.data()});
    write_outputs(out, [&](int64_t i) { return std::log(sums[size_t(i)]) + shift[size_t(i)]; });
  });
}

void norm_compute(const ReduceCall& c, const Tensor& out) {
  double p = c.p ? c.p->to_double() : 2.0;
  using K = NormOp<float>::Kind;
  K kind = p == 0 ? K::Zero : p == 1 ? K::One : p == 2 ? K::Two
         : std::isinf(p) ? (p > 0 ? K::Inf : K::NegInf) : K::General;
  if (kind == K::Inf || kind == K::NegInf)
    KILN_USER_CHECK(c.x.numel() != 0 || reduced_count(c.x.sizes(), c.mask) != 0,
                    "linalg.vector_norm cannot compute the ", p,
                    " norm on an empty tensor because the operation does not have an identity");
  dispatch_any_float(c.x.dtype(), "norm", [&]<class T>() {
    NormOp<T> op{typename NormOp<T>::Kind(int(kind)), p};
    reduce_with<T>(c.x, c.mask, out, op, [&](double a) { return op.finish(a); });
  });
}

// ----- registration of engine reductions

void add_reduce(OpRegistry& r, std::string_view schema, ReduceSig sig, Reducer red) {
  auto meta = [sig, red](const OpArgs& a) -> ValueList {
    ReduceCall c = parse_reduce(a, sig);
    return one(Tensor::meta(reduced_sizes(c.x.sizes(), c.mask, c.keepdim), red.out_dtype(c)));
  };
  auto compute = [sig, red](const OpArgs& a, const std::vector<Tensor>& outs) {
    red.compute(parse_reduce(a, sig), outs[0]);
  };
  add_op_with_outputs(r, schema, meta, compute);
}

void register_engine_reductions(OpRegistry& r) {
  const Reducer sum{sum_dtype, sum_compute}, mean{mean_dtype, mean_compute},
      prod{sum_dtype, prod_compute}, amax{same_dtype, extreme_compute<true>},
      amin{same_dtype, extreme_compute<false>}, any{any_all_dtype, any_all_compute<true>},
      all{any_all_dtype, any_all_compute<false>}, lse{float_or_default, logsumexp_compute},
      norm{norm_dtype, norm_compute}, nonzero{int64_dtype, count_nonzero_compute};
  add_reduce(r, "aten::sum(Tensor self, *, ScalarType? dtype=None) -> Tensor", {.dtype = 1}, sum);
  add_reduce(r, "aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
             {1, 2, 3}, sum);
  add_reduce(r, "aten::mean(Tensor self, *, ScalarType? dtype=None) -> Tensor", {.dtype = 1}, mean);
  add_reduce(r, "aten::mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
             {1, 2, 3}, mean);
  add_reduce(r, "aten::prod(Tensor self, *, ScalarType? dtype=None) -> Tensor", {.dtype = 1}, prod);
  add_reduce(r, "aten::prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
             {1, 2, 3}, prod);
  add_reduce(r, "aten::amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", {1, 2}, amax);
  add_reduce(r, "aten::amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", {1, 2}, amin);
  add_reduce(r, "aten::any(Tensor self) -> Tensor", {}, any);
  add_reduce(r, "aten::any.dim(Tensor self, int dim, bool keepdim=False) -> Tensor", {1, 2}, any);
  add_reduce(r, "aten::any.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor", {1, 2}, any);
  add_reduce(r, "aten::all(Tensor self) -> Tensor", {}, all);
  add_reduce(r, "aten::all.dim(Tensor self, int dim, bool keepdim=False) -> Tensor", {1, 2}, all);
  add_reduce(r, "aten::all.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor", {1, 2}, all);
  add_reduce(r, "aten::logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor", {1, 2}, lse);
  add_reduce(r, "aten::norm.Scalar(Tensor self, Scalar p=2) -> Tensor", {.p = 1}, norm);
  add_reduce(r, "aten::norm.ScalarOpt_dim(Tensor self, Scalar? p, int[1] dim, bool keepdim=False) -> Tensor",
             {.dim = 2, .keepdim = 3, .p = 1}, norm);
  add_reduce(r, "aten::count_nonzero.dim_IntList(Tensor self, int[] dim) -> Tensor", {.dim = 1}, nonzero);
  add_reduce(r, "aten::count_nonzero(Tensor self, int? dim=None) -> Tensor", {.dim = 1}, nonzero);
}

// ---------------------------------------------------------------- max/min without dim

template <bool IsMax>
void full_extreme_compute(const OpArgs& a, const std::vector<Tensor>& outs) {
  const Tensor& x = a.tensor(0);
  KILN_USER_CHECK(x.numel() != 0, IsMax ? "max" : "min",
                  "(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                  "reduction dim with the 'dim' argument.");
  ReduceCall c{x, DimMask(size_t(x.dim()), true), false, {}, {}};
  extreme_compute<IsMax>(c, outs[0]);
}

ValueList scalar_like_meta(const OpArgs& a) { return one(Tensor::meta({}, a.tensor(0).dtype())); }

// ---------------------------------------------------------------- variance

struct VarSig {
  int dim = -1;
  int correction = -1;
  int unbiased = -1;
  int keepdim = -1;
};

struct VarCall {
  Tensor x;
  DimMask mask;
  bool keepdim = false;
  double correction = 1;
};

VarCall parse_var(const OpArgs& a, const VarSig& s) {
  VarCall c;
  c.x = a.tensor(0);
  KILN_USER_CHECK(is_floating(c.x.dtype()), "std and var only support floating point and complex dtypes");
  std::optional<std::vector<int64_t>> dims;
  if (s.dim >= 0) dims = a.opt_ints(size_t(s.dim));
  c.mask = dim_mask(c.x.dim(), dims);
  if (s.keepdim >= 0) c.keepdim = a.boolean(size_t(s.keepdim));
  if (s.unbiased >= 0) c.correction = a.boolean(size_t(s.unbiased)) ? 1 : 0;
  if (s.correction >= 0)
    if (auto corr = a.opt_scalar(size_t(s.correction))) c.correction = corr->to_double();
  return c;
}

// var/std (sqrt) alone or with the mean (with_mean), as var_mean returns them.
void add_var(OpRegistry& r, std::string_view schema, VarSig sig, bool take_sqrt, bool with_mean) {
  auto meta = [sig, with_mean](const OpArgs& a) -> ValueList {
    VarCall c = parse_var(a, sig);
    Tensor m = Tensor::meta(reduced_sizes(c.x.sizes(), c.mask, c.keepdim), c.x.dtype());
    return with_mean ? ValueList{m, m} : one(m);
  };
  auto compute = [sig, take_sqrt, with_mean](const OpArgs& a, const std::vector<Tensor>& outs) {
    VarCall c = parse_var(a, sig);
    Moments m = moments(c.x, c.mask);
    write_outputs(outs[0], [&](int64_t i) {
      double v = m.var(i, c.correction);
      return take_sqrt ? std::sqrt(v) : v;
    });
    if (with_mean) write_outputs(outs[1], [&](int64_t i) { return m.mean[size_t(i)]; });
  };
  add_op_with_outputs(r, schema, meta, compute);
}

void register_variance(OpRegistry& r) {
  struct Family {
    const char* name;
    bool take_sqrt, with_mean;
    const char* ret;
  };
  const Family fams[] = {{"var", false, false, "Tensor"},
                         {"std", true, false, "Tensor"},
                         {"var_mean", false, true, "(Tensor, Tensor)"},
                         {"std_mean", true, true, "(Tensor, Tensor)"}};
  for (const Family& f : fams) {
    std::string n = std::string("aten::") + f.name, ret = f.ret;
    add_var(r, n + ".correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> " + ret,
            {.dim = 1, .correction = 2, .keepdim = 3}, f.take_sqrt, f.with_mean);
    add_var(r, n + "(Tensor self, bool unbiased=True) -> " + ret, {.unbiased = 1}, f.take_sqrt, f.with_mean);
    add_var(r, n + ".dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> " + ret,
            {.dim = 1, .unbiased = 2, .keepdim = 3}, f.take_sqrt, f.with_mean);
  }
}

// ---------------------------------------------------------------- max.dim / argmax

// Index of the first maximum (IsMax) or minimum of a strided lane; a NaN wins at
// its first occurrence, as on PyTorch's CPU.
template <bool IsMax, class T>
std::pair<value_t<T>, int64_t> arg_extreme(const T* x, int64_t stride, int64_t n) {
  value_t<T> best = value_t<T>(value_of(x[0]));
  int64_t at = 0;
  for (int64_t k = 1; k < n && !is_nan(best); ++k) {
    value_t<T> v = value_t<T>(value_of(x[k * stride]));
    if (is_nan(v) || (IsMax ? v > best : v < best)) {
      best = v;
      at = k;
    }
  }
  return {best, at};
}

// values (may be undefined) and indices of the extreme along dim of x; both
// outputs have x's shape with size 1 (or nothing) along dim.
template <bool IsMax>
void arg_extreme_lanes(const Tensor& x, int64_t dim, const Tensor& values, const Tensor& indices) {
  dispatch_all(x.dtype(), [&]<class T>() {
    auto fn = [&](char** p, const int64_t* s, int64_t n) {
      auto [v, i] = arg_extreme<IsMax>(reinterpret_cast<const T*>(p[0]), s[0], n);
      *reinterpret_cast<int64_t*>(p[1]) = i;
      if (values.defined()) *reinterpret_cast<T*>(p[2]) = cast_to<T>(v);
    };
    if (values.defined()) for_each_lane<3>({x, indices, values}, dim, fn);
    else for_each_lane<3>({x, indices, indices}, dim, fn);
  });
}

// Shape of the outputs of max.dim-like ops, and the view of an output that has
// size 1 along dim (what arg_extreme_lanes writes through).
Shape dim_reduced_sizes(const Tensor& x, int64_t dim, bool keepdim) {
  return reduced_sizes(x.sizes(), single_dim_mask(x.dim(), dim), keepdim);
}
Tensor with_unit_dim(const Tensor& out, const Tensor& x, int64_t dim, bool keepdim) {
  if (x.dim() == 0 || keepdim) return out;
  return out.unsqueeze(wrap_dim(dim, x.dim()));
}

template <bool IsMax>
void add_max_dim(OpRegistry& r, std::string_view schema) {
  auto meta = [](const OpArgs& a) -> ValueList {
    const Tensor& x = a.tensor(0);
    Shape s = dim_reduced_sizes(x, a.integer(1), a.boolean(2));
    return {Tensor::meta(s, x.dtype()), Tensor::meta(s, DType::Int64)};
  };
  auto compute = [](const OpArgs& a, const std::vector<Tensor>& outs) {
    const Tensor& x = a.tensor(0);
    int64_t dim = a.integer(1);
    bool keepdim = a.boolean(2);
    check_nonempty_reduction(x, single_dim_mask(x.dim(), dim), IsMax ? "max" : "min");
    arg_extreme_lanes<IsMax>(x, dim, with_unit_dim(outs[0], x, dim, keepdim),
                             with_unit_dim(outs[1], x, dim, keepdim));
  };
  add_op_with_outputs(r, schema, meta, compute);
}

template <bool IsMax>
void add_argmax(OpRegistry& r, std::string_view schema) {
  auto meta = [](const OpArgs& a) -> ValueList {
    const Tensor& x = a.tensor(0);
    auto dim = a.opt_integer(1);
    bool keepdim = a.boolean(2);
    Shape s = dim ? dim_reduced_sizes(x, *dim, keepdim) : keepdim ? Shape(size_t(x.dim()), 1) : Shape{};
    return one(Tensor::meta(s, DType::Int64));
  };
  auto compute = [](const OpArgs& a, const std::vector<Tensor>& outs) {
    const Tensor& x = a.tensor(0);
    const char* name = IsMax ? "argmax" : "argmin";
    KILN_USER_CHECK(x.dtype() != DType::Bool, name, "_cpu not implemented for 'Bool'");
    if (auto dim = a.opt_integer(1)) {
      check_nonempty_reduction(x, single_dim_mask(x.dim(), *dim), name);
      arg_extreme_lanes<IsMax>(x, *dim, Tensor(), with_unit_dim(outs[0], x, *dim, a.boolean(2)));
      return;
    }
    KILN_USER_CHECK(x.numel() != 0, name, "(): Expected reduction dim to be specified for input.numel() == 0.");
    arg_extreme_lanes<IsMax>(x.reshape({-1}), 0, Tensor(), outs[0].reshape({1}));
  };
  add_op_with_outputs(r, schema, meta, compute);
}

// ---------------------------------------------------------------- cumsum / cumprod

template <bool IsSum>
void add_cumulative(OpRegistry& r, std::string_view schema) {
  auto meta = [](const OpArgs& a) -> ValueList {
    const Tensor& x = a.tensor(0);
    wrap_dim(a.integer(1), x.dim());
    DType t = a.opt_dtype(2).value_or(is_integral(x.dtype(), true) ? DType::Int64 : x.dtype());
    return one(Tensor::meta(x.sizes(), t));
  };
  auto compute = [](const OpArgs& a, const std::vector<Tensor>& outs) {
    const Tensor& out = outs[0];
    Tensor x = a.tensor(0).to(out.dtype());
    dispatch_all(out.dtype(), [&]<class T>() {
      using Op = std::conditional_t<IsSum, SumOp<T>, ProdOp<T>>;
      for_each_lane<2>({x, out}, a.integer(1), [](char** p, const int64_t* s, int64_t n) {
        const T* in = reinterpret_cast<const T*>(p[0]);
        T* o = reinterpret_cast<T*>(p[1]);
        Op op;
        typename Op::acc_t acc = op.identity();
        for (int64_t k = 0; k < n; ++k) {
          op.step(acc, in[k * s[0]], NoCtx{});
          o[k * s[1]] = cast_to<T>(acc);
        }
      });
    });
  };
  add_op_with_outputs(r, schema, meta, compute);
}

}  // namespace

// ---------------------------------------------------------------- tensor-level API

namespace {
Tensor run_reducer(const Reducer& red, ReduceCall c) {
  Tensor out = Tensor::empty(reduced_sizes(c.x.sizes(), c.mask, c.keepdim), red.out_dtype(c));
  red.compute(c, out);
  return out;
}
}  // namespace

Tensor sum(const Tensor& x, const DimMask& mask, bool keepdim, std::optional<DType> dtype) {
  return run_reducer({sum_dtype, sum_compute}, {x, mask, keepdim, dtype, {}});
}

Tensor mean(const Tensor& x, const DimMask& mask, bool keepdim, std::optional<DType> dtype) {
  return run_reducer({mean_dtype, mean_compute}, {x, mask, keepdim, dtype, {}});
}

Tensor amax(const Tensor& x, const DimMask& mask, bool keepdim) {
  return run_reducer({same_dtype, extreme_compute<true>}, {x, mask, keepdim, {}, {}});
}

Tensor apply_loss_reduction(const Tensor& loss, LossReduction r) {
  DimMask all(size_t(loss.dim()), true);
  switch (r) {
    case LossReduction::Mean: return mean(loss, all, false);
    case LossReduction::Sum: return sum(loss, all, false, loss.dtype());
    case LossReduction::None: break;
  }
  return loss;
}

}  // namespace kiln::reduction

namespace kiln {

void register_reduction_ops(OpRegistry& r) {
  using namespace reduction;
  register_engine_reductions(r);
  add_op_with_outputs(r, "aten::max(Tensor self) -> Tensor", scalar_like_meta, full_extreme_compute<true>);
  add_op_with_outputs(r, "aten::min(Tensor self) -> Tensor", scalar_like_meta, full_extreme_compute<false>);
  add_max_dim<true>(r, "aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
  add_max_dim<false>(r, "aten::min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
  add_argmax<true>(r, "aten::argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor");
  add_argmax<false>(r, "aten::argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor");
  register_variance(r);
  add_cumulative<true>(r, "aten::cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor");
  add_cumulative<false>(r, "aten::cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor");
}

}  // namespace kiln
