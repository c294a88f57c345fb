#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

#include "core/tensor/half.h"
#include "core/util/status.h"

namespace kiln {

// Order matters: promotion within a category goes to the later, wider type.
enum class DType : uint8_t {
  Bool,
  UInt8,
  Int8,
  Int16,
  Int32,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64,
};
inline constexpr int kNumDTypes = 10;
inline constexpr DType kDefaultFloat = DType::Float32;

size_t element_size(DType t);
// "float32", as torch prints `torch.float32` without the prefix.
std::string_view dtype_name(DType t);
// "f32", the abbreviation of print_readable's "f32[4, 8]".
std::string_view dtype_abbrev(DType t);
// The safetensors name: "F32", "BF16", "I64", "BOOL".
std::string_view safetensors_name(DType t);
// Accepts "float32", "float", "torch.float32", "half", "long", ...
std::optional<DType> dtype_from_name(std::string_view name);
std::optional<DType> dtype_from_abbrev(std::string_view abbrev);
std::optional<DType> dtype_from_safetensors(std::string_view name);

inline bool is_floating(DType t) { return t >= DType::Float16; }
inline bool is_integral(DType t, bool include_bool) {
  return (t >= DType::UInt8 && t <= DType::Int64) || (include_bool && t == DType::Bool);
}
inline bool is_reduced_float(DType t) { return t == DType::Float16 || t == DType::BFloat16; }

// torch.promote_types: the smallest type both convert to without losing category.
DType promote_types(DType a, DType b);

template <class T> struct dtype_of;
template <> struct dtype_of<bool> { static constexpr DType value = DType::Bool; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::UInt8; };
template <> struct dtype_of<int8_t> { static constexpr DType value = DType::Int8; };
template <> struct dtype_of<int16_t> { static constexpr DType value = DType::Int16; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::Int32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::Int64; };
template <> struct dtype_of<Half> { static constexpr DType value = DType::Float16; };
template <> struct dtype_of<BFloat16> { static constexpr DType value = DType::BFloat16; };
template <> struct dtype_of<float> { static constexpr DType value = DType::Float32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::Float64; };
template <class T> inline constexpr DType dtype_v = dtype_of<T>::value;

// The type arithmetic on T happens in: float for the 16-bit floats, int64 for
// integers (so sums do not overflow early), T otherwise.
template <class T> struct acc_type { using type = T; };
template <> struct acc_type<Half> { using type = float; };
template <> struct acc_type<BFloat16> { using type = float; };
template <> struct acc_type<bool> { using type = int64_t; };
template <> struct acc_type<uint8_t> { using type = int64_t; };
template <> struct acc_type<int8_t> { using type = int64_t; };
template <> struct acc_type<int16_t> { using type = int64_t; };
template <> struct acc_type<int32_t> { using type = int64_t; };
template <class T> using acc_t = typename acc_type<T>::type;

template <class T> inline constexpr bool is_floating_v =
    std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// Calls fn.template operator()<T>() with the C++ type of `t`. Usage:
//   dispatch_all(t, [&]<class T>() { ... });
template <class Fn>
decltype(auto) dispatch_all(DType t, Fn&& fn) {
  switch (t) {
    case DType::Bool: return fn.template operator()<bool>();
    case DType::UInt8: return fn.template operator()<uint8_t>();
    case DType::Int8: return fn.template operator()<int8_t>();
    case DType::Int16: return fn.template operator()<int16_t>();
    case DType::Int32: return fn.template operator()<int32_t>();
    case DType::Int64: return fn.template operator()<int64_t>();
    case DType::Float16: return fn.template operator()<Half>();
    case DType::BFloat16: return fn.template operator()<BFloat16>();
    case DType::Float32: return fn.template operator()<float>();
    case DType::Float64: return fn.template operator()<double>();
  }
  KILN_CHECK(false, "bad dtype ", int(t));
  __builtin_unreachable();
}

// Only float32 and float64: reduced floats are upcast by the caller first.
template <class Fn>
decltype(auto) dispatch_float(DType t, std::string_view op, Fn&& fn) {
  switch (t) {
    case DType::Float32: return fn.template operator()<float>();
    case DType::Float64: return fn.template operator()<double>();
    default: break;
  }
  KILN_FAIL(op, ": expected a float32 or float64 tensor, got ", dtype_name(t));
}

// Every type but the 16-bit floats (those are upcast to float32 by the caller).
template <class Fn>
decltype(auto) dispatch_compute(DType t, std::string_view op, Fn&& fn) {
  switch (t) {
    case DType::Bool: return fn.template operator()<bool>();
    case DType::UInt8: return fn.template operator()<uint8_t>();
    case DType::Int8: return fn.template operator()<int8_t>();
    case DType::Int16: return fn.template operator()<int16_t>();
    case DType::Int32: return fn.template operator()<int32_t>();
    case DType::Int64: return fn.template operator()<int64_t>();
    case DType::Float32: return fn.template operator()<float>();
    case DType::Float64: return fn.template operator()<double>();
    default: break;
  }
  KILN_FAIL(op, ": unsupported dtype ", dtype_name(t));
}

}  // namespace kiln
