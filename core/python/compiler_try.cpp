// Exceptions to bytecode: try / except / else / finally, raise, the handler
// of a with-block, and how break / continue / return leave such blocks.
// Handlers are found through a static exception table (code.h), as CPython
// 3.11 does, not a block stack in the frame: capture stops and resumes frames
// at any instruction and must not have to rebuild one.
#include "core/python/compiler_impl.h"

namespace kiln::py::detail {

namespace {

bool protects(Block::Kind k) {
  return k == Block::Kind::With || k == Block::Kind::TryExcept || k == Block::Kind::TryFinally;
}

bool handles(Block::Kind k) { return k == Block::Kind::Handler || k == Block::Kind::FinallyHandler; }

int own_items(Block::Kind k) {
  return k == Block::Kind::For || k == Block::Kind::With || handles(k) ? 1 : 0;
}

}  // namespace

int Compiler::stack_items() const {
  int n = 0;
  for (const Block& b : unit_->blocks) n += own_items(b.kind);
  return n;
}

int Compiler::protect_level() const {
  int n = 0;
  for (const Block& b : unit_->blocks) n += protects(b.kind) ? 1 : 0;
  return n;
}

Block& Compiler::push_block(Block b) {
  b.depth = stack_items() + own_items(b.kind);
  if (protects(b.kind)) {
    b.level = protect_level() + 1;
  } else if (handles(b.kind)) {
    b.level = 1;
    for (const Block& o : unit_->blocks) b.level += handles(o.kind) ? 1 : 0;
  }
  if (protects(b.kind) || handles(b.kind)) b.open_start = here();
  unit_->blocks.push_back(b);
  return unit_->blocks.back();
}

void Compiler::pop_block() {
  close_range(unit_->blocks.back());
  unit_->blocks.pop_back();
}

void Compiler::close_range(Block& b) {
  if (b.open_start < 0) return;
  if (here() > b.open_start) {
    if (protects(b.kind)) {
      // A with-block's handler finds its __exit__ under the exception.
      unit_->pending_entries.push_back({ExceptEntry{b.open_start, here(), -1, b.depth, b.level}, b.handler});
    } else {
      unit_->code->handled_ranges.push_back(ExceptEntry{b.open_start, here(), -1, b.depth - 1, b.level});
    }
  }
  b.open_start = -1;
}

void Compiler::bind_handler(Label& handler) {
  bind(handler);
  auto& pending = unit_->pending_entries;
  for (auto it = pending.begin(); it != pending.end();) {
    if (it->handler != &handler) {
      ++it;
      continue;
    }
    ExceptEntry e = it->entry;
    e.target = handler.target;
    unit_->code->exception_table.push_back(e);
    it = pending.erase(it);
  }
}

std::vector<Block> Compiler::unwind_blocks(size_t keep, Pos pos) {
  std::vector<Block> saved(unit_->blocks.begin() + std::ptrdiff_t(keep), unit_->blocks.end());
  while (unit_->blocks.size() > keep) {
    Block b = unit_->blocks.back();
    pop_block();
    switch (b.kind) {
      case Block::Kind::For: emit(Op::PopTop, 0, pos); break;  // the iterator
      case Block::Kind::With: emit(Op::WithExit, 0, pos); break;
      case Block::Kind::TryFinally: statements(*b.finalbody); break;
      case Block::Kind::Handler:
        emit(Op::PopExcept, 0, pos);
        if (b.name) clear_except_name(*b.name, pos);
        break;
      case Block::Kind::FinallyHandler: emit(Op::PopTop, 0, pos); break;  // the exception is dropped
      case Block::Kind::While:
      case Block::Kind::TryExcept: break;
    }
  }
  return saved;
}

void Compiler::resume_blocks(std::vector<Block> saved) {
  for (Block& b : saved) {
    if (protects(b.kind) || handles(b.kind)) b.open_start = here();
    unit_->blocks.push_back(b);
  }
}

// try: B except E as e: H else: O finally: F
//
//        [TryFinally protects:]  [TryExcept protects:] B
//                                O
//        F                       (normal path)
//        Jump end
// fin:   [FinallyHandler:] F     (exception on the stack)
//        Reraise 0
// end:
void Compiler::compile_try(const Try& s) {
  if (s.finalbody.empty()) {
    compile_try_except(s);
    return;
  }
  Label fin, end;
  Block b{Block::Kind::TryFinally};
  b.handler = &fin;
  b.finalbody = &s.finalbody;
  b.pos = s.pos;
  push_block(b);
  compile_try_except(s);
  pop_block();
  statements(s.finalbody);
  emit_jump(Op::Jump, end, s.pos);
  bind_handler(fin);
  Block h{Block::Kind::FinallyHandler};
  h.pos = s.pos;
  push_block(h);
  statements(s.finalbody);
  pop_block();
  emit(Op::Reraise, 0, s.pos);
  bind(end);
}

// Each clause tests the exception (left on the stack) and, on a match, runs
// its body as a Handler block; no match re-raises it.
void Compiler::compile_try_except(const Try& s) {
  if (s.handlers.empty()) {
    statements(s.body);
    return;
  }
  Label handler, end;
  Block b{Block::Kind::TryExcept};
  b.handler = &handler;
  b.pos = s.pos;
  push_block(b);
  statements(s.body);
  pop_block();
  statements(s.orelse);
  emit_jump(Op::Jump, end, s.pos);
  bind_handler(handler);
  for (size_t i = 0; i < s.handlers.size(); ++i) {
    const ExceptHandler& h = s.handlers[i];
    if (!h.type && i + 1 < s.handlers.size()) fail(h.pos, "default 'except:' must be last");
    Label next;
    if (h.type) {
      expr(*h.type);
      emit(Op::CheckExcMatch, 0, h.type->pos);
      emit_jump(Op::PopJumpIfFalse, next, h.pos);
    }
    if (!h.name.empty()) {
      emit(Op::DupTop, 0, h.pos);
      store_name(h.name, h.pos);
    }
    Block hb{Block::Kind::Handler};
    hb.name = h.name.empty() ? nullptr : &h.name;
    hb.pos = h.pos;
    push_block(hb);
    statements(h.body);
    pop_block();
    emit(Op::PopExcept, 0, h.pos);
    if (!h.name.empty()) clear_except_name(h.name, h.pos);
    emit_jump(Op::Jump, end, h.pos);
    bind(next);
  }
  emit(Op::Reraise, 0, s.handlers.back().pos);
  bind(end);
}

// CPython unbinds the name when the clause ends, so the exception (and the
// frames its traceback holds) can go; a module-level name is set to None.
void Compiler::clear_except_name(const std::string& name, Pos pos) {
  load_none(pos);
  store_name(name, pos);
  if (resolve(*unit_->scope, name) == NameAccess::Fast) delete_name(name, pos);
}

void Compiler::compile_raise(const Raise& r) {
  if (!r.exc) {
    if (r.cause) fail(r.pos, "invalid syntax");
    emit(Op::Reraise, 1, r.pos);
    return;
  }
  expr(*r.exc);
  if (r.cause) expr(*r.cause);
  emit(Op::Raise, r.cause ? 2 : 1, r.pos);
}

}  // namespace kiln::py::detail
