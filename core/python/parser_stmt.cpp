// Statements of the subset's grammar (Python 3.11's, minus what code.h cannot run).
#include <set>

#include "core/python/parser_impl.h"

namespace kiln::py::detail {

namespace {

bool augassign_op(const Token& t, BinaryOpKind& op) {
  static const std::pair<std::string_view, BinaryOpKind> kOps[] = {
      {"+=", BinaryOpKind::Add},      {"-=", BinaryOpKind::Sub},     {"*=", BinaryOpKind::Mul},
      {"/=", BinaryOpKind::TrueDiv},  {"//=", BinaryOpKind::FloorDiv}, {"%=", BinaryOpKind::Mod},
      {"**=", BinaryOpKind::Pow},     {"@=", BinaryOpKind::MatMul},  {"<<=", BinaryOpKind::LShift},
      {">>=", BinaryOpKind::RShift},  {"&=", BinaryOpKind::And},     {"|=", BinaryOpKind::Or},
      {"^=", BinaryOpKind::Xor}};
  if (t.kind != TokKind::Op) return false;
  for (const auto& [text, kind] : kOps)
    if (t.text == text) {
      op = kind;
      return true;
    }
  return false;
}

// How CPython's messages name an expression that cannot be a target.
std::string expression_name(const Expr& e) {
  switch (e.kind) {
    case ExprKind::Call: return "function call";
    case ExprKind::Constant: {
      const Const& c = static_cast<const Constant&>(e).value;
      if (c.kind == Const::Kind::None) return "None";
      if (c.kind == Const::Kind::Bool) return c.b ? "True" : "False";
      if (c.kind == Const::Kind::Ellipsis) return "ellipsis";
      return "literal";
    }
    case ExprKind::Compare: return "comparison";
    case ExprKind::IfExp: return "conditional expression";
    case ExprKind::Lambda: return "lambda";
    case ExprKind::Dict: return "dict literal";
    case ExprKind::ListComp:
      return static_cast<const ListComp&>(e).is_generator ? "generator expression" : "list comprehension";
    case ExprKind::DictComp: return "dict comprehension";
    case ExprKind::JoinedStr: return "f-string expression";
    case ExprKind::Tuple: return "tuple";
    case ExprKind::List: return static_cast<const List&>(e).is_set ? "set display" : "list";
    case ExprKind::Starred: return "starred";
    case ExprKind::Yield: return "yield expression";
    default: return "expression";
  }
}

}  // namespace

void Parser::check_no_bare_star(const ExprPtr& e) {
  if (e && e->kind == ExprKind::Starred) fail(e->pos, "can't use starred expression here");
}

void Parser::check_target(const Expr& e, TargetUse use) {
  switch (e.kind) {
    case ExprKind::Name:
    case ExprKind::Attribute:
    case ExprKind::Subscript: return;
    case ExprKind::Tuple:
    case ExprKind::List: {
      if (e.kind == ExprKind::List && static_cast<const List&>(e).is_set)
        fail(e.pos, kiln::detail::concat("cannot ", use == TargetUse::Delete ? "delete" : "assign to", " set display"));
      if (use == TargetUse::AugAssign)
        fail(e.pos, kiln::detail::concat("'", expression_name(e), "' is an illegal expression for augmented assignment"));
      const auto& elts = e.kind == ExprKind::Tuple ? static_cast<const Tuple&>(e).elts : static_cast<const List&>(e).elts;
      int starred = 0;
      for (const ExprPtr& elt : elts) {
        if (const auto* s = elt->as<Starred>()) {
          if (use == TargetUse::Delete) fail(elt->pos, "cannot delete starred");
          if (++starred > 1) fail(elt->pos, "multiple starred expressions in assignment");
          check_target(*s->value, use);
        } else {
          check_target(*elt, use);
        }
      }
      return;
    }
    case ExprKind::Starred:
      if (use == TargetUse::Delete) fail(e.pos, "cannot delete starred");
      fail(e.pos, "starred assignment target must be in a list or tuple");
    default:
      if (use == TargetUse::AugAssign)
        fail(e.pos, kiln::detail::concat("'", expression_name(e), "' is an illegal expression for augmented assignment"));
      fail(e.pos, std::string(use == TargetUse::Delete ? "cannot delete " : "cannot assign to ") + expression_name(e));
  }
}

void Parser::parse_statement(Body& out) {
  const Token& t = peek();
  if (t.kind == TokKind::Op && t.text == "@") {
    out.push_back(parse_decorated());
    return;
  }
  if (t.kind == TokKind::Keyword) {
    if (t.text == "def") return out.push_back(parse_function_def({}));
    if (t.text == "class") return out.push_back(parse_class_def({}));
    if (t.text == "if") return out.push_back(parse_if());
    if (t.text == "while") return out.push_back(parse_while());
    if (t.text == "for") return out.push_back(parse_for());
    if (t.text == "with") return out.push_back(parse_with());
    if (t.text == "try") return out.push_back(parse_try());
    if (t.text == "async") unexpected(t);
  }
  // `match x:` (a soft keyword): a logical line starting with `match` and ending
  // in ':' cannot be anything else.
  if (t.kind == TokKind::Name && t.text == "match" && peek(1).kind != TokKind::Newline && !peek(1).is_op("=") &&
      !peek(1).is_op(".")) {
    for (size_t k = 1;; ++k) {
      const Token& u = peek(k);
      if (u.kind == TokKind::Newline || u.kind == TokKind::End) {
        if (peek(k - 1).is_op(":"))
          unsupported(peek().pos, "match statement", "use if/elif chains");
        break;
      }
    }
  }
  // `type X = ...` (a soft keyword, PEP 695): a name, then `=` or `[`.
  if (t.kind == TokKind::Name && t.text == "type" && peek(1).kind == TokKind::Name &&
      (peek(2).is_op("=") || peek(2).is_op("[")))
    unsupported(peek().pos, "type statement", "assign the alias: X = int");
  parse_simple_statements(out);
}

void Parser::parse_simple_statements(Body& out) {
  for (;;) {
    out.push_back(parse_simple_statement());
    if (!accept_op(";")) break;
    if (peek().kind == TokKind::Newline) break;
  }
  if (peek().kind != TokKind::Newline) unexpected(peek());
  take();
}

Body Parser::parse_block(Pos owner, const char* what) {
  expect_op(":");
  Body body;
  if (peek().kind != TokKind::Newline) {
    parse_simple_statements(body);
    return body;
  }
  take();
  if (peek().kind != TokKind::Indent)
    fail(peek().pos, std::string("expected an indented block after ") + what + " on line " + std::to_string(owner.line));
  DepthGuard guard(*this, peek().pos);
  take();
  while (peek().kind != TokKind::Dedent && peek().kind != TokKind::End) parse_statement(body);
  if (peek().kind == TokKind::Dedent) take();
  return body;
}

StmtPtr Parser::parse_simple_statement() {
  const Token& t = peek();
  Pos p = t.pos;
  if (t.kind == TokKind::Keyword) {
    std::string_view k = t.text;
    if (k == "pass" || k == "break" || k == "continue") {
      take();
      if (k == "pass") return std::make_unique<Pass>(p);
      if (k == "break") return std::make_unique<Break>(p);
      return std::make_unique<Continue>(p);
    }
    if (k == "import") return parse_import();
    if (k == "from") return parse_from_import();
    if (k == "return") {
      take();
      auto r = std::make_unique<Return>(p);
      if (starts_expression(peek())) {
        if (at_kw("yield")) unexpected(peek());
        r->value = parse_star_expressions();
        check_no_bare_star(r->value);
      }
      return r;
    }
    if (k == "del") {
      take();
      auto d = std::make_unique<Delete>(p);
      do {
        if (peek().kind == TokKind::Newline || at_op(";")) break;
        d->targets.push_back(parse_bitwise_or());
        check_target(*d->targets.back(), TargetUse::Delete);
      } while (accept_op(","));
      if (d->targets.empty()) fail(peek().pos, "expected a target after 'del'");
      return d;
    }
    if (k == "assert") {
      take();
      auto a = std::make_unique<Assert>(p);
      a->test = parse_expression();
      if (accept_op(",")) a->msg = parse_expression();
      return a;
    }
    if (k == "raise") {
      take();
      auto r = std::make_unique<Raise>(p);
      if (starts_expression(peek())) {
        r->exc = parse_expression();
        if (accept_kw("from")) r->cause = parse_expression();
      }
      return r;
    }
    if (k == "global" || k == "nonlocal") {
      take();
      auto g = std::make_unique<Global>(p);
      g->nonlocal = k == "nonlocal";
      do {
        const Token& name = peek();
        if (name.kind != TokKind::Name) unexpected(name);
        g->names.emplace_back(name.text);
        take();
      } while (accept_op(","));
      return g;
    }
    if (k == "yield") {
      auto e = std::make_unique<ExprStmt>(p);
      e->value = parse_yield();
      return e;
    }
    if (k == "async" || k == "await") unexpected(t);
  }
  return parse_expression_statement();
}

// `yield`, `yield v`, `yield a, b`, `yield from it`, where a statement or an
// assignment's value starts; anywhere else yield stays outside the subset.
ExprPtr Parser::parse_yield() {
  auto y = std::make_unique<Yield>(take().pos);
  if (accept_kw("from")) {
    y->from = true;
    y->value = parse_expression();
  } else if (starts_expression(peek())) {
    y->value = parse_star_expressions();
    check_no_bare_star(y->value);
  }
  return finish(std::move(y));
}

StmtPtr Parser::parse_expression_statement() {
  Pos p = peek().pos;
  ExprPtr first = parse_star_expressions();
  if (at_op("=")) {
    auto a = std::make_unique<Assign>(p);
    check_target(*first, TargetUse::Assign);
    a->targets.push_back(std::move(first));
    for (;;) {
      take();  // '='
      ExprPtr v = at_kw("yield") ? parse_yield() : parse_star_expressions();
      if (!at_op("=")) {
        check_no_bare_star(v);
        a->value = std::move(v);
        return a;
      }
      check_target(*v, TargetUse::Assign);
      a->targets.push_back(std::move(v));
    }
  }
  BinaryOpKind op;
  if (augassign_op(peek(), op)) {
    take();
    check_target(*first, TargetUse::AugAssign);
    auto a = std::make_unique<AugAssign>(p);
    a->target = std::move(first);
    a->op = op;
    if (at_kw("yield")) unexpected(peek());
    a->value = parse_star_expressions();
    check_no_bare_star(a->value);
    return a;
  }
  if (at_op(":")) {
    if (first->kind == ExprKind::Tuple) fail(first->pos, "only single target (not tuple) can be annotated");
    if (first->kind == ExprKind::List) fail(first->pos, "only single target (not list) can be annotated");
    if (first->kind != ExprKind::Name && first->kind != ExprKind::Attribute && first->kind != ExprKind::Subscript)
      fail(first->pos, "illegal target for annotation");
    take();
    auto a = std::make_unique<AnnAssign>(p);
    a->target = std::move(first);
    a->annotation = parse_expression();
    if (accept_op("=")) {
      a->value = parse_star_expressions();
      check_no_bare_star(a->value);
    }
    return a;
  }
  check_no_bare_star(first);
  auto s = std::make_unique<ExprStmt>(p);
  s->value = std::move(first);
  return s;
}

std::string Parser::parse_dotted_name() {
  std::string name = expect_name();
  while (accept_op(".")) name.append(".").append(expect_name());
  return name;
}

StmtPtr Parser::parse_import() {
  auto s = std::make_unique<Import>(take().pos);
  do {
    Alias a;
    a.pos = peek().pos;
    a.name = parse_dotted_name();
    if (accept_kw("as")) a.asname = expect_name();
    s->names.push_back(std::move(a));
  } while (accept_op(","));
  return s;
}

StmtPtr Parser::parse_from_import() {
  auto s = std::make_unique<ImportFrom>(take().pos);
  if (at_op(".") || at_op("..."))
    unsupported(peek().pos, "relative import", "a program is a single file; import modules by name");
  s->module = parse_dotted_name();
  expect_kw("import");
  if (at_op("*")) unsupported(peek().pos, "from ... import *", "import the names you use");
  bool parenthesised = accept_op("(");
  do {
    if (parenthesised && at_op(")")) break;
    Alias a;
    a.pos = peek().pos;
    a.name = expect_name();
    if (accept_kw("as")) a.asname = expect_name();
    s->names.push_back(std::move(a));
  } while (accept_op(","));
  if (parenthesised) expect_op(")");
  if (s->names.empty()) fail(peek().pos, "expected a name to import");
  return s;
}

StmtPtr Parser::parse_decorated() {
  std::vector<ExprPtr> decorators;
  while (accept_op("@")) {
    decorators.push_back(parse_named_expression());
    if (peek().kind != TokKind::Newline) unexpected(peek());
    take();
  }
  if (at_kw("def")) return parse_function_def(std::move(decorators));
  if (at_kw("class")) return parse_class_def(std::move(decorators));
  unexpected(peek());
}

StmtPtr Parser::parse_function_def(std::vector<ExprPtr> decorators) {
  auto f = std::make_unique<FunctionDef>(take().pos);
  f->decorators = std::move(decorators);
  f->name = expect_name();
  // PEP 695 (Python 3.12) generics, which PyTorch's own code does not need.
  if (at_op("[")) unsupported(peek().pos, "type parameters (def f[T])", "leave them out; annotations are not checked");
  expect_op("(");
  f->args = parse_parameters(")", true);
  expect_op(")");
  if (accept_op("->")) f->returns = parse_expression();
  f->body = parse_block(f->pos, "function definition");
  return f;
}

StmtPtr Parser::parse_class_def(std::vector<ExprPtr> decorators) {
  auto c = std::make_unique<ClassDef>(take().pos);
  c->decorators = std::move(decorators);
  c->name = expect_name();
  if (at_op("[")) unsupported(peek().pos, "type parameters (class C[T])", "leave them out; annotations are not checked");
  if (at_op("(")) {
    Pos open = take().pos;
    parse_call_args(open, c->bases, c->keywords);
  }
  c->body = parse_block(c->pos, "class definition");
  return c;
}

StmtPtr Parser::parse_if() {
  auto s = std::make_unique<If>(peek().pos);
  do {
    If::Branch b;
    b.pos = take().pos;  // `if` or `elif`
    b.test = parse_named_expression();
    b.body = parse_block(b.pos, s->branches.empty() ? "'if' statement" : "'elif' statement");
    s->branches.push_back(std::move(b));
  } while (at_kw("elif"));
  if (at_kw("else")) s->orelse = parse_block(take().pos, "'else' statement");
  return s;
}

StmtPtr Parser::parse_while() {
  auto s = std::make_unique<While>(take().pos);
  s->test = parse_named_expression();
  s->body = parse_block(s->pos, "'while' statement");
  if (at_kw("else")) s->orelse = parse_block(take().pos, "'else' statement");
  return s;
}

StmtPtr Parser::parse_for() {
  auto s = std::make_unique<For>(take().pos);
  s->target = parse_target_list();
  expect_kw("in");
  s->iter = parse_star_expressions();
  check_no_bare_star(s->iter);
  s->body = parse_block(s->pos, "'for' statement");
  if (at_kw("else")) s->orelse = parse_block(take().pos, "'else' statement");
  return s;
}

// `with (a() as x, b()):`: parentheses around the items, when the one closing
// them is followed by ':' (otherwise `(a, b)` is a tuple expression).
bool Parser::at_parenthesised_with_items() {
  if (!at_op("(")) return false;
  int depth = 0;
  for (size_t k = 0;; ++k) {
    const Token& t = peek(k);
    if (t.kind == TokKind::End || t.kind == TokKind::Newline) return false;
    if (t.kind != TokKind::Op) continue;
    if (t.text == "(" || t.text == "[" || t.text == "{") ++depth;
    if ((t.text == ")" || t.text == "]" || t.text == "}") && --depth == 0) return peek(k + 1).is_op(":");
  }
}

StmtPtr Parser::parse_with() {
  auto s = std::make_unique<With>(take().pos);
  bool parenthesised = at_parenthesised_with_items();
  if (parenthesised) take();
  do {
    if (parenthesised && at_op(")")) break;
    WithItem item;
    item.context_expr = parse_expression();
    if (accept_kw("as")) {
      item.optional_vars = parse_bitwise_or();
      check_target(*item.optional_vars, TargetUse::Assign);
    }
    s->items.push_back(std::move(item));
  } while (accept_op(","));
  if (parenthesised) expect_op(")");
  if (s->items.empty()) fail(peek().pos, "expected a context manager after 'with'");
  s->body = parse_block(s->pos, "'with' statement");
  return s;
}

StmtPtr Parser::parse_try() {
  auto s = std::make_unique<Try>(take().pos);
  s->body = parse_block(s->pos, "'try' statement");
  while (at_kw("except")) {
    ExceptHandler h;
    h.pos = take().pos;
    if (at_op("*")) unsupported(peek().pos, "except*", "the subset has no exception groups");
    if (!at_op(":")) {
      h.type = parse_expression();
      if (accept_kw("as")) h.name = expect_name();
    }
    h.body = parse_block(h.pos, "'except' statement");
    s->handlers.push_back(std::move(h));
  }
  if (!s->handlers.empty() && at_kw("else")) s->orelse = parse_block(take().pos, "'else' statement");
  if (at_kw("finally")) s->finalbody = parse_block(take().pos, "'finally' statement");
  if (s->handlers.empty() && s->finalbody.empty()) fail(peek().pos, "expected 'except' or 'finally' block");
  return s;
}

}  // namespace kiln::py::detail
