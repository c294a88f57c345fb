#pragma once
// Syntax tree of the Python subset, close to CPython's `ast` module. Every node
// carries the position of its first character (1-based line and column), which
// the compiler copies onto every instruction the node produces.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/python/code.h"
#include "core/python/lexer.h"

namespace kiln::py::ast {

// ---------------------------------------------------------------- expressions

enum class ExprKind : uint8_t {
  Name, Constant, JoinedStr, FormattedValue, Attribute, Subscript, Slice, Call, BinOp, UnaryOp,
  BoolOp, Compare, IfExp, Lambda, List, Tuple, Dict, ListComp, DictComp, Starred, Yield,
};

struct Expr {
  Expr(ExprKind k, Pos p) : kind(k), pos(p) {}
  virtual ~Expr() = default;
  Expr(const Expr&) = delete;
  Expr& operator=(const Expr&) = delete;
  template <class T>
  T* as() { return kind == T::kKind ? static_cast<T*>(this) : nullptr; }
  template <class T>
  const T* as() const { return kind == T::kKind ? static_cast<const T*>(this) : nullptr; }

  ExprKind kind;
  Pos pos;
  int height = 1;  // of the subtree; the parser bounds it so that recursion over trees is safe
};
using ExprPtr = std::unique_ptr<Expr>;

template <ExprKind K>
struct ExprOf : Expr {
  static constexpr ExprKind kKind = K;
  explicit ExprOf(Pos p) : Expr(K, p) {}
};

struct Name : ExprOf<ExprKind::Name> {
  using ExprOf::ExprOf;
  std::string id;  // comprehension variables are renamed to hidden "<comp>.x.N" names by scope analysis
};

struct Constant : ExprOf<ExprKind::Constant> {
  using ExprOf::ExprOf;
  Const value;  // None, Bool, Int, Float, Str or Ellipsis
};

// f"..": Constant (str) and FormattedValue parts.
struct JoinedStr : ExprOf<ExprKind::JoinedStr> {
  using ExprOf::ExprOf;
  std::vector<ExprPtr> values;
};

struct FormattedValue : ExprOf<ExprKind::FormattedValue> {
  using ExprOf::ExprOf;
  ExprPtr value;
  char conversion = 0;  // 0, 's', 'r' or 'a'
  ExprPtr format_spec;  // a JoinedStr, or null
};

struct Attribute : ExprOf<ExprKind::Attribute> {
  using ExprOf::ExprOf;
  ExprPtr value;
  std::string attr;
};

struct Subscript : ExprOf<ExprKind::Subscript> {
  using ExprOf::ExprOf;
  ExprPtr value;
  ExprPtr slice;  // any expression; Slice nodes and tuples of them only appear here
};

struct Slice : ExprOf<ExprKind::Slice> {
  using ExprOf::ExprOf;
  ExprPtr lower, upper, step;  // each may be null
};

struct Keyword {
  Pos pos;
  std::string arg;  // empty for **mapping
  ExprPtr value;
};

struct Call : ExprOf<ExprKind::Call> {
  using ExprOf::ExprOf;
  ExprPtr func;
  std::vector<ExprPtr> args;  // Starred for *iterable
  std::vector<Keyword> keywords;
};

struct BinOp : ExprOf<ExprKind::BinOp> {
  using ExprOf::ExprOf;
  BinaryOpKind op{};
  ExprPtr left, right;
};

struct UnaryOp : ExprOf<ExprKind::UnaryOp> {
  using ExprOf::ExprOf;
  UnaryOpKind op{};
  ExprPtr operand;
};

struct BoolOp : ExprOf<ExprKind::BoolOp> {
  using ExprOf::ExprOf;
  bool is_and = true;
  std::vector<ExprPtr> values;  // two or more
};

struct Compare : ExprOf<ExprKind::Compare> {
  using ExprOf::ExprOf;
  ExprPtr left;
  std::vector<CompareKind> ops;
  std::vector<ExprPtr> comparators;
};

struct IfExp : ExprOf<ExprKind::IfExp> {
  using ExprOf::ExprOf;
  ExprPtr test, body, orelse;
};

struct Arg {
  Pos pos;
  std::string name;
  ExprPtr annotation;  // parsed, never compiled
};

struct Arguments {
  std::vector<Arg> args;                 // positional-or-keyword
  std::vector<ExprPtr> defaults;         // for the last len(defaults) of args
  std::optional<Arg> vararg;             // *args
  std::vector<Arg> kwonlyargs;
  std::vector<ExprPtr> kw_defaults;      // one per kwonlyarg; null when it has none
  std::optional<Arg> kwarg;              // **kwargs
};

struct Lambda : ExprOf<ExprKind::Lambda> {
  using ExprOf::ExprOf;
  Arguments args;
  ExprPtr body;
};

struct List : ExprOf<ExprKind::List> {
  using ExprOf::ExprOf;
  std::vector<ExprPtr> elts;
  bool is_set = false;  // a set display {a, b}: built as a list, then a set of it
};

struct Tuple : ExprOf<ExprKind::Tuple> {
  using ExprOf::ExprOf;
  std::vector<ExprPtr> elts;
};

struct Dict : ExprOf<ExprKind::Dict> {
  using ExprOf::ExprOf;
  std::vector<ExprPtr> keys;  // null key: **values[i]
  std::vector<ExprPtr> values;
};

struct Comprehension {
  Pos pos;  // of `for`
  ExprPtr target, iter;
  std::vector<ExprPtr> ifs;
};

// [elt for ...]; also (elt for ...), which the subset evaluates eagerly as a list.
struct ListComp : ExprOf<ExprKind::ListComp> {
  using ExprOf::ExprOf;
  bool is_generator = false;
  bool is_set = false;  // {x for ...}
  ExprPtr elt;
  std::vector<Comprehension> generators;
};

struct DictComp : ExprOf<ExprKind::DictComp> {
  using ExprOf::ExprOf;
  ExprPtr key, value;
  std::vector<Comprehension> generators;
};

struct Starred : ExprOf<ExprKind::Starred> {
  using ExprOf::ExprOf;
  ExprPtr value;
};

// `yield v`, `yield from it`: a statement of its own or an assignment's value.
struct Yield : ExprOf<ExprKind::Yield> {
  using ExprOf::ExprOf;
  ExprPtr value;  // may be null
  bool from = false;
};

// ----------------------------------------------------------------- statements

enum class StmtKind : uint8_t {
  FunctionDef, ClassDef, Return, Delete, Assign, AugAssign, AnnAssign, For, While, If, With,
  Raise, Try, Assert, Import, ImportFrom, Expr, Pass, Break, Continue, Global,
};

struct Stmt {
  Stmt(StmtKind k, Pos p) : kind(k), pos(p) {}
  virtual ~Stmt() = default;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  template <class T>
  T* as() { return kind == T::kKind ? static_cast<T*>(this) : nullptr; }
  template <class T>
  const T* as() const { return kind == T::kKind ? static_cast<const T*>(this) : nullptr; }

  StmtKind kind;
  Pos pos;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

template <StmtKind K>
struct StmtOf : Stmt {
  static constexpr StmtKind kKind = K;
  explicit StmtOf(Pos p) : Stmt(K, p) {}
};

struct FunctionDef : StmtOf<StmtKind::FunctionDef> {
  using StmtOf::StmtOf;  // pos: the `def` keyword
  std::string name;
  Arguments args;
  Body body;
  std::vector<ExprPtr> decorators;
  ExprPtr returns;  // annotation, never compiled
};

struct ClassDef : StmtOf<StmtKind::ClassDef> {
  using StmtOf::StmtOf;  // pos: the `class` keyword
  std::string name;
  std::vector<ExprPtr> bases;
  std::vector<Keyword> keywords;
  Body body;
  std::vector<ExprPtr> decorators;
};

struct Return : StmtOf<StmtKind::Return> {
  using StmtOf::StmtOf;
  ExprPtr value;  // may be null
};

struct Delete : StmtOf<StmtKind::Delete> {
  using StmtOf::StmtOf;
  std::vector<ExprPtr> targets;
};

struct Assign : StmtOf<StmtKind::Assign> {
  using StmtOf::StmtOf;
  std::vector<ExprPtr> targets;  // a = b = value: [a, b]
  ExprPtr value;
};

struct AugAssign : StmtOf<StmtKind::AugAssign> {
  using StmtOf::StmtOf;
  ExprPtr target;
  BinaryOpKind op{};
  ExprPtr value;
};

struct AnnAssign : StmtOf<StmtKind::AnnAssign> {
  using StmtOf::StmtOf;
  ExprPtr target, annotation;
  ExprPtr value;  // may be null
};

struct For : StmtOf<StmtKind::For> {
  using StmtOf::StmtOf;
  ExprPtr target, iter;
  Body body, orelse;
};

struct While : StmtOf<StmtKind::While> {
  using StmtOf::StmtOf;
  ExprPtr test;
  Body body, orelse;
};

// if / elif... / else as one node, so long elif chains do not nest.
struct If : StmtOf<StmtKind::If> {
  using StmtOf::StmtOf;
  struct Branch {
    Pos pos;  // of `if` / `elif`
    ExprPtr test;
    Body body;
  };
  std::vector<Branch> branches;
  Body orelse;
};

struct WithItem {
  ExprPtr context_expr;
  ExprPtr optional_vars;  // may be null
};

struct With : StmtOf<StmtKind::With> {
  using StmtOf::StmtOf;
  std::vector<WithItem> items;
  Body body;
};

struct Raise : StmtOf<StmtKind::Raise> {
  using StmtOf::StmtOf;
  ExprPtr exc, cause;  // each may be null
};

struct ExceptHandler {
  Pos pos;
  ExprPtr type;      // may be null
  std::string name;  // may be empty
  Body body;
};

// Parsed so that whole files read, but outside the subset (no exceptions).
struct Try : StmtOf<StmtKind::Try> {
  using StmtOf::StmtOf;
  Body body;
  std::vector<ExceptHandler> handlers;
  Body orelse, finalbody;
};

struct Assert : StmtOf<StmtKind::Assert> {
  using StmtOf::StmtOf;
  ExprPtr test, msg;  // msg may be null
};

struct Alias {
  Pos pos;
  std::string name;    // dotted for `import a.b`
  std::string asname;  // may be empty
};

struct Import : StmtOf<StmtKind::Import> {
  using StmtOf::StmtOf;
  std::vector<Alias> names;
};

struct ImportFrom : StmtOf<StmtKind::ImportFrom> {
  using StmtOf::StmtOf;
  std::string module;
  std::vector<Alias> names;
};

struct ExprStmt : StmtOf<StmtKind::Expr> {
  using StmtOf::StmtOf;
  ExprPtr value;
};

struct Pass : StmtOf<StmtKind::Pass> { using StmtOf::StmtOf; };
// `global a, b` or `nonlocal a, b`: a declaration for the scope table, no code.
struct Global : StmtOf<StmtKind::Global> {
  using StmtOf::StmtOf;
  std::vector<std::string> names;
  bool nonlocal = false;
};
struct Break : StmtOf<StmtKind::Break> { using StmtOf::StmtOf; };
struct Continue : StmtOf<StmtKind::Continue> { using StmtOf::StmtOf; };

struct Module {
  std::string filename;
  Body body;
  std::shared_ptr<const std::vector<std::string>> source_lines;
};

// ------------------------------------------------------------------- helpers

// Calls f(const ExprPtr&) for each direct child expression (null ones skipped).
template <class F>
void for_each_child(const Expr& e, F&& f);

// Python-like text with every operation parenthesised, for tests and debugging:
// "x = (a + (b * c))". Statements one per line, bodies indented by two spaces.
std::string dump(const Expr& e);
std::string dump(const Stmt& s, int indent = 0);
std::string dump(const Module& m);
// repr() of a constant as Python prints it: 'a\n', 1.0, None, ('x', 'y').
std::string const_repr(const Const& c);

// ---------------------------------------------------------- implementation

template <class F>
void for_each_child(const Expr& e, F&& f) {
  auto visit = [&](const ExprPtr& c) {
    if (c) f(c);
  };
  auto visit_all = [&](const std::vector<ExprPtr>& v) {
    for (const ExprPtr& c : v) visit(c);
  };
  auto visit_comps = [&](const std::vector<Comprehension>& gens) {
    for (const Comprehension& g : gens) {
      visit(g.target);
      visit(g.iter);
      visit_all(g.ifs);
    }
  };
  switch (e.kind) {
    case ExprKind::Name:
    case ExprKind::Constant: break;
    case ExprKind::JoinedStr: visit_all(static_cast<const JoinedStr&>(e).values); break;
    case ExprKind::FormattedValue: {
      const auto& n = static_cast<const FormattedValue&>(e);
      visit(n.value);
      visit(n.format_spec);
      break;
    }
    case ExprKind::Attribute: visit(static_cast<const Attribute&>(e).value); break;
    case ExprKind::Subscript: {
      const auto& n = static_cast<const Subscript&>(e);
      visit(n.value);
      visit(n.slice);
      break;
    }
    case ExprKind::Slice: {
      const auto& n = static_cast<const Slice&>(e);
      visit(n.lower);
      visit(n.upper);
      visit(n.step);
      break;
    }
    case ExprKind::Call: {
      const auto& n = static_cast<const Call&>(e);
      visit(n.func);
      visit_all(n.args);
      for (const Keyword& k : n.keywords) visit(k.value);
      break;
    }
    case ExprKind::BinOp: {
      const auto& n = static_cast<const BinOp&>(e);
      visit(n.left);
      visit(n.right);
      break;
    }
    case ExprKind::UnaryOp: visit(static_cast<const UnaryOp&>(e).operand); break;
    case ExprKind::BoolOp: visit_all(static_cast<const BoolOp&>(e).values); break;
    case ExprKind::Compare: {
      const auto& n = static_cast<const Compare&>(e);
      visit(n.left);
      visit_all(n.comparators);
      break;
    }
    case ExprKind::IfExp: {
      const auto& n = static_cast<const IfExp&>(e);
      visit(n.test);
      visit(n.body);
      visit(n.orelse);
      break;
    }
    case ExprKind::Yield: visit(static_cast<const Yield&>(e).value); break;
    case ExprKind::Lambda: {
      const auto& n = static_cast<const Lambda&>(e);
      visit_all(n.args.defaults);
      visit_all(n.args.kw_defaults);
      visit(n.body);
      break;
    }
    case ExprKind::List: visit_all(static_cast<const List&>(e).elts); break;
    case ExprKind::Tuple: visit_all(static_cast<const Tuple&>(e).elts); break;
    case ExprKind::Dict: {
      const auto& n = static_cast<const Dict&>(e);
      visit_all(n.keys);
      visit_all(n.values);
      break;
    }
    case ExprKind::ListComp: {
      const auto& n = static_cast<const ListComp&>(e);
      visit(n.elt);
      visit_comps(n.generators);
      break;
    }
    case ExprKind::DictComp: {
      const auto& n = static_cast<const DictComp&>(e);
      visit(n.key);
      visit(n.value);
      visit_comps(n.generators);
      break;
    }
    case ExprKind::Starred: visit(static_cast<const Starred&>(e).value); break;
  }
}

}  // namespace kiln::py::ast
