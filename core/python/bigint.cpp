#include "core/python/bigint.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>

namespace kiln::py {

namespace {

using Limbs = std::vector<uint32_t>;
constexpr uint64_t kLimbBase = uint64_t(1) << 32;

void trim_limbs(Limbs& m) {
  while (!m.empty() && m.back() == 0) m.pop_back();
}

int mag_compare(const Limbs& a, const Limbs& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  for (size_t i = a.size(); i-- > 0;)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}

Limbs mag_add(const Limbs& a, const Limbs& b) {
  const Limbs& x = a.size() >= b.size() ? a : b;
  const Limbs& y = a.size() >= b.size() ? b : a;
  Limbs out(x.size() + 1);
  uint64_t carry = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    uint64_t sum = uint64_t(x[i]) + (i < y.size() ? y[i] : 0) + carry;
    out[i] = uint32_t(sum);
    carry = sum >> 32;
  }
  out[x.size()] = uint32_t(carry);
  trim_limbs(out);
  return out;
}

// a - b for a >= b.
Limbs mag_sub(const Limbs& a, const Limbs& b) {
  Limbs out(a.size());
  int64_t borrow = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    int64_t d = int64_t(a[i]) - (i < b.size() ? int64_t(b[i]) : 0) - borrow;
    borrow = d < 0;
    out[i] = uint32_t(d + (borrow ? int64_t(kLimbBase) : 0));
  }
  trim_limbs(out);
  return out;
}

Limbs mag_mul(const Limbs& a, const Limbs& b) {
  if (a.empty() || b.empty()) return {};
  Limbs out(a.size() + b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    uint64_t carry = 0;
    for (size_t j = 0; j < b.size(); ++j) {
      // (2^32-1)^2 + 2 * (2^32-1) is exactly 2^64-1: no overflow.
      uint64_t t = uint64_t(a[i]) * b[j] + out[i + j] + carry;
      out[i + j] = uint32_t(t);
      carry = t >> 32;
    }
    out[i + b.size()] = uint32_t(carry);
  }
  trim_limbs(out);
  return out;
}

// a = a * mul + add.
void mag_mul_add_small(Limbs& a, uint32_t mul, uint32_t add) {
  uint64_t carry = add;
  for (uint32_t& limb : a) {
    uint64_t t = uint64_t(limb) * mul + carry;
    limb = uint32_t(t);
    carry = t >> 32;
  }
  if (carry) a.push_back(uint32_t(carry));
}

// a = a / d in place; returns a % d.
uint32_t mag_divmod_small(Limbs& a, uint32_t d) {
  uint64_t rem = 0;
  for (size_t i = a.size(); i-- > 0;) {
    uint64_t cur = (rem << 32) | a[i];
    a[i] = uint32_t(cur / d);
    rem = cur % d;
  }
  trim_limbs(a);
  return uint32_t(rem);
}

// u = q * v + r with 0 <= r < v (v not zero): Knuth's algorithm D, as written
// in Hacker's Delight (divmnu64) for 32-bit digits.
void mag_divmod(const Limbs& u, const Limbs& v, Limbs& q, Limbs& r) {
  if (mag_compare(u, v) < 0) {
    q.clear();
    r = u;
    return;
  }
  if (v.size() == 1) {
    q = u;
    uint32_t rem = mag_divmod_small(q, v[0]);
    r.clear();
    if (rem) r.push_back(rem);
    return;
  }
  const size_t n = v.size(), m = u.size() - n;
  // Normalize so the divisor's top limb has its high bit set; the quotient
  // digit estimate is then off by at most two.
  const int s = std::countl_zero(v.back());
  auto shifted = [s](const Limbs& x, size_t i) {
    uint64_t lower = i > 0 ? x[i - 1] : 0;
    return uint32_t((uint64_t(x[i]) << s) | (lower >> (32 - s)));
  };
  Limbs vn(n), un(u.size() + 1);
  for (size_t i = 0; i < n; ++i) vn[i] = shifted(v, i);
  for (size_t i = 0; i < u.size(); ++i) un[i] = shifted(u, i);
  un[u.size()] = uint32_t(uint64_t(u.back()) >> (32 - s));

  q.assign(m + 1, 0);
  for (size_t j = m + 1; j-- > 0;) {
    uint64_t num = (uint64_t(un[j + n]) << 32) | un[j + n - 1];
    uint64_t qhat = num / vn[n - 1], rhat = num % vn[n - 1];
    while (qhat >= kLimbBase || qhat * vn[n - 2] > ((rhat << 32) | un[j + n - 2])) {
      --qhat;
      rhat += vn[n - 1];
      if (rhat >= kLimbBase) break;
    }
    int64_t borrow = 0, t = 0;
    for (size_t i = 0; i < n; ++i) {
      uint64_t p = qhat * vn[i];
      t = int64_t(un[i + j]) - borrow - int64_t(p & 0xffffffffu);
      un[i + j] = uint32_t(t);
      borrow = int64_t(p >> 32) - (t >> 32);
    }
    t = int64_t(un[j + n]) - borrow;
    un[j + n] = uint32_t(t);
    if (t < 0) {  // qhat was one too large: add the divisor back
      --qhat;
      uint64_t carry = 0;
      for (size_t i = 0; i < n; ++i) {
        uint64_t sum = uint64_t(un[i + j]) + vn[i] + carry;
        un[i + j] = uint32_t(sum);
        carry = sum >> 32;
      }
      un[j + n] = uint32_t(un[j + n] + carry);
    }
    q[j] = uint32_t(qhat);
  }
  trim_limbs(q);
  r.assign(n, 0);
  for (size_t i = 0; i < n; ++i) r[i] = uint32_t(((uint64_t(un[i + 1]) << 32) | un[i]) >> s);
  trim_limbs(r);
}

// The largest power of `base` below 2^32, and its exponent.
std::pair<uint32_t, int> limb_power(int base) {
  uint64_t power = uint64_t(base);
  int digits = 1;
  while (power * uint64_t(base) < kLimbBase) {
    power *= uint64_t(base);
    ++digits;
  }
  return {uint32_t(power), digits};
}

}  // namespace

// ---- BigNum ----

int BigNum::digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'z') return c - 'a' + 10;
  if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
  return 99;
}

BigNum::BigNum(int64_t v) : neg_(v < 0) {
  uint64_t m = neg_ ? uint64_t(0) - uint64_t(v) : uint64_t(v);
  for (; m; m >>= 32) mag_.push_back(uint32_t(m));
}

BigNum::BigNum(Limbs mag, bool neg) : neg_(neg), mag_(std::move(mag)) { trim(); }

void BigNum::trim() {
  trim_limbs(mag_);
  if (mag_.empty()) neg_ = false;
}

BigNum BigNum::from_double(double integral) {
  if (integral == 0) return BigNum();
  int exp = 0;
  double fraction = std::frexp(std::fabs(integral), &exp);  // |v| = fraction * 2^exp
  BigNum r(int64_t(std::ldexp(fraction, 53)));
  r = exp >= 53 ? r.shifted_left(uint64_t(exp - 53)) : r.shifted_right(uint64_t(53 - exp));
  return integral < 0 ? -r : r;
}

BigNum BigNum::from_digits(std::string_view digits, int base) {
  auto [power, per_limb] = limb_power(base);
  Limbs mag;
  for (size_t i = 0; i < digits.size(); i += size_t(per_limb)) {
    size_t n = std::min(digits.size() - i, size_t(per_limb));
    uint32_t chunk = 0, scale = 1;
    for (size_t k = 0; k < n; ++k) {
      chunk = chunk * uint32_t(base) + uint32_t(digit_value(digits[i + k]));
      scale *= uint32_t(base);
    }
    mag_mul_add_small(mag, n == size_t(per_limb) ? power : scale, chunk);
  }
  return BigNum(std::move(mag), false);
}

bool BigNum::fits_int64() const {
  if (mag_.size() > 2) return false;
  uint64_t m = mag_.empty() ? 0 : mag_[0] | (mag_.size() > 1 ? uint64_t(mag_[1]) << 32 : 0);
  return neg_ ? m <= uint64_t(1) << 63 : m < uint64_t(1) << 63;
}

int64_t BigNum::to_int64() const {
  uint64_t m = mag_.empty() ? 0 : mag_[0] | (mag_.size() > 1 ? uint64_t(mag_[1]) << 32 : 0);
  return neg_ ? int64_t(uint64_t(0) - m) : int64_t(m);
}

uint64_t BigNum::bit_length() const {
  if (mag_.empty()) return 0;
  return uint64_t(mag_.size() - 1) * 32 + uint64_t(32 - std::countl_zero(mag_.back()));
}

double BigNum::to_double(bool& overflow) const {
  overflow = false;
  uint64_t bits = bit_length();
  uint64_t top = 0;
  // The top 64 bits, with every lower bit folded into the lowest one: that
  // bit lies below the rounding position, so uint64 -> double (correctly
  // rounded) then rounds the whole value correctly.
  for (uint64_t k = 0; k < 64 && k < bits; ++k) {
    uint64_t pos = bits - 1 - k;
    top = (top << 1) | ((mag_[pos / 32] >> (pos % 32)) & 1);
  }
  int64_t scale = 0;
  if (bits > 64) {
    scale = int64_t(bits - 64);
    uint64_t low_bits = bits - 64;
    bool sticky = false;
    for (size_t i = 0; i < low_bits / 32 && !sticky; ++i) sticky = mag_[i] != 0;
    if (low_bits % 32) sticky = sticky || (mag_[low_bits / 32] & ((uint32_t(1) << (low_bits % 32)) - 1)) != 0;
    top |= sticky ? 1 : 0;
  }
  double d = std::ldexp(double(top), int(std::min<int64_t>(scale, 4096)));
  if (std::isinf(d)) overflow = true;
  return neg_ ? -d : d;
}

std::string BigNum::to_string(int base) const {
  if (mag_.empty()) return "0";
  std::string digits;  // least significant first
  if (std::has_single_bit(unsigned(base))) {
    int width = std::countr_zero(unsigned(base));
    uint64_t bits = bit_length();
    for (uint64_t pos = 0; pos < bits; pos += uint64_t(width)) {
      unsigned d = 0;
      for (int k = width - 1; k >= 0; --k) {
        uint64_t p = pos + uint64_t(k);
        d = (d << 1) | (p < bits ? (mag_[p / 32] >> (p % 32)) & 1 : 0);
      }
      digits += "0123456789abcdefghijklmnopqrstuvwxyz"[d];
    }
  } else {
    auto [power, per_limb] = limb_power(base);
    Limbs rest = mag_;
    while (!rest.empty()) {
      uint32_t chunk = mag_divmod_small(rest, power);
      for (int k = 0; k < per_limb && (chunk || !rest.empty()); ++k, chunk /= uint32_t(base))
        digits += "0123456789abcdefghijklmnopqrstuvwxyz"[chunk % uint32_t(base)];
    }
  }
  if (neg_) digits += '-';
  return std::string(digits.rbegin(), digits.rend());
}

size_t BigNum::hash() const {
  // A value a double holds exactly must hash as that float does (1e20 == 10**20).
  bool overflow = false;
  double d = to_double(overflow);
  if (!overflow && from_double(d) == *this) return std::hash<double>()(d);
  size_t h = neg_ ? 0x9e3779b97f4a7c15u : 0x345678u;
  for (uint32_t limb : mag_) h = (h ^ limb) * 1000003u;
  return h;
}

BigNum BigNum::operator-() const { return BigNum(mag_, !neg_); }
BigNum BigNum::abs() const { return BigNum(mag_, false); }

BigNum operator+(const BigNum& a, const BigNum& b) {
  if (a.neg_ == b.neg_) return BigNum(mag_add(a.mag_, b.mag_), a.neg_);
  int c = mag_compare(a.mag_, b.mag_);
  if (c == 0) return BigNum();
  return c > 0 ? BigNum(mag_sub(a.mag_, b.mag_), a.neg_) : BigNum(mag_sub(b.mag_, a.mag_), b.neg_);
}

BigNum operator-(const BigNum& a, const BigNum& b) { return a + (-b); }

BigNum operator*(const BigNum& a, const BigNum& b) { return BigNum(mag_mul(a.mag_, b.mag_), a.neg_ != b.neg_); }

int BigNum::compare(const BigNum& a, const BigNum& b) {
  if (a.neg_ != b.neg_) return a.neg_ ? -1 : 1;
  int c = mag_compare(a.mag_, b.mag_);
  return a.neg_ ? -c : c;
}

void BigNum::divmod(const BigNum& a, const BigNum& b, BigNum& quotient, BigNum& remainder) {
  Limbs q, r;
  mag_divmod(a.mag_, b.mag_, q, r);
  quotient = BigNum(std::move(q), a.neg_ != b.neg_);
  remainder = BigNum(std::move(r), a.neg_);
  if (!remainder.is_zero() && a.neg_ != b.neg_) {  // truncated -> floored
    quotient = quotient - BigNum(1);
    remainder = remainder + b;
  }
}

BigNum BigNum::shifted_left(uint64_t bits) const {
  if (mag_.empty()) return *this;
  size_t limbs = size_t(bits / 32);
  int s = int(bits % 32);
  Limbs out(limbs + mag_.size() + 1, 0);
  for (size_t i = 0; i < mag_.size(); ++i) {
    uint64_t v = uint64_t(mag_[i]) << s;
    out[i + limbs] |= uint32_t(v);
    out[i + limbs + 1] |= uint32_t(v >> 32);
  }
  return BigNum(std::move(out), neg_);
}

BigNum BigNum::shifted_right(uint64_t bits) const {
  if (bits >= bit_length()) return neg_ ? BigNum(-1) : BigNum();
  size_t limbs = size_t(bits / 32);
  int s = int(bits % 32);
  Limbs out(mag_.size() - limbs);
  bool lost = false;
  for (size_t i = 0; i < limbs; ++i) lost = lost || mag_[i] != 0;
  if (s) lost = lost || (mag_[limbs] & ((uint32_t(1) << s) - 1)) != 0;
  for (size_t i = 0; i < out.size(); ++i) {
    uint64_t upper = i + limbs + 1 < mag_.size() ? mag_[i + limbs + 1] : 0;
    out[i] = uint32_t(((upper << 32) | mag_[i + limbs]) >> s);
  }
  BigNum r(std::move(out), neg_);
  // A negative value rounds toward minus infinity, as Python's >>.
  return neg_ && lost ? r - BigNum(1) : r;
}

BigNum BigNum::bitwise(BitOp op, const BigNum& a, const BigNum& b) {
  size_t n = std::max(a.mag_.size(), b.mag_.size()) + 1;
  auto twos = [n](const BigNum& x) {
    Limbs t(n, 0);
    std::copy(x.mag_.begin(), x.mag_.end(), t.begin());
    if (x.neg_) {
      uint64_t carry = 1;
      for (uint32_t& limb : t) {
        uint64_t v = uint64_t(~limb) + carry;
        limb = uint32_t(v);
        carry = v >> 32;
      }
    }
    return t;
  };
  Limbs x = twos(a), y = twos(b), out(n);
  for (size_t i = 0; i < n; ++i)
    out[i] = op == BitOp::And ? x[i] & y[i] : op == BitOp::Or ? x[i] | y[i] : x[i] ^ y[i];
  bool negative = (out.back() >> 31) != 0;
  if (negative) {  // back from two's complement to a magnitude
    uint64_t carry = 1;
    for (uint32_t& limb : out) {
      uint64_t v = uint64_t(~limb) + carry;
      limb = uint32_t(v);
      carry = v >> 32;
    }
  }
  return BigNum(std::move(out), negative);
}

}  // namespace kiln::py
