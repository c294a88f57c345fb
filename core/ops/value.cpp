#include "core/ops/value.h"

namespace kiln {

std::string_view kind_name(Value::Kind k) {
  static constexpr std::string_view kNames[] = {"None", "bool", "int", "float",
                                                "str",  "dtype", "Tensor", "list"};
  return kNames[int(k)];
}

Value::Value(const Scalar& s) {
  if (s.is_bool()) v_ = s.to_bool();
  else if (s.is_int()) v_ = s.to_int();
  else v_ = s.to_double();
}

Value Value::int_list(const std::vector<int64_t>& v) {
  ValueList l;
  l.reserve(v.size());
  for (int64_t i : v) l.emplace_back(i);
  return Value(std::move(l));
}

Value Value::tensor_list(const std::vector<Tensor>& v) {
  ValueList l;
  l.reserve(v.size());
  for (const Tensor& t : v) l.emplace_back(t);
  return Value(std::move(l));
}

#define KILN_EXPECT_KIND(cond, what) \
  KILN_USER_CHECK(cond, "expected " what ", got ", kind_name(kind()), " ", repr())

bool Value::to_bool() const {
  if (kind() == Kind::Int) return std::get<int64_t>(v_) != 0;
  KILN_EXPECT_KIND(kind() == Kind::Bool, "a bool");
  return std::get<bool>(v_);
}

int64_t Value::to_int() const {
  if (kind() == Kind::Bool) return std::get<bool>(v_) ? 1 : 0;
  KILN_EXPECT_KIND(kind() == Kind::Int, "an int");
  return std::get<int64_t>(v_);
}

double Value::to_double() const {
  switch (kind()) {
    case Kind::Bool: return std::get<bool>(v_) ? 1.0 : 0.0;
    case Kind::Int: return double(std::get<int64_t>(v_));
    case Kind::Float: return std::get<double>(v_);
    default: break;
  }
  KILN_EXPECT_KIND(false, "a number");
  return 0;
}

Scalar Value::to_scalar() const {
  switch (kind()) {
    case Kind::Bool: return Scalar(std::get<bool>(v_));
    case Kind::Int: return Scalar(std::get<int64_t>(v_));
    case Kind::Float: return Scalar(std::get<double>(v_));
    case Kind::Tensor: return to_tensor().item();
    default: break;
  }
  KILN_EXPECT_KIND(false, "a Scalar");
  return {};
}

const std::string& Value::to_string() const {
  KILN_EXPECT_KIND(kind() == Kind::String, "a str");
  return std::get<std::string>(v_);
}

DType Value::to_dtype() const {
  if (kind() == Kind::String) {
    auto t = dtype_from_name(std::get<std::string>(v_));
    KILN_USER_CHECK(t, "unknown dtype '", std::get<std::string>(v_), "'");
    return *t;
  }
  KILN_EXPECT_KIND(kind() == Kind::DType, "a dtype");
  return std::get<DType>(v_);
}

const Tensor& Value::to_tensor() const {
  KILN_EXPECT_KIND(kind() == Kind::Tensor, "a Tensor");
  return std::get<Tensor>(v_);
}

const ValueList& Value::to_list() const {
  KILN_EXPECT_KIND(kind() == Kind::List, "a list");
  return std::get<ValueList>(v_);
}

std::vector<int64_t> Value::to_int_list(size_t n) const {
  if (kind() == Kind::Int || kind() == Kind::Bool) return std::vector<int64_t>(n ? n : 1, to_int());
  std::vector<int64_t> out;
  for (const Value& v : to_list()) out.push_back(v.to_int());
  return out;
}

std::vector<Tensor> Value::to_tensor_list() const {
  std::vector<Tensor> out;
  for (const Value& v : to_list()) out.push_back(v.to_tensor());
  return out;
}

std::vector<Tensor> Value::to_optional_tensor_list() const {
  std::vector<Tensor> out;
  for (const Value& v : to_list()) out.push_back(v.is_none() ? Tensor() : v.to_tensor());
  return out;
}

std::string Value::repr() const {
  switch (kind()) {
    case Kind::None: return "None";
    case Kind::Bool: return std::get<bool>(v_) ? "True" : "False";
    case Kind::Int: return std::to_string(std::get<int64_t>(v_));
    case Kind::Float: return Scalar(std::get<double>(v_)).repr();
    case Kind::String: return "'" + std::get<std::string>(v_) + "'";
    case Kind::DType: return "torch." + std::string(dtype_name(std::get<DType>(v_)));
    case Kind::Tensor: {
      const Tensor& t = std::get<Tensor>(v_);
      return t.defined() ? "Tensor(" + t.type_str() + ")" : "Tensor(undefined)";
    }
    case Kind::List: {
      std::string s = "[";
      const auto& l = std::get<ValueList>(v_);
      for (size_t i = 0; i < l.size(); ++i) s += (i ? ", " : "") + l[i].repr();
      return s + "]";
    }
  }
  return "?";
}

}  // namespace kiln
