#include "core/graph/verify.h"

#include <unordered_map>

#include "core/graph/spelling.h"
#include "core/ops/registry.h"

namespace kiln {

namespace {

class Verifier {
 public:
  Verifier(const Graph& g, const OpRegistry& ops, std::string path, std::vector<Diagnostic>& out)
      : g_(g), ops_(ops), path_(std::move(path)), out_(out) {}

  void run() {
    structure();
    for (size_t i = 0; i < g_.size(); ++i) node(NodeId(i));
    for (const Subgraph& s : g_.subgraphs)
      Verifier(s.graph, ops_, path_.empty() ? s.name : path_ + "." + s.name, out_).run();
  }

 private:
  void report(NodeId id, std::string message) {
    Diagnostic d;
    d.subgraph = path_;
    d.node = id;
    if (id != kNoNode) d.node_name = g_[id].name;
    d.message = std::move(message);
    out_.push_back(std::move(d));
  }

  void structure() {
    std::unordered_map<std::string_view, NodeId> seen;
    size_t outputs = 0;
    bool past_placeholders = false;
    for (size_t i = 0; i < g_.size(); ++i) {
      const Node& n = g_.nodes[i];
      NodeId id = NodeId(i);
      if (!is_python_identifier(n.name)) report(id, "name '" + n.name + "' is not a Python identifier");
      else if (auto [it, fresh] = seen.emplace(n.name, id); !fresh)
        report(id, "name '" + n.name + "' is already used by node #" + std::to_string(it->second));
      if (n.op == OpKind::Placeholder && past_placeholders) report(id, "placeholder after the first non-placeholder node");
      if (n.op != OpKind::Placeholder) past_placeholders = true;
      if (n.op == OpKind::Output && ++outputs > 1) report(id, "second output node");
    }
    if (outputs == 0) report(kNoNode, "graph has no output node");
    else if (g_.nodes.back().op != OpKind::Output) report(kNoNode, "the output node is not the last node");
  }

  void node(NodeId id) {
    const Node& n = g_[id];
    for_each_input(n, [&](NodeId ref) {
      if (ref < 0 || size_t(ref) >= g_.size()) report(id, "reads node #" + std::to_string(ref) + ", which does not exist");
      else if (ref >= id) report(id, "reads '" + g_[ref].name + "' before it is defined");
      else if (g_[ref].op == OpKind::Output) report(id, "reads the output node");
    });
    switch (n.op) {
      case OpKind::Placeholder:
        if (n.target.empty()) report(id, "placeholder without a target (argument name)");
        break;
      case OpKind::GetAttr:
      case OpKind::CallModule:
        if (n.target.empty()) report(id, std::string(op_kind_name(n.op)) + " without an attribute path");
        break;
      case OpKind::CallMethod:
        if (n.target.empty()) report(id, "call_method without a method name");
        if (n.args.empty()) report(id, "call_method without the object it is called on");
        break;
      case OpKind::CallFunction:
        if (n.target.empty()) report(id, "call_function without a target");
        else check_schema(id, n);
        break;
      case OpKind::Output:
        if (n.args.size() != 1 || !n.kwargs.empty()) report(id, "output node must hold exactly one argument");
        break;
    }
  }

  // ATen's Python binding rules: positional args fill the non-kwarg-only
  // parameters in order; keywords must name a parameter not already filled;
  // parameters without a default must be given.
  void check_schema(NodeId id, const Node& n) {
    if (!is_op_overload_target(n.target) || n.target.find('.') == std::string::npos) return;
    const OpDef* def = ops_.find(n.target);
    if (!def) return;
    const Schema& schema = def->schema;
    const std::string op = schema.full_name();
    size_t positional = 0;
    for (const Argument& a : schema.args) positional += !a.kwarg_only;
    if (n.args.size() > positional)
      report(id, op + " takes " + std::to_string(positional) + " positional arguments but " +
                     std::to_string(n.args.size()) + " were given");
    std::vector<bool> given(schema.args.size(), false);
    for (size_t i = 0; i < n.args.size() && i < positional; ++i) given[i] = true;
    for (const auto& [name, value] : n.kwargs) {
      int idx = schema.index_of(name);
      if (idx < 0) {
        report(id, op + " got an unexpected keyword argument '" + name + "'");
        continue;
      }
      if (given[size_t(idx)]) report(id, op + " got multiple values for argument '" + name + "'");
      given[size_t(idx)] = true;
    }
    for (size_t i = 0; i < schema.args.size(); ++i)
      if (!given[i] && !schema.args[i].default_value)
        report(id, op + " is missing required argument '" + schema.args[i].name + "'");
  }

  const Graph& g_;
  const OpRegistry& ops_;
  std::string path_;
  std::vector<Diagnostic>& out_;
};

}  // namespace

std::string Diagnostic::to_string() const {
  std::string where = subgraph.empty() ? "" : subgraph + ": ";
  if (node == kNoNode) return where + "graph: " + message;
  return where + "node '" + node_name + "' (#" + std::to_string(node) + "): " + message;
}

std::vector<Diagnostic> verify(const Graph& g) { return verify(g, op_registry()); }

std::vector<Diagnostic> verify(const Graph& g, const OpRegistry& ops) {
  std::vector<Diagnostic> out;
  Verifier(g, ops, "", out).run();
  return out;
}

}  // namespace kiln
