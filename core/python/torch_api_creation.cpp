// Tensor creation: torch.tensor from Python data, the factories (zeros, full,
// arange, eye, *_like, new_*), and the random ones (rand, randn, randint,
// normal, bernoulli, the in-place uniform_/normal_/... fills) drawing from
// core/tensor/generator.h's default generator, bit for bit as PyTorch's CPU.
#include <limits>

#include "core/ops/layout_util.h"
#include "core/ops/pointwise_kernels.h"
#include "core/ops/registry.h"
#include "core/python/torch_api_binding.h"
#include "core/tensor/generator.h"

namespace kiln::torchapi {
using namespace detail;

// ---------------------------------------------------------------- torch.tensor

namespace {

// Shape and dtype of nested Python data, found in one walk.
struct DataShape {
  Shape sizes;
  std::optional<DType> dtype;
};

DType leaf_dtype(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Bool: return DType::Bool;
    case Value::Kind::Int: return DType::Int64;
    case Value::Kind::Float: return kDefaultFloat;
    case Value::Kind::Tensor: {
      const Tensor& t = v.to_tensor();
      KILN_USER_CHECK(t.numel() == 1, "only one element tensors can be converted to Python scalars");
      return t.dtype();
    }
    case Value::Kind::None: KILN_FAIL("Could not infer dtype of NoneType");
    case Value::Kind::String: KILN_FAIL("new(): invalid data type 'str'");
    case Value::Kind::DType: KILN_FAIL("Could not infer dtype of torch.dtype");
    case Value::Kind::List: break;
  }
  KILN_CHECK(false, "leaf_dtype on a list");
  return DType::Float32;
}

void walk(const Value& v, size_t depth, DataShape& out, std::vector<const Value*>& leaves) {
  if (!v.is_list()) {
    KILN_USER_CHECK(depth == out.sizes.size(), "expected sequence of length ",
                    depth < out.sizes.size() ? out.sizes[depth] : 0, " at dim ", depth, " (got a number)");
    DType d = leaf_dtype(v);
    out.dtype = out.dtype ? promote_types(*out.dtype, d) : d;
    leaves.push_back(&v);
    return;
  }
  const ValueList& items = v.to_list();
  if (depth == out.sizes.size() && leaves.empty()) {
    out.sizes.push_back(int64_t(items.size()));
  } else {
    KILN_USER_CHECK(depth < out.sizes.size(), "not a sequence: expected a number at dim ", depth,
                    " (got a sequence of length ", items.size(), ")");
    KILN_USER_CHECK(out.sizes[depth] == int64_t(items.size()), "expected sequence of length ", out.sizes[depth],
                    " at dim ", depth, " (got ", items.size(), ")");
  }
  for (const Value& item : items) walk(item, depth + 1, out, leaves);
}

}  // namespace

Expected<Tensor> tensor_from_data(const Value& data, std::optional<DType> dtype, Mode mode) {
  try {
    if (data.is_tensor()) {
      const Tensor& t = data.to_tensor();
      Tensor c = aten_t(mode, "aten::clone", {t});
      return dtype && *dtype != t.dtype() ? aten_t(mode, "aten::to.dtype", {c, Value(*dtype)}) : c;
    }
    DataShape shape;
    std::vector<const Value*> leaves;
    walk(data, 0, shape, leaves);
    DType dt = dtype.value_or(shape.dtype.value_or(kDefaultFloat));
    if (mode == Mode::Meta) return Tensor::meta(shape.sizes, dt);
    Tensor out = Tensor::empty(shape.sizes, dt);
    KILN_CHECK(int64_t(leaves.size()) == out.numel(), "torch.tensor: leaf count");
    dispatch_all(dt, [&]<class T>() {
      T* p = out.data<T>();
      for (size_t i = 0; i < leaves.size(); ++i) {
        Scalar s = leaves[i]->is_tensor() ? leaves[i]->to_tensor().item() : leaves[i]->to_scalar();
        check_scalar_fits(s, dt);
        p[i] = s.to<T>();
      }
    });
    return out;
  } catch (const Error& e) {
    return e.to_status();
  }
}

}  // namespace kiln::torchapi

namespace kiln::torchapi::detail {
namespace {

// ---------------------------------------------------------------- factories

// Parameters every factory takes that are not the op's business.
bool ignored_factory_param(const std::string& name) {
  return name == "requires_grad" || name == "pin_memory" || name == "generator";
}

// Forwards a factory's bound values by name; device matters only as "meta".
Handler factory(std::string op) {
  return [op = std::move(op)](const Bound& b) {
    const OpDef* def = op_registry().find(op);
    KILN_CHECK(def, "torch factory bound to unknown op ", op);
    KwargList kw;
    for (size_t i = 0; i < b.size(); ++i) {
      const std::string& name = b.signature().params[i].name;
      if (ignored_factory_param(name)) continue;
      if (name == "device" && !(b[i].kind() == Value::Kind::String && b[i].to_string() == "meta")) continue;
      int j = def->schema.index_of(name);
      if (j < 0 && i == 0) j = 0;
      KILN_CHECK(j >= 0, "torch factory ", b.signature().name, ": '", name, "' is not in ", def->schema.text);
      kw.emplace_back(def->schema.args[size_t(j)].name, b[i]);
    }
    return aten(b.mode(), op, {}, kw);
  };
}

#define KILN_FACTORY_TAIL "*, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=False, bool requires_grad=False"
#define KILN_LIKE_TAIL KILN_FACTORY_TAIL ", MemoryFormat? memory_format=None"

void factories(Table& t) {
  for (const char* n : {"zeros", "ones"})
    t.def(n, kTorch, {{"(int[] size, " KILN_FACTORY_TAIL ")", factory(std::string("aten::") + n)}});
  t.def("empty", kTorch, {{"(int[] size, " KILN_LIKE_TAIL ")", factory("aten::empty.memory_format")}});
  t.def("empty_strided", kTorch, {{"(int[] size, int[] stride, " KILN_FACTORY_TAIL ")", factory("aten::empty_strided")}});
  t.def("full", kTorch, {{"(int[] size, Scalar fill_value, " KILN_FACTORY_TAIL ")", factory("aten::full")}});
  for (const char* n : {"zeros_like", "ones_like", "empty_like"})
    t.def(n, kTorch, {{"(Tensor input, " KILN_LIKE_TAIL ")", factory(std::string("aten::") + n)}});
  t.def("full_like", kTorch, {{"(Tensor input, Scalar fill_value, " KILN_LIKE_TAIL ")", factory("aten::full_like")}});
  t.def("arange", kTorch,
        {{"(Scalar end, " KILN_FACTORY_TAIL ")", factory("aten::arange")},
         {"(Scalar start, Scalar end, " KILN_FACTORY_TAIL ")", factory("aten::arange.start")},
         {"(Scalar start, Scalar end, Scalar step=1, " KILN_FACTORY_TAIL ")", factory("aten::arange.start_step")}});
  t.def("linspace", kTorch, {{"(Scalar start, Scalar end, int steps, " KILN_FACTORY_TAIL ")", factory("aten::linspace")}});
  t.def("logspace", kTorch, {{"(Scalar start, Scalar end, int steps, float base=10.0, " KILN_FACTORY_TAIL ")",
                              [](const Bound& b) {
                                DType dt = b.opt_dtype(4).value_or(kDefaultFloat);
                                Tensor e = aten_t(b.mode(), "aten::linspace", {b[0], b[1], b[2]},
                                                  {{"dtype", Value(DType::Float64)}});
                                Tensor p = aten_t(b.mode(), "aten::pow.Scalar", {b[3], e});
                                return aten(b.mode(), "aten::to.dtype", {p, Value(dt)});
                              }}});
  t.def("eye", kTorch,
        {{"(int n, " KILN_FACTORY_TAIL ")", factory("aten::eye")},
         {"(int n, int m, " KILN_FACTORY_TAIL ")", factory("aten::eye.m")}});
  t.def("scalar_tensor", kTorch, {{"(Scalar s, " KILN_FACTORY_TAIL ")", factory("aten::scalar_tensor")}});

  Handler from_data = [](const Bound& b) {
    auto r = tensor_from_data(b[0], b.opt_dtype(1), b.mode());
    if (!r) throw Error(r.status().message());
    return ValueList{*r};
  };
  t.def("tensor", kTorch, {{"(Any data, " KILN_FACTORY_TAIL ")", from_data}});
  // as_tensor shares a tensor's data when no conversion is needed.
  t.def("as_tensor", kTorch, {{"(Any data, ScalarType? dtype=None, Device? device=None)", [from_data](const Bound& b) {
          if (!b[0].is_tensor()) return from_data(b);
          if (b.is_none(1)) return ValueList{b[0]};
          return aten(b.mode(), "aten::to.dtype", {b[0], b[1]});
        }}});

  // Tensor.new_*: dtype defaults to self's.
  for (const char* n : {"new_zeros", "new_ones", "new_empty"})
    t.def(n, kMethod, {{"(Tensor input, int[] size, " KILN_FACTORY_TAIL ")", factory(std::string("aten::") + n)}});
  t.def("new_full", kMethod, {{"(Tensor input, int[] size, Scalar fill_value, " KILN_FACTORY_TAIL ")",
                               factory("aten::new_full")}});
  t.def("new_empty_strided", kMethod, {{"(Tensor input, int[] size, int[] stride, " KILN_FACTORY_TAIL ")",
                                        factory("aten::new_empty_strided")}});
  t.def("new_tensor", kMethod, {{"(Tensor input, Any data, " KILN_FACTORY_TAIL ")", [](const Bound& b) {
          auto r = tensor_from_data(b[1], b.opt_dtype(2).value_or(b.tensor(0).dtype()), b.mode());
          if (!r) throw Error(r.status().message());
          return ValueList{*r};
        }}});
}

// ---------------------------------------------------------------- random

// An uninitialised tensor of `sizes` for a random fill (meta in Meta mode).
Tensor fresh(const Bound& b, const Shape& sizes, DType dtype) {
  if (b.meta()) return Tensor::meta(sizes, dtype);
  return Tensor::empty(sizes, dtype);
}

Tensor fresh_like(const Bound& b, const Tensor& like, std::optional<DType> dtype) {
  return aten_t(b.mode(), "aten::empty_like", {like}, {{"dtype", dtype ? Value(*dtype) : Value()}});
}

std::optional<DType> dtype_param(const Bound& b) {
  const Value& d = b.arg("dtype");
  return d.is_none() ? std::nullopt : std::optional<DType>(d.to_dtype());
}

DType float_dtype(const Bound& b, const char* what) {
  DType d = dtype_param(b).value_or(kDefaultFloat);
  KILN_USER_CHECK(is_floating(d), what, "(): expected a floating point dtype, got ", dtype_name(d));
  return d;
}

// torch.multinomial as ATen's multinomial_out: without replacement (or for one
// sample) the Gumbel trick, argmax / topk of p / q with q ~ Exp(1) drawn by
// exponential_; with replacement a search of the cumulative distribution.
Tensor multinomial(const Bound& b) {
  const Tensor& self = b.tensor(0);
  const int64_t n_sample = b.integer(1);
  const bool replacement = b.boolean(2);
  KILN_USER_CHECK(self.dim() > 0 && self.dim() <= 2, "prob_dist must be 1 or 2 dim");
  KILN_USER_CHECK(is_floating(self.dtype()), "multinomial only supports floating-point dtypes for input, got: ",
                  pointwise::aten_type_name(self.dtype()));
  KILN_USER_CHECK(n_sample > 0, "cannot sample n_sample <= 0 samples");
  const int64_t n_categories = self.sizes().back();
  KILN_USER_CHECK(replacement || n_sample <= n_categories,
                  "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  KILN_USER_CHECK(n_categories <= (int64_t(1) << 24), "number of categories cannot exceed 2^24");
  Shape sizes = self.dim() == 1 ? Shape{n_sample} : Shape{self.sizes()[0], n_sample};
  if (b.meta() || self.is_meta()) return Tensor::meta(sizes, DType::Int64);
  // No rows: an empty result (n_sample > 0 was checked, so only a 2-D input has none).
  if (self.dim() == 2 && self.sizes()[0] == 0) return Tensor::empty(sizes, DType::Int64);
  const Mode eager = Mode::Eager;
  if (!replacement || n_sample == 1) {
    const bool valid = aten_t(eager, "aten::max", {self}).item().to_double() < std::numeric_limits<double>::infinity() &&
                       aten_t(eager, "aten::min", {self}).item().to_double() >= 0;
    KILN_USER_CHECK(valid, "probability tensor contains either `inf`, `nan` or element < 0");
    Tensor sums = self.dim() == 1 ? aten_t(eager, "aten::sum", {self})
                                  : aten_t(eager, "aten::sum.dim_IntList", {self, Value::int_list({1})});
    KILN_USER_CHECK(!aten_t(eager, "aten::any", {aten_t(eager, "aten::eq.Scalar", {sums, Value(0.0)})}).item().to_bool(),
                    "invalid multinomial distribution (sum of probabilities <= 0)");
    Tensor q = aten_t(eager, "aten::empty_like", {self});
    exponential_(q, 1.0, b.rng());
    q = aten_t(eager, "aten::div.Tensor", {self, q});
    if (n_sample == 1) return aten_t(eager, "aten::argmax", {q, Value(int64_t(-1)), Value(true)});
    return aten(eager, "aten::topk", {q, Value(n_sample)}).at(1).to_tensor();
  }
  Tensor result = Tensor::empty(sizes, DType::Int64);
  multinomial_with_replacement(self, n_sample, result, b.rng());
  return result;
}

#define KILN_RANDOM_TAIL "*, Generator? generator=None, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=False, bool requires_grad=False"

void random_factories(Table& t) {
  t.def("rand", kTorch, {{"(int[] size, " KILN_RANDOM_TAIL ")", [](const Bound& b) {
          Tensor out = fresh(b, b.ints(0), float_dtype(b, "rand"));
          if (!b.meta()) uniform_(out, 0.0, 1.0, b.rng());
          return ValueList{out};
        }}});
  t.def("randn", kTorch, {{"(int[] size, " KILN_RANDOM_TAIL ")", [](const Bound& b) {
          Tensor out = fresh(b, b.ints(0), float_dtype(b, "randn"));
          if (!b.meta()) normal_(out, 0.0, 1.0, b.rng());
          return ValueList{out};
        }}});
  auto randint = [](const Bound& b, int64_t low, int64_t high, const Shape& size) {
    KILN_USER_CHECK(low < high, "random_ expects 'from' to be less than 'to', but got from=", low, " >= to=", high);
    Tensor out = fresh(b, size, dtype_param(b).value_or(DType::Int64));
    if (!b.meta()) random_from_to_(out, low, high, b.rng());
    return ValueList{out};
  };
  t.def("randint", kTorch,
        {{"(int high, int[] size, " KILN_RANDOM_TAIL ")",
          [randint](const Bound& b) { return randint(b, 0, b.integer(0), b.ints(1)); }},
         {"(int low, int high, int[] size, " KILN_RANDOM_TAIL ")",
          [randint](const Bound& b) { return randint(b, b.integer(0), b.integer(1), b.ints(2)); }}});
  t.def("randperm", kTorch, {{"(int n, " KILN_RANDOM_TAIL ")", [](const Bound& b) {
          DType d = dtype_param(b).value_or(DType::Int64);
          if (b.meta()) return ValueList{Tensor::meta({b.integer(0)}, d)};
          return ValueList{randperm(b.integer(0), d, b.rng())};
        }}});
  t.def("rand_like", kTorch, {{"(Tensor input, " KILN_LIKE_TAIL ")", [](const Bound& b) {
          Tensor out = fresh_like(b, b.tensor(0), b.opt_dtype(1));
          KILN_USER_CHECK(is_floating(out.dtype()), "\"check_uniform_bounds\" not implemented for '", pointwise::aten_type_name(out.dtype()), "'");
          if (!b.meta()) uniform_(out, 0.0, 1.0, b.rng());
          return ValueList{out};
        }}});
  t.def("randn_like", kTorch, {{"(Tensor input, " KILN_LIKE_TAIL ")", [](const Bound& b) {
          Tensor out = fresh_like(b, b.tensor(0), b.opt_dtype(1));
          KILN_USER_CHECK(is_floating(out.dtype()), "\"normal_kernel_cpu\" not implemented for '", pointwise::aten_type_name(out.dtype()), "'");
          if (!b.meta()) normal_(out, 0.0, 1.0, b.rng());
          return ValueList{out};
        }}});
  auto randint_like = [](const Bound& b, int64_t low, int64_t high) {
    Tensor out = fresh_like(b, b.tensor(0), dtype_param(b));
    KILN_USER_CHECK(low < high, "random_ expects 'from' to be less than 'to', but got from=", low, " >= to=", high);
    if (!b.meta()) random_from_to_(out, low, high, b.rng());
    return ValueList{out};
  };
  t.def("randint_like", kTorch,
        {{"(Tensor input, int high, " KILN_LIKE_TAIL ")",
          [randint_like](const Bound& b) { return randint_like(b, 0, b.integer(1)); }},
         {"(Tensor input, int low, int high, " KILN_LIKE_TAIL ")",
          [randint_like](const Bound& b) { return randint_like(b, b.integer(1), b.integer(2)); }}});
  // normal(mean, std): output.normal_(0, 1) * std + mean, as ATen's normal_out does.
  auto normal = [](const Bound& b, const Value& mean, const Value& std, const Shape& size, DType dtype) {
    Tensor out = fresh(b, size, dtype);
    if (!b.meta()) normal_(out, 0.0, 1.0, b.rng());
    Tensor scaled = aten_t(b.mode(), std.is_tensor() ? "aten::mul.Tensor" : "aten::mul.Scalar", {out, std});
    return aten(b.mode(), mean.is_tensor() ? "aten::add.Tensor" : "aten::add.Scalar", {scaled, mean});
  };
  t.def("normal", kTorch,
        {{"(Tensor mean, Tensor std, *, Generator? generator=None)",
          [normal](const Bound& b) {
            Shape s = broadcast_shapes(b.tensor(0).sizes(), b.tensor(1).sizes());
            return normal(b, b[0], b[1], s, promote_types(b.tensor(0).dtype(), b.tensor(1).dtype()));
          }},
         {"(Tensor mean, float std=1, *, Generator? generator=None)",
          [normal](const Bound& b) {
            KILN_USER_CHECK(b.real(1) >= 0, "normal expects std >= 0.0, but found std ", b.real(1));
            return normal(b, b[0], b[1], b.tensor(0).sizes(), b.tensor(0).dtype());
          }},
         {"(float mean, Tensor std, *, Generator? generator=None)",
          [normal](const Bound& b) { return normal(b, b[0], b[1], b.tensor(1).sizes(), b.tensor(1).dtype()); }},
         {"(float mean, float std, int[] size, " KILN_RANDOM_TAIL ")", [](const Bound& b) {
            KILN_USER_CHECK(b.real(1) >= 0, "normal expects std >= 0.0, but found std ", b.real(1));
            Tensor out = fresh(b, b.ints(2), float_dtype(b, "normal"));
            if (!b.meta()) normal_(out, b.real(0), b.real(1), b.rng());
            return ValueList{out};
          }}});
  t.def("bernoulli", kTorch | kMethod,
        {{"(Tensor input, *, Generator? generator=None)",
          [](const Bound& b) {
            Tensor out = fresh_like(b, b.tensor(0), std::nullopt);
            if (!b.meta()) bernoulli_(out, b.tensor(0), b.rng());
            return ValueList{out};
          }},
         {"(Tensor input, float p, *, Generator? generator=None)", [](const Bound& b) {
            Tensor out = fresh_like(b, b.tensor(0), std::nullopt);
            if (!b.meta()) bernoulli_(out, b.real(1), b.rng());
            return ValueList{out};
          }}});
  t.def("multinomial", kTorch | kMethod,
        {{"(Tensor input, int num_samples, bool replacement=False, *, Generator? generator=None)",
          [](const Bound& b) { return ValueList{multinomial(b)}; }}});
  // torch.manual_seed is a Python function of torch.random (Dynamo does not trace it).
  t.def_in("torch", "manual_seed", PyKind::PyFunction, {{"(int seed)", [](const Bound& b) {
             if (!b.meta()) default_cpu_generator().manual_seed(uint64_t(b.integer(0)));
             return ValueList{Value()};
           }}}, "torch.random.manual_seed");
  t.def_in("torch", "initial_seed", PyKind::PyFunction, {{"()", [](const Bound&) {
             return ValueList{Value(int64_t(default_cpu_generator().initial_seed()))};
           }}}, "torch.random.initial_seed");
}

// Tensor.uniform_ and friends fill self in place; in Meta mode self is returned as is.
Signature rng_fill(const char* name, const char* text, std::function<void(const Bound&, const Tensor&)> fill) {
  Signature s = parse_signature(name, text);
  s.returns_arg = 0;
  s.handler = [fill = std::move(fill)](const Bound& b) {
    const Tensor& self = b.tensor(0);
    if (!b.meta() && !self.is_meta()) fill(b, self);
    return ValueList{b[0]};
  };
  return s;
}

void random_fills(Table& t) {
  auto floating = [](const Tensor& self, const char* kernel) {
    KILN_USER_CHECK(is_floating(self.dtype()), "\"", kernel, "\" not implemented for '", pointwise::aten_type_name(self.dtype()), "'");
  };
  t.add("Tensor", "uniform_", PyKind::Method,
        {rng_fill("uniform_", "(Tensor input, float from=0, float to=1, *, Generator? generator=None)",
                  [floating](const Bound& b, const Tensor& self) {
                    floating(self, "check_uniform_bounds");
                    uniform_(self, b.real(1), b.real(2), b.rng());
                  })});
  t.add("Tensor", "normal_", PyKind::Method,
        {rng_fill("normal_", "(Tensor input, float mean=0, float std=1, *, Generator? generator=None)",
                  [floating](const Bound& b, const Tensor& self) {
                    floating(self, "normal_kernel_cpu");
                    KILN_USER_CHECK(b.real(2) >= 0, "normal expects std >= 0.0, but found std ", b.real(2));
                    normal_(self, b.real(1), b.real(2), b.rng());
                  })});
  t.add("Tensor", "exponential_", PyKind::Method,
        {rng_fill("exponential_", "(Tensor input, float lambd=1, *, Generator? generator=None)",
                  [floating](const Bound& b, const Tensor& self) {
                    floating(self, "exponential_cpu");
                    exponential_(self, b.real(1), b.rng());
                  })});
  t.add("Tensor", "bernoulli_", PyKind::Method,
        {rng_fill("bernoulli_", "(Tensor input, Tensor p, *, Generator? generator=None)",
                  [](const Bound& b, const Tensor& self) { bernoulli_(self, b.tensor(1), b.rng()); }),
         rng_fill("bernoulli_", "(Tensor input, float p=0.5, *, Generator? generator=None)",
                  [](const Bound& b, const Tensor& self) {
                    KILN_USER_CHECK(b.real(1) >= 0 && b.real(1) <= 1, "bernoulli_ expects p to be in [0, 1], but got p=",
                                    b.real(1));
                    bernoulli_(self, b.real(1), b.rng());
                  })});
  // random_(from, to), random_(to), random_(): integers in [from, to).
  auto range_max = [](DType d) -> int64_t {
    switch (d) {
      case DType::Bool: return 2;
      case DType::UInt8: return 256;
      case DType::Int8: return 128;
      case DType::Int16: return 32768;
      case DType::Int32: return int64_t(1) << 31;
      case DType::Float16: return (int64_t(1) << 11) + 1;
      case DType::BFloat16: return (int64_t(1) << 8) + 1;
      case DType::Float32: return (int64_t(1) << 24) + 1;
      case DType::Float64: return (int64_t(1) << 53) + 1;
      default: return std::numeric_limits<int64_t>::max();
    }
  };
  t.add("Tensor", "random_", PyKind::Method,
        {rng_fill("random_", "(Tensor input, int from, int? to, *, Generator? generator=None)",
                  [range_max](const Bound& b, const Tensor& self) {
                    int64_t to = b.opt_integer(2).value_or(range_max(self.dtype()));
                    random_from_to_(self, b.integer(1), to, b.rng());
                  }),
         rng_fill("random_", "(Tensor input, int to, *, Generator? generator=None)",
                  [](const Bound& b, const Tensor& self) { random_from_to_(self, 0, b.integer(1), b.rng()); }),
         rng_fill("random_", "(Tensor input, *, Generator? generator=None)",
                  [range_max](const Bound& b, const Tensor& self) {
                    if (self.dtype() == DType::Int64) random_int64_full_range_(self, b.rng());
                    else random_from_to_(self, 0, range_max(self.dtype()), b.rng());
                  })});
}

}  // namespace

void register_creation(Table& t) {
  factories(t);
  random_factories(t);
  random_fills(t);
}

}  // namespace kiln::torchapi::detail
