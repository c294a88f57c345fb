#pragma once
// Integer expressions as PyTorch writes sizes in minifier files: load_args'
// storage sizes and shapes ("3136*8", "32*s0 + 8"), the old style's args
// lists, and symbolic sizes bound to their recorded hints (reader.symint(6)
// with the comment "# s0"). Literals, symbols, + - * // % with Python's
// precedence and floor semantics, unary minus and parentheses.
//
// Tests: tests/core/test_int_expr.cpp.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/trace/trace.h"

namespace kiln::trace {

using SymbolValues = std::map<std::string, int64_t, std::less<>>;

// nullopt when the text is not such an expression, names a symbol `symbols`
// does not bind, divides by zero or overflows 64 bits.
std::optional<int64_t> eval_int_expr(std::string_view text, const SymbolValues& symbols = {});

// Which size symbol each of a repro's reader.symint inputs is. load_args
// names a symint by its placeholder ("reader.symint(1000)  # arg2_1") and
// writes sizes with the shape environment's symbols ("3136*s0"); nothing in
// it joins the two. The forward's annotation ("arg2_1: 'Sym(s0)'") does when
// the file has one; a symint named by its symbol (older files) does; with a
// single symint and a single symbol left there is only one way. Otherwise the
// symbol stays unbound, and a size using it is refused by name.
struct SymbolBinding {
  SymbolValues values;               // symbol -> value
  std::vector<std::string> unbound;  // symbols the sizes use that have no value
  std::vector<std::string> symints;  // "arg2_1 = 1000" for each symint no symbol was bound to
  std::map<std::string, std::string> symbol_of;  // symint input (its placeholder's name) -> its symbol
};
// `placeholder_symbols[k]`: the symbol the k-th placeholder's annotation
// names ("s0" of "Sym(s0)"), "" when it has none.
SymbolBinding bind_repro_symbols(const std::vector<ReproInput>& inputs, const std::vector<std::string>& placeholder_symbols);

// The symbols an integer expression names, in order of first use.
std::vector<std::string> expr_symbols(std::string_view text);

}  // namespace kiln::trace
