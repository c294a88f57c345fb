#pragma once
// An op argument or result, as ATen's IValue: None, bool, int, float, str,
// dtype, Tensor, or a list of values. Typed accessors throw a user error naming
// what was expected, so kernels can read arguments in one line.
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "core/tensor/scalar.h"
#include "core/tensor/tensor.h"

namespace kiln {

class Value;
using ValueList = std::vector<Value>;

class Value {
 public:
  enum class Kind { None, Bool, Int, Float, String, DType, Tensor, List };

  Value() = default;
  Value(bool b) : v_(b) {}            // NOLINT
  Value(int64_t i) : v_(i) {}         // NOLINT
  Value(int i) : v_(int64_t{i}) {}    // NOLINT
  Value(double d) : v_(d) {}          // NOLINT
  Value(std::string s) : v_(std::move(s)) {}  // NOLINT
  Value(const char* s) : v_(std::string(s)) {}  // NOLINT
  Value(DType t) : v_(t) {}           // NOLINT
  Value(Tensor t) : v_(std::move(t)) {}  // NOLINT
  Value(ValueList l) : v_(std::move(l)) {}  // NOLINT
  Value(const Scalar& s);             // NOLINT
  static Value int_list(const std::vector<int64_t>& v);
  static Value tensor_list(const std::vector<Tensor>& v);

  Kind kind() const { return Kind(v_.index()); }
  bool is_none() const { return kind() == Kind::None; }
  bool is_tensor() const { return kind() == Kind::Tensor; }
  bool is_list() const { return kind() == Kind::List; }
  bool is_int() const { return kind() == Kind::Int; }
  bool is_float() const { return kind() == Kind::Float; }
  bool is_bool() const { return kind() == Kind::Bool; }

  bool to_bool() const;
  int64_t to_int() const;                 // accepts bool
  double to_double() const;               // accepts int and bool
  Scalar to_scalar() const;               // bool, int or float (or a 1-element tensor)
  const std::string& to_string() const;
  DType to_dtype() const;
  const Tensor& to_tensor() const;
  const ValueList& to_list() const;
  // int[] arguments; a single int broadcasts to `n` copies (int[2] kernel_size=3).
  std::vector<int64_t> to_int_list(size_t n = 0) const;
  std::vector<Tensor> to_tensor_list() const;
  // Tensor?[] (index.Tensor): None entries become undefined tensors.
  std::vector<Tensor> to_optional_tensor_list() const;

  // For messages: "Tensor(f32[3, 4])", "[1, 2]", "None", "2.5".
  std::string repr() const;

 private:
  std::variant<std::monostate, bool, int64_t, double, std::string, DType, Tensor, ValueList> v_;
};

std::string_view kind_name(Value::Kind k);

}  // namespace kiln
