// Indexing: index_select, gather, scatter*, index / index_put (advanced
// indexing), masked_select, nonzero, index_add, index_fill, take.
//
// Advanced indexing works as ATen's does: the indexed dims of the base tensor
// get stride 0 in a view shaped like the result, and a small int64 tensor of
// element offsets (one per index position, bounds-checked once) supplies where
// each position lands. The element loop is then a dtype-agnostic strided move.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>

#include "core/ops/kernel_util.h"
#include "core/ops/layout_util.h"
#include "core/tensor/parallel.h"

namespace kiln {
namespace {

[[noreturn]] void data_dependent(std::string_view what) {
  KILN_FAIL("the output shape depends on the data (", what,
            "), so it cannot be computed from meta tensors");
}

template <class Fn>
decltype(auto) dispatch_index(DType t, Fn&& fn) {
  if (t == DType::Int32) return fn.template operator()<int32_t>();
  KILN_CHECK(t == DType::Int64, "index dtype ", dtype_name(t));
  return fn.template operator()<int64_t>();
}

template <class T>
bool nonzero_value(T v) {
  if constexpr (std::is_same_v<T, bool>) return v;
  else return static_cast<acc_t<T>>(v) != 0;
}

// Selections (nonzero, masked_select) run in chunks of kChunk elements: the
// chunks' hit counts are taken in parallel, and their prefix sums tell each
// chunk where its results start, so the second pass writes in parallel too.
constexpr int64_t kChunk = kParallelGrain;

// start[c] = number of hits before chunk c; start.back() = total hits.
template <class Pred>
std::vector<int64_t> chunk_offsets(int64_t n, Pred pred) {
  int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<int64_t> start(static_cast<size_t>(chunks) + 1, 0);
  parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      int64_t cnt = 0;
      for (int64_t i = c * kChunk, end = std::min(n, i + kChunk); i < end; ++i) cnt += pred(i) ? 1 : 0;
      start[size_t(c) + 1] = cnt;
    }
  });
  std::partial_sum(start.begin(), start.end(), start.begin());
  return start;
}

// [count, ndim] int64 coordinates of the nonzero elements, in row-major order.
// Allocated transposed (strides [1, count]) like PyTorch's; each chunk steps a
// multi-index instead of dividing per element.
Tensor nonzero(const Tensor& self) {
  if (self.is_meta()) data_dependent("the number of nonzero elements");
  Tensor c = self.contiguous();
  const int64_t nd = c.dim(), n = c.numel();
  const Shape& sizes = c.sizes();
  Tensor buf;
  dispatch_all(c.dtype(), [&]<class T>() {
    const T* p = c.data<T>();
    std::vector<int64_t> start = chunk_offsets(n, [&](int64_t i) { return nonzero_value(p[i]); });
    const int64_t total = start.back();
    buf = Tensor::empty({nd, total}, DType::Int64);
    int64_t* out = buf.data<int64_t>();
    parallel_for(0, int64_t(start.size()) - 1, 1, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) {
        int64_t i = k * kChunk, end = std::min(n, i + kChunk), pos = start[size_t(k)];
        Shape idx(static_cast<size_t>(nd));
        for (int64_t d = nd - 1, r = i; d >= 0; --d) {
          idx[d] = r % sizes[d];
          r /= sizes[d];
        }
        for (; i < end; ++i) {
          if (nonzero_value(p[i])) {
            for (int64_t d = 0; d < nd; ++d) out[d * total + pos] = idx[d];
            ++pos;
          }
          for (int64_t d = nd - 1; d >= 0 && ++idx[d] == sizes[d]; --d) idx[d] = 0;
        }
      }
    });
  });
  return buf.t();
}

Tensor masked_select(const Tensor& self, const Tensor& mask) {
  KILN_USER_CHECK(mask.dtype() == DType::Bool, "masked_select: expected BoolTensor for mask");
  Shape shape = broadcast_shapes(self.sizes(), mask.sizes());
  if (self.is_meta() || mask.is_meta()) data_dependent("the number of selected elements");
  Tensor m = mask.expand(shape).contiguous(), s = self.expand(shape).contiguous();
  const bool* mp = m.data<bool>();
  const int64_t n = s.numel();
  std::vector<int64_t> start = chunk_offsets(n, [&](int64_t i) { return mp[i]; });
  Tensor out = Tensor::empty({start.back()}, self.dtype());
  dispatch_bytes(s.itemsize(), [&]<class U>() {
    const U* sp = static_cast<const U*>(s.raw_data());
    U* op = static_cast<U*>(out.raw_data());
    parallel_for(0, int64_t(start.size()) - 1, 1, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) {
        int64_t pos = start[size_t(k)];
        for (int64_t i = k * kChunk, end = std::min(n, i + kChunk); i < end; ++i)
          if (mp[i]) op[pos++] = sp[i];
      }
    });
  });
  return out;
}

// ---------------------------------------------------------------- advanced indexing

struct IndexPlan {
  Shape result_sizes;
  Tensor base_view;     // base restrided to result_sizes, stride 0 on the index dims
  Tensor offsets_view;  // int64 element offsets, restrided to result_sizes (unset for meta)
};

std::string index_shapes(const std::vector<Tensor>& indices) {
  std::string s;
  for (const Tensor& t : indices)
    if (t.defined()) s += (s.empty() ? "" : ", ") + shape_str(t.sizes());
  return s;
}

// `indices`: one entry per leading dim of base (undefined: the whole dim), all
// int64/int32 (bool masks already expanded). Bounds are checked here, once
// per index position.
IndexPlan plan_index(const Tensor& base, std::vector<Tensor> indices, bool wrap_negative) {
  int64_t nd = base.dim();
  KILN_CHECK(int64_t(indices.size()) <= nd);
  indices.resize(size_t(nd));
  std::vector<int64_t> pos, rest;
  Shape bshape;
  for (int64_t d = 0; d < nd; ++d) {
    if (!indices[d].defined()) {
      rest.push_back(d);
      continue;
    }
    pos.push_back(d);
    size_t n = std::max(bshape.size(), indices[d].sizes().size());
    Shape next(n);
    for (size_t i = 0; i < n; ++i) {
      int64_t a = i + bshape.size() < n ? 1 : bshape[i - (n - bshape.size())];
      int64_t b = i + indices[d].dim() < n ? 1 : indices[d].sizes()[i - (n - size_t(indices[d].dim()))];
      KILN_USER_CHECK(a == b || a == 1 || b == 1,
                      "shape mismatch: indexing tensors could not be broadcast together with shapes ",
                      index_shapes(indices));
      next[i] = a == 1 ? b : a;
    }
    bshape = std::move(next);
  }
  KILN_CHECK(!pos.empty());
  // Non-adjacent index dims go to the front of the result, as in NumPy.
  Tensor b = base;
  std::vector<int64_t> user_dim(static_cast<size_t>(nd));  // dims as the caller numbered them, for messages
  std::iota(user_dim.begin(), user_dim.end(), 0);
  if (pos.back() - pos.front() + 1 != int64_t(pos.size())) {
    std::vector<int64_t> perm = pos;
    perm.insert(perm.end(), rest.begin(), rest.end());
    b = base.permute(perm);
    std::vector<Tensor> moved;
    for (int64_t d : perm) moved.push_back(indices[d]);
    indices = std::move(moved);
    user_dim = perm;
    std::iota(pos.begin(), pos.end(), 0);
  }
  int64_t first = pos.front(), k = int64_t(pos.size()), nb = int64_t(bshape.size());
  IndexPlan plan;
  Shape view_strides, off_strides;
  Shape bstrides = contiguous_strides(bshape);
  for (int64_t d = 0; d < first; ++d) {
    plan.result_sizes.push_back(b.sizes()[d]);
    view_strides.push_back(b.strides()[d]);
    off_strides.push_back(0);
  }
  for (int64_t i = 0; i < nb; ++i) {
    plan.result_sizes.push_back(bshape[i]);
    view_strides.push_back(0);
    off_strides.push_back(bstrides[i]);
  }
  for (int64_t d = first + k; d < nd; ++d) {
    plan.result_sizes.push_back(b.sizes()[d]);
    view_strides.push_back(b.strides()[d]);
    off_strides.push_back(0);
  }
  plan.base_view = b.as_strided(plan.result_sizes, view_strides, b.storage_offset());
  if (b.is_meta() || std::any_of(indices.begin(), indices.end(), [](const Tensor& t) { return t.defined() && t.is_meta(); }))
    return plan;

  Tensor offsets = Tensor::zeros(bshape, DType::Int64);
  for (int64_t j = 0; j < k; ++j) {
    int64_t d = first + j, size = b.sizes()[d], stride = b.strides()[d];
    Tensor idx = indices[d].expand(bshape);
    dispatch_index(idx.dtype(), [&]<class I>() {
      for_each_run<2>({&offsets, &idx}, [&](char** p, const int64_t* s, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          int64_t v = *reinterpret_cast<const I*>(p[1] + i * s[1]);
          v = wrap_negative ? wrap_index(v, size, user_dim[d]) : check_index(v, size, user_dim[d]);
          *reinterpret_cast<int64_t*>(p[0] + i * s[0]) += v * stride;
        }
      });
    });
  }
  plan.offsets_view = offsets.as_strided(plan.result_sizes, off_strides, 0);
  return plan;
}

// Index dtypes and the number of dims they consume, checked like PyTorch.
void check_indices(const Tensor& self, const std::vector<Tensor>& indices) {
  int64_t consumed = 0;
  for (const Tensor& t : indices) {
    if (!t.defined()) {
      ++consumed;
      continue;
    }
    DType dt = t.dtype();
    KILN_USER_CHECK(dt == DType::Int64 || dt == DType::Int32 || dt == DType::Bool || dt == DType::UInt8,
                    "tensors used as indices must be long, int, byte or bool tensors");
    bool mask = dt == DType::Bool || dt == DType::UInt8;
    KILN_USER_CHECK(!mask || t.dim() > 0, "indexing with a 0-dim bool tensor is not supported");
    consumed += mask ? t.dim() : 1;
  }
  KILN_USER_CHECK(consumed <= self.dim(), "too many indices for tensor of dimension ", self.dim(), " (got ",
                  consumed, ")");
}

// Bool/uint8 masks become the int64 coordinates of their true elements (one
// index tensor per mask dim).
std::vector<Tensor> expand_indices(const Tensor& self, const std::vector<Tensor>& indices) {
  check_indices(self, indices);
  std::vector<Tensor> out;
  for (const Tensor& t : indices) {
    if (!t.defined() || t.dtype() == DType::Int64 || t.dtype() == DType::Int32) {
      out.push_back(t);
      continue;
    }
    int64_t at = int64_t(out.size());
    for (int64_t j = 0; j < t.dim(); ++j)
      KILN_USER_CHECK(t.sizes()[j] == self.sizes()[at + j], "The shape of the mask ", shape_str(t.sizes()),
                      " at index ", j, " does not match the shape of the indexed tensor ", shape_str(self.sizes()),
                      " at index ", at + j);
    if (t.is_meta()) data_dependent("the number of true elements in a boolean index");
    Tensor nz = nonzero(t);
    for (int64_t j = 0; j < t.dim(); ++j) out.push_back(nz.select(1, j));
  }
  return out;
}

bool all_undefined(const std::vector<Tensor>& ts) {
  return std::none_of(ts.begin(), ts.end(), [](const Tensor& t) { return t.defined(); });
}

// out[...] = base[offsets...]: a strided move of raw elements.
Tensor take_planned(const IndexPlan& plan, DType dtype) {
  Tensor out = new_strided(plan.result_sizes, contiguous_strides(plan.result_sizes), dtype,
                           !plan.offsets_view.defined());
  if (out.is_meta() || out.numel() == 0) return out;
  int64_t item = int64_t(out.itemsize());
  dispatch_bytes(size_t(item), [&]<class U>() {
    for_each_run<3>({&out, &plan.base_view, &plan.offsets_view}, [&](char** p, const int64_t* s, int64_t n) {
      if (s[2] == 0) {  // a run along non-indexed dims: one offset, often a plain row copy
        const char* src = p[1] + *reinterpret_cast<const int64_t*>(p[2]) * item;
        if (s[0] == item && s[1] == item) {
          std::memcpy(p[0], src, size_t(n * item));
        } else {
          for (int64_t i = 0; i < n; ++i)
            *reinterpret_cast<U*>(p[0] + i * s[0]) = *reinterpret_cast<const U*>(src + i * s[1]);
        }
        return;
      }
      for (int64_t i = 0; i < n; ++i) {
        int64_t off = *reinterpret_cast<const int64_t*>(p[2] + i * s[2]);
        *reinterpret_cast<U*>(p[0] + i * s[0]) = *reinterpret_cast<const U*>(p[1] + i * s[1] + off * item);
      }
    });
  });
  return out;
}

Tensor index(const Tensor& self, const std::vector<Tensor>& raw) {
  std::vector<Tensor> indices = expand_indices(self, raw);
  if (all_undefined(indices)) return self.is_meta() ? to_meta(self) : self.clone();
  return take_planned(plan_index(self, indices, true), self.dtype());
}

// How index_put / index_add combine a value into its destination. Each step
// rounds to the destination's dtype, as PyTorch's serial CPU loops do
// (callers wanting float32 accumulation pass float32 tensors).
struct PutMode {
  bool accumulate = false;
  Scalar alpha = Scalar(int64_t{1});
  bool round_product = false;  // index_add: alpha * v rounds to the dtype first, as ATen's loops do
};

void put_planned(const IndexPlan& plan, const Tensor& values, const PutMode& mode) {
  Tensor v = values.expand(plan.result_sizes);
  int64_t item = int64_t(values.itemsize());
  dispatch_all(values.dtype(), [&]<class T>() {
    using A = acc_t<T>;
    A alpha = mode.alpha.to<A>();
    // Serial, in row-major order: duplicate indices resolve deterministically
    // (the last write wins; accumulation happens in index order).
    for_each_run<3>({&plan.base_view, &v, &plan.offsets_view}, [&](char** p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        int64_t off = *reinterpret_cast<const int64_t*>(p[2] + i * s[2]);
        T* dst = reinterpret_cast<T*>(p[0] + i * s[0] + off * item);
        T val = *reinterpret_cast<const T*>(p[1] + i * s[1]);
        if (!mode.accumulate) {
          *dst = val;
        } else if (mode.round_product) {
          T prod = static_cast<T>(static_cast<A>(val) * static_cast<A>(static_cast<T>(alpha)));
          *dst = static_cast<T>(static_cast<A>(*dst) + static_cast<A>(prod));
        } else {
          *dst = static_cast<T>(static_cast<A>(*dst) + alpha * static_cast<A>(val));
        }
      }
    }, /*parallel=*/false);
  });
}

Tensor clone_preserve(const Tensor& t) {
  Tensor out = new_strided(t.sizes(), preserve_strides(t), t.dtype(), t.is_meta());
  if (!out.is_meta()) out.copy_(t);
  return out;
}

Tensor index_put(const Tensor& self, const std::vector<Tensor>& raw, const Tensor& values, bool accumulate) {
  KILN_USER_CHECK(values.dtype() == self.dtype(), "Index put requires the source and destination dtypes match, got ",
                  dtype_name(self.dtype()), " for the destination and ", dtype_name(values.dtype()), " for the source.");
  Tensor out = clone_preserve(self);
  bool meta = out.is_meta() || values.is_meta() ||
              std::any_of(raw.begin(), raw.end(), [](const Tensor& t) { return t.defined() && t.is_meta(); });
  if (meta) {
    check_indices(self, raw);
    return to_meta(out);
  }
  std::vector<Tensor> indices = expand_indices(self, raw);
  if (all_undefined(indices)) {
    out.copy_(values);
    return out;
  }
  IndexPlan plan = plan_index(out, indices, true);
  const Shape& want = plan.result_sizes;
  bool fits = values.dim() <= int64_t(want.size());
  for (int64_t i = 1; fits && i <= values.dim(); ++i) {
    int64_t v = values.sizes()[size_t(values.dim() - i)], w = want[want.size() - size_t(i)];
    fits = v == w || v == 1;
  }
  KILN_USER_CHECK(fits, "shape mismatch: value tensor of shape ", shape_str(values.sizes()),
                  " cannot be broadcast to indexing result of shape ", shape_str(want));
  if (shape_numel(plan.result_sizes) > 0) put_planned(plan, values, PutMode{accumulate, Scalar(int64_t{1}), false});
  return out;
}

// Index tensors selecting along one dim: 1-D (or 0-D), int64 or int32.
std::vector<Tensor> along_dim(int64_t dim, const Tensor& index) {
  std::vector<Tensor> v(static_cast<size_t>(dim));
  v.push_back(index.dim() == 0 ? index.reshape({1}) : index);
  return v;
}

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  KILN_USER_CHECK(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  KILN_USER_CHECK(index.dtype() == DType::Int64 || index.dtype() == DType::Int32,
                  "index_select(): Expected dtype int32 or int64 for index");
  int64_t d = wrap_dim(dim, self.dim());
  if (self.dim() == 0) {
    KILN_USER_CHECK(index.numel() == 1, "index_select(): Index to scalar can have only 1 value, got ",
                    index.numel(), " value(s)");
    Tensor r = index_select(self.reshape({1}), 0, index);
    return r.is_meta() ? Tensor::meta({}, self.dtype()) : r.reshape({});
  }
  return take_planned(plan_index(self, along_dim(d, index), false), self.dtype());
}

Tensor take(const Tensor& self, const Tensor& index) {
  check_index_dtype(index, "take", true);
  return take_planned(plan_index(self.reshape({-1}), {index.dim() == 0 ? index.reshape({1}) : index}, true),
                      self.dtype())
      .view(index.sizes());
}

Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  int64_t d = wrap_dim(dim, self.dim());
  KILN_USER_CHECK(index.dim() <= 1, "index_add_(): Index is supposed to be a vector");
  KILN_USER_CHECK(index.dtype() == DType::Int64 || index.dtype() == DType::Int32,
                  "index_add_(): Expected dtype int32/int64 for index");
  KILN_USER_CHECK(self.dtype() == source.dtype(), "index_add_(): self (", dtype_name(self.dtype()), ") and source (",
                  dtype_name(source.dtype()), ") must have the same scalar type");
  Tensor s = self.dim() == 0 ? self.reshape({1}) : self;
  Tensor src = source.dim() == 0 ? source.reshape({1}) : source;
  KILN_USER_CHECK(src.dim() == s.dim(), "index_add_(): Source/destination tensor must have same number of dimensions");
  KILN_USER_CHECK(src.sizes()[d] == index.numel(), "index_add_(): Number of indices (", index.numel(),
                  ") should be equal to source.size(dim) (", src.sizes()[d], ")");
  for (int64_t k = 0; k < s.dim(); ++k)
    KILN_USER_CHECK(k == d || s.sizes()[k] == src.sizes()[k], "index_add_(): self and source must have the same size at dimension ",
                    k, "; self has size ", s.sizes()[k], ", source has size ", src.sizes()[k]);
  Tensor out = clone_preserve(self);
  if (out.is_meta() || index.is_meta() || source.is_meta() || index.numel() == 0) return out;
  Tensor o = out.dim() == 0 ? out.reshape({1}) : out;
  // ATen routes alpha == 1 along the first or last dim of an N-D tensor
  // through scatter_add, which accumulates 16-bit floats in float32 and rounds
  // once; the other cases add slice by slice, rounding every step.
  bool via_scatter = self.dim() > 1 && (d == 0 || d == self.dim() - 1) && alpha.to_double() == 1.0 &&
                     index.dtype() == DType::Int64 && is_reduced_float(self.dtype());
  Tensor acc = via_scatter ? o.to(DType::Float32) : o;
  IndexPlan plan = plan_index(acc, along_dim(d, index), false);
  put_planned(plan, via_scatter ? src.to(DType::Float32) : src, PutMode{true, alpha, !via_scatter});
  if (via_scatter) o.copy_(acc);
  return out;
}

Tensor index_fill(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  int64_t d = wrap_dim(dim, self.dim());
  KILN_USER_CHECK(index.dim() <= 1, "index_fill_(): Index is supposed to be a vector");
  check_index_dtype(index, "index_fill_", false);
  check_scalar_fits(value, self.dtype());
  Tensor out = clone_preserve(self);
  if (out.is_meta() || index.is_meta() || index.numel() == 0) return out;
  Tensor o = out.dim() == 0 ? out.reshape({1}) : out;
  IndexPlan plan = plan_index(o, along_dim(d, index), true);
  put_planned(plan, Tensor::full({}, value, self.dtype()), PutMode{});
  return out;
}

// ---------------------------------------------------------------- gather / scatter

// Both tensors as at least 1-D views (0-dim tensors index like [1]).
Tensor at_least_1d(const Tensor& t) { return t.dim() == 0 ? t.reshape({1}) : t; }

// t viewed with index's sizes and stride 0 along `dim`: the element a gather or
// scatter at index position p starts from, before adding idx * stride(dim).
Tensor restride_for(const Tensor& t, const Tensor& index, int64_t dim) {
  Shape st = t.strides();
  st[dim] = 0;
  return t.as_strided(index.sizes(), st, t.storage_offset());
}

void check_gather_shapes(const char* op, const Tensor& self, const Tensor& index, const Tensor* src, int64_t d) {
  KILN_USER_CHECK(std::max<int64_t>(index.dim(), 1) == std::max<int64_t>(self.dim(), 1),
                  "Index tensor must have the same number of dimensions as ", src ? "self tensor" : "input tensor");
  if (src)
    KILN_USER_CHECK(std::max<int64_t>(index.dim(), 1) == std::max<int64_t>(src->dim(), 1),
                    "Index tensor must have the same number of dimensions as src tensor");
  Tensor s = at_least_1d(self), ix = at_least_1d(index);
  for (int64_t k = 0; k < ix.dim(); ++k) {
    bool ok = (k == d || ix.sizes()[k] <= s.sizes()[k]) && (!src || ix.sizes()[k] <= at_least_1d(*src).sizes()[k]);
    if (ok) continue;
    if (!src)
      KILN_FAIL("Size does not match at dimension ", k, " expected index ", shape_str(index.sizes()),
                " to be no larger than self ", shape_str(self.sizes()), " apart from dimension ", d);
    KILN_FAIL(op, "(): Expected index ", shape_str(index.sizes()), " to be no larger than self ",
              shape_str(self.sizes()), " apart from dimension ", d, " and to be no larger size than src ",
              shape_str(src->sizes()));
  }
}

Tensor gather(const Tensor& self, int64_t dim, const Tensor& index) {
  check_index_dtype(index, "gather", true);
  int64_t d = wrap_dim(dim, self.dim());
  check_gather_shapes("gather", self, index, nullptr, d);
  Tensor out = new_strided(index.sizes(), contiguous_strides(index.sizes()), self.dtype(),
                           self.is_meta() || index.is_meta());
  if (out.is_meta() || out.numel() == 0) return out;
  Tensor s = at_least_1d(self), ix = at_least_1d(index), o = at_least_1d(out);
  Tensor sv = restride_for(s, ix, d);
  int64_t size = s.sizes()[d], stride = s.strides()[d] * int64_t(s.itemsize());
  dispatch_bytes(s.itemsize(), [&]<class U>() {
    dispatch_index(ix.dtype(), [&]<class I>() {
      for_each_run<3>({&o, &ix, &sv}, [&](char** p, const int64_t* st, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          int64_t v = check_index(*reinterpret_cast<const I*>(p[1] + i * st[1]), size, d);
          *reinterpret_cast<U*>(p[0] + i * st[0]) = *reinterpret_cast<const U*>(p[2] + i * st[2] + v * stride);
        }
      });
    });
  });
  return out;
}

enum class Reduce { None, Sum, Prod, Mean, Max, Min };

Reduce parse_reduce(const std::string& s, bool two) {
  if (two) {
    if (s == "sum") return Reduce::Sum;
    if (s == "prod") return Reduce::Prod;
    if (s == "mean") return Reduce::Mean;
    if (s == "amax") return Reduce::Max;
    if (s == "amin") return Reduce::Min;
    KILN_FAIL("reduce argument must be either sum, prod, mean, amax or amin, got ", s);
  }
  if (s == "add") return Reduce::Sum;
  if (s == "multiply") return Reduce::Prod;
  KILN_FAIL("reduce argument must be either add or multiply, got ", s);
}

template <class T>
T combine(Reduce r, T dst, T v) {
  using A = acc_t<T>;
  A a = static_cast<A>(dst), b = static_cast<A>(v);
  switch (r) {
    case Reduce::Sum:
    case Reduce::Mean: return static_cast<T>(a + b);
    case Reduce::Prod: return static_cast<T>(a * b);
    case Reduce::Max:
      if constexpr (is_floating_v<T>)
        if (std::isnan(b) || std::isnan(a)) return std::isnan(b) ? v : dst;
      return a < b ? v : dst;
    case Reduce::Min:
      if constexpr (is_floating_v<T>)
        if (std::isnan(b) || std::isnan(a)) return std::isnan(b) ? v : dst;
      return b < a ? v : dst;
    case Reduce::None: break;
  }
  return v;
}

template <class T>
T reduce_identity(Reduce r) {
  switch (r) {
    case Reduce::Prod: return static_cast<T>(1);
    case Reduce::Max:
      if constexpr (is_floating_v<T>) return static_cast<T>(-std::numeric_limits<float>::infinity());
      else return std::numeric_limits<T>::lowest();
    case Reduce::Min:
      if constexpr (is_floating_v<T>) return static_cast<T>(std::numeric_limits<float>::infinity());
      else return std::numeric_limits<T>::max();
    default: return static_cast<T>(0);
  }
}

// Scatters src (or `value` when src is null) into out at index along d,
// combining with `r`. Serial, in index order: duplicate indices resolve as
// PyTorch's CPU loop does (last write wins / accumulation in order).
void scatter_into(const Tensor& out, int64_t d, const Tensor& index, const Tensor* src, const Scalar& value, Reduce r) {
  Tensor o = at_least_1d(out), ix = at_least_1d(index);
  Tensor ov = restride_for(o, ix, d);
  Tensor sv = src ? at_least_1d(*src).as_strided(ix.sizes(), at_least_1d(*src).strides(), src->storage_offset())
                  : Tensor::full({}, value, out.dtype()).expand(ix.sizes());
  int64_t size = o.sizes()[d], stride = o.strides()[d] * int64_t(o.itemsize());
  dispatch_all(out.dtype(), [&]<class T>() {
    dispatch_index(ix.dtype(), [&]<class I>() {
      for_each_run<3>({&ix, &ov, &sv}, [&](char** p, const int64_t* st, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          int64_t v = check_index(*reinterpret_cast<const I*>(p[0] + i * st[0]), size, d);
          T* dst = reinterpret_cast<T*>(p[1] + i * st[1] + v * stride);
          T x = *reinterpret_cast<const T*>(p[2] + i * st[2]);
          *dst = r == Reduce::None ? x : combine(r, *dst, x);
        }
      }, /*parallel=*/false);
    });
  });
}

// scatter_reduce's mean: the (already rounded) sums divided by how many values
// each position received, counting self when included; floor division for integers.
Tensor scatter_mean_divide(const Tensor& out, int64_t d, const Tensor& index, bool include_self) {
  Tensor count = Tensor::full(out.sizes(), Scalar(int64_t{include_self ? 1 : 0}), DType::Int64);
  scatter_into(count, d, index, nullptr, Scalar(int64_t{1}), Reduce::Sum);
  Tensor c = count.contiguous();
  dispatch_all(out.dtype(), [&]<class T>() {
    using A = acc_t<T>;
    const int64_t* cp = c.data<int64_t>();
    Tensor oc = out.is_contiguous() ? out : out.contiguous();
    T* op = oc.data<T>();
    for (int64_t i = 0; i < oc.numel(); ++i) {
      A n = static_cast<A>(std::max<int64_t>(cp[i], 1));
      if constexpr (is_floating_v<T>) {
        op[i] = static_cast<T>(static_cast<A>(op[i]) / n);
      } else if constexpr (!std::is_same_v<T, bool>) {
        A q = static_cast<A>(op[i]) / n;
        if ((static_cast<A>(op[i]) % n != 0) && ((static_cast<A>(op[i]) < 0) != (n < 0))) --q;
        op[i] = static_cast<T>(q);
      }
    }
    if (!out.is_contiguous()) out.copy_(oc);
  });
  return out;
}

Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src, const Scalar& value,
               Reduce r, bool include_self = true) {
  check_index_dtype(index, "scatter", true);
  int64_t d = wrap_dim(dim, self.dim());
  if (src)
    KILN_USER_CHECK(src->dtype() == self.dtype(), "scatter(): Expected self.dtype to be equal to src.dtype");
  else
    check_scalar_fits(value, self.dtype());
  check_gather_shapes("scatter", self, index, src, d);
  Tensor out = clone_preserve(self);
  if (out.is_meta() || index.is_meta() || (src && src->is_meta()) || index.numel() == 0) return out;
  // Sums and products of 16-bit floats from a src tensor accumulate in float32
  // and round once (ATen's opmath path); value variants round every step.
  if (src && is_reduced_float(self.dtype()) && (r == Reduce::Sum || r == Reduce::Prod || r == Reduce::Mean)) {
    Tensor src32 = src->to(DType::Float32);
    out.copy_(scatter(out.to(DType::Float32), dim, index, &src32, value, r == Reduce::Mean ? Reduce::Sum : r,
                      include_self));
    return r == Reduce::Mean ? scatter_mean_divide(out, d, index, include_self) : out;
  }
  if (!include_self) {
    Scalar identity = dispatch_all(self.dtype(), [&]<class T>() {
      return Tensor::from_vector<T>({reduce_identity<T>(r)}, {}).item();
    });
    scatter_into(out, d, index, nullptr, identity, Reduce::None);
  }
  scatter_into(out, d, index, src, value, r);
  if (r != Reduce::Mean) return out;
  return scatter_mean_divide(out, d, index, include_self);
}

std::vector<Tensor> index_list(const OpArgs& a, size_t i) { return a[i].to_optional_tensor_list(); }

void add(OpRegistry& r, std::string_view schema, std::function<Tensor(const OpArgs&)> fn) {
  add_meta_aware_op(r, schema, [fn](const OpArgs& a) { return one(fn(a)); });
}

// nonzero and masked_select: their meta entry reports the data dependence.
void add_data_dependent(OpRegistry& r, std::string_view schema, std::function<Tensor(const OpArgs&)> fn) {
  r.add(schema, [fn](const OpArgs& a) { return one(fn(OpArgs(a.schema(), meta_values(a)))); },
        [fn](const OpArgs& a) { return one(fn(a)); });
}

}  // namespace

void register_indexing_ops(OpRegistry& r) {
  add(r, "aten::index_select(Tensor self, int dim, Tensor index) -> Tensor",
      [](const OpArgs& a) { return index_select(a.tensor(0), a.integer(1), a.tensor(2)); });
  add(r, "aten::gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor",
      [](const OpArgs& a) { return gather(a.tensor(0), a.integer(1), a.tensor(2)); });
  add(r, "aten::scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor", [](const OpArgs& a) {
    return scatter(a.tensor(0), a.integer(1), a.tensor(2), &a.tensor(3), Scalar(), Reduce::None);
  });
  add(r, "aten::scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor", [](const OpArgs& a) {
    return scatter(a.tensor(0), a.integer(1), a.tensor(2), nullptr, a.scalar(3), Reduce::None);
  });
  add(r, "aten::scatter.reduce(Tensor self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor",
      [](const OpArgs& a) {
        return scatter(a.tensor(0), a.integer(1), a.tensor(2), &a.tensor(3), Scalar(), parse_reduce(a.str(4), false));
      });
  add(r, "aten::scatter.value_reduce(Tensor self, int dim, Tensor index, Scalar value, *, str reduce) -> Tensor",
      [](const OpArgs& a) {
        return scatter(a.tensor(0), a.integer(1), a.tensor(2), nullptr, a.scalar(3), parse_reduce(a.str(4), false));
      });
  add(r, "aten::scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor", [](const OpArgs& a) {
    return scatter(a.tensor(0), a.integer(1), a.tensor(2), &a.tensor(3), Scalar(), Reduce::Sum);
  });
  add(r, "aten::scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) -> Tensor",
      [](const OpArgs& a) {
        return scatter(a.tensor(0), a.integer(1), a.tensor(2), &a.tensor(3), Scalar(), parse_reduce(a.str(4), true),
                       a.boolean(5));
      });
  for (const char* s : {"aten::index.Tensor(Tensor self, Tensor?[] indices) -> Tensor",
                        "aten::_unsafe_index.Tensor(Tensor self, Tensor?[] indices) -> Tensor"})
    add(r, s, [](const OpArgs& a) { return index(a.tensor(0), index_list(a, 1)); });
  for (const char* s : {"aten::index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor",
                        "aten::_unsafe_index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor",
                        "aten::_index_put_impl(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False, bool unsafe=False) -> Tensor"})
    add(r, s, [](const OpArgs& a) { return index_put(a.tensor(0), index_list(a, 1), a.tensor(2), a.boolean(3)); });
  add(r, "aten::index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor",
      [](const OpArgs& a) { return index_add(a.tensor(0), a.integer(1), a.tensor(2), a.tensor(3), a.scalar(4)); });
  add(r, "aten::index_fill.int_Scalar(Tensor self, int dim, Tensor index, Scalar value) -> Tensor",
      [](const OpArgs& a) { return index_fill(a.tensor(0), a.integer(1), a.tensor(2), a.scalar(3)); });
  add(r, "aten::index_fill.int_Tensor(Tensor self, int dim, Tensor index, Tensor value) -> Tensor",
      [](const OpArgs& a) {
        const Tensor& v = a.tensor(3);
        KILN_USER_CHECK(v.dim() == 0, "index_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
                        v.dim(), " dimension(s).");
        if (v.is_meta()) return to_meta(index_fill(to_meta(a.tensor(0)), a.integer(1), a.tensor(2), Scalar()));
        return index_fill(a.tensor(0), a.integer(1), a.tensor(2), v.item());
      });
  add(r, "aten::take(Tensor self, Tensor index) -> Tensor", [](const OpArgs& a) { return take(a.tensor(0), a.tensor(1)); });
  add_data_dependent(r, "aten::nonzero(Tensor self) -> Tensor", [](const OpArgs& a) { return nonzero(a.tensor(0)); });
  add_data_dependent(r, "aten::argwhere(Tensor self) -> Tensor", [](const OpArgs& a) { return nonzero(a.tensor(0)); });
  add_data_dependent(r, "aten::masked_select(Tensor self, Tensor mask) -> Tensor",
                     [](const OpArgs& a) { return masked_select(a.tensor(0), a.tensor(1)); });
}

}  // namespace kiln
