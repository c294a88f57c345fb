// Python's arithmetic on numbers: ints of any size (small ints inline, BigInt
// past int64), floats and bools, with CPython's results and error messages.
#include <cmath>
#include <utility>

#include "core/python/bigint.h"
#include "core/util/floor_div.h"
#include "core/util/pyformat.h"

namespace kiln::py {

namespace {

int64_t int_of(const Value& v) { return v.is_bool() ? int64_t(v.as_bool()) : v.as_int(); }
double float_of(const Value& v) { return v.is_float() ? v.as_float() : int_to_double(v); }

// CPython's float_divmod: the quotient is computed from fmod so that
// a == q * b + r holds as closely as doubles allow (1 // 0.1 is 9.0, not 10.0).
std::pair<double, double> float_divmod(double a, double b, bool want_div) {
  if (b == 0) throw PyError("ZeroDivisionError", want_div ? "float floor division by zero" : "float modulo");
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0) {
    if ((b < 0) != (mod < 0)) {
      mod += b;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, b);
  }
  double floordiv;
  if (div != 0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  } else {
    floordiv = std::copysign(0.0, a / b);
  }
  return {floordiv, mod};
}

Value float_power(double x, double y) {
  if (x == 0 && y < 0) throw PyError("ZeroDivisionError", "0.0 cannot be raised to a negative power");
  if (x < 0 && std::isfinite(x) && std::isfinite(y) && y != std::floor(y))
    throw_unsupported("complex result of a fractional power of a negative number");
  double r = std::pow(x, y);
  if (std::isinf(r) && std::isfinite(x) && std::isfinite(y))
    throw PyError("OverflowError", "(34, 'Numerical result out of range')");
  return Value(r);
}

// Small ints take these paths; a result that leaves int64 (or an operand
// that is already a BigInt) goes to int_binary.
Value small_int_binary(BinaryOpKind op, const Value& a, const Value& b) {
  int64_t x = int_of(a), y = int_of(b), r = 0;
  switch (op) {
    case BinaryOpKind::Add: if (__builtin_add_overflow(x, y, &r)) break; return Value(r);
    case BinaryOpKind::Sub: if (__builtin_sub_overflow(x, y, &r)) break; return Value(r);
    case BinaryOpKind::Mul: if (__builtin_mul_overflow(x, y, &r)) break; return Value(r);
    case BinaryOpKind::TrueDiv: {
      if (y == 0) throw PyError("ZeroDivisionError", "division by zero");
      constexpr int64_t kExact = int64_t(1) << 53;  // both exact as doubles: one rounding, as CPython
      if (x < -kExact || x > kExact || y < -kExact || y > kExact) break;
      return Value(double(x) / double(y));
    }
    case BinaryOpKind::FloorDiv:
      if (y == 0) throw PyError("ZeroDivisionError", "integer division or modulo by zero");
      if (y == -1) {
        if (x == INT64_MIN) break;
        return Value(-x);
      }
      return Value(floor_div(x, y));
    case BinaryOpKind::Mod:
      if (y == 0) throw PyError("ZeroDivisionError", "integer modulo by zero");
      if (y == -1) return Value(int64_t(0));
      return Value(floor_mod(x, y));
    case BinaryOpKind::Pow: {
      if (y < 0) break;
      int64_t result = 1, base = x;
      bool overflowed = false;
      for (int64_t e = y; e && !overflowed; ) {
        if (e & 1) overflowed = __builtin_mul_overflow(result, base, &result);
        e >>= 1;
        if (e && !overflowed) overflowed = __builtin_mul_overflow(base, base, &base);
      }
      if (overflowed) break;
      return Value(result);
    }
    case BinaryOpKind::LShift:
      if (y < 0) throw PyError("ValueError", "negative shift count");
      if (x == 0) return Value(int64_t(0));
      if (y >= 63 || (x << y) >> y != x) break;
      return Value(int64_t(uint64_t(x) << y));
    case BinaryOpKind::RShift:
      if (y < 0) throw PyError("ValueError", "negative shift count");
      return Value(y >= 63 ? (x < 0 ? int64_t(-1) : int64_t(0)) : x >> y);
    case BinaryOpKind::And: return a.is_bool() && b.is_bool() ? Value(bool(x & y)) : Value(x & y);
    case BinaryOpKind::Or: return a.is_bool() && b.is_bool() ? Value(bool(x | y)) : Value(x | y);
    case BinaryOpKind::Xor: return a.is_bool() && b.is_bool() ? Value(bool(x ^ y)) : Value(x ^ y);
    case BinaryOpKind::MatMul: break;
  }
  return int_binary(op, a, b);
}

[[noreturn]] void too_big() {
  throw_unsupported("an int of more than " + std::to_string(kMaxBigIntBits) +
                    " bits (Kiln's limit for ints; CPython has none)");
}

void check_bits(uint64_t bits) {
  if (bits > kMaxBigIntBits) too_big();
}

[[noreturn]] void zero_division(const char* message) { throw PyError("ZeroDivisionError", message); }

// CPython's long_true_divide: correctly rounded a / b.
double true_divide(const BigNum& a, const BigNum& b) {
  if (b.is_zero()) zero_division("division by zero");
  bool negative = a.negative() != b.negative();
  if (a.is_zero()) return negative ? -0.0 : 0.0;
  bool overflow = false;
  if (a.bit_length() <= 53 && b.bit_length() <= 53) return a.to_double(overflow) / b.to_double(overflow);
  // Scale so the integer quotient has 65 to 67 bits, then fold the remainder
  // into its lowest bit: converting that to double rounds correctly.
  int64_t shift = int64_t(b.bit_length()) - int64_t(a.bit_length()) + 66;
  BigNum num = a.abs(), den = b.abs(), q, r;
  if (shift >= 0) num = num.shifted_left(uint64_t(shift));
  else den = den.shifted_left(uint64_t(-shift));
  BigNum::divmod(num, den, q, r);
  if (!r.is_zero() && !q.odd()) q = q + BigNum(1);
  double d = std::ldexp(q.to_double(overflow), int(std::clamp<int64_t>(-shift, -100000, 100000)));
  if (std::isinf(d)) throw PyError("OverflowError", "integer division result too large for a float");
  return negative ? -d : d;
}

Value int_power(const BigNum& base, const BigNum& exp) {
  if (exp.negative()) return float_power(int_to_double(int_value(base)), int_to_double(int_value(exp)));
  if (base.is_zero() || BigNum::compare(base.abs(), BigNum(1)) == 0) {
    if (exp.is_zero()) return Value(int64_t(1));
    if (base.is_zero()) return Value(int64_t(0));
    return Value(int64_t(base.negative() && exp.odd() ? -1 : 1));
  }
  // Refuse before computing: the result has about exp * log2|base| bits.
  bool overflow = false;
  double log2_base = base.bit_length() > 1000 ? double(base.bit_length()) : std::log2(std::fabs(base.to_double(overflow)));
  if (exp.bit_length() > 32 || double(exp.to_int64()) * log2_base > double(kMaxBigIntBits) + 1) too_big();
  uint64_t e = uint64_t(exp.to_int64());
  BigNum result(1), square = base;
  while (e) {
    if (e & 1) result = result * square;
    e >>= 1;
    if (e) square = square * square;
  }
  return int_value(std::move(result));
}

// x mod |m| in [0, |m|).
BigNum mod_positive(const BigNum& x, const BigNum& m) {
  BigNum q, r;
  BigNum::divmod(x, m.abs(), q, r);
  return r;
}

// The inverse of a modulo m (m > 0), by the extended Euclidean algorithm.
BigNum mod_inverse(const BigNum& a, const BigNum& m) {
  BigNum old_r = mod_positive(a, m), r = m, old_s(1), s(0);
  while (!r.is_zero()) {
    BigNum q, rem;
    BigNum::divmod(old_r, r, q, rem);
    old_r = std::exchange(r, rem);
    old_s = std::exchange(s, old_s - q * s);
  }
  if (BigNum::compare(old_r, BigNum(1)) != 0) throw PyError("ValueError", "base is not invertible for the given modulus");
  return mod_positive(old_s, m);
}

}  // namespace

Value int_value(BigNum n) {
  if (n.fits_int64()) return Value(n.to_int64());
  check_bits(n.bit_length());
  return Value(make<BigInt>(std::move(n)));
}

BigNum big_of(const Value& v) {
  if (v.is_int()) return BigNum(v.as_int());
  if (v.is_bool()) return BigNum(int64_t(v.as_bool()));
  KILN_CHECK(is_big(v), "big_of() of a ", type_name(v));
  return v.as<BigInt>()->value;
}

Value int_binary(BinaryOpKind op, const Value& a, const Value& b) {
  BigNum x = big_of(a), y = big_of(b);
  switch (op) {
    case BinaryOpKind::Add: return int_value(x + y);
    case BinaryOpKind::Sub: return int_value(x - y);
    case BinaryOpKind::Mul:
      check_bits(x.bit_length() + y.bit_length() - 1);
      return int_value(x * y);
    case BinaryOpKind::TrueDiv: return Value(true_divide(x, y));
    case BinaryOpKind::FloorDiv:
    case BinaryOpKind::Mod: {
      if (y.is_zero())
        zero_division(op == BinaryOpKind::Mod ? "integer modulo by zero" : "integer division or modulo by zero");
      BigNum q, r;
      BigNum::divmod(x, y, q, r);
      return int_value(op == BinaryOpKind::Mod ? r : q);
    }
    case BinaryOpKind::Pow: return int_power(x, y);
    case BinaryOpKind::LShift:
    case BinaryOpKind::RShift: {
      if (y.negative()) throw PyError("ValueError", "negative shift count");
      if (x.is_zero()) return Value(int64_t(0));
      bool left = op == BinaryOpKind::LShift;
      if (!y.fits_int64() || (left && x.bit_length() + uint64_t(y.to_int64()) > kMaxBigIntBits)) {
        if (left) too_big();
        return Value(int64_t(x.negative() ? -1 : 0));
      }
      uint64_t n = uint64_t(y.to_int64());
      return int_value(left ? x.shifted_left(n) : x.shifted_right(n));
    }
    case BinaryOpKind::And: return int_value(BigNum::bitwise(BigNum::BitOp::And, x, y));
    case BinaryOpKind::Or: return int_value(BigNum::bitwise(BigNum::BitOp::Or, x, y));
    case BinaryOpKind::Xor: return int_value(BigNum::bitwise(BigNum::BitOp::Xor, x, y));
    case BinaryOpKind::MatMul: break;
  }
  throw_type_error(std::string("unsupported operand type(s) for ") + binary_op_symbol(op) + ": '" + type_name(a) +
                   "' and '" + type_name(b) + "'");
}

Value int_negate(const Value& v) { return int_value(-big_of(v)); }
Value int_invert(const Value& v) { return int_value(-big_of(v) - BigNum(1)); }
Value int_abs(const Value& v) { return int_value(big_of(v).abs()); }

Value int_pow_mod(const Value& base, const Value& exp, const Value& mod) {
  BigNum m = big_of(mod), e = big_of(exp), b = big_of(base);
  if (m.is_zero()) throw PyError("ValueError", "pow() 3rd argument cannot be 0");
  if (e.negative()) {
    b = mod_inverse(b, m.abs());
    e = -e;
  }
  BigNum result = mod_positive(BigNum(1), m), square = mod_positive(b, m);
  while (!e.is_zero()) {
    if (e.odd()) result = mod_positive(result * square, m);
    e = e.shifted_right(1);
    if (!e.is_zero()) square = mod_positive(square * square, m);
  }
  // Python's result takes the modulus' sign.
  if (m.negative() && !result.is_zero()) result = result + m;
  return int_value(std::move(result));
}

Value int_round(const Value& v, int64_t ndigits) {
  BigNum x = big_of(v);
  if (ndigits >= 0) return int_value(x);
  // Past the digits x has, everything rounds to 0 (10^k > 2|x|).
  if (uint64_t(-ndigits) > x.bit_length() / 3 + 2) return Value(int64_t(0));
  BigNum power(1);
  for (int64_t k = 0; k < -ndigits; ++k) power = power * BigNum(10);
  BigNum q, r;
  BigNum::divmod(x, power, q, r);
  int c = BigNum::compare(r + r, power);
  if (c > 0 || (c == 0 && q.odd())) q = q + BigNum(1);
  return int_value(q * power);
}

int int_compare(const Value& a, const Value& b) {
  if (!is_big(a) && !is_big(b)) {
    int64_t x = a.is_bool() ? a.as_bool() : a.as_int(), y = b.is_bool() ? b.as_bool() : b.as_int();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  return BigNum::compare(big_of(a), big_of(b));
}

int int_float_compare(const Value& a, double d) {
  if (std::isnan(d)) return 2;
  if (std::isinf(d)) return d > 0 ? -1 : 1;
  if (!is_big(a)) {
    int64_t x = a.is_bool() ? a.as_bool() : a.as_int();
    if (x >= -(int64_t(1) << 53) && x <= (int64_t(1) << 53)) {  // exact as a double
      double dx = double(x);
      return dx < d ? -1 : dx > d ? 1 : 0;
    }
  }
  double whole = std::floor(d);
  int c = BigNum::compare(big_of(a), BigNum::from_double(whole));
  if (c != 0) return c;
  return d > whole ? -1 : 0;
}

double int_to_double(const Value& v) {
  if (v.is_int()) return double(v.as_int());
  if (v.is_bool()) return v.as_bool() ? 1.0 : 0.0;
  bool overflow = false;
  double d = big_of(v).to_double(overflow);
  if (overflow) throw PyError("OverflowError", "int too large to convert to float");
  return d;
}

void int_too_big() { too_big(); }

Value int_from_double(double d) {
  if (std::isnan(d)) throw PyError("ValueError", "cannot convert float NaN to integer");
  if (std::isinf(d)) throw PyError("OverflowError", "cannot convert float infinity to integer");
  double whole = std::trunc(d);
  if (whole >= -9223372036854775808.0 && whole < 9223372036854775808.0) return Value(int64_t(whole));
  return int_value(BigNum::from_double(whole));
}

namespace {

// Decimal text of |n|, refused past CPython's digit limit.
Expected<std::string> decimal_magnitude(const BigNum& n) {
  // 10^4300 has 14285 bits: anything longer has too many digits for sure.
  std::string digits = n.bit_length() > 14300 ? std::string(kIntMaxStrDigits + 1, '0') : n.abs().to_string(10);
  if (digits.size() > kIntMaxStrDigits)
    return Status::error("Exceeds the limit (" + std::to_string(kIntMaxStrDigits) +
                         " digits) for integer string conversion; use sys.set_int_max_str_digits() to increase the limit");
  return digits;
}

}  // namespace

std::string int_to_string(const Value& v) {
  if (v.is_int()) return std::to_string(v.as_int());
  if (v.is_bool()) return v.as_bool() ? "1" : "0";
  const BigNum& n = v.as<BigInt>()->value;
  Expected<std::string> digits = decimal_magnitude(n);
  if (!digits.ok()) throw PyError("ValueError", digits.status().message());
  return n.negative() ? "-" + *digits : *digits;
}

Value int_parse(std::string_view text, int base) {
  if (base != 0 && (base < 2 || base > 36)) throw PyError("ValueError", "int() base must be >= 2 and <= 36, or 0");
  auto invalid = [&]() -> Value {
    std::string shown(text.substr(0, 200));
    throw PyError("ValueError", "invalid literal for int() with base " + std::to_string(base) + ": " + py_str_repr(shown));
  };
  std::string_view s = text;
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  int radix = base;
  bool prefixed = false;
  if (s.size() >= 2 && s[0] == '0') {
    char p = char(s[1] | 0x20);
    int prefix_base = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
    if (prefix_base && (base == 0 || base == prefix_base)) {
      radix = prefix_base;
      prefixed = true;
      s.remove_prefix(2);
      if (!s.empty() && s[0] == '_') s.remove_prefix(1);  // "0x_ff" is allowed
    }
  }
  if (radix == 0) radix = 10;
  std::string digits;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      if (i == 0 || i + 1 == s.size() || s[i + 1] == '_') return invalid();
      continue;
    }
    if (BigNum::digit_value(s[i]) >= radix) return invalid();
    digits += s[i];
  }
  if (digits.empty()) return invalid();
  // Base 0 reads decimal as Python source does: no leading zeros on a nonzero value.
  if (base == 0 && !prefixed && digits[0] == '0' && digits.find_first_not_of('0') != std::string::npos) return invalid();
  if (!std::has_single_bit(unsigned(radix)) && digits.size() > kIntMaxStrDigits)
    throw PyError("ValueError", "Exceeds the limit (" + std::to_string(kIntMaxStrDigits) +
                                    " digits) for integer string conversion: value has " + std::to_string(digits.size()) +
                                    " digits; use sys.set_int_max_str_digits() to increase the limit");
  if (double(digits.size()) * std::log2(double(radix)) > double(kMaxBigIntBits) + 64) too_big();
  BigNum n = BigNum::from_digits(digits, radix);
  return int_value(negative ? -n : n);
}

std::string int_format(const Value& v, std::string_view spec) {
  Expected<std::string> r = std::string();
  if (v.is_bool()) {
    r = py_format_bool(v.as_bool(), spec);
  } else if (v.is_int()) {
    r = py_format_int(v.as_int(), spec);
  } else {
    const BigNum& n = v.as<BigInt>()->value;
    PyIntParts parts;
    parts.negative = n.negative();
    bool overflow = false;
    parts.as_double = n.to_double(overflow);
    if (overflow) parts.as_double = HUGE_VAL;
    parts.magnitude_digits = [&n](int base) -> Expected<std::string> {
      if (base == 10) return decimal_magnitude(n);
      return n.abs().to_string(base);
    };
    r = py_format_int(parts, spec);
  }
  if (r.ok()) return *r;
  const std::string& m = r.status().message();
  bool overflow =
      m.find("too large to convert") != std::string::npos || m.find("not in range(0x110000)") != std::string::npos;
  throw PyError(overflow ? "OverflowError" : "ValueError", m);
}

Value number_binary(BinaryOpKind op, const Value& a, const Value& b) {
  if (!a.is_float() && !b.is_float()) {
    if (is_big(a) || is_big(b)) return int_binary(op, a, b);
    return small_int_binary(op, a, b);
  }
  double x = float_of(a), y = float_of(b);
  switch (op) {
    case BinaryOpKind::Add: return Value(x + y);
    case BinaryOpKind::Sub: return Value(x - y);
    case BinaryOpKind::Mul: return Value(x * y);
    case BinaryOpKind::TrueDiv:
      if (y == 0) throw PyError("ZeroDivisionError", "float division by zero");
      return Value(x / y);
    case BinaryOpKind::FloorDiv: return Value(float_divmod(x, y, true).first);
    case BinaryOpKind::Mod: return Value(float_divmod(x, y, false).second);
    case BinaryOpKind::Pow: return float_power(x, y);
    default: break;
  }
  throw_type_error(std::string("unsupported operand type(s) for ") + binary_op_symbol(op) + ": '" + type_name(a) +
                   "' and '" + type_name(b) + "'");
}

int number_compare(const Value& a, const Value& b) {
  if (!a.is_float() && !b.is_float()) return int_compare(a, b);
  if (a.is_float() && b.is_float()) {
    double x = a.as_float(), y = b.as_float();
    if (std::isnan(x) || std::isnan(y)) return 2;  // unordered: every comparison false
    return x < y ? -1 : x > y ? 1 : 0;
  }
  // Exact, as Python: the int is not rounded to a double first.
  if (b.is_float()) return int_float_compare(a, b.as_float());
  int c = int_float_compare(b, a.as_float());
  return c == 2 ? 2 : -c;
}

}  // namespace kiln::py
