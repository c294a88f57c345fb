#pragma once
// A tensor is shared storage + sizes + strides (in elements) + an offset.
// Views (view, permute, slice, expand, ...) share storage; "meta" tensors have
// sizes, strides and dtype but no storage, for shape propagation.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/tensor/dtype.h"
#include "core/tensor/scalar.h"

namespace kiln {

using Shape = std::vector<int64_t>;

class Storage {
 public:
  explicit Storage(size_t nbytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  // In-place writes that changed the autograd history of a tensor on this
  // storage (PyTorch's version counter, shared by a base and its views): a
  // view whose history predates one is stale.
  uint64_t history_writes() const { return history_writes_; }
  void note_history_write() const { ++history_writes_; }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  mutable uint64_t history_writes_ = 0;
};

// Returns the cached large blocks of freed tensors to the system.
void release_cached_memory();

enum class Device : uint8_t { CPU, Meta };

// Contiguous (row-major) strides for `sizes`.
Shape contiguous_strides(std::span<const int64_t> sizes);
int64_t shape_numel(std::span<const int64_t> sizes);
// Wraps a possibly negative dim into [0, ndim); throws a user error when out of range.
int64_t wrap_dim(int64_t dim, int64_t ndim);
// The broadcast shape of two shapes, or a user error naming both.
Shape broadcast_shapes(std::span<const int64_t> a, std::span<const int64_t> b);
std::string shape_str(std::span<const int64_t> sizes);

class Tensor {
 public:
  Tensor() = default;

  static Tensor empty(Shape sizes, DType dtype);
  static Tensor empty_strided(Shape sizes, Shape strides, DType dtype);
  static Tensor meta(Shape sizes, DType dtype);
  static Tensor meta_strided(Shape sizes, Shape strides, DType dtype);
  static Tensor zeros(Shape sizes, DType dtype);
  static Tensor full(Shape sizes, const Scalar& value, DType dtype);
  static Tensor scalar_tensor(const Scalar& value, DType dtype);
  template <class T>
  static Tensor from_vector(const std::vector<T>& values, Shape sizes);

  bool defined() const { return dtype_set_; }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_ ? Device::CPU : Device::Meta; }
  bool is_meta() const { return !storage_; }
  int64_t dim() const { return int64_t(sizes_.size()); }
  const Shape& sizes() const { return sizes_; }
  const Shape& strides() const { return strides_; }
  int64_t size(int64_t d) const { return sizes_[wrap_dim(d, dim())]; }
  int64_t stride(int64_t d) const { return strides_[wrap_dim(d, dim())]; }
  int64_t numel() const { return shape_numel(sizes_); }
  int64_t storage_offset() const { return offset_; }
  size_t itemsize() const { return element_size(dtype_); }
  bool is_contiguous() const;
  // No two elements share memory and none is skipped, in some dim order.
  bool is_non_overlapping_and_dense() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  void* raw_data() const;
  template <class T>
  T* data() const {
    KILN_CHECK(dtype_v<T> == dtype_, "data<", dtype_name(dtype_v<T>), "> on ", dtype_name(dtype_), " tensor");
    return static_cast<T*>(raw_data());
  }
  // The single element as a Scalar (float for float dtypes, int for integers).
  Scalar item() const;

  // ---- views: share storage ----
  Tensor as_strided(Shape sizes, Shape strides, int64_t offset) const;
  Tensor view(Shape sizes) const;  // -1 infers one size; error if strides forbid
  Tensor reshape(Shape sizes) const;  // view when possible, else copy
  Tensor permute(std::span<const int64_t> dims) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor t() const;
  Tensor expand(Shape sizes) const;  // -1 keeps a size
  Tensor squeeze() const;
  Tensor squeeze(int64_t d) const;
  Tensor unsqueeze(int64_t d) const;
  Tensor slice(int64_t d, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int64_t d, int64_t index) const;
  Tensor narrow(int64_t d, int64_t start, int64_t length) const;
  Tensor diagonal(int64_t offset = 0, int64_t d1 = 0, int64_t d2 = 1) const;
  Tensor flatten() const { return reshape({-1}); }

  // ---- copies ----
  Tensor contiguous() const;
  Tensor clone() const;  // contiguous copy
  Tensor to(DType dtype) const;  // same tensor when dtype matches, else a copy
  // Copies (with broadcasting and dtype conversion) src into this tensor's elements.
  void copy_(const Tensor& src) const;
  void fill_(const Scalar& value) const;

  // Metadata as a string: "f32[3, 4][4, 1]".
  std::string type_str() const;

 private:
  std::shared_ptr<Storage> storage_;
  Shape sizes_, strides_;
  int64_t offset_ = 0;
  DType dtype_ = DType::Float32;
  bool dtype_set_ = false;
};

template <class T>
Tensor Tensor::from_vector(const std::vector<T>& values, Shape sizes) {
  KILN_CHECK(shape_numel(sizes) == int64_t(values.size()), "from_vector: size mismatch");
  Tensor t = empty(std::move(sizes), dtype_v<T>);
  T* out = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

}  // namespace kiln
