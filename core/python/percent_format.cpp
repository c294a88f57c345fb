// printf-style string formatting, `"%.3f loss %d" % (x, step)`, as CPython's
// PyUnicode_Format. Each conversion is turned into a format() spec so that
// numbers print exactly as f-strings print them; the conversions only decide
// which value (str, repr, int or float of the argument) is formatted.
#include <cstdio>
#include <string>

#include "core/python/percent_format.h"

#include "core/python/bigint.h"
#include "core/python/vm.h"
#include "core/util/utf8.h"

namespace kiln::py {

namespace {

class PercentFormatter {
 public:
  PercentFormatter(VM& vm, const std::string& fmt, const Value& args) : vm_(vm), fmt_(fmt), args_(args) {
    if (args.is(ObjKind::Tuple)) items_ = args.as<Tuple>()->items;
    else items_.push_back(args);
    // A mapping is taken whole by %(name)s; a lone non-tuple argument is one item.
    mapping_ = args.is(ObjKind::Dict) || args.is(ObjKind::Instance);
  }

  std::string format() {
    std::string out;
    size_t i = 0;
    while (i < fmt_.size()) {
      size_t pct = fmt_.find('%', i);
      if (pct == std::string::npos) {
        out.append(fmt_, i, std::string::npos);
        break;
      }
      out.append(fmt_, i, pct - i);
      i = pct + 1;
      out += conversion(i);
    }
    if (!used_mapping_ && next_ < items_.size() && !(mapping_ && !args_.is(ObjKind::Tuple)))
      throw_type_error("not all arguments converted during string formatting");
    return out;
  }

 private:
  char at(size_t i) const {
    if (i >= fmt_.size()) throw PyError("ValueError", "incomplete format");
    return fmt_[i];
  }

  Value next_item() {
    if (next_ >= items_.size()) throw_type_error("not enough arguments for format string");
    return items_[next_++];
  }

  // The field's width or precision, a number or '*' taken from the arguments
  // (a negative '*' width left-aligns, as in CPython; a negative precision is 0).
  std::string number(size_t& i, bool* left = nullptr) {
    if (at(i) == '*') {
      ++i;
      Value v = next_item();
      if (!is_integral(v)) throw_type_error("* wants int");
      int64_t n = to_index(v, "*");
      if (n < -(int64_t(1) << 40) || n > (int64_t(1) << 40)) throw PyError("OverflowError", "width too big");
      if (n < 0 && left) *left = true;
      return std::to_string(n < 0 ? (left ? -n : 0) : n);
    }
    std::string digits;
    while (i < fmt_.size() && fmt_[i] >= '0' && fmt_[i] <= '9') digits += fmt_[i++];
    return digits;
  }

  std::string conversion(size_t& i) {
    Value value;
    bool have_value = false;
    if (at(i) == '(') {
      size_t close = fmt_.find(')', i);
      if (close == std::string::npos) throw PyError("ValueError", "incomplete format key");
      if (!mapping_) throw_type_error("format requires a mapping");
      value = vm_.getitem(args_, str_value(fmt_.substr(i + 1, close - i - 1)));
      have_value = true;
      used_mapping_ = true;
      i = close + 1;
    }
    bool left = false, zero = false, alt = false;
    char sign = 0;
    for (;; ++i) {
      char c = at(i);
      if (c == '-') left = true;
      else if (c == '0') zero = true;
      else if (c == '+') sign = '+';
      else if (c == ' ') { if (sign != '+') sign = ' '; }
      else if (c == '#') alt = true;
      else break;
    }
    std::string width = number(i, &left);
    std::string precision;
    if (at(i) == '.') {
      ++i;
      precision = number(i);
      if (precision.empty()) precision = "0";
    }
    while (at(i) == 'h' || at(i) == 'l' || at(i) == 'L') ++i;  // length modifiers mean nothing in Python
    char type = at(i++);
    if (type == '%') return "%";
    if (!have_value) value = next_item();

    const std::string align = width.empty() ? "" : left ? "<" : ">";
    const std::string sign_spec = sign ? std::string(1, sign) : "";
    auto numeric_spec = [&](const std::string& conv) {
      std::string spec;
      if (!width.empty()) spec += left ? "<" : (zero ? "" : ">");
      spec += sign_spec;
      if (alt) spec += "#";
      if (zero && !left && !width.empty()) spec += "0";
      spec += width;
      if (!precision.empty()) spec += "." + precision;
      return spec + conv;
    };
    switch (type) {
      case 's':
      case 'r':
      case 'a': {
        std::string text = type == 's' ? vm_.str_of(value) : type == 'r' ? vm_.repr_of(value) : ascii_of(vm_.repr_of(value));
        std::string spec = align + width + (precision.empty() ? "" : "." + precision);
        return format_with_spec(vm_, str_value(std::move(text)), spec);
      }
      case 'd':
      case 'i':
      case 'u':
        if (!precision.empty()) return int_with_precision(as_int(value, type), 'd', width, precision, left, zero, alt, sign);
        return format_with_spec(vm_, as_int(value, type), numeric_spec("d"));
      case 'x':
      case 'X':
      case 'o': {
        if (!is_integral(value) && !value.is(ObjKind::Tensor) && !value.is(ObjKind::Instance))
          throw_type_error(std::string("%") + type + " format: an integer is required, not " + type_name(value));
        if (!precision.empty()) return int_with_precision(as_int(value, type), type, width, precision, left, zero, alt, sign);
        return format_with_spec(vm_, as_int(value, type), numeric_spec(std::string(1, type)));
      }
      case 'f':
      case 'F':
      case 'e':
      case 'E':
      case 'g':
      case 'G': {
        if (precision.empty()) precision = "6";
        return format_with_spec(vm_, as_float(value), numeric_spec(std::string(1, type)));
      }
      case 'c': {
        std::string text;
        if (value.is(ObjKind::Str)) {
          text = value.as<Str>()->s;
          if (text.empty() || utf8_lead_length(static_cast<unsigned char>(text[0])) != text.size())
            throw_type_error("%c requires int or char");
        } else {
          int64_t code = to_index(as_int(value, type), "%c");
          if (code < 0 || code > 0x10ffff) throw PyError("OverflowError", "%c arg not in range(0x110000)");
          append_utf8(text, char32_t(code));
        }
        return format_with_spec(vm_, str_value(std::move(text)), align + width);
      }
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%x", unsigned(static_cast<unsigned char>(type)));
        throw PyError("ValueError", std::string("unsupported format character '") + type + "' (" + hex + ") at index " +
                                        std::to_string(i - 1));
      }
    }
  }

  // An integer's precision is its least number of digits ('%.3d' % 5 is
  // '005'), which format() refuses; the zero flag still pads to the width.
  std::string int_with_precision(const Value& v, char type, const std::string& width, const std::string& precision,
                                 bool left, bool zero, bool alt, char sign) {
    std::string digits = format_with_spec(vm_, v, std::string(1, type));
    std::string prefix;
    if (!digits.empty() && digits[0] == '-') {
      prefix = "-";
      digits.erase(0, 1);
    } else if (sign) {
      prefix = std::string(1, sign);
    }
    if (alt && type != 'd') prefix += type == 'o' ? "0o" : type == 'x' ? "0x" : "0X";
    const size_t min_digits = std::stoul(precision);
    if (digits.size() < min_digits) digits.insert(0, min_digits - digits.size(), '0');
    const size_t field = width.empty() ? 0 : std::stoul(width);
    const size_t len = prefix.size() + digits.size();
    if (len >= field) return prefix + digits;
    if (left) return prefix + digits + std::string(field - len, ' ');
    if (zero) return prefix + std::string(field - len, '0') + digits;
    return std::string(field - len, ' ') + prefix + digits;
  }

  Value as_int(const Value& v, char type) {
    if (is_integral(v)) return v;
    if (v.is_float() || v.is(ObjKind::Tensor) || v.is(ObjKind::Instance))
      return vm_.call(Value(vm_.builtin_type("int")), ValueVec{v});
    throw_type_error(std::string("%") + type + " format: a real number is required, not " + type_name(v));
  }

  Value as_float(const Value& v) {
    if (v.is_float()) return v;
    if (is_integral(v) || v.is(ObjKind::Tensor) || v.is(ObjKind::Instance))
      return vm_.call(Value(vm_.builtin_type("float")), ValueVec{v});
    throw_type_error("must be real number, not " + type_name(v));
  }

  VM& vm_;
  const std::string& fmt_;
  Value args_;
  ValueVec items_;
  size_t next_ = 0;
  bool mapping_ = false;
  bool used_mapping_ = false;
};

}  // namespace

Value percent_format(VM& vm, const std::string& fmt, const Value& args) {
  return str_value(PercentFormatter(vm, fmt, args).format());
}

}  // namespace kiln::py
