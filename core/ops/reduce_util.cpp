// The reduction engine's planning (reduce_util.h) and the small helpers the
// reduction, normalization and loss families share.
#include "core/ops/reduce_util.h"

#include "core/ops/registry.h"

namespace kiln::reduction {

// ---------------------------------------------------------------- dims

DimMask dim_mask(int64_t ndim, std::span<const int64_t> dims) {
  DimMask mask(size_t(ndim), dims.empty());
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, ndim);
    if (ndim == 0) continue;  // a 0-dim tensor accepts dim 0 / -1 and has nothing to reduce
    KILN_USER_CHECK(!mask[size_t(w)], "dim ", w, " appears multiple times in the list of dims");
    mask[size_t(w)] = true;
  }
  return mask;
}

DimMask dim_mask(int64_t ndim, const std::optional<std::vector<int64_t>>& dims) {
  if (!dims) return DimMask(size_t(ndim), true);
  return dim_mask(ndim, std::span<const int64_t>(*dims));
}

DimMask single_dim_mask(int64_t ndim, int64_t dim) {
  int64_t d = dim;
  return dim_mask(ndim, std::span<const int64_t>(&d, 1));
}

Shape reduced_sizes(const Shape& sizes, const DimMask& mask, bool keepdim) {
  Shape out;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (!mask[d]) out.push_back(sizes[d]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

int64_t reduced_count(const Shape& sizes, const DimMask& mask) {
  int64_t n = 1;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (mask[d]) n *= sizes[d];
  return n;
}

void check_nonempty_reduction(const Tensor& x, const DimMask& mask, std::string_view op) {
  if (x.numel() != 0) return;
  for (int64_t d = 0; d < x.dim(); ++d)
    KILN_USER_CHECK(!mask[size_t(d)] || x.size(d) != 0, op, "(): Expected reduction dim ", d,
                    " to have non-zero size.");
}

// ---------------------------------------------------------------- planning

namespace {
struct LoopDim {
  int64_t size, in, out;
  bool reduced;
};

// Coalesces neighbours that step through memory and accumulators as one dim.
std::vector<LoopDim> coalesce(const std::vector<LoopDim>& dims) {
  std::vector<LoopDim> out;
  for (const LoopDim& d : dims) {
    if (!out.empty()) {
      LoopDim& prev = out.back();
      if (prev.reduced == d.reduced && prev.in == d.in * d.size && prev.out == d.out * d.size) {
        prev.size *= d.size;
        prev.in = d.in;
        prev.out = d.out;
        continue;
      }
    }
    out.push_back(d);
  }
  return out;
}

// A tiny innermost dim wastes the inner loop: bring a long dim of the other kind
// (the one nearest in memory) innermost instead.
void lengthen_inner_run(std::vector<LoopDim>& dims) {
  constexpr int64_t kShort = 16;
  if (dims.size() < 2 || dims.back().size >= kShort) return;
  bool want_reduced = !dims.back().reduced;
  int best = -1;
  for (int i = 0; i + 1 < int(dims.size()); ++i) {
    const LoopDim& d = dims[size_t(i)];
    if (d.reduced == want_reduced && d.size >= kShort && (best < 0 || d.in < dims[size_t(best)].in))
      best = i;
  }
  if (best < 0) return;
  LoopDim moved = dims[size_t(best)];
  dims.erase(dims.begin() + best);
  dims.push_back(moved);
}
}  // namespace

Plan make_plan(const Tensor& x, const DimMask& mask) {
  const int64_t nd = x.dim();
  Shape out_strides(size_t(nd), 0);
  int64_t num_out = 1;
  for (int64_t d = nd - 1; d >= 0; --d)
    if (!mask[size_t(d)]) {
      out_strides[size_t(d)] = num_out;
      num_out *= x.size(d);
    }
  std::vector<LoopDim> dims;
  for (int64_t d = 0; d < nd; ++d)
    if (x.size(d) != 1) dims.push_back({x.size(d), x.stride(d), out_strides[size_t(d)], bool(mask[size_t(d)])});
  std::stable_sort(dims.begin(), dims.end(), [](const LoopDim& a, const LoopDim& b) {
    return a.in != b.in ? a.in > b.in : a.out > b.out;
  });
  dims = coalesce(dims);
  lengthen_inner_run(dims);
  if (dims.empty()) dims.push_back({1, 1, 0, true});
  Plan p;
  p.num_out = num_out;
  p.numel = x.numel();
  for (const LoopDim& d : dims) {
    p.sizes.push_back(d.size);
    p.in_strides.push_back(d.in);
    p.out_strides.push_back(d.out);
    p.reduced.push_back(d.reduced);
  }
  return p;
}

Split choose_split(const Plan& p) {
  // Thread-count independent, so that sums come out the same on any machine.
  constexpr int64_t kChunkElems = int64_t(1) << 18;
  constexpr int64_t kMaxChunks = 64;
  constexpr int64_t kMaxPartialSlots = int64_t(1) << 22;
  constexpr int64_t kMinKept = 16;
  Split s;
  if (p.numel < 2 * kParallelGrain) return s;
  auto kept_split = [&](int d) {
    s.dim = d;
    int64_t per_index = std::max<int64_t>(1, p.numel / p.sizes[size_t(d)]);
    s.grain = std::max<int64_t>(1, kParallelGrain / per_index);
    return s;
  };
  auto chunks_of = [&](int d) {
    int64_t chunks = std::clamp<int64_t>(p.numel / kChunkElems, 1, kMaxChunks);
    return std::min({chunks, p.sizes[size_t(d)], std::max<int64_t>(1, kMaxPartialSlots / p.num_out)});
  };
  auto partial_split = [&](int d, int64_t chunks) {
    s.dim = d;
    s.chunks = chunks;
    return s;
  };
  // Splitting the outermost dim keeps each thread streaming through one block of memory.
  if (!p.reduced[0] && p.sizes[0] >= kMinKept) return kept_split(0);
  if (p.reduced[0] && chunks_of(0) > 1) return partial_split(0, chunks_of(0));
  int kept = -1, red = -1;
  for (int d = 0; d < int(p.sizes.size()); ++d) {
    int& best = p.reduced[size_t(d)] ? red : kept;
    if (best < 0 || p.sizes[size_t(d)] > p.sizes[size_t(best)]) best = d;
  }
  if (kept >= 0 && p.sizes[size_t(kept)] >= kMinKept) return kept_split(kept);
  if (red >= 0 && chunks_of(red) > 1) return partial_split(red, chunks_of(red));
  return kept >= 0 ? kept_split(kept) : s;
}

// ---------------------------------------------------------------- shared helpers

Moments moments(const Tensor& x, const DimMask& mask) {
  Moments m;
  m.count = reduced_count(x.sizes(), mask);
  dispatch_any_float(x.dtype(), "var", [&]<class T>() {
    auto sums = accumulate<T>(x, mask, SumOp<T>{});
    m.mean.resize(sums.size());
    for (size_t i = 0; i < sums.size(); ++i) m.mean[i] = sums[i] / double(m.count);
    m.m2 = accumulate<T>(x, mask, SquaredDeviationOp<T>{m.mean.data()});
  });
  return m;
}

std::vector<double> as_doubles(const Tensor& t) {
  if (!t.defined()) return {};
  Tensor d = t.to(DType::Float64).contiguous();
  return std::vector<double>(d.data<double>(), d.data<double>() + d.numel());
}

ValueList meta_of(std::string_view name, const ValueList& args) {
  auto r = call_meta(name, args);
  if (!r) throw Error(r.status().message());
  return *r;
}

LossReduction loss_reduction(const Value& v) {
  if (v.kind() == Value::Kind::String) {
    const std::string& s = v.to_string();
    if (s == "Mean" || s == "mean") return LossReduction::Mean;
    if (s == "Sum" || s == "sum") return LossReduction::Sum;
    if (s == "None" || s == "none") return LossReduction::None;
    KILN_FAIL(s, " is not a valid value for reduction");
  }
  int64_t r = v.to_int();
  KILN_USER_CHECK(r >= 0 && r <= 2, r, " is not a valid value for reduction");
  return LossReduction(r);
}

}  // namespace kiln::reduction
