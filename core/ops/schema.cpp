#include "core/ops/schema.h"

#include <cctype>
#include <charconv>

namespace kiln {
namespace {

class SchemaParser {
 public:
  explicit SchemaParser(std::string_view s) : s_(s) {}

  Schema parse() {
    Schema schema;
    schema.text = std::string(s_);
    std::string qualified = ident_with('.', ':');
    auto dot = qualified.find('.');
    schema.name = qualified.substr(0, dot);
    if (dot != std::string::npos) schema.overload = qualified.substr(dot + 1);
    if (schema.name.find("::") == std::string::npos) schema.name = "aten::" + schema.name;
    expect('(');
    bool kwarg_only = false;
    while (!consume(')')) {
      if (!schema.args.empty() || kwarg_only) expect(',');
      if (consume('*')) {
        kwarg_only = true;
        continue;
      }
      Argument a = argument(true);
      a.kwarg_only = kwarg_only;
      schema.args.push_back(std::move(a));
    }
    expect('-');
    expect('>');
    if (consume('(')) {
      while (!consume(')')) {
        if (!schema.returns.empty()) expect(',');
        schema.returns.push_back(argument(false));
      }
    } else {
      schema.returns.push_back(argument(false));
    }
    skip_ws();
    if (pos_ != s_.size()) fail("trailing text");
    return schema;
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    KILN_FAIL("bad op schema '", s_, "' at column ", pos_ + 1, ": ", what);
  }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool consume(char c) {
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!consume(c)) fail(std::string("expected '") + c + "'");
  }
  std::string ident_with(char extra1 = 0, char extra2 = 0) {
    skip_ws();
    size_t start = pos_;
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (extra1 && c == extra1) ||
          (extra2 && c == extra2))
        ++pos_;
      else
        break;
    }
    if (start == pos_) fail("expected a name");
    return std::string(s_.substr(start, pos_ - start));
  }

  ArgType type(Argument& a) {
    ArgType t;
    size_t start = pos_;
    std::string base = ident_with('.');
    static const std::pair<std::string_view, ArgType::Base> kBases[] = {
        {"Tensor", ArgType::Base::Tensor},       {"int", ArgType::Base::Int},
        {"SymInt", ArgType::Base::Int},          {"float", ArgType::Base::Float},
        {"bool", ArgType::Base::Bool},           {"Scalar", ArgType::Base::Scalar},
        {"ScalarType", ArgType::Base::ScalarType}, {"str", ArgType::Base::Str},
        {"Layout", ArgType::Base::Layout},       {"Device", ArgType::Base::Device},
        {"MemoryFormat", ArgType::Base::MemoryFormat}, {"Generator", ArgType::Base::Generator},
    };
    for (const auto& [n, b] : kBases)
      if (base == n) t.base = b;
    if (consume('(')) {  // alias annotation: (a), (a!), (a -> *)
      while (pos_ < s_.size() && s_[pos_] != ')') {
        if (s_[pos_] == '!') a.is_write = true;
        ++pos_;
      }
      expect(')');
      a.is_alias = true;
    }
    if (consume('?')) t.element_optional = true;
    if (consume('[')) {
      t.is_list = true;
      skip_ws();
      if (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) t.fixed_size = int(number());
      expect(']');
      if (consume('?')) t.optional = true;
    } else if (t.element_optional) {
      t.optional = true;
      t.element_optional = false;
    }
    t.text = std::string(s_.substr(start, pos_ - start));
    return t;
  }

  int64_t number() {
    skip_ws();
    int64_t v = 0;
    auto r = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), v);
    if (r.ec != std::errc()) fail("expected a number");
    pos_ = size_t(r.ptr - s_.data());
    return v;
  }

  Value default_value(const ArgType& t) {
    skip_ws();
    size_t start = pos_;
    int depth = 0;
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == '[') ++depth;
      if (c == ']') --depth;
      if (depth == 0 && (c == ',' || c == ')')) break;
      ++pos_;
    }
    std::string text(s_.substr(start, pos_ - start));
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
    return literal(text, t);
  }

  Value literal(const std::string& text, const ArgType& t) {
    if (text == "None") return Value();
    // at::Reduction's enumerators, as native_functions.yaml writes loss defaults.
    if (t.base == ArgType::Base::Int && text == "Mean") return Value(int64_t{1});
    if (t.base == ArgType::Base::Int && text == "Sum") return Value(int64_t{2});
    if (text == "True") return Value(true);
    if (text == "False") return Value(false);
    if (t.is_list) {
      std::string inner = text;
      if (inner.size() >= 2 && inner.front() == '[') inner = inner.substr(1, inner.size() - 2);
      ValueList items;
      size_t p = 0;
      while (p < inner.size()) {
        size_t q = inner.find(',', p);
        if (q == std::string::npos) q = inner.size();
        std::string item = inner.substr(p, q - p);
        size_t a = item.find_first_not_of(' '), b = item.find_last_not_of(' ');
        if (a != std::string::npos) items.push_back(literal(item.substr(a, b - a + 1), ArgType{}));
        p = q + 1;
      }
      // int[2] stride=1 means [1, 1]
      if (t.fixed_size > 1 && items.size() == 1) items.assign(size_t(t.fixed_size), items[0]);
      return Value(std::move(items));
    }
    if (!text.empty() && (text.front() == '"' || text.front() == '\''))
      return Value(text.substr(1, text.size() - 2));
    if (t.base == ArgType::Base::Float || text.find_first_of(".e") != std::string::npos) {
      if (text.find_first_not_of("0123456789.-+e") == std::string::npos) {
        double d = 0;
        std::from_chars(text.data(), text.data() + text.size(), d);
        return Value(d);
      }
    }
    if (text.find_first_not_of("0123456789-") == std::string::npos) {
      int64_t i = 0;
      std::from_chars(text.data(), text.data() + text.size(), i);
      if (t.base == ArgType::Base::Float) return Value(double(i));
      return Value(i);
    }
    return Value(text);  // enum-like defaults: contiguous_format, Mean, ...
  }

  Argument argument(bool named_required) {
    Argument a;
    a.type = type(a);
    skip_ws();
    if (pos_ < s_.size() && (std::isalpha(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) {
      a.name = ident_with();
    } else if (named_required) {
      fail("expected an argument name");
    }
    if (consume('=')) a.default_value = default_value(a.type);
    return a;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

bool type_accepts(const ArgType& t, const Value& v) {
  using B = ArgType::Base;
  using K = Value::Kind;
  // None for a plain Tensor is ATen's undefined tensor, as PyTorch's binding
  // takes it: AOT graphs pass None for the efficient attention backward's
  // attn_bias and the flash backward's cum_seq_q / cum_seq_k. A kernel that
  // reads the argument then fails with a user error.
  if (v.is_none()) return t.optional || (t.base == B::Tensor && !t.is_list);
  if (t.is_list) {
    if (v.is_list()) return true;
    return t.base == B::Int && (v.is_int() || v.is_bool());  // int[2] accepts one int
  }
  switch (t.base) {
    case B::Tensor: return v.is_tensor();
    case B::Int: return v.is_int() || v.is_bool();
    case B::Float: return v.is_int() || v.is_float() || v.is_bool();
    case B::Bool: return v.is_bool() || v.is_int();
    case B::Scalar: return v.is_int() || v.is_float() || v.is_bool();
    case B::ScalarType: return v.kind() == K::DType || v.is_int();
    case B::Str: return v.kind() == K::String;
    default: return true;
  }
}

}  // namespace

int Schema::index_of(std::string_view arg) const {
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].name == arg) return int(i);
  return -1;
}

Expected<Schema> parse_schema(std::string_view text) {
  try {
    return SchemaParser(text).parse();
  } catch (const Error& e) {
    return e.to_status();
  }
}

Expected<ValueList> bind_arguments(const Schema& schema, const ValueList& args, const KwargList& kwargs) {
  const std::string op = schema.full_name();
  size_t positional = 0;
  for (const auto& a : schema.args)
    if (!a.kwarg_only) ++positional;
  if (args.size() > positional)
    return Status::error(op + "() takes " + std::to_string(positional) + " positional arguments but " +
                         std::to_string(args.size()) + " were given");
  std::vector<std::optional<Value>> bound(schema.args.size());
  for (size_t i = 0; i < args.size(); ++i) bound[i] = args[i];
  for (const auto& [name, value] : kwargs) {
    int idx = schema.index_of(name);
    if (idx < 0) return Status::error(op + "() got an unexpected keyword argument '" + name + "'");
    if (bound[size_t(idx)]) return Status::error(op + "() got multiple values for argument '" + name + "'");
    bound[size_t(idx)] = value;
  }
  ValueList out;
  out.reserve(bound.size());
  for (size_t i = 0; i < bound.size(); ++i) {
    const Argument& a = schema.args[i];
    if (!bound[i]) {
      if (!a.default_value)
        return Status::error(op + "() missing required argument '" + a.name + "' (pos " +
                             std::to_string(i) + ")");
      bound[i] = a.default_value;
    }
    if (!type_accepts(a.type, *bound[i]))
      return Status::error(op + "(): argument '" + a.name + "' must be " + a.type.text + ", not " +
                           std::string(kind_name(bound[i]->kind())) + " " + bound[i]->repr());
    out.push_back(std::move(*bound[i]));
  }
  return out;
}

}  // namespace kiln
