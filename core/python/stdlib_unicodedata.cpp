// unicodedata: CPython's functions over the Unicode database ICU carries
// (unicode_text.h). Arguments and errors as CPython 3.11 checks them; the
// database version is ICU's, so code points assigned after it read as
// unassigned.
#include "core/python/stdlib.h"
#include "core/python/unicode_text.h"
#include "core/python/vm.h"
#include "core/util/utf8.h"

namespace kiln::py {
namespace {

// The one code point of a str argument, as CPython's "argument must be a unicode character".
char32_t character(const CallArgs& a, const char* fn) {
  if (a.npos < 1) throw_type_error(std::string(fn) + "() missing required argument 'chr' (pos 1)");
  if (!a[0].is(ObjKind::Str))
    throw_type_error(std::string(fn) + "() argument 1 must be a unicode character, not " + type_name(a[0]));
  const std::string& s = a[0].as<Str>()->s;
  if (s.empty() || utf8_char_length(s, 0) != s.size())
    throw_type_error(std::string(fn) + "() argument 1 must be a unicode character, not str");
  return utf8_decode_at(s, 0);
}

void arity(const CallArgs& a, size_t lo, size_t hi, const char* fn) {
  if (a.npos < lo || a.npos > hi)
    throw_type_error(std::string(fn) + "() takes " + (lo == hi ? "exactly " + std::to_string(lo) : "at most " + std::to_string(hi)) +
                     " argument" + (hi == 1 ? "" : "s") + " (" + std::to_string(a.npos) + " given)");
}

// decimal/digit/numeric: the value, else the default, else ValueError.
template <class T>
Value value_or_default(const std::optional<T>& v, const CallArgs& a, const char* what) {
  if (v) return Value(*v);
  if (a.npos > 1) return a[1];
  throw PyError("ValueError", what);
}

}  // namespace

void load_unicodedata(VM&, const Ref<Module>& m) {
  m->dict->set(str_value("unidata_version"), str_value(unicode::unicode_version()));
  def_native(m, "normalize", [](VM&, const CallArgs& a) {
    arity(a, 2, 2, "normalize");
    const std::string& form = as_str(a[0]);
    std::optional<std::string> out = unicode::normalize(form, as_str(a[1]));
    if (!out) throw PyError("ValueError", "invalid normalization form");
    return str_value(std::move(*out));
  });
  def_native(m, "is_normalized", [](VM&, const CallArgs& a) {
    arity(a, 2, 2, "is_normalized");
    std::optional<bool> yes = unicode::is_normalized(as_str(a[0]), as_str(a[1]));
    if (!yes) throw PyError("ValueError", "invalid normalization form");
    return Value(*yes);
  });
  def_native(m, "category", [](VM&, const CallArgs& a) {
    arity(a, 1, 1, "category");
    return str_value(unicode::category(character(a, "category")));
  });
  def_native(m, "bidirectional", [](VM&, const CallArgs& a) {
    arity(a, 1, 1, "bidirectional");
    return str_value(unicode::bidirectional(character(a, "bidirectional")));
  });
  def_native(m, "combining", [](VM&, const CallArgs& a) {
    arity(a, 1, 1, "combining");
    return Value(int64_t(unicode::combining(character(a, "combining"))));
  });
  def_native(m, "mirrored", [](VM&, const CallArgs& a) {
    arity(a, 1, 1, "mirrored");
    return Value(int64_t(unicode::mirrored(character(a, "mirrored"))));
  });
  def_native(m, "east_asian_width", [](VM&, const CallArgs& a) {
    arity(a, 1, 1, "east_asian_width");
    return str_value(unicode::east_asian_width(character(a, "east_asian_width")));
  });
  def_native(m, "name", [](VM&, const CallArgs& a) {
    arity(a, 1, 2, "name");
    std::optional<std::string> n = unicode::name(character(a, "name"));
    if (n) return str_value(std::move(*n));
    if (a.npos > 1) return a[1];
    throw PyError("ValueError", "no such name");
  });
  def_native(m, "lookup", [](VM&, const CallArgs& a) {
    arity(a, 1, 1, "lookup");
    const std::string& wanted = as_str(a[0]);
    std::optional<char32_t> c = unicode::lookup(wanted);
    if (!c) throw PyError("KeyError", "\"undefined character name '" + wanted + "'\"");
    std::string out;
    append_utf8(out, *c);
    return str_value(std::move(out));
  });
  def_native(m, "decimal", [](VM&, const CallArgs& a) {
    arity(a, 1, 2, "decimal");
    std::optional<int> v = unicode::decimal(character(a, "decimal"));
    return value_or_default(v ? std::optional<int64_t>(*v) : std::nullopt, a, "not a decimal");
  });
  def_native(m, "digit", [](VM&, const CallArgs& a) {
    arity(a, 1, 2, "digit");
    std::optional<int> v = unicode::digit(character(a, "digit"));
    return value_or_default(v ? std::optional<int64_t>(*v) : std::nullopt, a, "not a digit");
  });
  def_native(m, "numeric", [](VM&, const CallArgs& a) {
    arity(a, 1, 2, "numeric");
    return value_or_default(unicode::numeric(character(a, "numeric")), a, "not a numeric character");
  });
}

}  // namespace kiln::py
