#pragma once
// Index expressions of the loop IR: integer arithmetic over loop variables
// (x0, x1, ...), size symbols (s0, ...) and constants. Division and modulo
// round toward -inf, as in Python and Inductor's FloorDiv / PythonMod, so an
// expression means the same whatever the sign of its operands.
// Simplification lives in simplify_index.h; tests in tests/compiler/test_loopir_index.cpp.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/util/floor_div.h"

namespace kiln::loopir {

enum class IndexKind { Const, Var, Sym, Add, Mul, FloorDiv, Mod, Min, Max };

struct IndexExpr;
// Nodes are immutable and shared: a rewrite that changes nothing hands back the same pointer.
using IndexRef = std::shared_ptr<const IndexExpr>;

struct IndexExpr {
  IndexKind kind = IndexKind::Const;
  int64_t value = 0;              // Const: the value; Var: the variable number
  std::string name;               // Sym
  std::vector<IndexRef> operands;  // Add, Mul: two or more; FloorDiv, Mod, Min, Max: exactly two
};

// Builders. They do not simplify (simplify_index does), so a test can build any shape.
IndexRef index_const(int64_t v);
IndexRef index_var(int64_t number);
IndexRef index_sym(std::string name);
IndexRef index_add(std::vector<IndexRef> operands);
IndexRef index_mul(std::vector<IndexRef> operands);
IndexRef index_floordiv(IndexRef a, IndexRef b);
IndexRef index_mod(IndexRef a, IndexRef b);
IndexRef index_min(IndexRef a, IndexRef b);
IndexRef index_max(IndexRef a, IndexRef b);

inline IndexRef operator+(IndexRef a, IndexRef b) { return index_add({std::move(a), std::move(b)}); }
inline IndexRef operator*(IndexRef a, IndexRef b) { return index_mul({std::move(a), std::move(b)}); }
inline IndexRef operator+(IndexRef a, int64_t b) { return std::move(a) + index_const(b); }
inline IndexRef operator*(int64_t a, IndexRef b) { return index_const(a) * std::move(b); }

inline bool is_const(const IndexRef& e, int64_t v) { return e->kind == IndexKind::Const && e->value == v; }

// Structural order and equality: the canonical order of sums and products.
int compare_index(const IndexExpr& a, const IndexExpr& b);
inline bool equal_index(const IndexRef& a, const IndexRef& b) { return a == b || compare_index(*a, *b) == 0; }
size_t hash_index(const IndexExpr& e);

// Python semantics on int64: rounds toward -inf; the remainder has the sign of b.
using kiln::floor_div;
using kiln::floor_mod;

// Values of the variables (by number) and the symbols, for evaluation.
struct IndexEnv {
  std::vector<int64_t> vars;
  std::map<std::string, int64_t> syms;
};
// Throws kiln::Error on division by zero or an unbound variable or symbol.
int64_t evaluate_index(const IndexRef& e, const IndexEnv& env);

// Printed close to Inductor's ir_pre_fusion.txt: `x0 + 8*x1`, `(x0//8)`,
// `ModularIndexing(x0, 8, 4)` for (x0 // 8) % 4, `ModularIndexing(x0, 1, 8)` for x0 % 8.
struct IndexPrintOptions {
  std::string var_prefix = "x";  // Inductor says p in loop bodies, c in dependencies, x in kernels
};
std::string to_string(const IndexRef& e, const IndexPrintOptions& options = {});

// Walks every node, children first then the node (override a hook to collect).
class IndexVisitor {
 public:
  virtual ~IndexVisitor() = default;
  void visit(const IndexRef& e);

 protected:
  virtual void visit_node(const IndexRef&) {}
};

// Rebuilds bottom-up. The default for each node rebuilds it only when a child
// changed, so a mutator that changes nothing returns the very same object.
class IndexMutator {
 public:
  virtual ~IndexMutator() = default;
  IndexRef mutate(const IndexRef& e);

 protected:
  // Called with the node whose children are already mutated (`original` is the node before).
  virtual IndexRef mutate_node(const IndexRef& rebuilt, const IndexRef& original) {
    (void)original;
    return rebuilt;
  }
};

// Replaces variables by expressions (e.g. loop variables by a view's indices).
IndexRef substitute_vars(const IndexRef& e, const std::map<int64_t, IndexRef>& replacement);

}  // namespace kiln::loopir
