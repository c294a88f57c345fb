// Expressions to bytecode. Each instruction carries the position of the node
// that produced it (a call: the start of the call expression).
#include "core/python/compiler_impl.h"

namespace kiln::py::detail {

namespace {

bool is_numeric(const Const& c) {
  return c.kind == Const::Kind::Int || c.kind == Const::Kind::BigInt || c.kind == Const::Kind::Float;
}

// Truthiness of a constant test (`while True:`), when it has one.
bool constant_truth(const Expr& e, bool& truth) {
  const auto* c = e.as<Constant>();
  if (!c) return false;
  const Const& v = c->value;
  switch (v.kind) {
    case Const::Kind::None: truth = false; return true;
    case Const::Kind::Bool: truth = v.b; return true;
    case Const::Kind::Int: truth = v.i != 0; return true;
    case Const::Kind::BigInt: truth = true; return true;  // never zero
    case Const::Kind::Float: truth = v.f != 0; return true;
    case Const::Kind::Str: truth = !v.s.empty(); return true;
    case Const::Kind::Ellipsis: truth = true; return true;
    default: return false;
  }
}

}  // namespace

void Compiler::expr(const Expr& e) {
  switch (e.kind) {
    case ExprKind::Name: compile_name(static_cast<const Name&>(e)); return;
    case ExprKind::Constant: compile_constant(static_cast<const Constant&>(e)); return;
    case ExprKind::JoinedStr: compile_joined_str(static_cast<const JoinedStr&>(e).values, e.pos); return;
    case ExprKind::FormattedValue: fail(e.pos, "formatted value outside an f-string");
    case ExprKind::Attribute: {
      const auto& a = static_cast<const Attribute&>(e);
      expr(*a.value);
      emit(Op::LoadAttr, add_name(a.attr), e.pos);
      return;
    }
    case ExprKind::Subscript: {
      const auto& s = static_cast<const Subscript&>(e);
      expr(*s.value);
      expr(*s.slice);
      emit(Op::BinarySubscr, 0, e.pos);
      return;
    }
    case ExprKind::Slice: {
      const auto& s = static_cast<const Slice&>(e);
      for (const ExprPtr* part : {&s.lower, &s.upper})
        if (*part) expr(**part);
        else load_none(e.pos);
      if (s.step) expr(*s.step);
      emit(Op::BuildSlice, s.step ? 3 : 2, e.pos);
      return;
    }
    case ExprKind::Call: compile_call(static_cast<const Call&>(e)); return;
    case ExprKind::BinOp: {
      const auto& b = static_cast<const BinOp&>(e);
      expr(*b.left);
      expr(*b.right);
      emit(Op::BinaryOp, int(b.op), e.pos);
      return;
    }
    case ExprKind::UnaryOp: compile_unary(static_cast<const UnaryOp&>(e)); return;
    case ExprKind::BoolOp: compile_bool_op(static_cast<const BoolOp&>(e)); return;
    case ExprKind::Compare: compile_compare(static_cast<const Compare&>(e)); return;
    case ExprKind::IfExp: compile_if_exp(static_cast<const IfExp&>(e)); return;
    case ExprKind::Lambda: compile_lambda(static_cast<const Lambda&>(e)); return;
    case ExprKind::Yield: {
      const auto& y = static_cast<const Yield&>(e);
      if (!y.from) {
        if (y.value) expr(*y.value);
        else load_none(e.pos);
        emit(Op::Yield, 0, e.pos);
        return;
      }
      // `yield from it` yields each item of it (no send(): values sent are None).
      Label top, end;
      expr(*y.value);
      emit(Op::GetIter, 0, e.pos);
      bind(top);
      emit_jump(Op::ForIter, end, e.pos);
      emit(Op::Yield, 0, e.pos);
      emit(Op::PopTop, 0, e.pos);
      emit_jump(Op::Jump, top, e.pos);
      bind(end);
      load_none(e.pos);
      return;
    }
    case ExprKind::List:
      compile_sequence(static_cast<const List&>(e).elts, false, e.pos);
      if (static_cast<const List&>(e).is_set) emit(Op::BuildSet, -1, e.pos);
      return;
    case ExprKind::Tuple: compile_sequence(static_cast<const Tuple&>(e).elts, true, e.pos); return;
    case ExprKind::Dict: compile_dict(static_cast<const Dict&>(e)); return;
    case ExprKind::ListComp: {
      const auto& c = static_cast<const ListComp&>(e);
      if (c.is_generator) {
        compile_genexp(c);
        return;
      }
      compile_comprehension(c.generators, c.elt.get(), nullptr, nullptr, e.pos);
      if (c.is_set) emit(Op::BuildSet, -1, e.pos);
      return;
    }
    case ExprKind::DictComp: {
      const auto& c = static_cast<const DictComp&>(e);
      compile_comprehension(c.generators, nullptr, c.key.get(), c.value.get(), e.pos);
      return;
    }
    case ExprKind::Starred: fail(e.pos, "can't use starred expression here");
  }
}

// Conditions compile to jumps directly: `not`, `and` and `or` need no values.
// The jump of `not x` is located at the `not` (`located_at`), where the test starts.
void Compiler::jump_if(const Expr& e, bool jump_when, Label& target, const Expr* located_at) {
  if (const auto* u = e.as<UnaryOp>(); u && u->op == UnaryOpKind::Not) {
    jump_if(*u->operand, !jump_when, target, located_at ? located_at : &e);
    return;
  }
  if (const auto* b = e.as<BoolOp>()) {
    // `a and b` jumps when false as soon as one is false; it jumps when true
    // only if all are (symmetrically for `or`).
    if (b->is_and != jump_when) {
      for (const ExprPtr& v : b->values) jump_if(*v, jump_when, target);
    } else {
      Label skip;
      for (size_t i = 0; i + 1 < b->values.size(); ++i) jump_if(*b->values[i], !jump_when, skip);
      jump_if(*b->values.back(), jump_when, target);
      bind(skip);
    }
    return;
  }
  Pos pos = located_at ? located_at->pos : e.pos;
  bool truth;
  if (constant_truth(e, truth)) {
    if (truth == jump_when) emit_jump(Op::Jump, target, pos);
    return;
  }
  expr(e);
  emit_jump(jump_when ? Op::PopJumpIfTrue : Op::PopJumpIfFalse, target, pos);
}

void Compiler::compile_name(const Name& n) { load_name(n.id, n.pos); }

void Compiler::compile_constant(const Constant& c) { emit(Op::LoadConst, add_const(c.value), c.pos); }

// f-string parts: constants and FormatValue results, joined by BuildString.
void Compiler::compile_joined_str(const std::vector<ExprPtr>& parts, Pos pos) {
  for (const ExprPtr& part : parts) {
    if (const auto* c = part->as<Constant>()) {
      compile_constant(*c);
      continue;
    }
    const auto* f = part->as<FormattedValue>();
    KILN_CHECK(f, "f-string part is neither text nor a field");
    expr(*f->value);
    int arg = f->conversion == 's' ? 1 : f->conversion == 'r' ? 2 : f->conversion == 'a' ? 3 : 0;
    if (f->format_spec) {
      compile_joined_str(static_cast<const JoinedStr&>(*f->format_spec).values, f->format_spec->pos);
      arg |= 4;
    }
    emit(Op::FormatValue, arg, f->pos);
  }
  if (parts.empty()) load_const_str("", pos);
  else if (parts.size() > 1) emit(Op::BuildString, int(parts.size()), pos);
}

// f(a, b) -> Call; f(a, k=v) -> CallKw with the names as a tuple constant;
// f(*a, **k) -> CallEx with a positional tuple and a keyword dict.
void Compiler::compile_call(const Call& c) {
  expr(*c.func);
  bool starred = false, kwargs = false;
  for (const ExprPtr& a : c.args) starred |= a->kind == ExprKind::Starred;
  for (const Keyword& k : c.keywords) kwargs |= k.arg.empty();
  if (!starred && !kwargs) {
    for (const ExprPtr& a : c.args) expr(*a);
    if (c.keywords.empty()) {
      emit(Op::Call, int(c.args.size()), c.pos);
      return;
    }
    Const names;
    names.kind = Const::Kind::Tuple;
    for (const Keyword& k : c.keywords) {
      expr(*k.value);
      Const name;
      name.kind = Const::Kind::Str;
      name.s = k.arg;
      names.items.push_back(std::move(name));
    }
    emit(Op::LoadConst, add_const(names), c.pos);
    emit(Op::CallKw, int(c.args.size() + c.keywords.size()), c.pos);
    return;
  }
  compile_sequence(c.args, true, c.pos);
  if (!c.keywords.empty()) compile_keywords_dict(c.keywords, c.pos);
  emit(Op::CallEx, c.keywords.empty() ? 0 : 1, c.pos);
}

// Runs of k=v become BuildMap; each **m is merged with DictUpdate into one fresh dict.
void Compiler::compile_keywords_dict(const std::vector<Keyword>& keywords, Pos pos) {
  int pending = 0;
  bool have_dict = false;
  auto flush = [&] {
    if (pending == 0 && have_dict) return;
    emit(Op::BuildMap, pending, pos);
    if (have_dict) emit(Op::DictUpdate, 1, pos);
    have_dict = true;
    pending = 0;
  };
  for (const Keyword& k : keywords) {
    if (k.arg.empty()) {
      flush();
      expr(*k.value);
      emit(Op::DictUpdate, 1, k.pos);
    } else {
      load_const_str(k.arg, k.pos);
      expr(*k.value);
      ++pending;
    }
  }
  if (pending) flush();
}

void Compiler::compile_unary(const UnaryOp& u) {
  // -1 and -2.5 are constants, as in CPython's folding.
  if (const auto* c = u.operand->as<Constant>(); c && is_numeric(c->value) &&
                                                 (u.op == UnaryOpKind::Neg || u.op == UnaryOpKind::Pos)) {
    Const v = c->value;
    if (u.op == UnaryOpKind::Neg) {
      if (v.kind == Const::Kind::Int) v.i = -v.i;  // a literal is >= 0, so never INT64_MIN
      else if (v.kind == Const::Kind::BigInt) v.s = v.s[0] == '-' ? v.s.substr(1) : "-" + v.s;
      else v.f = -v.f;
    }
    emit(Op::LoadConst, add_const(v), u.pos);
    return;
  }
  expr(*u.operand);
  emit(Op::UnaryOp, int(u.op), u.pos);
}

void Compiler::compile_bool_op(const BoolOp& b) {
  Label end;
  for (size_t i = 0; i + 1 < b.values.size(); ++i) {
    expr(*b.values[i]);
    emit_jump(b.is_and ? Op::JumpIfFalseOrPop : Op::JumpIfTrueOrPop, end, b.pos);
  }
  expr(*b.values.back());
  bind(end);
}

// a < b < c: b is evaluated once and kept under the first result (DupTop,
// RotThree); a false link short-circuits to a cleanup that drops it.
void Compiler::compile_compare(const Compare& c) {
  expr(*c.left);
  size_t n = c.ops.size();
  if (n == 1) {
    expr(*c.comparators[0]);
    emit(Op::CompareOp, int(c.ops[0]), c.pos);
    return;
  }
  Label cleanup, end;
  for (size_t i = 0; i + 1 < n; ++i) {
    expr(*c.comparators[i]);
    emit(Op::DupTop, 0, c.pos);
    emit(Op::RotThree, 0, c.pos);
    emit(Op::CompareOp, int(c.ops[i]), c.pos);
    emit_jump(Op::JumpIfFalseOrPop, cleanup, c.pos);
  }
  expr(*c.comparators[n - 1]);
  emit(Op::CompareOp, int(c.ops[n - 1]), c.pos);
  emit_jump(Op::Jump, end, c.pos);
  bind(cleanup);
  emit(Op::RotTwo, 0, c.pos);
  emit(Op::PopTop, 0, c.pos);
  bind(end);
}

void Compiler::compile_if_exp(const IfExp& e) {
  Label orelse, end;
  jump_if(*e.test, false, orelse);
  expr(*e.body);
  emit_jump(Op::Jump, end, e.pos);
  bind(orelse);
  expr(*e.orelse);
  bind(end);
}

// Lists and tuples; with *iterables inside they are built as a list
// (ListExtend / ListAppend) and, for tuples, converted with ListToTuple.
void Compiler::compile_sequence(const std::vector<ExprPtr>& elts, bool tuple, Pos pos) {
  size_t leading = 0;
  while (leading < elts.size() && elts[leading]->kind != ExprKind::Starred) ++leading;
  for (size_t i = 0; i < leading; ++i) expr(*elts[i]);
  if (leading == elts.size()) {
    emit(tuple ? Op::BuildTuple : Op::BuildList, int(elts.size()), pos);
    return;
  }
  emit(Op::BuildList, int(leading), pos);
  for (size_t i = leading; i < elts.size(); ++i) {
    if (const auto* s = elts[i]->as<Starred>()) {
      expr(*s->value);
      emit(Op::ListExtend, 1, s->pos);
    } else {
      expr(*elts[i]);
      emit(Op::ListAppend, 1, elts[i]->pos);
    }
  }
  if (tuple) emit(Op::ListToTuple, 0, pos);
}

void Compiler::compile_dict(const Dict& d) {
  int pending = 0;
  bool have_dict = false;
  auto flush = [&] {
    if (pending == 0 && have_dict) return;
    emit(Op::BuildMap, pending, d.pos);
    if (have_dict) emit(Op::DictUpdate, 1, d.pos);
    have_dict = true;
    pending = 0;
  };
  for (size_t i = 0; i < d.keys.size(); ++i) {
    if (!d.keys[i]) {
      flush();
      expr(*d.values[i]);
      emit(Op::DictUpdate, 1, d.values[i]->pos);
    } else {
      expr(*d.keys[i]);
      expr(*d.values[i]);
      ++pending;
    }
  }
  if (pending || !have_dict) flush();
}

// Inline, without a frame: the list (or dict) under construction sits below
// one iterator per `for` clause, so ListAppend / MapAdd reach it at depth
// len(generators) + 1.
void Compiler::compile_comprehension(const std::vector<Comprehension>& gens, const Expr* elt, const Expr* key,
                                     const Expr* value, Pos pos) {
  emit(elt ? Op::BuildList : Op::BuildMap, 0, pos);
  std::vector<Label> tops(gens.size()), ends(gens.size());
  for (size_t i = 0; i < gens.size(); ++i) {
    const Comprehension& g = gens[i];
    expr(*g.iter);
    emit(Op::GetIter, 0, g.iter->pos);
    bind(tops[i]);
    emit_jump(Op::ForIter, ends[i], g.pos);
    store_target(*g.target);
    for (const ExprPtr& cond : g.ifs) jump_if(*cond, false, tops[i]);
  }
  int depth = int(gens.size()) + 1;
  if (elt) {
    expr(*elt);
    emit(Op::ListAppend, depth, elt->pos);
  } else {
    expr(*key);
    expr(*value);
    emit(Op::MapAdd, depth, key->pos);
  }
  for (size_t i = gens.size(); i-- > 0;) {
    emit_jump(Op::Jump, tops[i], gens[i].pos);
    bind(ends[i]);
  }
}

// A generator expression, as CPython compiles it: a generator function
// "<genexpr>" whose parameter ".0" is the first iterable's iterator, made and
// called at once. The first iterable is evaluated (and iter() taken) here, in
// the enclosing scope; everything else runs lazily, one yield per element.
void Compiler::compile_genexp(const ListComp& c) {
  const std::vector<Comprehension>& gens = c.generators;
  Scope* s = scopes_.scope_of(&c);
  KILN_CHECK(s, "no scope for a generator expression");
  CodePtr code = new_code(s, s->name, s->qualname, c.pos.line);
  code->argcount = 1;
  code->is_generator = code->is_genexp = true;
  push_unit(code, s);
  std::vector<Label> tops(gens.size()), ends(gens.size());
  for (size_t i = 0; i < gens.size(); ++i) {
    const Comprehension& g = gens[i];
    if (i == 0) {
      emit(Op::LoadFast, var_index(".0"), g.iter->pos);
    } else {
      expr(*g.iter);
      emit(Op::GetIter, 0, g.iter->pos);
    }
    bind(tops[i]);
    emit_jump(Op::ForIter, ends[i], g.pos);
    store_target(*g.target);
    for (const ExprPtr& cond : g.ifs) jump_if(*cond, false, tops[i]);
  }
  expr(*c.elt);
  emit(Op::Yield, 0, c.elt->pos);
  emit(Op::PopTop, 0, c.elt->pos);
  for (size_t i = gens.size(); i-- > 0;) {
    emit_jump(Op::Jump, tops[i], gens[i].pos);
    bind(ends[i]);
  }
  pop_unit(c.pos);
  make_function(code, Arguments{}, c.pos);
  expr(*gens[0].iter);
  emit(Op::GetIter, 0, gens[0].iter->pos);
  emit(Op::Call, 1, c.pos);
}

}  // namespace kiln::py::detail
