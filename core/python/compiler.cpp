#include "core/python/compiler.h"

#include <algorithm>
#include <cstring>

#include "core/python/compiler_impl.h"
#include "core/python/parser.h"

namespace kiln::py {

namespace detail {

namespace {

// Equal constants share one consts slot; the key tells them apart by kind too
// (1, 1.0 and True are different constants).
std::string const_key(const Const& c) {
  switch (c.kind) {
    case Const::Kind::None: return "N";
    case Const::Kind::Bool: return c.b ? "B1" : "B0";
    case Const::Kind::Int: return std::string("I").append(std::to_string(c.i));
    case Const::Kind::BigInt: return std::string("G").append(c.s);
    case Const::Kind::Float: {
      uint64_t bits;
      std::memcpy(&bits, &c.f, sizeof bits);
      return std::string("F").append(std::to_string(bits));
    }
    case Const::Kind::Str: return std::string("S").append(c.s);
    case Const::Kind::Ellipsis: return "E";
    case Const::Kind::Tuple: {
      std::string key = std::string("T").append(std::to_string(c.items.size()));
      for (const Const& item : c.items) {
        std::string k = const_key(item);
        key.append(":").append(std::to_string(k.size())).append(":").append(k);
      }
      return key;
    }
    case Const::Kind::Code: break;
  }
  return "";
}

bool is_jump(Op op) {
  return op == Op::Jump || op == Op::PopJumpIfFalse || op == Op::PopJumpIfTrue || op == Op::JumpIfFalseOrPop ||
         op == Op::JumpIfTrueOrPop || op == Op::ForIter || op == Op::WithExceptExit;
}

}  // namespace

void Compiler::fail(Pos where, const std::string& what) {
  throw Error("SyntaxError: " + what, SourceLocation{filename_, where.line, where.col});
}

void Compiler::unsupported(Pos where, const std::string& name, const std::string& why) {
  throw Error("unsupported construct: " + name + " (" + why + ")", SourceLocation{filename_, where.line, where.col});
}

CodePtr Compiler::new_code(Scope* scope, const std::string& name, const std::string& qualname, int firstlineno) {
  auto code = std::make_shared<Code>();
  code->name = name;
  code->qualname = qualname;
  code->filename = filename_;
  code->firstlineno = firstlineno;
  code->source_lines = lines_;
  code->is_module = scope->kind == Scope::Kind::Module;
  code->is_class_body = scope->kind == Scope::Kind::Class;
  if (scope->kind == Scope::Kind::Function) {
    code->varnames = scope->params;
    for (const std::string& n : scope->bound_order)
      if (!scope->cells.count(n) && std::find(scope->params.begin(), scope->params.end(), n) == scope->params.end())
        code->varnames.push_back(n);
  }
  code->cellvars.assign(scope->cells.begin(), scope->cells.end());
  code->freevars.assign(scope->frees.begin(), scope->frees.end());
  return code;
}

void Compiler::push_unit(CodePtr code, Scope* scope) {
  auto u = std::make_unique<Unit>();
  for (size_t i = 0; i < code->varnames.size(); ++i) u->varnames.emplace(code->varnames[i], int(i));
  for (size_t i = 0; i < code->cellvars.size(); ++i) u->cells.emplace(code->cellvars[i], int(i));
  for (size_t i = 0; i < code->freevars.size(); ++i) u->cells.emplace(code->freevars[i], int(code->cellvars.size() + i));
  u->code = std::move(code);
  u->scope = scope;
  units_.push_back(std::move(u));
  unit_ = units_.back().get();
}

// Every code object ends in `return None` unless its last instruction already
// returns and nothing jumps past it.
CodePtr Compiler::pop_unit(Pos implicit_return_pos) {
  std::vector<Instr>& code = unit_->code->code;
  bool needed = code.empty() || code.back().op != Op::ReturnValue;
  for (const Instr& i : code)
    if (is_jump(i.op) && i.arg == int(code.size())) needed = true;
  if (needed) {
    load_none(implicit_return_pos);
    emit(Op::ReturnValue, 0, implicit_return_pos);
  }
  CodePtr result = unit_->code;
  units_.pop_back();
  unit_ = units_.empty() ? nullptr : units_.back().get();
  return result;
}

int Compiler::emit(Op op, int arg, Pos pos) {
  unit_->code->code.push_back(Instr{op, arg, pos.line, pos.col});
  return here() - 1;
}

void Compiler::emit_jump(Op op, Label& label, Pos pos) {
  int at = emit(op, label.target, pos);
  if (label.target < 0) label.refs.push_back(at);
}

void Compiler::bind(Label& label) {
  label.target = here();
  for (int ref : label.refs) unit_->code->code[size_t(ref)].arg = label.target;
  label.refs.clear();
}

int Compiler::add_const(const Const& c) {
  auto [it, inserted] = unit_->consts.emplace(const_key(c), int(unit_->code->consts.size()));
  if (inserted) unit_->code->consts.push_back(c);
  return it->second;
}

int Compiler::add_code_const(CodePtr code) {
  Const c;
  c.kind = Const::Kind::Code;
  c.code = std::move(code);
  unit_->code->consts.push_back(std::move(c));
  return int(unit_->code->consts.size()) - 1;
}

int Compiler::add_name(const std::string& name) {
  auto [it, inserted] = unit_->names.emplace(name, int(unit_->code->names.size()));
  if (inserted) unit_->code->names.push_back(name);
  return it->second;
}

int Compiler::var_index(const std::string& name) {
  auto [it, inserted] = unit_->varnames.emplace(name, int(unit_->code->varnames.size()));
  if (inserted) unit_->code->varnames.push_back(name);
  return it->second;
}

int Compiler::cell_index(const std::string& name) {
  auto it = unit_->cells.find(name);
  KILN_CHECK(it != unit_->cells.end(), "no cell for '", name, "' in ", unit_->code->qualname);
  return it->second;
}

void Compiler::load_const_str(const std::string& s, Pos pos) {
  Const c;
  c.kind = Const::Kind::Str;
  c.s = s;
  emit(Op::LoadConst, add_const(c), pos);
}

void Compiler::load_none(Pos pos) { emit(Op::LoadConst, add_const(Const{}), pos); }

void Compiler::load_name(const std::string& name, Pos pos) {
  switch (resolve(*unit_->scope, name)) {
    case NameAccess::Fast: emit(Op::LoadFast, var_index(name), pos); return;
    case NameAccess::Deref: emit(Op::LoadDeref, cell_index(name), pos); return;
    case NameAccess::Name: emit(Op::LoadName, add_name(name), pos); return;
    case NameAccess::Global:
      // A lambda in a class-level comprehension cannot reach the comprehension's
      // variable: it lives in the class namespace, which functions do not see.
      if (is_hidden_comprehension_name(name))
        for (Scope* s = unit_->scope->parent; s; s = s->parent)
          if (s->kind != Scope::Kind::Function) {
            if (s->kind == Scope::Kind::Class)
              unsupported(pos, "closure over a comprehension variable in a class body",
                          "move the comprehension into a method");
            break;
          }
      emit(Op::LoadGlobal, add_name(name), pos);
      return;
  }
}

void Compiler::store_name(const std::string& name, Pos pos) {
  switch (resolve(*unit_->scope, name)) {
    case NameAccess::Fast: emit(Op::StoreFast, var_index(name), pos); return;
    case NameAccess::Deref: emit(Op::StoreDeref, cell_index(name), pos); return;
    case NameAccess::Name: emit(Op::StoreName, add_name(name), pos); return;
    case NameAccess::Global: emit(Op::StoreGlobal, add_name(name), pos); return;  // declared `global`
  }
}

void Compiler::delete_name(const std::string& name, Pos pos) {
  switch (resolve(*unit_->scope, name)) {
    case NameAccess::Fast: emit(Op::DeleteFast, var_index(name), pos); return;
    case NameAccess::Deref:
      unsupported(pos, "del of a variable used by a nested function", "assign None to it instead");
    case NameAccess::Name:
    case NameAccess::Global:
      unsupported(pos, "del of a module-level or class-level name", "only local variables can be deleted");
  }
}

void Compiler::body_with_docstring(const Body& body, bool store_doc) {
  size_t first = 0;
  if (!body.empty())
    if (const auto* s = body[0]->as<ExprStmt>())
      if (const auto* c = s->value->as<Constant>(); c && c->value.kind == Const::Kind::Str) {
        if (store_doc) {
          load_const_str(c->value.s, s->pos);
          store_name("__doc__", s->pos);
        }
        first = 1;
      }
  for (size_t i = first; i < body.size(); ++i) statement(*body[i]);
}

static Pos end_pos(const Body& body, Pos fallback) { return body.empty() ? fallback : body.back()->pos; }

void Compiler::annotation(const Expr& e) {
  if (future_annotations_) {
    load_const_str(annotation_text(e), e.pos);
    return;
  }
  const int start = here();
  expr(e);
  unit_->code->annotation_spans.emplace_back(start, here());
}

void Compiler::make_function(const CodePtr& code, const Arguments& args, Pos pos, const FunctionDef* def) {
  int flags = 0;
  if (!args.defaults.empty()) {
    for (const ExprPtr& d : args.defaults) expr(*d);
    emit(Op::BuildTuple, int(args.defaults.size()), pos);
    flags |= 1;
  }
  int kw_defaults = 0;
  for (size_t i = 0; i < args.kwonlyargs.size(); ++i)
    if (args.kw_defaults[i]) {
      load_const_str(args.kwonlyargs[i].name, args.kwonlyargs[i].pos);
      expr(*args.kw_defaults[i]);
      ++kw_defaults;
    }
  if (kw_defaults) {
    emit(Op::BuildMap, kw_defaults, pos);
    flags |= 2;
  }
  if (def) {
    // CPython's order: parameters, *args, keyword-only, **kwargs, then 'return'.
    int n = 0;
    auto one = [&](const Arg& a) {
      if (!a.annotation) return;
      load_const_str(a.name, a.pos);
      annotation(*a.annotation);
      ++n;
    };
    for (const Arg& a : args.args) one(a);
    if (args.vararg) one(*args.vararg);
    for (const Arg& a : args.kwonlyargs) one(a);
    if (args.kwarg) one(*args.kwarg);
    if (def->returns) {
      load_const_str("return", def->returns->pos);
      annotation(*def->returns);
      ++n;
    }
    if (n) {
      emit(Op::BuildMap, n, pos);
      flags |= 4;
    }
  }
  if (!code->freevars.empty()) {
    for (const std::string& f : code->freevars) emit(Op::LoadClosure, cell_index(f), pos);
    emit(Op::BuildTuple, int(code->freevars.size()), pos);
    flags |= 8;
  }
  emit(Op::LoadConst, add_code_const(code), pos);
  emit(Op::MakeFunction, flags, pos);
}

CodePtr Compiler::function_code(const void* node, const Arguments& args, int firstlineno) {
  Scope* s = scopes_.scope_of(node);
  KILN_CHECK(s, "no scope for a function");
  CodePtr code = new_code(s, s->name, s->qualname, firstlineno);
  code->argcount = int(args.args.size());
  code->kwonlyargcount = int(args.kwonlyargs.size());
  code->has_varargs = args.vararg.has_value();
  code->has_varkw = args.kwarg.has_value();
  code->is_generator = s->is_generator;
  push_unit(code, s);
  return code;
}

void Compiler::compile_function_def(const FunctionDef& f) {
  for (const ExprPtr& d : f.decorators) expr(*d);
  CodePtr code = function_code(&f, f.args, f.pos.line);
  body_with_docstring(f.body, false);
  pop_unit(end_pos(f.body, f.pos));
  make_function(code, f.args, f.pos, &f);
  for (auto it = f.decorators.rbegin(); it != f.decorators.rend(); ++it) emit(Op::Call, 1, (*it)->pos);
  store_name(f.name, f.pos);
}

void Compiler::compile_lambda(const Lambda& l) {
  CodePtr code = function_code(&l, l.args, l.pos.line);
  expr(*l.body);
  emit(Op::ReturnValue, 0, l.body->pos);
  pop_unit(l.body->pos);
  make_function(code, l.args, l.pos);
}

void Compiler::compile_class_def(const ClassDef& c) {
  for (const Keyword& k : c.keywords)
    if (k.arg.empty() || k.arg == "metaclass")
      unsupported(k.pos, k.arg.empty() ? "class keywords from **mapping" : "metaclass=", "the subset has no metaclasses");
  if (c.bases.size() > 1) unsupported(c.bases[1]->pos, "multiple inheritance", "a class has at most one base");
  if (!c.bases.empty() && c.bases[0]->kind == ExprKind::Starred)
    unsupported(c.bases[0]->pos, "starred base class", "name the base class");
  for (const ExprPtr& d : c.decorators) expr(*d);
  Scope* s = scopes_.scope_of(&c);
  KILN_CHECK(s, "no scope for class ", c.name);
  CodePtr code = new_code(s, c.name, s->qualname, c.pos.line);
  push_unit(code, s);
  body_with_docstring(c.body, true);
  pop_unit(end_pos(c.body, c.pos));
  make_function(code, Arguments{}, c.pos);
  load_const_str(c.name, c.pos);
  for (const ExprPtr& b : c.bases) expr(*b);
  // Other class keywords (TypedDict's total=) go to the base's __init_subclass__.
  if (!c.keywords.empty()) compile_keywords_dict(c.keywords, c.pos);
  emit(Op::BuildClass, int(c.bases.size()) | (c.keywords.empty() ? 0 : 0x100), c.pos);
  for (auto it = c.decorators.rbegin(); it != c.decorators.rend(); ++it) emit(Op::Call, 1, (*it)->pos);
  store_name(c.name, c.pos);
}

CodePtr Compiler::compile(const Module& m) {
  for (const StmtPtr& s : m.body) {
    // Future imports come first (after the docstring); the parser has checked where they stand.
    if (const auto* i = s->as<ImportFrom>(); i && i->module == "__future__")
      for (const Alias& a : i->names) future_annotations_ |= a.name == "annotations";
  }
  CodePtr code = new_code(scopes_.module_scope(), "<module>", "<module>", 1);
  push_unit(code, scopes_.module_scope());
  body_with_docstring(m.body, true);
  return pop_unit(end_pos(m.body, Pos{1, 1}));
}

}  // namespace detail

Expected<CodePtr> compile_module(std::string_view source, const std::string& filename) {
  auto module = parse_module(source, filename);
  if (!module.ok()) return module.status();
  try {
    detail::ScopeTable scopes(**module);
    detail::Compiler compiler(filename, scopes, (*module)->source_lines);
    return compiler.compile(**module);
  } catch (const Error& e) {
    return e.to_status();
  } catch (const detail::ScopeError& e) {
    return Error("SyntaxError: " + e.what, SourceLocation{filename, e.pos.line, e.pos.col}).to_status();
  }
}

}  // namespace kiln::py
