#pragma once
// Helpers shared by the shape, join, indexing, sort and factory families:
// PyTorch's memory-format rules for new tensors, factory keyword arguments
// (dtype / layout / device / pin_memory), index wrapping with PyTorch's error
// text, and dtype-agnostic element moves.
#include <cstdint>
#include <functional>
#include <optional>

#include "core/ops/kernel_util.h"
#include "core/tensor/tensor.h"

namespace kiln {

enum class MemoryFormat { Contiguous, Preserve, ChannelsLast, ChannelsLast3d };

// A MemoryFormat? argument: None gives `absent`. Accepts "torch.channels_last",
// "preserve_format", ... and c10's enum codes (0 contiguous .. 3 channels_last_3d).
MemoryFormat memory_format_arg(const Value& v, MemoryFormat absent);

// ATen's infer_dense_strides: dense strides keeping `t`'s dim order by stride.
Shape infer_dense_strides(const Shape& sizes, const Shape& strides);
// The strides empty_like(t, preserve_format) gives: t's own when they are
// non-overlapping and dense, else dense strides in t's dim order.
Shape preserve_strides(const Tensor& t);
Shape channels_last_strides(const Shape& sizes);  // 4-D (NHWC) or 5-D (NDHWC)
// suggest_memory_format: ChannelsLast(3d) when t's strides look like it.
MemoryFormat suggest_memory_format(const Tensor& t);
// Strides for a new tensor shaped like `t` in `format` (Preserve resolved against t).
Shape strides_for_format(const Tensor& t, MemoryFormat format);
// An uninitialised CPU tensor (or a meta tensor) with these sizes and strides.
Tensor new_strided(const Shape& sizes, const Shape& strides, DType dtype, bool meta);

// A ScalarType? argument; also accepts c10's ScalarType codes (6 = float, ...).
std::optional<DType> dtype_arg(const Value& v);

// The keyword tail every factory has: dtype, layout, device, pin_memory, at
// consecutive schema positions starting at `first`. Only strided CPU tensors
// exist here; device "meta" asks for meta tensors.
struct FactoryOptions {
  std::optional<DType> dtype;
  bool meta = false;
};
FactoryOptions factory_options(const OpArgs& args, size_t first);

// c10's checked Scalar conversion, as fill_/full/scatter(value) apply it: a
// user error "value cannot be converted to type int8 without overflow" when
// `v` lies outside `dtype`'s range (negative ints may wrap into unsigned types;
// infinities and NaN are fine for float types).
void check_scalar_fits(const Scalar& v, DType dtype);

// Wraps a negative index and checks the range, with PyTorch's message
// "index 5 is out of bounds for dimension 0 with size 3".
inline int64_t wrap_index(int64_t index, int64_t size, int64_t dim) {
  int64_t wrapped = index < 0 ? index + size : index;
  KILN_USER_CHECK(wrapped >= 0 && wrapped < size, "index ", index, " is out of bounds for dimension ",
                  dim, " with size ", size);
  return wrapped;
}
// As wrap_index, without wrapping negatives (gather, scatter, index_select).
inline int64_t check_index(int64_t index, int64_t size, int64_t dim) {
  KILN_USER_CHECK(index >= 0 && index < size, "index ", index, " is out of bounds for dimension ",
                  dim, " with size ", size);
  return index;
}

// Index tensors must be int64 (or int32 where the op allows it).
void check_index_dtype(const Tensor& index, std::string_view op, bool allow_int32);

// A meta tensor with t's dtype, sizes, strides and storage offset.
Tensor to_meta(const Tensor& t);
// The same arguments with every tensor (also inside lists) replaced by to_meta.
ValueList meta_values(const OpArgs& args);

// Registers an op whose function handles meta inputs itself (meta results, no
// data touched); its meta entry runs the same function on meta copies of the
// arguments, so the two entries cannot disagree.
using ResultFn = std::function<ValueList(const OpArgs&)>;
void add_meta_aware_op(OpRegistry& r, std::string_view schema, ResultFn fn);

// Calls fn.template operator()<U>() with an unsigned integer type of `itemsize`
// bytes: moving elements needs no knowledge of their dtype.
template <class Fn>
decltype(auto) dispatch_bytes(size_t itemsize, Fn&& fn) {
  switch (itemsize) {
    case 1: return fn.template operator()<uint8_t>();
    case 2: return fn.template operator()<uint16_t>();
    case 4: return fn.template operator()<uint32_t>();
    case 8: return fn.template operator()<uint64_t>();
    default: break;
  }
  KILN_CHECK(false, "no element type of ", itemsize, " bytes");
  __builtin_unreachable();
}

// dst.copy_(src), with a cache-blocked path for same-dtype copies whose
// contiguous dims differ (transposes), which an element-order loop makes slow.
void copy_into(const Tensor& dst, const Tensor& src);

// Copies into `out` the elements of a source described by a base pointer and
// byte strides (which may be negative, as for flip), one per element of out.
void gather_strided(const Tensor& out, const char* src_base, const Shape& src_byte_strides);

}  // namespace kiln
