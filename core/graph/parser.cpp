#include "core/graph/parser.h"

#include <charconv>
#include <cstdlib>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "core/graph/annotation.h"
#include "core/graph/py_expr.h"
#include "core/graph/spelling.h"

namespace kiln {

namespace {

using pytext::Expr;
using pytext::ExprParser;
using pytext::LogicalLine;
using pytext::Lexer;
using pytext::Stmt;
using pytext::Tok;
using pytext::Token;

[[noreturn]] void syntax_error(int line, const std::string& message) {
  throw Error(message, SourceLocation{"", line});
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::optional<std::string> dotted_name(const Expr& e) {
  if (e.k == Expr::K::Name) return std::string(e.text);
  if (e.k != Expr::K::Attr) return std::nullopt;
  auto base = dotted_name(e.sub[0]);
  if (!base) return std::nullopt;
  return *base + "." + std::string(e.text);
}

std::string_view root_name(const Expr& e) {
  const Expr* p = &e;
  while (p->k == Expr::K::Attr) p = &p->sub[0];
  return p->k == Expr::K::Name ? p->text : std::string_view{};
}

// The attribute path of `self.a.b` / `getattr(self.layer1, "0").conv1`; nullopt when not rooted at self.
std::optional<std::string> self_path(const Expr& e) {
  if (e.k == Expr::K::Name) return e.text == "self" ? std::optional<std::string>("") : std::nullopt;
  std::optional<std::string> base;
  std::string elem;
  if (e.k == Expr::K::Attr) {
    base = self_path(e.sub[0]);
    elem = std::string(e.text);
  } else if (e.k == Expr::K::Call && e.sub[0].k == Expr::K::Name && e.sub[0].text == "getattr" &&
             e.sub.size() == 3 && e.keywords.empty() && e.sub[2].k == Expr::K::String) {
    base = self_path(e.sub[1]);
    elem = e.sub[2].str;
  }
  if (!base) return std::nullopt;
  return base->empty() ? elem : *base + "." + elem;
}

Arg parse_number(const Expr& e, bool negate) {
  std::string text;
  for (char c : e.text)
    if (c != '_') text += c;
  if (!text.empty() && (text.back() == 'j' || text.back() == 'J'))
    syntax_error(e.line, "complex literals are not supported");
  int base = 10;
  std::string_view digits = text;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X' || text[1] == 'o' ||
                                            text[1] == 'O' || text[1] == 'b' || text[1] == 'B')) {
    char b = char(text[1] | 0x20);
    base = b == 'x' ? 16 : b == 'o' ? 8 : 2;
    digits.remove_prefix(2);
  } else if (text.find_first_of(".eE") != std::string::npos) {
    char* end = nullptr;
    double v = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size()) syntax_error(e.line, "bad number '" + text + "'");
    return Arg::real(negate ? -v : v);
  }
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
  if (p != digits.data() + digits.size()) syntax_error(e.line, "bad number '" + text + "'");
  uint64_t limit = negate ? uint64_t(INT64_MAX) + 1 : uint64_t(INT64_MAX);
  if (ec != std::errc() || v > limit) {
    // Python ints are unbounded; keep the literal so printing gives it back.
    Arg a = Arg::integer(0);
    a.s = (negate ? "-" : "") + text;
    return a;
  }
  return Arg::integer(negate ? int64_t(0 - v) : int64_t(v));
}

std::optional<StackFrame> parse_frame(std::string_view s) {
  // "{file}:{line} in {function}, code: {code}"
  size_t code_at = s.find(", code:");
  if (code_at == std::string_view::npos) return std::nullopt;
  StackFrame f;
  f.code = std::string(trim(s.substr(code_at + 7)));
  std::string_view left = s.substr(0, code_at);
  size_t in_at = left.rfind(" in ");
  if (in_at == std::string_view::npos) return std::nullopt;
  f.function = std::string(left.substr(in_at + 4));
  std::string_view file_line = left.substr(0, in_at);
  size_t colon = file_line.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view num = file_line.substr(colon + 1);
  auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), f.line);
  if (ec != std::errc() || p != num.data() + num.size()) return std::nullopt;
  f.file = std::string(file_line.substr(0, colon));
  return f;
}

// ---------------------------------------------------------------------------
// One forward function: the signature, then statement by statement.

struct Param {
  std::string_view name;  // without stars
  int line;
  std::string target;     // with stars: "*args"
  Val val;
  std::optional<Arg> default_value;
  std::string desc;
};

struct PendingAnnotation {
  Val val;
  std::string desc;
};

// `a += b;  name = a` and `a[i] = v;  name = a`: the first statement, waiting for the second.
struct PendingInplace {
  const OperatorSpelling* op = nullptr;
  Expr object;
  std::vector<Expr> operands;
  int line = 0;
};

class ForwardParser {
 public:
  explicit ForwardParser(Graph& g) : g_(g) {}

  void parse_signature(const LogicalLine& ll) {
    std::vector<Stmt> stmts = split_statements(ll);
    if (stmts.size() != 1) syntax_error(ll.line, "unexpected ';' in the forward signature");
    const Stmt& s = stmts[0];
    ExprParser p(s, 2);  // after "def forward"
    p.expect_op("(");
    bool first = true;
    while (!p.accept_op(")")) {
      std::string stars;
      while (p.at_op("*") || p.at_op("**")) {
        stars += std::string(p.peek()->text);
        p.expect_op(p.peek()->text);
      }
      const Token* name = p.peek();
      if (!name || name->kind != Tok::Name) p.fail("expected a parameter name");
      p.expect_name();
      Param param{name->text, name->line, stars + std::string(name->text), {}, std::nullopt, {}};
      if (p.accept_op(":")) param.val = annotation_val(p.expr());
      if (p.accept_op("=")) param.default_value = to_arg(p.expr());
      bool comma = p.accept_op(",");
      param.desc = std::string(p.comment_here());
      if (!comma && !p.at_op(")")) p.fail("expected ',' or ')' in the parameter list");
      bool is_self = first && name->text == "self" && stars.empty();
      first = false;
      if (!is_self) params_.push_back(std::move(param));
    }
    if (p.accept_op("->")) p.expr();
    p.expect_op(":");
    p.expect_end();
    g_.expanded_def = ll.last_line > ll.line;
  }

  void comment(std::string_view text) {
    static constexpr std::string_view kNoStack = "No stacktrace found for following nodes";
    size_t none_at = text.find(kNoStack);
    if (none_at != std::string_view::npos) {
      stack_.clear();
      annotation_ = std::string(trim(text.substr(0, none_at)));
      return;
    }
    size_t file_at = text.find("File: ");
    if (file_at == std::string_view::npos) return;
    auto frame = parse_frame(text.substr(file_at + 6));
    if (!frame) return;
    stack_ = {std::move(*frame)};
    annotation_ = std::string(trim(text.substr(0, file_at)));
  }

  void line(const LogicalLine& ll) {
    std::vector<Stmt> stmts = split_statements(ll);
    for (const Stmt& s : stmts) {
      if (output_line_) syntax_error(s.line, "statement after the return statement");
      statement(s);
    }
    if (pending_) syntax_error(pending_->line, "in-place statement without the assignment FX prints after it");
  }

  void finish(int def_line) {
    materialize_params();
    if (!output_line_) syntax_error(def_line, "forward has no return statement");
  }

 private:
  void statement(const Stmt& s) {
    const Token& first = s.toks[0];
    if (first.kind == Tok::Name && first.text == "return") return output(s);
    if (first.kind == Tok::Name && (first.text == "pass" || first.text == "del") && !pending_) return;
    // FX_GRAPH_SHOW_META=1 puts a docstring of meta before each node.
    if (first.kind == Tok::String && s.toks.size() == 1 && !pending_) return;
    ExprParser p(s);
    if (first.kind == Tok::Name && p.at_op(":", 1)) {
      p.expect_name();
      p.expect_op(":");
      Val val = annotation_val(p.expr());
      if (p.at_end()) {
        annotations_[first.text] = {std::move(val), std::string(s.comment_before.back())};
        return;
      }
      p.expect_op("=");
      Expr value = p.expr_list();
      p.expect_end();
      return assign(first, std::move(val), value);
    }
    Expr target = p.expr_list();
    if (p.at_end()) p.fail("expression statements are not part of a graph");
    if (const Token* t = p.peek(); t->kind == Tok::Op && t->text.size() >= 2 && t->text.back() == '=' &&
                                   t->text != "==" && t->text != "!=" && t->text != "<=" && t->text != ">=") {
      p.expect_op(t->text);
      const OperatorSpelling* op = operator_for_symbol(t->text, 2);
      if (!op) p.fail("unsupported in-place operator '" + std::string(t->text) + "'");
      Expr value = p.expr_list();
      p.expect_end();
      return begin_inplace(op, std::move(target), {std::move(value)}, s.line);
    }
    p.expect_op("=");
    std::vector<Expr> targets;
    targets.push_back(std::move(target));
    Expr value = p.expr_list();
    while (p.accept_op("=")) {
      targets.push_back(std::move(value));
      value = p.expr_list();
    }
    p.expect_end();
    if (value.k == Expr::K::Name && value.text == "None") return deletion(targets);
    if (targets.size() != 1) syntax_error(s.line, "chained assignment is not part of a graph");
    Expr& lhs = targets[0];
    if (lhs.k == Expr::K::Tuple) return pytree_flatten(lhs, value);
    if (lhs.k == Expr::K::Subscript) {
      Expr object = std::move(lhs.sub[0]);
      std::vector<Expr> operands;
      operands.push_back(std::move(lhs.sub[1]));
      operands.push_back(std::move(value));
      return begin_inplace(operator_for_symbol("[]=", 3), std::move(object), std::move(operands), s.line);
    }
    if (lhs.k != Expr::K::Name) syntax_error(lhs.line, "can only assign to a name");
    const Token* name = &s.toks[0];
    assign(*name, Val{}, value);
  }

  // `x = y = None`: FX frees values after their last use; nothing to keep.
  void deletion(const std::vector<Expr>& targets) {
    for (const Expr& t : targets)
      if (t.k != Expr::K::Name) syntax_error(t.line, "can only assign None to names");
  }

  void begin_inplace(const OperatorSpelling* op, Expr object, std::vector<Expr> operands, int line) {
    if (pending_) syntax_error(line, "two in-place statements in a row");
    if (object.k != Expr::K::Name) syntax_error(line, "in-place update of something other than a name");
    pending_ = PendingInplace{op, std::move(object), std::move(operands), line};
  }

  void assign(const Token& name, Val val, const Expr& value) {
    if (pending_) return finish_inplace(name, std::move(val), value);
    materialize_params();
    if (value.k == Expr::K::Name && rename_placeholder(name, value)) return;
    Node n = build_node(value);
    n.meta.val = std::move(val);
    define(name, std::move(n));
  }

  void finish_inplace(const Token& name, Val val, const Expr& value) {
    PendingInplace p = std::move(*pending_);
    pending_.reset();
    if (value.k != Expr::K::Name || value.text != p.object.text)
      syntax_error(name.line, "expected '" + std::string(name.text) + " = " + std::string(p.object.text) +
                                  "' after the in-place statement");
    materialize_params();
    Node n;
    n.op = OpKind::CallFunction;
    n.target = std::string(p.op->target);
    n.args.push_back(to_arg(p.object));
    for (const Expr& e : p.operands) n.args.push_back(to_arg(e));
    n.meta.val = std::move(val);
    define(name, std::move(n));
  }

  // Dynamo's `l_x_ = L_x_`: the placeholder's target is L_x_, its name l_x_.
  bool rename_placeholder(const Token& name, const Expr& value) {
    auto it = names_.find(value.text);
    if (it == names_.end()) return false;
    Node& ph = g_[it->second];
    if (ph.op != OpKind::Placeholder || renamed_.count(it->second)) return false;
    if (names_.count(name.text)) syntax_error(name.line, "name '" + std::string(name.text) + "' is defined twice");
    renamed_.insert(it->second);
    NodeId id = it->second;
    names_.erase(it);
    names_[name.text] = id;
    ph.name = std::string(name.text);
    return true;
  }

  Node build_node(const Expr& value) {
    Node n;
    n.op = OpKind::CallFunction;
    switch (value.k) {
      case Expr::K::Binary:
      case Expr::K::Unary: {
        int arity = value.k == Expr::K::Binary ? 2 : 1;
        const OperatorSpelling* op = operator_for_symbol(value.text, arity);
        if (!op) syntax_error(value.line, "unsupported operator '" + std::string(value.text) + "'");
        n.target = std::string(op->target);
        for (const Expr& e : value.sub) n.args.push_back(to_arg(e));
        return n;
      }
      case Expr::K::Subscript:
        n.target = "operator.getitem";
        n.args.push_back(to_arg(value.sub[0]));
        n.args.push_back(to_arg(value.sub[1]));
        return n;
      case Expr::K::Attr:
        if (auto path = self_path(value)) {
          n.op = OpKind::GetAttr;
          n.target = *path;
          return n;
        }
        n.target = "getattr";
        n.args.push_back(to_arg(value.sub[0]));
        n.args.push_back(Arg::str(std::string(value.text)));
        return n;
      case Expr::K::Call: return build_call(value);
      default: syntax_error(value.line, "this expression does not make a graph node");
    }
  }

  Node build_call(const Expr& call) {
    Node n;
    const Expr& callee = call.sub[0];
    size_t first_arg = 1;
    if (auto path = self_path(callee)) {
      n.op = OpKind::CallModule;
      n.target = *path;
    } else if (callee.k == Expr::K::Attr && !names_.count(root_name(callee)) && dotted_name(callee)) {
      n.op = OpKind::CallFunction;
      n.target = target_from_python(*dotted_name(callee));
    } else if (callee.k == Expr::K::Attr) {
      n.op = OpKind::CallMethod;
      n.target = std::string(callee.text);
      n.args.push_back(to_arg(callee.sub[0]));
    } else if (callee.k == Expr::K::Name && !names_.count(callee.text)) {
      n.op = OpKind::CallFunction;
      n.target = std::string(callee.text);
    } else {
      syntax_error(call.line, "unsupported call");
    }
    size_t positional_end = first_arg + call.positional_count();
    for (size_t i = first_arg; i < positional_end; ++i) n.args.push_back(to_arg(call.sub[i]));
    for (size_t k = 0; k < call.keywords.size(); ++k)
      n.kwargs.emplace_back(std::string(call.keywords[k]), to_arg(call.sub[positional_end + k]));
    return n;
  }

  void define(const Token& name, Node n) {
    if (names_.count(name.text)) syntax_error(name.line, "name '" + std::string(name.text) + "' is defined twice");
    n.name = std::string(name.text);
    n.meta.stack = stack_;
    n.meta.annotation = annotation_;
    names_[name.text] = g_.add(std::move(n));
  }

  Arg to_arg(const Expr& e) {
    switch (e.k) {
      case Expr::K::Name: return name_arg(e);
      case Expr::K::Number: return parse_number(e, false);
      case Expr::K::String: return Arg::str(e.str);
      case Expr::K::Ellipsis: return Arg::ellipsis();
      case Expr::K::Unary: {
        const Expr& x = e.sub[0];
        bool negate = e.text == "-";
        if (e.text != "~" && x.k == Expr::K::Number) return parse_number(x, negate);
        if (e.text != "~" && x.k == Expr::K::Name && (x.text == "inf" || x.text == "nan")) {
          Arg a = name_arg(x);
          if (negate) a.f = -a.f;
          return a;
        }
        syntax_error(e.line, "unsupported expression in an argument");
      }
      case Expr::K::Attr: return dotted_arg(e);
      case Expr::K::Call: return call_arg(e);
      case Expr::K::List:
      case Expr::K::Tuple: {
        std::vector<Arg> items;
        items.reserve(e.sub.size());
        for (const Expr& x : e.sub) items.push_back(to_arg(x));
        return e.k == Expr::K::List ? Arg::list(std::move(items)) : Arg::tuple(std::move(items));
      }
      case Expr::K::Dict: {
        std::vector<std::pair<Arg, Arg>> entries;
        for (size_t i = 0; i + 1 < e.sub.size(); i += 2) entries.emplace_back(to_arg(e.sub[i]), to_arg(e.sub[i + 1]));
        return Arg::dict(std::move(entries));
      }
      default: syntax_error(e.line, "unsupported expression in an argument");
    }
  }

  Arg name_arg(const Expr& e) {
    std::string_view n = e.text;
    if (n == "None") return Arg::none();
    if (n == "True") return Arg::boolean(true);
    if (n == "False") return Arg::boolean(false);
    if (n == "inf") return Arg::real(std::numeric_limits<double>::infinity());
    if (n == "nan") return Arg::real(std::numeric_limits<double>::quiet_NaN());
    if (n == "Ellipsis") return Arg::ellipsis();
    auto it = names_.find(n);
    if (it == names_.end()) syntax_error(e.line, "name '" + std::string(n) + "' is not defined");
    return Arg::node(it->second);
  }

  Arg dotted_arg(const Expr& e) {
    auto dotted = dotted_name(e);
    if (!dotted) syntax_error(e.line, "unsupported expression in an argument");
    if (names_.count(root_name(e))) syntax_error(e.line, "attribute of a graph value used as an argument");
    std::string_view d = *dotted;
    if (d.starts_with("torch.") && d.find('.', 6) == std::string_view::npos) {
      std::string_view attr = d.substr(6);
      if (auto dt = canonical_dtype_name(attr)) return Arg::dtype(std::string(*dt));
      if (is_layout_name(attr)) return Arg::layout(std::string(attr));
      if (is_memory_format_name(attr)) return Arg::memory_format(std::string(attr));
    }
    return Arg::global(std::string(d));
  }

  Arg call_arg(const Expr& e) {
    auto callee = dotted_name(e.sub[0]);
    size_t npos = e.positional_count();
    auto kw = [&](std::string_view name) -> const Expr* {
      for (size_t k = 0; k < e.keywords.size(); ++k)
        if (e.keywords[k] == name) return &e.sub[1 + npos + k];
      return nullptr;
    };
    if (callee == "device" || callee == "torch.device") return device_arg(e, npos, kw("type"), kw("index"));
    if (callee == "slice" && e.keywords.empty() && npos >= 1 && npos <= 3) {
      if (npos == 1) return Arg::slice(Arg::none(), to_arg(e.sub[1]), Arg::none());
      return Arg::slice(to_arg(e.sub[1]), to_arg(e.sub[2]), npos == 3 ? to_arg(e.sub[3]) : Arg::none());
    }
    if (callee == "Sym" && npos == 1 && e.keywords.empty() && e.sub[1].k == Expr::K::String)
      return Arg::sym(e.sub[1].str);
    syntax_error(e.line, "unsupported call in an argument");
  }

  Arg device_arg(const Expr& e, size_t npos, const Expr* type, const Expr* index) {
    if (!type && npos >= 1) type = &e.sub[1];
    if (!index && npos >= 2) index = &e.sub[2];
    if (!type || type->k != Expr::K::String) syntax_error(e.line, "device() needs a type string");
    std::string name = type->str;
    if (index && !(index->k == Expr::K::Name && index->text == "None")) {
      if (index->k != Expr::K::Number) syntax_error(e.line, "device() index must be an int");
      name += ":" + std::string(index->text);
    }
    return Arg::device(std::move(name));
  }

  static Val annotation_val(const Expr& e) {
    // Non-verbose FX prints Python types (`x : torch.Tensor`); only the string form carries meta.
    if (e.k != Expr::K::String) return {};
    if (std::string why = tensor_annotation_problem(e.str); !why.empty())
      syntax_error(e.line, "tensor annotation \"" + e.str + "\": " + why);
    return parse_val_annotation(e.str);
  }

  void materialize_params() {
    if (params_done_) return;
    params_done_ = true;
    for (Param& p : params_) {
      Node n;
      n.op = OpKind::Placeholder;
      n.target = std::move(p.target);
      if (p.default_value) n.args.push_back(std::move(*p.default_value));
      n.meta.val = std::move(p.val);
      n.meta.desc = std::move(p.desc);
      Token t{Tok::Name, p.name, p.line};
      define_placeholder(t, std::move(n));
    }
  }

  void define_placeholder(const Token& name, Node n) {
    std::vector<StackFrame> no_stack;
    std::swap(no_stack, stack_);
    std::string no_annotation;
    std::swap(no_annotation, annotation_);
    define(name, std::move(n));
    std::swap(no_stack, stack_);
    std::swap(no_annotation, annotation_);
  }

  // `a, b, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)`:
  // the signature's parameters are pytree arguments, a, b the placeholders.
  void pytree_flatten(const Expr& targets, const Expr& value) {
    if (params_done_) syntax_error(targets.line, "tuple assignment after the graph started");
    auto callee = value.k == Expr::K::Call ? dotted_name(value.sub[0]) : std::nullopt;
    if (callee != "fx_pytree.tree_flatten_spec") syntax_error(targets.line, "tuple assignment is not part of a graph");
    params_done_ = true;
    for (const Param& p : params_) g_.pytree_args.push_back(p.target);
    for (const Expr& t : targets.sub) {
      if (t.k != Expr::K::Name) syntax_error(t.line, "expected a name in the pytree binding");
      Node n;
      n.op = OpKind::Placeholder;
      n.target = std::string(t.text);
      auto it = annotations_.find(t.text);
      if (it != annotations_.end()) {
        n.meta.val = it->second.val;
        n.meta.desc = it->second.desc;
      }
      define_placeholder(Token{Tok::Name, t.text, t.line}, std::move(n));
    }
  }

  void output(const Stmt& s) {
    materialize_params();
    ExprParser p(s, 1);
    Expr result;
    result.k = Expr::K::Name;
    result.text = "None";
    if (!p.at_end()) result = p.expr_list();
    p.expect_end();
    if (result.k == Expr::K::Call && dotted_name(result.sub[0]) == "pytree.tree_unflatten" &&
        result.positional_count() >= 1) {
      g_.pytree_out = true;
      Expr inner = std::move(result.sub[1]);
      result = std::move(inner);
    }
    Node n;
    n.op = OpKind::Output;
    n.name = names_.count("output") ? "output_1" : "output";
    n.target = "output";
    n.args.push_back(to_arg(result));
    bool any_desc = false;
    for (auto c : result.comments) any_desc |= !c.empty();
    if (any_desc)
      for (auto c : result.comments) n.meta.output_descs.emplace_back(c);
    g_.add(std::move(n));
    output_line_ = s.line;
  }

  Graph& g_;
  std::vector<Param> params_;
  bool params_done_ = false;
  std::unordered_map<std::string_view, NodeId> names_;
  std::unordered_set<NodeId> renamed_;
  std::unordered_map<std::string_view, PendingAnnotation> annotations_;
  std::optional<PendingInplace> pending_;
  std::vector<StackFrame> stack_;
  std::string annotation_;
  int output_line_ = 0;
};

// ---------------------------------------------------------------------------
// Classes and the search for the first module in a text.

bool starts_with_words(const LogicalLine& ll, std::string_view a, std::string_view b = {}) {
  if (ll.comment_only || ll.tokens.empty() || ll.tokens[0].text != a || ll.tokens[0].kind != Tok::Name) return false;
  return b.empty() || (ll.tokens.size() > 1 && ll.tokens[1].text == b);
}

class ModuleParser {
 public:
  explicit ModuleParser(Lexer& lx) : lx_(lx) {}

  Graph module(const LogicalLine& header) {
    if (starts_with_words(header, "class")) return class_body(header);
    Graph g;
    forward(header, g);
    return g;
  }

 private:
  Graph class_body(const LogicalLine& header) {
    // Bounds recursion on hostile input; real dumps nest two or three levels.
    if (++depth_ > 32) syntax_error(header.line, "classes nested too deeply");
    Graph g;
    g.class_name = class_name(header);
    std::vector<Subgraph> nested;
    bool has_forward = false;
    LogicalLine ll;
    while (lx_.next(ll, header.indent + 1)) {
      if (ll.comment_only) continue;
      if (starts_with_words(ll, "def", "forward")) {
        if (has_forward) syntax_error(ll.line, "second forward method in class " + g.class_name);
        forward(ll, g);
        has_forward = true;
      } else if (starts_with_words(ll, "def")) {
        skip_block(ll.indent);
      } else if (starts_with_words(ll, "class")) {
        Graph sub = class_body(ll);
        std::string name = sub.class_name;
        nested.push_back({std::move(name), std::move(sub)});
      }
      // Other class-level statements (attributes, docstrings) carry no graph.
    }
    if (!has_forward) syntax_error(header.line, "class " + g.class_name + " has no forward method");
    for (Subgraph& s : nested) g.subgraphs.push_back(std::move(s));
    --depth_;
    return g;
  }

  std::string class_name(const LogicalLine& header) {
    // Between "class" and "(", verbatim: "<lambda>" is not a Python identifier.
    const auto& t = header.tokens;
    size_t open = 1;
    while (open < t.size() && !(t[open].kind == Tok::Op && t[open].text == "(") &&
           !(t[open].kind == Tok::Op && t[open].text == ":"))
      ++open;
    if (open >= t.size() || open == 1) syntax_error(header.line, "bad class header");
    const char* begin = t[0].text.data() + t[0].text.size();
    const char* end = t[open].text.data();
    if (t.back().kind == Tok::Comment ? t[t.size() - 2].text != ":" : t.back().text != ":")
      syntax_error(header.line, "bad class header: expected ':' at the end");
    return std::string(trim(std::string_view(begin, size_t(end - begin))));
  }

  void skip_block(int indent) {
    LogicalLine ll;
    while (lx_.next(ll, indent + 1)) {
    }
  }

  void forward(const LogicalLine& def, Graph& g) {
    ForwardParser fp(g);
    fp.parse_signature(def);
    LogicalLine ll;
    while (lx_.next(ll, def.indent + 1)) {
      if (ll.comment_only) fp.comment(ll.tokens[0].text);
      else fp.line(ll);
    }
    fp.finish(def.line);
  }

  Lexer& lx_;
  int depth_ = 0;
};

struct Start {
  size_t offset;
  int line;
};

// The next physical line that opens a module: `class X(...Module...):` or `def forward(`.
std::optional<Start> find_module_start(std::string_view text, size_t offset, int line) {
  while (offset < text.size()) {
    size_t end = text.find('\n', offset);
    if (end == std::string_view::npos) end = text.size();
    std::string_view l = trim(text.substr(offset, end - offset));
    bool is_class = l.starts_with("class ") && l.find('(') != std::string_view::npos && l.ends_with(":") &&
                    l.find("Module") != std::string_view::npos;
    bool is_forward = l.starts_with("def forward(") || l.starts_with("def forward (");
    if (is_class || is_forward) return Start{offset, line};
    offset = end + 1;
    ++line;
  }
  return std::nullopt;
}

Status relocate(const Error& e, const std::string& file, int first_line) {
  int line = e.where().line > 0 ? e.where().line + first_line - 1 : 0;
  return Status::error(e.what(), SourceLocation{file, line});
}

// Parses the module at `start`; advances `start` past it.
Graph parse_at(std::string_view text, Start& start) {
  Lexer lx(text, start.offset, start.line);
  LogicalLine header;
  if (!lx.next(header, 0)) syntax_error(start.line, "no graph module found");
  ModuleParser mp(lx);
  Graph g = mp.module(header);
  start = Start{lx.offset(), lx.line()};
  return g;
}

}  // namespace

Expected<Graph> parse_graph_module(std::string_view text, const std::string& file, int first_line) {
  try {
    auto start = find_module_start(text, 0, 1);
    if (!start)
      return Status::error("no graph module found (expected `class ...(torch.nn.Module):` or `def forward(`)",
                           SourceLocation{file, first_line});
    return parse_at(text, *start);
  } catch (const Error& e) {
    return relocate(e, file, first_line);
  }
}

Expected<std::vector<Graph>> parse_graph_modules(std::string_view text, const std::string& file, int first_line) {
  std::vector<Graph> out;
  try {
    Start pos{0, 1};
    while (auto start = find_module_start(text, pos.offset, pos.line)) {
      pos = *start;
      out.push_back(parse_at(text, pos));
    }
  } catch (const Error& e) {
    return relocate(e, file, first_line);
  }
  if (out.empty())
    return Status::error("no graph module found (expected `class ...(torch.nn.Module):` or `def forward(`)",
                         SourceLocation{file, first_line});
  return out;
}

}  // namespace kiln
