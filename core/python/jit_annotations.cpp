// The annotations of a function's parameters as source text, for
// torch.jit.script's argument checks (jit_prelude.cpp). The subset keeps no
// annotation objects (they are parsed, never compiled), so the function's
// `def` is parsed again from its file's source and its annotations are read
// as TorchScript reads them: as type expressions, not evaluated.
#include <functional>

#include "core/python/ast.h"
#include "core/python/parser.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

// "Optional[List[int]]" for the expression; empty when it is not a type expression.
std::string type_text(const ast::Expr* e) {
  if (!e) return {};
  if (const auto* n = e->as<ast::Name>()) return n->id;
  if (const auto* a = e->as<ast::Attribute>()) {
    std::string base = type_text(a->value.get());
    return base.empty() ? std::string() : base + "." + a->attr;
  }
  if (const auto* s = e->as<ast::Subscript>()) {
    std::string base = type_text(s->value.get()), inner = type_text(s->slice.get());
    return base.empty() || inner.empty() ? std::string() : base + "[" + inner + "]";
  }
  if (const auto* t = e->as<ast::Tuple>()) {
    std::string out;
    for (const ast::ExprPtr& x : t->elts) {
      std::string part = type_text(x.get());
      if (part.empty()) return {};
      out += (out.empty() ? "" : ", ") + part;
    }
    return out;
  }
  if (const auto* b = e->as<ast::BinOp>(); b && b->op == BinaryOpKind::Or) {
    std::string l = type_text(b->left.get()), r = type_text(b->right.get());
    return l.empty() || r.empty() ? std::string() : "Union[" + l + ", " + r + "]";
  }
  if (const auto* c = e->as<ast::Constant>()) {
    if (c->value.kind == Const::Kind::None) return "None";
    if (c->value.kind == Const::Kind::Str) return c->value.s;  // a forward reference
  }
  return {};
}

const ast::FunctionDef* find_def(const ast::Body& body, const std::string& name, int line) {
  for (const ast::StmtPtr& s : body) {
    if (const auto* f = s->as<ast::FunctionDef>()) {
      const int first = f->decorators.empty() ? f->pos.line : f->decorators.front()->pos.line;
      if (f->name == name && (f->pos.line == line || first == line || first - 1 == line)) return f;
      if (const ast::FunctionDef* inner = find_def(f->body, name, line)) return inner;
    } else if (const auto* c = s->as<ast::ClassDef>()) {
      if (const ast::FunctionDef* inner = find_def(c->body, name, line)) return inner;
    } else if (const auto* i = s->as<ast::If>()) {
      for (const ast::If::Branch& b : i->branches)
        if (const ast::FunctionDef* inner = find_def(b.body, name, line)) return inner;
      if (const ast::FunctionDef* inner = find_def(i->orelse, name, line)) return inner;
    }
  }
  return nullptr;
}

Value annotation_value(const ast::Arg& arg) {
  std::string text = type_text(arg.annotation.get());
  if (arg.annotation && text.empty()) return str_value("?");  // annotated, but not with a type expression
  return text.empty() ? Value() : str_value(text);
}

}  // namespace

// torch.jit._kiln_annotations(fn) -> ([(name, annotation or None), ...], return annotation or None)
// for the positional parameters; None when the source cannot be found.
Value jit_annotations(VM&, const CallArgs& a) {
  if (a.npos != 1 || !a[0].is(ObjKind::Function)) throw_type_error("_kiln_annotations(function)");
  const Function& fn = *a[0].as<Function>();
  if (!fn.code || !fn.code->source_lines) return Value();
  std::string source;
  for (const std::string& line : *fn.code->source_lines) source += line + "\n";
  auto module = parse_module(source, fn.code->filename);
  if (!module.ok()) return Value();
  const ast::FunctionDef* def = find_def(module.value()->body, fn.code->name, fn.code->firstlineno);
  if (!def) return Value();
  ValueVec params;
  for (const ast::Arg& arg : def->args.args) params.push_back(tuple_value({str_value(arg.name), annotation_value(arg)}));
  Value returns;
  if (def->returns) {
    std::string text = type_text(def->returns.get());
    returns = str_value(text.empty() ? "?" : text);
  }
  return tuple_value({list_value(std::move(params)), returns});
}

}  // namespace kiln::py
