#include "core/tensor/tensor.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>

#include "core/tensor/loops.h"
#include "core/util/limits.h"

namespace kiln {

namespace {
// Eager graphs allocate and free the same large buffers op after op. Fresh
// large allocations come from mmap and pay a page fault per 4 KiB on first
// touch, which halves the bandwidth of a streaming kernel. Freed blocks of
// 1 MiB and more are kept (up to kMaxCachedBytes) and handed out again for an
// equal rounded size.
class LargeBlockCache {
 public:
  static constexpr size_t kMinBlock = size_t(1) << 20;
  static constexpr size_t kGranule = size_t(2) << 20;
  static constexpr size_t kMaxCachedBytes = size_t(1) << 30;

  static size_t round(size_t nbytes) {
    if (nbytes < kMinBlock) return (std::max<size_t>(nbytes, 1) + 63) / 64 * 64;
    return (nbytes + kGranule - 1) / kGranule * kGranule;
  }
  void* take(size_t rounded) {
    if (rounded < kMinBlock) return nullptr;
    std::lock_guard lock(mutex_);
    auto it = blocks_.find(rounded);
    if (it == blocks_.end()) return nullptr;
    void* p = it->second;
    blocks_.erase(it);
    cached_ -= rounded;
    return p;
  }
  bool give(void* p, size_t rounded) {
    if (rounded < kMinBlock) return false;
    std::lock_guard lock(mutex_);
    if (cached_ + rounded > kMaxCachedBytes) return false;
    blocks_.emplace(rounded, p);
    cached_ += rounded;
    return true;
  }
  void release() {
    std::lock_guard lock(mutex_);
    for (auto& [_, p] : blocks_) std::free(p);
    blocks_.clear();
    cached_ = 0;
  }

 private:
  std::mutex mutex_;
  std::multimap<size_t, void*> blocks_;
  size_t cached_ = 0;
};

LargeBlockCache& block_cache() {
  static LargeBlockCache* cache = new LargeBlockCache;  // outlives static tensors
  return *cache;
}
}  // namespace

void release_cached_memory() { block_cache().release(); }

Storage::Storage(size_t nbytes) : nbytes_(nbytes) {
  size_t rounded = LargeBlockCache::round(nbytes);
  charge_tensor_bytes(int64_t(rounded));  // the memory budget, before the allocation
  data_ = block_cache().take(rounded);
  if (!data_) data_ = std::aligned_alloc(64, rounded);  // 64: aligned vectors, no shared lines
  if (!data_) {
    release_tensor_bytes(int64_t(rounded));
    throw std::bad_alloc();
  }
}
Storage::~Storage() {
  const size_t rounded = LargeBlockCache::round(nbytes_);
  release_tensor_bytes(int64_t(rounded));
  if (!block_cache().give(data_, rounded)) std::free(data_);
}

Shape contiguous_strides(std::span<const int64_t> sizes) {
  Shape strides(sizes.size());
  int64_t s = 1;
  for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
    strides[d] = s;
    if (d > 0 && __builtin_mul_overflow(s, std::max<int64_t>(sizes[d], 1), &s))
      KILN_FAIL("Storage size calculation overflowed with sizes=", shape_str(sizes));
  }
  return strides;
}

int64_t shape_numel(std::span<const int64_t> sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

int64_t wrap_dim(int64_t dim, int64_t ndim) {
  int64_t n = std::max<int64_t>(ndim, 1);  // a 0-dim tensor accepts dim 0 and -1
  KILN_USER_CHECK(dim >= -n && dim < n, "Dimension out of range (expected to be in range of [",
                  -n, ", ", n - 1, "], but got ", dim, ")");
  return dim < 0 ? dim + n : dim;
}

Shape broadcast_shapes(std::span<const int64_t> a, std::span<const int64_t> b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    KILN_USER_CHECK(da == db || da == 1 || db == 1, "shapes ", shape_str(a), " and ", shape_str(b),
                    " cannot be broadcast together (size ", da, " vs ", db, " at dim ", i, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::string shape_str(std::span<const int64_t> sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(sizes[i]);
  }
  return s + "]";
}

// ---------------------------------------------------------------- factories

namespace {

// Bytes a layout spans, 1 + sum((size-1) * stride) elements; sizes whose
// count does not fit 64 bits are an error, as in PyTorch, not a wrapped size.
size_t storage_bytes(const Shape& sizes, const Shape& strides, DType dtype) {
  KILN_CHECK(sizes.size() == strides.size());
  int64_t extent = 1, numel = 1, span = 0;
  bool overflow = false;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return 0;
    overflow |= __builtin_mul_overflow(numel, sizes[d], &numel);
    overflow |= __builtin_mul_overflow(sizes[d] - 1, strides[d], &span) || __builtin_add_overflow(extent, span, &extent);
  }
  overflow |= __builtin_mul_overflow(extent, int64_t(element_size(dtype)), &extent);
  KILN_USER_CHECK(!overflow, "Storage size calculation overflowed with sizes=", shape_str(sizes));
  return size_t(extent);
}

}  // namespace

Tensor Tensor::empty_strided(Shape sizes, Shape strides, DType dtype) {
  for (int64_t s : sizes) KILN_USER_CHECK(s >= 0, "negative size in ", shape_str(sizes));
  size_t nbytes = storage_bytes(sizes, strides, dtype);
  Tensor t;
  t.storage_ = std::make_shared<Storage>(nbytes);
  t.sizes_ = std::move(sizes);
  t.strides_ = std::move(strides);
  t.dtype_ = dtype;
  t.dtype_set_ = true;
  return t;
}

Tensor Tensor::empty(Shape sizes, DType dtype) {
  Shape strides = contiguous_strides(sizes);
  return empty_strided(std::move(sizes), std::move(strides), dtype);
}

Tensor Tensor::meta_strided(Shape sizes, Shape strides, DType dtype) {
  (void)storage_bytes(sizes, strides, dtype);  // the same size errors as a real tensor
  Tensor t;
  t.sizes_ = std::move(sizes);
  t.strides_ = std::move(strides);
  t.dtype_ = dtype;
  t.dtype_set_ = true;
  return t;
}

Tensor Tensor::meta(Shape sizes, DType dtype) {
  Shape strides = contiguous_strides(sizes);
  return meta_strided(std::move(sizes), std::move(strides), dtype);
}

Tensor Tensor::zeros(Shape sizes, DType dtype) {
  Tensor t = empty(std::move(sizes), dtype);
  std::memset(t.raw_data(), 0, size_t(t.numel()) * t.itemsize());
  return t;
}

Tensor Tensor::full(Shape sizes, const Scalar& value, DType dtype) {
  Tensor t = empty(std::move(sizes), dtype);
  t.fill_(value);
  return t;
}

Tensor Tensor::scalar_tensor(const Scalar& value, DType dtype) { return full({}, value, dtype); }

// ---------------------------------------------------------------- queries

void* Tensor::raw_data() const {
  KILN_USER_CHECK(storage_, "cannot access data of a meta tensor");
  return static_cast<char*>(storage_->data()) + offset_ * int64_t(itemsize());
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (int64_t d = dim() - 1; d >= 0; --d) {
    if (sizes_[d] == 1) continue;
    if (sizes_[d] == 0) return true;
    if (strides_[d] != expected) return false;
    expected *= sizes_[d];
  }
  return true;
}

bool Tensor::is_non_overlapping_and_dense() const {
  std::vector<int64_t> order(static_cast<size_t>(sizes_.size()));
  for (size_t i = 0; i < order.size(); ++i) order[i] = int64_t(i);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return sizes_[a] < 2 || (sizes_[b] >= 2 && strides_[a] < strides_[b]);
  });
  int64_t expected = 1;
  for (int64_t d : order) {
    if (sizes_[d] < 2) continue;
    if (strides_[d] != expected) return false;
    expected *= sizes_[d];
  }
  return true;
}

Scalar Tensor::item() const {
  KILN_USER_CHECK(numel() == 1, "a Tensor with ", numel(), " elements cannot be converted to Scalar");
  return dispatch_all(dtype_, [&]<class T>() -> Scalar {
    T v = *static_cast<const T*>(raw_data());
    if constexpr (std::is_same_v<T, bool>) return Scalar(v);
    else if constexpr (is_floating_v<T>) return Scalar(double(static_cast<acc_t<T>>(v)));
    else return Scalar(int64_t(v));
  });
}

std::string Tensor::type_str() const {
  Shape st = strides_;
  return std::string(dtype_abbrev(dtype_)) + shape_str(sizes_) + shape_str(st);
}

// ---------------------------------------------------------------- views

Tensor Tensor::as_strided(Shape sizes, Shape strides, int64_t offset) const {
  KILN_USER_CHECK(sizes.size() == strides.size(), "as_strided: ", sizes.size(), " sizes but ",
                  strides.size(), " strides");
  KILN_USER_CHECK(offset >= 0, "as_strided: negative storage offset ", offset);
  // A count or an index past 64 bits would wrap and slip through the bounds check.
  bool empty_view = false, numel_overflow = false;
  int64_t numel = 1;
  for (int64_t s : sizes) {
    empty_view |= s == 0;
    numel_overflow |= __builtin_mul_overflow(numel, s, &numel);
  }
  KILN_USER_CHECK(empty_view || !numel_overflow, "numel: integer multiplication overflow (sizes ", shape_str(sizes), ")");
  if (storage_) {
    int64_t max_index = offset, span = 0;
    bool index_overflow = false;
    for (size_t d = 0; d < sizes.size(); ++d) {
      KILN_USER_CHECK(sizes[d] >= 0, "as_strided: negative size");
      KILN_USER_CHECK(strides[d] >= 0 || sizes[d] <= 1, "as_strided: negative stride");
      index_overflow |= __builtin_mul_overflow(sizes[d] - 1, strides[d], &span) ||
                        __builtin_add_overflow(max_index, span, &max_index);
    }
    int64_t capacity = int64_t(storage_->nbytes() / itemsize());
    KILN_USER_CHECK(empty_view || (!index_overflow && max_index < capacity), "as_strided: view of size ",
                    shape_str(sizes), " with strides ", shape_str(strides), " and offset ", offset,
                    " is out of bounds for storage of ", capacity, " elements");
  }
  Tensor t = *this;
  t.sizes_ = std::move(sizes);
  t.strides_ = std::move(strides);
  t.offset_ = offset;
  return t;
}

namespace {
Shape infer_size(Shape sizes, int64_t numel) {
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      KILN_USER_CHECK(infer < 0, "only one dimension can be inferred");
      infer = int64_t(i);
    } else {
      KILN_USER_CHECK(sizes[i] >= 0, "invalid shape dimension ", sizes[i]);
      known *= sizes[i];
    }
  }
  if (infer >= 0) {
    KILN_USER_CHECK(known != 0 && numel % known == 0, "shape '", shape_str(sizes),
                    "' is invalid for input of size ", numel);
    sizes[infer] = numel / known;
  } else {
    KILN_USER_CHECK(known == numel, "shape '", shape_str(sizes), "' is invalid for input of size ",
                    numel);
  }
  return sizes;
}

// Strides for viewing (sizes, strides) as new_sizes without a copy, if possible
// (the algorithm of ATen's computeStride: match chunks of contiguous dims).
std::optional<Shape> view_strides(const Shape& sizes, const Shape& strides, const Shape& new_sizes) {
  if (sizes.empty()) return Shape(new_sizes.size(), 1);
  int64_t numel = shape_numel(sizes);
  if (numel == 0) return contiguous_strides(new_sizes);
  Shape out(new_sizes.size());
  int64_t view_d = int64_t(new_sizes.size()) - 1;
  int64_t chunk_base_stride = strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= sizes[d];
    if (d == 0 || (sizes[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}
}  // namespace

Tensor Tensor::view(Shape sizes) const {
  sizes = infer_size(std::move(sizes), numel());
  auto st = view_strides(sizes_, strides_, sizes);
  KILN_USER_CHECK(st.has_value(), "view size ", shape_str(sizes),
                  " is not compatible with input tensor's size ", shape_str(sizes_),
                  " and stride ", shape_str(strides_),
                  " (at least one dimension spans across two contiguous subspaces); use reshape");
  return as_strided(std::move(sizes), std::move(*st), offset_);
}

Tensor Tensor::reshape(Shape sizes) const {
  sizes = infer_size(std::move(sizes), numel());
  if (auto st = view_strides(sizes_, strides_, sizes)) return as_strided(std::move(sizes), *st, offset_);
  return contiguous().view(std::move(sizes));
}

Tensor Tensor::permute(std::span<const int64_t> dims) const {
  KILN_USER_CHECK(int64_t(dims.size()) == dim(), "permute: number of dims don't match (", dims.size(),
                  " vs ", dim(), ")");
  Shape s(dims.size()), st(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = wrap_dim(dims[i], dim());
    KILN_USER_CHECK(!seen[d], "permute: repeated dim ", dims[i]);
    seen[d] = true;
    s[i] = sizes_[d];
    st[i] = strides_[d];
  }
  return as_strided(std::move(s), std::move(st), offset_);
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  if (dim() == 0) return *this;
  d0 = wrap_dim(d0, dim());
  d1 = wrap_dim(d1, dim());
  Shape s = sizes_, st = strides_;
  std::swap(s[d0], s[d1]);
  std::swap(st[d0], st[d1]);
  return as_strided(std::move(s), std::move(st), offset_);
}

Tensor Tensor::t() const {
  KILN_USER_CHECK(dim() <= 2, "t() expects a tensor with <= 2 dimensions, but self is ", dim(), "D");
  return dim() < 2 ? *this : transpose(0, 1);
}

Tensor Tensor::expand(Shape sizes) const {
  KILN_USER_CHECK(int64_t(sizes.size()) >= dim(), "expand: the number of sizes provided (",
                  sizes.size(), ") must be greater or equal to the number of dimensions in the tensor (",
                  dim(), ")");
  size_t lead = sizes.size() - size_t(dim());
  Shape st(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i < lead) {
      KILN_USER_CHECK(sizes[i] >= 0, "expand: -1 not allowed in a leading, non-existing dimension");
      st[i] = 0;
      continue;
    }
    int64_t have = sizes_[i - lead];
    if (sizes[i] == -1) sizes[i] = have;
    KILN_USER_CHECK(have == sizes[i] || have == 1, "The expanded size of the tensor (", sizes[i],
                    ") must match the existing size (", have, ") at non-singleton dimension ", i,
                    ".  Target sizes: ", shape_str(sizes), ".  Tensor sizes: ", shape_str(sizes_));
    st[i] = (have == sizes[i]) ? strides_[i - lead] : 0;
  }
  return as_strided(std::move(sizes), std::move(st), offset_);
}

Tensor Tensor::squeeze() const {
  Shape s, st;
  for (int64_t d = 0; d < dim(); ++d)
    if (sizes_[d] != 1) {
      s.push_back(sizes_[d]);
      st.push_back(strides_[d]);
    }
  return as_strided(std::move(s), std::move(st), offset_);
}

Tensor Tensor::squeeze(int64_t d) const {
  if (dim() == 0) return *this;
  d = wrap_dim(d, dim());
  if (sizes_[d] != 1) return *this;
  Shape s = sizes_, st = strides_;
  s.erase(s.begin() + d);
  st.erase(st.begin() + d);
  return as_strided(std::move(s), std::move(st), offset_);
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1);
  Shape s = sizes_, st = strides_;
  int64_t stride = d < dim() ? sizes_[d] * strides_[d] : 1;
  s.insert(s.begin() + d, 1);
  st.insert(st.begin() + d, stride);
  return as_strided(std::move(s), std::move(st), offset_);
}

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  KILN_USER_CHECK(dim() > 0, "slice() cannot be applied to a 0-dim tensor.");
  KILN_USER_CHECK(step > 0, "slice step must be positive");
  d = wrap_dim(d, dim());
  int64_t n = sizes_[d];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape s = sizes_, st = strides_;
  s[d] = (end - start + step - 1) / step;
  st[d] = strides_[d] * step;
  return as_strided(std::move(s), std::move(st), offset_ + start * strides_[d]);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  KILN_USER_CHECK(dim() > 0, "select() cannot be applied to a 0-dim tensor.");
  d = wrap_dim(d, dim());
  int64_t n = sizes_[d];
  KILN_USER_CHECK(index >= -n && index < n, "select(): index ", index,
                  " out of range for tensor of size ", shape_str(sizes_), " at dimension ", d);
  if (index < 0) index += n;
  Shape s = sizes_, st = strides_;
  s.erase(s.begin() + d);
  st.erase(st.begin() + d);
  return as_strided(std::move(s), std::move(st), offset_ + index * strides_[d]);
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  d = wrap_dim(d, dim());
  if (start < 0) start += sizes_[d];
  KILN_USER_CHECK(start >= 0 && length >= 0 && start + length <= sizes_[d], "narrow: start (", start,
                  ") + length (", length, ") exceeds dimension size (", sizes_[d], ")");
  return slice(d, start, start + length, 1);
}

Tensor Tensor::diagonal(int64_t offset, int64_t d1, int64_t d2) const {
  d1 = wrap_dim(d1, dim());
  d2 = wrap_dim(d2, dim());
  KILN_USER_CHECK(d1 != d2, "diagonal dimensions cannot be identical ", d1, ", ", d2);
  int64_t diag_size, start = offset_;
  if (offset >= 0) {
    diag_size = std::max<int64_t>(std::min(sizes_[d1], sizes_[d2] - offset), 0);
    if (diag_size > 0) start += offset * strides_[d2];
  } else {
    diag_size = std::max<int64_t>(std::min(sizes_[d1] + offset, sizes_[d2]), 0);
    if (diag_size > 0) start -= offset * strides_[d1];
  }
  Shape s, st;
  for (int64_t d = 0; d < dim(); ++d)
    if (d != d1 && d != d2) {
      s.push_back(sizes_[d]);
      st.push_back(strides_[d]);
    }
  s.push_back(diag_size);
  st.push_back(strides_[d1] + strides_[d2]);
  return as_strided(std::move(s), std::move(st), start);
}

// ---------------------------------------------------------------- copies

namespace {
// Converts one element; floats narrow through float like torch's casts.
template <class To, class From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    return static_cast<acc_t<From>>(v) != 0;
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    return To(static_cast<float>(static_cast<acc_t<From>>(v)));
  } else if constexpr (is_floating_v<From> && !is_floating_v<To>) {
    // Float to integer truncates toward zero; out-of-range is undefined in C++,
    // so go through int64 as x86 PyTorch effectively does.
    double d = double(static_cast<acc_t<From>>(v));
    if (!(d == d)) return To(0);
    if (d >= 9.2233720368547758e18 || d < -9.2233720368547758e18) return static_cast<To>(INT64_MIN);
    return static_cast<To>(static_cast<int64_t>(d));
  } else {
    return static_cast<To>(static_cast<acc_t<From>>(v));
  }
}
}  // namespace

void Tensor::copy_(const Tensor& src) const {
  KILN_USER_CHECK(!is_meta() && !src.is_meta(), "copy_ on a meta tensor");
  Tensor from = src.sizes() == sizes_ ? src : src.expand(sizes_);
  if (from.dtype() == dtype_ && from.is_contiguous() && is_contiguous()) {
    size_t bytes = size_t(numel()) * itemsize();
    if (raw_data() != from.raw_data()) {
      char* d = static_cast<char*>(raw_data());
      const char* s = static_cast<const char*>(from.raw_data());
      parallel_for(0, int64_t(bytes), kParallelGrain * 8, [&](int64_t b, int64_t e) {
        std::memcpy(d + b, s + b, size_t(e - b));
      });
    }
    return;
  }
  dispatch_all(dtype_, [&]<class To>() {
    dispatch_all(from.dtype(), [&]<class From>() {
      map_elements<To, From>(*this, [](From v) { return convert<To>(v); }, from);
    });
  });
}

void Tensor::fill_(const Scalar& value) const {
  dispatch_all(dtype_, [&]<class T>() {
    T v = value.to<T>();
    map_elements<T>(*this, [v]() { return v; });
  });
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  if (is_meta()) return meta(sizes_, dtype_);
  Tensor out = empty(sizes_, dtype_);
  out.copy_(*this);
  return out;
}

Tensor Tensor::to(DType dtype) const {
  if (dtype == dtype_) return *this;
  if (is_meta()) return meta_strided(sizes_, strides_, dtype);
  Tensor out = empty(sizes_, dtype);
  out.copy_(*this);
  return out;
}

}  // namespace kiln
