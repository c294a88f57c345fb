#include "compiler/aot/partition.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <set>

#include "compiler/passes/op_properties.h"
#include "compiler/pipeline/emitter.h"
#include "core/tensor/dtype.h"
#include "core/util/status.h"

namespace kiln::aot {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

int64_t node_bytes(const Node& n) {
  if (!n.meta.val.is_tensor()) return 0;
  const TensorMeta& m = n.meta.val.tensor;
  int64_t numel = 1;
  for (const SymInt& s : m.sizes) numel *= s.value;
  std::optional<DType> dt = dtype_from_name(m.dtype);
  return numel * int64_t(dt ? element_size(*dt) : 4);
}

// The joint graph's shape: where the primals, tangents and outputs are.
struct JointView {
  const JointGraph& j;
  const Graph& g;
  std::vector<NodeId> primals, tangents;
  std::vector<Arg> forward_outputs, grad_outputs;
  std::vector<Arg> forward_effects;  // in-place writes the forward must make though nothing reads them
  std::vector<std::string> grad_descs;
  std::vector<std::vector<NodeId>> users;
  std::vector<bool> tangent_dependent;

  explicit JointView(const JointGraph& joint) : j(joint), g(joint.graph), users(compute_users(joint.graph)) {
    for (size_t i = 0; i < g.size(); ++i)
      if (g.nodes[i].op == OpKind::Placeholder)
        (primals.size() < j.num_primals ? primals : tangents).push_back(NodeId(i));
    const Node* out = g.output();
    KILN_CHECK(out && !out->args.empty(), "joint graph without output");
    const std::vector<Arg>& items = out->args[0].items;
    KILN_CHECK(items.size() == j.num_forward_outputs + j.num_primals, "joint output has ", items.size(), " entries");
    forward_outputs.assign(items.begin(), items.begin() + std::ptrdiff_t(j.num_forward_outputs));
    grad_outputs.assign(items.begin() + std::ptrdiff_t(j.num_forward_outputs), items.end());
    // A joint graph read from a trace may carry fewer descriptions than outputs.
    if (out->meta.output_descs.size() > j.num_forward_outputs)
      grad_descs.assign(out->meta.output_descs.begin() + std::ptrdiff_t(j.num_forward_outputs), out->meta.output_descs.end());
    grad_descs.resize(j.num_primals);
    tangent_dependent.assign(g.size(), false);
    for (NodeId t : tangents) tangent_dependent[size_t(t)] = true;
    for (size_t i = 0; i < g.size(); ++i)
      if (g.nodes[i].op == OpKind::CallFunction)
        for_each_input(g.nodes[i], [&](NodeId in) {
          if (tangent_dependent[size_t(in)]) tangent_dependent[i] = true;
        });
    // Writes nothing reads (PyTorch's trailing copy_ of running statistics
    // into their buffers) still belong to the forward.
    for (size_t i = 0; i < g.size(); ++i)
      if (g.nodes[i].op == OpKind::CallFunction && !tangent_dependent[i] && pipeline::writes_an_input(g.nodes[i]))
        forward_effects.push_back(Arg::node(NodeId(i)));
  }

  // Nodes `roots` read, transitively, not walking past nodes `stop` marks.
  std::vector<bool> ancestors(const std::vector<Arg>& roots, const std::vector<bool>* stop = nullptr) const {
    std::vector<bool> seen(g.size(), false);
    std::vector<NodeId> work;
    for (const Arg& r : roots) for_each_node_ref(r, [&](NodeId id) { work.push_back(id); });
    while (!work.empty()) {
      NodeId id = work.back();
      work.pop_back();
      if (seen[size_t(id)]) continue;
      seen[size_t(id)] = true;
      if (stop && (*stop)[size_t(id)]) continue;
      for_each_input(g[id], [&](NodeId in) { work.push_back(in); });
    }
    return seen;
  }

  // What the forward must compute for its own outputs: their ancestors, every
  // primal, and the getitems of multi-output nodes among them (so a saved
  // value is always a tensor, never a tuple).
  std::vector<bool> forward_required() const {
    std::vector<Arg> roots = forward_outputs;
    roots.insert(roots.end(), forward_effects.begin(), forward_effects.end());
    std::vector<bool> fw = ancestors(roots);
    for (NodeId p : primals) fw[size_t(p)] = true;
    for (size_t i = 0; i < g.size(); ++i) {
      const Node& n = g.nodes[i];
      if (n.op == OpKind::CallFunction && n.target == "operator.getitem" && fw[size_t(n.args.at(0).node_id())] &&
          !tangent_dependent[i])
        fw[i] = true;
    }
    return fw;
  }
  // Whether the gradient outputs read node `id` directly.
  bool read_by_grad_outputs(NodeId id) const {
    bool hit = false;
    for (const Arg& a : grad_outputs) for_each_node_ref(a, [&](NodeId r) { hit = hit || r == id; });
    return hit;
  }
};

Arg remap(const Arg& a, const std::map<NodeId, NodeId>& to) {
  Arg b = a;
  if (a.is_node()) {
    auto it = to.find(a.node_id());
    KILN_CHECK(it != to.end(), "partition: a node reads a value its graph does not hold");
    b.i = it->second;
  }
  for (Arg& item : b.items) item = remap(item, to);
  return b;
}

NodeId copy_node(Graph& dst, const Node& n, std::map<NodeId, NodeId>& to, NodeId old_id) {
  Node c = n;
  for (Arg& a : c.args) a = remap(a, to);
  for (auto& kv : c.kwargs) kv.second = remap(kv.second, to);
  NodeId id = dst.add(std::move(c));
  to[old_id] = id;
  return id;
}

void add_output(Graph& dst, std::vector<Arg> items, std::vector<std::string> descs, const std::map<NodeId, NodeId>& to) {
  Node out;
  out.op = OpKind::Output;
  out.name = "output";
  out.target = "output";
  for (Arg& a : items) a = remap(a, to);
  out.args = {Arg::tuple(std::move(items))};
  out.meta.output_descs = std::move(descs);
  dst.add(std::move(out));
}

// Builds both graphs once the saved values are chosen. The forward computes
// its outputs and the saved values; the backward computes the gradients from
// the saved values and the tangents, recomputing whatever else it needs.
Partition extract(const JointView& v, const std::vector<bool>& saved) {
  const Graph& g = v.g;
  Partition p;
  p.num_forward_outputs = v.j.num_forward_outputs;
  std::vector<Arg> fw_roots = v.forward_outputs;
  fw_roots.insert(fw_roots.end(), v.forward_effects.begin(), v.forward_effects.end());
  for (size_t i = 0; i < g.size(); ++i)
    if (saved[i]) fw_roots.push_back(Arg::node(NodeId(i)));
  std::vector<bool> fw = v.ancestors(fw_roots);
  std::vector<bool> stop = saved;
  for (NodeId t : v.tangents) stop[size_t(t)] = true;
  std::vector<bool> bw = v.ancestors(v.grad_outputs, &stop);

  p.forward.expanded_def = true;
  std::map<NodeId, NodeId> fmap;
  for (NodeId id : v.primals) copy_node(p.forward, g[id], fmap, id);
  for (size_t i = 0; i < g.size(); ++i)
    if (fw[i] && g.nodes[i].op == OpKind::CallFunction) copy_node(p.forward, g.nodes[i], fmap, NodeId(i));
  std::vector<Arg> fouts = v.forward_outputs;
  std::vector<std::string> fdescs;
  for (size_t k = 0; k < fouts.size(); ++k) fdescs.push_back("PlainAOTOutput(idx=" + std::to_string(k) + ")");
  for (size_t i = 0; i < g.size(); ++i) {
    if (!saved[i]) continue;
    const Node& n = g.nodes[i];
    fdescs.push_back("SavedForBackwardsAOTOutput(idx=" + std::to_string(p.saved.size()) + ")");
    fouts.push_back(Arg::node(NodeId(i)));
    SavedTensor s;
    s.name = n.name;
    s.dtype = n.meta.val.is_tensor() ? n.meta.val.tensor.dtype : "";
    if (n.meta.val.is_tensor())
      for (const SymInt& d : n.meta.val.tensor.sizes) s.sizes.push_back(d.value);
    s.bytes = node_bytes(n);
    p.saved_bytes += s.bytes;
    p.saved.push_back(std::move(s));
  }
  add_output(p.forward, std::move(fouts), std::move(fdescs), fmap);

  p.backward.expanded_def = true;
  std::map<NodeId, NodeId> bmap;
  for (size_t i = 0; i < g.size(); ++i) {
    if (!saved[i]) continue;
    const Node& n = g.nodes[i];
    Node ph;
    ph.op = OpKind::Placeholder;
    ph.name = n.name;
    ph.target = n.name;
    ph.meta.val = n.meta.val;
    ph.meta.stack = n.meta.stack;
    ph.meta.from = {n.name};
    if (n.op == OpKind::Placeholder) ph.meta.desc = n.meta.desc;
    bmap[NodeId(i)] = p.backward.add(std::move(ph));
  }
  for (NodeId t : v.tangents) copy_node(p.backward, g[t], bmap, t);
  for (size_t i = 0; i < g.size(); ++i) {
    const Node& n = g.nodes[i];
    if (!bw[i] || saved[i] || n.op != OpKind::CallFunction) continue;
    copy_node(p.backward, n, bmap, NodeId(i));
    if (fw[i]) p.recomputed.push_back(n.name);
  }
  for (NodeId prim : v.primals)
    KILN_CHECK(!bw[size_t(prim)] || saved[size_t(prim)], "partition: the backward reads primal ", g[prim].name,
               " which is not saved");
  add_output(p.backward, v.grad_outputs, v.grad_descs, bmap);
  return p;
}

// Max-flow by shortest augmenting paths (Edmonds-Karp): the graphs are a few
// hundred nodes at most, so simplicity beats speed here.
class FlowNetwork {
 public:
  explicit FlowNetwork(size_t n) : adj_(n) {}
  void add_edge(size_t from, size_t to, double cap) {
    adj_[from].push_back(edges_.size());
    edges_.push_back({to, cap, 0});
    adj_[to].push_back(edges_.size());
    edges_.push_back({from, 0, 0});
  }
  // The maximum flow; infinity when an uncuttable path joins source and sink.
  double max_flow(size_t s, size_t t) {
    double total = 0;
    for (;;) {
      std::vector<size_t> via(adj_.size(), SIZE_MAX);
      std::deque<size_t> q{s};
      std::vector<bool> seen(adj_.size(), false);
      seen[s] = true;
      while (!q.empty() && !seen[t]) {
        size_t u = q.front();
        q.pop_front();
        for (size_t e : adj_[u])
          if (!seen[edges_[e].to] && residual(e) > 0) {
            seen[edges_[e].to] = true;
            via[edges_[e].to] = e;
            q.push_back(edges_[e].to);
          }
      }
      if (!seen[t]) return total;
      double push = kInf;
      for (size_t x = t; x != s; x = edges_[via[x] ^ 1].to) push = std::min(push, residual(via[x]));
      if (push == kInf) return kInf;
      for (size_t x = t; x != s; x = edges_[via[x] ^ 1].to) {
        edges_[via[x]].flow += push;
        edges_[via[x] ^ 1].flow -= push;
      }
      total += push;
    }
  }
  // Nodes reachable from `s` in the residual network: the source side of a minimum cut.
  std::vector<bool> source_side(size_t s) const {
    std::vector<bool> seen(adj_.size(), false);
    std::vector<size_t> work{s};
    seen[s] = true;
    while (!work.empty()) {
      size_t u = work.back();
      work.pop_back();
      for (size_t e : adj_[u])
        if (!seen[edges_[e].to] && residual(e) > 0) {
          seen[edges_[e].to] = true;
          work.push_back(edges_[e].to);
        }
    }
    return seen;
  }

 private:
  struct Edge {
    size_t to;
    double cap, flow;
  };
  double residual(size_t e) const { return edges_[e].cap == kInf ? kInf : edges_[e].cap - edges_[e].flow; }
  std::vector<std::vector<size_t>> adj_;
  std::vector<Edge> edges_;
};

}  // namespace

bool is_recomputable(const std::string& op) {
  if (op == "operator.getitem") return true;
  // Pointwise ops, views and constants: cheap to run again, and a fused
  // kernel recomputes them for free. Random ops are absent on purpose
  // (recomputing them would draw new numbers).
  static const std::set<std::string> ops = {
      "abs", "add", "sub", "rsub", "mul", "div", "neg", "exp", "exp2", "expm1", "log", "log1p", "log2", "sin", "cos",
      "tan", "tanh", "sigmoid", "relu", "gelu", "silu", "mish", "hardtanh", "hardsigmoid", "hardswish", "leaky_relu",
      "elu", "softplus", "sqrt", "rsqrt", "reciprocal", "pow", "square", "sign", "erf", "clamp", "clamp_min",
      "clamp_max", "minimum", "maximum", "where", "masked_fill", "le", "lt", "gt", "ge", "eq", "ne", "logical_not",
      "logical_and", "logical_or", "bitwise_not", "_to_copy", "to", "clone", "alias", "view", "reshape",
      "_unsafe_view", "permute", "t", "transpose", "expand", "unsqueeze", "squeeze", "slice", "select", "detach",
      "full", "full_like", "zeros", "zeros_like", "ones", "ones_like", "scalar_tensor", "lift_fresh_copy"};
  return ops.count(pipeline::aten_base_name(op)) > 0;
}

Partition default_partition(const JointGraph& joint) {
  JointView v(joint);
  std::vector<bool> fw = v.forward_required();
  std::vector<bool> bw = v.ancestors(v.grad_outputs);
  std::vector<bool> saved(v.g.size(), false);
  for (size_t i = 0; i < v.g.size(); ++i) {
    if (!fw[i]) continue;
    for (NodeId u : v.users[i]) saved[i] = saved[i] || (bw[size_t(u)] && !fw[size_t(u)]);
    saved[i] = saved[i] || v.read_by_grad_outputs(NodeId(i));
  }
  return extract(v, saved);
}

Partition min_cut_partition(const JointGraph& joint) {
  JointView v(joint);
  const Graph& g = v.g;
  std::vector<bool> fw = v.forward_required();
  std::vector<bool> bw = v.ancestors(v.grad_outputs);
  // Each forward value is an edge in -> out whose capacity is what saving it
  // costs; values that must be computed in the forward hang off the source,
  // backward nodes lead to the sink, and a cut is a set of saved values from
  // which the backward can recompute everything else it reads.
  std::vector<size_t> slot(g.size(), SIZE_MAX);
  size_t count = 2;
  for (size_t i = 0; i < g.size(); ++i) {
    const Node& n = g.nodes[i];
    bool primal = n.op == OpKind::Placeholder && !v.tangent_dependent[i];
    if ((primal || n.op == OpKind::CallFunction) && !v.tangent_dependent[i] && (fw[i] || bw[i])) {
      slot[i] = count;
      count += 2;
    }
  }
  const size_t source = 0, sink = 1;
  FlowNetwork net(count);
  for (size_t i = 0; i < g.size(); ++i) {
    if (slot[i] == SIZE_MAX) continue;
    const Node& n = g.nodes[i];
    size_t in = slot[i], out = slot[i] + 1;
    if (n.op == OpKind::Placeholder || !is_recomputable(n.target)) net.add_edge(source, in, kInf);
    net.add_edge(in, out, n.meta.val.is_tensor() ? double(node_bytes(n)) : kInf);
    for (NodeId u : v.users[i]) {
      if (slot[size_t(u)] != SIZE_MAX)
        net.add_edge(out, slot[size_t(u)], kInf);
      else if (bw[size_t(u)])
        net.add_edge(out, sink, kInf);
    }
    if (v.read_by_grad_outputs(NodeId(i))) net.add_edge(out, sink, kInf);
  }
  // No finite cut means some value the backward needs can be neither saved
  // nor recomputed (a tuple-valued op read directly); saving everything is
  // then the safe answer.
  if (net.max_flow(source, sink) == kInf) return default_partition(joint);
  std::vector<bool> side = net.source_side(source);
  std::vector<bool> saved(g.size(), false);
  for (size_t i = 0; i < g.size(); ++i)
    if (slot[i] != SIZE_MAX) saved[i] = side[slot[i]] && !side[slot[i] + 1];
  return extract(v, saved);
}

std::string describe_saved(const Partition& p) {
  std::string s;
  for (const SavedTensor& t : p.saved) {
    s += t.name + ": " + t.dtype + "[";
    for (size_t k = 0; k < t.sizes.size(); ++k) s += (k ? ", " : "") + std::to_string(t.sizes[k]);
    s += "] (" + std::to_string(t.bytes) + " bytes)\n";
  }
  s += std::to_string(p.saved.size()) + " saved tensors, " + std::to_string(p.saved_bytes) + " bytes\n";
  if (!p.recomputed.empty()) {
    s += "recomputed in backward:";
    for (const std::string& r : p.recomputed) s += " " + r;
    s += "\n";
  }
  return s;
}

}  // namespace kiln::aot
