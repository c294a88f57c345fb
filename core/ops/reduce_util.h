#pragma once
// The reduction engine shared by the reduction, normalization and loss families.
//
// A reduction is planned once (make_plan): size-1 dims dropped, the remaining
// dims ordered by input stride and coalesced, each tagged reduced or kept, with
// its stride in the input and in a contiguous accumulator buffer (one slot per
// output element, zero stride for reduced dims). The innermost loop is then
// either a reduction run (many inputs into one accumulator, with independent
// lanes the compiler vectorizes) or a vertical run (one input row added into a
// row of accumulators). Work is split across threads along a kept dim (disjoint
// outputs) or, for few outputs, along a reduced dim into a fixed number of
// partial buffers combined in order, so results never depend on the thread count.
//
// An op supplies: acc_t, ctx_t (per-output context such as a precomputed mean;
// NoCtx when unused), identity(), ctx(out_index), step(acc&, x, ctx) and
// combine(acc&, acc).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/ops/value.h"
#include "core/tensor/loops.h"
#include "core/tensor/parallel.h"
#include "core/tensor/tensor.h"

namespace kiln::reduction {

// dims[d] is true when dim d is reduced.
using DimMask = std::vector<bool>;

// ATen's `int[1]? dim`: an empty list or None means every dim. Wraps negative
// dims and rejects duplicates.
DimMask dim_mask(int64_t ndim, std::span<const int64_t> dims);
DimMask dim_mask(int64_t ndim, const std::optional<std::vector<int64_t>>& dims);
// A mask reducing the one dim `dim`.
DimMask single_dim_mask(int64_t ndim, int64_t dim);
Shape reduced_sizes(const Shape& sizes, const DimMask& mask, bool keepdim);
// Number of input elements folded into each output.
int64_t reduced_count(const Shape& sizes, const DimMask& mask);
// User error naming `op` when a reduced dim of an empty tensor has size zero
// (max/min/amax and friends have no identity).
void check_nonempty_reduction(const Tensor& x, const DimMask& mask, std::string_view op);

struct NoCtx {};

struct Plan {
  // Loop dims, outermost first; strides in elements.
  std::vector<int64_t> sizes, in_strides, out_strides;
  std::vector<char> reduced;
  int64_t num_out = 1;
  int64_t numel = 0;
};
Plan make_plan(const Tensor& x, const DimMask& mask);

// How to spread a plan over threads: along `dim` (a kept dim unless `chunks` > 1,
// in which case it is a reduced dim split into that many partial buffers).
struct Split {
  int dim = -1;
  int64_t grain = 1;
  int64_t chunks = 1;
};
Split choose_split(const Plan& p);

namespace detail {

inline constexpr int kLanes = 16;

// acc = op(acc, x[0..n) strided by s); several independent lanes so the loop
// carries no dependency from one element to the next.
template <class T, class Op, class Stride>
inline void reduce_run(const T* x, Stride s, int64_t n, typename Op::acc_t& out, const Op& op,
                       typename Op::ctx_t c) {
  using A = typename Op::acc_t;
  if (n < 2 * kLanes) {
    A a = out;
    for (int64_t k = 0; k < n; ++k) op.step(a, x[k * s], c);
    out = a;
    return;
  }
  A lanes[kLanes];
  for (int j = 0; j < kLanes; ++j) lanes[j] = op.identity();
  int64_t i = 0;
  if constexpr (requires { Op::kSelectLanes; }) {
    // GCC's straight-line vectorizer gives up on selects (max/min); as a short
    // loop the loop vectorizer takes them.
    for (; i + kLanes <= n; i += kLanes) {
#pragma GCC unroll 1
      for (int j = 0; j < kLanes; ++j) op.step(lanes[j], x[(i + j) * s], c);
    }
  } else {
    for (; i + kLanes <= n; i += kLanes)
      for (int j = 0; j < kLanes; ++j) op.step(lanes[j], x[(i + j) * s], c);
  }
  for (; i < n; ++i) op.step(lanes[i - (n / kLanes) * kLanes], x[i * s], c);
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) op.combine(lanes[j], lanes[j + w]);
  op.combine(out, lanes[0]);
}

// acc[j * os] = op(acc[j * os], x[r * rs + j * is]) for j < n, rows r < rows.
// Four rows go through each accumulator per pass (in row order, so the result is
// the same as row by row), which saves most of the accumulator traffic.
template <class T, class Op, class Stride>
inline void vertical_rows(const T* x, int64_t rs, int64_t rows, Stride is, int64_t n, typename Op::acc_t* acc,
                          Stride os, int64_t out_base, const Op& op) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const T *x0 = x + r * rs, *x1 = x0 + rs, *x2 = x1 + rs, *x3 = x2 + rs;
    for (int64_t j = 0; j < n; ++j) {
      auto c = op.ctx(out_base + j * os);
      typename Op::acc_t a = acc[j * os];
      op.step(a, x0[j * is], c);
      op.step(a, x1[j * is], c);
      op.step(a, x2[j * is], c);
      op.step(a, x3[j * is], c);
      acc[j * os] = a;
    }
  }
  for (; r < rows; ++r) {
    const T* xr = x + r * rs;
    for (int64_t j = 0; j < n; ++j) op.step(acc[j * os], xr[j * is], op.ctx(out_base + j * os));
  }
}

// Runs the plan with dim `split` restricted to [b, e) into `acc`.
template <class T, class Op>
void run_range(const Plan& p, const T* x, typename Op::acc_t* acc, const Op& op, int split, int64_t b,
               int64_t e) {
  const int D = int(p.sizes.size());
  std::vector<int64_t> lo(size_t(D), 0), hi(p.sizes);
  if (split >= 0) {
    lo[size_t(split)] = b;
    hi[size_t(split)] = e;
  }
  for (int d = 0; d < D; ++d)
    if (hi[size_t(d)] <= lo[size_t(d)]) return;
  const int64_t n = hi[size_t(D - 1)] - lo[size_t(D - 1)];
  const int64_t is = p.in_strides[size_t(D - 1)], os = p.out_strides[size_t(D - 1)];
  const bool inner_reduced = p.reduced[size_t(D - 1)];
  // A vertical inner run under a reduced dim takes that dim's rows in one call.
  const bool row_block = !inner_reduced && D >= 2 && p.reduced[size_t(D - 2)];
  const int outer = row_block ? D - 2 : D - 1;
  const int64_t rows = row_block ? hi[size_t(D - 2)] - lo[size_t(D - 2)] : 1;
  const int64_t rs = row_block ? p.in_strides[size_t(D - 2)] : 0;
  std::vector<int64_t> idx = lo;
  while (true) {
    int64_t xo = 0, oo = 0;
    for (int d = 0; d < D; ++d) {
      xo += idx[size_t(d)] * p.in_strides[size_t(d)];
      oo += idx[size_t(d)] * p.out_strides[size_t(d)];
    }
    if (!inner_reduced) {
      if (is == 1 && os == 1) {
        constexpr std::integral_constant<int64_t, 1> one{};
        vertical_rows(x + xo, rs, rows, one, n, acc + oo, one, oo, op);
      } else {
        vertical_rows(x + xo, rs, rows, is, n, acc + oo, os, oo, op);
      }
    } else if (is == 1) {
      reduce_run(x + xo, std::integral_constant<int64_t, 1>{}, n, acc[oo], op, op.ctx(oo));
    } else {
      reduce_run(x + xo, is, n, acc[oo], op, op.ctx(oo));
    }
    int d = outer - 1;
    for (; d >= 0; --d) {
      if (++idx[size_t(d)] < hi[size_t(d)]) break;
      idx[size_t(d)] = lo[size_t(d)];
    }
    if (d < 0) return;
  }
}

}  // namespace detail

// Folds every input element of `x` (whose data starts at `data`) into acc[out],
// which must hold p.num_out initialised accumulators.
template <class T, class Op>
void run(const Plan& p, const T* data, typename Op::acc_t* acc, const Op& op) {
  if (p.numel == 0) return;
  Split s = choose_split(p);
  if (s.dim < 0) {
    detail::run_range(p, data, acc, op, -1, 0, 0);
    return;
  }
  const int64_t size = p.sizes[size_t(s.dim)];
  if (s.chunks <= 1) {
    parallel_for(0, size, s.grain,
                 [&](int64_t b, int64_t e) { detail::run_range(p, data, acc, op, s.dim, b, e); });
    return;
  }
  using A = typename Op::acc_t;
  std::vector<A> partial(size_t(s.chunks * p.num_out), op.identity());
  const int64_t step = (size + s.chunks - 1) / s.chunks;
  parallel_for(0, s.chunks, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c)
      detail::run_range(p, data, partial.data() + c * p.num_out, op, s.dim, c * step,
                        std::min(size, (c + 1) * step));
  });
  parallel_for(0, p.num_out, kParallelGrain, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o)
      for (int64_t c = 0; c < s.chunks; ++c) op.combine(acc[o], partial[size_t(c * p.num_out + o)]);
  });
}

// Plans and runs `op` over x, returning one accumulator per output element
// (outputs in row-major order of the kept dims).
template <class T, class Op>
std::vector<typename Op::acc_t> accumulate(const Tensor& x, const DimMask& mask, const Op& op) {
  Plan p = make_plan(x, mask);
  std::vector<typename Op::acc_t> acc(size_t(p.num_out), op.identity());
  run<T>(p, x.data<T>(), acc.data(), op);
  return acc;
}

// Converts an accumulated value to an element of dtype O.
template <class O, class V>
inline O cast_to(V v) {
  if constexpr (std::is_same_v<O, bool>) return v != V(0);
  else if constexpr (std::is_same_v<O, Half> || std::is_same_v<O, BFloat16>) return O(static_cast<float>(v));
  else return static_cast<O>(v);
}

// out[i] = fin(i) for every element of the contiguous tensor `out`.
template <class Fin>
void write_outputs(const Tensor& out, Fin fin) {
  dispatch_all(out.dtype(), [&]<class O>() {
    O* o = out.data<O>();
    parallel_for(0, out.numel(), kParallelGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = cast_to<O>(fin(i));
    });
  });
}

// Calls fn.template operator()<T>() for the four floating dtypes (Half and
// BFloat16 included); a user error naming `what` otherwise.
template <class Fn>
decltype(auto) dispatch_any_float(DType t, std::string_view what, Fn&& fn) {
  switch (t) {
    case DType::Float16: return fn.template operator()<Half>();
    case DType::BFloat16: return fn.template operator()<BFloat16>();
    case DType::Float32: return fn.template operator()<float>();
    case DType::Float64: return fn.template operator()<double>();
    default: break;
  }
  KILN_FAIL(what, ": expected a floating point tensor, got ", dtype_name(t));
}

// ---- common ops ----

// An element's value in arithmetic: float for the 16-bit floats, T otherwise.
template <class T>
inline auto value_of(T x) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return static_cast<float>(x);
  else return x;
}

// The accumulator of sums: double for floats, int64 for integers and bool.
template <class T>
using sum_acc_t = std::conditional_t<is_floating_v<T>, double, int64_t>;

template <class T>
struct SumOp {
  using acc_t = sum_acc_t<T>;
  using ctx_t = NoCtx;
  static acc_t identity() { return 0; }
  ctx_t ctx(int64_t) const { return {}; }
  void step(acc_t& a, T x, ctx_t) const { combine(a, acc_t(value_of(x))); }
  void combine(acc_t& a, acc_t b) const {
    if constexpr (std::is_integral_v<acc_t>) a = acc_t(uint64_t(a) + uint64_t(b));  // wraps, no UB
    else a += b;
  }
};

// Sum of squared deviations from a per-output mean: the second pass of variance.
template <class T>
struct SquaredDeviationOp {
  using acc_t = double;
  using ctx_t = double;
  const double* mean;
  static acc_t identity() { return 0; }
  ctx_t ctx(int64_t o) const { return mean[o]; }
  void step(acc_t& a, T x, ctx_t m) const {
    double d = double(value_of(x)) - m;
    a += d * d;
  }
  void combine(acc_t& a, acc_t b) const { a += b; }
};

// Per-output mean and sum of squared deviations (two passes in double).
struct Moments {
  std::vector<double> mean, m2;
  int64_t count = 0;
  // m2 / max(0, count - correction), as torch.var.
  double var(int64_t o, double correction) const {
    return m2[size_t(o)] / std::max(0.0, double(count) - correction);
  }
};
// x must be floating (any of the four float dtypes).
Moments moments(const Tensor& x, const DimMask& mask);

// ---- 1-D lanes ----

// Calls fn(ptrs, lane_strides, n) once per 1-D lane along `dim`: ptrs[k] is the
// lane's first element in operand k (cast it to the operand's type), and
// lane_strides[k] its element stride along the lane. Operands share sizes,
// except that an operand may have size 1 along `dim` (its stride is then 0).
// Lanes run in parallel.
template <size_t N, class Fn>
void for_each_lane(const std::array<Tensor, N>& ops, int64_t dim, Fn fn) {
  std::array<Tensor, N> v = ops;
  if (v[0].dim() == 0)
    for (auto& t : v) t = t.unsqueeze(0);
  dim = wrap_dim(dim, v[0].dim());
  const int64_t n = v[0].size(dim);
  if (n == 0 || v[0].numel() == 0) return;
  std::array<Tensor, N> starts;
  std::array<int64_t, N> lane_strides;
  std::array<const Tensor*, N> ptrs;
  for (size_t k = 0; k < N; ++k) {
    lane_strides[k] = v[k].size(dim) == 1 ? 0 : v[k].stride(dim);
    starts[k] = v[k].select(dim, 0);
    ptrs[k] = &starts[k];
  }
  LoopPlan<N> plan = make_loop_plan<N>(ptrs);
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / n);
  parallel_for(0, plan.numel, grain, [&](int64_t b, int64_t e) {
    auto body = [&](char** p, const int64_t* s, int64_t count) {
      std::array<char*, N> q;
      for (int64_t i = 0; i < count; ++i) {
        for (size_t k = 0; k < N; ++k) q[k] = p[k] + i * s[k];
        fn(q.data(), lane_strides.data(), n);
      }
    };
    run_loop_range(plan, b, e, body);
  });
}

// Sum and sum-of-squared-deviation of one contiguous row, in double.
template <class T>
std::pair<double, double> row_moments(const T* x, int64_t n) {
  SumOp<T> sum_op;
  typename SumOp<T>::acc_t s = 0;
  detail::reduce_run(x, std::integral_constant<int64_t, 1>{}, n, s, sum_op, NoCtx{});
  double mean = n > 0 ? double(s) / double(n) : 0.0;
  SquaredDeviationOp<T> sq{&mean};
  double m2 = 0;
  detail::reduce_run(x, std::integral_constant<int64_t, 1>{}, n, m2, sq, mean);
  return {mean, m2};
}

// ---- tensor-level entry points (for the other families) ----

// torch.sum: integers and bool sum to int64 unless `dtype` says otherwise.
Tensor sum(const Tensor& x, const DimMask& mask, bool keepdim, std::optional<DType> dtype = {});
// torch.mean (floating only).
Tensor mean(const Tensor& x, const DimMask& mask, bool keepdim, std::optional<DType> dtype = {});
Tensor amax(const Tensor& x, const DimMask& mask, bool keepdim);

// Every element of t as a double, row-major (empty for an undefined tensor).
std::vector<double> as_doubles(const Tensor& t);

// The metadata call_meta gives for op `name`, or a thrown kiln::Error.
ValueList meta_of(std::string_view name, const ValueList& args);

// "Mean" / "Sum" / "None" or 1 / 2 / 0, as loss ops take `int reduction=Mean`.
enum class LossReduction { None = 0, Mean = 1, Sum = 2 };
LossReduction loss_reduction(const Value& v);
// A loss tensor reduced as requested: itself, its mean or its sum.
Tensor apply_loss_reduction(const Tensor& loss, LossReduction r);

}  // namespace kiln::reduction
