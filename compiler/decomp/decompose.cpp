#include "compiler/decomp/decompose.h"

#include <algorithm>
#include <map>
#include <set>

#include "compiler/decomp/decomp_util.h"
#include "compiler/pipeline/aten_interpreter.h"
#include "core/ops/registry.h"

namespace kiln::decomp {

using pipeline::GraphEmitter;

namespace {
// Far deeper than any chain in the table (mish -> softplus -> ... is 3); a
// decomposition that reaches this calls itself.
constexpr int kMaxDepth = 64;
}  // namespace

std::vector<Var> DecomposingEmitter::call(std::string_view op, const std::vector<EArg>& args, const EKwargs& kwargs) {
  const Decomposition* d = find_decomposition(op);
  if (d) {
    KILN_CHECK(depth_ < kMaxDepth, "decomposition of ", op, " recursed ", kMaxDepth, " calls deep");
    ++depth_;
    std::vector<Var> out;
    try {
      out = (*d)(*this, DecompCall{full_op_name(op), args, kwargs});
    } catch (...) {
      --depth_;
      throw;
    }
    --depth_;
    if (!out.empty()) {
      ++applied_;
      return out;
    }
  }
  if (!is_core(op)) {
    std::string name = full_op_name(op);
    if (std::find(kept_.begin(), kept_.end(), name) == kept_.end()) kept_.push_back(name);
  }
  return inner_.call(op, args, kwargs);
}

std::vector<std::string> non_core_targets(const Graph& g) {
  std::vector<std::string> out;
  for (const Node& n : g.nodes) {
    if (n.op != OpKind::CallFunction || n.target == "operator.getitem" || is_core(n.target)) continue;
    if (std::find(out.begin(), out.end(), n.target) == out.end()) out.push_back(n.target);
  }
  return out;
}

namespace {

bool candidate(const std::string& target, const std::vector<std::string>& keep_whole) {
  return find_decomposition(target) && op_registry().find(target) &&
         std::find(keep_whole.begin(), keep_whole.end(), target) == keep_whole.end();
}

std::string node_error(const Node& n, const std::string& why) {
  return "decompose: node " + n.name + (n.target.empty() ? "" : " (" + n.target + ")") + ": " + why;
}

// The meta tensor a node's meta['val'] describes.
Tensor meta_tensor(const Node& n) {
  const Val& v = n.meta.val;
  if (!v.is_tensor()) throw Error(node_error(n, "needs a tensor meta['val']"));
  Shape sizes, strides;
  for (const SymInt& s : v.tensor.sizes) {
    if (s.is_symbolic()) throw Error(node_error(n, "symbolic size " + s.expr + " (decompose needs static shapes)"));
    sizes.push_back(s.value);
  }
  std::optional<DType> dtype = dtype_from_name(v.tensor.dtype);
  if (!dtype) throw Error(node_error(n, "unknown dtype '" + v.tensor.dtype + "'"));
  if (!v.tensor.strides) return Tensor::meta(sizes, *dtype);
  for (const SymInt& s : *v.tensor.strides) strides.push_back(s.is_symbolic() ? 0 : s.value);
  return Tensor::meta_strided(sizes, strides, *dtype);
}

// Nodes with nothing to decompose (core ops without a decomposition, getitems
// of them, unregistered or non-ATen targets, get_attr) are copied as they are,
// names included, so an unchanged node reads the same in both stages; the rest
// go through a DecomposingEmitter over a GraphEmitter.
class Rewriter {
 public:
  Rewriter(const Graph& in, Graph& out, const std::vector<std::string>& keep_whole)
      : in_(in), out_(out), keep_whole_(keep_whole) {}

  void run(std::string* log) {
    for (size_t i = 0; i < in_.size(); ++i)
      if (in_.nodes[i].op == OpKind::Placeholder) copy_node(NodeId(i));
    GraphEmitter ge(out_);
    DecomposingEmitter de(ge);
    ge_ = &ge;
    for (size_t i = 0; i < in_.size(); ++i) {
      const Node& n = in_.nodes[i];
      if (n.op == OpKind::Placeholder) continue;
      if (n.op == OpKind::Output) {
        add_output(n);
        break;
      }
      if (n.op == OpKind::CallFunction && candidate(n.target, keep_whole_)) {
        decompose_call(NodeId(i), n, de, log);
      } else if (n.op == OpKind::CallFunction && n.target == "operator.getitem" && n.args.size() == 2 &&
                 n.args[0].is_node() && tuples_.count(n.args[0].node_id())) {
        const std::vector<Var>& items = tuples_.at(n.args[0].node_id());
        int64_t k = n.args[1].i;
        if (k < 0 || size_t(k) >= items.size()) throw Error(node_error(n, "getitem index out of range"));
        if (!items[size_t(k)].valid())
          throw Error(node_error(n, "reads output " + std::to_string(k) + " of " + in_[n.args[0].node_id()].name +
                                        ", which its decomposition gives no node for (a None or SymInt output)"));
        vars_[NodeId(i)] = items[size_t(k)];
        new_ids_[NodeId(i)] = ge.node(items[size_t(k)]);
      } else {
        copy_node(NodeId(i));
      }
    }
    if (log)
      for (const std::string& op : de.kept()) *log += "kept " + op + ": its decomposition declined these arguments\n";
    applied_ = de.applied();
    make_names_unique();
  }
  int applied() const { return applied_; }
  int replaced() const { return replaced_; }

 private:
  // The node in the new graph standing for input node `id`.
  NodeId new_id(const Node& user, NodeId id) const {
    auto it = new_ids_.find(id);
    if (it == new_ids_.end())
      throw Error(node_error(user, "reads " + in_[id].name + ", whose outputs are only read through getitem"));
    return it->second;
  }

  Arg remap(const Node& user, const Arg& a) const {
    // The output (or any reader) of a whole tuple a decomposed node made:
    // the tuple of its parts (make_fx repros of 2022 return var_mean itself).
    if (a.is_node() && !new_ids_.count(a.node_id()) && tuples_.count(a.node_id())) {
      std::vector<Arg> parts;
      for (const Var& v : tuples_.at(a.node_id())) parts.push_back(Arg::node(ge_->node(v)));
      return Arg::tuple(std::move(parts));
    }
    if (a.is_node()) return Arg::node(new_id(user, a.node_id()));
    Arg copy = a;
    for (Arg& x : copy.items) x = remap(user, x);
    return copy;
  }

  void copy_node(NodeId id) {
    Node n = in_[id];
    for (Arg& a : n.args) a = remap(in_[id], a);
    for (auto& kv : n.kwargs) kv.second = remap(in_[id], kv.second);
    if (n.op != OpKind::Placeholder && n.op != OpKind::GetAttr) n.meta.from = {in_[id].name};
    new_ids_[id] = out_.add(std::move(n));
    copied_.insert(new_ids_[id]);
  }

  // A copied node as an emitter value, from its meta['val'].
  Var var_of(const Node& user, NodeId id) {
    if (auto it = vars_.find(id); it != vars_.end()) return it->second;
    NodeId nid = new_id(user, id);
    if (!in_[id].meta.val.is_tensor())
      throw Error(node_error(user, "reads " + in_[id].name + ", which has no tensor meta['val']"));
    Var v = ge_->adopt(nid, meta_tensor(in_[id]));
    vars_[id] = v;
    return v;
  }

  EArg earg(const Node& user, const Arg& a) {
    if (a.is_node()) return var_of(user, a.node_id());
    if (a.kind == Arg::Kind::List || a.kind == Arg::Kind::Tuple) {
      bool refs = std::any_of(a.items.begin(), a.items.end(), [](const Arg& x) { return x.is_node(); });
      if (refs) {
        std::vector<Var> vs;
        for (const Arg& x : a.items) {
          if (x.is_none())
            vs.push_back(Var{});
          else if (x.is_node())
            vs.push_back(var_of(user, x.node_id()));
          else
            throw Error(node_error(user, "a list mixing tensors and constants"));
        }
        return EArg::list(std::move(vs));
      }
    }
    Expected<Value> v = pipeline::constant_value(a);
    if (!v) throw Error(node_error(user, v.status().message()));
    return EArg(std::move(*v));
  }

  void decompose_call(NodeId id, const Node& n, DecomposingEmitter& de, std::string* log) {
    std::vector<EArg> args;
    for (const Arg& a : n.args) args.push_back(earg(n, a));
    EKwargs kwargs;
    for (const auto& [k, a] : n.kwargs) kwargs.emplace_back(k, earg(n, a));
    ge_->set_origin(n.meta.stack, {n.name});
    const size_t first_new = out_.size();
    const int applied_before = de.applied();
    std::vector<Var> results;
    try {
      results = de.call(n.target, args, kwargs);
    } catch (const Error& e) {
      throw Error(node_error(n, e.what()));
    }
    for (size_t k = first_new; k < out_.size(); ++k) out_.nodes[k].meta.scope = n.meta.scope;
    // Multi-output nodes are read through getitem; a single output may be read
    // either way (a one-chunk split), so it is kept both ways.
    tuples_[id] = results;
    bool tuple = n.meta.val.kind == Val::Kind::Tuple || n.meta.val.kind == Val::Kind::List;
    if (!tuple && results.size() == 1) {
      vars_[id] = results[0];
      new_ids_[id] = ge_->node(results[0]);
    }
    if (de.applied() == applied_before) return;
    ++replaced_;
    if (log) *log += n.name + " (" + n.target + ") -> " + std::to_string(out_.size() - first_new) + " nodes\n";
  }

  void add_output(const Node& n) {
    Node o = n;
    for (Arg& a : o.args) a = remap(n, a);
    o.meta.from = {n.name};
    copied_.insert(out_.add(std::move(o)));
  }

  // GraphEmitter names new nodes without knowing the copied ones: a new node
  // that took a copied node's name gets the next free suffix instead.
  void make_names_unique() {
    std::set<std::string> taken, kept;
    for (const Node& n : out_.nodes) taken.insert(n.name);
    for (NodeId id : copied_) kept.insert(out_[id].name);
    std::set<std::string> seen;
    std::map<std::string, int> next_suffix;  // per clashing name, where the search for a free suffix resumes
    for (size_t i = 0; i < out_.size(); ++i) {
      Node& n = out_.nodes[i];
      bool clash = copied_.count(NodeId(i)) ? seen.count(n.name) : (kept.count(n.name) || seen.count(n.name));
      if (clash) {
        std::string base = n.name;
        int& k = next_suffix.try_emplace(base, 1).first->second;
        for (; taken.count(n.name); ++k) n.name = base + "_" + std::to_string(k);
        taken.insert(n.name);
      }
      seen.insert(n.name);
    }
  }

  const Graph& in_;
  Graph& out_;
  const std::vector<std::string>& keep_whole_;
  GraphEmitter* ge_ = nullptr;
  std::map<NodeId, NodeId> new_ids_;           // input node -> its node in the new graph
  std::map<NodeId, Var> vars_;                 // input node -> emitter value, once needed
  std::map<NodeId, std::vector<Var>> tuples_;  // decomposed input nodes -> their outputs
  std::set<NodeId> copied_;                    // new-graph nodes copied from the input
  int applied_ = 0;
  int replaced_ = 0;  // input nodes whose call was decomposed
};

}  // namespace

Expected<Graph> decompose(const Graph& aten_graph, std::string* log, int* decomposed_nodes) {
  return decompose(aten_graph, {}, log, decomposed_nodes);
}

Expected<Graph> decompose(const Graph& aten_graph, const std::vector<std::string>& keep_whole, std::string* log,
                          int* decomposed_nodes) {
  Graph out;
  out.class_name = aten_graph.class_name;
  out.subgraphs = aten_graph.subgraphs;
  out.pytree_args = aten_graph.pytree_args;
  out.pytree_out = aten_graph.pytree_out;
  out.expanded_def = aten_graph.expanded_def;
  // A graph with no op that has a decomposition comes back as it is, without
  // a copy of every node on the way (a 200,000-node graph spent a second here).
  const bool any_candidate = std::any_of(aten_graph.nodes.begin(), aten_graph.nodes.end(), [&](const Node& n) {
    return n.op == OpKind::CallFunction && candidate(n.target, keep_whole);
  });
  if (!any_candidate) {
    if (decomposed_nodes) *decomposed_nodes = 0;
    return aten_graph;
  }
  Rewriter r(aten_graph, out, keep_whole);
  std::string lines;
  try {
    r.run(log ? &lines : nullptr);
  } catch (const Error& e) {
    return Status::error(e.what());
  }
  if (log) *log += lines;
  if (decomposed_nodes) *decomposed_nodes = r.replaced();
  if (r.applied() == 0) return aten_graph;
  return out;
}

}  // namespace kiln::decomp
