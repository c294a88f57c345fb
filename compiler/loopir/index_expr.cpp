#include "compiler/loopir/index_expr.h"

#include <string_view>

#include "core/util/status.h"

namespace kiln::loopir {

namespace {

IndexRef make(IndexKind kind, std::vector<IndexRef> operands) {
  auto e = std::make_shared<IndexExpr>();
  e->kind = kind;
  e->operands = std::move(operands);
  return e;
}

IndexRef make_binary(IndexKind kind, IndexRef a, IndexRef b) {
  KILN_CHECK(a && b, "null index operand");
  return make(kind, {std::move(a), std::move(b)});
}

IndexRef make_nary(IndexKind kind, std::vector<IndexRef> operands) {
  KILN_CHECK(operands.size() >= 2, "Add and Mul take two or more operands");
  for (const auto& o : operands) KILN_CHECK(o, "null index operand");
  return make(kind, std::move(operands));
}

}  // namespace

IndexRef index_const(int64_t v) {
  auto e = std::make_shared<IndexExpr>();
  e->kind = IndexKind::Const;
  e->value = v;
  return e;
}

IndexRef index_var(int64_t number) {
  KILN_CHECK(number >= 0, "variable numbers start at 0");
  auto e = std::make_shared<IndexExpr>();
  e->kind = IndexKind::Var;
  e->value = number;
  return e;
}

IndexRef index_sym(std::string name) {
  auto e = std::make_shared<IndexExpr>();
  e->kind = IndexKind::Sym;
  e->name = std::move(name);
  return e;
}

IndexRef index_add(std::vector<IndexRef> operands) { return make_nary(IndexKind::Add, std::move(operands)); }
IndexRef index_mul(std::vector<IndexRef> operands) { return make_nary(IndexKind::Mul, std::move(operands)); }
IndexRef index_floordiv(IndexRef a, IndexRef b) { return make_binary(IndexKind::FloorDiv, std::move(a), std::move(b)); }
IndexRef index_mod(IndexRef a, IndexRef b) { return make_binary(IndexKind::Mod, std::move(a), std::move(b)); }
IndexRef index_min(IndexRef a, IndexRef b) { return make_binary(IndexKind::Min, std::move(a), std::move(b)); }
IndexRef index_max(IndexRef a, IndexRef b) { return make_binary(IndexKind::Max, std::move(a), std::move(b)); }

// Leaves (variables, then symbols) sort before compound nodes, so sums print
// their plain terms first: `x0 + 8*x1 + (x2//4)`.
int compare_index(const IndexExpr& a, const IndexExpr& b) {
  if (&a == &b) return 0;
  auto rank = [](IndexKind k) { return k == IndexKind::Const ? 0 : k == IndexKind::Var ? 1 : k == IndexKind::Sym ? 2 : 3 + int(k); };
  if (rank(a.kind) != rank(b.kind)) return rank(a.kind) < rank(b.kind) ? -1 : 1;
  if (a.value != b.value) return a.value < b.value ? -1 : 1;
  if (int c = a.name.compare(b.name)) return c < 0 ? -1 : 1;
  if (a.operands.size() != b.operands.size()) return a.operands.size() < b.operands.size() ? -1 : 1;
  for (size_t i = 0; i < a.operands.size(); ++i)
    if (int c = compare_index(*a.operands[i], *b.operands[i])) return c;
  return 0;
}

size_t hash_index(const IndexExpr& e) {
  size_t h = std::hash<int>()(int(e.kind)) * 0x9e3779b97f4a7c15ull;
  h ^= std::hash<int64_t>()(e.value) + 0x9e3779b9 + (h << 6) + (h >> 2);
  h ^= std::hash<std::string>()(e.name) + 0x9e3779b9 + (h << 6) + (h >> 2);
  for (const auto& o : e.operands) h ^= hash_index(*o) + 0x9e3779b9 + (h << 6) + (h >> 2);
  return h;
}

int64_t evaluate_index(const IndexRef& e, const IndexEnv& env) {
  auto arg = [&](size_t i) { return evaluate_index(e->operands[i], env); };
  switch (e->kind) {
    case IndexKind::Const: return e->value;
    case IndexKind::Var:
      KILN_USER_CHECK(size_t(e->value) < env.vars.size(), "index variable x", e->value, " has no value");
      return env.vars[size_t(e->value)];
    case IndexKind::Sym: {
      auto it = env.syms.find(e->name);
      KILN_USER_CHECK(it != env.syms.end(), "size symbol ", e->name, " has no value");
      return it->second;
    }
    case IndexKind::Add: {
      // Unsigned arithmetic: wraps on overflow like the generated code, never UB.
      uint64_t s = 0;
      for (size_t i = 0; i < e->operands.size(); ++i) s += uint64_t(arg(i));
      return int64_t(s);
    }
    case IndexKind::Mul: {
      uint64_t p = 1;
      for (size_t i = 0; i < e->operands.size(); ++i) p *= uint64_t(arg(i));
      return int64_t(p);
    }
    case IndexKind::FloorDiv:
    case IndexKind::Mod: {
      int64_t a = arg(0), b = arg(1);
      KILN_USER_CHECK(b != 0, "division by zero in index expression ", to_string(e));
      if (b == -1) return e->kind == IndexKind::Mod ? 0 : int64_t(0 - uint64_t(a));
      return e->kind == IndexKind::FloorDiv ? floor_div(a, b) : floor_mod(a, b);
    }
    case IndexKind::Min: return std::min(arg(0), arg(1));
    case IndexKind::Max: return std::max(arg(0), arg(1));
  }
  KILN_CHECK(false, "unknown index kind");
  return 0;
}

namespace {

// A product whose first operand is a negative constant prints as a subtraction in a sum.
bool is_negative_term(const IndexRef& e) {
  if (e->kind == IndexKind::Const) return e->value < 0;
  return e->kind == IndexKind::Mul && e->operands[0]->kind == IndexKind::Const && e->operands[0]->value < 0;
}

std::string print(const IndexRef& e, const IndexPrintOptions& o);

// Appends instead of `"(" + std::string`, which GCC 12 flags with a false -Wrestrict.
std::string cat(std::initializer_list<std::string_view> parts) {
  std::string s;
  for (auto p : parts) s.append(p);
  return s;
}

std::string print_negated(const IndexRef& e, const IndexPrintOptions& o) {
  if (e->kind == IndexKind::Const) return std::to_string(-(e->value));
  std::vector<IndexRef> rest(e->operands.begin(), e->operands.end());
  int64_t c = -rest[0]->value;
  if (c == 1) rest.erase(rest.begin());
  else rest[0] = index_const(c);
  return rest.size() == 1 ? print(rest[0], o) : print(index_mul(rest), o);
}

std::string print(const IndexRef& e, const IndexPrintOptions& o) {
  switch (e->kind) {
    case IndexKind::Const: return std::to_string(e->value);
    case IndexKind::Var: return cat({o.var_prefix, std::to_string(e->value)});
    case IndexKind::Sym: return e->name;
    case IndexKind::Add: {
      std::string s = print(e->operands[0], o);
      for (size_t i = 1; i < e->operands.size(); ++i) {
        const auto& t = e->operands[i];
        s += is_negative_term(t) ? cat({" - ", print_negated(t, o)}) : cat({" + ", print(t, o)});
      }
      return s;
    }
    case IndexKind::Mul: {
      std::string s;
      for (size_t i = 0; i < e->operands.size(); ++i) {
        const auto& t = e->operands[i];
        if (i == 0 && t->kind == IndexKind::Const && t->value == -1 && e->operands.size() > 1) {
          s += "-";
          continue;
        }
        if (!s.empty() && s != "-") s += "*";
        bool paren = t->kind == IndexKind::Add || (i > 0 && t->kind == IndexKind::Const && t->value < 0);
        s += paren ? cat({"(", print(t, o), ")"}) : print(t, o);
      }
      return s;
    }
    case IndexKind::FloorDiv: {
      // Sympy's str of Inductor's FloorDiv: compound operands in parentheses.
      auto operand = [&](const IndexRef& t) {
        bool compound = t->kind == IndexKind::Add || t->kind == IndexKind::Mul || (t->kind == IndexKind::Const && t->value < 0);
        return compound ? cat({"(", print(t, o), ")"}) : print(t, o);
      };
      return cat({"(", operand(e->operands[0]), "//", operand(e->operands[1]), ")"});
    }
    case IndexKind::Mod: {
      const auto& a = e->operands[0];
      if (a->kind == IndexKind::FloorDiv)
        return cat({"ModularIndexing(", print(a->operands[0], o), ", ", print(a->operands[1], o), ", ", print(e->operands[1], o), ")"});
      return cat({"ModularIndexing(", print(a, o), ", 1, ", print(e->operands[1], o), ")"});
    }
    case IndexKind::Min: return cat({"Min(", print(e->operands[0], o), ", ", print(e->operands[1], o), ")"});
    case IndexKind::Max: return cat({"Max(", print(e->operands[0], o), ", ", print(e->operands[1], o), ")"});
  }
  return "?";
}

}  // namespace

std::string to_string(const IndexRef& e, const IndexPrintOptions& options) { return print(e, options); }

void IndexVisitor::visit(const IndexRef& e) {
  for (const auto& o : e->operands) visit(o);
  visit_node(e);
}

IndexRef IndexMutator::mutate(const IndexRef& e) {
  std::vector<IndexRef> operands;
  bool changed = false;
  operands.reserve(e->operands.size());
  for (const auto& o : e->operands) {
    operands.push_back(mutate(o));
    changed |= operands.back() != o;
  }
  IndexRef rebuilt = e;
  if (changed) {
    auto copy = std::make_shared<IndexExpr>(*e);
    copy->operands = std::move(operands);
    rebuilt = copy;
  }
  return mutate_node(rebuilt, e);
}

namespace {
class VarSubstituter : public IndexMutator {
 public:
  explicit VarSubstituter(const std::map<int64_t, IndexRef>& r) : replacement_(r) {}

 protected:
  IndexRef mutate_node(const IndexRef& rebuilt, const IndexRef&) override {
    if (rebuilt->kind != IndexKind::Var) return rebuilt;
    auto it = replacement_.find(rebuilt->value);
    return it == replacement_.end() ? rebuilt : it->second;
  }

 private:
  const std::map<int64_t, IndexRef>& replacement_;
};
}  // namespace

IndexRef substitute_vars(const IndexRef& e, const std::map<int64_t, IndexRef>& replacement) {
  return VarSubstituter(replacement).mutate(e);
}

}  // namespace kiln::loopir
