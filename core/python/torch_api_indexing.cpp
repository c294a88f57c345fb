// Tensor.__getitem__ / __setitem__ as torch/csrc/autograd/python_variable_indexing.cpp
// and ATen's TensorIndexing.h do them: basic items (int, slice, None, ...,
// bool) become views one by one; tensor and list items are collected per dim
// and applied at the end by index / index_put, whose result dims go where
// NumPy's rules put them.
#include "core/ops/layout_util.h"
#include "core/python/torch_api_binding.h"

namespace kiln::torchapi {
using namespace detail;

IndexItem IndexItem::integer(int64_t i) {
  IndexItem it;
  it.kind = Kind::Int;
  it.index = i;
  return it;
}
IndexItem IndexItem::slice(std::optional<int64_t> start, std::optional<int64_t> stop, std::optional<int64_t> step) {
  IndexItem it;
  it.kind = Kind::Slice;
  it.start = start;
  it.stop = stop;
  it.step = step;
  return it;
}
IndexItem IndexItem::none() { return IndexItem{}; }
IndexItem IndexItem::ellipsis() {
  IndexItem it;
  it.kind = Kind::Ellipsis;
  return it;
}
IndexItem IndexItem::boolean(bool b) {
  IndexItem it;
  it.kind = Kind::Bool;
  it.flag = b;
  return it;
}
IndexItem IndexItem::of_tensor(Tensor t) {
  IndexItem it;
  it.kind = Kind::Tensor;
  it.tensor = std::move(t);
  return it;
}
IndexItem IndexItem::of_sequence(Value list) {
  IndexItem it;
  it.kind = Kind::Sequence;
  it.sequence = std::move(list);
  return it;
}

namespace {

bool is_mask(const Tensor& t) { return t.dtype() == DType::Bool || t.dtype() == DType::UInt8; }

// The basic items applied, and the tensor indices left for index/index_put.
struct Sliced {
  Tensor view;
  std::vector<Tensor> indices;  // per dim of `view`; undefined = no index there
  bool touched = false;         // some item changed the view
};

Tensor index_tensor(const IndexItem& item) {
  if (item.kind == IndexItem::Kind::Tensor) return item.tensor;
  // Lists index as the long (or bool) tensor torch.tensor would make of them;
  // capture keeps them as constants, so they are real tensors even in Meta mode.
  auto t = tensor_from_data(item.sequence, std::nullopt, Mode::Eager);
  if (!t) throw Error(t.status().message());
  KILN_USER_CHECK(is_integral(t->dtype(), true), "tensors used as indices must be long, int, byte or bool tensors");
  return *t;
}

Sliced apply_items(const Tensor& self, const std::vector<IndexItem>& items, Mode mode) {
  using K = IndexItem::Kind;
  std::vector<Tensor> tensors(items.size());
  int64_t specified = 0;
  int ellipses = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const IndexItem& it = items[i];
    switch (it.kind) {
      case K::Int:
      case K::Slice: ++specified; break;
      case K::Tensor:
      case K::Sequence: {
        tensors[i] = index_tensor(it);
        const Tensor& t = tensors[i];
        bool zero_dim_int = t.dim() == 0 && !is_mask(t);
        specified += zero_dim_int ? 1 : is_mask(t) ? (t.dim() == 0 ? 0 : t.dim()) : 1;
        break;
      }
      case K::Ellipsis: ++ellipses; break;
      case K::None:
      case K::Bool: break;
    }
  }
  KILN_USER_CHECK(ellipses <= 1, "an index can only have a single ellipsis ('...')");
  if (self.dim() == 0 && specified > 0)
    KILN_FAIL("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to "
              "convert a 0-dim tensor to a number");
  KILN_USER_CHECK(specified <= self.dim(), "too many indices for tensor of dimension ", self.dim());

  Sliced s{self, {}, false};
  int64_t dim = 0;
  auto record = [&](Tensor idx) {
    while (int64_t(s.indices.size()) < dim) s.indices.emplace_back();
    s.indices.push_back(std::move(idx));
  };
  auto bool_index = [&](bool flag) {
    // A Python bool (or 0-dim bool tensor) adds a dim of size 1 (True) or 0 (False).
    s.view = aten_t(mode, "aten::unsqueeze", {s.view, dim});
    Tensor idx = flag ? Tensor::zeros({1}, DType::Int64) : Tensor::empty({0}, DType::Int64);
    record(idx);
    ++dim;
  };
  for (size_t i = 0; i < items.size(); ++i) {
    const IndexItem& it = items[i];
    s.touched = true;
    switch (it.kind) {
      case K::Int: {
        // TensorIndexing's applySelect words the range error for Python's x[i].
        int64_t size = s.view.size(dim);
        KILN_USER_CHECK(it.index >= -size && it.index < size, "index ", it.index, " is out of bounds for dimension ",
                        dim, " with size ", size);
        s.view = aten_t(mode, "aten::select.int", {s.view, dim, it.index});
        break;
      }
      case K::Slice: {
        int64_t step = it.step.value_or(1);
        KILN_USER_CHECK(step > 0, "step must be greater than zero");
        auto opt = [](const std::optional<int64_t>& v) { return v ? Value(*v) : Value(); };
        s.view = aten_t(mode, "aten::slice.Tensor", {s.view, dim, opt(it.start), opt(it.stop), step});
        ++dim;
        break;
      }
      case K::None:
        s.view = aten_t(mode, "aten::unsqueeze", {s.view, dim});
        ++dim;
        break;
      case K::Ellipsis: dim += self.dim() - specified; break;
      case K::Bool: bool_index(it.flag); break;
      case K::Tensor:
      case K::Sequence: {
        const Tensor& t = tensors[i];
        if (t.dim() == 0 && !is_mask(t)) {
          // A 0-dim integer tensor selects like an int (its value is data).
          s.view = aten_t(mode, "aten::select.int", {s.view, dim, item_of(t, mode, "indexing with a 0-dim tensor").to_int()});
        } else if (t.dim() == 0) {
          bool_index(item_of(t, mode, "indexing with a 0-dim bool tensor").to_bool());
        } else {
          record(t);
          dim += is_mask(t) ? t.dim() : 1;
        }
        break;
      }
    }
  }
  return s;
}

ValueList optional_list(const std::vector<Tensor>& ts) {
  ValueList l;
  for (const Tensor& t : ts) l.push_back(t.defined() ? Value(t) : Value());
  return l;
}

// ATen's slicePrefix1sSize: leading size-1 dims of a value beyond the target's rank are dropped.
Tensor strip_leading_ones(const Tensor& v, int64_t target_dim, Mode mode) {
  Shape s = v.sizes();
  size_t drop = 0;
  while (drop < s.size() && int64_t(s.size() - drop) > target_dim && s[drop] == 1) ++drop;
  if (drop == 0) return v;
  return aten_t(mode, "aten::view", {v, Value::int_list(Shape(s.begin() + long(drop), s.end()))});
}

}  // namespace

Expected<Value> getitem(const Tensor& self, const std::vector<IndexItem>& items, Mode mode) {
  try {
    Sliced s = apply_items(self, items, mode);
    if (!s.indices.empty()) return aten(mode, "aten::index.Tensor", {s.view, optional_list(s.indices)}).at(0);
    // x[...] and x[()] are still new views of x.
    if (!s.touched || (s.view.sizes() == self.sizes() && s.view.strides() == self.strides() &&
                       s.view.storage_offset() == self.storage_offset() && s.view.storage() == self.storage()))
      return aten(mode, "aten::alias", {self}).at(0);
    return Value(s.view);
  } catch (const Error& e) {
    return Status::error(e.what());
  }
}

Status setitem(const Tensor& self, const std::vector<IndexItem>& items, const Value& value, Mode mode) {
  try {
    KILN_USER_CHECK(value.is_tensor() || value.is_int() || value.is_float() || value.is_bool() || value.is_list(),
                    "can't assign a ", kind_name(value.kind()), " to a ", dtype_name(self.dtype()), " tensor");
    Sliced s = apply_items(self, items, mode);
    for (int64_t d = 0; d < self.dim(); ++d)
      KILN_USER_CHECK(self.sizes()[d] <= 1 || self.strides()[d] != 0,
                      "unsupported operation: more than one element of the written-to tensor refers to a single "
                      "memory location. Please clone() the tensor before performing the operation.");
    Tensor v;
    if (value.is_list()) {
      // x[i] = [1, 2]: the list becomes a tensor of self's dtype, as torch.tensor would.
      auto t = tensor_from_data(value, self.dtype(), Mode::Eager);
      if (!t) throw Error(t.status().message());
      v = *t;
    } else if (value.is_tensor()) {
      v = value.to_tensor();
    } else {
      Scalar sv = value.to_scalar();
      check_scalar_fits(sv, self.dtype());
      v = scalar_to_tensor(sv, self.dtype(), mode);
    }
    bool eager = mode == Mode::Eager && !self.is_meta();
    if (s.indices.empty()) {
      v = strip_leading_ones(v, s.view.dim(), mode);
      // The functional copy checks broadcasting and reads v before any write (v may overlap self).
      Tensor r = aten_t(mode, "aten::copy", {s.view, v});
      if (eager) copy_observed(s.view, r);
      return Status();
    }
    KILN_USER_CHECK(v.dtype() == self.dtype(), "Index put requires the source and destination dtypes match, got ",
                    dtype_name(self.dtype()), " for the destination and ", dtype_name(v.dtype()), " for the source.");
    v = strip_leading_ones(v, s.view.dim(), mode);
    Tensor r = aten_t(mode, "aten::index_put", {s.view, optional_list(s.indices), v, false});
    if (eager) copy_observed(s.view, r);
    return Status();
  } catch (const Error& e) {
    return Status::error(e.what());
  }
}

}  // namespace kiln::torchapi
