#pragma once
// Python ints past int64. Small ints stay inline in Value (the fast path);
// an arithmetic result that leaves int64 becomes a BigInt object, and every
// result here comes back through int_value(), which turns a value that fits
// int64 into a small int again. So a BigInt always holds a value outside
// int64, and two ints are equal only if both are small or both are BigInts.
//
// Multiplication and division are schoolbook, O(n*m) in 32-bit limbs:
// Kiln's programs print a few large ints, they do not do number theory.
// Results past kMaxBigIntBits are refused as outside the subset.
//
// Covered by tests/python/test_python_numbers.cpp (values from CPython).
// BigNum is in bigint.cpp; the Value-level operations in numbers.cpp.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/python/code.h"
#include "core/python/object.h"

namespace kiln::py {

// 2**20 bits (about 315,000 decimal digits); CPython has no such limit.
inline constexpr uint64_t kMaxBigIntBits = uint64_t(1) << 20;

// CPython's default sys.get_int_max_str_digits(): decimal text longer than
// this is refused both ways (str(10**5000), int("1" * 5000)).
inline constexpr size_t kIntMaxStrDigits = 4300;

// Sign and magnitude. The magnitude is little-endian 32-bit limbs with no
// high zero limb; zero is the empty magnitude and is never negative.
class BigNum {
 public:
  BigNum() = default;
  explicit BigNum(int64_t v);
  // An integral finite double, exactly.
  static BigNum from_double(double integral);
  // Digits 0-9 and a-z/A-Z already checked to be < base (2..36).
  static BigNum from_digits(std::string_view digits, int base);
  // 0-35 for 0-9, a-z and A-Z (either case); 99 for anything else.
  static int digit_value(char c);

  bool is_zero() const { return mag_.empty(); }
  bool negative() const { return neg_; }
  bool odd() const { return !mag_.empty() && (mag_[0] & 1) != 0; }
  bool fits_int64() const;
  int64_t to_int64() const;  // only when fits_int64()
  uint64_t bit_length() const;  // of the magnitude
  // The nearest double, ties to even; `overflow` is set when that is past
  // the largest finite double.
  double to_double(bool& overflow) const;
  // '-' if negative, then the magnitude in `base` (2..36, lower-case).
  std::string to_string(int base = 10) const;
  size_t hash() const;

  BigNum operator-() const;
  BigNum abs() const;
  friend BigNum operator+(const BigNum& a, const BigNum& b);
  friend BigNum operator-(const BigNum& a, const BigNum& b);
  friend BigNum operator*(const BigNum& a, const BigNum& b);
  friend bool operator==(const BigNum& a, const BigNum& b) { return a.neg_ == b.neg_ && a.mag_ == b.mag_; }
  static int compare(const BigNum& a, const BigNum& b);  // -1, 0, 1
  // Python's // and %: the quotient rounds toward minus infinity and the
  // remainder takes the divisor's sign. `b` must not be zero.
  static void divmod(const BigNum& a, const BigNum& b, BigNum& quotient, BigNum& remainder);
  BigNum shifted_left(uint64_t bits) const;   // a * 2**bits
  BigNum shifted_right(uint64_t bits) const;  // floor(a / 2**bits)
  enum class BitOp { And, Or, Xor };
  // On the infinite two's complement of both, as Python's & | ^.
  static BigNum bitwise(BitOp op, const BigNum& a, const BigNum& b);

 private:
  using Limbs = std::vector<uint32_t>;
  BigNum(Limbs mag, bool neg);
  void trim();
  bool neg_ = false;
  Limbs mag_;
};

struct BigInt : Object {
  explicit BigInt(BigNum v) : Object(ObjKind::BigInt), value(std::move(v)) {}
  BigNum value;
};

// ---- ints as Values: bool, small int or BigInt (numbers.cpp) ----

// A small int when `n` fits int64, else a BigInt.
Value int_value(BigNum n);
inline bool is_big(const Value& v) { return v.is(ObjKind::BigInt); }
inline bool is_integral(const Value& v) { return v.is_int() || v.is_bool() || is_big(v); }
BigNum big_of(const Value& v);  // of an integral value

// a OP b for integral a and b, at any size: what the small-int fast path
// falls back to. TrueDiv is correctly rounded; Pow with a negative exponent
// is a float, as in Python.
Value int_binary(BinaryOpKind op, const Value& a, const Value& b);
Value int_negate(const Value& v);
Value int_invert(const Value& v);
Value int_abs(const Value& v);
// pow(base, exp, mod) with integral arguments (a negative exp inverts base mod mod).
Value int_pow_mod(const Value& base, const Value& exp, const Value& mod);
// round(v, ndigits) for an int and a negative ndigits: ties to even.
Value int_round(const Value& v, int64_t ndigits);

// The error for an int past kMaxBigIntBits (outside the subset, exit code 3),
// for callers that see it coming before computing it (math.factorial).
[[noreturn]] void int_too_big();

// Three-way comparison of integral values: -1, 0 or 1.
int int_compare(const Value& a, const Value& b);
// Exact comparison of an integral value with a double, as Python compares an
// int with a float (no rounding of the int): -1, 0, 1, or 2 when d is nan.
int int_float_compare(const Value& a, double d);

// float(v): OverflowError "int too large to convert to float" past the double range.
double int_to_double(const Value& v);
// int(d), truncating: ValueError for nan, OverflowError for an infinity.
Value int_from_double(double d);
// str(v): ValueError past kIntMaxStrDigits decimal digits.
std::string int_to_string(const Value& v);
// int(text, base) for a str, with Python's rules (whitespace, sign, base
// prefixes, single underscores between digits, base 0); ValueError otherwise.
Value int_parse(std::string_view text, int base);
// format(v, spec) for an integral value (bool formats as int unless spec is empty).
std::string int_format(const Value& v, std::string_view spec);

// ---- numbers: bool, int of any size and float (numbers.cpp) ----

// a OP b for two numbers, as Python: ints stay exact, a float operand makes
// the int a float (OverflowError past the double range); // and % of floats
// follow CPython's float_divmod; a negative base to a fractional power (a
// complex in Python) is outside the subset.
Value number_binary(BinaryOpKind op, const Value& a, const Value& b);
// -1, 0 or 1, exactly (2**53 + 1 > 2.0**53); 2 when a nan makes them unordered.
int number_compare(const Value& a, const Value& b);

}  // namespace kiln::py
