// Expressions, by Python's precedence: lambda / ternary, or, and, not,
// comparisons, | ^ & << >> + - * / // % @ (precedence climbing), unary, **,
// primaries (calls, attributes, subscripts), atoms.
#include <set>

#include "core/python/parser_impl.h"

namespace kiln::py::detail {

namespace {

struct BinaryOpInfo {
  std::string_view text;
  int precedence;
  BinaryOpKind kind;
};

constexpr BinaryOpInfo kBinaryOps[] = {
    {"|", 0, BinaryOpKind::Or},       {"^", 1, BinaryOpKind::Xor},     {"&", 2, BinaryOpKind::And},
    {"<<", 3, BinaryOpKind::LShift},  {">>", 3, BinaryOpKind::RShift}, {"+", 4, BinaryOpKind::Add},
    {"-", 4, BinaryOpKind::Sub},      {"*", 5, BinaryOpKind::Mul},     {"/", 5, BinaryOpKind::TrueDiv},
    {"//", 5, BinaryOpKind::FloorDiv}, {"%", 5, BinaryOpKind::Mod},    {"@", 5, BinaryOpKind::MatMul},
};

const BinaryOpInfo* binary_op(const Token& t) {
  if (t.kind != TokKind::Op) return nullptr;
  for (const BinaryOpInfo& info : kBinaryOps)
    if (info.text == t.text) return &info;
  return nullptr;
}

}  // namespace

ExprPtr Parser::parse_star_expressions() {
  Pos p = peek().pos;
  ExprPtr first = parse_star_named_expression();
  if (!at_op(",")) return first;
  auto t = std::make_unique<Tuple>(p);
  t->elts.push_back(std::move(first));
  while (accept_op(",")) {
    if (!starts_expression(peek()) || at_kw("yield")) break;
    t->elts.push_back(parse_star_named_expression());
  }
  return done(std::move(t));
}

ExprPtr Parser::parse_star_named_expression() {
  if (!at_op("*")) return parse_named_expression();
  auto s = std::make_unique<Starred>(take().pos);
  s->value = parse_bitwise_or();
  return done(std::move(s));
}

ExprPtr Parser::parse_named_expression() {
  ExprPtr e = parse_expression();
  if (at_op(":=")) unexpected(peek());
  return e;
}

// Nesting is counted where the grammar recurses: brackets, unary operators,
// `not`, `**`, lambda bodies and the `else` of conditional expressions.
ExprPtr Parser::parse_expression() {
  Pos p = peek().pos;
  if (at_kw("lambda")) return parse_lambda();
  ExprPtr body = parse_disjunction();
  if (!at_kw("if")) return body;
  take();
  auto e = std::make_unique<IfExp>(p);
  e->body = std::move(body);
  e->test = parse_disjunction();
  DepthGuard guard(*this, expect_kw("else").pos);
  e->orelse = parse_expression();
  return done(std::move(e));
}

ExprPtr Parser::parse_disjunction() {
  Pos p = peek().pos;
  ExprPtr first = parse_conjunction();
  if (!at_kw("or")) return first;
  auto b = std::make_unique<BoolOp>(p);
  b->is_and = false;
  b->values.push_back(std::move(first));
  while (accept_kw("or")) b->values.push_back(parse_conjunction());
  return done(std::move(b));
}

ExprPtr Parser::parse_conjunction() {
  Pos p = peek().pos;
  ExprPtr first = parse_inversion();
  if (!at_kw("and")) return first;
  auto b = std::make_unique<BoolOp>(p);
  b->values.push_back(std::move(first));
  while (accept_kw("and")) b->values.push_back(parse_inversion());
  return done(std::move(b));
}

ExprPtr Parser::parse_inversion() {
  if (!at_kw("not")) return parse_comparison();
  auto u = std::make_unique<UnaryOp>(take().pos);
  DepthGuard guard(*this, u->pos);
  u->op = UnaryOpKind::Not;
  u->operand = parse_inversion();
  return done(std::move(u));
}

ExprPtr Parser::parse_comparison() {
  Pos p = peek().pos;
  ExprPtr left = parse_bitwise_or();
  std::unique_ptr<Compare> c;
  for (;;) {
    const Token& t = peek();
    CompareKind op;
    if (t.is_op("<")) op = CompareKind::Lt;
    else if (t.is_op("<=")) op = CompareKind::Le;
    else if (t.is_op("==")) op = CompareKind::Eq;
    else if (t.is_op("!=")) op = CompareKind::Ne;
    else if (t.is_op(">")) op = CompareKind::Gt;
    else if (t.is_op(">=")) op = CompareKind::Ge;
    else if (t.is_keyword("in")) op = CompareKind::In;
    else if (t.is_keyword("not") && peek(1).is_keyword("in")) op = CompareKind::NotIn;
    else if (t.is_keyword("is")) op = peek(1).is_keyword("not") ? CompareKind::IsNot : CompareKind::Is;
    else break;
    take();
    if (op == CompareKind::NotIn || op == CompareKind::IsNot) take();
    if (!c) {
      c = std::make_unique<Compare>(p);
      c->left = std::move(left);
    }
    c->ops.push_back(op);
    c->comparators.push_back(parse_bitwise_or());
  }
  return c ? done(std::move(c)) : std::move(left);
}

ExprPtr Parser::parse_binary(int min_precedence) {
  Pos p = peek().pos;
  ExprPtr left = parse_factor();
  for (;;) {
    const BinaryOpInfo* info = binary_op(peek());
    if (!info || info->precedence < min_precedence) return left;
    take();
    auto b = std::make_unique<BinOp>(p);
    b->op = info->kind;
    b->left = std::move(left);
    b->right = parse_binary(info->precedence + 1);
    left = done(std::move(b));
  }
}

ExprPtr Parser::parse_factor() {
  const Token& t = peek();
  UnaryOpKind op;
  if (t.is_op("-")) op = UnaryOpKind::Neg;
  else if (t.is_op("+")) op = UnaryOpKind::Pos;
  else if (t.is_op("~")) op = UnaryOpKind::Invert;
  else return parse_power();
  auto u = std::make_unique<UnaryOp>(take().pos);
  DepthGuard guard(*this, u->pos);
  u->op = op;
  u->operand = parse_factor();
  return done(std::move(u));
}

ExprPtr Parser::parse_power() {
  Pos p = peek().pos;
  if (at_kw("await")) unexpected(peek());
  ExprPtr base = parse_primary();
  if (!at_op("**")) return base;
  DepthGuard guard(*this, take().pos);
  auto b = std::make_unique<BinOp>(p);
  b->op = BinaryOpKind::Pow;
  b->left = std::move(base);
  b->right = parse_factor();  // right-associative, and 2 ** -1 is allowed
  return done(std::move(b));
}

ExprPtr Parser::parse_primary() {
  Pos p = peek().pos;
  ExprPtr e = parse_atom();
  for (;;) {
    if (accept_op(".")) {
      auto a = std::make_unique<Attribute>(p);
      a->value = std::move(e);
      a->attr = expect_name();
      e = done(std::move(a));
    } else if (at_op("(")) {
      Pos open = take().pos;
      DepthGuard guard(*this, open);
      auto c = std::make_unique<Call>(p);
      c->func = std::move(e);
      parse_call_args(open, c->args, c->keywords);
      e = done(std::move(c));
    } else if (at_op("[")) {
      DepthGuard guard(*this, take().pos);
      auto s = std::make_unique<Subscript>(p);
      s->value = std::move(e);
      s->slice = parse_subscript_key();
      expect_op("]");
      e = done(std::move(s));
    } else {
      return e;
    }
  }
}

// After '(' of a call (or of a class's bases), up to and including ')'.
void Parser::parse_call_args(Pos open, std::vector<ExprPtr>& args, std::vector<Keyword>& keywords) {
  bool seen_keyword = false, seen_kwargs = false;
  std::set<std::string> names;
  while (!at_op(")")) {
    Pos p = peek().pos;
    if (accept_op("*")) {
      if (seen_kwargs) fail(p, "iterable argument unpacking follows keyword argument unpacking");
      auto s = std::make_unique<Starred>(p);
      s->value = parse_expression();
      args.push_back(done(std::move(s)));
    } else if (accept_op("**")) {
      keywords.push_back({p, "", parse_expression()});
      seen_kwargs = true;
    } else if (peek().kind == TokKind::Name && peek(1).is_op("=")) {
      std::string name(take().text);
      take();
      if (!names.insert(name).second) fail(p, "keyword argument repeated: " + name);
      keywords.push_back({p, name, parse_expression()});
      seen_keyword = true;
    } else {
      ExprPtr e = parse_named_expression();
      if (at_kw("for")) {
        auto g = std::make_unique<ListComp>(open);  // f(x for x in y): the call's parentheses are the genexp's
        g->is_generator = true;
        g->elt = std::move(e);
        g->generators = parse_comprehension_clauses();
        e = done(std::move(g));
        if (!args.empty() || !keywords.empty() || !at_op(")")) fail(p, "Generator expression must be parenthesized");
      }
      if (at_op("=")) fail(p, "expression cannot contain assignment, perhaps you meant \"==\"?");
      if (seen_kwargs) fail(p, "positional argument follows keyword argument unpacking");
      if (seen_keyword) fail(p, "positional argument follows keyword argument");
      args.push_back(std::move(e));
    }
    if (!accept_op(",")) break;
  }
  expect_op(")");
}

ExprPtr Parser::parse_subscript_key() {
  Pos p = peek().pos;
  ExprPtr first = parse_slice_item();
  if (!at_op(",") && first->kind != ExprKind::Starred) return first;
  auto t = std::make_unique<Tuple>(p);  // a[*idx] indexes with the tuple (*idx,)
  t->elts.push_back(std::move(first));
  while (accept_op(",")) {
    if (at_op("]")) break;
    t->elts.push_back(parse_slice_item());
  }
  return done(std::move(t));
}

ExprPtr Parser::parse_slice_item() {
  Pos p = peek().pos;
  if (at_op("*")) return parse_star_named_expression();
  ExprPtr lower;
  if (!at_op(":")) {
    lower = parse_named_expression();
    if (!at_op(":")) return lower;
  }
  take();
  auto s = std::make_unique<Slice>(p);
  s->lower = std::move(lower);
  if (!at_op(":") && !at_op("]") && !at_op(",")) s->upper = parse_expression();
  if (accept_op(":") && !at_op("]") && !at_op(",")) s->step = parse_expression();
  return done(std::move(s));
}

ExprPtr Parser::parse_atom() {
  const Token& t = peek();
  switch (t.kind) {
    case TokKind::Name: {
      auto n = std::make_unique<Name>(t.pos);
      n->id = std::string(take().text);
      return done(std::move(n));
    }
    case TokKind::Int:
    case TokKind::Float: {
      auto c = std::make_unique<Constant>(t.pos);
      if (t.kind == TokKind::Int && !t.big_int_text.empty()) {
        c->value.kind = Const::Kind::BigInt;
        c->value.s = t.big_int_text;
      } else if (t.kind == TokKind::Int) {
        c->value.kind = Const::Kind::Int;
        c->value.i = t.int_value;
      } else {
        c->value.kind = Const::Kind::Float;
        c->value.f = t.float_value;
      }
      take();
      return done(std::move(c));
    }
    case TokKind::String: return parse_strings();
    case TokKind::Keyword: {
      auto c = std::make_unique<Constant>(t.pos);
      if (t.text == "None") c->value.kind = Const::Kind::None;
      else if (t.text == "True" || t.text == "False") {
        c->value.kind = Const::Kind::Bool;
        c->value.b = t.text == "True";
      } else {
        unexpected(t);
      }
      take();
      return done(std::move(c));
    }
    case TokKind::Op:
      if (t.text == "(") return parse_paren();
      if (t.text == "[") return parse_list_display();
      if (t.text == "{") return parse_brace_display();
      if (t.text == "...") {
        auto c = std::make_unique<Constant>(take().pos);
        c->value.kind = Const::Kind::Ellipsis;
        return done(std::move(c));
      }
      break;
    default: break;
  }
  unexpected(t);
}

ExprPtr Parser::parse_paren() {
  Pos p = take().pos;
  DepthGuard guard(*this, p);
  if (accept_op(")")) return done(std::make_unique<Tuple>(p));
  if (at_kw("yield")) unexpected(peek());
  ExprPtr first = parse_star_named_expression();
  if (at_kw("for") || at_kw("async")) {
    auto g = std::make_unique<ListComp>(p);
    g->is_generator = true;
    g->elt = std::move(first);
    g->generators = parse_comprehension_clauses();
    expect_op(")");
    return done(std::move(g));
  }
  if (at_op(",")) {
    auto t = std::make_unique<Tuple>(p);
    t->elts.push_back(std::move(first));
    while (accept_op(",")) {
      if (at_op(")")) break;
      t->elts.push_back(parse_star_named_expression());
    }
    expect_op(")");
    return done(std::move(t));
  }
  expect_op(")");
  check_no_bare_star(first);
  return first;
}

ExprPtr Parser::parse_list_display() {
  Pos p = take().pos;
  DepthGuard guard(*this, p);
  auto list = std::make_unique<List>(p);
  if (accept_op("]")) return done(std::move(list));
  ExprPtr first = parse_star_named_expression();
  if (at_kw("for") || at_kw("async")) {
    auto c = std::make_unique<ListComp>(p);
    c->elt = std::move(first);
    c->generators = parse_comprehension_clauses();
    expect_op("]");
    return done(std::move(c));
  }
  list->elts.push_back(std::move(first));
  while (accept_op(",")) {
    if (at_op("]")) break;
    list->elts.push_back(parse_star_named_expression());
  }
  expect_op("]");
  return done(std::move(list));
}

ExprPtr Parser::parse_brace_display() {
  Pos p = take().pos;
  DepthGuard guard(*this, p);
  auto dict = std::make_unique<Dict>(p);
  if (accept_op("}")) return done(std::move(dict));
  auto parse_item = [&](bool first) {
    if (accept_op("**")) {
      dict->keys.push_back(nullptr);
      dict->values.push_back(parse_bitwise_or());
      return;
    }
    if (at_op("*")) fail(peek().pos, "cannot use a starred expression in a dictionary value");
    ExprPtr key = parse_named_expression();
    if (!at_op(":")) fail(peek().pos, first ? "expected ':'" : "':' expected after dictionary key");
    take();
    dict->keys.push_back(std::move(key));
    dict->values.push_back(parse_expression());
  };
  if (at_op("**")) {
    parse_item(true);
  } else {
    // A set display or comprehension starts like a dict but has no ':'.
    ExprPtr first;
    if (at_op("*")) {
      auto s = std::make_unique<Starred>(take().pos);
      s->value = parse_bitwise_or();
      first = done(std::move(s));
    } else {
      first = parse_named_expression();
    }
    if (!at_op(":")) return parse_set_display(p, std::move(first));
    if (first->kind == ExprKind::Starred) fail(first->pos, "cannot use a starred expression in a dictionary key");
    take();
    dict->keys.push_back(std::move(first));
    dict->values.push_back(parse_expression());
  }
  if (dict->keys[0] && (at_kw("for") || at_kw("async"))) {
    auto c = std::make_unique<DictComp>(p);
    c->key = std::move(dict->keys[0]);
    c->value = std::move(dict->values[0]);
    c->generators = parse_comprehension_clauses();
    expect_op("}");
    return done(std::move(c));
  }
  while (accept_op(",")) {
    if (at_op("}")) break;
    parse_item(false);
  }
  expect_op("}");
  return done(std::move(dict));
}

// {a, *b} or {x for x in xs}, after its first element.
ExprPtr Parser::parse_set_display(Pos p, ExprPtr first) {
  if (first->kind != ExprKind::Starred && (at_kw("for") || at_kw("async"))) {
    auto c = std::make_unique<ListComp>(p);
    c->is_set = true;
    c->elt = std::move(first);
    c->generators = parse_comprehension_clauses();
    expect_op("}");
    return done(std::move(c));
  }
  auto set = std::make_unique<List>(p);
  set->is_set = true;
  set->elts.push_back(std::move(first));
  while (accept_op(",")) {
    if (at_op("}")) break;
    if (at_op("*")) {
      auto s = std::make_unique<Starred>(take().pos);
      s->value = parse_bitwise_or();
      set->elts.push_back(done(std::move(s)));
    } else {
      set->elts.push_back(parse_named_expression());
    }
  }
  expect_op("}");
  return done(std::move(set));
}

std::vector<Comprehension> Parser::parse_comprehension_clauses() {
  std::vector<Comprehension> gens;
  while (at_kw("for") || at_kw("async")) {
    if (at_kw("async")) unexpected(peek());
    Comprehension c;
    c.pos = take().pos;
    c.target = parse_target_list();
    expect_kw("in");
    c.iter = parse_disjunction();
    while (accept_kw("if")) c.ifs.push_back(parse_disjunction());
    gens.push_back(std::move(c));
  }
  return gens;
}

// Targets of `for` and of comprehensions: no comparisons, so `in` ends them.
ExprPtr Parser::parse_target_list() {
  Pos p = peek().pos;
  auto item = [&]() -> ExprPtr {
    if (!at_op("*")) return parse_bitwise_or();
    auto s = std::make_unique<Starred>(take().pos);
    s->value = parse_bitwise_or();
    return done(std::move(s));
  };
  ExprPtr first = item();
  if (at_op(",")) {
    auto t = std::make_unique<Tuple>(p);
    t->elts.push_back(std::move(first));
    while (accept_op(",")) {
      if (at_kw("in")) break;
      t->elts.push_back(item());
    }
    first = done(std::move(t));
  }
  check_target(*first, TargetUse::Assign);
  return first;
}

ExprPtr Parser::parse_lambda() {
  auto l = std::make_unique<Lambda>(take().pos);
  DepthGuard guard(*this, l->pos);
  l->args = parse_parameters(":", false);
  expect_op(":");
  l->body = parse_expression();
  return done(std::move(l));
}

// Parameters up to (not including) `closer`: ")" for def, ":" for lambda.
Arguments Parser::parse_parameters(std::string_view closer, bool annotations) {
  Arguments a;
  std::set<std::string> names;
  bool keyword_only = false, bare_star = false, seen_default = false;
  auto param = [&]() {
    Arg arg;
    arg.pos = peek().pos;
    arg.name = expect_name();
    if (!names.insert(arg.name).second)
      fail(arg.pos, "duplicate argument '" + arg.name + "' in function definition");
    if (annotations && accept_op(":")) arg.annotation = parse_expression();
    return arg;
  };
  while (!at_op(closer)) {
    Pos p = peek().pos;
    if (at_op("/")) unsupported(p, "positional-only parameters", "remove the '/'");
    if (accept_op("**")) {
      a.kwarg = param();
      if (accept_op(",") && !at_op(closer)) fail(peek().pos, "arguments cannot follow var-keyword argument");
      break;
    }
    if (accept_op("*")) {
      if (keyword_only) fail(p, "* argument may appear only once");
      keyword_only = true;
      if (at_op(",") || at_op(closer)) bare_star = true;
      else a.vararg = param();
    } else {
      Arg arg = param();
      ExprPtr def;
      if (accept_op("=")) def = parse_expression();
      if (keyword_only) {
        a.kwonlyargs.push_back(std::move(arg));
        a.kw_defaults.push_back(std::move(def));
      } else {
        if (def) {
          seen_default = true;
          a.defaults.push_back(std::move(def));
        } else if (seen_default) {
          fail(arg.pos, "non-default argument follows default argument");
        }
        a.args.push_back(std::move(arg));
      }
    }
    if (!accept_op(",")) break;
  }
  if (bare_star && a.kwonlyargs.empty()) fail(peek().pos, "named arguments must follow bare *");
  return a;
}

}  // namespace kiln::py::detail
