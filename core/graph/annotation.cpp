#include "core/graph/annotation.h"

#include <charconv>
#include <optional>

#include "core/graph/spelling.h"

namespace kiln {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Splits "a, Max(1, s0), 3" at top-level commas.
std::vector<SymInt> parse_size_list(std::string_view s) {
  std::vector<SymInt> out;
  if (trim(s).empty()) return out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    char c = i < s.size() ? s[i] : ',';
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') --depth;
    if (c != ',' || depth != 0) continue;
    std::string_view item = trim(s.substr(start, i - start));
    int64_t v = 0;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec == std::errc() && p == item.data() + item.size()) out.push_back(SymInt::of(v));
    else out.push_back(SymInt::symbol(std::string(item)));
    start = i + 1;
  }
  return out;
}

// The bracketed list starting at s[pos] == '['; returns the index after its ']'.
std::optional<size_t> bracket_end(std::string_view s, size_t pos) {
  if (pos >= s.size() || s[pos] != '[') return std::nullopt;
  int depth = 0;
  for (size_t i = pos; i < s.size(); ++i) {
    if (s[i] == '[') ++depth;
    if (s[i] == ']' && --depth == 0) return i + 1;
  }
  return std::nullopt;
}

bool is_device_text(std::string_view s) {
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == ':' || c == '_')) return false;
  return true;
}

// "f32[4, 8][8, 1]cpu" up to `end`; nullopt when it is not one.
std::optional<TensorMeta> parse_tensor_core(std::string_view s) {
  size_t open = s.find('[');
  if (open == std::string_view::npos) return std::nullopt;
  auto dtype = dtype_from_abbrev_text(s.substr(0, open));
  if (!dtype) return std::nullopt;
  TensorMeta t;
  t.dtype = std::string(*dtype);
  auto sizes_end = bracket_end(s, open);
  if (!sizes_end) return std::nullopt;
  t.sizes = parse_size_list(s.substr(open + 1, *sizes_end - open - 2));
  size_t rest = *sizes_end;
  if (rest < s.size() && s[rest] == '[') {
    auto strides_end = bracket_end(s, rest);
    if (!strides_end) return std::nullopt;
    t.strides = parse_size_list(s.substr(rest + 1, *strides_end - rest - 2));
    rest = *strides_end;
  }
  if (!is_device_text(s.substr(rest))) return std::nullopt;
  t.device = std::string(s.substr(rest));
  return t;
}

std::string join_sizes(const std::vector<SymInt>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i].to_string();
  return out + "]";
}

// The first problem of one bracketed size or stride list, or empty.
std::string size_list_problem(std::string_view list, const char* what) {
  if (trim(list).empty()) return {};
  int depth = 0;
  size_t start = 0;
  int64_t product = 1;
  bool overflow = false;
  for (size_t i = 0; i <= list.size(); ++i) {
    char c = i < list.size() ? list[i] : ',';
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c != ',' || depth != 0) continue;
    std::string_view item = trim(list.substr(start, i - start));
    start = i + 1;
    if (item.empty() || item.find_first_of("[]") != std::string_view::npos)
      return "'" + std::string(item) + "' is not a " + what;
    const bool negative = item.front() == '-';
    std::string_view digits = negative ? item.substr(1) : item;
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) continue;  // symbolic
    int64_t v = 0;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec == std::errc::result_out_of_range) return std::string(what) + " " + std::string(item) + " does not fit in 64 bits";
    if (v < 0) return "negative " + std::string(what) + " " + std::string(item);
    overflow |= __builtin_mul_overflow(product, v, &product);
  }
  // Element counts are int64 in PyTorch too; past that no tensor can exist.
  if (overflow && std::string_view(what) == "size") return "the sizes multiply past 64 bits";
  return {};
}

}  // namespace

std::string tensor_annotation_problem(std::string_view text) {
  std::string_view s = trim(text);
  size_t open = s.find('[');
  if (open == std::string_view::npos || !dtype_from_abbrev_text(s.substr(0, open))) return {};
  auto sizes_end = bracket_end(s, open);
  if (!sizes_end) return "unbalanced brackets";
  if (auto why = size_list_problem(s.substr(open + 1, *sizes_end - open - 2), "size"); !why.empty()) return why;
  size_t rest = *sizes_end;
  if (rest < s.size() && s[rest] == '[') {
    auto strides_end = bracket_end(s, rest);
    if (!strides_end) return "unbalanced brackets";
    if (auto why = size_list_problem(s.substr(rest + 1, *strides_end - rest - 2), "stride"); !why.empty()) return why;
    rest = *strides_end;
  }
  // A subclass wrapper's tail ("..., S(0))") is not checked here.
  std::string_view device = s.substr(rest);
  if (!is_device_text(device) && device.find_first_of(",)") == std::string_view::npos)
    return "'" + std::string(device) + "' is not a device";
  return {};
}

Val parse_val_annotation(std::string_view text) {
  std::string_view s = trim(text);
  if (s.starts_with("Sym(") && s.ends_with(")")) return Val::of_sym(std::string(s.substr(4, s.size() - 5)));
  if (auto t = parse_tensor_core(s)) return Val::of_tensor(std::move(*t));
  // A tensor subclass: "FunctionalTensor(f32[4])", "DTensor(f32[8][1]cuda:0, S(0))".
  size_t open = s.find('(');
  if (open != std::string_view::npos && open > 0 && s.ends_with(")")) {
    std::string_view inner = s.substr(open + 1, s.size() - open - 2);
    size_t sep = std::string_view::npos;
    int depth = 0;
    for (size_t i = 0; i + 1 < inner.size() && sep == std::string_view::npos; ++i) {
      if (inner[i] == '[' || inner[i] == '(') ++depth;
      if (inner[i] == ']' || inner[i] == ')') --depth;
      if (depth == 0 && inner[i] == ',' && inner[i + 1] == ' ') sep = i;
    }
    std::string_view core = sep == std::string_view::npos ? inner : inner.substr(0, sep);
    if (auto t = parse_tensor_core(core)) {
      t->subclass = std::string(s.substr(0, open));
      if (sep != std::string_view::npos) t->subclass_extra = std::string(inner.substr(sep + 2));
      return Val::of_tensor(std::move(*t));
    }
  }
  return Val::raw(std::string(s));
}

std::string format_val(const Val& v) {
  switch (v.kind) {
    case Val::Kind::Tensor: {
      const TensorMeta& t = v.tensor;
      std::string_view abbrev = dtype_abbrev_of(t.dtype);
      std::string core = (abbrev.empty() ? t.dtype : std::string(abbrev)) + join_sizes(t.sizes);
      if (t.strides) core += join_sizes(*t.strides);
      core += t.device;
      if (t.subclass.empty()) return core;
      return t.subclass + "(" + core + (t.subclass_extra.empty() ? "" : ", " + t.subclass_extra) + ")";
    }
    case Val::Kind::Sym: return "Sym(" + v.text + ")";
    case Val::Kind::Text: return v.text;
    default: return "";
  }
}

}  // namespace kiln
