#include "compiler/passes/functionalize.h"

#include <algorithm>
#include <map>
#include <set>

#include "compiler/passes/graph_editor.h"
#include "compiler/passes/op_properties.h"
#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/emitter.h"
#include "core/ops/registry.h"
#include "core/util/status.h"

namespace kiln::pipeline {

namespace {

// How a view op's write goes back into what it views.
enum class ViewKind {
  None,       // not a view: the node's value is its own base
  Slice,      // slice.Tensor -> slice_scatter with the same arguments
  Select,     // select.int -> select_scatter
  Diagonal,   // diagonal -> diagonal_scatter
  AsStrided,  // as_strided -> as_strided_scatter
  Narrow,     // narrow(dim, start, length) -> slice_scatter(dim, start, start + length)
  Reshape,    // view, reshape, squeeze, unsqueeze, ... -> reshape to the parent's sizes
  Identity,   // alias, detach, contiguous of a contiguous tensor: the value itself
  Transpose,  // transpose(d0, d1) is its own inverse
  Reverse,    // t, numpy_T: reversing the dims is its own inverse
  Permute,    // permute(dims) -> permute(inverse dims)
  Split,      // split/chunk/unbind: a list of views, each read by getitem
  SplitItem,  // getitem of a Split: a slice (or, for unbind, a select) of the split's input
  NoInverse,  // expand, unfold, movedim: readable, not writable
};

constexpr const char* kScatterOf[] = {"", "aten::slice_scatter.default", "aten::select_scatter.default",
                            "aten::diagonal_scatter.default", "aten::as_strided_scatter.default"};

bool meta_contiguous(const Value& v) { return v.is_tensor() && v.to_tensor().is_contiguous(); }

// The bound value of a node's argument `name` (positional, keyword or the schema default).
std::optional<Arg> argument(const Node& n, const OpDef& def, std::string_view name) {
  int idx = def.schema.index_of(name);
  if (idx < 0) return std::nullopt;
  if (size_t(idx) < n.args.size()) return n.args[size_t(idx)];
  for (const auto& [k, a] : n.kwargs)
    if (k == name) return a;
  return std::nullopt;
}

class Functionalizer {
 public:
  explicit Functionalizer(const Graph& in, const ConstantTable* constants)
      : in_(in), in_metas_(compute_node_metas(in, constants)) {
    out_.class_name = in.class_name;
    out_.subgraphs = in.subgraphs;
    out_.pytree_args = in.pytree_args;
    out_.pytree_out = in.pytree_out;
    out_.expanded_def = in.expanded_def;
    for (const Node& n : in.nodes) used_.insert(n.name);
    size_t n = in.size();
    parent_.assign(n, kNoNode);
    kind_.assign(n, ViewKind::None);
    base_.assign(n, kNoNode);
    same_as_.assign(n, kNoNode);
    cur_.assign(n, kNoNode);
    version_.assign(n, 0);
    cache_.assign(n, {-1, kNoNode});
    last_writer_.assign(n, kNoNode);
    copy_of_.assign(n, kNoNode);
  }

  // Rebuilds the graph; false when nothing was made functional.
  bool run() {
    for (size_t i = 0; i < in_.size(); ++i) {
      const Node& n = in_.nodes[i];
      NodeId id = NodeId(i);
      if (n.op == OpKind::Output) {
        Node o = n;
        map_args(o);  // may replay views: before the epilogue, which must be last
        write_back_inputs();
        out_metas_.emplace_back();
        out_.add(std::move(o));
        continue;
      }
      if (n.op == OpKind::CallFunction && writes_an_input(n) && functionalize_write(id)) continue;
      classify(id);
      Node copy = n;
      map_args(copy);
      NodeId made = out_.add(std::move(copy));
      out_metas_.push_back(in_metas_[i]);
      copy_of_[i] = made;
      if (kind_[i] == ViewKind::None) {
        base_[i] = id;
        cur_[i] = made;
      } else {
        base_[i] = base_[size_t(parent_[i])];
        cache_[i] = {version_[size_t(base_[i])], made};
      }
    }
    return writes_ > 0;
  }

  Graph take() { return std::move(out_); }
  std::string summary() const {
    std::string s = std::to_string(writes_) + (writes_ == 1 ? " write" : " writes") + " made functional";
    if (scatters_) s += ", " + std::to_string(scatters_) + " scattered into a base";
    if (replays_) s += ", " + std::to_string(replays_) + (replays_ == 1 ? " view replayed" : " views replayed");
    if (inputs_written_) s += ", " + std::to_string(inputs_written_) + (inputs_written_ == 1 ? " input" : " inputs") + " copied back";
    if (left_) s += "; " + std::to_string(left_) + " mutating call(s) without a functional form left";
    return s;
  }

 private:
  NodeId canonical(NodeId x) const {
    while (same_as_[size_t(x)] != kNoNode) x = same_as_[size_t(x)];
    return x;
  }

  // The new node holding original node x's value at this point of the graph.
  NodeId read(NodeId x) {
    x = canonical(x);
    size_t i = size_t(x);
    KILN_CHECK(base_[i] != kNoNode, "functionalize read node ", in_.nodes[i].name, " before it was made");
    NodeId b = base_[i];
    if (b == x) return cur_[i];
    if (cache_[i].first == version_[size_t(b)]) return cache_[i].second;
    // The base was written since this view was last read: make the view again from the new base.
    const Node& orig = in_.nodes[i];
    Node n = orig;
    map_args(n);
    NodeId made = emit(std::move(n), orig, orig.meta.val, in_metas_[i]);
    ++replays_;
    cache_[i] = {version_[size_t(b)], made};
    return made;
  }

  void map_arg(Arg& a) {
    if (a.is_node()) a.i = read(a.node_id());
    for (Arg& item : a.items) map_arg(item);
  }
  void map_args(Node& n) {
    for (Arg& a : n.args) map_arg(a);
    for (auto& kv : n.kwargs) map_arg(kv.second);
  }

  // FX's naming: the op's base name, then _1, _2, ...; never a Python builtin's name (slice_1, sum_1).
  std::string fresh_name(const std::string& base) {
    static const std::set<std::string, std::less<>> builtins = {"abs", "sum", "max", "min", "pow", "round", "all", "any",
                                                                "slice", "divmod", "input", "id", "hash", "range"};
    std::string name = builtins.count(base) ? base + "_1" : base;
    int& k = next_suffix_[base];
    while (used_.count(name)) name = base + "_" + std::to_string(++k);
    used_.insert(name);
    return name;
  }

  // Appends n (arguments already reading new nodes) with origin's provenance;
  // meta['val'] from the ops' meta functions, else `fallback`.
  NodeId emit(Node n, const Node& origin, const Val& fallback, const Value& fallback_meta) {
    n.name = fresh_name(n.target == "operator.getitem" ? "getitem" : aten_base_name(n.target));
    n.meta = NodeMeta{};
    n.meta.stack = origin.meta.stack;
    n.meta.scope = origin.meta.scope;
    n.meta.from = origin.meta.from;
    Value meta = propagate(n);
    if (meta.is_tensor()) {
      TensorMeta tm = tensor_meta_of(meta.to_tensor());
      tm.device = fallback.is_tensor() ? fallback.tensor.device : "";
      n.meta.val = Val::of_tensor(std::move(tm));
    } else {
      n.meta.val = fallback;
      if (meta.is_none()) meta = fallback_meta;
    }
    out_metas_.push_back(std::move(meta));
    return out_.add(std::move(n));
  }

  Value propagate(const Node& n) const {
    auto lookup = [this](NodeId id) -> std::optional<Value> {
      const Value& v = out_metas_[size_t(id)];
      if (v.is_none()) return std::nullopt;
      return v;
    };
    if (n.target == "operator.getitem") {
      if (n.args.size() == 2 && n.args[0].is_node() && n.args[1].kind == Arg::Kind::Int) {
        const Value& list = out_metas_[size_t(n.args[0].node_id())];
        if (list.is_list() && n.args[1].i >= 0 && size_t(n.args[1].i) < list.to_list().size())
          return list.to_list()[size_t(n.args[1].i)];
      }
      return Value();
    }
    if (!op_registry().find(n.target)) return Value();
    ValueList args;
    KwargList kwargs;
    for (const Arg& a : n.args) {
      Expected<Value> v = arg_value(a, lookup);
      if (!v) return Value();
      args.push_back(std::move(*v));
    }
    for (const auto& [k, a] : n.kwargs) {
      Expected<Value> v = arg_value(a, lookup);
      if (!v) return Value();
      kwargs.emplace_back(k, std::move(*v));
    }
    Expected<ValueList> r = call_meta(n.target, args, kwargs);
    if (!r) return Value();
    return r->size() == 1 ? (*r)[0] : Value(std::move(*r));
  }

  NodeId call(std::string target, std::vector<Arg> args, std::vector<std::pair<std::string, Arg>> kwargs,
              const Node& origin, const Val& fallback, const Value& fallback_meta) {
    Node n;
    n.op = OpKind::CallFunction;
    n.target = std::move(target);
    n.args = std::move(args);
    n.kwargs = std::move(kwargs);
    return emit(std::move(n), origin, fallback, fallback_meta);
  }

  // Decides whether original node id is a view and of what.
  void classify(NodeId id) {
    size_t i = size_t(id);
    const Node& n = in_.nodes[i];
    if (n.op != OpKind::CallFunction || n.args.empty() || !n.args[0].is_node()) return;
    NodeId self = canonical(n.args[0].node_id());
    if (n.target == "operator.getitem") {
      if (kind_[size_t(self)] == ViewKind::Split) kind_[i] = ViewKind::SplitItem, parent_[i] = self;
      return;
    }
    const OpDef* def = op_registry().find(n.target);
    if (!def || def->schema.args.empty()) return;
    const std::string full = def->schema.full_name();
    const Value& in_meta = in_metas_[size_t(self)];
    ViewKind k = ViewKind::None;
    static const std::map<std::string, ViewKind, std::less<>> kinds = {
        {"aten::slice.Tensor", ViewKind::Slice},
        {"aten::select.int", ViewKind::Select},
        {"aten::diagonal.default", ViewKind::Diagonal},
        {"aten::as_strided.default", ViewKind::AsStrided},
        {"aten::narrow.default", ViewKind::Narrow},
        {"aten::view.default", ViewKind::Reshape},
        {"aten::_unsafe_view.default", ViewKind::Reshape},  // a view in Kiln's kernels, so writes reach the base
        {"aten::_reshape_alias.default", ViewKind::Reshape},
        {"aten::view_as.default", ViewKind::Reshape},
        {"aten::squeeze.default", ViewKind::Reshape},
        {"aten::squeeze.dim", ViewKind::Reshape},
        {"aten::squeeze.dims", ViewKind::Reshape},
        {"aten::unsqueeze.default", ViewKind::Reshape},
        {"aten::alias.default", ViewKind::Identity},
        {"aten::detach.default", ViewKind::Identity},
        {"aten::lift_fresh.default", ViewKind::Identity},
        {"aten::positive.default", ViewKind::Identity},
        {"aten::transpose.int", ViewKind::Transpose},
        {"aten::swapaxes.default", ViewKind::Transpose},
        {"aten::swapdims.default", ViewKind::Transpose},
        {"aten::t.default", ViewKind::Reverse},
        {"aten::numpy_T.default", ViewKind::Reverse},
        {"aten::permute.default", ViewKind::Permute},
        {"aten::split.Tensor", ViewKind::Split},
        {"aten::split.sizes", ViewKind::Split},
        {"aten::split_with_sizes.default", ViewKind::Split},
        {"aten::chunk.default", ViewKind::Split},
        {"aten::unbind.int", ViewKind::Split},
        {"aten::tensor_split.sections", ViewKind::Split},
        {"aten::tensor_split.indices", ViewKind::Split},
        {"aten::tensor_split.tensor_indices_or_sections", ViewKind::Split},
    };
    if (auto it = kinds.find(full); it != kinds.end()) {
      k = it->second;
    } else if (full == "aten::reshape.default" || full == "aten::flatten.using_ints" || full == "aten::ravel.default" ||
               full == "aten::unflatten.int") {
      // A view exactly when the eager kernel can view; contiguous input always can.
      if (meta_contiguous(in_meta)) k = ViewKind::Reshape;
    } else if (full == "aten::contiguous.default") {
      if (meta_contiguous(in_meta)) k = ViewKind::Identity;
    } else if (full.starts_with("aten::to.")) {
      std::optional<Arg> copy = argument(n, *def, "copy");
      bool forced_copy = copy && copy->kind == Arg::Kind::Bool && copy->b;
      const Value& out_meta = in_metas_[i];
      if (!forced_copy && in_meta.is_tensor() && out_meta.is_tensor() &&
          in_meta.to_tensor().dtype() == out_meta.to_tensor().dtype())
        k = ViewKind::Identity;
    } else if (def->schema.args[0].is_alias && !def->schema.args[0].is_write) {
      k = ViewKind::NoInverse;
    }
    if (k == ViewKind::None) return;
    kind_[i] = k;
    parent_[i] = self;
  }

  // Replaces an in-place or out= call; false when it has no functional form.
  bool functionalize_write(NodeId id) {
    const Node& m = in_.nodes[size_t(id)];
    std::string twin;
    Node call_node = m;
    NodeId written = kNoNode;
    if (std::optional<std::string> t = inplace_functional_twin(m.target)) {
      if (m.args.empty() || !m.args[0].is_node()) return leave();
      twin = *t;
      written = m.args[0].node_id();
    } else if (is_out_overload(m.target)) {
      auto out = std::find_if(call_node.kwargs.begin(), call_node.kwargs.end(),
                              [](const auto& kv) { return kv.first == "out"; });
      if (out == call_node.kwargs.end() || !out->second.is_node()) return leave();
      written = out->second.node_id();
      call_node.kwargs.erase(out);
    } else {
      return leave();
    }
    written = canonical(written);
    map_args(call_node);
    if (!twin.empty() && is_view_op(twin)) return functionalize_inplace_view(id, m, std::move(call_node), written, twin);
    if (twin.empty()) {
      // Which functional overload: the one the arguments fit, judged on their metas.
      auto lookup = [this](NodeId nid) -> std::optional<Value> {
        const Value& v = out_metas_[size_t(nid)];
        if (v.is_none()) return std::nullopt;
        return v;
      };
      ValueList args;
      KwargList kwargs;
      for (const Arg& a : call_node.args) {
        Expected<Value> v = arg_value(a, lookup);
        if (!v) return leave();
        args.push_back(std::move(*v));
      }
      for (const auto& [k, a] : call_node.kwargs) {
        Expected<Value> v = arg_value(a, lookup);
        if (!v) return leave();
        kwargs.emplace_back(k, std::move(*v));
      }
      Expected<std::string> overload = out_functional_overload(m.target, args, kwargs);
      if (!overload) return leave();
      twin = *overload;
    }
    const Node& target_node = in_.nodes[size_t(written)];
    const Value& target_meta = in_metas_[size_t(written)];
    call_node.target = twin;
    NodeId value = emit(std::move(call_node), m, target_node.meta.val, target_meta);
    const Value& got = out_metas_[size_t(value)];
    if (got.is_tensor() && target_meta.is_tensor()) {
      const Tensor& want = target_meta.to_tensor();
      KILN_USER_CHECK(got.to_tensor().sizes() == want.sizes(), "node ", m.name, " (", m.target, "): output with shape ",
                      shape_str(want.sizes()), " doesn't match the broadcast shape ", shape_str(got.to_tensor().sizes()));
      if (got.to_tensor().dtype() != want.dtype())
        value = call("aten::_to_copy.default", {Arg::node(value)}, {{"dtype", Arg::dtype(std::string(dtype_name(want.dtype())))}},
                     m, target_node.meta.val, target_meta);
    }
    write(written, value, id);
    same_as_[size_t(id)] = written;
    ++writes_;
    return true;
  }

  bool leave() {
    ++left_;
    return false;
  }

  // unsqueeze_, transpose_, t_: self becomes a view of itself, no value
  // changes; reads of self from here on read that view. Only for a base that
  // no earlier view reads (those keep the old layout, which Kiln's view
  // chains cannot express after the change).
  bool functionalize_inplace_view(NodeId id, const Node& m, Node call_node, NodeId written, const std::string& twin) {
    if (base_[size_t(written)] != written) return leave();
    for (size_t i = 0; i < size_t(id); ++i)
      if (NodeId(i) != written && base_[i] == written) return leave();
    call_node.target = twin;
    cur_[size_t(written)] = emit(std::move(call_node), m, m.meta.val, in_metas_[size_t(id)]);
    same_as_[size_t(id)] = written;
    ++writes_;
    return true;
  }

  // Original node x now holds `value` (a new node): scatter it up x's view
  // chain into the base, which gets a new version.
  void write(NodeId x, NodeId value, NodeId writer) {
    const Node& m = in_.nodes[size_t(writer)];
    NodeId b = base_[size_t(x)];
    NodeId view = x, v = value;
    while (view != b) {
      size_t i = size_t(view);
      const Node& vn = in_.nodes[i];
      NodeId p = parent_[i];
      ViewKind k = kind_[i];
      if (k == ViewKind::SplitItem) {
        NodeId grand = parent_[size_t(p)];
        v = scatter_split_item(view, p, read(grand), v, m);
        view = grand;
        continue;
      }
      if (k == ViewKind::AsStrided) {
        // as_strided's offset counts from the start of the storage, not of
        // the viewed tensor: scatter straight into the base (bases start
        // their storage, as placeholders and fresh results do).
        std::vector<Arg> args{Arg::node(cur_[size_t(b)]), Arg::node(v)};
        for (size_t a = 1; a < vn.args.size(); ++a) args.push_back(vn.args[a]);
        for (size_t a = 2; a < args.size(); ++a) map_arg(args[a]);
        std::vector<std::pair<std::string, Arg>> kwargs = vn.kwargs;
        for (auto& kv : kwargs) map_arg(kv.second);
        const Node& bn = in_.nodes[size_t(b)];
        v = call(kScatterOf[int(k)], std::move(args), std::move(kwargs), m, bn.meta.val, in_metas_[size_t(b)]);
        ++scatters_;
        view = b;
        continue;
      }
      NodeId pv = read(p);
      const Node& pn = in_.nodes[size_t(p)];
      const Value& p_meta = in_metas_[size_t(p)];
      std::vector<Arg> rest(vn.args.begin() + 1, vn.args.end());
      for (Arg& a : rest) map_arg(a);
      std::vector<std::pair<std::string, Arg>> kwargs = vn.kwargs;
      for (auto& kv : kwargs) map_arg(kv.second);
      auto with = [&](std::vector<Arg> head, std::vector<Arg> tail) {
        head.insert(head.end(), tail.begin(), tail.end());
        return head;
      };
      switch (k) {
        case ViewKind::Slice:
        case ViewKind::Select:
        case ViewKind::Diagonal:
          v = call(kScatterOf[int(k)], with({Arg::node(pv), Arg::node(v)}, rest), kwargs, m, pn.meta.val, p_meta);
          ++scatters_;
          break;
        case ViewKind::Narrow: {
          KILN_USER_CHECK(rest.size() == 3 && rest[1].kind == Arg::Kind::Int && rest[2].kind == Arg::Kind::Int,
                          "node ", m.name, " writes through narrow ", vn.name, " whose start or length is not a constant");
          v = call(kScatterOf[int(ViewKind::Slice)],
                   {Arg::node(pv), Arg::node(v), rest[0], rest[1], Arg::integer(rest[1].i + rest[2].i)}, {}, m, pn.meta.val,
                   p_meta);
          ++scatters_;
          break;
        }
        case ViewKind::Reshape: {
          KILN_USER_CHECK(p_meta.is_tensor(), "node ", m.name, " writes through ", vn.name, " (", vn.target,
                          ") of a tensor whose sizes are not known");
          v = call("aten::reshape.default", {Arg::node(v), int_list(p_meta.to_tensor().sizes())}, {}, m, pn.meta.val, p_meta);
          break;
        }
        case ViewKind::Identity: break;
        case ViewKind::Transpose:
        case ViewKind::Reverse:
          v = call(vn.target, with({Arg::node(v)}, rest), kwargs, m, pn.meta.val, p_meta);
          break;
        case ViewKind::Permute: {
          KILN_USER_CHECK(!rest.empty() && (rest[0].kind == Arg::Kind::List || rest[0].kind == Arg::Kind::Tuple),
                          "node ", m.name, " writes through permute ", vn.name, " whose dims are not a constant list");
          const std::vector<Arg>& dims = rest[0].items;
          std::vector<Arg> inverse(dims.size(), Arg::integer(0));
          int64_t nd = int64_t(dims.size());
          for (size_t d = 0; d < dims.size(); ++d) {
            int64_t to = dims[d].i < 0 ? dims[d].i + nd : dims[d].i;
            KILN_USER_CHECK(dims[d].kind == Arg::Kind::Int && to >= 0 && to < nd, "node ", vn.name, ": bad permute dims");
            inverse[size_t(to)] = Arg::integer(int64_t(d));
          }
          v = call("aten::permute.default", {Arg::node(v), Arg::list(std::move(inverse))}, {}, m, pn.meta.val, p_meta);
          break;
        }
        default:
          KILN_FAIL("node ", m.name, " (", m.target, ") writes through ", vn.name, " (", vn.target,
                    "), a view Kiln cannot write back into its base");
      }
      view = p;
    }
    cur_[size_t(b)] = v;
    ++version_[size_t(b)];
    last_writer_[size_t(b)] = writer;
    // The written view is `value` until its base changes again: no replay needed.
    if (x != b) cache_[size_t(x)] = {version_[size_t(b)], value};
  }

  static Arg int_list(const Shape& s) {
    std::vector<Arg> items;
    for (int64_t x : s) items.push_back(Arg::integer(x));
    return Arg::list(std::move(items));
  }

  // getitem k of split/chunk/unbind S of P: a slice of P along the split dim
  // at the offset the earlier items take (a select at k for unbind, whose
  // items lose the dim).
  NodeId scatter_split_item(NodeId item, NodeId split, NodeId pv, NodeId v, const Node& m) {
    const Node& s = in_.nodes[size_t(split)];
    const Node& pn = in_.nodes[size_t(parent_[size_t(split)])];
    const Value& p_meta = in_metas_[size_t(parent_[size_t(split)])];
    const Value& items = in_metas_[size_t(split)];
    int64_t k = in_.nodes[size_t(item)].args[1].i;
    const OpDef* def = op_registry().find(s.target);
    KILN_USER_CHECK(p_meta.is_tensor() && items.is_list() && k >= 0 && size_t(k) < items.to_list().size(), "node ", m.name,
                    " writes through item ", k, " of ", s.name, " (", s.target, ") whose sizes are not known");
    int64_t nd = p_meta.to_tensor().dim();
    int64_t dim = 0;
    if (std::optional<Arg> d = argument(s, *def, "dim"); d && d->kind == Arg::Kind::Int) dim = d->i < 0 ? d->i + nd : d->i;
    const ValueList& list = items.to_list();
    ++scatters_;
    if (list[size_t(k)].to_tensor().dim() < nd)
      return call(kScatterOf[int(ViewKind::Select)], {Arg::node(pv), Arg::node(v), Arg::integer(dim), Arg::integer(k)}, {}, m,
                  pn.meta.val, p_meta);
    int64_t start = 0;
    for (int64_t j = 0; j < k; ++j) start += list[size_t(j)].to_tensor().sizes()[size_t(dim)];
    int64_t len = list[size_t(k)].to_tensor().sizes()[size_t(dim)];
    return call(kScatterOf[int(ViewKind::Slice)],
                {Arg::node(pv), Arg::node(v), Arg::integer(dim), Arg::integer(start), Arg::integer(start + len)}, {}, m,
                pn.meta.val, p_meta);
  }

  // Before the output: copy_ the final value of each written input back into it.
  void write_back_inputs() {
    for (size_t i = 0; i < in_.size(); ++i) {
      const Node& n = in_.nodes[i];
      if ((n.op != OpKind::Placeholder && n.op != OpKind::GetAttr) || version_[i] == 0) continue;
      const Node& writer = in_.nodes[size_t(last_writer_[i])];
      call("aten::copy_.default", {Arg::node(copy_of_[i]), Arg::node(cur_[i])}, {}, writer, n.meta.val, in_metas_[i]);
      ++inputs_written_;
    }
  }

  const Graph& in_;
  std::vector<Value> in_metas_;
  Graph out_;
  std::vector<Value> out_metas_;
  std::set<std::string> used_;
  std::map<std::string, int> next_suffix_;

  // Per original node.
  std::vector<NodeId> parent_;  // the original node a view views (canonical)
  std::vector<ViewKind> kind_;
  std::vector<NodeId> base_;     // the original node whose storage this value lives in
  std::vector<NodeId> same_as_;  // a mutating call: the node it wrote (ATen returns it)
  std::vector<NodeId> cur_;      // a base: the new node with its current value
  std::vector<int> version_;     // a base: how many writes it has had
  std::vector<std::pair<int, NodeId>> cache_;  // a view: the version and node last made for it
  std::vector<NodeId> last_writer_;            // a base: the last mutating call that wrote it
  std::vector<NodeId> copy_of_;                // the node copied for it, kNoNode when replaced

  size_t writes_ = 0, scatters_ = 0, replays_ = 0, inputs_written_ = 0, left_ = 0;
};

}  // namespace

PassResult functionalize(Graph& g, const PassContext& ctx) {
  if (!graph_has_mutation(g)) return {};
  Functionalizer f(g, ctx.constants);
  if (!f.run()) return {};
  std::string summary = f.summary();
  g = f.take();
  return {true, std::move(summary)};
}

}  // namespace kiln::pipeline
