// Sorting and selection: sort, argsort, msort, topk, kthvalue, median,
// _unique2, unique_consecutive.
//
// Ties are part of the observable result (the indices), so each op runs the
// same algorithm PyTorch's CPU kernel runs on the same (key, index) sequence:
// std::sort / std::stable_sort / std::partial_sort / std::nth_element with
// PyTorch's comparators (NaN sorts as the largest value), and for kthvalue the
// Sedgewick quickselect ATen carries. The standard algorithms are
// deterministic for a given input, so the tie order matches PyTorch's.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "core/ops/kernel_util.h"
#include "core/ops/layout_util.h"
#include "core/tensor/parallel.h"

namespace kiln {
namespace {

// The rows of several same-outer-shape tensors along `dim`: for row r, the
// element offset where it starts in each tensor, plus each tensor's stride
// along dim. 0-dim tensors count as [1].
class Rows {
 public:
  Rows(std::initializer_list<const Tensor*> ts, int64_t dim) {
    const Tensor& first = **ts.begin();
    for (int64_t d = 0; d < first.dim(); ++d)
      if (d != dim) outer_.push_back(first.sizes()[d]);
    count_ = shape_numel(outer_);
    for (const Tensor* t : ts) {
      Shape st;
      for (int64_t d = 0; d < t->dim(); ++d)
        if (d != dim) st.push_back(t->strides()[d]);
      strides_.push_back(std::move(st));
      dim_stride_.push_back(t->dim() == 0 ? 1 : t->strides()[dim]);
    }
  }
  int64_t count() const { return count_; }
  int64_t dim_stride(size_t t) const { return dim_stride_[t]; }
  int64_t offset(int64_t r, size_t t) const {
    int64_t off = 0;
    for (size_t d = outer_.size(); d-- > 0;) {
      off += (r % outer_[d]) * strides_[t][d];
      r /= outer_[d];
    }
    return off;
  }

 private:
  Shape outer_;
  std::vector<Shape> strides_;
  std::vector<int64_t> dim_stride_;
  int64_t count_ = 1;
};

// Runs fn(row) over all rows in parallel; rows of n elements each.
template <class Fn>
void for_rows(int64_t rows, int64_t n, Fn fn) {
  parallel_for(0, rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) fn(r);
  });
}

// The key type the comparisons run in (acc type; exact for every dtype).
template <class T>
using key_t = std::conditional_t<std::is_same_v<T, bool>, int64_t, acc_t<T>>;

template <class K>
bool is_nan(K v) {
  if constexpr (std::is_floating_point_v<K>) return std::isnan(v);
  else return false;
}

template <class K>
struct LessNanLast {
  bool operator()(const std::pair<K, int64_t>& a, const std::pair<K, int64_t>& b) const {
    return (!is_nan(a.first) && is_nan(b.first)) || a.first < b.first;
  }
};
template <class K>
struct GreaterNanFirst {
  bool operator()(const std::pair<K, int64_t>& a, const std::pair<K, int64_t>& b) const {
    return (is_nan(a.first) && !is_nan(b.first)) || a.first > b.first;
  }
};

template <class T>
std::vector<std::pair<key_t<T>, int64_t>> load_row(const T* p, int64_t stride, int64_t n) {
  std::vector<std::pair<key_t<T>, int64_t>> q(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) q[size_t(j)] = {static_cast<key_t<T>>(p[j * stride]), j};
  return q;
}

Tensor as_1d(const Tensor& t) { return t.dim() == 0 ? t.reshape({1}) : t; }

// ---------------------------------------------------------------- sort

// Writes the first `count` entries of a ranked row (pairs of key and input
// index) as values and indices, for sort and topk alike.
template <class T, class Ranked>
void write_ranked(const Ranked& q, int64_t count, const T* row, T* vo, int64_t* xo, const Rows& rows) {
  for (int64_t j = 0; j < count; ++j) {
    vo[j * rows.dim_stride(1)] = row[q[size_t(j)].second * rows.dim_stride(0)];
    xo[j * rows.dim_stride(2)] = q[size_t(j)].second;
  }
}

void sort_kernel(const Tensor& self, const Tensor& values, const Tensor& indices, int64_t dim, bool descending,
                 bool stable) {
  Tensor in = as_1d(self), v = as_1d(values), ix = as_1d(indices);
  int64_t d = wrap_dim(dim, in.dim()), n = in.sizes()[d];
  if (in.numel() == 0) return;
  // ATen's fast paths: a stride-0 dim is left in input order, and 1-D
  // ascending integer sorts of at least 32768 elements go through a stable
  // radix sort.
  bool keep_order = in.strides()[d] == 0;
  if (in.dim() == 1 && !descending && is_integral(in.dtype(), false) && n >= 32768) stable = true;
  Rows rows({&in, &v, &ix}, d);
  dispatch_all(in.dtype(), [&]<class T>() {
    using K = key_t<T>;
    const T* ip = static_cast<const T*>(in.raw_data());
    T* vp = static_cast<T*>(v.raw_data());
    int64_t* xp = static_cast<int64_t*>(ix.raw_data());
    for_rows(rows.count(), n, [&](int64_t r) {
      const T* row = ip + rows.offset(r, 0);
      auto q = load_row(row, rows.dim_stride(0), n);
      if (!keep_order) {
        if (descending) {
          if (stable) std::stable_sort(q.begin(), q.end(), GreaterNanFirst<K>());
          else std::sort(q.begin(), q.end(), GreaterNanFirst<K>());
        } else {
          if (stable) std::stable_sort(q.begin(), q.end(), LessNanLast<K>());
          else std::sort(q.begin(), q.end(), LessNanLast<K>());
        }
      }
      write_ranked(q, n, row, vp + rows.offset(r, 1), xp + rows.offset(r, 2), rows);
    });
  });
}

ValueList sort_meta(const Tensor& self, int64_t dim) {
  wrap_dim(dim, self.dim());
  Shape st = preserve_strides(self);
  return {Value(Tensor::meta_strided(self.sizes(), st, self.dtype())),
          Value(Tensor::meta_strided(self.sizes(), st, DType::Int64))};
}

// ---------------------------------------------------------------- topk

void topk_kernel(const Tensor& self, const Tensor& values, const Tensor& indices, int64_t k, int64_t dim,
                 bool largest, bool sorted) {
  Tensor in = as_1d(self), v = as_1d(values), ix = as_1d(indices);
  int64_t d = wrap_dim(dim, in.dim()), n = in.sizes()[d];
  if (k == 0 || v.numel() == 0) return;
  Rows rows({&in, &v, &ix}, d);
  dispatch_all(in.dtype(), [&]<class T>() {
    using K = key_t<T>;
    const T* ip = static_cast<const T*>(in.raw_data());
    T* vp = static_cast<T*>(v.raw_data());
    int64_t* xp = static_cast<int64_t*>(ix.raw_data());
    for_rows(rows.count(), n, [&](int64_t r) {
      const T* row = ip + rows.offset(r, 0);
      auto q = load_row(row, rows.dim_stride(0), n);
      auto run = [&](auto comp) {
        if (k * 64 <= n) {
          std::partial_sort(q.begin(), q.begin() + k, q.end(), comp);
        } else {
          std::nth_element(q.begin(), q.begin() + k - 1, q.end(), comp);
          if (sorted) std::sort(q.begin(), q.begin() + k - 1, comp);
        }
      };
      if (largest) run(GreaterNanFirst<K>());
      else run(LessNanLast<K>());
      write_ranked(q, k, row, vp + rows.offset(r, 1), xp + rows.offset(r, 2), rows);
    });
  });
}

ValueList topk_meta(const Tensor& self, int64_t k, int64_t dim) {
  int64_t d = wrap_dim(dim, self.dim());
  int64_t n = self.dim() > 0 ? self.sizes()[d] : 1;
  KILN_USER_CHECK(k >= 0 && k <= n, "selected index k out of range");
  Shape s = self.sizes();
  if (!s.empty()) s[d] = k;
  return {Value(Tensor::meta(s, self.dtype())), Value(Tensor::meta(s, DType::Int64))};
}

// ---------------------------------------------------------------- kthvalue, median

// Sizes of a reduction over `dim` (removed, or kept as 1).
Shape reduced_sizes(const Tensor& self, int64_t d, bool keepdim) {
  Shape s = self.sizes();
  if (s.empty()) return s;
  if (keepdim) s[d] = 1;
  else s.erase(s.begin() + d);
  return s;
}

ValueList reduced_pair_meta(const Tensor& self, int64_t dim, bool keepdim) {
  int64_t d = wrap_dim(dim, self.dim());
  Shape s = reduced_sizes(self, d, keepdim);
  return {Value(Tensor::meta(s, self.dtype())), Value(Tensor::meta(s, DType::Int64))};
}

// ATen's quickselect (Sedgewick's partitioning, median-of-three pivot); NaN is largest.
template <class K>
void quick_select(std::vector<K>& a, std::vector<int64_t>& idx, int64_t k) {
  auto gt = [](K x, K y) { return (is_nan(x) && !is_nan(y)) || x > y; };
  auto swap = [&](int64_t i, int64_t j) {
    std::swap(a[size_t(i)], a[size_t(j)]);
    std::swap(idx[size_t(i)], idx[size_t(j)]);
  };
  int64_t L = 0, R = int64_t(a.size()) - 1;
  while (true) {
    if (R <= L) return;
    if (R == L + 1) {
      if (gt(a[size_t(L)], a[size_t(R)])) swap(L, R);
      return;
    }
    int64_t P = (L + R) >> 1;
    swap(P, L + 1);
    if (gt(a[size_t(L + 1)], a[size_t(R)])) swap(L + 1, R);
    if (gt(a[size_t(L)], a[size_t(R)])) swap(L, R);
    if (gt(a[size_t(L + 1)], a[size_t(L)])) swap(L + 1, L);
    int64_t i = L + 1, j = R;
    K piv = a[size_t(L)];
    while (true) {
      do ++i;
      while (gt(piv, a[size_t(i)]));
      do --j;
      while (gt(a[size_t(j)], piv));
      if (j < i) break;
      swap(i, j);
    }
    swap(L, j);
    if (j <= k) L = i;
    if (j >= k) R = j - 1;
  }
}

// Runs select(row values as K, row indices) -> position for each row along
// dim and writes the selected value and index into keepdim-shaped outputs.
template <class Select>
void select_rows(const Tensor& self, const Tensor& values, const Tensor& indices, int64_t dim, bool keepdim,
                 Select select) {
  Tensor in = as_1d(self);
  int64_t d = wrap_dim(dim, in.dim()), n = in.sizes()[d];
  Tensor v = values, ix = indices;
  if (self.dim() == 0) {
    v = v.reshape({1});
    ix = ix.reshape({1});
  } else if (!keepdim) {
    v = v.unsqueeze(d);
    ix = ix.unsqueeze(d);
  }
  Rows rows({&in, &v, &ix}, d);
  dispatch_all(in.dtype(), [&]<class T>() {
    using K = key_t<T>;
    const T* ip = static_cast<const T*>(in.raw_data());
    T* vp = static_cast<T*>(v.raw_data());
    int64_t* xp = static_cast<int64_t*>(ix.raw_data());
    for_rows(rows.count(), n, [&](int64_t r) {
      const T* row = ip + rows.offset(r, 0);
      std::vector<K> keys(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j) keys[size_t(j)] = static_cast<K>(row[j * rows.dim_stride(0)]);
      int64_t at = select(keys);
      vp[rows.offset(r, 1)] = row[at * rows.dim_stride(0)];
      xp[rows.offset(r, 2)] = at;
    });
  });
}

void kthvalue_kernel(const Tensor& self, const Tensor& values, const Tensor& indices, int64_t k, int64_t dim,
                     bool keepdim) {
  select_rows(self, values, indices, dim, keepdim, [k](auto& keys) {
    std::vector<int64_t> idx(keys.size());
    std::iota(idx.begin(), idx.end(), 0);
    quick_select(keys, idx, k - 1);
    return idx[size_t(k - 1)];
  });
}

void check_kthvalue(const Tensor& self, int64_t k, int64_t dim) {
  int64_t d = wrap_dim(dim, self.dim());
  KILN_USER_CHECK(self.dtype() != DType::Bool, "kthvalue: not implemented for bool tensors");
  KILN_USER_CHECK(self.numel() > 0, "cannot perform reduction function kthvalue on tensor with no elements "
                                    "because the operation does not have an identity");
  int64_t n = self.dim() > 0 ? self.sizes()[d] : 1;
  KILN_USER_CHECK(k > 0 && k <= n, "kthvalue(): selected number k out of range for dimension ", d);
}

// The lower median along dim; the first NaN when the row has one.
void median_kernel(const Tensor& self, const Tensor& values, const Tensor& indices, int64_t dim, bool keepdim) {
  select_rows(self, values, indices, dim, keepdim, [](auto& keys) -> int64_t {
    for (size_t j = 0; j < keys.size(); ++j)
      if (is_nan(keys[j])) return int64_t(j);
    std::vector<int64_t> idx(keys.size());
    std::iota(idx.begin(), idx.end(), 0);
    auto nth = idx.begin() + int64_t(keys.size() - 1) / 2;
    std::nth_element(idx.begin(), nth, idx.end(), [&](int64_t i, int64_t j) {
      return keys[size_t(i)] < keys[size_t(j)] || (keys[size_t(i)] == keys[size_t(j)] && i < j);
    });
    return *nth;
  });
}

Tensor median_all(const Tensor& self) {
  KILN_USER_CHECK(self.dtype() != DType::Bool, "median: not implemented for bool tensors");
  Tensor out = Tensor::empty({}, self.dtype());
  if (self.numel() == 0) {
    KILN_USER_CHECK(is_floating(self.dtype()), "median() input tensor cannot be empty");
    out.fill_(Scalar(std::nan("")));
    return out;
  }
  Tensor flat = self.reshape({-1});
  Tensor idx = Tensor::empty({}, DType::Int64);
  median_kernel(flat, out, idx, 0, false);
  return out;
}

// ---------------------------------------------------------------- unique

struct UniqueResult {
  Tensor values, inverse, counts;
};

// Groups of equal adjacent keys (NaN never equals NaN) in `order` of the
// flattened input.
template <class T>
UniqueResult unique_groups(const Tensor& flat, const std::vector<int64_t>& order, bool return_inverse,
                           bool return_counts, const Shape& inverse_shape) {
  using K = key_t<T>;
  const T* p = flat.data<T>();
  std::vector<int64_t> starts;
  for (size_t i = 0; i < order.size(); ++i)
    if (i == 0 || !(static_cast<K>(p[order[i]]) == static_cast<K>(p[order[i - 1]]))) starts.push_back(int64_t(i));
  int64_t groups = int64_t(starts.size());
  UniqueResult r;
  r.values = Tensor::empty({groups}, flat.dtype());
  T* vp = r.values.data<T>();
  for (int64_t g = 0; g < groups; ++g) vp[g] = p[order[size_t(starts[size_t(g)])]];
  r.inverse = Tensor::empty(return_inverse ? inverse_shape : Shape{0}, DType::Int64);
  r.counts = Tensor::empty({return_counts ? groups : 0}, DType::Int64);
  int64_t* ip = r.inverse.data<int64_t>();
  int64_t* cp = r.counts.data<int64_t>();
  for (int64_t g = 0; g < groups; ++g) {
    int64_t end = g + 1 < groups ? starts[size_t(g + 1)] : int64_t(order.size());
    if (return_counts) cp[g] = end - starts[size_t(g)];
    if (return_inverse)
      for (int64_t i = starts[size_t(g)]; i < end; ++i) ip[order[size_t(i)]] = g;
  }
  return r;
}

UniqueResult unique(const Tensor& self, bool consecutive, bool return_inverse, bool return_counts) {
  KILN_USER_CHECK(!self.is_meta(), "the output shape depends on the data (the number of distinct values), "
                                   "so it cannot be computed from meta tensors");
  Tensor flat = self.reshape({-1}).contiguous();
  return dispatch_all(flat.dtype(), [&]<class T>() {
    using K = key_t<T>;
    std::vector<int64_t> order(size_t(flat.numel()));
    std::iota(order.begin(), order.end(), 0);
    if (!consecutive) {
      const T* p = flat.data<T>();
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        K x = static_cast<K>(p[a]), y = static_cast<K>(p[b]);
        return (!is_nan(x) && is_nan(y)) || x < y;
      });
    }
    return unique_groups<T>(flat, order, return_inverse, return_counts, self.sizes());
  });
}

ValueList unique_values(const UniqueResult& r) { return {Value(r.values), Value(r.inverse), Value(r.counts)}; }

void add_unique(OpRegistry& r, std::string_view schema, std::function<ValueList(const OpArgs&)> fn) {
  r.add(schema, [fn](const OpArgs& a) { return fn(OpArgs(a.schema(), meta_values(a))); }, fn);
}

}  // namespace

void register_sort_ops(OpRegistry& r) {
  add_op_with_outputs(
      r, "aten::sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)",
      [](const OpArgs& a) { return sort_meta(a.tensor(0), a.integer(1)); },
      [](const OpArgs& a, const std::vector<Tensor>& o) {
        sort_kernel(a.tensor(0), o[0], o[1], a.integer(1), a.boolean(2), false);
      });
  add_op_with_outputs(
      r, "aten::sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)",
      [](const OpArgs& a) { return sort_meta(a.tensor(0), a.integer(2)); },
      [](const OpArgs& a, const std::vector<Tensor>& o) {
        bool stable = !a[1].is_none() && a.boolean(1);
        sort_kernel(a.tensor(0), o[0], o[1], a.integer(2), a.boolean(3), stable);
      });
  // argsort and msort: the sort above, keeping one of its outputs.
  auto first_of = [](ValueList v, size_t i) { return ValueList{v[i]}; };
  add_op_with_outputs(
      r, "aten::argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor",
      [first_of](const OpArgs& a) { return first_of(sort_meta(a.tensor(0), a.integer(1)), 1); },
      [](const OpArgs& a, const std::vector<Tensor>& o) {
        const Tensor& t = a.tensor(0);
        Tensor values = Tensor::empty_strided(t.sizes(), o[0].strides(), t.dtype());
        sort_kernel(t, values, o[0], a.integer(1), a.boolean(2), false);
      });
  add_op_with_outputs(
      r, "aten::argsort.stable(Tensor self, *, bool stable, int dim=-1, bool descending=False) -> Tensor",
      [first_of](const OpArgs& a) { return first_of(sort_meta(a.tensor(0), a.integer(2)), 1); },
      [](const OpArgs& a, const std::vector<Tensor>& o) {
        const Tensor& t = a.tensor(0);
        Tensor values = Tensor::empty_strided(t.sizes(), o[0].strides(), t.dtype());
        sort_kernel(t, values, o[0], a.integer(2), a.boolean(3), a.boolean(1));
      });
  add_op_with_outputs(
      r, "aten::msort(Tensor self) -> Tensor",
      [first_of](const OpArgs& a) { return first_of(sort_meta(a.tensor(0), 0), 0); },
      [](const OpArgs& a, const std::vector<Tensor>& o) {
        const Tensor& t = a.tensor(0);
        Tensor idx = Tensor::empty_strided(t.sizes(), o[0].strides(), DType::Int64);
        sort_kernel(t, o[0], idx, 0, false, false);
      });
  add_op_with_outputs(
      r, "aten::topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)",
      [](const OpArgs& a) { return topk_meta(a.tensor(0), a.integer(1), a.integer(2)); },
      [](const OpArgs& a, const std::vector<Tensor>& o) {
        topk_kernel(a.tensor(0), o[0], o[1], a.integer(1), a.integer(2), a.boolean(3), a.boolean(4));
      });
  add_op_with_outputs(
      r, "aten::kthvalue(Tensor self, SymInt k, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)",
      [](const OpArgs& a) {
        check_kthvalue(a.tensor(0), a.integer(1), a.integer(2));
        return reduced_pair_meta(a.tensor(0), a.integer(2), a.boolean(3));
      },
      [](const OpArgs& a, const std::vector<Tensor>& o) {
        kthvalue_kernel(a.tensor(0), o[0], o[1], a.integer(1), a.integer(2), a.boolean(3));
      });
  add_op_with_outputs(
      r, "aten::median.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
      [](const OpArgs& a) {
        const Tensor& t = a.tensor(0);
        int64_t d = wrap_dim(a.integer(1), t.dim());
        KILN_USER_CHECK(t.dtype() != DType::Bool, "median: not implemented for bool tensors");
        KILN_USER_CHECK(t.dim() == 0 || t.sizes()[d] > 0,
                        "median() cannot compute median for a dimension of size 0 because the operation does not have an identity");
        return reduced_pair_meta(t, a.integer(1), a.boolean(2));
      },
      [](const OpArgs& a, const std::vector<Tensor>& o) {
        if (o[0].numel() > 0) median_kernel(a.tensor(0), o[0], o[1], a.integer(1), a.boolean(2));
      });
  add_meta_aware_op(r, "aten::median(Tensor self) -> Tensor", [](const OpArgs& a) {
    const Tensor& t = a.tensor(0);
    return one(t.is_meta() ? Tensor::meta({}, t.dtype()) : median_all(t));
  });
  add_unique(r, "aten::_unique2(Tensor self, bool sorted=True, bool return_inverse=False, bool return_counts=False) -> (Tensor, Tensor, Tensor)",
             [](const OpArgs& a) { return unique_values(unique(a.tensor(0), false, a.boolean(2), a.boolean(3))); });
  add_unique(r, "aten::unique_consecutive(Tensor self, bool return_inverse=False, bool return_counts=False, int? dim=None) -> (Tensor, Tensor, Tensor)",
             [](const OpArgs& a) {
               KILN_USER_CHECK(a[3].is_none() || a.tensor(0).dim() <= 1,
                               "unique_consecutive: only dim=None (or 1-D input) is supported");
               return unique_values(unique(a.tensor(0), true, a.boolean(1), a.boolean(2)));
             });
}

}  // namespace kiln
