#include "core/python/ast.h"
#include "core/util/pyformat.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace kiln::py::ast {

namespace {

std::string str_repr(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '\\') out += "\\\\";
    else if (c == quote) out += std::string("\\") + quote;
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (u < 0x20 || u == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + quote;
}

const char* unary_symbol(UnaryOpKind k) {
  switch (k) {
    case UnaryOpKind::Neg: return "-";
    case UnaryOpKind::Pos: return "+";
    case UnaryOpKind::Not: return "not ";
    case UnaryOpKind::Invert: return "~";
  }
  return "?";
}

std::string join(const std::vector<ExprPtr>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + dump(*v[i]);
  return out;
}

std::string dump_keywords(const std::vector<Keyword>& kws) {
  std::string out;
  for (size_t i = 0; i < kws.size(); ++i)
    out += (i ? ", " : "") + (kws[i].arg.empty() ? "**" : kws[i].arg + "=") + dump(*kws[i].value);
  return out;
}

std::string dump_arg(const Arg& a) {
  std::string s = a.name;
  if (a.annotation) s.append(": ").append(dump(*a.annotation));
  return s;
}

std::string with_default(std::string param, const Expr* def) {
  if (def) param.append("=").append(dump(*def));
  return param;
}

std::string dump_arguments(const Arguments& a) {
  std::vector<std::string> parts;
  size_t first_default = a.args.size() - a.defaults.size();
  for (size_t i = 0; i < a.args.size(); ++i)
    parts.push_back(with_default(dump_arg(a.args[i]), i >= first_default ? a.defaults[i - first_default].get() : nullptr));
  if (a.vararg) parts.push_back("*" + dump_arg(*a.vararg));
  else if (!a.kwonlyargs.empty()) parts.push_back("*");
  for (size_t i = 0; i < a.kwonlyargs.size(); ++i)
    parts.push_back(with_default(dump_arg(a.kwonlyargs[i]), a.kw_defaults[i].get()));
  if (a.kwarg) parts.push_back("**" + dump_arg(*a.kwarg));
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
  return out;
}

std::string dump_generators(const std::vector<Comprehension>& gens) {
  std::string out;
  for (const Comprehension& g : gens) {
    out += " for " + dump(*g.target) + " in " + dump(*g.iter);
    for (const ExprPtr& c : g.ifs) out += " if " + dump(*c);
  }
  return out;
}

std::string dump_body(const Body& body, int indent) {
  std::string out;
  for (const StmtPtr& s : body) out += dump(*s, indent);
  return out;
}

}  // namespace

std::string const_repr(const Const& c) {
  switch (c.kind) {
    case Const::Kind::None: return "None";
    case Const::Kind::Bool: return c.b ? "True" : "False";
    case Const::Kind::Int: return std::to_string(c.i);
    case Const::Kind::BigInt: return c.s;
    case Const::Kind::Float: return py_float_repr(c.f);
    case Const::Kind::Str: return str_repr(c.s);
    case Const::Kind::Ellipsis: return "Ellipsis";
    case Const::Kind::Code: return "<code " + (c.code ? c.code->name : std::string("?")) + ">";
    case Const::Kind::Tuple: {
      std::string out = "(";
      for (size_t i = 0; i < c.items.size(); ++i) out += (i ? ", " : "") + const_repr(c.items[i]);
      return out + (c.items.size() == 1 ? ",)" : ")");
    }
  }
  return "?";
}

std::string dump(const Expr& e) {
  switch (e.kind) {
    case ExprKind::Name: return static_cast<const Name&>(e).id;
    case ExprKind::Constant: {
      const Const& c = static_cast<const Constant&>(e).value;
      return c.kind == Const::Kind::Ellipsis ? "..." : const_repr(c);
    }
    case ExprKind::JoinedStr: return "f<" + join(static_cast<const JoinedStr&>(e).values) + ">";
    case ExprKind::FormattedValue: {
      const auto& n = static_cast<const FormattedValue&>(e);
      return "{" + dump(*n.value) + (n.conversion ? std::string("!") + n.conversion : "") +
             (n.format_spec ? ":" + dump(*n.format_spec) : "") + "}";
    }
    case ExprKind::Attribute: {
      const auto& n = static_cast<const Attribute&>(e);
      return dump(*n.value) + "." + n.attr;
    }
    case ExprKind::Subscript: {
      const auto& n = static_cast<const Subscript&>(e);
      return dump(*n.value) + "[" + dump(*n.slice) + "]";
    }
    case ExprKind::Slice: {
      const auto& n = static_cast<const Slice&>(e);
      return (n.lower ? dump(*n.lower) : "") + ":" + (n.upper ? dump(*n.upper) : "") +
             (n.step ? ":" + dump(*n.step) : "");
    }
    case ExprKind::Call: {
      const auto& n = static_cast<const Call&>(e);
      std::string args = join(n.args);
      std::string kws = dump_keywords(n.keywords);
      return dump(*n.func) + "(" + args + (!args.empty() && !kws.empty() ? ", " : "") + kws + ")";
    }
    case ExprKind::BinOp: {
      const auto& n = static_cast<const BinOp&>(e);
      return "(" + dump(*n.left) + " " + binary_op_symbol(n.op) + " " + dump(*n.right) + ")";
    }
    case ExprKind::UnaryOp: {
      const auto& n = static_cast<const UnaryOp&>(e);
      return std::string("(") + unary_symbol(n.op) + dump(*n.operand) + ")";
    }
    case ExprKind::BoolOp: {
      const auto& n = static_cast<const BoolOp&>(e);
      std::string out = "(";
      for (size_t i = 0; i < n.values.size(); ++i)
        out += (i ? (n.is_and ? " and " : " or ") : "") + dump(*n.values[i]);
      return out + ")";
    }
    case ExprKind::Compare: {
      const auto& n = static_cast<const Compare&>(e);
      std::string out = "(" + dump(*n.left);
      for (size_t i = 0; i < n.ops.size(); ++i)
        out += std::string(" ") + compare_symbol(n.ops[i]) + " " + dump(*n.comparators[i]);
      return out + ")";
    }
    case ExprKind::IfExp: {
      const auto& n = static_cast<const IfExp&>(e);
      return "(" + dump(*n.body) + " if " + dump(*n.test) + " else " + dump(*n.orelse) + ")";
    }
    case ExprKind::Yield: {
      const auto& n = static_cast<const Yield&>(e);
      return std::string(n.from ? "(yield from " : "(yield") + (n.value ? (n.from ? "" : " ") + dump(*n.value) : "") + ")";
    }
    case ExprKind::Lambda: {
      const auto& n = static_cast<const Lambda&>(e);
      std::string params = dump_arguments(n.args);
      return "(lambda" + (params.empty() ? "" : " " + params) + ": " + dump(*n.body) + ")";
    }
    case ExprKind::List: {
      const auto& n = static_cast<const List&>(e);
      return n.is_set ? "{" + join(n.elts) + "}" : "[" + join(n.elts) + "]";
    }
    case ExprKind::Tuple: {
      const auto& n = static_cast<const Tuple&>(e);
      return "(" + join(n.elts) + (n.elts.size() == 1 ? ",)" : ")");
    }
    case ExprKind::Dict: {
      const auto& n = static_cast<const Dict&>(e);
      std::string out = "{";
      for (size_t i = 0; i < n.keys.size(); ++i)
        out += (i ? ", " : "") + (n.keys[i] ? dump(*n.keys[i]) + ": " : std::string("**")) + dump(*n.values[i]);
      return out + "}";
    }
    case ExprKind::ListComp: {
      const auto& n = static_cast<const ListComp&>(e);
      std::string inner = dump(*n.elt) + dump_generators(n.generators);
      return n.is_generator ? "(" + inner + ")" : n.is_set ? "{" + inner + "}" : "[" + inner + "]";
    }
    case ExprKind::DictComp: {
      const auto& n = static_cast<const DictComp&>(e);
      return "{" + dump(*n.key) + ": " + dump(*n.value) + dump_generators(n.generators) + "}";
    }
    case ExprKind::Starred: return "*" + dump(*static_cast<const Starred&>(e).value);
  }
  return "?";
}

std::string dump(const Stmt& s, int indent) {
  std::string pad(size_t(indent), ' ');
  auto line = [&](const std::string& text) { return pad + text + "\n"; };
  switch (s.kind) {
    case StmtKind::FunctionDef: {
      const auto& n = static_cast<const FunctionDef&>(s);
      std::string out;
      for (const ExprPtr& d : n.decorators) out += line("@" + dump(*d));
      out += line("def " + n.name + "(" + dump_arguments(n.args) + ")" + (n.returns ? " -> " + dump(*n.returns) : "") + ":");
      return out + dump_body(n.body, indent + 2);
    }
    case StmtKind::ClassDef: {
      const auto& n = static_cast<const ClassDef&>(s);
      std::string out;
      for (const ExprPtr& d : n.decorators) out += line("@" + dump(*d));
      std::string bases = join(n.bases);
      std::string kws = dump_keywords(n.keywords);
      std::string params = bases + (!bases.empty() && !kws.empty() ? ", " : "") + kws;
      out += line("class " + n.name + (params.empty() ? "" : "(" + params + ")") + ":");
      return out + dump_body(n.body, indent + 2);
    }
    case StmtKind::Return: {
      const auto& n = static_cast<const Return&>(s);
      return line(n.value ? "return " + dump(*n.value) : "return");
    }
    case StmtKind::Delete: return line("del " + join(static_cast<const Delete&>(s).targets));
    case StmtKind::Assign: {
      const auto& n = static_cast<const Assign&>(s);
      std::string out;
      for (const ExprPtr& t : n.targets) out += dump(*t) + " = ";
      return line(out + dump(*n.value));
    }
    case StmtKind::AugAssign: {
      const auto& n = static_cast<const AugAssign&>(s);
      return line(dump(*n.target) + " " + binary_op_symbol(n.op) + "= " + dump(*n.value));
    }
    case StmtKind::AnnAssign: {
      const auto& n = static_cast<const AnnAssign&>(s);
      return line(dump(*n.target) + ": " + dump(*n.annotation) + (n.value ? " = " + dump(*n.value) : ""));
    }
    case StmtKind::For: {
      const auto& n = static_cast<const For&>(s);
      std::string out = line("for " + dump(*n.target) + " in " + dump(*n.iter) + ":") + dump_body(n.body, indent + 2);
      if (!n.orelse.empty()) out += line("else:") + dump_body(n.orelse, indent + 2);
      return out;
    }
    case StmtKind::While: {
      const auto& n = static_cast<const While&>(s);
      std::string out = line("while " + dump(*n.test) + ":") + dump_body(n.body, indent + 2);
      if (!n.orelse.empty()) out += line("else:") + dump_body(n.orelse, indent + 2);
      return out;
    }
    case StmtKind::If: {
      const auto& n = static_cast<const If&>(s);
      std::string out;
      for (size_t i = 0; i < n.branches.size(); ++i)
        out += line((i ? "elif " : "if ") + dump(*n.branches[i].test) + ":") + dump_body(n.branches[i].body, indent + 2);
      if (!n.orelse.empty()) out += line("else:") + dump_body(n.orelse, indent + 2);
      return out;
    }
    case StmtKind::With: {
      const auto& n = static_cast<const With&>(s);
      std::string items;
      for (size_t i = 0; i < n.items.size(); ++i)
        items += (i ? ", " : "") + dump(*n.items[i].context_expr) +
                 (n.items[i].optional_vars ? " as " + dump(*n.items[i].optional_vars) : "");
      return line("with " + items + ":") + dump_body(n.body, indent + 2);
    }
    case StmtKind::Raise: {
      const auto& n = static_cast<const Raise&>(s);
      return line(std::string("raise") + (n.exc ? " " + dump(*n.exc) : "") + (n.cause ? " from " + dump(*n.cause) : ""));
    }
    case StmtKind::Try: {
      const auto& n = static_cast<const Try&>(s);
      std::string out = line("try:") + dump_body(n.body, indent + 2);
      for (const ExceptHandler& h : n.handlers)
        out += line("except" + (h.type ? " " + dump(*h.type) : "") + (h.name.empty() ? "" : " as " + h.name) + ":") +
               dump_body(h.body, indent + 2);
      if (!n.orelse.empty()) out += line("else:") + dump_body(n.orelse, indent + 2);
      if (!n.finalbody.empty()) out += line("finally:") + dump_body(n.finalbody, indent + 2);
      return out;
    }
    case StmtKind::Assert: {
      const auto& n = static_cast<const Assert&>(s);
      return line("assert " + dump(*n.test) + (n.msg ? ", " + dump(*n.msg) : ""));
    }
    case StmtKind::Import: {
      const auto& n = static_cast<const Import&>(s);
      std::string out = "import ";
      for (size_t i = 0; i < n.names.size(); ++i)
        out += (i ? ", " : "") + n.names[i].name + (n.names[i].asname.empty() ? "" : " as " + n.names[i].asname);
      return line(out);
    }
    case StmtKind::ImportFrom: {
      const auto& n = static_cast<const ImportFrom&>(s);
      std::string out = "from " + n.module + " import ";
      for (size_t i = 0; i < n.names.size(); ++i)
        out += (i ? ", " : "") + n.names[i].name + (n.names[i].asname.empty() ? "" : " as " + n.names[i].asname);
      return line(out);
    }
    case StmtKind::Expr: return line(dump(*static_cast<const ExprStmt&>(s).value));
    case StmtKind::Pass: return line("pass");
    case StmtKind::Global: {
      const auto& g = static_cast<const Global&>(s);
      std::string out = g.nonlocal ? "nonlocal " : "global ";
      for (size_t i = 0; i < g.names.size(); ++i) out += (i ? ", " : "") + g.names[i];
      return line(out);
    }
    case StmtKind::Break: return line("break");
    case StmtKind::Continue: return line("continue");
  }
  return line("?");
}

std::string dump(const Module& m) { return dump_body(m.body, 0); }

}  // namespace kiln::py::ast
