#pragma once
// Parser of Kiln's Python subset (Python 3.11 syntax): source text to ast::Module.
// Errors are "SyntaxError: <what>" or "unsupported construct: <name> (<why>)",
// located at file:line:column.
#include <memory>
#include <string>
#include <string_view>

#include "core/python/ast.h"
#include "core/util/status.h"

namespace kiln::py {

// Brackets, unary operators, lambdas, f-string fields and indented blocks nest
// at most this deep; deeper input is a SyntaxError rather than a stack overflow.
inline constexpr int kMaxSyntaxNesting = 200;
// Expression trees are at most this tall (a + a + ... chains grow them without nesting).
inline constexpr int kMaxExpressionHeight = 1000;

Expected<std::unique_ptr<ast::Module>> parse_module(std::string_view source, const std::string& filename);

}  // namespace kiln::py
