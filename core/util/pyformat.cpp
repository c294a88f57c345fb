// A port of the parts of CPython 3.12 that turn numbers into text:
// Python/pystrtod.c (format_float_short), Python/formatter_unicode.c (the
// format-spec mini-language) and Objects/floatobject.c (round). Names of the
// helpers follow CPython's so the two can be read side by side.
//
// Digits come from std::to_chars, which is correctly rounded (ties to even on
// the exact binary value) like CPython's dtoa, and ignores the locale.
#include "core/util/pyformat.h"
#include "core/util/utf8.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <vector>

namespace kiln {
namespace {

// ---------------------------------------------------------------------------
// Digit generation: what _Py_dg_dtoa returns. The value is 0.DIGITS x 10^decpt.

struct DecimalDigits {
  std::string digits;  // no leading zeros; "0" for zero
  int decpt = 1;
};

// Splits to_chars' scientific output "d.ddde+XX" into digits and decpt.
DecimalDigits from_scientific(std::string_view text) {
  DecimalDigits d;
  size_t e = text.find('e');
  for (char c : text.substr(0, e))
    if (c != '.') d.digits += c;
  int exp = 0;
  std::string_view exp_text = text.substr(e + 1);
  if (!exp_text.empty() && exp_text[0] == '+') exp_text.remove_prefix(1);
  std::from_chars(exp_text.data(), exp_text.data() + exp_text.size(), exp);
  d.decpt = exp + 1;
  return d;
}

void strip_trailing_zeros(DecimalDigits& d) {
  while (d.digits.size() > 1 && d.digits.back() == '0') d.digits.pop_back();
  if (d.digits == "0") d.decpt = 1;
}

// dtoa mode 0: the shortest digit string that reads back as |v|.
DecimalDigits shortest_digits(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, std::fabs(v), std::chars_format::scientific);
  return from_scientific(std::string_view(buf, size_t(r.ptr - buf)));
}

// dtoa mode 2: |v| correctly rounded to `ndigits` (>= 1) significant digits.
DecimalDigits significant_digits(double v, int ndigits) {
  std::string buf(size_t(ndigits) + 32, '\0');
  auto r = std::to_chars(buf.data(), buf.data() + buf.size(), std::fabs(v),
                         std::chars_format::scientific, ndigits - 1);
  DecimalDigits d = from_scientific(std::string_view(buf.data(), size_t(r.ptr - buf.data())));
  strip_trailing_zeros(d);
  return d;
}

// dtoa mode 3: |v| correctly rounded to `ndigits` (>= 0) places after the point.
DecimalDigits fixed_digits(double v, int ndigits) {
  std::string buf(size_t(ndigits) + 330, '\0');
  auto r = std::to_chars(buf.data(), buf.data() + buf.size(), std::fabs(v),
                         std::chars_format::fixed, ndigits);
  std::string_view text(buf.data(), size_t(r.ptr - buf.data()));
  size_t point = text.find('.');
  DecimalDigits d;
  d.digits = std::string(text.substr(0, point));
  d.decpt = int(d.digits.size());
  if (point != std::string_view::npos) d.digits += text.substr(point + 1);
  size_t lead = d.digits.find_first_not_of('0');
  if (lead == std::string::npos) return DecimalDigits{"0", 1};
  d.digits.erase(0, lead);
  d.decpt -= int(lead);
  strip_trailing_zeros(d);
  return d;
}

// ---------------------------------------------------------------------------
// PyOS_double_to_string: `code` is one of e E f F g G r.

struct DoubleToString {
  bool add_sign = false;       // Py_DTSF_SIGN
  bool add_dot_0 = false;      // Py_DTSF_ADD_DOT_0
  bool alternate = false;      // Py_DTSF_ALT
  bool no_negative_zero = false;  // Py_DTSF_NO_NEG_0
};

std::string double_to_string(double v, char code, int precision, DoubleToString flags) {
  bool upper = code == 'E' || code == 'F' || code == 'G';
  char lower = upper ? char(code - 'A' + 'a') : code;
  bool negative = std::signbit(v);

  std::string out;
  if (!std::isfinite(v)) {
    if (std::isnan(v)) negative = false;  // CPython ignores the sign of a nan
    if (negative) out += '-';
    else if (flags.add_sign) out += '+';
    out += std::isnan(v) ? (upper ? "NAN" : "nan") : (upper ? "INF" : "inf");
    return out;
  }

  // As PyOS_double_to_string: 'e' counts the leading digit too, and a 'g'
  // precision of 0 means 1.
  if (lower == 'e') ++precision;
  if (lower == 'g' && precision == 0) precision = 1;
  DecimalDigits dd;
  switch (lower) {
    case 'e': case 'g': dd = significant_digits(v, precision); break;
    case 'f': dd = fixed_digits(v, precision); break;
    default: dd = shortest_digits(v); break;
  }
  if (flags.no_negative_zero && negative && dd.digits == "0") negative = false;

  // format_float_short: output the slice [vdigits_start, vdigits_end) of the
  // digit string padded with zeros on both sides, with the point at decpt.
  const int64_t digits_len = int64_t(dd.digits.size());
  int64_t decpt = dd.decpt;
  int64_t vdigits_end = digits_len;
  bool use_exp = false;
  switch (lower) {
    case 'e':
      use_exp = true;
      vdigits_end = precision;
      break;
    case 'f':
      vdigits_end = decpt + precision;
      break;
    case 'g':
      if (decpt <= -4 || decpt > (flags.add_dot_0 ? precision - 1 : precision)) use_exp = true;
      if (flags.alternate) vdigits_end = precision;
      break;
    default:  // 'r': exponent from 1e16 on
      if (decpt <= -4 || decpt > 16) use_exp = true;
      break;
  }
  int64_t exp = 0;
  if (use_exp) {
    exp = decpt - 1;
    decpt = 1;
  }
  int64_t vdigits_start = decpt <= 0 ? decpt - 1 : 0;
  if (!use_exp && flags.add_dot_0)
    vdigits_end = std::max(vdigits_end, decpt + 1);
  else
    vdigits_end = std::max(vdigits_end, decpt);

  if (negative) out += '-';
  else if (flags.add_sign) out += '+';
  if (decpt <= 0) {
    out.append(size_t(decpt - vdigits_start), '0');
    out += '.';
    out.append(size_t(-decpt), '0');
  } else {
    out.append(size_t(-vdigits_start), '0');
  }
  if (0 < decpt && decpt <= digits_len) {
    out.append(dd.digits, 0, size_t(decpt));
    out += '.';
    out.append(dd.digits, size_t(decpt));
  } else {
    out += dd.digits;
  }
  if (digits_len < decpt) {
    out.append(size_t(decpt - digits_len), '0');
    out += '.';
    out.append(size_t(vdigits_end - decpt), '0');
  } else {
    out.append(size_t(vdigits_end - digits_len), '0');
  }
  if (out.back() == '.' && !flags.alternate) out.pop_back();
  if (use_exp) {
    out += upper ? 'E' : 'e';
    out += exp < 0 ? '-' : '+';
    std::string e = std::to_string(exp < 0 ? -exp : exp);
    if (e.size() < 2) out += '0';
    out += e;
  }
  return out;
}

// ---------------------------------------------------------------------------
// UTF-8, for fills, widths and precisions (which count code points).

int64_t count_code_points(std::string_view s) {
  int64_t n = 0;
  char32_t cp;
  for (size_t i = 0; i < s.size(); i += utf8_decode(s, i, cp)) ++n;
  return n;
}

// The first `n` code points of s.
std::string_view prefix_code_points(std::string_view s, int64_t n) {
  size_t i = 0;
  char32_t cp;
  for (; i < s.size() && n > 0; --n) i += utf8_decode(s, i, cp);
  return s.substr(0, i);
}

std::string repeat(std::string_view unit, int64_t n) {
  std::string out;
  for (int64_t k = 0; k < n; ++k) out += unit;
  return out;
}

// ---------------------------------------------------------------------------
// The format spec (InternalFormatSpec) and its parser.

struct FormatSpec {
  std::string fill = " ";  // one code point
  char align = '>';
  char sign = 0;  // 0, '+', '-', ' '
  bool no_neg_0 = false;
  bool alternate = false;
  int64_t width = -1;
  char thousands = 0;  // 0, ',' or '_'
  int group = 3;       // digits between separators (4 for '_' in b o x X)
  int64_t precision = -1;
  char32_t type = 0;
};

Status value_error(std::string message) { return Status::error(std::move(message)); }

std::string type_char_text(char32_t type) {
  if (type > 32 && type < 128) return std::string(1, char(type));
  char buf[16];
  auto r = std::to_chars(buf, buf + sizeof buf, uint32_t(type), 16);
  return "\\x" + std::string(buf, r.ptr);
}

Status unknown_presentation_type(char32_t type, std::string_view type_name) {
  return value_error("Unknown format code '" + type_char_text(type) + "' for object of type '" +
                     std::string(type_name) + "'");
}

bool is_align(char32_t c) { return c == '<' || c == '>' || c == '=' || c == '^'; }

// Reads decimal digits at spec[pos]; returns how many were read.
Expected<int> get_integer(std::string_view spec, size_t& pos, int64_t& value) {
  int n = 0;
  value = 0;
  for (; pos < spec.size() && spec[pos] >= '0' && spec[pos] <= '9'; ++pos, ++n) {
    // CPython stops at PY_SSIZE_T_MAX; Kiln also refuses widths it could not
    // allocate, past a billion characters.
    if (value > 100'000'000) return value_error("Too many decimal digits in format string");
    value = value * 10 + (spec[pos] - '0');
  }
  return n;
}

// parse_internal_render_format_spec.
Expected<FormatSpec> parse_spec(std::string_view spec, char32_t default_type, char default_align,
                                std::string_view type_name) {
  FormatSpec f;
  f.align = default_align;
  f.type = default_type;
  size_t pos = 0;
  bool fill_specified = false, align_specified = false;

  char32_t c0 = 0, c1 = 0;
  size_t n0 = spec.empty() ? 0 : utf8_decode(spec, 0, c0);
  if (n0 && n0 < spec.size()) utf8_decode(spec, n0, c1);
  if (n0 && n0 < spec.size() && is_align(c1)) {
    f.fill = std::string(spec.substr(0, n0));
    f.align = char(c1);
    fill_specified = align_specified = true;
    pos = n0 + 1;
  } else if (n0 && is_align(c0)) {
    f.align = char(c0);
    align_specified = true;
    pos = 1;
  }
  auto peek = [&](char c) { return pos < spec.size() && spec[pos] == c; };
  if (peek('+') || peek('-') || peek(' ')) f.sign = spec[pos++];
  if (peek('z')) {
    f.no_neg_0 = true;
    ++pos;
  }
  if (peek('#')) {
    f.alternate = true;
    ++pos;
  }
  if (!fill_specified && peek('0')) {
    f.fill = "0";
    if (!align_specified && default_align == '>') f.align = '=';
    ++pos;
  }
  auto width_digits = get_integer(spec, pos, f.width);
  if (!width_digits.ok()) return width_digits.status();
  if (*width_digits == 0) f.width = -1;
  if (peek(',')) {
    f.thousands = ',';
    ++pos;
  }
  if (peek('_')) {
    if (f.thousands) return value_error("Cannot specify both ',' and '_'.");
    f.thousands = '_';
    ++pos;
  }
  if (peek(',') && f.thousands == '_') return value_error("Cannot specify both ',' and '_'.");
  if (peek('.')) {
    ++pos;
    auto precision_digits = get_integer(spec, pos, f.precision);
    if (!precision_digits.ok()) return precision_digits.status();
    if (*precision_digits == 0) return value_error("Format specifier missing precision");
  }
  std::string_view rest = spec.substr(pos);
  int64_t rest_len = count_code_points(rest);
  if (rest_len > 1)
    return value_error("Invalid format specifier '" + std::string(spec) + "' for object of type '" +
                       std::string(type_name) + "'");
  if (rest_len == 1) utf8_decode(rest, 0, f.type);

  if (f.thousands) {
    switch (f.type) {
      case 'd': case 'e': case 'f': case 'g': case 'E': case 'G': case '%': case 'F': case 0:
        break;
      case 'b': case 'o': case 'x': case 'X':
        if (f.thousands == '_') {
          f.group = 4;
          break;
        }
        [[fallthrough]];
      default:
        return value_error(std::string("Cannot specify '") + f.thousands + "' with '" +
                           type_char_text(f.type) + "'.");
    }
  }
  return f;
}

// ---------------------------------------------------------------------------
// Laying out a number: calc_number_widths + fill_number.

// _PyUnicode_InsertThousandsGrouping: groups `digits` from the right and, when
// min_width asks for it (zero padding with '=' alignment), pads with zeros
// that are grouped too ('0,001,234.5').
std::string group_digits(std::string_view digits, int64_t min_width, char sep, int group) {
  min_width = std::max<int64_t>(0, min_width);
  std::vector<std::string> pieces;  // right to left
  int64_t remaining = int64_t(digits.size());
  auto take = [&](int64_t len) {
    int64_t n_zeros = std::max<int64_t>(0, len - remaining);
    int64_t n_chars = std::max<int64_t>(0, std::min(remaining, len));
    std::string piece(size_t(n_zeros), '0');
    piece += digits.substr(size_t(remaining - n_chars), size_t(n_chars));
    pieces.push_back(std::move(piece));
    remaining -= n_chars;
    return len;
  };
  bool loop_broken = false;
  if (sep) {
    for (;;) {
      int64_t len = std::min<int64_t>(group, std::max<int64_t>({remaining, min_width, 1}));
      min_width -= take(len);
      if (remaining <= 0 && min_width <= 0) {
        loop_broken = true;
        break;
      }
      min_width -= 1;  // the separator
    }
  }
  if (!loop_broken) take(std::max<int64_t>({remaining, min_width, 1}));
  std::string out;
  for (size_t i = pieces.size(); i-- > 0;) {
    out += pieces[i];
    if (i > 0) out += sep;
  }
  return out;
}

// [lpad][sign][prefix][spad][grouped digits][.][remainder][rpad]
std::string fill_number(const FormatSpec& f, bool negative, std::string_view prefix,
                        std::string_view digits, bool has_decimal, std::string_view remainder) {
  std::string sign;
  if (f.sign == '+') sign = negative ? "-" : "+";
  else if (f.sign == ' ') sign = negative ? "-" : " ";
  else if (negative) sign = "-";
  int64_t n_non_digit = int64_t(sign.size() + prefix.size() + (has_decimal ? 1 : 0) + remainder.size());
  int64_t min_width = (f.fill == "0" && f.align == '=') ? f.width - n_non_digit : 0;
  std::string grouped = digits.empty() ? std::string() : group_digits(digits, min_width, f.thousands, f.group);
  int64_t padding = f.width - (n_non_digit + int64_t(grouped.size()));
  int64_t lpad = 0, spad = 0, rpad = 0;
  if (padding > 0) {
    switch (f.align) {
      case '<': rpad = padding; break;
      case '^': lpad = padding / 2; rpad = padding - lpad; break;
      case '=': spad = padding; break;
      default: lpad = padding; break;
    }
  }
  std::string out = repeat(f.fill, lpad);
  out += sign;
  out += prefix;
  out += repeat(f.fill, spad);
  out += grouped;
  if (has_decimal) out += '.';
  out += remainder;
  out += repeat(f.fill, rpad);
  return out;
}

// format_float_internal; `f.type` is already known to suit a float.
Expected<std::string> format_float_internal(double v, const FormatSpec& f) {
  char32_t type = f.type;
  int default_precision = 6;
  DoubleToString flags;
  flags.alternate = f.alternate;
  flags.no_negative_zero = f.no_neg_0;
  if (type == 0) {  // like repr, or like 'g' with at least one decimal when a precision is given
    flags.add_dot_0 = true;
    type = 'r';
    default_precision = 0;
  }
  if (type == 'n') type = 'g';
  bool add_pct = false;
  if (type == '%') {
    type = 'f';
    v *= 100;
    add_pct = true;
  }
  int64_t precision = f.precision;
  if (precision < 0) precision = default_precision;
  else if (type == 'r') type = 'g';
  if (precision > 100'000'000) return value_error("precision too big");

  std::string buf = double_to_string(v, char(type), int(precision), flags);
  if (add_pct) buf += '%';
  bool negative = !buf.empty() && buf[0] == '-';
  std::string_view body(buf);
  if (negative) body.remove_prefix(1);
  size_t n_digits = 0;
  while (n_digits < body.size() && body[n_digits] >= '0' && body[n_digits] <= '9') ++n_digits;
  bool has_decimal = n_digits < body.size() && body[n_digits] == '.';
  return fill_number(f, negative, "", body.substr(0, n_digits), has_decimal,
                     body.substr(n_digits + (has_decimal ? 1 : 0)));
}

std::string to_base(uint64_t magnitude, int base) {
  if (magnitude == 0) return "0";
  std::string out;
  for (; magnitude; magnitude /= uint64_t(base)) out += "0123456789abcdef"[magnitude % uint64_t(base)];
  return std::string(out.rbegin(), out.rend());
}

// format_long_internal, for the integer presentation types.
Expected<std::string> format_long_internal(const PyIntParts& v, const FormatSpec& f) {
  if (f.precision != -1) return value_error("Precision not allowed in integer format specifier");
  if (f.no_neg_0)
    return value_error("Negative zero coercion (z) not allowed in integer format specifier");
  if (f.type == 'c') {
    if (f.sign) return value_error("Sign not allowed with integer format specifier 'c'");
    if (f.alternate)
      return value_error("Alternate form (#) not allowed with integer format specifier 'c'");
    if (!v.small) return value_error("Python int too large to convert to C long");
    if (*v.small < 0 || *v.small > 0x10ffff) return value_error("%c arg not in range(0x110000)");
    std::string ch;
    append_utf8(ch, char32_t(*v.small));
    return fill_number(f, false, "", "", false, ch);
  }
  int base = 10;
  std::string prefix;
  switch (f.type) {
    case 'b': base = 2; prefix = "0b"; break;
    case 'o': base = 8; prefix = "0o"; break;
    case 'x': base = 16; prefix = "0x"; break;
    case 'X': base = 16; prefix = "0X"; break;
    default: break;
  }
  if (!f.alternate) prefix.clear();
  Expected<std::string> digits = v.magnitude_digits(base);
  if (!digits.ok()) return digits.status();
  if (f.type == 'X')
    for (char& c : *digits) c = char(std::toupper(uint8_t(c)));
  return fill_number(f, v.negative, prefix, *digits, false, "");
}

Expected<std::string> format_int_as(const PyIntParts& v, std::string_view spec, std::string_view type_name) {
  auto f = parse_spec(spec, 'd', '>', type_name);
  if (!f.ok()) return f.status();
  switch (f->type) {
    case 'b': case 'c': case 'd': case 'o': case 'x': case 'X': case 'n':
      return format_long_internal(v, *f);
    case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': case '%':
      if (std::isinf(v.as_double)) return value_error("int too large to convert to float");
      return format_float_internal(v.as_double, *f);
    default:
      return unknown_presentation_type(f->type, type_name);
  }
}

PyIntParts small_int_parts(int64_t v) {
  PyIntParts parts;
  parts.negative = v < 0;
  parts.small = v;
  parts.as_double = double(v);
  uint64_t magnitude = v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v);
  parts.magnitude_digits = [magnitude](int base) -> Expected<std::string> { return to_base(magnitude, base); };
  return parts;
}

// ---------------------------------------------------------------------------
// str.isprintable outside ASCII, by the Unicode categories it rejects.

bool is_printable(char32_t cp) {
  struct Range { char32_t lo, hi; };
  static constexpr Range kNotPrintable[] = {
      {0x80, 0xA0}, {0xAD, 0xAD},                                          // Cc, Zs, Cf
      {0x600, 0x605}, {0x61C, 0x61C}, {0x6DD, 0x6DD}, {0x70F, 0x70F},      // Cf
      {0x890, 0x891}, {0x8E2, 0x8E2}, {0x1680, 0x1680}, {0x180E, 0x180E},  // Cf, Zs
      {0x2000, 0x200F}, {0x2028, 0x202F}, {0x205F, 0x2064}, {0x2066, 0x206F},
      {0x3000, 0x3000}, {0xD800, 0xF8FF},                                  // Zs, Cs, Co
      {0xFDD0, 0xFDEF}, {0xFEFF, 0xFEFF}, {0xFFF9, 0xFFFB},
      {0x110BD, 0x110BD}, {0x110CD, 0x110CD}, {0x13430, 0x1343F},
      {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A}, {0x40000, 0xDFFFF},          // Cn: planes 4-13
      {0xE0000, 0xE00FF}, {0xE01F0, 0x10FFFF},                             // tags, Co planes
  };
  if ((cp & 0xFFFE) == 0xFFFE) return false;  // the noncharacters U+xxFFFE, U+xxFFFF
  for (const Range& r : kNotPrintable)
    if (cp >= r.lo && cp <= r.hi) return false;
  return true;
}

}  // namespace

// ---------------------------------------------------------------------------

std::string py_float_repr(double v) {
  DoubleToString flags;
  flags.add_dot_0 = true;
  return double_to_string(v, 'r', 0, flags);
}

Expected<std::string> py_format_float(double v, std::string_view spec) {
  if (spec.empty()) return py_float_repr(v);
  auto f = parse_spec(spec, 0, '>', "float");
  if (!f.ok()) return f.status();
  switch (f->type) {
    case 0: case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': case 'n': case '%':
      return format_float_internal(v, *f);
    default:
      return unknown_presentation_type(f->type, "float");
  }
}

Expected<std::string> py_format_int(int64_t v, std::string_view spec) {
  if (spec.empty()) return std::to_string(v);
  return format_int_as(small_int_parts(v), spec, "int");
}

Expected<std::string> py_format_int(const PyIntParts& v, std::string_view spec) {
  if (spec.empty()) {
    Expected<std::string> digits = v.magnitude_digits(10);
    if (!digits.ok() || !v.negative) return digits;
    return "-" + *digits;
  }
  return format_int_as(v, spec, "int");
}

Expected<std::string> py_format_bool(bool v, std::string_view spec) {
  if (spec.empty()) return std::string(v ? "True" : "False");
  return format_int_as(small_int_parts(v ? 1 : 0), spec, "bool");
}

Expected<std::string> py_format_str(std::string_view s, std::string_view spec) {
  if (spec.empty()) return std::string(s);
  auto parsed = parse_spec(spec, 's', '<', "str");
  if (!parsed.ok()) return parsed.status();
  const FormatSpec& f = *parsed;
  if (f.type != 's') return unknown_presentation_type(f.type, "str");
  if (f.sign == ' ') return value_error("Space not allowed in string format specifier");
  if (f.sign) return value_error("Sign not allowed in string format specifier");
  if (f.no_neg_0)
    return value_error("Negative zero coercion (z) not allowed in string format specifier");
  if (f.alternate) return value_error("Alternate form (#) not allowed in string format specifier");
  if (f.align == '=') return value_error("'=' alignment not allowed in string format specifier");

  std::string_view text = s;
  int64_t len = count_code_points(s);
  if (f.precision >= 0 && len >= f.precision) {
    text = prefix_code_points(s, f.precision);
    len = f.precision;
  }
  int64_t total = f.width >= 0 && f.width > len ? f.width : len;
  int64_t lpad = f.align == '>' ? total - len : f.align == '^' ? (total - len) / 2 : 0;
  int64_t rpad = total - len - lpad;
  return repeat(f.fill, lpad) + std::string(text) + repeat(f.fill, rpad);
}

std::string py_str_repr(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  auto hex = [&](char32_t cp, int width) {
    char buf[16];
    auto r = std::to_chars(buf, buf + sizeof buf, uint32_t(cp), 16);
    out.append(size_t(width) - size_t(r.ptr - buf), '0');
    out.append(buf, r.ptr);
  };
  char32_t cp;
  for (size_t i = 0, n; i < s.size(); i += n) {
    n = utf8_decode(s, i, cp);
    if (cp >= 0xDC80 && cp <= 0xDCFF && n == 1) {  // a byte that is not UTF-8
      out += "\\x";
      hex(cp - 0xDC00, 2);
    } else if (cp == char32_t(quote) || cp == '\\') {
      out += '\\';
      out += char(cp);
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp < 0x20 || cp == 0x7f) {
      out += "\\x";
      hex(cp, 2);
    } else if (cp < 0x7f || is_printable(cp)) {
      out.append(s.substr(i, n));
    } else if (cp <= 0xff) {
      out += "\\x";
      hex(cp, 2);
    } else if (cp <= 0xffff) {
      out += "\\u";
      hex(cp, 4);
    } else {
      out += "\\U";
      hex(cp, 8);
    }
  }
  out += quote;
  return out;
}

Expected<double> py_round(double v, int64_t ndigits) {
  if (!std::isfinite(v)) return v;
  // CPython's NDIGITS_MAX / NDIGITS_MIN: past them the answer is x or +-0.
  if (ndigits > 323) return v;
  if (ndigits < -308) return 0.0 * v;

  // The exact decimal expansion of |v| (a double has at most 1074 fractional
  // digits), rounded half-to-even by hand at position `ndigits`.
  std::string buf(1500, '\0');
  auto r = std::to_chars(buf.data(), buf.data() + buf.size(), std::fabs(v), std::chars_format::fixed, 1074);
  std::string_view exact(buf.data(), size_t(r.ptr - buf.data()));
  size_t point = exact.find('.');
  std::string integer(exact.substr(0, point));
  std::string fraction(exact.substr(point + 1));

  // kept = the digits up to 10^-ndigits; the tail decides the rounding.
  std::string kept, tail;
  if (ndigits >= 0) {
    kept = integer + fraction.substr(0, size_t(ndigits));
    tail = fraction.substr(size_t(ndigits));
  } else {
    size_t cut = size_t(-ndigits);
    std::string padded = integer.size() < cut ? std::string(cut - integer.size(), '0') + integer : integer;
    kept = padded.substr(0, padded.size() - cut);
    tail = padded.substr(padded.size() - cut) + fraction;
  }
  if (kept.empty()) kept.push_back('0');
  bool round_up = false;
  if (!tail.empty() && tail[0] > '5') round_up = true;
  else if (!tail.empty() && tail[0] == '5')
    round_up = tail.find_first_not_of('0', 1) != std::string::npos || (kept.back() - '0') % 2 == 1;
  if (round_up) {
    size_t i = kept.size();
    while (i > 0 && kept[i - 1] == '9') kept[--i] = '0';
    if (i == 0) kept.insert(kept.begin(), '1');
    else ++kept[i - 1];
  }
  std::string text = kept + "e" + std::to_string(-ndigits);
  double rounded = 0;
  auto parsed = std::from_chars(text.data(), text.data() + text.size(), rounded);
  if (parsed.ec == std::errc::result_out_of_range) {
    if (kept.find_first_not_of('0') != std::string::npos && -ndigits > 0)
      return Status::error("rounded value too large to represent");
    rounded = 0;
  }
  return std::signbit(v) ? -rounded : rounded;
}

Expected<double> py_round(double v) {
  if (std::isnan(v)) return Status::error("cannot convert float NaN to integer");
  if (std::isinf(v)) return Status::error("cannot convert float infinity to integer");
  double rounded = std::round(v);
  if (std::fabs(v - rounded) == 0.5) rounded = 2.0 * std::round(v / 2.0);
  return rounded + 0.0;  // an int has no negative zero
}

}  // namespace kiln
