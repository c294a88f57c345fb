#include "core/ops/pointwise_kernels.h"

namespace kiln::pointwise {

std::string_view aten_type_name(DType t) {
  switch (t) {
    case DType::Bool: return "Bool";
    case DType::UInt8: return "Byte";
    case DType::Int8: return "Char";
    case DType::Int16: return "Short";
    case DType::Int32: return "Int";
    case DType::Int64: return "Long";
    case DType::Float16: return "Half";
    case DType::BFloat16: return "BFloat16";
    case DType::Float32: return "Float";
    case DType::Float64: return "Double";
  }
  return "?";
}

void fail_not_implemented(std::string_view kernel, DType t) {
  KILN_FAIL('"', kernel, "\" not implemented for '", aten_type_name(t), "'");
}

std::string kernel_name(const OpArgs& args) {
  std::string_view name = args.schema().name;
  if (name.starts_with("aten::")) name.remove_prefix(6);
  return std::string(name) + "_cpu";
}

namespace {
// The C++ type names ATen's Scalar accessors report on overflow.
const char* scalar_type_name(DType t) {
  switch (t) {
    case DType::Bool: return "bool";
    case DType::UInt8: return "uint8_t";
    case DType::Int8: return "int8_t";
    case DType::Int16: return "int16_t";
    case DType::Int32: return "int";
    case DType::Int64: return "int64_t";
    case DType::Float16: return "at::Half";
    case DType::BFloat16: return "at::BFloat16";
    case DType::Float32: return "float";
    case DType::Float64: return "double";
  }
  return "?";
}

bool overflows(const Scalar& s, DType t) {
  if (t == DType::Bool || t == DType::Float64 || s.is_bool()) return false;
  double lo = 0, hi = 0;
  dispatch_all(t, [&]<class T>() {
    hi = finite_max<T>();
    lo = std::is_unsigned_v<T> ? 0.0 : -hi - (std::is_integral_v<T> ? 1.0 : 0.0);
  });
  if (s.is_int()) {
    int64_t v = s.to_int();
    if (t == DType::Int64) return false;
    if (t == DType::UInt8 && v < 0) return v < -int64_t(hi);  // negative numbers wrap
    return double(v) < lo || double(v) > hi;
  }
  double v = s.to_double();
  if (is_floating(t)) return std::isfinite(v) && (v < lo || v > hi);
  return v != v || v < lo || v > hi;
}
}  // namespace

bool is_broadcast_scalar(const Tensor& t) {
  if (t.numel() < 1) return false;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.sizes()[size_t(d)] != 1 && t.strides()[size_t(d)] != 0) return false;
  return true;
}

void check_scalar_fits(const Scalar& s, DType t) {
  KILN_USER_CHECK(!overflows(s, t), "value cannot be converted to type ", scalar_type_name(t), " without overflow");
}

namespace {
Operand read_operand(const OpArgs& args, int index) {
  const Value& v = args[size_t(index)];
  if (v.is_none()) return {};
  if (v.is_tensor()) return {v.to_tensor(), std::nullopt};
  return {Tensor(), v.to_scalar()};
}

PromotionOperand promotion_operand(const Operand& o) {
  if (o.scalar) return PromotionOperand(*o.scalar);
  return PromotionOperand(o.tensor);  // undefined tensors are skipped
}

DType common_dtype(const std::array<Operand, 3>& in, int arity) {
  switch (arity) {
    case 1: return result_type({promotion_operand(in[0])});
    case 2: return result_type({promotion_operand(in[0]), promotion_operand(in[1])});
    default: return result_type({promotion_operand(in[0]), promotion_operand(in[1]), promotion_operand(in[2])});
  }
}
}  // namespace

Plan plan_pointwise(const Spec& spec, const OpArgs& args, int arity, bool convert) {
  Plan p;
  Shape sizes;
  for (int i = 0; i < arity; ++i) {
    p.in[size_t(i)] = read_operand(args, spec.operands[size_t(i)]);
    if (p.in[size_t(i)].tensor.defined()) sizes = broadcast_shapes(sizes, p.in[size_t(i)].tensor.sizes());
  }
  p.compute = spec.compute(args, common_dtype(p.in, arity));
  p.out = Tensor::meta(sizes, spec.predicate ? DType::Bool : p.compute);
  if (!convert) return p;
  for (int i = 0; i < arity; ++i) {
    Operand& o = p.in[size_t(i)];
    bool second = i == 1 && spec.exact_scalar;
    // ATen's reduced-float mul/div read any scalar-like `other` tensor before
    // its cast to the compute dtype (an int64 [1] tensor stays 2049, not 2048).
    if (second && o.tensor.defined() && is_broadcast_scalar(o.tensor) && is_reduced_float(p.compute)) {
      o.scalar = o.tensor.as_strided({}, {}, o.tensor.storage_offset()).item();
      o.tensor = Tensor();
    }
    o.exact = second && o.scalar.has_value();
    if (o.tensor.defined()) o.tensor = o.tensor.to(p.compute);
  }
  return p;
}

}  // namespace kiln::pointwise
