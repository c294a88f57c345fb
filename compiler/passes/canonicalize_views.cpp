#include "compiler/passes/canonicalize_views.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "compiler/passes/graph_editor.h"
#include "compiler/passes/op_properties.h"
#include "core/ops/registry.h"

namespace kiln::pipeline {

namespace {

constexpr std::string_view kView = "aten::view.default";
constexpr std::string_view kReshape = "aten::reshape.default";
constexpr std::string_view kUnsafeView = "aten::_unsafe_view.default";
constexpr std::string_view kPermute = "aten::permute.default";

bool is_reshape_like(const Node& n) {
  return n.op == OpKind::CallFunction && (n.target == kView || n.target == kReshape || n.target == kUnsafeView);
}

std::optional<int64_t> int_arg(const Arg& a) {
  if (a.kind != Arg::Kind::Int || !a.s.empty()) return std::nullopt;
  return a.i;
}

class ViewCanonicalizer {
 public:
  ViewCanonicalizer(Graph& g, const PassContext& ctx) : g_(g), ed_(g, ctx.constants) {}

  PassResult run() {
    const size_t n = g_.size();
    for (size_t i = 0; i < n; ++i) {
      const Node& node = g_.nodes[i];
      if (node.op != OpKind::CallFunction || node.args.empty() || !node.args[0].is_node()) continue;
      NodeId id = NodeId(i);
      if (is_reshape_like(node)) reshape(id);
      else if (permutation(id)) permute(id);
      else if (node.target == "aten::expand.default") expand(id);
      else if (node.target == "aten::alias.default" && node.args.size() == 1) forward(id, input(id));
    }
    if (!ed_.commit()) return {};
    return {true, "rewrote " + std::to_string(rewrites_) + (rewrites_ == 1 ? " view" : " views")};
  }

 private:
  NodeId input(NodeId id) const { return ed_.resolve(g_[id].args[0].node_id()); }

  void forward(NodeId id, NodeId to) {
    ed_.replace_uses(id, to);
    ++rewrites_;
  }

  // `collapsed`: the inner view folded into this one, kNoNode when none; the
  // new node names both as its origins.
  void emit(NodeId id, NodeId collapsed, std::string_view op, NodeId source, std::vector<int64_t> arg) {
    std::vector<NodeId> origins{id};
    if (collapsed != kNoNode) origins.push_back(collapsed);
    GraphEmitter& em = ed_.emit_before(id, origins);
    Var in = ed_.var(source);
    KILN_CHECK(in.valid(), "a view source without a meta tensor");
    ed_.replace_uses(id, em.node(em.call1(op, {in, EArg(arg)})));
    ++rewrites_;
  }

  bool viewable(NodeId source, const Shape& sizes) const {
    const Tensor* m = ed_.meta(source);
    return m && call_meta(kView, {Value(*m), Value::int_list(sizes)}).ok();
  }

  void reshape(NodeId id) {
    const Tensor* out = ed_.meta(id);
    NodeId x = input(id);
    const Tensor* in = ed_.meta(x);
    if (!out || !in) return;
    if (out->sizes() == in->sizes()) return forward(id, x);
    NodeId source = x;
    if (is_reshape_like(g_[x]) && g_[x].args[0].is_node()) source = ed_.resolve(g_[x].args[0].node_id());
    const Tensor* src = ed_.meta(source);
    if (!src) return;
    if (source != x && out->sizes() == src->sizes()) return forward(id, source);
    bool view = viewable(source, out->sizes());
    // Without a chain to collapse, a view and an _unsafe_view (AOT marks
    // results of copies with it) are canonical; a reshape is when it cannot be a view.
    if (source == x && (g_[id].target != kReshape || !view)) return;
    emit(id, source == x ? kNoNode : x, view ? kView : kReshape, source, out->sizes());
  }

  // The dims of a t / transpose / permute node, wrapped; nullopt for other nodes.
  std::optional<std::vector<int64_t>> permutation(NodeId id) const {
    const Node& n = g_[id];
    if (n.target != "aten::t.default" && n.target != "aten::transpose.int" && n.target != kPermute) return std::nullopt;
    const Tensor* in = ed_.meta(input(id));
    if (!in) return std::nullopt;
    int64_t rank = in->dim();
    std::vector<int64_t> dims(static_cast<size_t>(rank));
    std::iota(dims.begin(), dims.end(), 0);
    auto wrapped = [&](const Arg& a) -> std::optional<size_t> {
      std::optional<int64_t> d = int_arg(a);
      if (!d || *d < -std::max<int64_t>(rank, 1) || *d >= std::max<int64_t>(rank, 1)) return std::nullopt;
      return size_t(*d < 0 ? *d + rank : *d);
    };
    if (n.target == "aten::t.default") {
      if (n.args.size() != 1 || rank > 2) return std::nullopt;
      std::reverse(dims.begin(), dims.end());
    } else if (n.target == "aten::transpose.int") {
      if (n.args.size() != 3 || !n.kwargs.empty()) return std::nullopt;
      auto d0 = wrapped(n.args[1]), d1 = wrapped(n.args[2]);
      if (!d0 || !d1 || rank == 0) return std::nullopt;
      std::swap(dims[*d0], dims[*d1]);
    } else {
      if (n.args.size() != 2 || n.args[1].kind != Arg::Kind::List || n.args[1].items.size() != size_t(rank))
        return std::nullopt;
      std::vector<bool> used(size_t(rank), false);
      for (size_t i = 0; i < dims.size(); ++i) {
        auto d = wrapped(n.args[1].items[i]);
        if (!d || used[*d]) return std::nullopt;
        used[*d] = true;
        dims[i] = int64_t(*d);
      }
    }
    return dims;
  }

  void permute(NodeId id) {
    std::vector<int64_t> dims = *permutation(id);
    NodeId source = input(id), collapsed = kNoNode;
    if (std::optional<std::vector<int64_t>> inner = g_[source].op == OpKind::CallFunction ? permutation(source) : std::nullopt) {
      // out[i] = mid[dims[i]] = source[inner[dims[i]]]
      for (int64_t& d : dims) d = (*inner)[size_t(d)];
      collapsed = source;
      source = input(source);
    }
    bool identity = true;
    for (size_t i = 0; i < dims.size(); ++i) identity = identity && dims[i] == int64_t(i);
    if (identity) return forward(id, source);
    const Node& n = g_[id];
    if (source == input(id) && n.target == kPermute && n.args[1].items.size() == dims.size()) {
      bool same = true;
      for (size_t i = 0; i < dims.size(); ++i) same = same && int_arg(n.args[1].items[i]) == dims[i];
      if (same) return;
    }
    emit(id, collapsed, kPermute, source, dims);
  }

  void expand(NodeId id) {
    const Tensor* out = ed_.meta(id);
    NodeId x = input(id);
    const Tensor* in = ed_.meta(x);
    if (out && in && out->sizes() == in->sizes()) forward(id, x);
  }

  Graph& g_;
  GraphEditor ed_;
  size_t rewrites_ = 0;
};

}  // namespace

PassResult canonicalize_views(Graph& g, const PassContext& ctx) {
  if (graph_has_mutation(g)) return {};
  return ViewCanonicalizer(g, ctx).run();
}

}  // namespace kiln::pipeline
