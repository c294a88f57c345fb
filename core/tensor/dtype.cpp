#include "core/tensor/dtype.h"

#include <array>
#include <string>

namespace kiln {
namespace {
struct DTypeInfo {
  DType type;
  size_t size;
  std::string_view name, abbrev, safetensors;
};
constexpr std::array<DTypeInfo, kNumDTypes> kInfo = {{
    {DType::Bool, 1, "bool", "b8", "BOOL"},
    {DType::UInt8, 1, "uint8", "u8", "U8"},
    {DType::Int8, 1, "int8", "i8", "I8"},
    {DType::Int16, 2, "int16", "i16", "I16"},
    {DType::Int32, 4, "int32", "i32", "I32"},
    {DType::Int64, 8, "int64", "i64", "I64"},
    {DType::Float16, 2, "float16", "f16", "F16"},
    {DType::BFloat16, 2, "bfloat16", "bf16", "BF16"},
    {DType::Float32, 4, "float32", "f32", "F32"},
    {DType::Float64, 8, "float64", "f64", "F64"},
}};
const DTypeInfo& info(DType t) { return kInfo[static_cast<size_t>(t)]; }
}  // namespace

size_t element_size(DType t) { return info(t).size; }
std::string_view dtype_name(DType t) { return info(t).name; }
std::string_view dtype_abbrev(DType t) { return info(t).abbrev; }
std::string_view safetensors_name(DType t) { return info(t).safetensors; }

std::optional<DType> dtype_from_name(std::string_view name) {
  if (name.starts_with("torch.")) name.remove_prefix(6);
  for (const auto& i : kInfo)
    if (i.name == name) return i.type;
  struct Alias {
    std::string_view name;
    DType type;
  };
  static constexpr Alias kAliases[] = {
      {"float", DType::Float32}, {"double", DType::Float64}, {"half", DType::Float16},
      {"long", DType::Int64},    {"int", DType::Int32},      {"short", DType::Int16},
  };
  for (const auto& a : kAliases)
    if (a.name == name) return a.type;
  return std::nullopt;
}

std::optional<DType> dtype_from_abbrev(std::string_view abbrev) {
  for (const auto& i : kInfo)
    if (i.abbrev == abbrev) return i.type;
  return std::nullopt;
}

std::optional<DType> dtype_from_safetensors(std::string_view name) {
  for (const auto& i : kInfo)
    if (i.safetensors == name) return i.type;
  return std::nullopt;
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a > b) std::swap(a, b);  // now a < b in enum order
  // float16 with bfloat16 has no exact common 16-bit type: PyTorch picks float32.
  if (a == DType::Float16 && b == DType::BFloat16) return DType::Float32;
  // uint8 with a signed integer needs the next wider signed type.
  if (a == DType::UInt8 && (b == DType::Int8)) return DType::Int16;
  return b;
}

}  // namespace kiln
