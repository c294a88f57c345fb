#include "core/python/parser.h"

#include <algorithm>

#include "core/python/parser_impl.h"

namespace kiln::py {

namespace detail {

Parser::DepthGuard::DepthGuard(Parser& p, Pos where) : parser_(p) {
  if (++*parser_.depth_ > kMaxSyntaxNesting) {
    --*parser_.depth_;
    parser_.fail(where, "too many nested parentheses, brackets or blocks (more than " +
                            std::to_string(kMaxSyntaxNesting) + ")");
  }
}

const Token& Parser::peek(size_t ahead) {
  while (tokens_.size() <= ahead) tokens_.push_back(lexer_.next());
  return tokens_[ahead];
}

Token Parser::take() {
  peek();
  Token t = std::move(tokens_.front());
  tokens_.pop_front();
  return t;
}

bool Parser::accept_op(std::string_view s) {
  if (!at_op(s)) return false;
  take();
  return true;
}

bool Parser::accept_kw(std::string_view s) {
  if (!at_kw(s)) return false;
  take();
  return true;
}

Token Parser::expect_op(std::string_view s) {
  if (!at_op(s)) {
    const Token& t = peek();
    if (t.is_op(":=") || t.is_keyword("yield") || t.is_keyword("await")) unexpected(t);
    fail(t.pos, "expected '" + std::string(s) + "'");
  }
  return take();
}

Token Parser::expect_kw(std::string_view s) {
  if (!at_kw(s)) fail(peek().pos, "expected '" + std::string(s) + "'");
  return take();
}

std::string Parser::expect_name() {
  const Token& t = peek();
  if (t.kind != TokKind::Name) fail(t.pos, "expected a name, got " + describe(t));
  return std::string(take().text);
}

bool Parser::starts_expression(const Token& t) const {
  switch (t.kind) {
    case TokKind::Name:
    case TokKind::Int:
    case TokKind::Float:
    case TokKind::String: return true;
    case TokKind::Keyword:
      for (std::string_view k : {"None", "True", "False", "not", "lambda", "await", "yield"})
        if (t.text == k) return true;
      return false;
    case TokKind::Op:
      for (std::string_view k : {"(", "[", "{", "-", "+", "~", "*", "..."})
        if (t.text == k) return true;
      return false;
    default: return false;
  }
}

void Parser::fail(Pos where, const std::string& what) { lexer_.fail(where, "SyntaxError: " + what); }

void Parser::unsupported(Pos where, const std::string& name, const std::string& why) {
  lexer_.fail(where, "unsupported construct: " + name + " (" + why + ")");
}

void Parser::unexpected(const Token& t) {
  if (t.kind == TokKind::Keyword) {
    if (t.text == "yield") unsupported(t.pos, "yield inside an expression", "write it as a statement or an assignment's value");
    if (t.text == "await" || t.text == "async") unsupported(t.pos, std::string(t.text), "the subset has no coroutines");
  }
  if (t.is_op(":=")) unsupported(t.pos, "walrus operator ':='", "assign in a separate statement");
  if (t.kind == TokKind::Indent) fail(t.pos, "unexpected indent");
  fail(t.pos, "unexpected " + describe(t));
}

ExprPtr Parser::finish(ExprPtr e) {
  int h = 0;
  for_each_child(*e, [&](const ExprPtr& c) { h = std::max(h, c->height); });
  e->height = h + 1;
  if (e->height > kMaxExpressionHeight)
    fail(e->pos, "expression too deeply nested (more than " + std::to_string(kMaxExpressionHeight) + " levels)");
  return e;
}

std::unique_ptr<Module> Parser::parse_file() {
  auto module = std::make_unique<Module>();
  module->filename = lexer_.filename();
  while (peek().kind != TokKind::End) parse_statement(module->body);
  auto lines = std::make_shared<std::vector<std::string>>();
  const std::string& text = lexer_.text();
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    lines->push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  module->source_lines = std::move(lines);
  return module;
}

ExprPtr Parser::parse_fstring_expression() {
  if (peek().kind == TokKind::End) fail(peek().pos, "f-string: empty expression not allowed");
  if (at_kw("yield")) unexpected(peek());
  ExprPtr e = parse_star_expressions();
  check_no_bare_star(e);
  if (peek().kind != TokKind::End) unexpected(peek());
  return e;
}

}  // namespace detail

Expected<std::unique_ptr<ast::Module>> parse_module(std::string_view source, const std::string& filename) {
  try {
    Lexer lexer(source, filename);
    int depth = 0;
    detail::Parser parser(lexer, &depth);
    return parser.parse_file();
  } catch (const Error& e) {
    return e.to_status();
  }
}

}  // namespace kiln::py
