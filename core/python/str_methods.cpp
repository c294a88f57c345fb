// The str methods model programs use beyond the basic ones of
// builtin_methods.cpp (searching, splitting with limits, padding, case and
// classification), and the chr / ord builtins, with CPython's results. A str
// holds UTF-8 and indexes code points (StrChars): positions and widths count
// characters as CPython's do, and text outside ASCII takes its case and
// classes from the Unicode database (unicode_text.h).
#include <algorithm>
#include <cctype>
#include <optional>

#include "core/python/unicode_text.h"
#include "core/python/vm.h"
#include "core/util/utf8.h"

namespace kiln::py {

namespace {

const std::string& self(const CallArgs& a) { return a[0].as<Str>()->s; }

void arity(const CallArgs& a, size_t lo, size_t hi, const char* name) {
  if (a.npos < lo + 1 || a.npos > hi + 1)
    throw_type_error(std::string(name) + "() takes " +
                     (lo == hi ? std::to_string(lo) : "from " + std::to_string(lo) + " to " + std::to_string(hi)) +
                     " arguments (" + std::to_string(a.npos - 1) + " given)");
}

// Python's slice bounds for the optional start/end arguments of find & co.
std::pair<size_t, size_t> bounds(const CallArgs& a, size_t first, size_t size) {
  auto clamp = [&](size_t i, int64_t fallback) {
    int64_t v = a.npos > i && !a[i].is_none() ? to_index(a[i], "slice index") : fallback;
    if (v < 0) v += int64_t(size);
    return size_t(std::clamp<int64_t>(v, 0, int64_t(size)));
  };
  return {clamp(first, 0), clamp(first + 1, int64_t(size))};
}

std::optional<size_t> find_in(const CallArgs& a, bool from_right) {
  const StrChars chars(a[0]);
  const std::string& sub = as_str(a[1]);
  auto [b, e] = bounds(a, 2, chars.size());
  if (e < b) return std::nullopt;
  const std::string_view window = chars.range(b, e);
  if (sub.size() > window.size()) return std::nullopt;
  size_t hit = from_right ? window.rfind(sub) : window.find(sub);
  if (hit == std::string_view::npos) return std::nullopt;
  return chars.index_of(chars.begin(b) + hit);
}

// Calls fn(code point) for each character; false from fn stops.
template <class Fn>
void each_code_point(const std::string& s, Fn fn) {
  for (size_t pos = 0; pos < s.size(); pos += utf8_char_length(s, pos))
    if (!fn(utf8_decode_at(s, pos))) return;
}

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

ValueVec split_whitespace(const std::string& s, int64_t maxsplit, bool from_right) {
  std::vector<std::string> parts;
  if (!from_right) {
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && is_space(s[i])) ++i;
      if (i == s.size()) break;
      if (maxsplit >= 0 && int64_t(parts.size()) == maxsplit) {
        parts.push_back(s.substr(i));  // the rest, its trailing whitespace kept
        break;
      }
      size_t b = i;
      while (i < s.size() && !is_space(s[i])) ++i;
      parts.push_back(s.substr(b, i - b));
    }
  } else {
    size_t i = s.size();
    while (i > 0) {
      while (i > 0 && is_space(s[i - 1])) --i;
      if (i == 0) break;
      if (maxsplit >= 0 && int64_t(parts.size()) == maxsplit) {
        parts.push_back(s.substr(0, i));  // the rest, its leading whitespace kept
        break;
      }
      size_t e = i;
      while (i > 0 && !is_space(s[i - 1])) --i;
      parts.push_back(s.substr(i, e - i));
    }
    std::reverse(parts.begin(), parts.end());
  }
  ValueVec out;
  for (std::string& p : parts) out.push_back(str_value(std::move(p)));
  return out;
}

ValueVec split_on(const std::string& s, const std::string& sep, int64_t maxsplit, bool from_right) {
  if (sep.empty()) throw PyError("ValueError", "empty separator");
  std::vector<std::string> parts;
  if (!from_right) {
    size_t pos = 0, hit;
    while ((maxsplit < 0 || int64_t(parts.size()) < maxsplit) && (hit = s.find(sep, pos)) != std::string::npos) {
      parts.push_back(s.substr(pos, hit - pos));
      pos = hit + sep.size();
    }
    parts.push_back(s.substr(pos));
  } else {
    size_t end = s.size();
    while (maxsplit < 0 || int64_t(parts.size()) < maxsplit) {
      if (end < sep.size()) break;
      size_t hit = s.rfind(sep, end - sep.size());
      if (hit == std::string::npos) break;
      parts.push_back(s.substr(hit + sep.size(), end - hit - sep.size()));
      end = hit;
    }
    parts.push_back(s.substr(0, end));
    std::reverse(parts.begin(), parts.end());
  }
  ValueVec out;
  for (std::string& p : parts) out.push_back(str_value(std::move(p)));
  return out;
}

Value split(const CallArgs& a, bool from_right) {
  const char* name = from_right ? "rsplit" : "split";
  if (a.npos > 3) throw_type_error(std::string(name) + "() takes at most 2 arguments");
  Value sep = a.npos > 1 ? a[1] : Value();
  Value limit = a.npos > 2 ? a[2] : Value(int64_t(-1));
  if (const Value* k = a.kwarg("sep")) sep = *k;
  if (const Value* k = a.kwarg("maxsplit")) limit = *k;
  const int64_t maxsplit = to_index(limit, "maxsplit");
  return list_value(sep.is_none() ? split_whitespace(self(a), maxsplit, from_right)
                                  : split_on(self(a), as_str(sep), maxsplit, from_right));
}

// startswith / endswith: a str or a tuple of them, within optional bounds.
Value affix_test(const CallArgs& a, bool prefix) {
  arity(a, 1, 3, prefix ? "startswith" : "endswith");
  const StrChars chars(a[0]);
  auto [b, e] = bounds(a, 2, chars.size());
  if (e < b) return Value(false);
  const std::string_view window = chars.range(b, e);
  ValueVec options = a[1].is(ObjKind::Tuple) ? a[1].as<Tuple>()->items : ValueVec{a[1]};
  for (const Value& o : options) {
    if (!o.is(ObjKind::Str))
      throw_type_error(std::string(prefix ? "startswith" : "endswith") +
                       " first arg must be str or a tuple of str, not " + type_name(o));
    if (prefix ? window.starts_with(o.as<Str>()->s) : window.ends_with(o.as<Str>()->s)) return Value(true);
  }
  return Value(false);
}

Value pad(const CallArgs& a, const char* name, int where) {
  arity(a, 1, 2, name);
  const std::string& s = self(a);
  const int64_t width = to_index(a[1], "width");
  const std::string fill = a.npos > 2 ? as_str(a[2]) : " ";
  if (fill.empty() || utf8_char_length(fill, 0) != fill.size())
    throw_type_error("The fill character must be exactly one character long");
  const size_t length = StrChars(a[0]).size();
  if (width <= int64_t(length)) return str_value(s);
  const size_t total = size_t(width) - length;
  // CPython's center puts the odd fill on the left when the width is odd.
  const size_t left = where < 0 ? 0 : where > 0 ? total : total / 2 + (total & size_t(width) & 1);
  std::string out;
  for (size_t i = 0; i < left; ++i) out += fill;
  out += s;
  for (size_t i = left; i < total; ++i) out += fill;
  return str_value(std::move(out));
}

// Per-character case rules (capitalize, title, swapcase) over any text:
// map(code point, byte position).
template <class Map>
std::string map_chars(const std::string& s, Map map) {
  std::string out;
  for (size_t pos = 0; pos < s.size(); pos += utf8_char_length(s, pos)) out += map(utf8_decode_at(s, pos), pos);
  return out;
}

// `ascii` judges ASCII text byte by byte; `unicode` a code point outside it.
template <class Ascii, class Unicode>
Value all_chars(const CallArgs& a, Ascii ascii, Unicode unicode) {
  const std::string& s = self(a);
  if (s.empty()) return Value(false);
  bool all = true;
  each_code_point(s, [&](char32_t c) { return all = c < 0x80 ? ascii(static_cast<unsigned char>(c)) : unicode(c); });
  return Value(all);
}

}  // namespace

void install_str_methods(VM& vm) {
  Ref<Class> str = vm.builtin_type("str");
  auto method = [&](const char* name, BuiltinFn fn) { set_attr_builtin(str->dict, std::string("str.") + name, name, std::move(fn)); };
  method("find", [](VM&, const CallArgs& a) {
    arity(a, 1, 3, "find");
    auto hit = find_in(a, false);
    return Value(hit ? int64_t(*hit) : int64_t(-1));
  });
  method("rfind", [](VM&, const CallArgs& a) {
    arity(a, 1, 3, "rfind");
    auto hit = find_in(a, true);
    return Value(hit ? int64_t(*hit) : int64_t(-1));
  });
  method("index", [](VM&, const CallArgs& a) {
    arity(a, 1, 3, "index");
    auto hit = find_in(a, false);
    if (!hit) throw PyError("ValueError", "substring not found");
    return Value(int64_t(*hit));
  });
  method("rindex", [](VM&, const CallArgs& a) {
    arity(a, 1, 3, "rindex");
    auto hit = find_in(a, true);
    if (!hit) throw PyError("ValueError", "substring not found");
    return Value(int64_t(*hit));
  });
  method("count", [](VM&, const CallArgs& a) {
    arity(a, 1, 3, "count");
    const StrChars chars(a[0]);
    const std::string& sub = as_str(a[1]);
    auto [b, e] = bounds(a, 2, chars.size());
    if (e < b) return Value(int64_t(0));
    if (sub.empty()) return Value(int64_t(e - b + 1));
    const std::string_view window = chars.range(b, e);
    int64_t n = 0;
    for (size_t pos = 0; (pos = window.find(sub, pos)) != std::string_view::npos; pos += sub.size()) ++n;
    return Value(n);
  });
  method("split", [](VM&, const CallArgs& a) { return split(a, false); });
  method("rsplit", [](VM&, const CallArgs& a) { return split(a, true); });
  method("splitlines", [](VM&, const CallArgs& a) {
    const std::string& s = self(a);
    const bool keep = a.npos > 1 ? a[1].is_bool() && a[1].as_bool() : false;
    ValueVec out;
    size_t b = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '\n' && s[i] != '\r') continue;
      size_t e = i;
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      out.push_back(str_value(s.substr(b, (keep ? i + 1 : e) - b)));
      b = i + 1;
    }
    if (b < s.size()) out.push_back(str_value(s.substr(b)));
    return list_value(std::move(out));
  });
  for (bool right : {false, true}) {
    method(right ? "rpartition" : "partition", [right](VM&, const CallArgs& a) {
      arity(a, 1, 1, right ? "rpartition" : "partition");
      const std::string& s = self(a);
      const std::string& sep = as_str(a[1]);
      if (sep.empty()) throw PyError("ValueError", "empty separator");
      size_t hit = right ? s.rfind(sep) : s.find(sep);
      if (hit == std::string::npos)
        return right ? tuple_value({str_value(""), str_value(""), str_value(s)})
                     : tuple_value({str_value(s), str_value(""), str_value("")});
      return tuple_value({str_value(s.substr(0, hit)), str_value(sep), str_value(s.substr(hit + sep.size()))});
    });
  }
  method("startswith", [](VM&, const CallArgs& a) { return affix_test(a, true); });
  method("endswith", [](VM&, const CallArgs& a) { return affix_test(a, false); });
  method("ljust", [](VM&, const CallArgs& a) { return pad(a, "ljust", -1); });
  method("rjust", [](VM&, const CallArgs& a) { return pad(a, "rjust", 1); });
  method("center", [](VM&, const CallArgs& a) { return pad(a, "center", 0); });
  method("zfill", [](VM&, const CallArgs& a) {
    arity(a, 1, 1, "zfill");
    std::string s = self(a);
    const int64_t width = to_index(a[1], "width");
    const size_t length = StrChars(a[0]).size();
    if (width <= int64_t(length)) return str_value(s);
    size_t sign = !s.empty() && (s[0] == '+' || s[0] == '-') ? 1 : 0;
    s.insert(sign, size_t(width) - length, '0');
    return str_value(std::move(s));
  });
  method("removeprefix", [](VM&, const CallArgs& a) {
    arity(a, 1, 1, "removeprefix");
    const std::string& s = self(a);
    const std::string& p = as_str(a[1]);
    return str_value(s.starts_with(p) ? s.substr(p.size()) : s);
  });
  method("removesuffix", [](VM&, const CallArgs& a) {
    arity(a, 1, 1, "removesuffix");
    const std::string& s = self(a);
    const std::string& p = as_str(a[1]);
    return str_value(!p.empty() && s.ends_with(p) ? s.substr(0, s.size() - p.size()) : s);
  });
  // capitalize, title and swapcase map character by character, as CPython
  // does, with each code point's full mapping (ß title-cases to "Ss").
  method("capitalize", [](VM&, const CallArgs& a) {
    const std::string& s = self(a);
    return str_value(map_chars(s, [&](char32_t c, size_t pos) {
      return pos == 0 ? unicode::title_of(c) : unicode::lower_in_context(s, pos);
    }));
  });
  method("title", [](VM&, const CallArgs& a) {
    const std::string& s = self(a);
    bool prev_cased = false;
    return str_value(map_chars(s, [&](char32_t c, size_t pos) {
      std::string out = prev_cased ? unicode::lower_in_context(s, pos) : unicode::title_of(c);
      prev_cased = unicode::is_cased(c);
      return out;
    }));
  });
  method("swapcase", [](VM&, const CallArgs& a) {
    const std::string& s = self(a);
    return str_value(map_chars(s, [&](char32_t c, size_t pos) {
      if (unicode::is_upper(c)) return unicode::lower_in_context(s, pos);
      if (unicode::is_lower(c)) return unicode::upper_of(c);
      std::string same;
      append_utf8(same, c);
      return same;
    }));
  });
  method("casefold", [](VM&, const CallArgs& a) {
    std::string s = self(a);
    if (!is_ascii(s)) return str_value(unicode::casefold(s));
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return str_value(std::move(s));
  });
  method("isdigit", [](VM&, const CallArgs& a) { return all_chars(a, [](unsigned char c) { return std::isdigit(c) != 0; }, unicode::is_digit); });
  method("isdecimal", [](VM&, const CallArgs& a) { return all_chars(a, [](unsigned char c) { return std::isdigit(c) != 0; }, unicode::is_decimal); });
  method("isnumeric", [](VM&, const CallArgs& a) { return all_chars(a, [](unsigned char c) { return std::isdigit(c) != 0; }, unicode::is_numeric); });
  method("isalpha", [](VM&, const CallArgs& a) { return all_chars(a, [](unsigned char c) { return std::isalpha(c) != 0; }, unicode::is_alpha); });
  method("isalnum", [](VM&, const CallArgs& a) {
    return all_chars(a, [](unsigned char c) { return std::isalnum(c) != 0; },
                     [](char32_t c) { return unicode::is_alpha(c) || unicode::is_numeric(c); });
  });
  method("isspace", [](VM&, const CallArgs& a) {
    // CPython's ASCII whitespace includes \x1c-\x1f (bidi class B/S).
    return all_chars(a, [](unsigned char c) { return std::isspace(c) != 0 || (c >= 0x1C && c <= 0x1F); }, unicode::is_space);
  });
  method("isascii", [](VM&, const CallArgs& a) { return Value(is_ascii(self(a))); });
  method("isidentifier", [](VM&, const CallArgs& a) {
    const std::string& s = self(a);
    if (s.empty()) return Value(false);
    bool ok = true, first = true;
    each_code_point(s, [&](char32_t c) {
      ok = c < 0x80 ? (c == '_' || std::isalpha(int(c)) || (!first && std::isdigit(int(c))))
                    : (first ? unicode::is_identifier_start(c) : unicode::is_identifier_continue(c));
      first = false;
      return ok;
    });
    return Value(ok);
  });
  for (bool upper : {false, true}) {
    method(upper ? "isupper" : "islower", [upper](VM&, const CallArgs& a) {
      bool cased = false, ok = true;
      each_code_point(self(a), [&](char32_t c) {
        if (upper ? unicode::is_lower(c) || unicode::is_title(c) : unicode::is_upper(c) || unicode::is_title(c)) return ok = false;
        cased = cased || unicode::is_cased(c);
        return true;
      });
      return Value(ok && cased);
    });
  }
  method("istitle", [](VM&, const CallArgs& a) {
    // Uppercase and titlecase letters only after uncased ones, lowercase only after cased ones.
    bool cased = false, previous_cased = false, ok = true;
    each_code_point(self(a), [&](char32_t c) {
      if (unicode::is_upper(c) || unicode::is_title(c)) {
        if (previous_cased) return ok = false;
        previous_cased = cased = true;
      } else if (unicode::is_lower(c)) {
        if (!previous_cased) return ok = false;
        previous_cased = cased = true;
      } else {
        previous_cased = false;
      }
      return true;
    });
    return Value(ok && cased);
  });

  Ref<Dict> b = vm.builtins();
  set_attr_builtin(b, "chr", "chr", [](VM&, const CallArgs& a) {
    if (a.npos != 1) throw_type_error("chr() takes exactly one argument (" + std::to_string(a.npos) + " given)");
    const int64_t c = to_index(a[0], "chr()");
    if (c < 0 || c > 0x10FFFF) throw PyError("ValueError", "chr() arg not in range(0x110000)");
    std::string out;
    append_utf8(out, char32_t(c));
    return str_value(std::move(out));
  });
  set_attr_builtin(b, "ord", "ord", [](VM&, const CallArgs& a) {
    if (a.npos != 1) throw_type_error("ord() takes exactly one argument (" + std::to_string(a.npos) + " given)");
    const std::string& s = as_str(a[0]);
    if (s.empty() || utf8_char_length(s, 0) != s.size())
      throw_type_error("ord() expected a character, but string of length " + std::to_string(StrChars(a[0]).size()) +
                       " found");
    return Value(int64_t(utf8_decode_at(s, 0)));
  });
}

}  // namespace kiln::py
