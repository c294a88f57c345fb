#include "core/graph/printer.h"

#include "core/graph/annotation.h"
#include "core/graph/spelling.h"

namespace kiln {

namespace {

// torch/fx/graph.py _format_target: self.layer1 -> getattr(self.layer1, "0") for non-identifiers.
std::string format_target(std::string base, std::string_view target) {
  size_t start = 0;
  while (start <= target.size()) {
    size_t dot = target.find('.', start);
    if (dot == std::string_view::npos) dot = target.size();
    std::string_view elem = target.substr(start, dot - start);
    base = is_python_identifier(elem) ? base + "." + std::string(elem) : "getattr(" + base + ", \"" + std::string(elem) + "\")";
    start = dot + 1;
  }
  return base;
}

std::string device_repr(const std::string& device) {
  size_t colon = device.find(':');
  if (colon == std::string::npos) return "device(type='" + device + "')";
  return "device(type='" + device.substr(0, colon) + "', index=" + device.substr(colon + 1) + ")";
}

void append_items(const Graph& g, const std::vector<Arg>& items, std::string& out) {
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + print_arg(g, items[i]);
}

class ModulePrinter {
 public:
  ModulePrinter(const Graph& g, const PrintOptions& o) : g_(g), opt_(o) {}

  // The forward function, lines relative to the def (body indented by 4).
  std::vector<std::string> forward() {
    compute_last_uses();
    signature();
    body_start_ = lines_.size();
    for (size_t i = 0; i < g_.size(); ++i) node(NodeId(i));
    if (lines_.size() == body_start_) lines_.push_back("    pass");
    return std::move(lines_);
  }

 private:
  std::string annotation(const Node& n) const {
    if (!opt_.verbose) return "";
    std::string v = format_val(n.meta.val);
    return v.empty() ? "" : ": \"" + v + "\"";
  }

  std::string free_var(const Node& n) const {
    std::string s = n.target + annotation(n);
    if (!n.args.empty()) s += " = " + print_arg(g_, n.args[0]);
    if (g_.expanded_def && !n.meta.desc.empty()) s += "  # " + n.meta.desc;
    return s;
  }

  // One parameter per line, "name,  # desc" (CodeGen._format_single_arg).
  static std::string expanded_param(const std::string& v) {
    size_t hash = v.find("  # ");
    if (hash == std::string::npos) return "    " + v + ",";
    return "    " + v.substr(0, hash) + ",  # " + v.substr(hash + 4);
  }

  void def_line(const std::vector<std::string>& params) {
    if (!g_.expanded_def) {
      std::string s = "def forward(self";
      for (const auto& p : params) s += ", " + p;
      lines_.push_back(s + "):");
      return;
    }
    lines_.push_back("def forward(");
    lines_.push_back("    self,");
    for (const auto& p : params) lines_.push_back(expanded_param(p));
    lines_.push_back("):");
  }

  void signature() {
    std::vector<std::string> free_vars;
    std::vector<std::string> names;
    for (const Node& n : g_.nodes) {
      if (n.op != OpKind::Placeholder) continue;
      free_vars.push_back(free_var(n));
      names.push_back(n.target);
    }
    if (g_.pytree_args.empty()) {
      def_line(free_vars);
      return;
    }
    // _PyTreeCodeGen: the signature takes the pytree arguments and the body
    // flattens them into the placeholders.
    def_line(g_.pytree_args);
    if (free_vars.empty()) return;
    std::vector<std::string> annotated;
    for (const auto& v : free_vars)
      if (v.find(':') != std::string::npos) annotated.push_back(v);
    if (!annotated.empty()) {
      if (g_.expanded_def) {
        for (const auto& v : annotated) lines_.push_back("    " + v);
      } else {
        std::string s = "    ";
        for (const auto& v : annotated) s += v + "; ";
        lines_.push_back(s);
        lines_.push_back("");
      }
    }
    std::string bind = "    ";
    for (size_t i = 0; i < names.size(); ++i) bind += (i ? ", " : "") + names[i];
    bind += ", = fx_pytree.tree_flatten_spec([";
    for (size_t i = 0; i < g_.pytree_args.size(); ++i) {
      std::string arg = g_.pytree_args[i];
      std::erase(arg, '*');  // the list names the values; stars belong to the signature
      bind += (i ? ", " : "") + arg;
    }
    lines_.push_back(bind + "], self._in_spec)");
  }

  // FX frees each value right after its last use; the user that last reads a
  // value lists it, in the order its inputs first appear.
  void compute_last_uses() {
    last_uses_.assign(g_.size(), {});
    has_users_.assign(g_.size(), false);
    std::vector<bool> seen(g_.size(), false);
    for (size_t i = g_.size(); i-- > 0;) {
      std::vector<NodeId> inputs;
      for_each_input(g_.nodes[i], [&](NodeId in) {
        if (in < 0 || size_t(in) >= g_.size()) return;
        has_users_[size_t(in)] = true;
        for (NodeId x : inputs)
          if (x == in) return;
        inputs.push_back(in);
      });
      for (NodeId in : inputs) {
        if (seen[size_t(in)]) continue;
        seen[size_t(in)] = true;
        last_uses_[i].push_back(in);
      }
    }
  }

  std::string delete_suffix(NodeId id) const {
    if (!opt_.delete_statements) return "";
    std::vector<NodeId> dead = last_uses_[size_t(id)];
    if (!has_users_[size_t(id)]) dead.push_back(id);
    if (dead.empty()) return "";
    std::string s = ";  ";
    for (NodeId d : dead) s += g_[d].name + " = ";
    return s + "None";
  }

  void summary(const Node& n) {
    if (!opt_.verbose) return;
    std::string text = "#";
    if (!n.meta.annotation.empty()) text += " " + n.meta.annotation;
    if (n.meta.stack.empty()) {
      text += " No stacktrace found for following nodes";
    } else {
      const StackFrame& f = n.meta.stack.back();
      text += " File: " + f.file + ":" + std::to_string(f.line) + " in " + f.function + ", code: " + f.code;
    }
    if (text == prev_summary_) return;
    prev_summary_ = text;
    if (lines_.size() > body_start_) lines_.push_back("");
    lines_.push_back("    " + text);
  }

  std::string args_text(size_t first, const Node& n) const {
    std::string s;
    for (size_t i = first; i < n.args.size(); ++i) s += (s.empty() ? "" : ", ") + print_arg(g_, n.args[i]);
    for (const auto& [k, v] : n.kwargs) s += (s.empty() ? "" : ", ") + k + " = " + print_arg(g_, v);
    return s;
  }

  std::string call_function(const Node& n, const std::string& lhs) const {
    auto arg = [&](size_t i) { return print_arg(g_, n.args[i]); };
    const OperatorSpelling* op = infix_operator(n.target);
    if (op && n.kwargs.empty() && int(n.args.size()) == op->arity) {
      if (op->symbol == "[]") return lhs + " = " + arg(0) + "[" + arg(1) + "]";
      if (op->symbol == "[]=") return arg(0) + "[" + arg(1) + "] = " + arg(2) + ";  " + lhs + " = " + arg(0);
      if (is_inplace_operator(*op))
        return arg(0) + " " + std::string(op->symbol) + " " + arg(1) + ";  " + lhs + " = " + arg(0);
      if (op->arity == 1) return lhs + " = " + std::string(op->symbol) + arg(0);
      return lhs + " = " + arg(0) + " " + std::string(op->symbol) + " " + arg(1);
    }
    if (n.target == "getattr" && n.args.size() == 2 && n.kwargs.empty() && n.args[1].kind == Arg::Kind::Str &&
        is_python_identifier(n.args[1].s))
      return lhs + " = " + format_target(arg(0), n.args[1].s);
    return lhs + " = " + target_to_python(n.target) + "(" + args_text(0, n) + ")";
  }

  std::string output(const Node& n) const {
    Arg result = n.args.empty() ? Arg::none() : n.args[0];
    bool container = result.kind == Arg::Kind::List || result.kind == Arg::Kind::Tuple;
    bool multiline = g_.expanded_def && container && !n.meta.output_descs.empty() &&
                     n.meta.output_descs.size() == result.items.size();
    std::string prefix = g_.pytree_out ? "return pytree.tree_unflatten(" : "return ";
    std::string suffix = g_.pytree_out ? ", self._out_spec)" : "";
    if (!multiline) return "    " + prefix + print_arg(g_, result) + suffix;
    bool tuple = result.kind == Arg::Kind::Tuple;
    std::string s = "    " + prefix + (tuple ? "(" : "[");
    for (size_t i = 0; i < result.items.size(); ++i)
      s += "\n        " + print_arg(g_, result.items[i]) + ",  # " + n.meta.output_descs[i];
    return s + "\n    " + (tuple ? ")" : "]") + suffix;
  }

  void node(NodeId id) {
    const Node& n = g_[id];
    if (n.op == OpKind::Placeholder) {
      std::string raw = n.target;
      std::erase(raw, '*');
      if (raw != n.name) lines_.push_back("    " + n.name + " = " + raw);
      return;
    }
    if (n.op == OpKind::Output) {
      lines_.push_back(output(n));
      return;
    }
    summary(n);
    std::string lhs = n.name + annotation(n);
    std::string stmt;
    switch (n.op) {
      case OpKind::GetAttr: stmt = lhs + " = " + format_target("self", n.target); break;
      case OpKind::CallModule: stmt = lhs + " = " + format_target("self", n.target) + "(" + args_text(0, n) + ")"; break;
      case OpKind::CallMethod:
        stmt = lhs + " = " + format_target(n.args.empty() ? "None" : print_arg(g_, n.args[0]), n.target) + "(" +
               args_text(1, n) + ")";
        break;
      case OpKind::CallFunction: stmt = call_function(n, lhs); break;
      default: break;
    }
    lines_.push_back("    " + stmt + delete_suffix(id));
  }

  const Graph& g_;
  const PrintOptions& opt_;
  std::vector<std::string> lines_;
  size_t body_start_ = 0;
  std::string prev_summary_;
  std::vector<std::vector<NodeId>> last_uses_;
  std::vector<bool> has_users_;
};

void print_module(const Graph& g, const std::string& class_name, const PrintOptions& options,
                  const std::string& indent, std::string& out) {
  out += indent + "class " + class_name + "(torch.nn.Module):\n";
  for (const std::string& line : ModulePrinter(g, options).forward()) {
    // Lines may hold several physical lines (multi-line returns).
    size_t start = 0;
    while (true) {
      size_t nl = line.find('\n', start);
      std::string_view piece(line.data() + start, (nl == std::string::npos ? line.size() : nl) - start);
      if (piece.empty()) out += "\n";
      else out += indent + "    " + std::string(piece) + "\n";
      if (nl == std::string::npos) break;
      start = nl + 1;
    }
  }
  for (const Subgraph& s : g.subgraphs) {
    out += "\n";
    print_module(s.graph, s.name, options, indent + "    ", out);
  }
}

}  // namespace

std::string print_arg(const Graph& g, const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::None: return "None";
    case Arg::Kind::Bool: return a.b ? "True" : "False";
    case Arg::Kind::Int: return a.s.empty() ? std::to_string(a.i) : a.s;
    case Arg::Kind::Float: return python_float_repr(a.f);
    case Arg::Kind::Str: return python_str_repr(a.s);
    case Arg::Kind::Node:
      if (a.i < 0 || size_t(a.i) >= g.size()) return "__invalid_node_" + std::to_string(a.i);
      return g[a.node_id()].name;
    case Arg::Kind::DType:
    case Arg::Kind::Layout:
    case Arg::Kind::MemoryFormat: return "torch." + a.s;
    case Arg::Kind::Device: return device_repr(a.s);
    case Arg::Kind::Global: return a.s;
    case Arg::Kind::Sym: return "Sym(" + python_str_repr(a.s) + ")";
    case Arg::Kind::Ellipsis: return "Ellipsis";
    case Arg::Kind::List: {
      std::string out = "[";
      append_items(g, a.items, out);
      return out + "]";
    }
    case Arg::Kind::Tuple: {
      std::string out = "(";
      append_items(g, a.items, out);
      return out + (a.items.size() == 1 ? ",)" : ")");
    }
    case Arg::Kind::Slice: {
      std::string out = "slice(";
      append_items(g, a.items, out);
      return out + ")";
    }
    case Arg::Kind::Dict: {
      std::string out = "{";
      for (size_t i = 0; i + 1 < a.items.size(); i += 2)
        out += (i ? ", " : "") + print_arg(g, a.items[i]) + ": " + print_arg(g, a.items[i + 1]);
      return out + "}";
    }
  }
  return "";
}

std::string print_graph_module(const Graph& g, const PrintOptions& options) {
  std::string out;
  print_module(g, g.class_name, options, "", out);
  return out;
}

}  // namespace kiln
