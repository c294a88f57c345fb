#pragma once
// Helpers shared by the torch_api tests (test_torch_api*.cpp).
#include <QtTest/QtTest>

#include <string>
#include <string_view>
#include <vector>

#include "core/python/torch_api.h"
#include "test_support.h"

namespace kiln::torchapi_test {
using namespace kiln;
using namespace kiln::torchapi;

inline Tensor F32(std::vector<float> v, Shape s) { return Tensor::from_vector(v, std::move(s)); }
inline Tensor I64(std::vector<int64_t> v, Shape s) { return Tensor::from_vector(v, std::move(s)); }
inline Tensor B(std::vector<bool> v, Shape s) {
  Tensor t = Tensor::empty(s, DType::Bool);
  for (size_t i = 0; i < v.size(); ++i) t.data<bool>()[i] = v[i];
  return t;
}
inline Value L(std::vector<int64_t> v) { return Value::int_list(v); }
// A Python list/tuple as one argument (a braced ValueList would be the argument list itself).
inline Value LT(std::initializer_list<Value> v) { return Value(ValueList(v)); }

inline const Callable& fn(std::string_view name) {
  const Callable* c = find(name);
  if (!c) qFatal("no torch callable %s", std::string(name).c_str());
  return *c;
}

inline ValueList run(std::string_view name, const ValueList& args, const KwargList& kwargs = {}, Mode mode = Mode::Eager,
              CallInfo* info = nullptr) {
  auto r = call(fn(name), args, kwargs, mode, info);
  if (!r) qFatal("%s failed: %s", std::string(name).c_str(), r.status().message().c_str());
  return *r;
}
inline Tensor run1(std::string_view name, const ValueList& args, const KwargList& kwargs = {}, Mode mode = Mode::Eager) {
  return run(name, args, kwargs, mode).at(0).to_tensor();
}
inline std::string error_of(std::string_view name, const ValueList& args, const KwargList& kwargs = {}) {
  auto r = call(fn(name), args, kwargs, Mode::Eager);
  return r ? std::string("<no error>") : r.status().message();
}
inline Value op(py::BinaryOpKind k, const Value& a, const Value& b, bool inplace = false) {
  auto r = binary(k, a, b, Mode::Eager, inplace);
  if (!r) qFatal("binary op failed: %s", r.status().message().c_str());
  return *r;
}

inline bool contains(const std::string& s, const char* needle) { return s.find(needle) != std::string::npos; }

// A meta tensor like t; lists recursively.
inline Value to_meta(const Value& v) {
  if (v.is_tensor()) {
    const Tensor& t = v.to_tensor();
    return Tensor::meta_strided(t.sizes(), t.strides(), t.dtype());
  }
  if (v.is_list()) {
    ValueList l;
    for (const Value& e : v.to_list()) l.push_back(to_meta(e));
    return Value(l);
  }
  return v;
}

inline std::string meta_of(const Value& v) {
  if (v.is_tensor()) return v.to_tensor().type_str();
  if (v.is_list()) {
    std::string s = "(";
    for (const Value& e : v.to_list()) s += meta_of(e) + ",";
    return s + ")";
  }
  return v.repr();
}


}  // namespace kiln::torchapi_test
