// Statements to bytecode, following CPython 3.10's code generator (the
// instruction set of code.h is its close cousin).
#include "core/python/compiler_impl.h"

namespace kiln::py::detail {

// The source text of an annotation, as `from __future__ import annotations`
// keeps it, for the forms annotations take; any other expression is "...".
std::string annotation_text(const Expr& e) {
  if (const auto* n = e.as<Name>()) return n->id;
  if (const auto* a = e.as<Attribute>()) return annotation_text(*a->value) + "." + a->attr;
  if (const auto* s = e.as<Subscript>()) {
    std::string inner;
    if (const auto* t = s->slice->as<Tuple>()) {
      for (size_t i = 0; i < t->elts.size(); ++i) inner += (i ? ", " : "") + annotation_text(*t->elts[i]);
    } else {
      inner = annotation_text(*s->slice);
    }
    return annotation_text(*s->value) + "[" + inner + "]";
  }
  if (const auto* l = e.as<List>()) {
    std::string inner;
    for (size_t i = 0; i < l->elts.size(); ++i) inner += (i ? ", " : "") + annotation_text(*l->elts[i]);
    return "[" + inner + "]";
  }
  if (const auto* b = e.as<BinOp>(); b && b->op == BinaryOpKind::Or)
    return annotation_text(*b->left) + " | " + annotation_text(*b->right);
  if (const auto* c = e.as<Constant>()) {
    switch (c->value.kind) {
      case Const::Kind::None: return "None";
      case Const::Kind::Str: return "'" + c->value.s + "'";
      case Const::Kind::Int: return std::to_string(c->value.i);
      default: break;
    }
  }
  return "...";
}


void Compiler::statements(const Body& body) {
  for (const StmtPtr& s : body) statement(*s);
}

void Compiler::statement(const Stmt& s) {
  switch (s.kind) {
    case StmtKind::FunctionDef: compile_function_def(static_cast<const FunctionDef&>(s)); return;
    case StmtKind::ClassDef: compile_class_def(static_cast<const ClassDef&>(s)); return;
    case StmtKind::Return: compile_return(static_cast<const Return&>(s)); return;
    case StmtKind::Delete:
      for (const ExprPtr& t : static_cast<const Delete&>(s).targets) compile_delete(*t);
      return;
    case StmtKind::Assign: compile_assign(static_cast<const Assign&>(s)); return;
    case StmtKind::AugAssign: compile_aug_assign(static_cast<const AugAssign&>(s)); return;
    case StmtKind::AnnAssign: {
      // As CPython 3.11: a module or class body evaluates the annotation of a
      // simple name and keeps it in __annotations__ (its text under `from
      // __future__ import annotations`); a function body never evaluates it.
      // The builtin finds the namespace through the running frame.
      const auto& a = static_cast<const AnnAssign&>(s);
      if (a.value) {
        expr(*a.value);
        store_target(*a.target);
      }
      if (unit_->scope->kind == Scope::Kind::Function) return;
      if (const Name* n = a.target->as<Name>()) {
        load_name("__kiln_annotate__", s.pos);
        load_const_str(n->id, s.pos);
        annotation(*a.annotation);
        emit(Op::Call, 2, s.pos);
        emit(Op::PopTop, 0, s.pos);
      } else if (!future_annotations_) {
        expr(*a.annotation);
        emit(Op::PopTop, 0, s.pos);
      }
      return;
    }
    case StmtKind::For: compile_for(static_cast<const For&>(s)); return;
    case StmtKind::While: compile_while(static_cast<const While&>(s)); return;
    case StmtKind::If: compile_if(static_cast<const If&>(s)); return;
    case StmtKind::With: compile_with(static_cast<const With&>(s)); return;
    case StmtKind::Raise: compile_raise(static_cast<const Raise&>(s)); return;
    case StmtKind::Try: compile_try(static_cast<const Try&>(s)); return;
    case StmtKind::Assert: {
      const auto& a = static_cast<const Assert&>(s);
      Label end;
      jump_if(*a.test, true, end);
      if (a.msg) expr(*a.msg);
      emit(Op::RaiseAssert, a.msg ? 1 : 0, s.pos);
      bind(end);
      return;
    }
    case StmtKind::Import: compile_import(static_cast<const Import&>(s)); return;
    case StmtKind::ImportFrom: compile_import_from(static_cast<const ImportFrom&>(s)); return;
    case StmtKind::Expr: {
      const Expr& e = *static_cast<const ExprStmt&>(s).value;
      if (e.kind == ExprKind::Constant) return;  // a lone string, `...`: nothing to run
      expr(e);
      emit(Op::PopTop, 0, s.pos);
      return;
    }
    case StmtKind::Pass:
    case StmtKind::Global: return;
    case StmtKind::Break: compile_break_continue(s, true); return;
    case StmtKind::Continue: compile_break_continue(s, false); return;
  }
}

// The value is computed first and kept in a hidden local while every open
// block is left, innermost first (iterators dropped, with-blocks exited,
// finally bodies run), so the stack holds only the blocks' own items, as the
// exception table's depths assume.
void Compiler::compile_return(const Return& r) {
  if (unit_->scope->kind != Scope::Kind::Function) fail(r.pos, "'return' outside function");
  if (r.value) expr(*r.value);
  else load_none(r.pos);
  bool plain = true;
  for (const Block& b : unit_->blocks) plain = plain && b.kind == Block::Kind::While;
  if (plain) {
    emit(Op::ReturnValue, 0, r.pos);
    return;
  }
  const int slot = var_index(".return_value");
  emit(Op::StoreFast, slot, r.pos);
  std::vector<Block> saved = unwind_blocks(0, r.pos);
  emit(Op::LoadFast, slot, r.pos);
  emit(Op::ReturnValue, 0, r.pos);
  resume_blocks(std::move(saved));
}

void Compiler::compile_break_continue(const Stmt& s, bool is_break) {
  size_t loop = unit_->blocks.size();
  while (loop > 0 && unit_->blocks[loop - 1].kind != Block::Kind::For && unit_->blocks[loop - 1].kind != Block::Kind::While)
    --loop;
  if (loop == 0) fail(s.pos, is_break ? "'break' outside loop" : "'continue' not properly in loop");
  const Block target = unit_->blocks[loop - 1];
  // break also leaves the loop itself (its iterator is dropped); continue stays in it.
  std::vector<Block> saved = unwind_blocks(is_break ? loop - 1 : loop, s.pos);
  emit_jump(Op::Jump, is_break ? *target.break_label : *target.continue_label, s.pos);
  resume_blocks(std::move(saved));
}

void Compiler::compile_if(const If& s) {
  Label end;
  for (size_t i = 0; i < s.branches.size(); ++i) {
    const If::Branch& b = s.branches[i];
    Label next;
    jump_if(*b.test, false, next);
    statements(b.body);
    if (i + 1 < s.branches.size() || !s.orelse.empty()) emit_jump(Op::Jump, end, b.pos);
    bind(next);
  }
  statements(s.orelse);
  bind(end);
}

void Compiler::compile_while(const While& s) {
  Label top, orelse, end;
  bind(top);
  jump_if(*s.test, false, orelse);
  push_block(Block{Block::Kind::While, &end, &top});
  statements(s.body);
  pop_block();
  emit_jump(Op::Jump, top, s.pos);
  bind(orelse);
  statements(s.orelse);
  bind(end);
}

void Compiler::compile_for(const For& s) {
  Label top, orelse, end;
  expr(*s.iter);
  emit(Op::GetIter, 0, s.iter->pos);
  bind(top);
  emit_jump(Op::ForIter, orelse, s.pos);
  store_target(*s.target);
  push_block(Block{Block::Kind::For, &end, &top});
  statements(s.body);
  pop_block();
  emit_jump(Op::Jump, top, s.pos);
  bind(orelse);
  statements(s.orelse);
  bind(end);
}

// `with a as x, b:` is `with a as x: with b:`. An exception in the body goes
// to WithExceptExit, which calls __exit__ with it and swallows it when that
// returns true.
void Compiler::compile_with(const With& s) {
  std::vector<Label> handlers(s.items.size());
  for (size_t i = 0; i < s.items.size(); ++i) {
    const WithItem& w = s.items[i];
    expr(*w.context_expr);
    emit(Op::WithEnter, 0, w.context_expr->pos);
    Block b{Block::Kind::With};
    b.handler = &handlers[i];
    b.pos = w.context_expr->pos;
    // The result of __enter__ is on the stack until stored: protect from after it.
    if (w.optional_vars) {
      push_block(b);
      store_target(*w.optional_vars);
    } else {
      emit(Op::PopTop, 0, w.context_expr->pos);
      push_block(b);
    }
  }
  statements(s.body);
  for (size_t i = s.items.size(); i-- > 0;) {
    Label after;
    pop_block();
    emit(Op::WithExit, 0, s.pos);
    emit_jump(Op::Jump, after, s.pos);
    bind_handler(handlers[i]);
    emit_jump(Op::WithExceptExit, after, s.pos);
    bind(after);
  }
}

void Compiler::compile_assign(const Assign& s) {
  expr(*s.value);
  for (size_t i = 0; i < s.targets.size(); ++i) {
    if (i + 1 < s.targets.size()) emit(Op::DupTop, 0, s.targets[i]->pos);
    store_target(*s.targets[i]);
  }
}

// x.a += v and x[k] += v evaluate x (and k) once, as CPython does.
void Compiler::compile_aug_assign(const AugAssign& s) {
  const Expr& t = *s.target;
  int op = int(s.op);
  if (const auto* n = t.as<Name>()) {
    load_name(n->id, t.pos);
    expr(*s.value);
    emit(Op::InplaceOp, op, s.pos);
    store_name(n->id, t.pos);
  } else if (const auto* a = t.as<Attribute>()) {
    expr(*a->value);
    emit(Op::DupTop, 0, t.pos);
    emit(Op::LoadAttr, add_name(a->attr), t.pos);
    expr(*s.value);
    emit(Op::InplaceOp, op, s.pos);
    emit(Op::RotTwo, 0, t.pos);
    emit(Op::StoreAttr, add_name(a->attr), t.pos);
  } else if (const auto* sub = t.as<Subscript>()) {
    expr(*sub->value);
    expr(*sub->slice);
    emit(Op::DupTopTwo, 0, t.pos);
    emit(Op::BinarySubscr, 0, t.pos);
    expr(*s.value);
    emit(Op::InplaceOp, op, s.pos);
    emit(Op::RotThree, 0, t.pos);
    emit(Op::StoreSubscr, 0, t.pos);
  } else {
    fail(t.pos, "illegal expression for augmented assignment");
  }
}

void Compiler::compile_delete(const Expr& t) {
  switch (t.kind) {
    case ExprKind::Name: delete_name(static_cast<const Name&>(t).id, t.pos); return;
    case ExprKind::Subscript: {
      const auto& s = static_cast<const Subscript&>(t);
      expr(*s.value);
      expr(*s.slice);
      emit(Op::DeleteSubscr, 0, t.pos);
      return;
    }
    case ExprKind::Attribute: {
      const auto& a = static_cast<const Attribute&>(t);
      expr(*a.value);
      emit(Op::DeleteAttr, add_name(a.attr), t.pos);
      return;
    }
    case ExprKind::Tuple:
      for (const ExprPtr& e : static_cast<const Tuple&>(t).elts) compile_delete(*e);
      return;
    case ExprKind::List:
      for (const ExprPtr& e : static_cast<const List&>(t).elts) compile_delete(*e);
      return;
    default: fail(t.pos, "cannot delete expression");
  }
}

void Compiler::compile_import(const Import& s) {
  for (const Alias& a : s.names) {
    if (a.asname.empty()) {
      emit(Op::ImportName, add_name(a.name), a.pos);  // binds the top package
      store_name(a.name.substr(0, a.name.find('.')), a.pos);
    } else {
      emit(Op::ImportModule, add_name(a.name), a.pos);
      store_name(a.asname, a.pos);
    }
  }
}

void Compiler::compile_import_from(const ImportFrom& s) {
  emit(Op::ImportModule, add_name(s.module), s.pos);
  for (const Alias& a : s.names) {
    emit(Op::ImportFrom, add_name(a.name), a.pos);
    store_name(a.asname.empty() ? a.name : a.asname, a.pos);
  }
  emit(Op::PopTop, 0, s.pos);
}

void Compiler::store_target(const Expr& t) {
  switch (t.kind) {
    case ExprKind::Name: store_name(static_cast<const Name&>(t).id, t.pos); return;
    case ExprKind::Attribute: {
      const auto& a = static_cast<const Attribute&>(t);
      expr(*a.value);
      emit(Op::StoreAttr, add_name(a.attr), t.pos);
      return;
    }
    case ExprKind::Subscript: {
      const auto& s = static_cast<const Subscript&>(t);
      expr(*s.value);
      expr(*s.slice);
      emit(Op::StoreSubscr, 0, t.pos);
      return;
    }
    case ExprKind::Tuple:
    case ExprKind::List: {
      const auto& elts = t.kind == ExprKind::Tuple ? static_cast<const Tuple&>(t).elts : static_cast<const List&>(t).elts;
      size_t star = elts.size();
      for (size_t i = 0; i < elts.size(); ++i)
        if (elts[i]->kind == ExprKind::Starred) star = i;
      if (star == elts.size()) {
        emit(Op::UnpackSequence, int(elts.size()), t.pos);
      } else {
        size_t before = star, after = elts.size() - star - 1;
        if (before > 255 || after > (1u << 23))
          fail(t.pos, "too many expressions in star-unpacking assignment");
        emit(Op::UnpackEx, int(before | (after << 8)), t.pos);
      }
      for (const ExprPtr& e : elts)
        store_target(e->kind == ExprKind::Starred ? *static_cast<const Starred&>(*e).value : *e);
      return;
    }
    default: fail(t.pos, "cannot assign to expression");
  }
}

}  // namespace kiln::py::detail
