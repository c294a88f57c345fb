#include "core/python/scope.h"

namespace kiln::py::detail {

using namespace ast;

namespace {
[[noreturn]] void throw_syntax(Pos pos, std::string what) { throw ScopeError{pos, std::move(what)}; }
}  // namespace

// Walks the tree once: opens a Scope per function, lambda and class, records
// which names each binds and reads, and renames comprehension variables.
class ScopeBuilder {
 public:
  explicit ScopeBuilder(ScopeTable& table) : table_(table) {}

  void build(Module& m) {
    table_.module_ = std::make_unique<Scope>();
    table_.module_->name = table_.module_->qualname = "<module>";
    current_ = table_.module_.get();
    statements(m.body);
  }

 private:
  Scope* open(Scope::Kind kind, const void* node, const std::string& name, Pos pos) {
    auto s = std::make_unique<Scope>();
    s->kind = kind;
    s->name = name;
    s->pos = pos;
    s->parent = current_;
    if (current_->kind == Scope::Kind::Module) s->qualname = name;
    else if (current_->kind == Scope::Kind::Class) s->qualname = current_->qualname + "." + name;
    else s->qualname = current_->qualname + ".<locals>." + name;
    Scope* raw = s.get();
    current_->children.push_back(std::move(s));
    table_.by_node_[node] = raw;
    return raw;
  }

  void bind(const std::string& name) {
    // A declared name is bound in the module or in an enclosing function.
    if (current_->globals.count(name) || current_->nonlocals.count(name)) return;
    if (current_->bound.insert(name).second) current_->bound_order.push_back(name);
  }

  void add_param(const Arg& a) {
    current_->params.push_back(a.name);
    bind(a.name);
  }

  void add_params(const Arguments& args) {
    for (const Arg& a : args.args) add_param(a);
    for (const Arg& a : args.kwonlyargs) add_param(a);
    if (args.vararg) add_param(*args.vararg);
    if (args.kwarg) add_param(*args.kwarg);
  }

  // The hidden name a comprehension variable was given, or `name` itself.
  const std::string& renamed(const std::string& name) const {
    for (auto it = renames_.rbegin(); it != renames_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return found->second;
    }
    return name;
  }

  void statements(const Body& body) {
    for (const StmtPtr& s : body) statement(*s);
  }

  // A def's annotations are read in the scope around it (evaluated at def time).
  void annotations(const Arguments& args, Expr* returns) {
    auto one = [this](const Arg& a) {
      if (a.annotation) expr(*a.annotation);
    };
    for (const Arg& a : args.args) one(a);
    if (args.vararg) one(*args.vararg);
    for (const Arg& a : args.kwonlyargs) one(a);
    if (args.kwarg) one(*args.kwarg);
    if (returns) expr(*returns);
  }

  void statement(Stmt& s) {
    switch (s.kind) {
      case StmtKind::FunctionDef: {
        auto& f = static_cast<FunctionDef&>(s);
        for (const ExprPtr& d : f.decorators) expr(*d);
        for (const ExprPtr& d : f.args.defaults) expr(*d);
        for (const ExprPtr& d : f.args.kw_defaults)
          if (d) expr(*d);
        annotations(f.args, f.returns.get());
        bind(f.name);
        Scope* saved = current_;
        current_ = open(Scope::Kind::Function, &f, f.name, f.pos);
        add_params(f.args);
        statements(f.body);
        current_ = saved;
        break;
      }
      case StmtKind::ClassDef: {
        auto& c = static_cast<ClassDef&>(s);
        for (const ExprPtr& d : c.decorators) expr(*d);
        for (const ExprPtr& b : c.bases) expr(*b);
        for (const Keyword& k : c.keywords) expr(*k.value);
        bind(c.name);
        Scope* saved = current_;
        current_ = open(Scope::Kind::Class, &c, c.name, c.pos);
        statements(c.body);
        current_ = saved;
        break;
      }
      case StmtKind::Return:
        if (auto& v = static_cast<Return&>(s).value) expr(*v);
        break;
      case StmtKind::Delete:
        for (const ExprPtr& t : static_cast<Delete&>(s).targets) target(*t);
        break;
      case StmtKind::Assign: {
        auto& a = static_cast<Assign&>(s);
        expr(*a.value);
        for (const ExprPtr& t : a.targets) target(*t);
        break;
      }
      case StmtKind::AugAssign: {
        auto& a = static_cast<AugAssign&>(s);
        expr(*a.value);
        expr(*a.target);  // read ...
        target(*a.target);  // ... and written
        break;
      }
      case StmtKind::AnnAssign: {
        auto& a = static_cast<AnnAssign&>(s);
        if (a.value) expr(*a.value);
        if (current_->kind != Scope::Kind::Function) expr(*a.annotation);
        target(*a.target);
        break;
      }
      case StmtKind::For: {
        auto& f = static_cast<For&>(s);
        expr(*f.iter);
        target(*f.target);
        statements(f.body);
        statements(f.orelse);
        break;
      }
      case StmtKind::While: {
        auto& w = static_cast<While&>(s);
        expr(*w.test);
        statements(w.body);
        statements(w.orelse);
        break;
      }
      case StmtKind::If: {
        auto& i = static_cast<If&>(s);
        for (If::Branch& b : i.branches) {
          expr(*b.test);
          statements(b.body);
        }
        statements(i.orelse);
        break;
      }
      case StmtKind::With: {
        auto& w = static_cast<With&>(s);
        for (WithItem& item : w.items) {
          expr(*item.context_expr);
          if (item.optional_vars) target(*item.optional_vars);
        }
        statements(w.body);
        break;
      }
      case StmtKind::Raise: {
        auto& r = static_cast<Raise&>(s);
        if (r.exc) expr(*r.exc);
        if (r.cause) expr(*r.cause);
        break;
      }
      case StmtKind::Try: {
        auto& t = static_cast<Try&>(s);
        statements(t.body);
        for (ExceptHandler& h : t.handlers) {
          if (h.type) expr(*h.type);
          if (!h.name.empty()) bind(h.name);
          statements(h.body);
        }
        statements(t.orelse);
        statements(t.finalbody);
        break;
      }
      case StmtKind::Assert: {
        auto& a = static_cast<Assert&>(s);
        expr(*a.test);
        if (a.msg) expr(*a.msg);
        break;
      }
      case StmtKind::Import:
        for (const Alias& a : static_cast<Import&>(s).names)
          bind(!a.asname.empty() ? a.asname : a.name.substr(0, a.name.find('.')));
        break;
      case StmtKind::ImportFrom:
        for (const Alias& a : static_cast<ImportFrom&>(s).names) bind(!a.asname.empty() ? a.asname : a.name);
        break;
      case StmtKind::Expr: expr(*static_cast<ExprStmt&>(s).value); break;
      case StmtKind::Global: {
        auto& g = static_cast<Global&>(s);
        for (const std::string& n : g.names) {
          if (!g.nonlocal) {
            if (current_->kind != Scope::Kind::Module) current_->globals.insert(n);
            continue;
          }
          if (current_->kind == Scope::Kind::Module) throw_syntax(g.pos, "nonlocal declaration not allowed at module level");
          if (current_->nonlocals.empty()) current_->nonlocal_pos = g.pos;
          current_->nonlocals.insert(n);
        }
        break;
      }
      case StmtKind::Pass:
      case StmtKind::Break:
      case StmtKind::Continue: break;
    }
  }

  // A name being assigned (or deleted): bound here. Subexpressions of attribute
  // and subscript targets are reads.
  void target(Expr& e) {
    switch (e.kind) {
      case ExprKind::Name: {
        auto& n = static_cast<Name&>(e);
        n.id = renamed(n.id);
        bind(n.id);
        break;
      }
      case ExprKind::Starred: target(*static_cast<Starred&>(e).value); break;
      case ExprKind::Tuple:
        for (const ExprPtr& elt : static_cast<Tuple&>(e).elts) target(*elt);
        break;
      case ExprKind::List:
        for (const ExprPtr& elt : static_cast<List&>(e).elts) target(*elt);
        break;
      default: for_each_child(e, [&](const ExprPtr& c) { expr(*c); });
    }
  }

  void expr(Expr& e) {
    switch (e.kind) {
      case ExprKind::Name: {
        auto& n = static_cast<Name&>(e);
        n.id = renamed(n.id);
        current_->used.insert(n.id);
        break;
      }
      case ExprKind::Yield: {
        auto& y = static_cast<Yield&>(e);
        if (current_->kind != Scope::Kind::Function)
          throw ScopeError{y.pos, y.from ? "'yield from' outside function" : "'yield' outside function"};
        if (current_->is_genexp) throw ScopeError{y.pos, "'yield' inside generator expression"};
        current_->is_generator = true;
        if (y.value) expr(*y.value);
        break;
      }
      case ExprKind::Lambda: {
        auto& l = static_cast<Lambda&>(e);
        for (const ExprPtr& d : l.args.defaults) expr(*d);
        for (const ExprPtr& d : l.args.kw_defaults)
          if (d) expr(*d);
        Scope* saved = current_;
        current_ = open(Scope::Kind::Function, &l, "<lambda>", l.pos);
        add_params(l.args);
        // Parameters shadow comprehension variables of the enclosing expression.
        std::unordered_map<std::string, std::string> shadow;
        for (const std::string& p : current_->params) shadow[p] = p;
        renames_.push_back(std::move(shadow));
        expr(*l.body);
        renames_.pop_back();
        current_ = saved;
        break;
      }
      case ExprKind::ListComp: {
        auto& c = static_cast<ListComp&>(e);
        if (c.is_generator) generator_expression(c);
        else comprehension(c.generators, [&] { expr(*c.elt); });
        break;
      }
      case ExprKind::DictComp: {
        auto& c = static_cast<DictComp&>(e);
        comprehension(c.generators, [&] {
          expr(*c.key);
          expr(*c.value);
        });
        break;
      }
      default: for_each_child(e, [&](const ExprPtr& c) { expr(*c); });
    }
  }

  static void collect_target_names(const Expr& e, std::vector<std::string>& out) {
    if (const auto* n = e.as<Name>()) out.push_back(n->id);
    else if (const auto* s = e.as<Starred>()) collect_target_names(*s->value, out);
    else if (const auto* t = e.as<Tuple>()) for (const ExprPtr& x : t->elts) collect_target_names(*x, out);
    else if (const auto* l = e.as<List>()) for (const ExprPtr& x : l->elts) collect_target_names(*x, out);
  }

  // The first iterable is read in the enclosing scope (before any renaming);
  // everything after it sees the comprehension's variables.
  template <class F>
  void comprehension(std::vector<Comprehension>& gens, F&& element) {
    int id = ++comprehensions_;
    expr(*gens[0].iter);
    renames_.emplace_back();
    for (size_t i = 0; i < gens.size(); ++i) {
      if (i > 0) expr(*gens[i].iter);
      std::vector<std::string> names;
      collect_target_names(*gens[i].target, names);
      for (const std::string& n : names)
        if (!is_hidden_comprehension_name(n))
          renames_.back()[n] = "<comp>." + n + "." + std::to_string(id);
      target(*gens[i].target);
      for (const ExprPtr& cond : gens[i].ifs) expr(*cond);
    }
    element();
    renames_.pop_back();
  }

  // A generator expression: its first iterable is read here; the rest is the
  // body of a generator function "<genexpr>" whose parameter ".0" is that
  // iterable's iterator and whose variables are its own locals.
  void generator_expression(ListComp& c) {
    expr(*c.generators[0].iter);
    Scope* saved = current_;
    current_ = open(Scope::Kind::Function, &c, "<genexpr>", c.pos);
    current_->is_generator = current_->is_genexp = true;
    current_->params.push_back(".0");
    bind(".0");
    // Its variables shadow comprehension variables of the enclosing expression.
    std::unordered_map<std::string, std::string> shadow;
    for (const Comprehension& g : c.generators) {
      std::vector<std::string> names;
      collect_target_names(*g.target, names);
      for (const std::string& n : names) shadow[n] = n;
    }
    renames_.push_back(std::move(shadow));
    for (size_t i = 0; i < c.generators.size(); ++i) {
      if (i > 0) expr(*c.generators[i].iter);
      target(*c.generators[i].target);
      for (const ExprPtr& cond : c.generators[i].ifs) expr(*cond);
    }
    expr(*c.elt);
    renames_.pop_back();
    current_ = saved;
  }

  ScopeTable& table_;
  Scope* current_ = nullptr;
  std::vector<std::unordered_map<std::string, std::string>> renames_;
  int comprehensions_ = 0;
};

namespace {

// Decides cells and free variables bottom-up. `visible` holds the names bound
// by enclosing function scopes (class scopes hide theirs from nested code).
// Returns the scope's free variables: what its parent must provide.
std::set<std::string> resolve_frees(Scope& s, const std::unordered_set<std::string>& visible) {
  std::unordered_set<std::string> child_visible;
  if (s.kind == Scope::Kind::Function) {
    child_visible = visible;
    child_visible.insert(s.bound.begin(), s.bound.end());
  } else if (s.kind == Scope::Kind::Class) {
    child_visible = visible;
  }
  std::set<std::string> needed;
  for (const auto& child : s.children)
    for (const std::string& n : resolve_frees(*child, child_visible)) needed.insert(n);
  if (s.kind == Scope::Kind::Module) return {};
  for (const std::string& n : needed) {
    if (s.kind == Scope::Kind::Function && s.bound.count(n)) s.cells.insert(n);
    else s.frees.insert(n);  // a class passes its methods' free variables through
  }
  for (const std::string& n : s.used)
    if (!s.bound.count(n) && !s.globals.count(n) && visible.count(n)) s.frees.insert(n);
  for (const std::string& n : s.nonlocals) {
    if (!visible.count(n)) throw_syntax(s.nonlocal_pos, "no binding for nonlocal '" + n + "' found");
    s.frees.insert(n);
  }
  return s.frees;
}

}  // namespace

ScopeTable::ScopeTable(ast::Module& module) {
  ScopeBuilder(*this).build(module);
  resolve_frees(*module_, {});
}

Scope* ScopeTable::scope_of(const void* node) const {
  auto it = by_node_.find(node);
  return it == by_node_.end() ? nullptr : it->second;
}

NameAccess resolve(const Scope& s, const std::string& name) {
  switch (s.kind) {
    case Scope::Kind::Module: return NameAccess::Name;
    case Scope::Kind::Class:
      if (s.globals.count(name)) return NameAccess::Global;
      if (s.bound.count(name)) return NameAccess::Name;
      return s.frees.count(name) ? NameAccess::Deref : NameAccess::Name;
    case Scope::Kind::Function:
      if (s.globals.count(name)) return NameAccess::Global;
      if (s.cells.count(name) || s.frees.count(name)) return NameAccess::Deref;
      return s.bound.count(name) ? NameAccess::Fast : NameAccess::Global;
  }
  return NameAccess::Name;
}

}  // namespace kiln::py::detail
