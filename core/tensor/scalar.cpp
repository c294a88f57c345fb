#include "core/tensor/scalar.h"

#include <charconv>
#include <cmath>

namespace kiln {

// Python's repr: shortest text that round-trips, "1.0" rather than "1".
std::string Scalar::repr() const {
  if (is_bool()) return to_bool() ? "True" : "False";
  if (is_int()) return std::to_string(to_int());
  double d = to_double();
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

}  // namespace kiln
