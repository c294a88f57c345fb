#pragma once
// The recursive-descent parser behind parse_module(); internal to core/python.
// parser.cpp: tokens, errors, entry points; parser_stmt.cpp: statements;
// parser_expr.cpp: expressions; parser_fstring.cpp: f-string bodies.
#include <deque>
#include <string>
#include <string_view>

#include "core/python/ast.h"
#include "core/python/lexer.h"
#include "core/python/parser.h"

namespace kiln::py::detail {

using namespace ast;

class Parser {
 public:
  // `depth` is shared with the parsers of nested f-string fields.
  Parser(Lexer& lexer, int* depth) : lexer_(lexer), depth_(depth) {}

  std::unique_ptr<Module> parse_file();
  // The expression of an f-string replacement field: the whole token stream.
  ExprPtr parse_fstring_expression();

 private:
  enum class TargetUse { Assign, AugAssign, Delete };

  // Counts nesting for as long as it lives; fails past kMaxSyntaxNesting.
  class DepthGuard {
   public:
    DepthGuard(Parser& p, Pos where);
    ~DepthGuard() { --*parser_.depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;

   private:
    Parser& parser_;
  };

  // ---- tokens (parser.cpp)
  const Token& peek(size_t ahead = 0);  // valid until the next take()
  Token take();
  bool at_op(std::string_view s) { return peek().is_op(s); }
  bool at_kw(std::string_view s) { return peek().is_keyword(s); }
  bool accept_op(std::string_view s);
  bool accept_kw(std::string_view s);
  Token expect_op(std::string_view s);
  Token expect_kw(std::string_view s);
  std::string expect_name();
  bool starts_expression(const Token& t) const;

  // ---- errors (parser.cpp)
  [[noreturn]] void fail(Pos where, const std::string& what);  // "SyntaxError: what"
  [[noreturn]] void unsupported(Pos where, const std::string& name, const std::string& why);
  [[noreturn]] void unexpected(const Token& t);

  // Sets the height of a new node from its children and bounds it.
  template <class T>
  ExprPtr done(std::unique_ptr<T> node) {
    return finish(ExprPtr(std::move(node)));
  }
  ExprPtr finish(ExprPtr e);

  // ---- statements (parser_stmt.cpp)
  void parse_statement(Body& out);
  void parse_simple_statements(Body& out);
  StmtPtr parse_simple_statement();
  StmtPtr parse_expression_statement();
  ExprPtr parse_set_display(Pos p, ExprPtr first);
  ExprPtr parse_yield();
  StmtPtr parse_import();
  StmtPtr parse_from_import();
  Body parse_block(Pos owner, const char* what);
  StmtPtr parse_decorated();
  StmtPtr parse_function_def(std::vector<ExprPtr> decorators);
  StmtPtr parse_class_def(std::vector<ExprPtr> decorators);
  StmtPtr parse_if();
  StmtPtr parse_while();
  StmtPtr parse_for();
  StmtPtr parse_with();
  StmtPtr parse_try();
  std::string parse_dotted_name();
  void check_no_bare_star(const ExprPtr& e);
  void check_target(const Expr& e, TargetUse use);

  // ---- expressions (parser_expr.cpp)
  ExprPtr parse_star_expressions();
  ExprPtr parse_star_named_expression();
  ExprPtr parse_expression();
  ExprPtr parse_named_expression();
  ExprPtr parse_disjunction();
  ExprPtr parse_conjunction();
  ExprPtr parse_inversion();
  ExprPtr parse_comparison();
  ExprPtr parse_binary(int min_precedence);
  ExprPtr parse_bitwise_or() { return parse_binary(0); }
  ExprPtr parse_factor();
  ExprPtr parse_power();
  ExprPtr parse_primary();
  ExprPtr parse_atom();
  ExprPtr parse_paren();
  ExprPtr parse_list_display();
  ExprPtr parse_brace_display();
  ExprPtr parse_lambda();
  ExprPtr parse_subscript_key();
  ExprPtr parse_slice_item();
  ExprPtr parse_target_list();
  void parse_call_args(Pos open, std::vector<ExprPtr>& args, std::vector<Keyword>& keywords);
  bool at_parenthesised_with_items();
  Arguments parse_parameters(std::string_view closer, bool annotations);
  std::vector<Comprehension> parse_comprehension_clauses();

  // ---- strings (parser_fstring.cpp)
  ExprPtr parse_strings();
  struct BodyCursor;
  size_t parse_fstring_parts(const Token& t, size_t i, bool in_spec, std::vector<ExprPtr>& parts, BodyCursor& cur);
  size_t parse_fstring_field(const Token& t, size_t i, std::vector<ExprPtr>& parts, BodyCursor& cur);

  Lexer& lexer_;
  int* depth_;
  std::deque<Token> tokens_;
};

}  // namespace kiln::py::detail
