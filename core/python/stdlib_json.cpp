// json: dumps and loads natively (a str is UTF-8 bytes to the subset, and
// ensure_ascii escapes code points), with CPython 3.12's text: separators,
// indent, sort_keys, float reprs, NaN/Infinity, and its error messages.
// dump and load go through the file object's write/read (sys.stdout).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <unordered_set>

#include "core/python/bigint.h"
#include "core/python/compiler.h"
#include "core/python/numpy_bridge.h"
#include "core/python/stdlib.h"
#include "core/python/vm.h"
#include "core/util/utf8.h"

namespace kiln::py {

namespace {

struct EncodeOptions {
  bool skipkeys = false, ensure_ascii = true, allow_nan = true, sort_keys = false;
  bool has_indent = false;
  std::string indent, item_sep = ", ", key_sep = ": ";
  Value dflt;
};

void append_hex4(std::string& out, uint32_t u) {
  static const char* const digits = "0123456789abcdef";
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += digits[(u >> shift) & 0xF];
}

std::string quote(const std::string& s, bool ensure_ascii) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (c < 0x20) {
      append_hex4(out, c);
    } else if (c < 0x80 || !ensure_ascii) {
      out += char(c);
    } else {
      // Decodes one UTF-8 sequence into its code point.
      int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : 1;
      uint32_t cp = c & (0x3F >> extra);
      for (int k = 0; k < extra && i + 1 < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[++i]) & 0x3F);
      if (cp >= 0x10000) {
        cp -= 0x10000;
        append_hex4(out, 0xD800 | (cp >> 10));
        append_hex4(out, 0xDC00 | (cp & 0x3FF));
      } else {
        append_hex4(out, cp);
      }
    }
  }
  return out + "\"";
}

std::string float_text(double d, const EncodeOptions& o) {
  if (std::isfinite(d)) return repr(Value(d));
  if (!o.allow_nan) throw PyError("ValueError", "Out of range float values are not JSON compliant: " + repr(Value(d)));
  return std::isnan(d) ? "NaN" : d > 0 ? "Infinity" : "-Infinity";
}

class Encoder {
 public:
  Encoder(VM& vm, EncodeOptions o) : vm_(vm), o_(std::move(o)) {}

  void encode(const Value& v, int level, std::string& out) {
    vm_.charge_step();
    if (v.is_none()) { out += "null"; return; }
    if (v.is_bool()) { out += v.as_bool() ? "true" : "false"; return; }
    if (v.is_int() || v.is(ObjKind::BigInt)) { out += repr(v); return; }
    if (v.is_float()) { out += float_text(v.as_float(), o_); return; }
    // NumPy's float64 is a float subclass, which json encodes as the float
    // (NumPy's other scalars are not JSON serializable under CPython either).
    if (is_numpy_float64(v)) { out += float_text(numpy_scalar_value(v, false)->as_float(), o_); return; }
    if (v.is(ObjKind::Str)) { out += quote(v.as<Str>()->s, o_.ensure_ascii); return; }
    if (v.is(ObjKind::List) || v.is(ObjKind::Tuple) || v.is(ObjKind::Dict)) {
      if (!on_path_.insert(v.obj()).second) throw PyError("ValueError", "Circular reference detected");
      NestingGuard guard(" while encoding a JSON object");
      if (v.is(ObjKind::Dict)) encode_dict(*v.as<Dict>(), level, out);
      else encode_list(v.is(ObjKind::List) ? v.as<List>()->items : v.as<Tuple>()->items, level, out);
      on_path_.erase(v.obj());
      return;
    }
    // collections' defaultdict and Counter are dict subclasses in CPython (json
    // encodes them as objects); here they wrap the dict they hold.
    if (v.is(ObjKind::Instance) && v.as<Instance>()->cls->module == "collections")
      if (const Value* d = v.as<Instance>()->dict->find_str("_d"); d && d->is(ObjKind::Dict)) {
        encode(*d, level, out);
        return;
      }
    if (!o_.dflt.is_none()) {
      if (!on_path_.insert(v.obj()).second) throw PyError("ValueError", "Circular reference detected");
      encode(vm_.call(o_.dflt, ValueVec{v}), level, out);
      on_path_.erase(v.obj());
      return;
    }
    throw_type_error("Object of type " + type_name(v) + " is not JSON serializable");
  }

 private:
  std::string newline(int level) const { return o_.has_indent ? "\n" + repeat(level) : std::string(); }
  std::string repeat(int level) const {
    std::string s;
    for (int i = 0; i < level; ++i) s += o_.indent;
    return s;
  }

  void encode_list(const ValueVec& items, int level, std::string& out) {
    if (items.empty()) { out += "[]"; return; }
    out += "[" + newline(level + 1);
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += o_.item_sep + newline(level + 1);
      encode(items[i], level + 1, out);
    }
    out += newline(level) + "]";
  }

  void encode_dict(const Dict& d, int level, std::string& out) {
    std::vector<std::pair<Value, Value>> items = d.items();
    if (items.empty()) { out += "{}"; return; }
    if (o_.sort_keys)
      std::stable_sort(items.begin(), items.end(), [&](const auto& a, const auto& b) {
        return vm_.truth(vm_.compare(CompareKind::Lt, a.first, b.first));
      });
    out += "{" + newline(level + 1);
    bool first = true;
    for (const auto& [k, v] : items) {
      std::string key;
      if (k.is(ObjKind::Str)) key = k.as<Str>()->s;
      else if (k.is_float()) key = float_text(k.as_float(), o_);
      else if (k.is_bool()) key = k.as_bool() ? "true" : "false";
      else if (k.is_none()) key = "null";
      else if (k.is_int() || k.is(ObjKind::BigInt)) key = repr(k);
      else if (o_.skipkeys) continue;
      else throw_type_error("keys must be str, int, float, bool or None, not " + type_name(k));
      if (!first) out += o_.item_sep + newline(level + 1);
      first = false;
      out += quote(key, o_.ensure_ascii) + o_.key_sep;
      encode(v, level + 1, out);
    }
    out += newline(level) + "}";
  }

  VM& vm_;
  EncodeOptions o_;
  std::unordered_set<Object*> on_path_;
};

// Where and why a document does not parse; json.py raises JSONDecodeError.
struct DecodeFailure {
  std::string msg;
  size_t pos, line, col;
};

// CPython's json.decoder: the same acceptance and the same messages.
class Decoder {
 public:
  Decoder(VM& vm, const std::string& s) : vm_(vm), s_(s) {}

  Value decode() {
    skip_ws();
    Value v = value();
    skip_ws();
    if (pos_ != s_.size()) fail("Extra data", pos_);
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& msg, size_t pos) {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos && i < s_.size(); ++i) {
      if (s_[i] == '\n') { ++line; col = 1; } else { ++col; }
    }
    throw DecodeFailure{msg, pos, line, col};
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool literal(const char* word) {
    size_t n = std::char_traits<char>::length(word);
    if (s_.compare(pos_, n, word) != 0) return false;
    pos_ += n;
    return true;
  }

  Value value() {
    vm_.charge_step();
    NestingGuard guard(" while decoding a JSON document");
    if (pos_ >= s_.size()) fail("Expecting value", pos_);
    char c = s_[pos_];
    if (c == '"') return string();
    if (c == '{') return object();
    if (c == '[') return array();
    if (literal("null")) return Value();
    if (literal("true")) return Value(true);
    if (literal("false")) return Value(false);
    if (literal("NaN")) return Value(std::nan(""));
    if (literal("Infinity")) return Value(HUGE_VAL);
    if (literal("-Infinity")) return Value(-HUGE_VAL);
    return number();
  }

  Value number() {
    size_t start = pos_, p = pos_;
    if (p < s_.size() && s_[p] == '-') ++p;
    if (p >= s_.size() || !isdigit(static_cast<unsigned char>(s_[p]))) fail("Expecting value", start);
    if (s_[p] == '0') ++p;
    else while (p < s_.size() && isdigit(static_cast<unsigned char>(s_[p]))) ++p;
    bool is_float = false;
    if (p + 1 < s_.size() && s_[p] == '.' && isdigit(static_cast<unsigned char>(s_[p + 1]))) {
      is_float = true;
      p += 2;
      while (p < s_.size() && isdigit(static_cast<unsigned char>(s_[p]))) ++p;
    }
    if (p < s_.size() && (s_[p] == 'e' || s_[p] == 'E')) {
      size_t q = p + 1;
      if (q < s_.size() && (s_[q] == '+' || s_[q] == '-')) ++q;
      if (q < s_.size() && isdigit(static_cast<unsigned char>(s_[q]))) {
        is_float = true;
        p = q;
        while (p < s_.size() && isdigit(static_cast<unsigned char>(s_[p]))) ++p;
      }
    }
    pos_ = p;
    std::string text = s_.substr(start, p - start);
    if (is_float) return Value(std::strtod(text.c_str(), nullptr));
    return int_parse(text, 10);
  }

  uint32_t hex4(size_t at) {
    if (at + 4 > s_.size()) fail("Invalid \\uXXXX escape", at - 1);
    uint32_t u = 0;
    for (size_t i = at; i < at + 4; ++i) {
      char c = s_[i];
      u <<= 4;
      if (c >= '0' && c <= '9') u |= uint32_t(c - '0');
      else if (c >= 'a' && c <= 'f') u |= uint32_t(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') u |= uint32_t(c - 'A' + 10);
      else fail("Invalid \\uXXXX escape", at - 1);
    }
    return u;
  }

  Value string() { return str_value(raw_string()); }

  std::string raw_string() {
    const size_t begin = pos_++;
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) fail("Unterminated string starting at", begin);
      char c = s_[pos_];
      if (c == '"') { ++pos_; return out; }
      if (static_cast<unsigned char>(c) < 0x20) fail("Invalid control character at", pos_);
      if (c != '\\') { out += c; ++pos_; continue; }
      if (pos_ + 1 >= s_.size()) fail("Unterminated string starting at", begin);
      char e = s_[pos_ + 1];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = hex4(pos_ + 2);
          pos_ += 4;
          if (cp >= 0xD800 && cp <= 0xDBFF && s_.compare(pos_ + 2, 2, "\\u") == 0) {
            uint32_t lo = hex4(pos_ + 4);
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
              pos_ += 6;
            }
          }
          append_utf8(out, cp);
          break;
        }
        default: fail("Invalid \\escape", pos_);
      }
      pos_ += 2;
    }
  }

  Value object() {
    auto d = make<Dict>();
    ++pos_;
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == '}') { ++pos_; return Value(d); }
    while (true) {
      if (pos_ >= s_.size() || s_[pos_] != '"') fail("Expecting property name enclosed in double quotes", pos_);
      Value key = string();
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != ':') fail("Expecting ':' delimiter", pos_);
      ++pos_;
      skip_ws();
      d->set(key, value());
      skip_ws();
      if (pos_ < s_.size() && s_[pos_] == '}') { ++pos_; return Value(d); }
      if (pos_ >= s_.size() || s_[pos_] != ',') fail("Expecting ',' delimiter", pos_);
      ++pos_;
      skip_ws();
    }
  }

  Value array() {
    ValueVec items;
    ++pos_;
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == ']') { ++pos_; return list_value({}); }
    while (true) {
      items.push_back(value());
      skip_ws();
      if (pos_ < s_.size() && s_[pos_] == ']') { ++pos_; return list_value(std::move(items)); }
      if (pos_ >= s_.size() || s_[pos_] != ',') fail("Expecting ',' delimiter", pos_);
      ++pos_;
      skip_ws();
    }
  }

  VM& vm_;
  const std::string& s_;
  size_t pos_ = 0;
};

Value kw(const CallArgs& a, std::string_view name) {
  const Value* v = a.kwarg(name);
  return v ? *v : Value();
}

}  // namespace

void load_json(VM& vm, const Ref<Module>& m) {
  def_native(m, "dumps", [](VM& vm, const CallArgs& a) {
    if (a.npos != 1) throw_type_error("dumps() takes 1 positional argument but " + std::to_string(a.npos) + " were given");
    if (a.kw)
      for (const auto& [k, v] : *a.kw)
        if (k != "skipkeys" && k != "ensure_ascii" && k != "check_circular" && k != "allow_nan" && k != "indent" &&
            k != "separators" && k != "default" && k != "sort_keys" && k != "cls")
          throw_type_error("dumps() got an unexpected keyword argument '" + k + "'");
    EncodeOptions o;
    if (Value v = kw(a, "skipkeys"); !v.is_none()) o.skipkeys = vm.truth(v);
    if (Value v = kw(a, "ensure_ascii"); !v.is_none()) o.ensure_ascii = vm.truth(v);
    if (Value v = kw(a, "allow_nan"); !v.is_none()) o.allow_nan = vm.truth(v);
    if (Value v = kw(a, "sort_keys"); !v.is_none()) o.sort_keys = vm.truth(v);
    if (Value v = kw(a, "cls"); !v.is_none()) throw_unsupported("json.dumps(cls=) is outside Kiln's subset");
    o.dflt = kw(a, "default");
    if (Value ind = kw(a, "indent"); !ind.is_none()) {
      o.has_indent = true;
      o.indent = ind.is(ObjKind::Str) ? ind.as<Str>()->s : std::string(size_t(std::max<int64_t>(0, to_index(ind, "indent"))), ' ');
      o.item_sep = ",";
    }
    if (Value sep = kw(a, "separators"); !sep.is_none()) {
      ValueVec parts = vm.to_vector(sep);
      if (parts.size() != 2) throw PyError("ValueError", "too many values to unpack (expected 2)");
      o.item_sep = as_str(parts[0]);
      o.key_sep = as_str(parts[1]);
    }
    std::string out;
    Encoder(vm, std::move(o)).encode(a[0], 0, out);
    return str_value(std::move(out));
  });
  // (True, value) or (False, message, pos, line, column).
  def_native(m, "_scan", [](VM& vm, const CallArgs& a) {
    if (!a[0].is(ObjKind::Str)) throw_type_error("the JSON object must be str, bytes or bytearray, not " + type_name(a[0]));
    try {
      return tuple_value({Value(true), Decoder(vm, a[0].as<Str>()->s).decode()});
    } catch (const DecodeFailure& f) {
      return tuple_value({Value(false), str_value(f.msg), Value(int64_t(f.pos)), Value(int64_t(f.line)), Value(int64_t(f.col))});
    }
  });
  static const Expected<CodePtr> code = compile_module(R"PY(
import _kiln_std


class JSONDecodeError(ValueError):
    def __init__(self, msg, doc, pos, lineno=1, colno=1):
        errmsg = "%s: line %d column %d (char %d)" % (msg, lineno, colno, pos)
        ValueError.__init__(self, errmsg)
        self.args = (errmsg,)
        self.msg = msg
        self.doc = doc
        self.pos = pos
        self.lineno = lineno
        self.colno = colno


_kiln_std.set_class_name(JSONDecodeError, "JSONDecodeError", "json.decoder")


def loads(s, **kwargs):
    for k in kwargs:
        if k not in ("cls", "object_hook", "parse_float", "parse_int", "parse_constant", "object_pairs_hook"):
            raise TypeError("loads() got an unexpected keyword argument '" + k + "'")
        _kiln_std.refuse("json.loads(" + k + "=) is outside Kiln's subset")
    result = _scan(s)
    if result[0]:
        return result[1]
    raise JSONDecodeError(result[1], s, result[2], result[3], result[4])


def dump(obj, fp, **kwargs):
    fp.write(dumps(obj, **kwargs))


def load(fp, **kwargs):
    return loads(fp.read(), **kwargs)
)PY", "json/__init__.py");
  run_module_source(vm, m, code);
}

}  // namespace kiln::py
