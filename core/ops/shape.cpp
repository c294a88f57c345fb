// View ops (share storage with their input) and the plain copies: clone,
// _to_copy / to, copy, contiguous, fill, zero. View ops compute only metadata,
// so one function serves both the meta and the CPU entry; the meta entry runs
// it on meta copies of the arguments so it never reads (or copies) data.
#include <algorithm>
#include <climits>
#include <functional>
#include <numeric>
#include <string>

#include "core/ops/kernel_util.h"
#include "core/ops/layout_util.h"

namespace kiln {
namespace {

using TensorFn = std::function<Tensor(const OpArgs&)>;
using TensorsFn = std::function<std::vector<Tensor>(const OpArgs&)>;

// An op whose result is computed from metadata alone (views), or that handles
// meta inputs itself (the copies below allocate meta results for meta inputs).
void add_shape_op(OpRegistry& r, std::string_view schema, TensorFn fn) {
  add_meta_aware_op(r, schema, [fn](const OpArgs& a) { return one(fn(a)); });
}

void add_multi_view(OpRegistry& r, std::string_view schema, TensorsFn fn) {
  add_meta_aware_op(r, schema, [fn](const OpArgs& a) { return ValueList{Value::tensor_list(fn(a))}; });
}

// The functionalized "<view>_copy" twin of a view schema: same arguments, no
// alias annotations, contiguous fresh results.
std::string copy_schema(std::string_view view_schema) {
  std::string s(view_schema);
  for (std::string_view ann : {"(a -> *)", "(a)"}) {
    for (size_t p; (p = s.find(ann)) != std::string::npos;) s.erase(p, ann.size());
  }
  size_t name_end = s.find_first_of(".(");
  s.insert(name_end, "_copy");
  return s;
}

Tensor contiguous_copy(const Tensor& v) {
  if (v.is_meta()) return Tensor::meta(v.sizes(), v.dtype());
  Tensor out = Tensor::empty(v.sizes(), v.dtype());
  copy_into(out, v);
  return out;
}

void add_view(OpRegistry& r, std::string_view schema, TensorFn fn) {
  add_shape_op(r, schema, fn);
  add_shape_op(r, copy_schema(schema), [fn](const OpArgs& a) { return contiguous_copy(fn(a)); });
}

void add_views(OpRegistry& r, std::string_view schema, TensorsFn fn) {
  add_multi_view(r, schema, fn);
  add_multi_view(r, copy_schema(schema), [fn](const OpArgs& a) {
    std::vector<Tensor> views = fn(a);
    for (Tensor& v : views) v = contiguous_copy(v);
    return views;
  });
}

void require_dims(const Tensor& t, std::string_view what) {
  KILN_USER_CHECK(t.dim() > 0, what);
}

// ---------------------------------------------------------------- views

Tensor squeeze_dims(const Tensor& t, const std::vector<int64_t>& dims) {
  std::vector<bool> drop(size_t(std::max<int64_t>(t.dim(), 1)), false);
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, t.dim());
    KILN_USER_CHECK(!drop[w], "dim ", w, " appears multiple times in the list of dims");
    drop[w] = true;
  }
  if (t.dim() == 0) return t;
  Shape s, st;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (drop[d] && t.sizes()[d] == 1) continue;
    s.push_back(t.sizes()[d]);
    st.push_back(t.strides()[d]);
  }
  return t.as_strided(std::move(s), std::move(st), t.storage_offset());
}

Tensor transpose(const Tensor& t, int64_t d0, int64_t d1) {
  wrap_dim(d0, t.dim());  // 0-dim tensors still check the dims
  wrap_dim(d1, t.dim());
  return t.transpose(d0, d1);
}

Tensor slice(const Tensor& t, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
             int64_t step) {
  require_dims(t, "slice() cannot be applied to a 0-dim tensor.");
  KILN_USER_CHECK(step > 0, "slice step must be positive");
  return t.slice(dim, start.value_or(0), end.value_or(INT64_MAX), step);
}

Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t length) {
  require_dims(t, "narrow() cannot be applied to a 0-dim tensor.");
  int64_t d = wrap_dim(dim, t.dim()), n = t.sizes()[d];
  KILN_USER_CHECK(length >= 0, "narrow(): length must be non-negative.");
  KILN_USER_CHECK(start >= -n && start <= n, "start out of range (expected to be in range of [", -n, ", ",
                  n, "], but got ", start, ")");
  if (start < 0) start += n;
  KILN_USER_CHECK(start <= n - length, "start (", start, ") + length (", length,
                  ") exceeds dimension size (", n, ").");
  return t.slice(d, start, start + length);
}

Tensor unfold(const Tensor& t, int64_t dimension, int64_t size, int64_t step) {
  int64_t d = wrap_dim(dimension, t.dim());
  int64_t n = t.dim() == 0 ? 1 : t.sizes()[d], st = t.dim() == 0 ? 1 : t.strides()[d];
  KILN_USER_CHECK(size <= n, "maximum size for tensor at dimension ", d, " is ", n, " but size is ", size);
  KILN_USER_CHECK(size >= 0, "size is ", size, " but must be >= 0");
  KILN_USER_CHECK(step > 0, "step is ", step, " but must be > 0");
  Shape s = t.sizes(), strides = t.strides();
  if (t.dim() > 0) {
    s[d] = (n - size) / step + 1;
    strides[d] = st * step;
  }
  s.push_back(size);
  strides.push_back(st);
  return t.as_strided(std::move(s), std::move(strides), t.storage_offset());
}

Tensor movedim(const Tensor& t, std::vector<int64_t> src, std::vector<int64_t> dst) {
  int64_t nd = t.dim();
  KILN_USER_CHECK(src.size() == dst.size(), "movedim: Invalid source or destination dims: source (",
                  shape_str(src), " dims) should contain the same number of dims as destination (",
                  shape_str(dst), " dims)");
  auto normalize = [&](std::vector<int64_t>& dims, const char* which) {
    std::vector<int64_t> given = dims;
    std::vector<bool> seen(size_t(std::max<int64_t>(nd, 1)), false);
    for (int64_t& d : dims) {
      d = wrap_dim(d, nd);
      KILN_USER_CHECK(!seen[d], "movedim: repeated dim in `", which, "` (", shape_str(given), ")");
      seen[d] = true;
    }
  };
  normalize(src, "source");
  normalize(dst, "destination");
  if (nd == 0) return t;
  std::vector<int64_t> order(size_t(nd), -1);
  std::vector<bool> src_used(size_t(nd), false);
  for (size_t i = 0; i < src.size(); ++i) {
    order[dst[i]] = src[i];
    src_used[src[i]] = true;
  }
  int64_t next = 0;
  for (int64_t& o : order) {
    if (o >= 0) continue;
    while (src_used[next]) ++next;
    o = next++;
  }
  return t.permute(order);
}

Tensor flatten(const Tensor& t, int64_t start, int64_t end) {
  if (t.dim() == 0) return t.reshape({1});
  start = wrap_dim(start, t.dim());
  end = wrap_dim(end, t.dim());
  KILN_USER_CHECK(start <= end, "flatten() has invalid args: start_dim cannot come after end_dim");
  if (start == end) return t;
  Shape s(t.sizes().begin(), t.sizes().begin() + start);
  s.push_back(shape_numel(std::span(t.sizes()).subspan(size_t(start), size_t(end - start + 1))));
  s.insert(s.end(), t.sizes().begin() + end + 1, t.sizes().end());
  return t.reshape(std::move(s));
}

Tensor unflatten(const Tensor& t, int64_t dim, std::vector<int64_t> sizes) {
  require_dims(t, "unflatten: Dimension specified as 0 but tensor has no dimensions");
  int64_t d = wrap_dim(dim, t.dim()), n = t.sizes()[d];
  KILN_USER_CHECK(!sizes.empty(), "unflatten: sizes must be non-empty");
  std::vector<int64_t> given = sizes;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      KILN_USER_CHECK(infer < 0, "unflatten: only one dimension can be inferred");
      infer = int64_t(i);
    } else {
      KILN_USER_CHECK(sizes[i] >= 0, "unflatten: invalid size ", sizes[i]);
      known *= sizes[i];
    }
  }
  bool ok = infer >= 0 ? known != 0 && n % known == 0 : known == n;
  KILN_USER_CHECK(ok, "unflatten: Provided sizes ", shape_str(given),
                  " don't multiply up to the size of dim ", d, " (", n, ") in the input tensor");
  if (infer >= 0) sizes[infer] = n / known;
  Shape s(t.sizes().begin(), t.sizes().begin() + d);
  s.insert(s.end(), sizes.begin(), sizes.end());
  s.insert(s.end(), t.sizes().begin() + d + 1, t.sizes().end());
  return t.view(std::move(s));
}

std::vector<Tensor> unbind(const Tensor& t, int64_t dim) {
  require_dims(t, "Dimension specified as 0 but tensor has no dimensions");
  int64_t d = wrap_dim(dim, t.dim());
  std::vector<Tensor> out;
  for (int64_t i = 0; i < t.sizes()[d]; ++i) out.push_back(t.select(d, i));
  return out;
}

std::vector<Tensor> split_with_sizes(const Tensor& t, const std::vector<int64_t>& sizes, int64_t dim) {
  require_dims(t, "split_with_sizes expects at least a 1-dimensional tensor");
  int64_t d = wrap_dim(dim, t.dim()), n = t.sizes()[d], total = 0;
  for (int64_t s : sizes) {
    KILN_USER_CHECK(s >= 0, "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=",
                    shape_str(sizes));
    total += s;
  }
  KILN_USER_CHECK(total == n, "split_with_sizes expects split_sizes to sum exactly to ", n,
                  " (input tensor's size at dimension ", d, "), but got split_sizes=", shape_str(sizes));
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(t.slice(d, start, start + s));
    start += s;
  }
  return out;
}

std::vector<Tensor> split(const Tensor& t, int64_t split_size, int64_t dim) {
  require_dims(t, "split expects at least a 1-dimensional tensor");
  KILN_USER_CHECK(split_size >= 0, "split expects split_size be non-negative, but got split_size=", split_size);
  int64_t d = wrap_dim(dim, t.dim()), n = t.sizes()[d];
  KILN_USER_CHECK(split_size > 0 || n == 0,
                  "split_size can only be 0 if dimension size is 0, but got dimension size of ", n);
  int64_t count = split_size == 0 || n == 0 ? 1 : (n - 1) / split_size + 1;  // ceil without overflow
  std::vector<int64_t> sizes(size_t(count), split_size);
  sizes.back() = split_size - (split_size * count - n);
  return split_with_sizes(t, sizes, d);
}

std::vector<Tensor> chunk(const Tensor& t, int64_t chunks, int64_t dim) {
  require_dims(t, "chunk expects at least a 1-dimensional tensor");
  KILN_USER_CHECK(chunks > 0, "chunk expects `chunks` to be greater than 0, got: ", chunks);
  int64_t d = wrap_dim(dim, t.dim()), n = t.sizes()[d];
  int64_t split_size = n == 0 ? 0 : (n - 1) / chunks + 1;  // ceil(n / chunks) without overflow
  // With both zero, split() would lose the number of chunks.
  if (split_size == 0 && n == 0) return split_with_sizes(t, std::vector<int64_t>(size_t(chunks), 0), d);
  return split(t, split_size, d);
}

std::vector<Tensor> tensor_split_sections(const Tensor& t, int64_t sections, int64_t dim) {
  require_dims(t, "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims");
  KILN_USER_CHECK(sections > 0, "number of sections must be larger than 0, got ", sections);
  int64_t d = wrap_dim(dim, t.dim()), n = t.sizes()[d];
  std::vector<int64_t> sizes(size_t(sections), n / sections);
  for (int64_t i = 0; i < n % sections; ++i) ++sizes[size_t(i)];
  return split_with_sizes(t, sizes, d);
}

std::vector<Tensor> tensor_split_indices(const Tensor& t, const std::vector<int64_t>& indices, int64_t dim) {
  require_dims(t, "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims");
  int64_t d = wrap_dim(dim, t.dim());
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t i : indices) {
    out.push_back(t.slice(d, start, i));
    start = i;
  }
  out.push_back(t.slice(d, start, INT64_MAX));
  return out;
}

std::vector<Tensor> tensor_split_tensor(const Tensor& t, const Tensor& spec, int64_t dim) {
  KILN_USER_CHECK(spec.dtype() == DType::Int64, "tensor_split expected tensor_indices_or_sections to have dtype of long, but got ",
                  dtype_name(spec.dtype()));
  KILN_USER_CHECK(spec.dim() <= 1, "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or one-dimensional tensor, but got a tensor with ",
                  spec.dim(), " dims");
  KILN_USER_CHECK(!spec.is_meta(), "tensor_split: the split points are data; they cannot come from a meta tensor");
  if (spec.dim() == 0) return tensor_split_sections(t, spec.item().to_int(), dim);
  Tensor c = spec.contiguous();
  const int64_t* p = c.data<int64_t>();
  return tensor_split_indices(t, std::vector<int64_t>(p, p + c.numel()), dim);
}

Tensor numpy_t(const Tensor& t) {
  std::vector<int64_t> dims(size_t(t.dim()));
  std::iota(dims.rbegin(), dims.rend(), 0);
  return t.permute(dims);
}

void register_views(OpRegistry& r) {
  add_view(r, "aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)",
           [](const OpArgs& a) { return a.tensor(0).view(a.ints(1)); });
  add_shape_op(r, "aten::_unsafe_view(Tensor self, SymInt[] size) -> Tensor",
               [](const OpArgs& a) { return a.tensor(0).view(a.ints(1)); });
  add_shape_op(r, "aten::reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)",
               [](const OpArgs& a) { return a.tensor(0).reshape(a.ints(1)); });
  add_view(r, "aten::_reshape_alias(Tensor(a) self, SymInt[] size, SymInt[] stride) -> Tensor(a)",
           [](const OpArgs& a) {
             const Tensor& t = a.tensor(0);
             return t.as_strided(a.ints(1), a.ints(2), t.storage_offset());
           });
  add_shape_op(r, "aten::view_as(Tensor(a) self, Tensor other) -> Tensor(a)",
               [](const OpArgs& a) { return a.tensor(0).view(a.tensor(1).sizes()); });
  add_view(r, "aten::permute(Tensor(a) self, int[] dims) -> Tensor(a)",
           [](const OpArgs& a) { return a.tensor(0).permute(a.ints(1)); });
  auto transpose_fn = [](const OpArgs& a) { return transpose(a.tensor(0), a.integer(1), a.integer(2)); };
  add_view(r, "aten::transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", transpose_fn);
  add_shape_op(r, "aten::swapaxes(Tensor(a) self, int axis0, int axis1) -> Tensor(a)", transpose_fn);
  add_shape_op(r, "aten::swapdims(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", transpose_fn);
  add_view(r, "aten::t(Tensor(a) self) -> Tensor(a)", [](const OpArgs& a) { return a.tensor(0).t(); });
  add_shape_op(r, "aten::numpy_T(Tensor(a) self) -> Tensor(a)",
               [](const OpArgs& a) { return numpy_t(a.tensor(0)); });
  add_view(r, "aten::expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)",
           [](const OpArgs& a) { return a.tensor(0).expand(a.ints(1)); });
  add_shape_op(r, "aten::expand_as(Tensor(a) self, Tensor other) -> Tensor(a)",
               [](const OpArgs& a) { return a.tensor(0).expand(a.tensor(1).sizes()); });
  add_shape_op(r, "aten::broadcast_to(Tensor(a) self, SymInt[] size) -> Tensor(a)",
               [](const OpArgs& a) { return a.tensor(0).expand(a.ints(1)); });
  add_view(r, "aten::squeeze(Tensor(a) self) -> Tensor(a)", [](const OpArgs& a) { return a.tensor(0).squeeze(); });
  add_view(r, "aten::squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)",
           [](const OpArgs& a) { return squeeze_dims(a.tensor(0), {a.integer(1)}); });
  add_view(r, "aten::squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)",
           [](const OpArgs& a) { return squeeze_dims(a.tensor(0), a.ints(1)); });
  add_view(r, "aten::unsqueeze(Tensor(a) self, int dim) -> Tensor(a)",
           [](const OpArgs& a) { return a.tensor(0).unsqueeze(a.integer(1)); });
  add_view(r, "aten::slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)",
           [](const OpArgs& a) {
             return slice(a.tensor(0), a.integer(1), a.opt_integer(2), a.opt_integer(3), a.integer(4));
           });
  add_view(r, "aten::select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)",
           [](const OpArgs& a) { return a.tensor(0).select(a.integer(1), a.integer(2)); });
  add_view(r, "aten::as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a)",
           [](const OpArgs& a) {
             const Tensor& t = a.tensor(0);
             return t.as_strided(a.ints(1), a.ints(2), a.opt_integer(3).value_or(t.storage_offset()));
           });
  add_view(r, "aten::diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)",
           [](const OpArgs& a) { return a.tensor(0).diagonal(a.integer(1), a.integer(2), a.integer(3)); });
  add_view(r, "aten::narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)",
           [](const OpArgs& a) { return narrow(a.tensor(0), a.integer(1), a.integer(2), a.integer(3)); });
  add_shape_op(r, "aten::narrow.Tensor(Tensor(a) self, int dim, Tensor start, SymInt length) -> Tensor(a)",
               [](const OpArgs& a) {
                 const Tensor& start = a.tensor(2);
                 KILN_USER_CHECK(start.dim() == 0 && is_integral(start.dtype(), false) && !start.is_meta(),
                                 "start must be an 0-dim integral Tensor.");
                 return narrow(a.tensor(0), a.integer(1), start.item().to_int(), a.integer(3));
               });
  add_view(r, "aten::unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)",
           [](const OpArgs& a) { return unfold(a.tensor(0), a.integer(1), a.integer(2), a.integer(3)); });
  add_view(r, "aten::alias(Tensor(a) self) -> Tensor(a)", [](const OpArgs& a) { return a.tensor(0); });
  add_view(r, "aten::detach(Tensor(a) self) -> Tensor(a)", [](const OpArgs& a) { return a.tensor(0); });
  add_shape_op(r, "aten::lift_fresh(Tensor(a) self) -> Tensor(a)", [](const OpArgs& a) { return a.tensor(0); });
  add_shape_op(r, "aten::flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)",
               [](const OpArgs& a) { return flatten(a.tensor(0), a.integer(1), a.integer(2)); });
  add_shape_op(r, "aten::ravel(Tensor(a) self) -> Tensor(a)",
               [](const OpArgs& a) { return a.tensor(0).reshape({-1}); });
  add_shape_op(r, "aten::unflatten.int(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a)",
               [](const OpArgs& a) { return unflatten(a.tensor(0), a.integer(1), a.ints(2)); });
  for (const char* s : {"aten::movedim.intlist(Tensor(a) self, int[] source, int[] destination) -> Tensor(a)",
                        "aten::moveaxis.intlist(Tensor(a) self, int[] source, int[] destination) -> Tensor(a)",
                        "aten::movedim.int(Tensor(a) self, int source, int destination) -> Tensor(a)",
                        "aten::moveaxis.int(Tensor(a) self, int source, int destination) -> Tensor(a)"})
    add_shape_op(r, s, [](const OpArgs& a) { return movedim(a.tensor(0), a.ints(1), a.ints(2)); });

  add_views(r, "aten::unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]",
            [](const OpArgs& a) { return unbind(a.tensor(0), a.integer(1)); });
  add_views(r, "aten::split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
            [](const OpArgs& a) { return split(a.tensor(0), a.integer(1), a.integer(2)); });
  add_multi_view(r, "aten::split.sizes(Tensor(a -> *) self, SymInt[] split_size, int dim=0) -> Tensor(a)[]",
                 [](const OpArgs& a) { return split_with_sizes(a.tensor(0), a.ints(1), a.integer(2)); });
  add_views(r, "aten::split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]",
            [](const OpArgs& a) { return split_with_sizes(a.tensor(0), a.ints(1), a.integer(2)); });
  add_multi_view(r, "aten::chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]",
                 [](const OpArgs& a) { return chunk(a.tensor(0), a.integer(1), a.integer(2)); });
  add_multi_view(r, "aten::tensor_split.sections(Tensor(a -> *) self, SymInt sections, int dim=0) -> Tensor(a)[]",
                 [](const OpArgs& a) { return tensor_split_sections(a.tensor(0), a.integer(1), a.integer(2)); });
  add_multi_view(r, "aten::tensor_split.indices(Tensor(a -> *) self, SymInt[] indices, int dim=0) -> Tensor(a)[]",
                 [](const OpArgs& a) { return tensor_split_indices(a.tensor(0), a.ints(1), a.integer(2)); });
  // The split points are data, so this one is not a pure view op: no meta_values.
  r.add("aten::tensor_split.tensor_indices_or_sections(Tensor(a -> *) self, Tensor tensor_indices_or_sections, int dim=0) -> Tensor(a)[]",
        [](const OpArgs& a) {
          std::vector<Tensor> v = tensor_split_tensor(to_meta(a.tensor(0)), a.tensor(1), a.integer(2));
          return ValueList{Value::tensor_list(v)};
        },
        [](const OpArgs& a) {
          return ValueList{Value::tensor_list(tensor_split_tensor(a.tensor(0), a.tensor(1), a.integer(2)))};
        });
}

// ---------------------------------------------------------------- copies

// A new tensor like t (meta when t is meta) in `format`, holding t's values converted to dtype.
Tensor copy_as(const Tensor& t, DType dtype, MemoryFormat format, bool meta) {
  Tensor out = new_strided(t.sizes(), strides_for_format(t, format), dtype, meta || t.is_meta());
  if (!out.is_meta()) copy_into(out, t);
  return out;
}

bool has_format(const Tensor& t, MemoryFormat format) {
  if (format == MemoryFormat::Contiguous) return t.is_contiguous();
  Shape want = channels_last_strides(t.sizes());
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.sizes()[d] != 1 && t.strides()[d] != want[d]) return false;
  return true;
}

Tensor contiguous(const Tensor& t, MemoryFormat format) {
  KILN_USER_CHECK(format != MemoryFormat::Preserve,
                  "preserve memory format is unsupported by the contiguous operator");
  strides_for_format(t, format);  // rank checks for channels_last
  if (has_format(t, format)) return t;
  return copy_as(t, t.dtype(), format, false);
}

// _to_copy(self, *, dtype, layout, device, pin_memory, non_blocking, memory_format)
Tensor to_copy(const OpArgs& a) {
  const Tensor& t = a.tensor(0);
  FactoryOptions o = factory_options(a, 1);
  MemoryFormat format = memory_format_arg(a[6], MemoryFormat::Preserve);
  return copy_as(t, o.dtype.value_or(t.dtype()), format, o.meta);
}

// The to() overloads alias self when nothing changes and copy=False.
Tensor to_maybe_copy(const Tensor& t, DType dtype, bool meta, bool copy, const Value& format_arg) {
  MemoryFormat format = memory_format_arg(format_arg, MemoryFormat::Preserve);
  bool same_layout = format == MemoryFormat::Preserve || has_format(t, format);
  if (!copy && dtype == t.dtype() && meta == t.is_meta() && same_layout) return t;
  return copy_as(t, dtype, format, meta);
}

Tensor functional_copy(const Tensor& self, const Tensor& src) {
  src.expand(self.sizes());  // src must broadcast to self's shape
  Tensor out = new_strided(self.sizes(), preserve_strides(self), self.dtype(), self.is_meta() || src.is_meta());
  if (!out.is_meta()) copy_into(out, src);
  return out;
}

Tensor filled_like(const Tensor& t, const Scalar& value) {
  check_scalar_fits(value, t.dtype());
  Tensor out = new_strided(t.sizes(), preserve_strides(t), t.dtype(), t.is_meta());
  if (!out.is_meta()) out.fill_(value);
  return out;
}

Tensor fill_tensor(const Tensor& t, const Tensor& value) {
  KILN_USER_CHECK(value.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ",
                  value.dim(), " dimensions.");
  if (t.is_meta() || value.is_meta()) return new_strided(t.sizes(), preserve_strides(t), t.dtype(), true);
  return filled_like(t, value.item());
}

void register_copies(OpRegistry& r) {
  add_shape_op(r, "aten::contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format) -> Tensor(a)",
               [](const OpArgs& a) {
                 return contiguous(a.tensor(0), memory_format_arg(a[1], MemoryFormat::Contiguous));
               });
  for (const char* s : {"aten::clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor",
                        "aten::lift_fresh_copy(Tensor self) -> Tensor"})
    add_shape_op(r, s, [](const OpArgs& a) {
      MemoryFormat f = a.size() > 1 ? memory_format_arg(a[1], MemoryFormat::Preserve) : MemoryFormat::Preserve;
      return copy_as(a.tensor(0), a.tensor(0).dtype(), f, false);
    });
  add_shape_op(r, "aten::_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor",
               to_copy);
  add_shape_op(r, "aten::to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)",
               [](const OpArgs& a) {
                 const Tensor& t = a.tensor(0);
                 return to_maybe_copy(t, *dtype_arg(a[1]), t.is_meta(), a.boolean(3), a[4]);
               });
  add_shape_op(r, "aten::to.dtype_layout(Tensor(a) self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)",
               [](const OpArgs& a) {
                 const Tensor& t = a.tensor(0);
                 FactoryOptions o = factory_options(a, 1);
                 bool meta = t.is_meta() || o.meta;
                 return to_maybe_copy(t, o.dtype.value_or(t.dtype()), meta, a.boolean(6), a[7]);
               });
  add_shape_op(r, "aten::to.device(Tensor(a) self, Device device, ScalarType dtype, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)",
               [](const OpArgs& a) {
                 const Tensor& t = a.tensor(0);
                 std::string dev = a.str(1);
                 bool meta = dev.find("meta") != std::string::npos;
                 KILN_USER_CHECK(meta || dev.find("cpu") != std::string::npos, "device '", dev,
                                 "' is not supported: Kiln's eager kernels run on the CPU");
                 return to_maybe_copy(t, *dtype_arg(a[2]), meta || t.is_meta(), a.boolean(4), a[5]);
               });
  add_shape_op(r, "aten::to.other(Tensor(a) self, Tensor other, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)",
               [](const OpArgs& a) {
                 const Tensor& t = a.tensor(0);
                 return to_maybe_copy(t, a.tensor(1).dtype(), t.is_meta(), a.boolean(3), a[4]);
               });
  add_shape_op(r, "aten::copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor",
               [](const OpArgs& a) { return functional_copy(a.tensor(0), a.tensor(1)); });
  add_shape_op(r, "aten::fill.Scalar(Tensor self, Scalar value) -> Tensor",
               [](const OpArgs& a) { return filled_like(a.tensor(0), a.scalar(1)); });
  add_shape_op(r, "aten::fill.Tensor(Tensor self, Tensor value) -> Tensor",
               [](const OpArgs& a) { return fill_tensor(a.tensor(0), a.tensor(1)); });
  add_shape_op(r, "aten::zero(Tensor self) -> Tensor",
               [](const OpArgs& a) { return filled_like(a.tensor(0), Scalar(int64_t{0})); });
}

}  // namespace

void register_shape_ops(OpRegistry& r) {
  register_views(r);
  register_copies(r);
}

}  // namespace kiln
