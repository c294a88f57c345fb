// Tensor methods that are conversions or queries rather than ops: to() and
// float()/long()/..., type(), size()/stride()/dim()/numel(), item()/tolist(),
// the in-place fill_/zero_/copy_, and torch's dtype queries (result_type,
// promote_types, can_cast, is_tensor, numel).
#include "core/ops/kernel_util.h"
#include "core/ops/layout_util.h"
#include "core/python/torch_api_binding.h"

namespace kiln::torchapi::detail {
namespace {

Signature sig(const char* name, const char* text, Handler h, ResultKind kind = ResultKind::Single) {
  Signature s = parse_signature(name, text);
  s.handler = std::move(h);
  s.result = kind;
  return s;
}

bool is_meta_device(const Value& d) { return d.kind() == Value::Kind::String && d.to_string() == "meta"; }

// x.to(dtype) and friends: self itself when nothing changes and copy=False.
ValueList convert(const Bound& b, const Value& device, DType dtype, bool copy, const Value& memory_format) {
  if (is_meta_device(device) && !b.tensor(0).is_meta())
    return aten(b.mode(), "aten::to.dtype_layout", {b[0]},
                {{"dtype", Value(dtype)}, {"device", device}, {"copy", copy}, {"memory_format", memory_format}});
  return aten(b.mode(), "aten::to.dtype", {b[0], Value(dtype), false, copy, memory_format});
}


void conversions(Table& t) {
  t.add("Tensor", "to", PyKind::Method,
        {sig("to", "(Tensor input, Device? device=None, ScalarType? dtype=None, bool non_blocking=False, bool copy=False, *, MemoryFormat? memory_format=None)",
             [](const Bound& b) {
               DType d = b.opt_dtype(2).value_or(b.tensor(0).dtype());
               return convert(b, b[1], d, b.boolean(4), b[5]);
             }),
         sig("to", "(Tensor input, ScalarType dtype, bool non_blocking=False, bool copy=False, *, MemoryFormat? memory_format=None)",
             [](const Bound& b) { return convert(b, Value(), b[1].to_dtype(), b.boolean(3), b[4]); }),
         sig("to", "(Tensor input, Tensor other, bool non_blocking=False, bool copy=False, *, MemoryFormat? memory_format=None)",
             [](const Bound& b) { return convert(b, Value(), b.tensor(1).dtype(), b.boolean(3), b[4]); })});
  static const std::pair<const char*, DType> kCasts[] = {
      {"float", DType::Float32}, {"double", DType::Float64}, {"half", DType::Float16}, {"bfloat16", DType::BFloat16},
      {"long", DType::Int64},    {"int", DType::Int32},      {"short", DType::Int16},  {"char", DType::Int8},
      {"byte", DType::UInt8},    {"bool", DType::Bool},
  };
  for (const auto& [name, dtype] : kCasts) {
    DType d = dtype;
    t.add("Tensor", name, PyKind::Method,
          {sig(name, "(Tensor input, *, MemoryFormat memory_format=preserve_format)",
               [d](const Bound& b) { return convert(b, Value(), d, false, b[1]); })});
  }
  t.add("Tensor", "type", PyKind::Method,
        {sig("type", "(Tensor input, ScalarType dtype, bool non_blocking=False)",
             [](const Bound& b) { return convert(b, Value(), b[1].to_dtype(), false, Value()); }),
         sig("type", "(Tensor input, str dtype, bool non_blocking=False)",
             [](const Bound& b) {
               for (int i = 0; i < kNumDTypes; ++i)
                 if (b.str(1) == legacy_type_name(DType(i))) return convert(b, Value(), DType(i), false, Value());
               KILN_FAIL("invalid type: '", b.str(1), "'");
             }),
         sig("type", "(Tensor input)",
             [](const Bound& b) { return ValueList{Value(std::string(legacy_type_name(b.tensor(0).dtype())))}; })});
  t.add("Tensor", "type_as", PyKind::Method,
        {sig("type_as", "(Tensor input, Tensor other)",
             [](const Bound& b) { return convert(b, Value(), b.tensor(1).dtype(), false, Value()); })});
  t.add("Tensor", "cpu", PyKind::Method,
        {sig("cpu", "(Tensor input, *, MemoryFormat memory_format=preserve_format)", [](const Bound& b) {
           return ValueList{b[0]};
         })});
  t.add("Tensor", "cuda", PyKind::Method,
        {sig("cuda", "(Tensor input, Device? device=None, bool non_blocking=False, *, MemoryFormat memory_format=preserve_format)",
             [](const Bound& b) {
               // The device itself is the caller's to record (CallInfo::device); here only whether it exists.
               if (b[1].is_none()) check_device(Value(std::string("cuda")));
               return ValueList{b[0]};
             })});
}

Value int_tuple(const Shape& s) { return Value::int_list(s); }

bool has_memory_format(const Tensor& x, const Value& format) {
  MemoryFormat f = memory_format_arg(format, MemoryFormat::Contiguous);
  if (f == MemoryFormat::Contiguous) return x.is_contiguous();
  Shape want = channels_last_strides(x.sizes());
  for (int64_t d = 0; d < x.dim(); ++d)
    if (x.sizes()[d] != 1 && x.strides()[d] != want[d]) return false;
  return true;
}

// Nested Python lists of the elements (0-dim: the number itself).
Value to_list(const Tensor& x, int64_t dim, int64_t offset_elems, const Tensor& contiguous) {
  if (dim == x.dim()) {
    return dispatch_all(x.dtype(), [&]<class T>() -> Value {
      T v = contiguous.data<T>()[offset_elems];
      if constexpr (std::is_same_v<T, bool>) return Value(v);
      else if constexpr (is_floating_v<T>) return Value(double(static_cast<float>(v)) == double(v) ? double(v) : double(v));
      else return Value(int64_t(v));
    });
  }
  ValueList items;
  int64_t stride = contiguous.strides()[size_t(dim)];
  for (int64_t i = 0; i < x.sizes()[size_t(dim)]; ++i) items.push_back(to_list(x, dim + 1, offset_elems + i * stride, contiguous));
  return Value(std::move(items));
}

void queries(Table& t) {
  t.add("Tensor", "size", PyKind::Method,
        {sig("size", "(Tensor input, int dim)", [](const Bound& b) { return ValueList{b.tensor(0).size(b.integer(1))}; }),
         sig("size", "(Tensor input)", [](const Bound& b) { return ValueList{int_tuple(b.tensor(0).sizes())}; },
             ResultKind::Size)});
  t.add("Tensor", "stride", PyKind::Method,
        {sig("stride", "(Tensor input, int dim)", [](const Bound& b) { return ValueList{b.tensor(0).stride(b.integer(1))}; }),
         sig("stride", "(Tensor input)", [](const Bound& b) { return ValueList{int_tuple(b.tensor(0).strides())}; })});
  for (const char* n : {"dim", "ndimension"})
    t.add("Tensor", n, PyKind::Method, {sig(n, "(Tensor input)", [](const Bound& b) { return ValueList{b.tensor(0).dim()}; })});
  for (const char* n : {"numel", "nelement"})
    t.add("Tensor", n, PyKind::Method, {sig(n, "(Tensor input)", [](const Bound& b) { return ValueList{b.tensor(0).numel()}; })});
  t.add("Tensor", "element_size", PyKind::Method, {sig("element_size", "(Tensor input)", [](const Bound& b) {
          return ValueList{int64_t(b.tensor(0).itemsize())};
        })});
  t.add("Tensor", "storage_offset", PyKind::Method, {sig("storage_offset", "(Tensor input)", [](const Bound& b) {
          return ValueList{b.tensor(0).storage_offset()};
        })});
  t.add("Tensor", "is_contiguous", PyKind::Method,
        {sig("is_contiguous", "(Tensor input, *, MemoryFormat memory_format=contiguous_format)",
             [](const Bound& b) { return ValueList{has_memory_format(b.tensor(0), b[1])}; })});
  t.add("Tensor", "is_floating_point", PyKind::Method, {sig("is_floating_point", "(Tensor input)", [](const Bound& b) {
          return ValueList{is_floating(b.tensor(0).dtype())};
        })});
  t.add("Tensor", "is_complex", PyKind::Method,
        {sig("is_complex", "(Tensor input)", [](const Bound&) { return ValueList{false}; })});
  t.def("is_complex", kTorch, {{"(Tensor input)", [](const Bound&) { return ValueList{false}; }}});
  // Kiln has no complex dtypes, and PyTorch's conj() of a real tensor is that
  // tensor itself (optimizers written for complex parameters call grad.conj()).
  t.def("conj", kTorch | kMethod, {{"(Tensor input)", [](const Bound& b) {
          b.set_returns_arg(0);
          return ValueList{b[0]};
        }}});
  t.add("Tensor", "is_signed", PyKind::Method, {sig("is_signed", "(Tensor input)", [](const Bound& b) {
          DType d = b.tensor(0).dtype();
          return ValueList{d != DType::Bool && d != DType::UInt8};
        })});
  t.add("Tensor", "get_device", PyKind::Method,
        {sig("get_device", "(Tensor input)", [](const Bound&) { return ValueList{int64_t{-1}}; })});
  t.add("Tensor", "item", PyKind::Method, {sig("item", "(Tensor input)", [](const Bound& b) {
          return ValueList{Value(item_of(b.tensor(0), b.mode(), "item()"))};
        })});
  t.add("Tensor", "tolist", PyKind::Method, {sig("tolist", "(Tensor input)", [](const Bound& b) {
          const Tensor& x = b.tensor(0);
          KILN_USER_CHECK(b.mode() == Mode::Eager && !x.is_meta(),
                          "tolist(): the values of a tensor are data-dependent and not known while capturing");
          Tensor c = x.contiguous();
          return ValueList{to_list(x, 0, 0, c)};
        }, ResultKind::PyList)});
  // torch.numel / torch.is_floating_point / torch.is_tensor / dtype arithmetic.
  t.def("numel", kTorch, {{"(Tensor input)", [](const Bound& b) { return ValueList{b.tensor(0).numel()}; }}});
  t.def("is_floating_point", kTorch, {{"(Tensor input)", [](const Bound& b) {
          return ValueList{is_floating(b.tensor(0).dtype())};
        }}});
  t.def_in("torch", "is_tensor", PyKind::PyFunction,
           {{"(Any obj)", [](const Bound& b) { return ValueList{b[0].is_tensor()}; }}});
  t.def("is_nonzero", kTorch | kMethod, {{"(Tensor input)", [](const Bound& b) {
          return ValueList{item_of(b.tensor(0), b.mode(), "is_nonzero").to_bool()};
        }}});
  t.def("result_type", kTorch, {{"(Tensor tensor, TensorOrNumber other)", [](const Bound& b) {
          if (b[1].is_tensor()) return ValueList{Value(result_type({b.tensor(0), b.tensor(1)}))};
          return ValueList{Value(result_type({b.tensor(0), b.scalar(1)}))};
        }}});
  t.def("promote_types", kTorch, {{"(ScalarType type1, ScalarType type2)", [](const Bound& b) {
          return ValueList{Value(promote_types(b[0].to_dtype(), b[1].to_dtype()))};
        }}});
  t.def("can_cast", kTorch, {{"(ScalarType from_, ScalarType to)", [](const Bound& b) {
          return ValueList{can_cast(b[0].to_dtype(), b[1].to_dtype())};
        }}});
  t.def_in("torch", "get_default_dtype", PyKind::NnBuiltin,
           {{"()", [](const Bound&) { return ValueList{Value(kDefaultFloat)}; }}}, "torch.get_default_dtype");
}

void fills(Table& t) {
  Signature fill_tensor = sig("fill_", "(Tensor input, Tensor value)", inplace(to_aten("aten::fill.Tensor"), "fill_"));
  Signature fill_scalar = sig("fill_", "(Tensor input, Scalar value)", inplace(to_aten("aten::fill.Scalar"), "fill_"));
  Signature zero = sig("zero_", "(Tensor input)", inplace(to_aten("aten::zero"), "zero_"));
  // copy_ converts any dtype (no can_cast rule): the functional copy first, so
  // that a source overlapping self is read before it is written.
  Signature copy = sig("copy_", "(Tensor input, Tensor src, bool non_blocking=False)", [](const Bound& b) {
    Tensor r = aten_t(b.mode(), "aten::copy", {b[0], b[1]});
    const Tensor& self = b.tensor(0);
    for (int64_t d = 0; d < self.dim(); ++d)
      KILN_USER_CHECK(self.sizes()[d] <= 1 || self.strides()[d] != 0,
                      "copy_: unsupported operation: more than one element of the written-to tensor refers to a "
                      "single memory location. Please clone() the tensor before performing the operation.");
    if (!b.meta() && !self.is_meta()) copy_observed(self, r);
    return ValueList{b[0]};
  });
  for (Signature* s : {&fill_tensor, &fill_scalar, &zero, &copy}) s->returns_arg = 0;
  t.add("Tensor", "fill_", PyKind::Method, {fill_tensor, fill_scalar});
  t.add("Tensor", "zero_", PyKind::Method, {zero});
  t.add("Tensor", "copy_", PyKind::Method, {copy});
  t.def("fill", kTorch, {{"(Tensor input, Tensor value)", to_aten("aten::fill.Tensor")},
                          {"(Tensor input, Scalar value)", to_aten("aten::fill.Scalar")}});
}

}  // namespace

void register_tensor_methods(Table& t) {
  conversions(t);
  queries(t);
  fills(t);
}

}  // namespace kiln::torchapi::detail

namespace kiln::torchapi {

const char* legacy_type_name(DType d) {
  switch (d) {
    case DType::Bool: return "torch.BoolTensor";
    case DType::UInt8: return "torch.ByteTensor";
    case DType::Int8: return "torch.CharTensor";
    case DType::Int16: return "torch.ShortTensor";
    case DType::Int32: return "torch.IntTensor";
    case DType::Int64: return "torch.LongTensor";
    case DType::Float16: return "torch.HalfTensor";
    case DType::BFloat16: return "torch.BFloat16Tensor";
    case DType::Float32: return "torch.FloatTensor";
    case DType::Float64: return "torch.DoubleTensor";
  }
  return "torch.Tensor";
}

}  // namespace kiln::torchapi
