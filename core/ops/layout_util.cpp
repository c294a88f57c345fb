#include "core/ops/layout_util.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <cctype>
#include <numeric>
#include <string>

#include "core/tensor/parallel.h"

namespace kiln {

namespace {
std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// c10's channels-last detection: strides must grow along (C, W, H, N) or
// (C, W, H, D, N); ambiguous size-1 layouts count as contiguous.
bool strides_like_channels_last(const Shape& sizes, const Shape& strides, std::initializer_list<int> order) {
  if (strides[1] == 0) return false;
  int64_t min = 0;
  for (int d : order) {
    if (sizes[d] == 0) return false;
    if (strides[d] < min) return false;
    if (d == 0 && min == strides[1]) return false;
    min = strides[d];
    if (sizes[d] > 1) min *= sizes[d];
  }
  return true;
}
}  // namespace

MemoryFormat memory_format_arg(const Value& v, MemoryFormat absent) {
  if (v.is_none()) return absent;
  if (v.is_int()) {
    switch (v.to_int()) {
      case 0: return MemoryFormat::Contiguous;
      case 1: return MemoryFormat::Preserve;
      case 2: return MemoryFormat::ChannelsLast;
      case 3: return MemoryFormat::ChannelsLast3d;
      default: KILN_FAIL("unknown memory format code ", v.to_int());
    }
  }
  std::string s = lower(v.to_string());
  if (s.find("preserve") != std::string::npos) return MemoryFormat::Preserve;
  if (s.find("channels_last_3d") != std::string::npos) return MemoryFormat::ChannelsLast3d;
  if (s.find("channels_last") != std::string::npos) return MemoryFormat::ChannelsLast;
  if (s.find("contiguous") != std::string::npos) return MemoryFormat::Contiguous;
  KILN_FAIL("unknown memory format '", v.to_string(), "'");
}

Shape infer_dense_strides(const Shape& sizes, const Shape& strides) {
  size_t nd = sizes.size();
  // perm[0] is the innermost dim. Insertion sort keeps zero-stride dims where
  // they are (ambiguous), and among equal strides puts the smaller size inside.
  std::vector<size_t> perm(nd);
  for (size_t i = 0; i < nd; ++i) perm[i] = nd - 1 - i;
  auto should_swap = [&](size_t d0, size_t d1) {
    int64_t s0 = strides[d0], s1 = strides[d1];
    if (s0 == 0 || s1 == 0) return 0;
    if (s0 < s1) return -1;
    if (s0 > s1) return 1;
    return sizes[d0] > sizes[d1] ? 1 : 0;
  };
  for (size_t i = 1; i < nd; ++i) {
    size_t d1 = i;
    for (size_t d0 = i; d0-- > 0;) {
      int c = should_swap(perm[d0], perm[d1]);
      if (c > 0) {
        std::swap(perm[d0], perm[d1]);
        d1 = d0;
      } else if (c < 0) {
        break;
      }
    }
  }
  Shape out(nd);
  int64_t cur = 1;
  for (size_t i = 0; i < nd; ++i) {
    out[perm[i]] = cur;
    if (sizes[perm[i]] > 1) cur *= sizes[perm[i]];
  }
  return out;
}

Shape preserve_strides(const Tensor& t) {
  if (t.is_non_overlapping_and_dense()) return t.strides();
  return infer_dense_strides(t.sizes(), t.strides());
}

Shape channels_last_strides(const Shape& sizes) {
  Shape st(sizes.size());
  if (sizes.size() == 4) {
    st[1] = 1;
    st[3] = sizes[1];
    st[2] = st[3] * sizes[3];
    st[0] = st[2] * sizes[2];
  } else if (sizes.size() == 5) {
    st[1] = 1;
    st[4] = sizes[1];
    st[3] = st[4] * sizes[4];
    st[2] = st[3] * sizes[3];
    st[0] = st[2] * sizes[2];
  } else {
    KILN_FAIL("channels_last memory format needs a 4-D or 5-D tensor, got ", sizes.size(), "-D");
  }
  return st;
}

MemoryFormat suggest_memory_format(const Tensor& t) {
  if (t.dim() == 4 && strides_like_channels_last(t.sizes(), t.strides(), {1, 3, 2, 0}))
    return MemoryFormat::ChannelsLast;
  if (t.dim() == 5 && strides_like_channels_last(t.sizes(), t.strides(), {1, 4, 3, 2, 0}))
    return MemoryFormat::ChannelsLast3d;
  return MemoryFormat::Contiguous;
}

Shape strides_for_format(const Tensor& t, MemoryFormat format) {
  switch (format) {
    case MemoryFormat::Preserve: return preserve_strides(t);
    case MemoryFormat::ChannelsLast:
      KILN_USER_CHECK(t.dim() == 4, "required rank 4 tensor to use channels_last format");
      return channels_last_strides(t.sizes());
    case MemoryFormat::ChannelsLast3d:
      KILN_USER_CHECK(t.dim() == 5, "required rank 5 tensor to use channels_last_3d format");
      return channels_last_strides(t.sizes());
    case MemoryFormat::Contiguous: break;
  }
  return contiguous_strides(t.sizes());
}

Tensor new_strided(const Shape& sizes, const Shape& strides, DType dtype, bool meta) {
  for (int64_t s : sizes)
    KILN_USER_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ", shape_str(sizes));
  return meta ? Tensor::meta_strided(sizes, strides, dtype) : Tensor::empty_strided(sizes, strides, dtype);
}

std::optional<DType> dtype_arg(const Value& v) {
  if (v.is_none()) return std::nullopt;
  if (v.is_int()) {
    switch (v.to_int()) {  // c10::ScalarType
      case 0: return DType::UInt8;
      case 1: return DType::Int8;
      case 2: return DType::Int16;
      case 3: return DType::Int32;
      case 4: return DType::Int64;
      case 5: return DType::Float16;
      case 6: return DType::Float32;
      case 7: return DType::Float64;
      case 11: return DType::Bool;
      case 15: return DType::BFloat16;
      default: KILN_FAIL("unsupported ScalarType code ", v.to_int());
    }
  }
  return v.to_dtype();
}

FactoryOptions factory_options(const OpArgs& args, size_t first) {
  FactoryOptions o;
  o.dtype = dtype_arg(args[first]);
  const Value& layout = args[first + 1];
  KILN_USER_CHECK(layout.is_none() || (layout.is_int() && layout.to_int() == 0) ||
                      (layout.kind() == Value::Kind::String &&
                       lower(layout.to_string()).find("strided") != std::string::npos),
                  "only the strided layout is supported, got ", layout.repr());
  const Value& device = args[first + 2];
  if (!device.is_none()) {
    KILN_USER_CHECK(device.kind() == Value::Kind::String, "expected a device, got ", device.repr());
    std::string d = lower(device.to_string());
    o.meta = d.find("meta") != std::string::npos;
    KILN_USER_CHECK(o.meta || d.find("cpu") != std::string::npos, "device '", device.to_string(),
                    "' is not supported: Kiln's eager kernels run on the CPU");
  }
  return o;
}

void check_scalar_fits(const Scalar& v, DType dtype) {
  if (v.is_bool() || dtype == DType::Bool) return;
  bool overflow = dispatch_all(dtype, [&]<class T>() {
    double lo, hi;
    if constexpr (std::is_same_v<T, Half>) {
      lo = -65504.0, hi = 65504.0;
    } else if constexpr (std::is_same_v<T, BFloat16>) {
      lo = -double(std::numeric_limits<float>::max()), hi = double(std::numeric_limits<float>::max());
    } else {
      lo = double(std::numeric_limits<T>::lowest()), hi = double(std::numeric_limits<T>::max());
    }
    if (v.is_int()) {
      int64_t i = v.to_int();
      if constexpr (std::is_integral_v<T>) {
        if constexpr (std::is_unsigned_v<T>)
          if (i < 0) return uint64_t(-(i + 1)) + 1 > uint64_t(std::numeric_limits<T>::max());
        return i < int64_t(std::numeric_limits<T>::lowest()) || (i > 0 && uint64_t(i) > uint64_t(std::numeric_limits<T>::max()));
      } else {
        return double(i) < lo || double(i) > hi;
      }
    }
    double d = v.to_double();
    if (std::isinf(d)) return !is_floating_v<T>;
    if (std::isnan(d)) return !is_floating_v<T>;
    return d < lo || d > hi;
  });
  KILN_USER_CHECK(!overflow, "value cannot be converted to type ", dtype_name(dtype), " without overflow");
}

void check_index_dtype(const Tensor& index, std::string_view op, bool allow_int32) {
  KILN_USER_CHECK(index.dtype() == DType::Int64 || (allow_int32 && index.dtype() == DType::Int32), op,
                  "(): Expected dtype int64", allow_int32 ? " or int32" : "", " for index, got ",
                  dtype_name(index.dtype()));
}

Tensor to_meta(const Tensor& t) {
  if (!t.defined()) return t;
  return Tensor::meta_strided(t.sizes(), t.strides(), t.dtype())
      .as_strided(t.sizes(), t.strides(), t.storage_offset());
}

ValueList meta_values(const OpArgs& args) {
  ValueList out;
  out.reserve(args.size());
  for (const Value& v : args.values()) {
    if (v.is_tensor()) {
      out.emplace_back(to_meta(v.to_tensor()));
    } else if (v.is_list()) {
      ValueList l;
      for (const Value& e : v.to_list()) l.push_back(e.is_tensor() ? Value(to_meta(e.to_tensor())) : e);
      out.emplace_back(std::move(l));
    } else {
      out.push_back(v);
    }
  }
  return out;
}

void add_meta_aware_op(OpRegistry& r, std::string_view schema, ResultFn fn) {
  r.add(schema, [fn](const OpArgs& a) { return fn(OpArgs(a.schema(), meta_values(a))); }, fn);
}

namespace {
// The dim (of size > 1) where t has stride 1, or -1.
int64_t unit_stride_dim(const Tensor& t) {
  for (int64_t d = t.dim() - 1; d >= 0; --d)
    if (t.sizes()[d] > 1 && t.strides()[d] == 1) return d;
  return -1;
}

// Copies in square tiles of the plane spanned by dst's contiguous dim `a` and
// src's contiguous dim `b`: both sides then stream whole cache lines.
bool copy_tiled(const Tensor& dst, const Tensor& src) {
  if (dst.dtype() != src.dtype() || dst.sizes() != src.sizes() || dst.numel() < 16384) return false;
  int64_t a = unit_stride_dim(dst), b = unit_stride_dim(src);
  if (a < 0 || b < 0 || a == b) return false;
  constexpr int64_t kTile = 32;
  const Shape& sz = dst.sizes();
  Shape outer, dst_st, src_st;
  for (int64_t d = 0; d < dst.dim(); ++d)
    if (d != a && d != b) {
      outer.push_back(sz[d]);
      dst_st.push_back(dst.strides()[d]);
      src_st.push_back(src.strides()[d]);
    }
  int64_t tiles_a = (sz[a] + kTile - 1) / kTile, tiles_b = (sz[b] + kTile - 1) / kTile;
  int64_t work = shape_numel(outer) * tiles_a * tiles_b;
  int64_t item = int64_t(dst.itemsize()), dst_b = dst.strides()[b] * item, src_a = src.strides()[a] * item;
  char* dbase = static_cast<char*>(dst.raw_data());
  const char* sbase = static_cast<const char*>(src.raw_data());
  dispatch_bytes(size_t(item), [&]<class U>() {
    parallel_for(0, work, std::max<int64_t>(1, kParallelGrain / (kTile * kTile)), [&](int64_t w0, int64_t w1) {
      for (int64_t w = w0; w < w1; ++w) {
        int64_t o = w / (tiles_a * tiles_b), tb = (w / tiles_a) % tiles_b, ta = w % tiles_a;
        int64_t doff = 0, soff = 0;
        for (size_t d = outer.size(); d-- > 0;) {
          doff += (o % outer[d]) * dst_st[d];
          soff += (o % outer[d]) * src_st[d];
          o /= outer[d];
        }
        int64_t a0 = ta * kTile, a1 = std::min(sz[a], a0 + kTile);
        int64_t b0 = tb * kTile, b1 = std::min(sz[b], b0 + kTile);
        for (int64_t ib = b0; ib < b1; ++ib) {
          char* d = dbase + doff * item + ib * dst_b;
          const char* s = sbase + (soff + ib) * item;
          for (int64_t ia = a0; ia < a1; ++ia)
            *reinterpret_cast<U*>(d + ia * item) = *reinterpret_cast<const U*>(s + ia * src_a);
        }
      }
    });
  });
  return true;
}
}  // namespace

void copy_into(const Tensor& dst, const Tensor& src) {
  if (!copy_tiled(dst, src)) dst.copy_(src);
}

void gather_strided(const Tensor& out, const char* src_base, const Shape& src_byte_strides) {
  int64_t numel = out.numel();
  if (numel == 0) return;
  size_t item = out.itemsize();
  // Walk out in its memory order (largest stride first), merging dims that are
  // contiguous in both out and the source, so the inner loop is long.
  std::vector<int64_t> order(size_t(out.dim()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return out.strides()[a] > out.strides()[b]; });
  Shape sz, ost, sst;
  for (int64_t d : order) {
    if (out.sizes()[d] == 1) continue;
    int64_t o = out.strides()[d] * int64_t(item), s = src_byte_strides[d];
    if (!sz.empty() && ost.back() == o * out.sizes()[d] && sst.back() == s * out.sizes()[d]) {
      sz.back() *= out.sizes()[d];
      ost.back() = o;
      sst.back() = s;
      continue;
    }
    sz.push_back(out.sizes()[d]);
    ost.push_back(o);
    sst.push_back(s);
  }
  if (sz.empty()) {
    sz = {1};
    ost = {0};
    sst = {0};
  }
  int64_t nd = int64_t(sz.size()), inner = sz.back(), rows = numel / inner;
  char* out_base = static_cast<char*>(out.raw_data());
  dispatch_bytes(item, [&]<class U>() {
    parallel_for(0, rows, std::max<int64_t>(1, kParallelGrain / inner), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        int64_t rem = r, oo = 0, so = 0;
        for (int64_t d = nd - 2; d >= 0; --d) {
          int64_t i = rem % sz[d];
          rem /= sz[d];
          oo += i * ost[d];
          so += i * sst[d];
        }
        char* o = out_base + oo;
        const char* s = src_base + so;
        int64_t os = ost.back(), ss = sst.back();
        for (int64_t j = 0; j < inner; ++j)
          *reinterpret_cast<U*>(o + j * os) = *reinterpret_cast<const U*>(s + j * ss);
      }
    });
  });
}

}  // namespace kiln
