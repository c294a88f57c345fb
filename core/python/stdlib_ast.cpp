// ast: literal_eval only, as CPython 3.11's. Configuration code (minGPT's
// CfgNode.merge_from_args) reads command-line overrides with it. The text is
// parsed by the subset's own parser, and only literal displays are turned
// into values: constants, tuples, lists, sets, dicts, set() and signed
// numbers. Anything else is CPython's ValueError "malformed node or string".
// The rest of the module (parse, NodeVisitor, ...) is not offered: reading
// an attribute other than literal_eval is an AttributeError.
#include <string>

#include "core/python/parser.h"
#include "core/python/stdlib.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

// CPython's node class names, for the ValueError text.
const char* node_name(const ast::Expr& e) {
  switch (e.kind) {
    case ast::ExprKind::Name: return "Name";
    case ast::ExprKind::Constant: return "Constant";
    case ast::ExprKind::JoinedStr: return "JoinedStr";
    case ast::ExprKind::FormattedValue: return "FormattedValue";
    case ast::ExprKind::Attribute: return "Attribute";
    case ast::ExprKind::Subscript: return "Subscript";
    case ast::ExprKind::Slice: return "Slice";
    case ast::ExprKind::Call: return "Call";
    case ast::ExprKind::BinOp: return "BinOp";
    case ast::ExprKind::UnaryOp: return "UnaryOp";
    case ast::ExprKind::BoolOp: return "BoolOp";
    case ast::ExprKind::Compare: return "Compare";
    case ast::ExprKind::IfExp: return "IfExp";
    case ast::ExprKind::Lambda: return "Lambda";
    case ast::ExprKind::List: return e.as<ast::List>()->is_set ? "Set" : "List";
    case ast::ExprKind::Tuple: return "Tuple";
    case ast::ExprKind::Dict: return "Dict";
    case ast::ExprKind::ListComp: {
      const auto* c = e.as<ast::ListComp>();
      return c->is_generator ? "GeneratorExp" : c->is_set ? "SetComp" : "ListComp";
    }
    case ast::ExprKind::DictComp: return "DictComp";
    case ast::ExprKind::Starred: return "Starred";
    case ast::ExprKind::Yield: return "Yield";
  }
  return "expr";
}

class LiteralReader {
 public:
  explicit LiteralReader(VM& vm) : vm_(vm) {}

  Value convert(const ast::Expr& e) {
    switch (e.kind) {
      case ast::ExprKind::Constant: return constant(e.as<ast::Constant>()->value);
      case ast::ExprKind::Tuple: return tuple_value(items(e.as<ast::Tuple>()->elts));
      case ast::ExprKind::List: {
        const auto* l = e.as<ast::List>();
        Value list = list_value(items(l->elts));
        return l->is_set ? vm_.call(Value(vm_.builtin_type("set")), ValueVec{list}) : list;
      }
      case ast::ExprKind::Call: {
        const auto* c = e.as<ast::Call>();
        const auto* name = c->func->as<ast::Name>();
        if (name && name->id == "set" && c->args.empty() && c->keywords.empty())
          return vm_.call(Value(vm_.builtin_type("set")), ValueVec{});
        break;
      }
      case ast::ExprKind::Dict: {
        const auto* d = e.as<ast::Dict>();
        auto dict = make<Dict>();
        for (size_t i = 0; i < d->keys.size(); ++i) {
          // **mapping: CPython names the missing key node.
          if (!d->keys[i]) throw PyError("ValueError", "malformed node or string: None");
          Value key = convert(*d->keys[i]);
          dict->set(key, convert(*d->values[i]));
        }
        return Value(dict);
      }
      case ast::ExprKind::BinOp: {
        // CPython reads both sides as numbers (for complex literals, which
        // the subset lacks), so a malformed side is named first.
        const auto* b = e.as<ast::BinOp>();
        if (b->op == BinaryOpKind::Add || b->op == BinaryOpKind::Sub) {
          signed_number(*b->left);
          number(*b->right);
        }
        break;
      }
      default: break;
    }
    return signed_number(e);
  }

 private:
  static Value constant(const Const& c) {
    // The parser makes no tuple or code constants from a literal; they stay malformed.
    if (c.kind == Const::Kind::Tuple || c.kind == Const::Kind::Code) throw PyError("ValueError", "malformed node or string");
    return const_value(c);
  }

  ValueVec items(const std::vector<ast::ExprPtr>& elts) {
    ValueVec out;
    out.reserve(elts.size());
    for (const ast::ExprPtr& x : elts) out.push_back(convert(*x));
    return out;
  }

  Value number(const ast::Expr& e) {
    if (const auto* c = e.as<ast::Constant>()) {
      const Const::Kind k = c->value.kind;
      if (k == Const::Kind::Int || k == Const::Kind::BigInt || k == Const::Kind::Float) return constant(c->value);
    }
    malformed(e);
  }

  Value signed_number(const ast::Expr& e) {
    if (const auto* u = e.as<ast::UnaryOp>(); u && (u->op == UnaryOpKind::Neg || u->op == UnaryOpKind::Pos))
      return vm_.unary(u->op, number(*u->operand));
    return number(e);
  }

  [[noreturn]] static void malformed(const ast::Expr& e) {
    throw PyError("ValueError", "malformed node or string on line " + std::to_string(e.pos.line) + ": <ast." +
                                    node_name(e) + " object>");
  }

  VM& vm_;
};

Value literal_eval(VM& vm, const CallArgs& a) {
  if (a.npos != 1 || a.has_kwargs()) throw_type_error("literal_eval() takes exactly one argument");
  if (!a[0].is(ObjKind::Str))
    throw_unsupported("ast.literal_eval of an AST node (Kiln's ast module reads strings only)");
  std::string text = a[0].as<Str>()->s;
  text.erase(0, text.find_first_not_of(" \t"));
  auto parsed = parse_module(text, "<unknown>");
  if (!parsed.ok()) throw PyError("SyntaxError", parsed.status().message());
  const ast::Body& body = parsed.value()->body;
  const auto* stmt = body.size() == 1 ? body[0]->as<ast::ExprStmt>() : nullptr;
  if (!stmt) throw PyError("SyntaxError", "invalid syntax");
  return LiteralReader(vm).convert(*stmt->value);
}

}  // namespace

void load_ast(VM&, const Ref<Module>& m) { def_native(m, "literal_eval", literal_eval); }

}  // namespace kiln::py
