#include "core/trace/int_expr.h"

#include <algorithm>
#include <cctype>

namespace kiln::trace {
namespace {

class Parser {
 public:
  Parser(std::string_view text, const SymbolValues& symbols) : s_(text), symbols_(symbols) {}

  std::optional<int64_t> run() {
    auto v = sum();
    skip();
    if (!v || pos_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  void skip() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
  }
  bool eat(std::string_view token) {
    skip();
    if (s_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }

  std::optional<int64_t> sum() {
    auto v = product();
    while (v) {
      int64_t r = 0;
      if (eat("+")) {
        auto rhs = product();
        if (!rhs || __builtin_add_overflow(*v, *rhs, &r)) return std::nullopt;
      } else if (eat("-")) {
        auto rhs = product();
        if (!rhs || __builtin_sub_overflow(*v, *rhs, &r)) return std::nullopt;
      } else {
        break;
      }
      v = r;
    }
    return v;
  }

  std::optional<int64_t> product() {
    auto v = unary();
    while (v) {
      int64_t r = 0;
      if (eat("//")) {
        auto rhs = unary();
        if (!rhs || *rhs == 0 || (*v == INT64_MIN && *rhs == -1)) return std::nullopt;
        r = *v / *rhs;
        if ((*v % *rhs != 0) && ((*v < 0) != (*rhs < 0))) --r;  // Python floors
      } else if (eat("*")) {
        auto rhs = unary();
        if (!rhs || __builtin_mul_overflow(*v, *rhs, &r)) return std::nullopt;
      } else if (eat("%")) {
        auto rhs = unary();
        if (!rhs || *rhs == 0 || (*v == INT64_MIN && *rhs == -1)) return std::nullopt;
        r = *v % *rhs;
        if (r != 0 && ((r < 0) != (*rhs < 0))) r += *rhs;  // the sign of the divisor, as Python
      } else {
        break;
      }
      v = r;
    }
    return v;
  }

  std::optional<int64_t> unary() {
    if (eat("-")) {
      auto v = unary();
      if (!v || *v == INT64_MIN) return std::nullopt;
      return -*v;
    }
    if (eat("+")) return unary();
    return atom();
  }

  std::optional<int64_t> atom() {
    skip();
    if (eat("(")) {
      auto v = sum();
      if (!v || !eat(")")) return std::nullopt;
      return v;
    }
    const size_t start = pos_;
    if (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      int64_t v = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s_[pos_] - '0', &v)) return std::nullopt;
        ++pos_;
      }
      return v;
    }
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
    if (pos_ == start) return std::nullopt;
    auto it = symbols_.find(s_.substr(start, pos_ - start));
    if (it == symbols_.end()) return std::nullopt;
    return it->second;
  }

  std::string_view s_;
  const SymbolValues& symbols_;
  size_t pos_ = 0;
};

}  // namespace

std::vector<std::string> expr_symbols(std::string_view text) {
  std::vector<std::string> out;
  for (size_t i = 0; i < text.size();) {
    if (std::isalpha(static_cast<unsigned char>(text[i])) || text[i] == '_') {
      size_t j = i;
      while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) ++j;
      std::string name(text.substr(i, j - i));
      if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(std::move(name));
      i = j;
    } else {
      ++i;
    }
  }
  return out;
}

namespace {

// The number in a shape-environment symbol's name ("s12" -> 12), or -1.
int64_t symbol_number(const std::string& sym) {
  if (sym.size() < 2 || sym[0] != 's') return -1;
  int64_t n = 0;
  for (size_t i = 1; i < sym.size(); ++i) {
    if (sym[i] < '0' || sym[i] > '9' || n > (int64_t(1) << 40)) return -1;
    n = n * 10 + (sym[i] - '0');
  }
  return n;
}

// Dynamo lifts a tensor input's new size symbols as SymInt placeholders right
// before it (load_args: "reader.symint(3)  # arg0_1" ... then the tensor of
// sizes (1, s0, s1, s2)). Where the symints just before a tensor are exactly
// as many as the symbols that tensor is the first to use, and those symbols
// were created in the order they appear (s0, s1, s2: creation order and
// order of appearance agree, so both readings of the rule give one answer),
// they bind in order. Anything less clear-cut stays unbound and is refused.
template <class Loose>
void bind_lifted_symbols(const std::vector<ReproInput>& inputs, SymbolBinding& b, std::vector<Loose>& loose) {
  std::vector<std::string> seen;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const ReproInput& in = inputs[k];
    if (in.kind != "tensor") continue;
    std::vector<std::string> fields = in.shape;
    fields.insert(fields.end(), in.stride.begin(), in.stride.end());
    fields.push_back(in.storage_bytes);
    fields.push_back(in.storage_offset);
    std::vector<std::string> fresh;  // symbols this tensor is the first to use, in order of appearance
    for (const std::string& f : fields)
      for (std::string& sym : expr_symbols(f))
        if (std::find(seen.begin(), seen.end(), sym) == seen.end()) {
          seen.push_back(sym);
          if (!b.values.count(sym)) fresh.push_back(std::move(sym));
        }
    if (fresh.empty()) continue;
    // The loose symints immediately before this tensor, in input order: [first, end).
    size_t end = 0;
    while (end < loose.size() && loose[end].input < k) ++end;
    size_t first = end;
    for (size_t at = k; first > 0 && at > 0 && loose[first - 1].input == at - 1; --at) --first;
    if (end - first != fresh.size()) continue;
    bool created_in_order = true;
    for (size_t i = 0; i < fresh.size(); ++i)
      created_in_order &= symbol_number(fresh[i]) >= 0 && (i == 0 || symbol_number(fresh[i]) > symbol_number(fresh[i - 1]));
    if (!created_in_order) continue;
    for (size_t i = 0; i < fresh.size(); ++i) {
      b.values.emplace(fresh[i], loose[first + i].value);
      b.symbol_of[loose[first + i].name] = fresh[i];
    }
    loose.erase(loose.begin() + std::ptrdiff_t(first), loose.begin() + std::ptrdiff_t(end));
  }
}

}  // namespace

SymbolBinding bind_repro_symbols(const std::vector<ReproInput>& inputs, const std::vector<std::string>& placeholder_symbols) {
  SymbolBinding b;
  std::vector<std::string> used;
  for (const ReproInput& in : inputs) {
    if (in.kind != "tensor") continue;
    std::vector<std::string> fields = in.shape;
    fields.insert(fields.end(), in.stride.begin(), in.stride.end());
    fields.push_back(in.storage_bytes);
    fields.push_back(in.storage_offset);
    for (const std::string& f : fields)
      for (std::string& sym : expr_symbols(f))
        if (std::find(used.begin(), used.end(), sym) == used.end()) used.push_back(std::move(sym));
  }
  auto is_used = [&](const std::string& sym) { return std::find(used.begin(), used.end(), sym) != used.end(); };
  struct Loose {
    size_t input;
    std::string name;
    int64_t value;
  };
  std::vector<Loose> loose;  // symints no symbol was found for, in input order
  for (size_t k = 0; k < inputs.size(); ++k) {
    const ReproInput& in = inputs[k];
    if (in.kind != "symint") continue;
    auto value = eval_int_expr(in.value);
    if (!value) continue;
    const std::string& annotated = k < placeholder_symbols.size() ? placeholder_symbols[k] : std::string();
    if (!annotated.empty() && expr_symbols(annotated).size() == 1 && expr_symbols(annotated)[0] == annotated) {
      b.values.emplace(annotated, *value);
      b.symbol_of[in.name] = annotated;
    } else if (is_used(in.name)) {
      b.values.emplace(in.name, *value);
      b.symbol_of[in.name] = in.name;
    } else {
      loose.push_back({k, in.name, *value});
    }
  }
  bind_lifted_symbols(inputs, b, loose);
  std::vector<std::string> open;
  for (const std::string& sym : used)
    if (!b.values.count(sym)) open.push_back(sym);
  if (open.size() == 1 && loose.size() == 1) {
    b.values.emplace(open[0], loose[0].value);
    b.symbol_of[loose[0].name] = open[0];
    open.clear();
    loose.clear();
  }
  b.unbound = std::move(open);
  for (const Loose& l : loose) b.symints.push_back(l.name + " = " + std::to_string(l.value));
  return b;
}

std::optional<int64_t> eval_int_expr(std::string_view text, const SymbolValues& symbols) {
  if (text.size() > 4096) return std::nullopt;  // a size is short; a long one is damage
  return Parser(text, symbols).run();
}

}  // namespace kiln::trace
