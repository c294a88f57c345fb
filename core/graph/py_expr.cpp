#include "core/graph/py_expr.h"

#include "core/util/status.h"

namespace kiln::pytext {

namespace {
Expr binary(std::string_view op, Expr l, Expr r) {
  Expr e;
  e.k = Expr::K::Binary;
  e.text = op;
  e.line = l.line;
  e.sub.push_back(std::move(l));
  e.sub.push_back(std::move(r));
  return e;
}
}  // namespace

std::vector<Stmt> split_statements(const LogicalLine& ll) {
  std::vector<Stmt> out(1);
  out.back().line = ll.line;
  for (const Token& t : ll.tokens) {
    Stmt& s = out.back();
    if (t.kind == Tok::Comment) {
      s.comment_before.resize(s.toks.size() + 1);
      s.comment_before[s.toks.size()] = t.text;
      continue;
    }
    if (t.kind == Tok::Op && t.text == ";") {
      out.emplace_back().line = t.line;
      continue;
    }
    s.toks.push_back(t);
  }
  for (Stmt& s : out) s.comment_before.resize(s.toks.size() + 1);
  std::erase_if(out, [](const Stmt& s) { return s.toks.empty(); });
  return out;
}

ExprParser::Guard::Guard(ExprParser& p) : p_(p) {
  if (++p_.depth_ > 200) {
    --p_.depth_;
    p_.fail("expression nested too deeply");
  }
}

bool ExprParser::accept_op(std::string_view op) {
  if (!at_op(op)) return false;
  ++pos_;
  return true;
}

void ExprParser::expect_op(std::string_view op) {
  if (!accept_op(op)) fail("expected '" + std::string(op) + "'");
}

void ExprParser::expect_name() {
  const Token* t = peek();
  if (!t || t->kind != Tok::Name) fail("expected a name");
  ++pos_;
}

void ExprParser::expect_end() {
  if (!at_end()) fail("unexpected '" + std::string(peek()->text) + "'");
}

int ExprParser::line() const {
  if (!at_end()) return peek()->line;
  return s_.toks.empty() ? s_.line : s_.toks.back().line;
}

void ExprParser::fail(const std::string& message) const { throw Error(message, SourceLocation{"", line()}); }

Expr ExprParser::expr_list() {
  int line0 = line();
  Expr first = expr();
  if (!at_op(",")) return first;
  Expr t;
  t.k = Expr::K::Tuple;
  t.line = line0;
  t.sub.push_back(std::move(first));
  while (accept_op(",")) {
    if (at_end() || at_op("=") || at_op(")")) break;
    t.sub.push_back(expr());
  }
  return t;
}

Expr ExprParser::expr() {
  Guard guard(*this);
  Expr lhs = bitor_expr();
  static constexpr std::string_view kCompare[] = {"==", "!=", "<", ">", "<=", ">="};
  for (auto op : kCompare)
    if (accept_op(op)) return binary(op, std::move(lhs), bitor_expr());
  return lhs;
}

Expr ExprParser::left_assoc(std::initializer_list<std::string_view> ops, Expr (ExprParser::*next)()) {
  Expr lhs = (this->*next)();
  while (true) {
    std::string_view found;
    for (auto op : ops)
      if (at_op(op)) found = op;
    if (found.empty()) return lhs;
    ++pos_;
    lhs = binary(found, std::move(lhs), (this->*next)());
  }
}

Expr ExprParser::factor() {
  Guard guard(*this);
  if (at_op("-") || at_op("+") || at_op("~")) {
    Expr e;
    e.k = Expr::K::Unary;
    e.text = peek()->text;
    e.line = line();
    ++pos_;
    e.sub.push_back(factor());
    return e;
  }
  Expr base = primary();
  if (accept_op("**")) return binary("**", std::move(base), factor());
  return base;
}

Expr ExprParser::primary() {
  Expr e = atom();
  while (true) {
    if (accept_op(".")) {
      const Token* t = peek();
      if (!t || t->kind != Tok::Name) fail("expected an attribute name after '.'");
      ++pos_;
      Expr a;
      a.k = Expr::K::Attr;
      a.text = t->text;
      a.line = e.line;
      a.sub.push_back(std::move(e));
      e = std::move(a);
    } else if (at_op("(")) {
      e = call(std::move(e));
    } else if (accept_op("[")) {
      Expr s;
      s.k = Expr::K::Subscript;
      s.line = e.line;
      s.sub.push_back(std::move(e));
      s.sub.push_back(expr_list());
      expect_op("]");
      e = std::move(s);
    } else {
      return e;
    }
  }
}

Expr ExprParser::call(Expr callee) {
  Guard guard(*this);
  expect_op("(");
  Expr c;
  c.k = Expr::K::Call;
  c.line = callee.line;
  c.sub.push_back(std::move(callee));
  std::vector<Expr> kw_values;
  while (!accept_op(")")) {
    if (at_op("*") || at_op("**")) fail("star arguments are not supported");
    const Token* t = peek();
    if (!t) fail("unexpected end of statement in a call");
    if (t->kind == Tok::Name && at_op("=", 1)) {
      pos_ += 2;
      c.keywords.push_back(t->text);
      kw_values.push_back(expr());
    } else {
      if (!c.keywords.empty()) fail("positional argument after a keyword argument");
      c.sub.push_back(expr());
    }
    if (!at_op(")")) expect_op(",");
  }
  for (Expr& v : kw_values) c.sub.push_back(std::move(v));
  return c;
}

void ExprParser::items(Expr& e, std::string_view close) {
  while (!accept_op(close)) {
    e.sub.push_back(expr());
    bool comma = accept_op(",");
    e.comments.push_back(comment_here());
    if (!comma) {
      if (!at_op(close)) fail("expected ',' or '" + std::string(close) + "'");
      expect_op(close);
      return;
    }
  }
}

Expr ExprParser::atom() {
  Guard guard(*this);
  const Token* t = peek();
  if (!t) fail("unexpected end of statement");
  Expr e;
  e.line = t->line;
  switch (t->kind) {
    case Tok::Name:
    case Tok::Number:
      e.k = t->kind == Tok::Name ? Expr::K::Name : Expr::K::Number;
      e.text = t->text;
      ++pos_;
      return e;
    case Tok::String:
      e.k = Expr::K::String;
      while (peek() && peek()->kind == Tok::String) e.str += decode_string(s_.toks[pos_++].text);
      return e;
    default: break;
  }
  if (t->text == "...") {
    ++pos_;
    e.k = Expr::K::Ellipsis;
    return e;
  }
  if (accept_op("[")) {
    e.k = Expr::K::List;
    items(e, "]");
    return e;
  }
  if (accept_op("(")) {
    e.k = Expr::K::Tuple;
    if (accept_op(")")) return e;
    Expr first = expr();
    if (accept_op(")")) return first;  // a parenthesized expression
    e.sub.push_back(std::move(first));
    expect_op(",");
    e.comments.push_back(comment_here());
    items(e, ")");
    return e;
  }
  if (accept_op("{")) {
    e.k = Expr::K::Dict;
    while (!accept_op("}")) {
      e.sub.push_back(expr());
      expect_op(":");
      e.sub.push_back(expr());
      if (!at_op("}")) expect_op(",");
    }
    return e;
  }
  fail("unexpected '" + std::string(t->text) + "'");
}

}  // namespace kiln::pytext
