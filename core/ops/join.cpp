// Joining and tiling: cat, stack, hstack, vstack, repeat, tile, flip, roll,
// triu, tril. Each op is one function that returns a meta result for meta
// inputs and computes otherwise (registered through add_meta_aware_op).
#include <algorithm>
#include <cstring>
#include <limits>

#include "core/ops/kernel_util.h"
#include "core/ops/layout_util.h"
#include "core/tensor/parallel.h"

namespace kiln {
namespace {

bool is_meta_input(const std::vector<Tensor>& ts) {
  return std::any_of(ts.begin(), ts.end(), [](const Tensor& t) { return t.is_meta(); });
}

// ---------------------------------------------------------------- cat

// 1-D tensors of size 0 are skipped whatever their shape elsewhere, as in
// PyTorch (the legacy "empty tensor" of old code), though their dtype still
// takes part in promotion.
bool legacy_empty(const Tensor& t) { return t.dim() == 1 && t.sizes()[0] == 0; }

Tensor cat(const std::vector<Tensor>& ts, int64_t dim) {
  KILN_USER_CHECK(!ts.empty(), "torch.cat(): expected a non-empty list of Tensors");
  for (size_t i = 0; i < ts.size(); ++i)
    KILN_USER_CHECK(ts[i].dim() > 0, "zero-dimensional tensor (at position ", i, ") cannot be concatenated");
  DType dtype = result_type(ts);
  bool meta = is_meta_input(ts);
  const Tensor* ref = nullptr;
  for (const Tensor& t : ts)
    if (!legacy_empty(t)) {
      ref = &t;
      break;
    }
  if (!ref) return new_strided({0}, {1}, dtype, meta);
  int64_t d = wrap_dim(dim, ref->dim());
  Shape out_sizes = ref->sizes();
  out_sizes[d] = 0;
  MemoryFormat format = suggest_memory_format(*ref);
  for (size_t i = 0; i < ts.size(); ++i) {
    const Tensor& t = ts[i];
    if (legacy_empty(t)) continue;
    KILN_USER_CHECK(t.dim() == ref->dim(), "Tensors must have same number of dimensions: got ", ref->dim(),
                    " and ", t.dim());
    for (int64_t k = 0; k < t.dim(); ++k)
      KILN_USER_CHECK(k == d || t.sizes()[k] == ref->sizes()[k], "Sizes of tensors must match except in dimension ",
                      d, ". Expected size ", ref->sizes()[k], " but got size ", t.sizes()[k], " for tensor number ", i,
                      " in the list.");
    out_sizes[d] += t.sizes()[d];
    if (suggest_memory_format(t) != format) format = MemoryFormat::Contiguous;
  }
  Shape strides = format == MemoryFormat::Contiguous ? contiguous_strides(out_sizes) : channels_last_strides(out_sizes);
  Tensor out = new_strided(out_sizes, strides, dtype, meta);
  if (meta) return out;
  int64_t offset = 0;
  for (const Tensor& t : ts) {
    if (legacy_empty(t)) continue;
    int64_t n = t.sizes()[d];
    if (n > 0 && t.numel() > 0) copy_into(out.slice(d, offset, offset + n), t);
    offset += n;
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& ts, int64_t dim) {
  KILN_USER_CHECK(!ts.empty(), "stack expects a non-empty TensorList");
  for (size_t i = 1; i < ts.size(); ++i)
    KILN_USER_CHECK(ts[i].sizes() == ts[0].sizes(), "stack expects each tensor to be equal size, but got ",
                    shape_str(ts[0].sizes()), " at entry 0 and ", shape_str(ts[i].sizes()), " at entry ", i);
  int64_t d = wrap_dim(dim, ts[0].dim() + 1);
  std::vector<Tensor> parts;
  for (const Tensor& t : ts) parts.push_back(t.unsqueeze(d));
  return cat(parts, d);
}

Tensor atleast_1d(const Tensor& t) { return t.dim() == 0 ? t.reshape({1}) : t; }
Tensor atleast_2d(const Tensor& t) {
  if (t.dim() == 0) return t.reshape({1, 1});
  return t.dim() == 1 ? t.unsqueeze(0) : t;
}

Tensor hstack(std::vector<Tensor> ts) {
  KILN_USER_CHECK(!ts.empty(), "hstack expects a non-empty TensorList");
  for (Tensor& t : ts) t = atleast_1d(t);
  return cat(ts, ts[0].dim() == 1 ? 0 : 1);
}

Tensor vstack(std::vector<Tensor> ts) {
  KILN_USER_CHECK(!ts.empty(), "vstack expects a non-empty TensorList");
  for (Tensor& t : ts) t = atleast_2d(t);
  return cat(ts, 0);
}

// ---------------------------------------------------------------- repeat

Tensor repeat(const Tensor& t, const std::vector<int64_t>& repeats) {
  KILN_USER_CHECK(int64_t(repeats.size()) >= t.dim(),
                  "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  size_t nd = repeats.size(), lead = nd - size_t(t.dim());
  Shape target(nd);
  // Out viewed as [r0, s0, r1, s1, ...] is the source broadcast along each r.
  Shape split_sizes, src_strides;
  for (size_t i = 0; i < nd; ++i) {
    int64_t s = i < lead ? 1 : t.sizes()[i - lead];
    KILN_USER_CHECK(repeats[i] <= 0 || s <= std::numeric_limits<int64_t>::max() / repeats[i],
                    "repeat: the result size overflows int64");
    target[i] = s * repeats[i];
    split_sizes.insert(split_sizes.end(), {repeats[i], s});
    src_strides.insert(src_strides.end(), {0, i < lead ? 0 : t.strides()[i - lead]});
  }
  Tensor out = new_strided(target, contiguous_strides(target), t.dtype(), t.is_meta());
  if (t.is_meta() || out.numel() == 0) return out;
  out.view(split_sizes).copy_(t.as_strided(split_sizes, src_strides, t.storage_offset()));
  return out;
}

Tensor tile(const Tensor& t, std::vector<int64_t> dims) {
  if (int64_t(dims.size()) < t.dim()) dims.insert(dims.begin(), size_t(t.dim()) - dims.size(), 1);
  return repeat(t, dims);
}

// ---------------------------------------------------------------- flip, roll

Tensor flip(const Tensor& t, const std::vector<int64_t>& dims) {
  std::vector<bool> flipped(size_t(std::max<int64_t>(t.dim(), 1)), false);
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, t.dim());
    KILN_USER_CHECK(!flipped[w], "dim ", w, " appears multiple times in the list of dims");
    flipped[w] = true;
  }
  Tensor out = new_strided(t.sizes(), preserve_strides(t), t.dtype(), t.is_meta());
  if (t.is_meta() || t.numel() == 0) return out;
  // Read t backwards along the flipped dims: start at their last element, negative strides.
  const char* base = static_cast<const char*>(t.raw_data());
  int64_t item = int64_t(t.itemsize());
  Shape strides(size_t(t.dim()));
  for (int64_t d = 0; d < t.dim(); ++d) {
    strides[d] = t.strides()[d] * item;
    if (flipped[d]) {
      base += (t.sizes()[d] - 1) * strides[d];
      strides[d] = -strides[d];
    }
  }
  gather_strided(out, base, strides);
  return out;
}

Tensor roll_dim(const Tensor& t, int64_t shift, int64_t dim) {
  int64_t d = wrap_dim(dim, t.dim());
  Tensor out = Tensor::empty(t.sizes(), t.dtype());
  int64_t n = t.dim() == 0 ? 1 : t.sizes()[d];
  if (t.numel() == 0 || t.dim() == 0) {
    copy_into(out, t);
    return out;
  }
  int64_t s = ((shift % n) + n) % n;
  if (s > 0) copy_into(out.slice(d, 0, s), t.slice(d, n - s, n));
  if (s < n) copy_into(out.slice(d, s, n), t.slice(d, 0, n - s));
  return out;
}

Tensor roll(const Tensor& t, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims) {
  KILN_USER_CHECK(dims.empty() ? shifts.size() == 1 : shifts.size() == dims.size(),
                  "shifts and dimensions must align. shifts: ", shifts.size(), ", dims:", dims.size());
  for (int64_t d : dims) wrap_dim(d, t.dim());
  if (t.is_meta()) return Tensor::meta(t.sizes(), t.dtype());
  if (dims.empty()) return roll_dim(t.reshape({-1}), shifts[0], 0).view(t.sizes());
  Tensor cur = t;
  for (size_t i = 0; i < dims.size(); ++i) cur = roll_dim(cur, shifts[i], dims[i]);
  return cur;
}

// ---------------------------------------------------------------- triu, tril

Tensor triangle(const Tensor& t, int64_t diagonal, bool upper) {
  KILN_USER_CHECK(t.dim() >= 2, upper ? "triu" : "tril", ": input tensor must have at least 2 dimensions");
  Tensor out = new_strided(t.sizes(), contiguous_strides(t.sizes()), t.dtype(), t.is_meta());
  if (t.is_meta() || t.numel() == 0) return out;
  copy_into(out, t);
  int64_t rows = t.sizes()[t.dim() - 2], cols = t.sizes()[t.dim() - 1];
  size_t item = t.itemsize();
  char* base = static_cast<char*>(out.raw_data());
  // Zero the part of each row outside the band; all-zero bytes are 0 in every dtype.
  parallel_for(0, out.numel() / cols, std::max<int64_t>(1, kParallelGrain / cols), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t i = r % rows;
      int64_t lo = upper ? 0 : std::clamp<int64_t>(i + diagonal + 1, 0, cols);
      int64_t hi = upper ? std::clamp<int64_t>(i + diagonal, 0, cols) : cols;
      if (hi > lo) std::memset(base + (r * cols + lo) * int64_t(item), 0, size_t(hi - lo) * item);
    }
  });
  return out;
}

void add(OpRegistry& r, std::string_view schema, std::function<Tensor(const OpArgs&)> fn) {
  add_meta_aware_op(r, schema, [fn](const OpArgs& a) { return one(fn(a)); });
}

}  // namespace

void register_join_ops(OpRegistry& r) {
  add(r, "aten::cat(Tensor[] tensors, int dim=0) -> Tensor",
      [](const OpArgs& a) { return cat(a.tensors(0), a.integer(1)); });
  add(r, "aten::stack(Tensor[] tensors, int dim=0) -> Tensor",
      [](const OpArgs& a) { return stack(a.tensors(0), a.integer(1)); });
  add(r, "aten::hstack(Tensor[] tensors) -> Tensor", [](const OpArgs& a) { return hstack(a.tensors(0)); });
  add(r, "aten::vstack(Tensor[] tensors) -> Tensor", [](const OpArgs& a) { return vstack(a.tensors(0)); });
  add(r, "aten::repeat(Tensor self, SymInt[] repeats) -> Tensor",
      [](const OpArgs& a) { return repeat(a.tensor(0), a.ints(1)); });
  add(r, "aten::tile(Tensor self, SymInt[] dims) -> Tensor", [](const OpArgs& a) { return tile(a.tensor(0), a.ints(1)); });
  add(r, "aten::flip(Tensor self, int[] dims) -> Tensor", [](const OpArgs& a) { return flip(a.tensor(0), a.ints(1)); });
  add(r, "aten::fliplr(Tensor self) -> Tensor", [](const OpArgs& a) {
    KILN_USER_CHECK(a.tensor(0).dim() >= 2, "Input must be >= 2-d.");
    return flip(a.tensor(0), {1});
  });
  add(r, "aten::flipud(Tensor self) -> Tensor", [](const OpArgs& a) {
    KILN_USER_CHECK(a.tensor(0).dim() >= 1, "Input must be >= 1-d.");
    return flip(a.tensor(0), {0});
  });
  add(r, "aten::roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor",
      [](const OpArgs& a) { return roll(a.tensor(0), a.ints(1), a.ints(2)); });
  add(r, "aten::triu(Tensor self, SymInt diagonal=0) -> Tensor",
      [](const OpArgs& a) { return triangle(a.tensor(0), a.integer(1), true); });
  add(r, "aten::tril(Tensor self, SymInt diagonal=0) -> Tensor",
      [](const OpArgs& a) { return triangle(a.tensor(0), a.integer(1), false); });
}

}  // namespace kiln
