#include "compiler/passes/fuse_attention.h"

#include <cmath>
#include <limits>
#include <optional>

#include "compiler/decomp/decomp_util.h"
#include "compiler/passes/graph_editor.h"
#include "compiler/passes/op_properties.h"

namespace kiln::pipeline {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::optional<double> number(const Arg& a) {
  if (a.kind == Arg::Kind::Float) return a.f;
  if (a.kind == Arg::Kind::Int) return double(a.i);
  return std::nullopt;
}

std::optional<int64_t> int_arg(const Node& n, size_t i, int64_t fallback) {
  if (i >= n.args.size()) return fallback;
  if (n.args[i].kind != Arg::Kind::Int) return std::nullopt;
  return n.args[i].i;
}

NodeId node_arg(const Node& n, size_t i) { return i < n.args.size() && n.args[i].is_node() ? n.args[i].node_id() : kNoNode; }

std::vector<int64_t> int_list(const Arg& a) {
  std::vector<int64_t> v;
  if (a.kind != Arg::Kind::List && a.kind != Arg::Kind::Tuple) return v;
  for (const Arg& x : a.items) {
    if (x.kind != Arg::Kind::Int) return {};
    v.push_back(x.i);
  }
  return v;
}

int64_t wrap4(int64_t d) { return d < 0 ? d + 4 : d; }

// One match: the nodes it replaces and what the fused op needs.
struct AttentionMatch {
  std::vector<NodeId> chain;  // root first: the nodes the fused op stands for
  NodeId q = kNoNode, k = kNoNode, v = kNoNode;
  NodeId bool_mask = kNoNode;  // masked (to -inf) where true
  NodeId additive = kNoNode;
  bool causal = false;
  double scale = 1;
};

class Matcher {
 public:
  Matcher(const Graph& g, const GraphEditor& ed) : g_(g), ed_(ed), users_(compute_users(g)) {}

  // The chain ending at `root` (the second matmul), or nullopt.
  std::optional<AttentionMatch> match(NodeId root) {
    const Node& r = g_[root];
    if (r.target != "aten::matmul.default" || r.args.size() != 2 || !r.kwargs.empty()) return std::nullopt;
    AttentionMatch m;
    m.chain.push_back(root);
    m.v = node_arg(r, 1);
    NodeId p = through_casts(node_arg(r, 0), root, m);
    if (p == kNoNode || !softmax_over_last(g_[p]) || !only_reader(p, m.chain.back())) return std::nullopt;
    m.chain.push_back(p);
    NodeId x = through_casts(node_arg(g_[p], 0), p, m);
    if (x == kNoNode) return std::nullopt;
    x = through_mask(x, m);
    if (x == kNoNode) return std::nullopt;
    x = through_scale(x, m);
    if (x == kNoNode || !scores(x, m)) return std::nullopt;
    if (!types_agree(root, x, m)) return std::nullopt;
    return m;
  }

 private:
  bool only_reader(NodeId id, NodeId reader) const {
    return users_[size_t(id)].size() == 1 && users_[size_t(id)][0] == reader;
  }

  // Steps over float-to-float casts read only by the chain; returns the node below them.
  NodeId through_casts(NodeId id, NodeId reader, AttentionMatch& m) const {
    while (id != kNoNode && float_cast(g_[id])) {
      if (!only_reader(id, reader)) return kNoNode;
      m.chain.push_back(id);
      reader = id;
      id = node_arg(g_[id], 0);
    }
    return id;
  }

  bool float_cast(const Node& n) const {
    const Tensor* t = n.args.empty() || !n.args[0].is_node() ? nullptr : ed_.meta(n.args[0].node_id());
    if (!t || !is_floating(t->dtype())) return false;
    if (n.target == "aten::to.dtype") return n.args.size() >= 2 && n.args[1].kind == Arg::Kind::DType && !n.args[1].s.empty() &&
                                             n.args[1].s != "bool" && n.args[1].s.find("int") == std::string::npos;
    if (n.target != "aten::_to_copy.default" || n.args.size() != 1) return false;
    for (const auto& [name, a] : n.kwargs)
      if (name != "dtype" && !a.is_none()) return false;
    return true;
  }

  bool softmax_over_last(const Node& n) const {
    if (n.target == "aten::softmax.int") {
      if (n.args.size() > 2 && !n.args[2].is_none()) return false;
      for (const auto& kv : n.kwargs)
        if (!kv.second.is_none()) return false;
    } else if (n.target == "aten::_softmax.default") {
      if (n.args.size() != 3 || n.args[2].kind != Arg::Kind::Bool || n.args[2].b) return false;
    } else {
      return false;
    }
    std::optional<int64_t> dim = int_arg(n, 1, 0);
    return dim && wrap4(*dim) == 3;
  }

  // An optional mask between the softmax and the scaled scores.
  NodeId through_mask(NodeId x, AttentionMatch& m) const {
    const Node& n = g_[x];
    const NodeId reader = m.chain.back();
    if (n.target == "aten::masked_fill.Scalar" && n.args.size() == 3) {
      std::optional<double> fill = number(n.args[2]);
      if (!fill || *fill != -kInf || !only_reader(x, reader)) return kNoNode;
      m.bool_mask = node_arg(n, 1);
      m.chain.push_back(x);
      return node_arg(n, 0);
    }
    if (n.target == "aten::add.Tensor" && n.args.size() == 2) {
      for (const auto& [name, a] : n.kwargs)
        if (name != "alpha" || number(a) != 1.0) return kNoNode;
      if (!only_reader(x, reader)) return kNoNode;
      // The scores side is the one whose chain reaches the first matmul (the
      // mask may itself be scaled: add(mask * -1e4, scores)).
      const bool first = reaches_scores(node_arg(n, 0), x);
      m.additive = node_arg(n, first ? 1 : 0);
      m.chain.push_back(x);
      return node_arg(n, first ? 0 : 1);
    }
    return x;
  }

  // Whether `id` (read by `reader`) is matmul(., transpose) under at most one scale, read only by the chain.
  bool reaches_scores(NodeId id, NodeId reader) const {
    for (int depth = 0; depth < 2 && id != kNoNode && only_reader(id, reader); ++depth) {
      const Node& n = g_[id];
      if (n.target == "aten::matmul.default") return true;
      if (n.target != "aten::mul.Scalar" && n.target != "aten::div.Scalar") return false;
      reader = id;
      id = node_arg(n, 0);
    }
    return false;
  }

  NodeId through_scale(NodeId x, AttentionMatch& m) const {
    const Node& n = g_[x];
    const bool mul = n.target == "aten::mul.Scalar", div = n.target == "aten::div.Scalar";
    if (!mul && !div) return x;
    std::optional<double> c = n.args.size() == 2 && n.kwargs.empty() ? number(n.args[1]) : std::nullopt;
    if (!c || *c == 0 || !std::isfinite(*c) || !only_reader(x, m.chain.back())) return kNoNode;
    m.scale = mul ? *c : 1.0 / *c;
    m.chain.push_back(x);
    return node_arg(n, 0);
  }

  // matmul(q, k^T) with k^T a transpose of k's last two dims.
  bool scores(NodeId s, AttentionMatch& m) const {
    const Node& n = g_[s];
    if (n.target != "aten::matmul.default" || n.args.size() != 2 || !only_reader(s, m.chain.back())) return false;
    m.chain.push_back(s);
    m.q = node_arg(n, 0);
    NodeId kt = node_arg(n, 1);
    if (m.q == kNoNode || kt == kNoNode) return false;
    const Node& t = g_[kt];
    if (t.target == "aten::transpose.int" && t.args.size() == 3) {
      std::optional<int64_t> a = int_arg(t, 1, 0), b = int_arg(t, 2, 0);
      if (!a || !b || std::min(wrap4(*a), wrap4(*b)) != 2 || std::max(wrap4(*a), wrap4(*b)) != 3) return false;
    } else if (t.target == "aten::permute.default" && t.args.size() == 2) {
      if (int_list(t.args[1]) != std::vector<int64_t>{0, 1, 3, 2}) return false;
    } else {
      return false;
    }
    m.k = node_arg(t, 0);
    return m.k != kNoNode;
  }

  // 4-D q [B, H, L, E], k [B, H, S, E], v [B, H, S, Ev] of one dtype, no broadcasting
  // in the matmuls, and a mask that broadcasts to the scores [B, H, L, S].
  bool types_agree(NodeId root, NodeId s, AttentionMatch& m) const {
    const Tensor *q = ed_.meta(m.q), *k = ed_.meta(m.k), *v = ed_.meta(m.v), *out = ed_.meta(root),
                 *sc = ed_.meta(s);
    if (!q || !k || !v || !out || !sc) return false;
    const DType dt = q->dtype();
    if (dt != DType::Float16 && dt != DType::BFloat16 && dt != DType::Float32) return false;
    if (k->dtype() != dt || v->dtype() != dt || out->dtype() != dt || sc->dtype() != dt) return false;
    const Shape &qs = q->sizes(), &ks = k->sizes(), &vs = v->sizes();
    if (qs.size() != 4 || ks.size() != 4 || vs.size() != 4) return false;
    if (ks[0] != qs[0] || ks[1] != qs[1] || vs[0] != qs[0] || vs[1] != qs[1] || ks[3] != qs[3] || vs[2] != ks[2])
      return false;
    if (out->sizes() != Shape{qs[0], qs[1], qs[2], vs[3]}) return false;
    const Shape scores_shape{qs[0], qs[1], qs[2], ks[2]};
    if (sc->sizes() != scores_shape) return false;
    const NodeId mask = m.bool_mask != kNoNode ? m.bool_mask : m.additive;
    if (mask == kNoNode) return true;
    const Tensor* mt = ed_.meta(mask);
    if (!mt || mt->sizes().size() > 4) return false;
    if (m.bool_mask != kNoNode ? mt->dtype() != DType::Bool : mt->dtype() != dt) return false;
    const Shape& ms = mt->sizes();
    for (size_t i = 0; i < ms.size(); ++i)
      if (ms[i] != 1 && ms[i] != scores_shape[4 - ms.size() + i]) return false;
    if (m.bool_mask != kNoNode) m.causal = causal_mask(m.bool_mask, qs[2], ks[2]);
    return true;
  }

  bool ones_of(NodeId id, int64_t l, int64_t s) const {
    if (id == kNoNode) return false;
    const Node& n = g_[id];
    return n.target == "aten::ones.default" && !n.args.empty() && int_list(n.args[0]) == std::vector<int64_t>{l, s};
  }

  // logical_not(tril(ones(L, S))) or triu(ones(L, S), 1): masked exactly where key > query.
  bool causal_mask(NodeId id, int64_t l, int64_t s) const {
    const Node& n = g_[id];
    if (n.target == "aten::logical_not.default") {
      NodeId t = node_arg(n, 0);
      if (t == kNoNode || g_[t].target != "aten::tril.default" || int_arg(g_[t], 1, 0) != 0) return false;
      return ones_of(node_arg(g_[t], 0), l, s);
    }
    if (n.target == "aten::triu.default") return int_arg(n, 1, 0) == 1 && ones_of(node_arg(n, 0), l, s);
    return false;
  }

  const Graph& g_;
  const GraphEditor& ed_;
  std::vector<std::vector<NodeId>> users_;
};

void emit_fused(GraphEditor& ed, const AttentionMatch& m) {
  const NodeId root = m.chain.front();
  GraphEmitter& em = ed.emit_before(root, m.chain);
  Var q = ed.var(m.q), k = ed.var(m.k), v = ed.var(m.v);
  const Shape qs = em.sizes(q), ks = em.sizes(k);
  const Shape scores{qs[0], qs[1], qs[2], ks[2]};
  EArg bias = EArg::none();
  if (m.additive != kNoNode) {
    bias = decomp::expand(em, ed.var(m.additive), scores);
  } else if (m.bool_mask != kNoNode && !m.causal) {
    Var mask = ed.var(m.bool_mask);
    Var zeros = decomp::full(em, em.sizes(mask), 0.0, em.dtype(q));
    bias = decomp::expand(em, decomp::where_scalar_then(em, mask, -kInf, zeros), scores);
  }
  std::vector<Var> outs = em.call("aten::_scaled_dot_product_efficient_attention.default",
                                  {q, k, v, bias, true, 0.0, m.causal}, {{"scale", m.scale}});
  // The kernel's output is [B, L, H, Ev] in memory; readers were traced against the matmul's layout.
  Var out = em.call1("aten::clone.default", {outs[0]}, {{"memory_format", "contiguous_format"}});
  ed.replace_uses(root, ed.node(out));
}

}  // namespace

PassResult fuse_attention(Graph& g, const PassContext& ctx) {
  if (graph_has_mutation(g)) return {};
  GraphEditor ed(g, ctx.constants);
  Matcher matcher(g, ed);
  size_t fused = 0, causal = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    std::optional<AttentionMatch> m = matcher.match(NodeId(i));
    if (!m) continue;
    // The matched nodes are each read once, by the chain: two matches cannot share one.
    emit_fused(ed, *m);
    ++fused;
    causal += m->causal;
  }
  if (fused == 0 || !ed.commit()) return {};
  return {true, "fused " + std::to_string(fused) + " attention(s) into _scaled_dot_product_efficient_attention" +
                    (causal ? " (" + std::to_string(causal) + " causal)" : "")};
}

}  // namespace kiln::pipeline
