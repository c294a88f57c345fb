#pragma once
// Kiln's graph IR, a mirror of torch.fx: a Graph is an ordered list of Nodes;
// each node has an op kind, a target, an argument tree and meta (value, source
// stack, module scope, provenance). Plain structs, no hidden invariants: a
// node refers to another by its index in Graph::nodes, so a pass that removes
// or reorders nodes renumbers references (remove_nodes does that).
//
// Uses are computed on demand (compute_users) rather than maintained: graphs
// are mostly built once by the parser or a pass and then read, and a stored
// user list would go stale on every edit of a plain struct.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln {

using NodeId = int32_t;
inline constexpr NodeId kNoNode = -1;

// torch.fx's Node.op.
enum class OpKind : uint8_t { Placeholder, GetAttr, CallFunction, CallMethod, CallModule, Output };
std::string_view op_kind_name(OpKind k);  // "call_function"
std::optional<OpKind> op_kind_from_name(std::string_view name);

// One argument, as FX stores it: a node reference, a Python constant, a torch
// constant (dtype, device, layout, memory format), or a container of those.
struct Arg {
  enum class Kind : uint8_t {
    None, Bool, Int, Float, Str,
    Node,          // `i` holds the NodeId
    DType,         // s: torch name, "float32"
    Device,        // s: "cpu", "cuda:0"
    Layout,        // s: "strided"
    MemoryFormat,  // s: "contiguous_format"
    Global,        // s: any other dotted name used as a value, "torch.ops.aten.mm.default"
    Sym,           // s: a symbolic int expression, "2*s0" (FX puts SymInts in nodes; this is for Kiln's own graphs)
    Ellipsis,
    List, Tuple,
    Slice,         // items: start, stop, step
    Dict,          // items: key0, value0, key1, value1, ...
  };
  Kind kind = Kind::None;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  // For Int, the literal text when it does not fit in int64 (Python ints are unbounded).
  std::string s;
  std::vector<Arg> items;

  static Arg none() { return {}; }
  static Arg boolean(bool v);
  static Arg integer(int64_t v);
  static Arg real(double v);
  static Arg str(std::string v);
  static Arg node(NodeId id);
  static Arg dtype(std::string torch_name);
  static Arg device(std::string name);
  static Arg layout(std::string name);
  static Arg memory_format(std::string name);
  static Arg global(std::string dotted);
  static Arg sym(std::string expr);
  static Arg ellipsis();
  static Arg list(std::vector<Arg> items);
  static Arg tuple(std::vector<Arg> items);
  static Arg slice(Arg start, Arg stop, Arg step);
  static Arg dict(std::vector<std::pair<Arg, Arg>> entries);

  bool is_node() const { return kind == Kind::Node; }
  bool is_none() const { return kind == Kind::None; }
  bool is_container() const {
    return kind == Kind::List || kind == Kind::Tuple || kind == Kind::Slice || kind == Kind::Dict;
  }
  NodeId node_id() const { return NodeId(i); }
  friend bool operator==(const Arg&, const Arg&);
};

// A size or stride: an int, or a sympy expression such as "s0" or "2*s1 + 1".
struct SymInt {
  int64_t value = 0;
  std::string expr;  // empty when the value is a plain int
  static SymInt of(int64_t v) { return {v, {}}; }
  static SymInt symbol(std::string e) { return {0, std::move(e)}; }
  bool is_symbolic() const { return !expr.empty(); }
  std::string to_string() const { return is_symbolic() ? expr : std::to_string(value); }
  friend bool operator==(const SymInt&, const SymInt&) = default;
};

// What FakeTensor tells FX about a tensor.
struct TensorMeta {
  std::string dtype;  // torch name: "float32", "bfloat16", "complex64"
  std::vector<SymInt> sizes;
  std::optional<std::vector<SymInt>> strides;  // not every dump prints them
  std::string device;                          // "cpu", "cuda:0"; empty when not printed
  std::string subclass;                        // "" for a plain tensor; "FunctionalTensor", "DTensor"
  std::string subclass_extra;                  // DTensor placements, as printed
  friend bool operator==(const TensorMeta&, const TensorMeta&) = default;
};

// meta['val']: a tensor, a symbolic scalar, a Python scalar, or a tuple/list of
// values for multi-output nodes. Text keeps an annotation we could not read.
struct Val {
  enum class Kind : uint8_t { None, Tensor, Sym, Scalar, Tuple, List, Text };
  Kind kind = Kind::None;
  TensorMeta tensor;
  std::string text;  // Sym: "s0" (as inside "Sym(s0)"); Text: the raw annotation
  Arg scalar;
  std::vector<Val> items;

  static Val of_tensor(TensorMeta t);
  static Val of_sym(std::string expr);
  static Val of_scalar(Arg a);
  static Val tuple(std::vector<Val> items);
  static Val raw(std::string text);
  bool is_tensor() const { return kind == Kind::Tensor; }
  friend bool operator==(const Val&, const Val&);
};

// One source frame; FX prints the innermost as "# File: f.py:7 in forward, code: y = x.sin()".
struct StackFrame {
  std::string file;
  int line = 0;
  std::string function;
  std::string code;
  friend bool operator==(const StackFrame&, const StackFrame&) = default;
};

struct NodeMeta {
  Val val;
  std::vector<StackFrame> stack;  // outermost first, innermost last (Python traceback order)
  std::string scope;              // module path, "layer1.0.conv1"
  std::vector<std::string> from;  // names of the nodes of the previous stage this node came from
  // AOT descriptor FX prints after a placeholder: "PlainAOTInput(idx=0)".
  std::string desc;
  // On the output node: one descriptor per returned element.
  std::vector<std::string> output_descs;
  // Text FX prints before the stack summary: "Annotation: {...}", "# recompute: MUST_SAVE".
  std::string annotation;
};

struct Node {
  OpKind op = OpKind::CallFunction;
  std::string name;
  // placeholder: the argument name ("L_x_", "*args"); get_attr / call_module:
  // the attribute path ("layer1.0.conv1"); call_method: the method ("view");
  // call_function: "aten::add.Tensor" for torch.ops (see target_from_python),
  // otherwise the Python name ("torch.sin", "operator.add"); output: "output".
  std::string target;
  std::vector<Arg> args;  // for call_method, args[0] is the object; for output, args[0] is the result tree
  std::vector<std::pair<std::string, Arg>> kwargs;
  NodeMeta meta;
};

struct Subgraph;

struct Graph {
  std::string class_name = "GraphModule";
  std::vector<Node> nodes;
  // Submodules with graphs (higher-order op bodies), in print order; get_attr targets name them.
  std::vector<Subgraph> subgraphs;
  // How the forward signature was written, so printing gives back the same text:
  // pytree_args non-empty means `forward(self, primals, tangents)` followed by
  // `a, b, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)`.
  std::vector<std::string> pytree_args;
  bool pytree_out = false;    // return pytree.tree_unflatten([...], self._out_spec)
  bool expanded_def = false;  // one parameter per line, with descriptor comments

  // Appends a node and returns its id; the name must be unique (not checked here: see verify()).
  NodeId add(Node n);
  const Node& operator[](NodeId id) const { return nodes[size_t(id)]; }
  Node& operator[](NodeId id) { return nodes[size_t(id)]; }
  size_t size() const { return nodes.size(); }
  // Linear search; kNoNode when absent.
  NodeId find(std::string_view name) const;
  const Node* output() const;
  const Graph* subgraph(std::string_view name) const;
};

struct Subgraph {
  std::string name;
  Graph graph;
};

// Calls fn(id) for every node reference in `a`, depth first, in print order.
template <class Fn>
void for_each_node_ref(const Arg& a, Fn&& fn) {
  if (a.kind == Arg::Kind::Node) fn(a.node_id());
  for (const Arg& item : a.items) for_each_node_ref(item, fn);
}
// The same over a node's args then kwargs.
template <class Fn>
void for_each_input(const Node& n, Fn&& fn) {
  for (const Arg& a : n.args) for_each_node_ref(a, fn);
  for (const auto& kv : n.kwargs) for_each_node_ref(kv.second, fn);
}
// users[i]: the nodes that read node i, in graph order, without repeats.
std::vector<std::vector<NodeId>> compute_users(const Graph& g);
// A node that computes something (call_function, call_method, call_module):
// what "ops" counts in every size Kiln prints ("5 nodes, 3 ops").
inline bool is_call(const Node& n) {
  return n.op == OpKind::CallFunction || n.op == OpKind::CallMethod || n.op == OpKind::CallModule;
}
// Removes the marked nodes and renumbers every reference. A kept node must not
// read a removed one (KILN_CHECK): callers check compute_users first.
void remove_nodes(Graph& g, const std::vector<bool>& remove);
// Number of nodes of each kind; handy for op counts in summaries and tests.
size_t count_nodes(const Graph& g, OpKind kind);

}  // namespace kiln
