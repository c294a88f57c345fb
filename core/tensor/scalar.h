#pragma once
// A Python number as an ATen `Scalar` argument: bool, int or float. Its kind,
// not its value, decides type promotion ("wrapped numbers" in PyTorch).
#include <cstdint>
#include <string>
#include <variant>

#include "core/tensor/dtype.h"

namespace kiln {

class Scalar {
 public:
  Scalar() : v_(int64_t{0}) {}
  Scalar(bool b) : v_(b) {}                // NOLINT
  Scalar(int64_t i) : v_(i) {}             // NOLINT
  Scalar(int i) : v_(int64_t{i}) {}        // NOLINT
  Scalar(double d) : v_(d) {}              // NOLINT

  bool is_bool() const { return v_.index() == 0; }
  bool is_int() const { return v_.index() == 1; }
  bool is_float() const { return v_.index() == 2; }

  double to_double() const {
    switch (v_.index()) {
      case 0: return std::get<0>(v_) ? 1.0 : 0.0;
      case 1: return double(std::get<1>(v_));
      default: return std::get<2>(v_);
    }
  }
  int64_t to_int() const {
    switch (v_.index()) {
      case 0: return std::get<0>(v_) ? 1 : 0;
      case 1: return std::get<1>(v_);
      default: return int64_t(std::get<2>(v_));
    }
  }
  bool to_bool() const { return to_double() != 0.0; }

  // The dtype a wrapped number of this kind takes part in promotion as.
  DType promotion_dtype() const {
    return is_bool() ? DType::Bool : is_int() ? DType::Int64 : kDefaultFloat;
  }

  template <class T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>) return to_bool();
    else if constexpr (is_floating_v<T>) return T(static_cast<float>(to_double()));
    else return static_cast<T>(to_int());
  }

  std::string repr() const;

 private:
  std::variant<bool, int64_t, double> v_;
};

template <>
inline double Scalar::to<double>() const { return to_double(); }

}  // namespace kiln
