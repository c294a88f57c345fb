// Python's math module, as far as model code uses it. Results and errors follow
// CPython 3.12 (math domain errors are ValueError; floor/ceil give ints, and
// the integer functions ints of any size).
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>

#include "core/python/bigint.h"
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

// An int argument of any size, as operator.index() takes it: bools are ints,
// one-element integer tensors too.
Value int_arg(const Value& v) {
  if (v.is_bool()) return Value(int64_t(v.as_bool()));
  if (is_integral(v)) return v;
  if (v.is(ObjKind::Tensor)) return Value(to_index(v, "argument"));
  // Built by append: GCC 12 gives a false -Wrestrict for "'" + std::string&&.
  std::string message = "'";
  message += type_name(v);
  message += "' object cannot be interpreted as an integer";
  throw_type_error(message);
}

bool negative(const Value& i) { return int_compare(i, Value(int64_t(0))) < 0; }
Value mul(const Value& a, const Value& b) { return number_binary(BinaryOpKind::Mul, a, b); }
Value floor_div(const Value& a, const Value& b) { return number_binary(BinaryOpKind::FloorDiv, a, b); }

[[noreturn]] void past_int64(const std::string& what) {
  throw PyError("OverflowError", what + " must not exceed " + std::to_string(std::numeric_limits<int64_t>::max()));
}

// Refuses a result of more than about `bits` bits before computing it, so
// that factorial(10**9) fails at once instead of after a minute of work.
void check_result_bits(double bits) {
  if (bits > double(kMaxBigIntBits)) int_too_big();
}

double log2_of(const Value& i) {
  return is_big(i) ? double(big_of(i).bit_length()) : std::log2(double(std::max<int64_t>(1, i.as_int())));
}

// n * (n-1) * ... * (n-k+1), small factors gathered in an int64 before each
// big multiplication. Each big multiplication is a unit of the step budget.
Value falling_product(VM& vm, const Value& n, int64_t k) {
  Value result(int64_t(1));
  int64_t chunk = 1;
  for (int64_t i = 0; i < k; ++i) {
    Value factor = number_binary(BinaryOpKind::Sub, n, Value(i));
    int64_t next;
    if (!is_big(factor) && !__builtin_mul_overflow(chunk, factor.as_int(), &next)) {
      chunk = next;
      continue;
    }
    vm.charge_step();
    result = mul(result, Value(chunk));
    chunk = 1;
    if (is_big(factor)) result = mul(result, factor);
    else chunk = factor.as_int();
  }
  return mul(result, Value(chunk));
}

Value gcd_of(VM& vm, Value a, Value b) {
  a = int_abs(a);
  b = int_abs(b);
  while (!(b.is_int() && b.as_int() == 0)) {
    vm.charge_step();
    Value r = number_binary(BinaryOpKind::Mod, a, b);
    a = std::move(b);
    b = std::move(r);
  }
  return a;
}

Value isqrt_of(VM& vm, const Value& n) {
  if (negative(n)) throw PyError("ValueError", "isqrt() argument must be nonnegative");
  if (!is_big(n)) {
    auto x = uint64_t(n.as_int());
    auto r = uint64_t(std::sqrt(double(x)));
    auto square_above = [x](uint64_t y) {
      uint64_t sq;
      return __builtin_mul_overflow(y, y, &sq) || sq > x;
    };
    while (square_above(r)) --r;
    while (!square_above(r + 1)) ++r;
    return Value(int64_t(r));
  }
  // Newton's iteration from above: it falls to floor(sqrt(n)) and stops there.
  Value x = number_binary(BinaryOpKind::LShift, Value(int64_t(1)), Value(int64_t((big_of(n).bit_length() + 1) / 2)));
  for (;;) {
    vm.charge_step();
    Value y = floor_div(number_binary(BinaryOpKind::Add, x, floor_div(n, x)), Value(int64_t(2)));
    if (int_compare(y, x) >= 0) return x;
    x = std::move(y);
  }
}

// f(v) for a positive number, as CPython's loghelper: an int too large for
// a double is taken as m * 2**e (m in [0.5, 1)) and gives f(m) + f(2) * e.
double log_of(const Value& v, double (*f)(double)) {
  if (is_big(v)) {
    const BigNum& n = v.as<BigInt>()->value;
    if (n.negative()) domain_error();
    bool overflow = false;
    double d = n.to_double(overflow);
    if (!overflow) return f(d);
    // The top 64 bits, the lowest of them set when any bit below was: rounding
    // that to a double rounds n correctly.
    uint64_t e = n.bit_length(), shift = e - 64;
    BigNum top = n.shifted_right(shift);
    if (!(top.shifted_left(shift) == n)) top = BigNum::bitwise(BigNum::BitOp::Or, top, BigNum(1));
    bool unused = false;
    double m = std::ldexp(top.to_double(unused), -64);
    return f(m) + f(2.0) * double(e);
  }
  double x = real(v);
  if (x <= 0) domain_error();
  return f(x);
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
  constexpr double (*ln)(double) = [](double x) { return std::log(x); };
  def("log", [ln](VM&, const CallArgs& a) {
    if (a.npos < 1 || a.npos > 2) throw_type_error("log expected 1 or 2 arguments, got " + std::to_string(a.npos));
    double x = log_of(a[0], ln);
    if (a.npos == 1) return Value(x);
    double b = log_of(a[1], ln);
    if (b == 0) throw PyError("ZeroDivisionError", "float division by zero");
    return Value(x / b);
  });
  def("log2", [](VM&, const CallArgs& a) {
    need(a, 1, "log2");
    return Value(log_of(a[0], [](double x) { return std::log2(x); }));
  });
  def("log10", [](VM&, const CallArgs& a) {
    need(a, 1, "log10");
    return Value(log_of(a[0], [](double x) { return std::log10(x); }));
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
      if (is_integral(a[0])) return int_arg(a[0]);
      double x = real(a[0]);
      return int_from_double(n == "floor" ? std::floor(x) : n == "ceil" ? std::ceil(x) : std::trunc(x));
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
  def("gcd", [](VM& vm, const CallArgs& a) {
    Value g(int64_t(0));
    for (size_t i = 0; i < a.npos; ++i) g = gcd_of(vm, g, int_arg(a[i]));
    return g;
  });
  def("lcm", [](VM& vm, const CallArgs& a) {
    Value l(int64_t(1));
    for (size_t i = 0; i < a.npos; ++i) {
      Value x = int_arg(a[i]);
      if (int_compare(x, Value(int64_t(0))) == 0 || int_compare(l, Value(int64_t(0))) == 0) {
        l = Value(int64_t(0));
        continue;
      }
      l = int_abs(mul(floor_div(l, gcd_of(vm, l, x)), x));
    }
    return l;
  });
  def("isqrt", [](VM& vm, const CallArgs& a) {
    need(a, 1, "isqrt");
    return isqrt_of(vm, int_arg(a[0]));
  });
  def("factorial", [](VM& vm, const CallArgs& a) {
    need(a, 1, "factorial");
    Value n = int_arg(a[0]);
    if (negative(n)) throw PyError("ValueError", "factorial() not defined for negative values");
    if (is_big(n))
      throw PyError("OverflowError", "factorial() argument should not exceed " +
                                         std::to_string(std::numeric_limits<int64_t>::max()));
    check_result_bits(std::lgamma(double(n.as_int()) + 1) / std::numbers::ln2);
    return falling_product(vm, n, std::max<int64_t>(n.as_int() - 1, 0));
  });
  def("perm", [](VM& vm, const CallArgs& a) {
    if (a.npos < 1 || a.npos > 2) throw_type_error("perm expected at most 2 arguments, got " + std::to_string(a.npos));
    Value n = int_arg(a[0]);
    if (negative(n)) throw PyError("ValueError", "n must be a non-negative integer");
    Value k = a.npos < 2 || a[1].is_none() ? n : int_arg(a[1]);
    if (negative(k)) throw PyError("ValueError", "k must be a non-negative integer");
    if (int_compare(k, n) > 0) return Value(int64_t(0));
    if (is_big(k)) past_int64("k");
    int64_t kk = k.as_int();
    // log2(n! / (n-k)!) <= k * log2(n)
    if (!is_big(n)) check_result_bits((std::lgamma(double(n.as_int()) + 1) - std::lgamma(double(n.as_int() - kk) + 1)) / std::numbers::ln2);
    else check_result_bits(double(kk) * (log2_of(n) - 1));
    return falling_product(vm, n, kk);
  });
  def("comb", [](VM& vm, const CallArgs& a) {
    need(a, 2, "comb");
    Value n = int_arg(a[0]), k = int_arg(a[1]);
    if (negative(n)) throw PyError("ValueError", "n must be a non-negative integer");
    if (negative(k)) throw PyError("ValueError", "k must be a non-negative integer");
    if (int_compare(k, n) > 0) return Value(int64_t(0));
    Value rest = number_binary(BinaryOpKind::Sub, n, k);
    if (int_compare(rest, k) < 0) k = rest;
    if (is_big(k)) past_int64("min(n - k, k)");
    int64_t kk = k.as_int();
    if (!is_big(n)) {
      double nn = double(n.as_int());
      check_result_bits((std::lgamma(nn + 1) - std::lgamma(double(kk) + 1) - std::lgamma(nn - double(kk) + 1)) / std::numbers::ln2);
    } else {
      check_result_bits(double(kk) * (log2_of(n) - 1) - std::lgamma(double(kk) + 1) / std::numbers::ln2);
    }
    // C(n, i) = C(n, i-1) * (n-k+i) / i, exact at every step.
    Value r(int64_t(1));
    Value base = number_binary(BinaryOpKind::Sub, n, k);
    for (int64_t i = 1; i <= kk; ++i) {
      vm.charge_step();
      r = floor_div(mul(r, number_binary(BinaryOpKind::Add, base, Value(i))), Value(i));
    }
    return r;
  });
}

}  // namespace kiln::py
