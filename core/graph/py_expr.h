#pragma once
// Expressions of the Python subset FX prints, parsed into a small tree so the
// graph parser can classify a statement (call, method, attribute, operator)
// before its arguments become Args. Internal to the graph parser; views point
// into the source text.
#include <string>
#include <string_view>
#include <vector>

#include "core/graph/py_lexer.h"

namespace kiln::pytext {

struct Expr {
  enum class K : uint8_t { Name, Number, String, Attr, Call, Subscript, Binary, Unary, List, Tuple, Dict, Ellipsis };
  K k = K::Name;
  std::string_view text;  // Name, Number, Attr (the attribute), Binary/Unary (the operator)
  std::string str;        // String: the decoded value
  // Attr: object. Call: callee, positional args, then keyword values.
  // Subscript: object, index. Binary: lhs, rhs. Unary: operand. Containers: items (Dict: k, v, ...).
  std::vector<Expr> sub;
  std::vector<std::string_view> keywords;  // Call: names of the trailing keyword values
  std::vector<std::string_view> comments;  // List/Tuple: the comment after each item, "" when none
  int line = 0;

  size_t positional_count() const { return sub.size() - 1 - keywords.size(); }
};

// One simple statement (a line split at ';'), comments set aside: comment_before[i]
// is the comment just before toks[i]; comment_before[toks.size()] the one at the end.
struct Stmt {
  std::vector<Token> toks;
  std::vector<std::string_view> comment_before;
  int line = 0;
};

// The statements of a logical line, empty ones dropped.
std::vector<Stmt> split_statements(const LogicalLine& ll);

// Recursive descent with Python's precedence, from comparisons down to atoms.
// Errors throw kiln::Error with the line; nesting is bounded so hostile input
// cannot overflow the stack.
class ExprParser {
 public:
  explicit ExprParser(const Stmt& s, size_t pos = 0) : s_(s), pos_(pos) {}

  bool at_end() const { return pos_ >= s_.toks.size(); }
  const Token* peek(size_t ahead = 0) const {
    return pos_ + ahead < s_.toks.size() ? &s_.toks[pos_ + ahead] : nullptr;
  }
  bool at_op(std::string_view op, size_t ahead = 0) const {
    const Token* t = peek(ahead);
    return t && t->kind == Tok::Op && t->text == op;
  }
  bool accept_op(std::string_view op);
  void expect_op(std::string_view op);
  void expect_name();
  void expect_end();
  // The comment between the previous token and the next one, "" when none.
  std::string_view comment_here() const { return s_.comment_before[pos_]; }
  int line() const;
  [[noreturn]] void fail(const std::string& message) const;

  // a, b, c  (a tuple when there is a comma)
  Expr expr_list();
  Expr expr();

 private:
  struct Guard {
    explicit Guard(ExprParser& p);
    ~Guard() { --p_.depth_; }
    ExprParser& p_;
  };

  Expr left_assoc(std::initializer_list<std::string_view> ops, Expr (ExprParser::*next)());
  Expr bitor_expr() { return left_assoc({"|"}, &ExprParser::bitxor_expr); }
  Expr bitxor_expr() { return left_assoc({"^"}, &ExprParser::bitand_expr); }
  Expr bitand_expr() { return left_assoc({"&"}, &ExprParser::shift_expr); }
  Expr shift_expr() { return left_assoc({"<<", ">>"}, &ExprParser::arith_expr); }
  Expr arith_expr() { return left_assoc({"+", "-"}, &ExprParser::term); }
  Expr term() { return left_assoc({"*", "/", "//", "%", "@"}, &ExprParser::factor); }
  Expr factor();
  Expr primary();
  Expr call(Expr callee);
  void items(Expr& e, std::string_view close);
  Expr atom();

  const Stmt& s_;
  size_t pos_;
  int depth_ = 0;
};

}  // namespace kiln::pytext
