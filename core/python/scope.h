#pragma once
// Name resolution for the compiler, as CPython's symtable: which names of a
// function are fast locals, cells (captured by nested functions), free
// variables (captured from enclosing functions) or globals. Class bodies and
// the module use the name table; functions nested in a class do not see the
// class's names.
//
// List, set and dict comprehensions are compiled inline (no frame of their
// own), so their iteration variables are renamed in the AST to hidden names
// "<comp>.x.N" that no program can spell; they then resolve like any other
// local. A generator expression is a function of its own, as in CPython: its
// scope takes the first iterable's iterator as the parameter ".0".
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/python/ast.h"

namespace kiln::py::detail {

struct Scope {
  enum class Kind : uint8_t { Module, Class, Function };
  Kind kind = Kind::Module;
  std::string name, qualname;
  Pos pos;
  Scope* parent = nullptr;
  std::vector<std::string> params;       // in code.h's order: positional, kw-only, *args, **kwargs
  std::vector<std::string> bound_order;  // every name bound here, in order of first binding
  std::unordered_set<std::string> bound;
  std::unordered_set<std::string> used;  // names read here
  std::set<std::string> cells, frees;    // sorted, as CPython orders co_cellvars / co_freevars
  std::unordered_set<std::string> globals, nonlocals;  // declared by `global` / `nonlocal`
  Pos nonlocal_pos;                      // of the first `nonlocal`, for its SyntaxError
  std::vector<std::unique_ptr<Scope>> children;
  bool is_generator = false;             // a function whose body yields
  bool is_genexp = false;                // a generator expression's implicit function
};

enum class NameAccess : uint8_t { Fast, Deref, Global, Name };

// A declaration the scope table refuses (`nonlocal` with no enclosing binding);
// the compiler reports it as a SyntaxError at `pos`.
struct ScopeError {
  Pos pos;
  std::string what;
};

class ScopeTable {
 public:
  // Renames comprehension variables in `module` in place, then resolves every scope.
  explicit ScopeTable(ast::Module& module);
  Scope* module_scope() const { return module_.get(); }
  // The scope a FunctionDef, Lambda, ClassDef or generator expression (ListComp) node opens.
  Scope* scope_of(const void* node) const;

 private:
  friend class ScopeBuilder;
  std::unique_ptr<Scope> module_;
  std::unordered_map<const void*, Scope*> by_node_;
};

// How code in scope `s` reads and writes `name`.
NameAccess resolve(const Scope& s, const std::string& name);

inline bool is_hidden_comprehension_name(const std::string& name) { return name.rfind("<comp>.", 0) == 0; }

}  // namespace kiln::py::detail
