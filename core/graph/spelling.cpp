#include "core/graph/spelling.h"
#include "core/util/pyformat.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace kiln {

namespace {

struct DTypeSpelling {
  std::string_view name;    // torch.<name>
  std::string_view abbrev;  // print_readable's abbreviation; empty when it has none
};

// torch/utils/_dtype_abbrs.py, plus the quantized types that have no abbreviation.
constexpr std::array<DTypeSpelling, 29> kDTypes{{
    {"float32", "f32"},       {"float64", "f64"},       {"float16", "f16"},
    {"bfloat16", "bf16"},     {"int64", "i64"},         {"int32", "i32"},
    {"int16", "i16"},         {"int8", "i8"},           {"uint8", "u8"},
    {"bool", "b8"},           {"complex32", "c32"},     {"complex64", "c64"},
    {"complex128", "c128"},   {"uint16", "u16"},        {"uint32", "u32"},
    {"uint64", "u64"},        {"float8_e4m3fn", "f8e4m3fn"}, {"float8_e5m2", "f8e5m2"},
    {"float8_e4m3fnuz", "f8e4m3fnuz"}, {"float8_e5m2fnuz", "f8e5m2fnuz"},
    {"float8_e8m0fnu", "f8e8m0fnu"}, {"float4_e2m1fn_x2", "f4e2m1fnx2"},
    {"bits16", "b16"},        {"bits1x8", "b1x8"},      {"qint8", ""},
    {"quint8", ""},           {"qint32", ""},           {"quint4x2", ""},
    {"quint2x4", ""},
}};

// torch.float is torch.float32, and so on; repr() always prints the canonical name.
constexpr std::array<std::pair<std::string_view, std::string_view>, 9> kDTypeAliases{{
    {"float", "float32"}, {"double", "float64"}, {"half", "float16"},
    {"long", "int64"},    {"int", "int32"},      {"short", "int16"},
    {"cfloat", "complex64"}, {"cdouble", "complex128"}, {"chalf", "complex32"},
}};

constexpr std::array<std::string_view, 8> kLayouts{
    "strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "_mkldnn", "jagged"};
constexpr std::array<std::string_view, 4> kMemoryFormats{
    "contiguous_format", "channels_last", "channels_last_3d", "preserve_format"};

constexpr std::array<OperatorSpelling, 37> kOperators{{
    {"operator.add", "+", 2},       {"operator.sub", "-", 2},      {"operator.mul", "*", 2},
    {"operator.floordiv", "//", 2}, {"operator.truediv", "/", 2},  {"operator.mod", "%", 2},
    {"operator.pow", "**", 2},      {"operator.lshift", "<<", 2},  {"operator.rshift", ">>", 2},
    {"operator.and_", "&", 2},      {"operator.or_", "|", 2},      {"operator.xor", "^", 2},
    {"operator.getitem", "[]", 2},  {"operator.matmul", "@", 2},   {"operator.eq", "==", 2},
    {"operator.ne", "!=", 2},       {"operator.lt", "<", 2},       {"operator.gt", ">", 2},
    {"operator.le", "<=", 2},       {"operator.ge", ">=", 2},      {"operator.pos", "+", 1},
    {"operator.neg", "-", 1},       {"operator.invert", "~", 1},   {"operator.iadd", "+=", 2},
    {"operator.iand", "&=", 2},     {"operator.ifloordiv", "//=", 2}, {"operator.ilshift", "<<=", 2},
    {"operator.imod", "%=", 2},     {"operator.imul", "*=", 2},    {"operator.imatmul", "@=", 2},
    {"operator.ior", "|=", 2},      {"operator.ipow", "**=", 2},   {"operator.irshift", ">>=", 2},
    {"operator.isub", "-=", 2},     {"operator.itruediv", "/=", 2},  {"operator.ixor", "^=", 2},
    {"operator.setitem", "[]=", 3},
}};

template <class Fn>
const OperatorSpelling* find_operator(Fn&& match) {
  for (const auto& op : kOperators)
    if (match(op)) return &op;
  return nullptr;
}

}  // namespace

std::string_view dtype_abbrev_of(std::string_view torch_name) {
  for (const auto& d : kDTypes)
    if (d.name == torch_name) return d.abbrev;
  return {};
}

std::optional<std::string_view> dtype_from_abbrev_text(std::string_view abbrev) {
  if (abbrev.empty()) return std::nullopt;
  for (const auto& d : kDTypes)
    if (d.abbrev == abbrev) return d.name;
  return std::nullopt;
}

std::optional<std::string_view> canonical_dtype_name(std::string_view torch_attr) {
  for (const auto& d : kDTypes)
    if (d.name == torch_attr) return d.name;
  for (const auto& [alias, name] : kDTypeAliases)
    if (alias == torch_attr) return name;
  return std::nullopt;
}

std::optional<DType> kiln_dtype(std::string_view torch_name) {
  auto canonical = canonical_dtype_name(torch_name);
  if (!canonical) return std::nullopt;
  return dtype_from_name(*canonical);
}

bool is_layout_name(std::string_view torch_attr) {
  for (auto l : kLayouts)
    if (l == torch_attr) return true;
  return false;
}

bool is_memory_format_name(std::string_view torch_attr) {
  for (auto m : kMemoryFormats)
    if (m == torch_attr) return true;
  return false;
}

std::string target_from_python(std::string_view name) {
  constexpr std::string_view kOps = "torch.ops.";
  if (name.starts_with(kOps)) {
    std::string_view rest = name.substr(kOps.size());
    size_t dot = rest.find('.');
    if (dot != std::string_view::npos && dot > 0 && dot + 1 < rest.size())
      return std::string(rest.substr(0, dot)) + "::" + std::string(rest.substr(dot + 1));
  }
  if (name.starts_with("_operator.")) return "operator." + std::string(name.substr(10));
  return std::string(name);
}

std::string target_to_python(std::string_view target) {
  size_t sep = target.find("::");
  if (sep == std::string_view::npos) return std::string(target);
  return "torch.ops." + std::string(target.substr(0, sep)) + "." + std::string(target.substr(sep + 2));
}

bool is_op_overload_target(std::string_view target) { return target.find("::") != std::string_view::npos; }

const OperatorSpelling* infix_operator(std::string_view target) {
  return find_operator([&](const OperatorSpelling& op) { return op.target == target; });
}

const OperatorSpelling* operator_for_symbol(std::string_view symbol, int arity) {
  return find_operator([&](const OperatorSpelling& op) { return op.symbol == symbol && op.arity == arity; });
}

bool is_inplace_operator(const OperatorSpelling& op) {
  return op.symbol.size() >= 2 && op.symbol.back() == '=' && op.symbol != "==" && op.symbol != "!=" &&
         op.symbol != "<=" && op.symbol != ">=";
}

bool is_python_identifier(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s)
    if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          (unsigned char)c >= 0x80))
      return false;
  return true;
}

std::string python_float_repr(double v) { return py_float_repr(v); }

std::string python_str_repr(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == quote) out += std::string("\\") + char(c);
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += char(c);  // UTF-8 passes through, as Python prints printable non-ASCII
    }
  }
  out += quote;
  return out;
}

}  // namespace kiln
