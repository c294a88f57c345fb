// Factories: full / zeros / ones / empty / empty_strided, the *_like and
// new_* families, arange, linspace, scalar_tensor, eye. Every factory accepts
// ATen's dtype / layout / device / pin_memory keywords; only strided CPU (or
// meta) tensors exist here. Empty tensors come back zero-filled so results are
// reproducible.
#include <cmath>
#include <functional>
#include <limits>

#include "core/ops/kernel_util.h"
#include "core/ops/layout_util.h"
#include "core/tensor/generator.h"
#include "core/tensor/parallel.h"

namespace kiln {
namespace {

// A new tensor, filled with `fill` (zeros when absent) unless meta.
Tensor make(const Shape& sizes, const Shape& strides, DType dtype, bool meta, const Scalar& fill = Scalar(int64_t{0})) {
  check_scalar_fits(fill, dtype);
  Tensor t = new_strided(sizes, strides, dtype, meta);
  if (!meta && t.numel() > 0) t.fill_(fill);
  return t;
}

Tensor make_contiguous(const Shape& sizes, DType dtype, bool meta, const Scalar& fill = Scalar(int64_t{0})) {
  return make(sizes, contiguous_strides(sizes), dtype, meta, fill);
}

// torch.full infers its dtype from the fill value: bool, int64 or the default float.
DType fill_dtype(const Scalar& v) { return v.promotion_dtype(); }

// ---------------------------------------------------------------- arange

// PyTorch's CPU arange accumulates in double for float32 (its CPU acc type),
// float for the 16-bit floats and int64 for integers. Values for more than
// 32768 elements may differ from PyTorch's in the last bit: ATen splits the
// range across threads and each thread's vector loop starts at its own base.
template <class T>
using arange_acc_t = std::conditional_t<std::is_same_v<T, float> || std::is_same_v<T, double>, double,
                                        std::conditional_t<is_floating_v<T>, float, int64_t>>;

template <class A>
A scalar_as(const Scalar& s) {
  if constexpr (std::is_floating_point_v<A>) return static_cast<A>(s.to_double());
  else return s.to_int();
}

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, std::optional<DType> dtype_opt, bool meta) {
  bool any_float = start.is_float() || end.is_float() || step.is_float();
  DType dtype = dtype_opt.value_or(any_float ? kDefaultFloat : DType::Int64);
  KILN_USER_CHECK(dtype != DType::Bool, "arange: not implemented for bool");
  return dispatch_all(dtype, [&]<class T>() {
    using A = arange_acc_t<T>;
    A xstart = scalar_as<A>(start), xend = scalar_as<A>(end), xstep = scalar_as<A>(step);
    KILN_USER_CHECK(xstep > 0 || xstep < 0, "step must be nonzero");
    KILN_USER_CHECK(std::isfinite(double(xstart)) && std::isfinite(double(xend)), "unsupported range: ",
                    double(xstart), " -> ", double(xend));
    KILN_USER_CHECK((xstep > 0 && xend >= xstart) || (xstep < 0 && xend <= xstart),
                    "upper bound and lower bound inconsistent with step sign");
    double size_d;
    if constexpr (std::is_same_v<T, int64_t>) {
      // int64 keeps exact integer arithmetic (wider than double).
      int64_t sgn = (xstep > 0) - (xstep < 0);
      size_d = double((xend - xstart + xstep - sgn) / xstep);
    } else {
      size_d = std::ceil((end.to_double() - start.to_double()) / step.to_double());
    }
    KILN_USER_CHECK(size_d >= 0 && size_d <= double(std::numeric_limits<int64_t>::max()),
                    "invalid size, possible overflow?");
    int64_t n = int64_t(size_d);
    Tensor out = new_strided({n}, {1}, dtype, meta);
    if (meta) return out;
    T* p = out.data<T>();
    // ATen's vectorized loop: pairs of SIMD vectors (AVX2 lane counts) start
    // from a base rounded to T, lanes add j * step to it; the tail is scalar.
    constexpr int64_t lanes = std::is_same_v<T, double> ? 4 : std::is_same_v<T, float> ? 8 : 16;
    int64_t vec_end = is_floating_v<T> ? n / (2 * lanes) * (2 * lanes) : 0;
    // ATen's kernel is built with FMA contraction; computed in the wider
    // accumulator type, a plain multiply-add rounds to the same T (and is
    // much faster without hardware FMA).
    auto madd = [](A a, A b, A c) -> A { return a * b + c; };
    parallel_for(0, n, kParallelGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        if (i < vec_end) {
          int64_t i0 = i - i % lanes;
          T base = static_cast<T>(madd(xstep, static_cast<A>(i0), xstart));
          p[i] = static_cast<T>(madd(static_cast<A>(i - i0), xstep, static_cast<A>(base)));
        } else {
          p[i] = static_cast<T>(madd(xstep, static_cast<A>(i), xstart));
        }
      }
    });
    return out;
  });
}

// ---------------------------------------------------------------- linspace

// ATen computes linspace in the output type (double for integers), from both
// ends so the last value is exactly `end`. The 16-bit floats round after every
// operation, as c10::Half / c10::BFloat16 arithmetic does.
template <class T>
void fill_linspace(T* p, const Scalar& start_s, const Scalar& end_s, int64_t steps) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    auto h = [](float f) { return float(T(f)); };
    float start = h(float(start_s.to_double())), end = h(float(end_s.to_double()));
    float step = h(h(end - start) / h(float(steps - 1)));
    int64_t halfway = steps / 2;
    for (int64_t i = 0; i < steps; ++i) {
      float v = i < halfway ? h(start + h(step * h(float(i)))) : h(end - h(step * h(float(steps - i - 1))));
      p[i] = T(v);
    }
  } else {
    using S = std::conditional_t<std::is_integral_v<T>, double, T>;
    T start = start_s.to<T>(), end = end_s.to<T>();
    S step = (static_cast<S>(end) - static_cast<S>(start)) / static_cast<S>(steps - 1);
    int64_t halfway = steps / 2;
    // ATen's kernel is built with FMA contraction: one rounding per value.
    for (int64_t i = 0; i < steps; ++i)
      p[i] = i < halfway ? static_cast<T>(std::fma(step, static_cast<S>(i), static_cast<S>(start)))
                         : static_cast<T>(std::fma(-step, static_cast<S>(steps - i - 1), static_cast<S>(end)));
  }
}

Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, std::optional<DType> dtype_opt, bool meta) {
  KILN_USER_CHECK(steps >= 0, "number of steps must be non-negative");
  DType dtype = dtype_opt.value_or(kDefaultFloat);
  Tensor out = new_strided({steps}, {1}, dtype, meta);
  if (meta || steps == 0) return out;
  if (steps == 1) {
    out.fill_(start);
    return out;
  }
  dispatch_all(dtype, [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) KILN_FAIL("linspace: not implemented for bool");
    else fill_linspace<T>(out.data<T>(), start, end, steps);
  });
  return out;
}

Tensor eye(int64_t n, int64_t m, std::optional<DType> dtype, bool meta) {
  KILN_USER_CHECK(n >= 0, "n must be greater or equal to 0, got ", n);
  KILN_USER_CHECK(m >= 0, "m must be greater or equal to 0, got ", m);
  Tensor out = make_contiguous({n, m}, dtype.value_or(kDefaultFloat), meta);
  if (!meta && out.numel() > 0) out.diagonal().fill_(Scalar(int64_t{1}));
  return out;
}

// ---------------------------------------------------------------- registration

using FactoryFn = std::function<Tensor(const OpArgs&, bool force_meta)>;

void add_factory(OpRegistry& r, std::string_view schema, FactoryFn fn) {
  r.add(schema, [fn](const OpArgs& a) { return one(fn(a, true)); },
        [fn](const OpArgs& a) { return one(fn(a, any_meta(a))); });
}

// A *_like or new_* result: meta when self is meta (unless a device is given) or when asked.
bool like_meta(const OpArgs& a, const FactoryOptions& o, size_t device_index, bool force) {
  if (force || o.meta) return true;
  return a[device_index].is_none() && a.tensor(0).is_meta();
}

void register_sized(OpRegistry& r) {
  add_factory(r, "aten::full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
              [](const OpArgs& a, bool m) {
                FactoryOptions o = factory_options(a, 2);
                Scalar v = a.scalar(1);
                return make_contiguous(a.ints(0), o.dtype.value_or(fill_dtype(v)), m || o.meta, v);
              });
  for (auto [schema, value] : {std::pair{"aten::zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", 0},
                               std::pair{"aten::ones(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", 1}})
    add_factory(r, schema, [value](const OpArgs& a, bool m) {
      FactoryOptions o = factory_options(a, 1);
      return make_contiguous(a.ints(0), o.dtype.value_or(kDefaultFloat), m || o.meta, Scalar(int64_t{value}));
    });
  add_factory(r, "aten::empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
              [](const OpArgs& a, bool m) {
                FactoryOptions o = factory_options(a, 1);
                Shape sizes = a.ints(0);
                MemoryFormat f = memory_format_arg(a[5], MemoryFormat::Contiguous);
                KILN_USER_CHECK(f != MemoryFormat::Preserve, "preserve memory format is unsupported by empty()");
                Shape st = f == MemoryFormat::Contiguous ? contiguous_strides(sizes) : channels_last_strides(sizes);
                return make(sizes, st, o.dtype.value_or(kDefaultFloat), m || o.meta);
              });
  add_factory(r, "aten::empty_strided(SymInt[] size, SymInt[] stride, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
              [](const OpArgs& a, bool m) {
                FactoryOptions o = factory_options(a, 2);
                Shape sizes = a.ints(0), strides = a.ints(1);
                KILN_USER_CHECK(sizes.size() == strides.size(), "mismatch in length of strides and shape");
                for (int64_t s : strides) KILN_USER_CHECK(s >= 0, "empty_strided: negative stride ", s);
                return make(sizes, strides, o.dtype.value_or(kDefaultFloat), m || o.meta);
              });
  add_factory(r, "aten::scalar_tensor(Scalar s, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
              [](const OpArgs& a, bool m) {
                FactoryOptions o = factory_options(a, 1);
                return make_contiguous({}, o.dtype.value_or(kDefaultFloat), m || o.meta, a.scalar(0));
              });
  add_factory(r, "aten::eye(SymInt n, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
              [](const OpArgs& a, bool m) {
                FactoryOptions o = factory_options(a, 1);
                return eye(a.integer(0), a.integer(0), o.dtype, m || o.meta);
              });
  add_factory(r, "aten::eye.m(SymInt n, SymInt m, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
              [](const OpArgs& a, bool m) {
                FactoryOptions o = factory_options(a, 2);
                return eye(a.integer(0), a.integer(1), o.dtype, m || o.meta);
              });
}

void register_ranges(OpRegistry& r) {
  add_factory(r, "aten::arange(Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
              [](const OpArgs& a, bool m) {
                FactoryOptions o = factory_options(a, 1);
                return arange(Scalar(int64_t{0}), a.scalar(0), Scalar(int64_t{1}), o.dtype, m || o.meta);
              });
  add_factory(r, "aten::arange.start(Scalar start, Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
              [](const OpArgs& a, bool m) {
                FactoryOptions o = factory_options(a, 2);
                return arange(a.scalar(0), a.scalar(1), Scalar(int64_t{1}), o.dtype, m || o.meta);
              });
  add_factory(r, "aten::arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
              [](const OpArgs& a, bool m) {
                FactoryOptions o = factory_options(a, 3);
                return arange(a.scalar(0), a.scalar(1), a.scalar(2), o.dtype, m || o.meta);
              });
  // Inductor's iota: `length` integers from `start` by `step`, an arange by another name.
  add_factory(r, "prims::iota(SymInt length, *, SymInt start, SymInt step, ScalarType dtype, Device device, bool requires_grad) -> Tensor",
              [](const OpArgs& a, bool m) {
                const int64_t length = a.integer(0), start = a.integer(1), step = a.integer(2);
                KILN_USER_CHECK(length >= 0, "iota: length must be non-negative, got ", length);
                KILN_USER_CHECK(step != 0 || length == 0, "iota: step must be non-zero");
                int64_t span = 0, end = 0;
                KILN_USER_CHECK(!__builtin_mul_overflow(length, step, &span) && !__builtin_add_overflow(start, span, &end),
                                "iota: start + length * step overflows 64 bits");
                // The device as the other factories read it: cpu, or meta for shapes only.
                bool meta = m;
                if (!a[4].is_none()) {
                  const std::string d = a.str(4);
                  meta = meta || d.find("meta") != std::string::npos;
                  KILN_USER_CHECK(meta || d.find("cpu") != std::string::npos, "device '", d,
                                  "' is not supported: Kiln's eager kernels run on the CPU");
                }
                const std::optional<DType> dtype = a.opt_dtype(3);
                if (length == 0) return arange(Scalar(start), Scalar(start), Scalar(int64_t{1}), dtype, meta);
                return arange(Scalar(start), Scalar(end), Scalar(step), dtype, meta);
              });
  add_factory(r, "aten::linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
              [](const OpArgs& a, bool m) {
                FactoryOptions o = factory_options(a, 3);
                return linspace(a.scalar(0), a.scalar(1), a.integer(2), o.dtype, m || o.meta);
              });
}

void register_like(OpRegistry& r) {
  // zeros_like / ones_like / empty_like(self, *, dtype, layout, device, pin_memory, memory_format)
  for (auto [schema, value] : {
           std::pair{"aten::zeros_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", 0},
           std::pair{"aten::ones_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", 1},
           std::pair{"aten::empty_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", 0}})
    add_factory(r, schema, [value](const OpArgs& a, bool m) {
      const Tensor& t = a.tensor(0);
      FactoryOptions o = factory_options(a, 1);
      Shape st = strides_for_format(t, memory_format_arg(a[5], MemoryFormat::Preserve));
      return make(t.sizes(), st, o.dtype.value_or(t.dtype()), like_meta(a, o, 3, m), Scalar(int64_t{value}));
    });
  add_factory(r, "aten::full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
              [](const OpArgs& a, bool m) {
                const Tensor& t = a.tensor(0);
                FactoryOptions o = factory_options(a, 2);
                Shape st = strides_for_format(t, memory_format_arg(a[6], MemoryFormat::Preserve));
                return make(t.sizes(), st, o.dtype.value_or(t.dtype()), like_meta(a, o, 4, m), a.scalar(1));
              });
  // new_zeros / new_ones / new_empty(self, size, *, dtype, layout, device, pin_memory)
  for (auto [schema, value] : {
           std::pair{"aten::new_zeros(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", 0},
           std::pair{"aten::new_ones(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", 1},
           std::pair{"aten::new_empty(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", 0}})
    add_factory(r, schema, [value](const OpArgs& a, bool m) {
      FactoryOptions o = factory_options(a, 2);
      return make_contiguous(a.ints(1), o.dtype.value_or(a.tensor(0).dtype()), like_meta(a, o, 4, m),
                             Scalar(int64_t{value}));
    });
  add_factory(r, "aten::new_full(Tensor self, SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
              [](const OpArgs& a, bool m) {
                FactoryOptions o = factory_options(a, 3);
                return make_contiguous(a.ints(1), o.dtype.value_or(a.tensor(0).dtype()), like_meta(a, o, 5, m),
                                       a.scalar(2));
              });
  add_factory(r, "aten::new_empty_strided(Tensor self, SymInt[] size, SymInt[] stride, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
              [](const OpArgs& a, bool m) {
                FactoryOptions o = factory_options(a, 3);
                Shape sizes = a.ints(1), strides = a.ints(2);
                KILN_USER_CHECK(sizes.size() == strides.size(), "mismatch in length of strides and shape");
                return make(sizes, strides, o.dtype.value_or(a.tensor(0).dtype()), like_meta(a, o, 5, m));
              });
  // bernoulli(self, p): a tensor like self drawn as empty_like(self).bernoulli_(p)
  // from the default generator. Dropout's noise is this op, so that a captured
  // graph records the draw and every backend replays it from the same stream.
  r.add("aten::bernoulli.p(Tensor self, float p=0.5, *, Generator? generator=None) -> Tensor",
        [](const OpArgs& a) { return one(empty_like_meta(a.tensor(0))); },
        [](const OpArgs& a) {
          KILN_USER_CHECK(a[2].is_none(), "bernoulli: an explicit generator is not supported by Kiln");
          const Tensor& self = a.tensor(0);
          double p = a.real(1);
          KILN_USER_CHECK(p >= 0 && p <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", p);
          Tensor out = new_strided(self.sizes(), strides_for_format(self, MemoryFormat::Preserve), self.dtype(), self.is_meta());
          if (self.is_meta()) return one(out);
          bernoulli_(out, p);
          return one(out);
        });
}

}  // namespace

void register_factory_ops(OpRegistry& r) {
  register_sized(r);
  register_ranges(r);
  register_like(r);
}

}  // namespace kiln
