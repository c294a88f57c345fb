#include "core/trace/json_scan.h"
#include "core/util/utf8.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

namespace kiln::trace::json {
namespace {

// Deep enough for any real envelope; bounded so hostile input cannot blow the stack.
constexpr int kMaxDepth = 200;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Cursor {
 public:
  Cursor(std::string_view text, ParseError& err) : begin_(text.data()), p_(text.data()), end_(text.data() + text.size()), err_(err) {}

  bool value(Value& out) {
    skip_space();
    if (p_ == end_) return fail("unexpected end of JSON");
    const char* start = p_;
    switch (*p_) {
      case '{':
        if (!object()) return false;
        out.kind = Kind::Object;
        break;
      case '[':
        if (!array()) return false;
        out.kind = Kind::Array;
        break;
      case '"':
        if (!string()) return false;
        out.kind = Kind::String;
        break;
      case 't':
        if (!literal("true")) return false;
        out.kind = Kind::Bool;
        break;
      case 'f':
        if (!literal("false")) return false;
        out.kind = Kind::Bool;
        break;
      case 'n':
        if (!literal("null")) return false;
        out.kind = Kind::Null;
        break;
      case 'N':
        if (!literal("NaN")) return false;
        out.kind = Kind::Number;
        break;
      case 'I':
        if (!literal("Infinity")) return false;
        out.kind = Kind::Number;
        break;
      default:
        if (*p_ == '-' || is_digit(*p_)) {
          if (!number()) return false;
          out.kind = Kind::Number;
          break;
        }
        return fail(std::string("unexpected character '") + printable(*p_) + "'");
    }
    out.text = std::string_view(start, size_t(p_ - start));
    return true;
  }

  // Parses an object, reporting each member to `members` when it is non-null.
  bool object(std::vector<Member>* members = nullptr) {
    if (++depth_ > kMaxDepth) return fail("JSON nested too deeply");
    ++p_;  // '{'
    skip_space();
    if (p_ < end_ && *p_ == '}') {
      ++p_;
      --depth_;
      return true;
    }
    for (;;) {
      skip_space();
      if (p_ == end_) return fail("unexpected end of JSON inside an object");
      if (*p_ != '"') return fail("expected a string key");
      const char* key_start = p_ + 1;
      if (!string()) return false;
      std::string_view key(key_start, size_t(p_ - 1 - key_start));
      skip_space();
      if (p_ == end_ || *p_ != ':') return fail("expected ':' after an object key");
      ++p_;
      Value v;
      if (!value(v)) return false;
      if (members) members->push_back({key, v});
      skip_space();
      if (p_ == end_) return fail("unexpected end of JSON inside an object");
      if (*p_ == ',') {
        ++p_;
        continue;
      }
      if (*p_ == '}') {
        ++p_;
        --depth_;
        return true;
      }
      return fail("expected ',' or '}' in an object");
    }
  }

  bool array(std::vector<Value>* elements = nullptr) {
    if (++depth_ > kMaxDepth) return fail("JSON nested too deeply");
    ++p_;  // '['
    skip_space();
    if (p_ < end_ && *p_ == ']') {
      ++p_;
      --depth_;
      return true;
    }
    for (;;) {
      Value v;
      if (!value(v)) return false;
      if (elements) elements->push_back(v);
      skip_space();
      if (p_ == end_) return fail("unexpected end of JSON inside an array");
      if (*p_ == ',') {
        ++p_;
        continue;
      }
      if (*p_ == ']') {
        ++p_;
        --depth_;
        return true;
      }
      return fail("expected ',' or ']' in an array");
    }
  }

  void skip_space() {
    while (p_ < end_ && is_space(*p_)) ++p_;
  }
  bool at_end() const { return p_ == end_; }
  size_t offset() const { return size_t(p_ - begin_); }
  bool fail(std::string message) {
    if (err_.message.empty()) {
      err_.offset = offset();
      err_.message = std::move(message);
    }
    return false;
  }

 private:
  static std::string printable(char c) {
    if (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) return std::string(1, c);
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
    return buf;
  }

  bool string() {
    ++p_;  // opening quote
    for (;;) {
      // Runs of ordinary characters dominate: skip them without branching on escapes.
      while (p_ < end_ && *p_ != '"' && *p_ != '\\' && static_cast<unsigned char>(*p_) >= 0x20) ++p_;
      if (p_ == end_) return fail("unterminated string");
      char c = *p_;
      if (c == '"') {
        ++p_;
        return true;
      }
      if (c != '\\') return fail("control character inside a string");
      if (++p_ == end_) return fail("unterminated string");
      char e = *p_++;
      if (e == 'u') {
        for (int i = 0; i < 4; ++i, ++p_)
          if (p_ == end_ || !std::isxdigit(static_cast<unsigned char>(*p_))) return fail("bad \\u escape in a string");
      } else if (!std::strchr("\"\\/bfnrt", e) || e == 0) {
        --p_;
        return fail(std::string("bad escape '\\") + printable(e) + "' in a string");
      }
    }
  }

  bool number() {
    if (*p_ == '-') {
      ++p_;
      if (p_ < end_ && *p_ == 'I') return literal("Infinity");
    }
    if (p_ == end_ || !is_digit(*p_)) return fail("bad number");
    if (*p_ == '0') {
      ++p_;
    } else {
      while (p_ < end_ && is_digit(*p_)) ++p_;
    }
    if (p_ < end_ && *p_ == '.') {
      ++p_;
      if (p_ == end_ || !is_digit(*p_)) return fail("bad number: digits must follow '.'");
      while (p_ < end_ && is_digit(*p_)) ++p_;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ == end_ || !is_digit(*p_)) return fail("bad number: digits must follow the exponent");
      while (p_ < end_ && is_digit(*p_)) ++p_;
    }
    return true;
  }

  bool literal(const char* word) {
    size_t n = std::strlen(word);
    if (size_t(end_ - p_) < n || std::memcmp(p_, word, n) != 0)
      return fail(std::string("unexpected character '") + printable(*p_) + "'");
    p_ += n;
    return true;
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  ParseError& err_;
  int depth_ = 0;
};

uint32_t hex4(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    char c = p[i];
    v = v * 16 + uint32_t(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  return v;
}

// Decodes the body of a validated string (without quotes).
std::string decode(std::string_view body) {
  std::string out;
  out.reserve(body.size());
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c != '\\') {
      out += c;
      continue;
    }
    char e = body[++i];
    switch (e) {
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        uint32_t cp = hex4(body.data() + i + 1);
        i += 4;
        // A surrogate pair encodes one code point above U+FFFF.
        if (cp >= 0xd800 && cp < 0xdc00 && i + 6 < body.size() && body[i + 1] == '\\' && body[i + 2] == 'u') {
          uint32_t lo = hex4(body.data() + i + 3);
          if (lo >= 0xdc00 && lo < 0xe000) {
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            i += 6;
          }
        }
        append_utf8(out, cp);
        break;
      }
      default: out += e; break;  // '"', '\\', '/'
    }
  }
  return out;
}

}  // namespace

bool parse(std::string_view text, Value& out, ParseError& err) {
  err = {};
  Cursor c(text, err);
  if (!c.value(out)) return false;
  c.skip_space();
  if (!c.at_end()) return c.fail("unexpected text after the JSON value");
  return true;
}

bool parse_object(std::string_view text, std::vector<Member>& members, ParseError& err) {
  err = {};
  members.clear();
  Cursor c(text, err);
  c.skip_space();
  if (c.at_end()) return c.fail("empty JSON");
  if (text[c.offset()] != '{') return c.fail("expected a JSON object");
  if (!c.object(&members)) return false;
  c.skip_space();
  if (!c.at_end()) return c.fail("unexpected text after the JSON object");
  return true;
}

void members(const Value& object, std::vector<Member>& out) {
  out.clear();
  if (!object.is_object()) return;
  ParseError err;
  Cursor c(object.text, err);
  c.object(&out);
}

void elements(const Value& array, std::vector<Value>& out) {
  out.clear();
  if (!array.is_array()) return;
  ParseError err;
  Cursor c(array.text, err);
  c.array(&out);
}

std::optional<Value> find(const Value& object, std::string_view key) {
  std::vector<Member> ms;
  members(object, ms);
  if (const Value* v = find(ms, key)) return *v;
  return std::nullopt;
}

const Value* find(const std::vector<Member>& ms, std::string_view key) {
  for (const Member& m : ms)
    if (key_is(m.key, key)) return &m.value;
  return nullptr;
}

bool key_is(std::string_view raw_key, std::string_view key) {
  if (raw_key == key) return true;
  if (raw_key.find('\\') == std::string_view::npos) return false;
  return decode(raw_key) == key;
}

std::string to_string(const Value& v) {
  if (!v.is_string() || v.text.size() < 2) return {};
  return decode(v.text.substr(1, v.text.size() - 2));
}

std::optional<std::string_view> plain_string(const Value& v) {
  if (!v.is_string() || v.text.size() < 2) return std::nullopt;
  std::string_view body = v.text.substr(1, v.text.size() - 2);
  if (body.find('\\') != std::string_view::npos) return std::nullopt;
  return body;
}

bool to_int(const Value& v, int64_t& out) {
  if (!v.is_number()) return false;
  const char* b = v.text.data();
  const char* e = b + v.text.size();
  auto [ptr, ec] = std::from_chars(b, e, out);
  return ec == std::errc() && ptr == e;
}

bool to_double(const Value& v, double& out) {
  if (!v.is_number()) return false;
  std::string_view t = v.text;
  if (t == "NaN") {
    out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (t == "Infinity" || t == "-Infinity") {
    out = t[0] == '-' ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    return true;
  }
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
  return ec == std::errc() && ptr == t.data() + t.size();
}

bool to_bool(const Value& v, bool& out) {
  if (v.kind != Kind::Bool) return false;
  out = v.text == "true";
  return true;
}

}  // namespace kiln::trace::json
