#pragma once
// The code generator behind compile_module(); internal to core/python.
// compiler.cpp: code objects, names, constants, functions and classes;
// compiler_stmt.cpp: statements; compiler_expr.cpp: expressions.
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/python/ast.h"
#include "core/python/code.h"
#include "core/python/scope.h"

namespace kiln::py::detail {

using namespace ast;

// A jump target that may not be known yet: jumps to it are patched when bound.
struct Label {
  int target = -1;
  std::vector<int> refs;
};

// What a break / continue / return must unwind, and what the exception table
// says about the instructions inside. With, TryExcept and TryFinally protect
// their bodies (an exception goes to `handler`); in the body of an except
// clause (Handler) or of a finally run for an exception (FinallyHandler), the
// exception being handled is on the value stack at index depth - 1.
struct Block {
  enum class Kind : uint8_t { For, While, With, TryExcept, TryFinally, Handler, FinallyHandler };
  explicit Block(Kind k, Label* on_break = nullptr, Label* on_continue = nullptr)
      : kind(k), break_label(on_break), continue_label(on_continue) {}
  Kind kind;
  Label* break_label = nullptr;
  Label* continue_label = nullptr;
  Label* handler = nullptr;           // With, TryExcept, TryFinally
  const Body* finalbody = nullptr;    // TryFinally: run again at each break / continue / return
  const std::string* name = nullptr;  // Handler: the `as` name, cleared when the clause is left
  int depth = 0;                      // value-stack items with this block's own included
  int level = 0;                      // protecting blocks enclosing this one, itself included
  int open_start = -1;                // start of the range being recorded, -1 while suspended
  Pos pos;
};

// A protected range whose handler label may not be bound yet.
struct PendingEntry {
  ExceptEntry entry;
  const Label* handler;
};

// One code object under construction.
struct Unit {
  CodePtr code;
  Scope* scope = nullptr;
  std::unordered_map<std::string, int> names, varnames, cells, consts;
  std::vector<Block> blocks;
  std::vector<PendingEntry> pending_entries;
};

// The source text of an annotation, as `from __future__ import annotations`
// keeps it, for the forms annotations take; any other expression is "...".
std::string annotation_text(const Expr& e);

class Compiler {
 public:
  Compiler(std::string filename, ScopeTable& scopes, std::shared_ptr<const std::vector<std::string>> lines)
      : filename_(std::move(filename)), scopes_(scopes), lines_(std::move(lines)) {}

  CodePtr compile(const Module& m);

 private:
  // ---- code objects and tables (compiler.cpp)
  CodePtr new_code(Scope* scope, const std::string& name, const std::string& qualname, int firstlineno);
  void push_unit(CodePtr code, Scope* scope);
  CodePtr pop_unit(Pos implicit_return_pos);
  int emit(Op op, int arg, Pos pos);
  void emit_jump(Op op, Label& label, Pos pos);
  void bind(Label& label);
  int here() const { return int(unit_->code->code.size()); }
  int add_const(const Const& c);
  int add_code_const(CodePtr code);
  int add_name(const std::string& name);
  int var_index(const std::string& name);
  int cell_index(const std::string& name);
  void load_const_str(const std::string& s, Pos pos);
  void load_none(Pos pos);
  void load_name(const std::string& name, Pos pos);
  void store_name(const std::string& name, Pos pos);
  void delete_name(const std::string& name, Pos pos);
  void compile_function_def(const FunctionDef& f);
  void compile_lambda(const Lambda& l);
  void make_function(const CodePtr& code, const Arguments& args, Pos pos, const FunctionDef* def = nullptr);
  // Pushes an annotation's value: the expression, or its text under
  // `from __future__ import annotations`.
  void annotation(const Expr& e);
  CodePtr function_code(const void* node, const Arguments& args, int firstlineno);
  void compile_class_def(const ClassDef& c);
  void body_with_docstring(const Body& body, bool store_doc);
  [[noreturn]] void fail(Pos where, const std::string& what);
  [[noreturn]] void unsupported(Pos where, const std::string& name, const std::string& why);

  // ---- statements (compiler_stmt.cpp)
  void statements(const Body& body);
  void statement(const Stmt& s);
  void compile_return(const Return& r);
  void compile_break_continue(const Stmt& s, bool is_break);
  void compile_if(const If& s);
  void compile_while(const While& s);
  void compile_for(const For& s);
  void compile_with(const With& s);
  void compile_try(const Try& s);
  void compile_try_except(const Try& s);
  void compile_raise(const Raise& s);
  // Exceptions (compiler_try.cpp): blocks and the ranges of the exception table.
  Block& push_block(Block b);
  void pop_block();
  void close_range(Block& b);
  void bind_handler(Label& handler);
  // Leaves blocks[keep..] for a break / continue / return: each one's range
  // ends, its cleanup is emitted (pop an iterator, exit a with, run a finally
  // body, drop a handled exception); returns them for resume_blocks once the
  // jump is emitted, as the code after it is still inside them.
  std::vector<Block> unwind_blocks(size_t keep, Pos pos);
  void resume_blocks(std::vector<Block> saved);
  void clear_except_name(const std::string& name, Pos pos);
  int stack_items() const;
  int protect_level() const;
  void compile_assign(const Assign& s);
  void compile_aug_assign(const AugAssign& s);
  void compile_delete(const Expr& target);
  void compile_import(const Import& s);
  void compile_import_from(const ImportFrom& s);
  void store_target(const Expr& target);

  // ---- expressions (compiler_expr.cpp)
  void expr(const Expr& e);
  void jump_if(const Expr& e, bool jump_when, Label& target, const Expr* located_at = nullptr);
  void compile_name(const Name& n);
  void compile_constant(const Constant& c);
  void compile_joined_str(const std::vector<ExprPtr>& parts, Pos pos);
  void compile_call(const Call& c);
  void compile_keywords_dict(const std::vector<Keyword>& keywords, Pos pos);
  void compile_unary(const UnaryOp& u);
  void compile_bool_op(const BoolOp& b);
  void compile_compare(const Compare& c);
  void compile_if_exp(const IfExp& e);
  void compile_sequence(const std::vector<ExprPtr>& elts, bool tuple, Pos pos);
  void compile_dict(const Dict& d);
  void compile_comprehension(const std::vector<Comprehension>& gens, const Expr* elt, const Expr* key,
                             const Expr* value, Pos pos);
  void compile_genexp(const ListComp& c);

  std::string filename_;
  ScopeTable& scopes_;
  std::shared_ptr<const std::vector<std::string>> lines_;
  bool future_annotations_ = false;  // `from __future__ import annotations`: annotations stay text
  std::vector<std::unique_ptr<Unit>> units_;
  Unit* unit_ = nullptr;
};

}  // namespace kiln::py::detail
