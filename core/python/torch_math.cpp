// Python's math module, as far as model code uses it. Results and errors follow
// CPython 3.12 (math domain errors are ValueError; floor/ceil give ints).
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>

#include "core/python/vm.h"

namespace kiln::py {

namespace {

[[noreturn]] void domain_error() { throw PyError("ValueError", "math domain error"); }

void need(const CallArgs& a, size_t n, const char* name) {
  if (a.npos != n)
    throw_type_error(std::string("math.") + name + "() takes exactly " + (n == 1 ? "one argument" : std::to_string(n) + " arguments") +
                     " (" + std::to_string(a.npos) + " given)");
}

double real(const Value& v) { return to_double(v, "must be real number"); }

// A float result: inf from finite input is CPython's OverflowError, nan from non-nan input a domain error.
Value checked(double r, double x) {
  if (std::isnan(r) && !std::isnan(x)) domain_error();
  if (std::isinf(r) && std::isfinite(x)) throw PyError("OverflowError", "math range error");
  return Value(r);
}

int64_t exact_int(const Value& v, const char* name) {
  if (v.is_float()) throw_type_error(std::string("'float' object cannot be interpreted as an integer"));
  (void)name;
  return to_index(v, "argument");
}

Value to_int_checked(double d) {
  if (std::isnan(d)) throw PyError("ValueError", "cannot convert float NaN to integer");
  if (std::isinf(d)) throw PyError("OverflowError", "cannot convert float infinity to integer");
  if (std::fabs(d) >= 9.2e18) throw PyError("OverflowError", "integer does not fit in 64 bits", true);
  return Value(int64_t(d));
}

}  // namespace

void install_math(VM& vm) {
  auto m = make<Module>("math");
  vm.add_module(m);
  auto def = [&](const char* name, BuiltinFn fn) { set_attr_builtin(m->dict, std::string("math.") + name, name, std::move(fn)); };
  auto unary = [&](const char* name, double (*f)(double), bool domain_positive = false) {
    def(name, [name, f, domain_positive](VM&, const CallArgs& a) {
      need(a, 1, name);
      double x = real(a[0]);
      if (domain_positive && x < 0) domain_error();
      return checked(f(x), x);
    });
  };
  m->dict->set(str_value("pi"), Value(std::numbers::pi));
  m->dict->set(str_value("e"), Value(std::numbers::e));
  m->dict->set(str_value("tau"), Value(2 * std::numbers::pi));
  m->dict->set(str_value("inf"), Value(std::numeric_limits<double>::infinity()));
  m->dict->set(str_value("nan"), Value(std::numeric_limits<double>::quiet_NaN()));
  unary("sqrt", [](double x) { return std::sqrt(x); }, true);
  unary("exp", [](double x) { return std::exp(x); });
  unary("expm1", [](double x) { return std::expm1(x); });
  unary("sin", [](double x) { return std::sin(x); });
  unary("cos", [](double x) { return std::cos(x); });
  unary("tan", [](double x) { return std::tan(x); });
  unary("asin", [](double x) { return std::asin(x); });
  unary("acos", [](double x) { return std::acos(x); });
  unary("atan", [](double x) { return std::atan(x); });
  unary("sinh", [](double x) { return std::sinh(x); });
  unary("cosh", [](double x) { return std::cosh(x); });
  unary("tanh", [](double x) { return std::tanh(x); });
  unary("fabs", [](double x) { return std::fabs(x); });
  unary("erf", [](double x) { return std::erf(x); });
  unary("erfc", [](double x) { return std::erfc(x); });
  unary("lgamma", [](double x) { return std::lgamma(x); });
  unary("gamma", [](double x) { return std::tgamma(x); });
  unary("degrees", [](double x) { return x * (180.0 / std::numbers::pi); });
  unary("radians", [](double x) { return x * (std::numbers::pi / 180.0); });
  auto log_of = [](double x) {
    if (x <= 0) domain_error();
    return std::log(x);
  };
  def("log", [log_of](VM&, const CallArgs& a) {
    if (a.npos < 1 || a.npos > 2) throw_type_error("log expected 1 or 2 arguments, got " + std::to_string(a.npos));
    double x = log_of(real(a[0]));
    if (a.npos == 1) return Value(x);
    double b = log_of(real(a[1]));
    if (b == 0) throw PyError("ZeroDivisionError", "float division by zero");
    return Value(x / b);
  });
  def("log2", [](VM&, const CallArgs& a) {
    need(a, 1, "log2");
    double x = real(a[0]);
    if (x <= 0) domain_error();
    return Value(std::log2(x));
  });
  def("log10", [](VM&, const CallArgs& a) {
    need(a, 1, "log10");
    double x = real(a[0]);
    if (x <= 0) domain_error();
    return Value(std::log10(x));
  });
  def("log1p", [](VM&, const CallArgs& a) {
    need(a, 1, "log1p");
    double x = real(a[0]);
    if (x <= -1) domain_error();
    return Value(std::log1p(x));
  });
  def("atan2", [](VM&, const CallArgs& a) {
    need(a, 2, "atan2");
    return Value(std::atan2(real(a[0]), real(a[1])));
  });
  def("hypot", [](VM&, const CallArgs& a) {
    double s = 0;
    for (size_t i = 0; i < a.npos; ++i) s = std::hypot(s, real(a[i]));
    return Value(s);
  });
  def("copysign", [](VM&, const CallArgs& a) {
    need(a, 2, "copysign");
    return Value(std::copysign(real(a[0]), real(a[1])));
  });
  def("fmod", [](VM&, const CallArgs& a) {
    need(a, 2, "fmod");
    double x = real(a[0]), y = real(a[1]);
    if (y == 0 && !std::isnan(x)) domain_error();
    return Value(std::fmod(x, y));
  });
  def("pow", [](VM&, const CallArgs& a) {
    need(a, 2, "pow");
    double x = real(a[0]), y = real(a[1]);
    if (x == 0 && y < 0) domain_error();
    if (x < 0 && std::isfinite(x) && std::isfinite(y) && y != std::floor(y)) domain_error();
    return checked(std::pow(x, y), x);
  });
  for (const char* name : {"floor", "ceil", "trunc"}) {
    std::string n = name;
    def(name, [n](VM&, const CallArgs& a) {
      need(a, 1, n.c_str());
      if (a[0].is_int() || a[0].is_bool()) return Value(a[0].is_bool() ? int64_t(a[0].as_bool()) : a[0].as_int());
      double x = real(a[0]);
      return to_int_checked(n == "floor" ? std::floor(x) : n == "ceil" ? std::ceil(x) : std::trunc(x));
    });
  }
  def("isnan", [](VM&, const CallArgs& a) { need(a, 1, "isnan"); return Value(std::isnan(real(a[0]))); });
  def("isinf", [](VM&, const CallArgs& a) { need(a, 1, "isinf"); return Value(std::isinf(real(a[0]))); });
  def("isfinite", [](VM&, const CallArgs& a) { need(a, 1, "isfinite"); return Value(std::isfinite(real(a[0]))); });
  def("isclose", [](VM&, const CallArgs& a) {
    need(a, 2, "isclose");
    double x = real(a[0]), y = real(a[1]);
    const Value* rt = a.kwarg("rel_tol");
    const Value* at = a.kwarg("abs_tol");
    double rel = rt ? real(*rt) : 1e-09, abs_tol = at ? real(*at) : 0.0;
    if (rel < 0 || abs_tol < 0) throw PyError("ValueError", "tolerances must be non-negative");
    if (x == y) return Value(true);
    if (std::isinf(x) || std::isinf(y)) return Value(false);
    double diff = std::fabs(y - x);
    return Value((diff <= std::fabs(rel * y)) || (diff <= std::fabs(rel * x)) || (diff <= abs_tol));
  });
  def("prod", [](VM& vm, const CallArgs& a) {
    if (a.npos != 1) throw_type_error("prod() takes exactly 1 positional argument");
    const Value* start = a.kwarg("start");
    Value acc = start ? *start : Value(int64_t(1));
    for (const Value& v : vm.to_vector(a[0])) acc = vm.binary(BinaryOpKind::Mul, acc, v);
    return acc;
  });
  def("fsum", [](VM& vm, const CallArgs& a) {
    need(a, 1, "fsum");
    // Neumaier's compensated sum: exact enough for the sums model code takes.
    double sum = 0, comp = 0;
    for (const Value& v : vm.to_vector(a[0])) {
      double x = real(v), t = sum + x;
      comp += std::fabs(sum) >= std::fabs(x) ? (sum - t) + x : (x - t) + sum;
      sum = t;
    }
    return Value(sum + comp);
  });
  def("gcd", [](VM&, const CallArgs& a) {
    int64_t g = 0;
    for (size_t i = 0; i < a.npos; ++i) g = std::gcd(g, exact_int(a[i], "gcd"));
    return Value(g < 0 ? -g : g);
  });
  def("factorial", [](VM&, const CallArgs& a) {
    need(a, 1, "factorial");
    int64_t n = exact_int(a[0], "factorial");
    if (n < 0) throw PyError("ValueError", "factorial() not defined for negative values");
    int64_t r = 1;
    for (int64_t i = 2; i <= n; ++i)
      if (__builtin_mul_overflow(r, i, &r)) throw PyError("OverflowError", "integer result does not fit in 64 bits", true);
    return Value(r);
  });
  def("comb", [](VM&, const CallArgs& a) {
    need(a, 2, "comb");
    int64_t n = exact_int(a[0], "comb"), k = exact_int(a[1], "comb");
    if (n < 0) throw PyError("ValueError", "n must be a non-negative integer");
    if (k < 0) throw PyError("ValueError", "k must be a non-negative integer");
    if (k > n) return Value(int64_t(0));
    k = std::min(k, n - k);
    int64_t r = 1;
    for (int64_t i = 1; i <= k; ++i) {
      // r * (n - k + i) / i stays exact: r is C(n-k+i-1, i-1).
      int64_t num;
      if (__builtin_mul_overflow(r, n - k + i, &num)) throw PyError("OverflowError", "integer result does not fit in 64 bits", true);
      r = num / i;
    }
    return Value(r);
  });
}

}  // namespace kiln::py
