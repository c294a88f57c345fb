#pragma once
// A small JSON scanner for TORCH_TRACE envelopes. The trace reader validates
// every envelope, but only reads a handful of keys out of it, so values stay
// as spans of the input text and are decoded only when asked for. Python's
// json module writes NaN/Infinity/-Infinity for non-finite floats; they are
// accepted as numbers. Nothing here allocates except string decoding and the
// caller's (reused) member vectors.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::trace::json {

enum class Kind : uint8_t { Null, Bool, Number, String, Array, Object };

// One JSON value inside a larger text; `text` spans it exactly (a string's
// span includes its quotes).
struct Value {
  Kind kind = Kind::Null;
  std::string_view text;
  bool is_null() const { return kind == Kind::Null; }
  bool is_object() const { return kind == Kind::Object; }
  bool is_array() const { return kind == Kind::Array; }
  bool is_string() const { return kind == Kind::String; }
  bool is_number() const { return kind == Kind::Number; }
};

struct Member {
  std::string_view key;  // raw, between the quotes (escapes not decoded)
  Value value;
};

struct ParseError {
  size_t offset = 0;  // into the text handed to the parser
  std::string message;
};

// Parses the single value that makes up `text` (whitespace around it allowed).
bool parse(std::string_view text, Value& out, ParseError& err);

// Parses the object that makes up `text` and lists its top-level members in
// order (members is cleared first). Fails when `text` is not one object.
bool parse_object(std::string_view text, std::vector<Member>& members, ParseError& err);

// Members / elements of a value that came out of a successful parse.
void members(const Value& object, std::vector<Member>& out);
void elements(const Value& array, std::vector<Value>& out);
// The member named `key` of an object value, if any.
std::optional<Value> find(const Value& object, std::string_view key);
const Value* find(const std::vector<Member>& members, std::string_view key);

// Compares a raw key (as in Member::key) with plain text.
bool key_is(std::string_view raw_key, std::string_view key);

// Decoded text of a string value (\uXXXX becomes UTF-8). Non-strings give "".
std::string to_string(const Value& v);
// The string value's text when it holds no escapes (no copy needed), else nullopt.
std::optional<std::string_view> plain_string(const Value& v);
bool to_int(const Value& v, int64_t& out);  // integral numbers only
bool to_double(const Value& v, double& out);
bool to_bool(const Value& v, bool& out);

}  // namespace kiln::trace::json
