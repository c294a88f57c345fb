// The str methods model programs use beyond the basic ones of
// builtin_methods.cpp (searching, splitting with limits, padding, case and
// classification), and the chr / ord builtins, with CPython's results on
// ASCII text. Kiln's str holds UTF-8 bytes: indices count bytes, so text
// outside ASCII gives other positions than CPython's.
#include <algorithm>
#include <cctype>
#include <optional>

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
  const std::string& s = self(a);
  const std::string& sub = as_str(a[1]);
  auto [b, e] = bounds(a, 2, s.size());
  if (e < b || sub.size() > e - b) return std::nullopt;
  std::string_view window(s.data() + b, e - b);
  size_t hit = from_right ? window.rfind(sub) : window.find(sub);
  if (hit == std::string_view::npos) return std::nullopt;
  return b + hit;
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
  const std::string& s = self(a);
  auto [b, e] = bounds(a, 2, s.size());
  if (e < b) return Value(false);
  std::string_view window(s.data() + b, e - b);
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
  std::string fill = a.npos > 2 ? as_str(a[2]) : " ";
  if (fill.size() != 1) throw_type_error("The fill character must be exactly one character long");
  if (width <= int64_t(s.size())) return str_value(s);
  const size_t total = size_t(width) - s.size();
  // CPython's center puts the odd space on the left when the total is odd and the width is... its rule:
  size_t left = where < 0 ? 0 : where > 0 ? total : total / 2 + (total & size_t(width) & 1);
  return str_value(std::string(left, fill[0]) + s + std::string(total - left, fill[0]));
}

template <class Pred>
Value all_chars(const CallArgs& a, Pred pred) {
  const std::string& s = self(a);
  if (s.empty()) return Value(false);
  for (char c : s)
    if (!pred(static_cast<unsigned char>(c))) return Value(false);
  return Value(true);
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
    const std::string& s = self(a);
    const std::string& sub = as_str(a[1]);
    auto [b, e] = bounds(a, 2, s.size());
    if (e < b) return Value(int64_t(0));
    if (sub.empty()) return Value(int64_t(e - b + 1));
    int64_t n = 0;
    for (size_t pos = b; (pos = s.find(sub, pos)) != std::string::npos && pos + sub.size() <= e; pos += sub.size()) ++n;
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
    if (width <= int64_t(s.size())) return str_value(s);
    size_t sign = !s.empty() && (s[0] == '+' || s[0] == '-') ? 1 : 0;
    s.insert(sign, size_t(width) - s.size(), '0');
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
  method("capitalize", [](VM&, const CallArgs& a) {
    std::string s = self(a);
    for (size_t i = 0; i < s.size(); ++i) s[i] = char(i ? std::tolower(static_cast<unsigned char>(s[i])) : std::toupper(static_cast<unsigned char>(s[i])));
    return str_value(std::move(s));
  });
  method("title", [](VM&, const CallArgs& a) {
    std::string s = self(a);
    bool prev_cased = false;
    for (char& c : s) {
      unsigned char u = static_cast<unsigned char>(c);
      c = char(prev_cased ? std::tolower(u) : std::toupper(u));
      prev_cased = std::isalpha(u) != 0;
    }
    return str_value(std::move(s));
  });
  method("swapcase", [](VM&, const CallArgs& a) {
    std::string s = self(a);
    for (char& c : s) {
      unsigned char u = static_cast<unsigned char>(c);
      c = char(std::isupper(u) ? std::tolower(u) : std::toupper(u));
    }
    return str_value(std::move(s));
  });
  method("casefold", [](VM&, const CallArgs& a) {
    std::string s = self(a);
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return str_value(std::move(s));
  });
  method("isdigit", [](VM&, const CallArgs& a) { return all_chars(a, [](unsigned char c) { return std::isdigit(c) != 0; }); });
  method("isdecimal", [](VM&, const CallArgs& a) { return all_chars(a, [](unsigned char c) { return std::isdigit(c) != 0; }); });
  method("isnumeric", [](VM&, const CallArgs& a) { return all_chars(a, [](unsigned char c) { return std::isdigit(c) != 0; }); });
  method("isalpha", [](VM&, const CallArgs& a) { return all_chars(a, [](unsigned char c) { return std::isalpha(c) != 0; }); });
  method("isalnum", [](VM&, const CallArgs& a) { return all_chars(a, [](unsigned char c) { return std::isalnum(c) != 0; }); });
  method("isspace", [](VM&, const CallArgs& a) { return all_chars(a, [](unsigned char c) { return std::isspace(c) != 0; }); });
  method("isidentifier", [](VM&, const CallArgs& a) {
    const std::string& s = self(a);
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return Value(false);
    for (char c : s)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return Value(false);
    return Value(true);
  });
  for (bool upper : {false, true}) {
    method(upper ? "isupper" : "islower", [upper](VM&, const CallArgs& a) {
      bool cased = false;
      for (char c : self(a)) {
        unsigned char u = static_cast<unsigned char>(c);
        if (upper ? std::islower(u) : std::isupper(u)) return Value(false);
        cased = cased || std::isalpha(u);
      }
      return Value(cased);
    });
  }

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
    auto byte = [&](size_t i) { return uint32_t(static_cast<unsigned char>(s[i])); };
    size_t n = s.empty() ? 0 : byte(0) < 0x80 ? 1 : byte(0) < 0xE0 ? 2 : byte(0) < 0xF0 ? 3 : 4;
    if (s.empty() || s.size() != n)
      throw_type_error("ord() expected a character, but string of length " + std::to_string(s.size()) + " found");
    uint32_t c = n == 1 ? byte(0) : byte(0) & (0x7F >> n);
    for (size_t i = 1; i < n; ++i) c = (c << 6) | (byte(i) & 0x3F);
    return Value(int64_t(c));
  });
}

}  // namespace kiln::py
