#include "compiler/loopir/lower.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>

#include "compiler/loopir/lower_extern.h"
#include "compiler/loopir/simplify_index.h"
#include "compiler/loopir/view_index.h"
#include "core/ops/kernel_util.h"
#include "core/ops/registry.h"
#include "core/util/status.h"

namespace kiln::loopir {
namespace {

using Indices = std::vector<IndexRef>;

// A tensor value while lowering: a buffer seen through the views applied to
// it since. `to_buffer` maps the value's indices to the buffer's (logical)
// indices; the identity for the buffer itself.
struct LValue {
  std::string buffer;
  DType dtype = DType::Float32;
  Shape sizes;
  std::function<Indices(const Indices&)> to_buffer;
  bool is_view = false;
};

const std::map<std::string, ExprOp, std::less<>>& unary_ops() {
  static const std::map<std::string, ExprOp, std::less<>> ops = {
      {"aten::neg.default", ExprOp::Neg},     {"aten::exp.default", ExprOp::Exp},
      {"aten::log.default", ExprOp::Log},     {"aten::sin.default", ExprOp::Sin},
      {"aten::cos.default", ExprOp::Cos},     {"aten::tanh.default", ExprOp::Tanh},
      {"aten::sqrt.default", ExprOp::Sqrt},   {"aten::rsqrt.default", ExprOp::Rsqrt},
      {"aten::abs.default", ExprOp::Abs},     {"aten::sigmoid.default", ExprOp::Sigmoid},
  };
  return ops;
}

const std::map<std::string, ExprOp, std::less<>>& binary_ops() {
  static const std::map<std::string, ExprOp, std::less<>> ops = {
      {"aten::add.Tensor", ExprOp::Add},         {"aten::add.Scalar", ExprOp::Add},
      {"aten::sub.Tensor", ExprOp::Sub},         {"aten::sub.Scalar", ExprOp::Sub},
      {"aten::mul.Tensor", ExprOp::Mul},         {"aten::mul.Scalar", ExprOp::Mul},
      {"aten::div.Tensor", ExprOp::Div},         {"aten::div.Scalar", ExprOp::Div},
      {"aten::maximum.default", ExprOp::Maximum}, {"aten::minimum.default", ExprOp::Minimum},
      {"aten::eq.Tensor", ExprOp::Eq},           {"aten::eq.Scalar", ExprOp::Eq},
      {"aten::ne.Tensor", ExprOp::Ne},           {"aten::ne.Scalar", ExprOp::Ne},
      {"aten::lt.Tensor", ExprOp::Lt},           {"aten::lt.Scalar", ExprOp::Lt},
      {"aten::le.Tensor", ExprOp::Le},           {"aten::le.Scalar", ExprOp::Le},
      {"aten::gt.Tensor", ExprOp::Gt},           {"aten::gt.Scalar", ExprOp::Gt},
      {"aten::ge.Tensor", ExprOp::Ge},           {"aten::ge.Scalar", ExprOp::Ge},
  };
  return ops;
}

bool is_comparison(ExprOp op) { return op >= ExprOp::Eq && op <= ExprOp::Ge; }

int64_t wrap(int64_t d, int64_t rank) { return d < 0 ? d + rank : d; }

class Lowerer {
 public:
  explicit Lowerer(const Graph& g) : g_(g), users_(compute_users(g)) {}

  Program run() {
    for (NodeId id = 0; id < NodeId(g_.size()); ++id) {
      const Node& n = g_[id];
      switch (n.op) {
        case OpKind::Placeholder: placeholder(id); break;
        case OpKind::CallFunction: call(id); break;
        case OpKind::Output: output(n); break;
        default: fail(n, "is a ", op_kind_name(n.op), " node, which has no loop lowering");
      }
    }
    return std::move(p_);
  }

 private:
  [[noreturn]] void fail_impl(const Node& n, const std::string& why) const {
    KILN_FAIL("lower_to_loops: node '", n.name, "' (", n.target, ") ", why);
  }
  template <class... A>
  [[noreturn]] void fail(const Node& n, A&&... why) const {
    fail_impl(n, kiln::detail::concat(std::forward<A>(why)...));
  }

  // ---- graph metadata ----

  Shape concrete(const Node& n, const std::vector<SymInt>& v) const {
    Shape out;
    for (const SymInt& s : v) {
      if (s.is_symbolic()) fail(n, "has the symbolic size ", s.expr, "; only static shapes lower yet");
      out.push_back(s.value);
    }
    return out;
  }
  const TensorMeta& meta(const Node& n) const {
    if (!n.meta.val.is_tensor()) fail(n, "has no tensor meta['val'] (sizes and dtype are read from it)");
    return n.meta.val.tensor;
  }
  Shape sizes_of(const Node& n) const { return concrete(n, meta(n).sizes); }
  DType dtype_of(const Node& n) const {
    std::optional<DType> d = dtype_from_name(meta(n).dtype);
    if (!d) fail(n, "has the unknown dtype '", meta(n).dtype, "'");
    return *d;
  }

  const Arg* arg(const Node& n, size_t pos, std::string_view kw) const {
    for (const auto& [k, v] : n.kwargs)
      if (k == kw) return &v;
    return pos < n.args.size() ? &n.args[pos] : nullptr;
  }
  const LValue& tensor_arg(const Node& n, size_t pos) const {
    if (pos >= n.args.size() || !n.args[pos].is_node()) fail(n, "expects a tensor as argument ", pos);
    auto it = values_.find(n.args[pos].node_id());
    if (it == values_.end()) fail(n, "reads node '", g_[n.args[pos].node_id()].name, "', which has no tensor value");
    return it->second;
  }
  int64_t int_arg(const Node& n, size_t pos, std::string_view kw, std::optional<int64_t> fallback = {}) const {
    const Arg* a = arg(n, pos, kw);
    if (a && a->kind == Arg::Kind::Int) return a->i;
    if ((!a || a->is_none()) && fallback) return *fallback;
    fail(n, "expects an int for '", kw, "'");
  }
  // nullopt for None or absent.
  std::optional<Shape> int_list_arg(const Node& n, size_t pos, std::string_view kw) const {
    const Arg* a = arg(n, pos, kw);
    if (!a || a->is_none()) return std::nullopt;
    if (a->kind == Arg::Kind::Int) return Shape{a->i};
    if (a->kind != Arg::Kind::List && a->kind != Arg::Kind::Tuple) fail(n, "expects an int list for '", kw, "'");
    Shape out;
    for (const Arg& item : a->items) {
      if (item.kind != Arg::Kind::Int) fail(n, "expects an int list for '", kw, "'");
      out.push_back(item.i);
    }
    return out;
  }

  // ---- buffers and kernels ----

  Buffer& new_buffer(const Shape& sizes, DType dtype) {
    Buffer b;
    b.name = "buf" + std::to_string(next_buffer_++);
    b.dtype = dtype;
    b.sizes = sizes;
    b.strides = contiguous_strides(sizes);
    b.role = BufferRole::Computed;
    p_.buffers.push_back(std::move(b));
    return p_.buffers.back();
  }
  static LValue whole(const Buffer& b) {
    return {b.name, b.dtype, b.sizes, [](const Indices& i) { return i; }, false};
  }

  // The value `v` at `idx` (indices of a tensor of `out_rank` dims it broadcasts
  // to: trailing dims align, and a size-1 dim reads index 0).
  ExprRef load(const LValue& v, const Indices& idx) const {
    size_t lead = idx.size() - v.sizes.size();
    Indices own(v.sizes.size());
    for (size_t d = 0; d < v.sizes.size(); ++d) own[d] = v.sizes[d] == 1 ? index_const(0) : idx[lead + d];
    const Buffer& b = p_.buffer(v.buffer);
    IndexRef flat = strided_index(b.sizes, b.strides, b.offset, v.to_buffer(own));
    return expr_load(v.buffer, simplified(flat), v.dtype);
  }

  // A tensor argument loaded at `idx`, or a number as a constant, cast to `dtype`.
  ExprRef operand(const Node& n, size_t pos, const Indices& idx, DType dtype) const {
    const Arg* a = pos < n.args.size() ? &n.args[pos] : nullptr;
    if (!a) fail(n, "lacks argument ", pos);
    if (a->is_node()) return expr_cast(load(tensor_arg(n, pos), idx), dtype);
    if (a->kind == Arg::Kind::Int) return expr_constant(double(a->i), dtype);
    if (a->kind == Arg::Kind::Float) return expr_constant(a->f, dtype);
    if (a->kind == Arg::Kind::Bool) return expr_constant(a->b ? 1 : 0, dtype);
    fail(n, "argument ", pos, " is neither a tensor nor a number");
  }
  // torch.result_type of a comparison's two operands: dimensioned tensors
  // outrank zero-dim tensors, which outrank numbers, unless the lower one is of
  // a higher category (le(f32 scalar tensor, f16 tensor) compares in float16).
  DType comparison_dtype(const Node& n) const {
    std::vector<Tensor> metas;
    std::vector<Scalar> numbers;
    for (size_t pos = 0; pos < 2; ++pos) {
      const Arg& a = n.args.at(pos);
      if (a.is_node()) metas.push_back(Tensor::meta(tensor_arg(n, pos).sizes, tensor_arg(n, pos).dtype));
      else if (a.kind == Arg::Kind::Float) numbers.push_back(Scalar(a.f));
      else if (a.kind == Arg::Kind::Bool) numbers.push_back(Scalar(a.b));
      else numbers.push_back(Scalar(a.i));
    }
    if (numbers.empty()) return result_type({metas[0], metas[1]});
    if (metas.empty()) return result_type({numbers[0], numbers[1]});
    return result_type({metas[0], numbers[0]});
  }

  // Sets the ranges the index simplifier knows for a kernel over `ranges` then `reduction_ranges`.
  void enter_kernel(const Shape& ranges, const Shape& reduction_ranges) {
    Shape all = ranges;
    all.insert(all.end(), reduction_ranges.begin(), reduction_ranges.end());
    ranges_ = loop_ranges(all);
    if (all != simplified_for_) simplified_.clear(), simplified_for_ = all;
  }
  IndexRef store_index(const Buffer& b) const {
    return simplified(strided_index(b.sizes, b.strides, b.offset, loop_vars(b.sizes.size())));
  }
  // simplify_index with the kernel's ranges, remembered while kernels keep
  // the same ranges: most kernels of a graph load and store at the same few
  // indices, and simplifying each again was a third of lowering's time.
  IndexRef simplified(const IndexRef& e) const {
    auto it = simplified_.find(e);
    if (it != simplified_.end()) return it->second;
    IndexRef s = simplify_index(e, ranges_);
    simplified_.emplace(e, s);
    return s;
  }

  // One pointwise kernel over `sizes` whose body `body(x0..)` builds.
  const Buffer& pointwise(const Node& n, const Shape& sizes, DType dtype,
                          const std::function<ExprRef(const Indices&)>& body) {
    enter_kernel(sizes, {});
    Buffer& b = new_buffer(sizes, dtype);
    Kernel k;
    k.kind = KernelKind::Pointwise;
    k.output = b.name;
    k.origin = n.name;
    k.ranges = sizes;
    k.body = expr_cast(body(loop_vars(sizes.size())), dtype);
    k.store_index = store_index(b);
    p_.kernels.push_back(std::move(k));
    return p_.buffers.back();
  }

  // ---- nodes ----

  void placeholder(NodeId id) {
    const Node& n = g_[id];
    Buffer b;
    b.name = n.name;
    b.dtype = dtype_of(n);
    b.sizes = sizes_of(n);
    b.strides = meta(n).strides ? concrete(n, *meta(n).strides) : contiguous_strides(b.sizes);
    b.role = BufferRole::Input;
    p_.buffers.push_back(b);
    p_.inputs.push_back(b.name);
    values_[id] = whole(p_.buffers.back());
  }

  // copy_(input, final), the epilogue functionalization leaves for a graph
  // input that gets written (batch norm's running statistics): the final
  // value is materialized in a buffer of its own, which the runtime copies
  // into the caller's tensor. copy_ into anything else is not functionalized.
  void lower_input_write(NodeId id) {
    const Node& n = g_[id];
    if (n.args.size() < 2 || !n.args[0].is_node() || g_[n.args[0].node_id()].op != OpKind::Placeholder)
      fail(n, "writes into a tensor that is not a graph input (functionalize the graph first)");
    const NodeId dst = n.args[0].node_id();
    auto input = std::find(p_.inputs.begin(), p_.inputs.end(), p_.buffer(values_.at(dst).buffer).name);
    if (input == p_.inputs.end()) fail(n, "writes into '", g_[dst].name, "', which has no input buffer");
    const Buffer& dst_buffer = p_.buffer(values_.at(dst).buffer);
    const DType d = dst_buffer.dtype;
    const Shape sizes = dst_buffer.sizes;
    const Buffer& b = pointwise(n, sizes, d, [&](const Indices& idx) { return operand(n, 1, idx, d); });
    p_.input_writes.emplace_back(size_t(input - p_.inputs.begin()), b.name);
    values_[id] = whole(b);
  }

  void output(const Node& n) {
    std::vector<NodeId> returned;
    if (!n.args.empty()) for_each_node_ref(n.args[0], [&](NodeId r) { returned.push_back(r); });
    for (NodeId r : returned) {
      auto it = values_.find(r);
      if (it == values_.end()) fail(n, "returns '", g_[r].name, "', which has no tensor value");
      const LValue v = it->second;
      const Buffer& src = p_.buffer(v.buffer);
      if (!v.is_view && src.role == BufferRole::Computed) {
        p_.outputs.push_back(v.buffer);
      } else {
        // A returned view or input is materialized: the program's outputs are buffers it wrote.
        const Buffer& b = pointwise(g_[r], v.sizes, v.dtype, [&](const Indices& idx) { return load(v, idx); });
        p_.outputs.push_back(b.name);
      }
    }
    for (Buffer& b : p_.buffers) {
      if (std::find(p_.outputs.begin(), p_.outputs.end(), b.name) != p_.outputs.end()) b.is_output = true;
      for (const auto& [input, name] : p_.input_writes) b.is_output |= b.name == name;
    }
  }

  void call(NodeId id) {
    const Node& n = g_[id];
    const std::string& t = n.target;
    if (auto u = unary_ops().find(t); u != unary_ops().end()) return lower_unary(id, u->second);
    if (auto b = binary_ops().find(t); b != binary_ops().end()) return lower_binary(id, b->second);
    if (t == "aten::relu.default") {
      DType d = dtype_of(n);
      const LValue& x = tensor_arg(n, 0);
      values_[id] = whole(pointwise(n, sizes_of(n), d, [&](const Indices& idx) {
        return expr_binary(ExprOp::Maximum, expr_cast(load(x, idx), d), expr_constant(0, d), d);
      }));
      return;
    }
    if (t == "aten::where.self") {
      DType d = dtype_of(n);
      values_[id] = whole(pointwise(n, sizes_of(n), d, [&](const Indices& idx) {
        return expr_where(operand(n, 0, idx, DType::Bool), operand(n, 1, idx, d), operand(n, 2, idx, d), d);
      }));
      return;
    }
    if (t == "aten::_to_copy.default" || t == "prims::convert_element_type.default" || t == "aten::clone.default") {
      DType d = dtype_of(n);
      const LValue& x = tensor_arg(n, 0);
      values_[id] = whole(pointwise(n, sizes_of(n), d, [&](const Indices& idx) { return load(x, idx); }));
      return;
    }
    if (t == "aten::copy.default") {
      // Functionalized in-place writes (nn.ReLU(inplace=True)): self's shape
      // and dtype, src's values broadcast into it.
      DType d = dtype_of(n);
      values_[id] = whole(pointwise(n, sizes_of(n), d, [&](const Indices& idx) { return operand(n, 1, idx, d); }));
      return;
    }
    if (t == "aten::copy_.default") return lower_input_write(id);
    if (t == "aten::max_pool2d_with_indices.default" && lower_max_pool_values(id)) return;
    if (t == "operator.getitem") return lower_getitem(id);
    if (lower_fill(id)) return;
    if (lower_view(id)) return;
    if (lower_reduction(id)) return;
    lower_extern(id);
  }

  // Max pooling whose indices nobody reads (inference): one pointwise kernel
  // over the output with the window unrolled, as Inductor lowers it. Reads in
  // the padding clamp to the edge, which lies inside the same window when
  // dilation is 1 (PyTorch requires padding <= kernel / 2, and the last window
  // starts inside the input), and max does not mind a repeat. The indices
  // would need a loop index as a value, which the loop IR has not: a graph
  // that reads them keeps the extern kernel.
  bool lower_max_pool_values(NodeId id) {
    const Node& n = g_[id];
    for (NodeId u : users_[size_t(id)]) {
      const Node& gi = g_[u];
      if (gi.target != "operator.getitem" || gi.args.size() != 2 || gi.args[1].kind != Arg::Kind::Int) return false;
      if (gi.args[1].i != 0 && !users_[size_t(u)].empty()) return false;
    }
    const Val& val = n.meta.val;
    if (val.items.empty() || !val.items[0].is_tensor()) return false;
    const LValue& x = tensor_arg(n, 0);
    const size_t r = x.sizes.size();
    std::optional<Shape> kernel = int_list_arg(n, 1, "kernel_size"), stride = int_list_arg(n, 2, "stride"),
                         padding = int_list_arg(n, 3, "padding"), dilation = int_list_arg(n, 4, "dilation");
    auto pair = [](std::optional<Shape> v, Shape fallback) {
      if (!v || v->empty()) return fallback;
      return v->size() == 1 ? Shape{(*v)[0], (*v)[0]} : *v;
    };
    const Shape k = pair(kernel, {1, 1});
    const Shape st = pair(stride, k), pad = pair(padding, {0, 0}), dil = pair(dilation, {1, 1});
    if (r < 3 || k.size() != 2 || dil != Shape{1, 1} || k[0] * k[1] > 64) return false;
    const int64_t H = x.sizes[r - 2], W = x.sizes[r - 1];
    const DType d = x.dtype;
    const Shape out_sizes = concrete(n, val.items[0].tensor.sizes);
    const Buffer& values = pointwise(n, out_sizes, d, [&](const Indices& idx) {
      ExprRef best;
      for (int64_t i = 0; i < k[0]; ++i)
        for (int64_t j = 0; j < k[1]; ++j) {
          Indices at = idx;
          at[r - 2] = index_min(index_max(index_add({index_mul({idx[r - 2], index_const(st[0])}), index_const(i - pad[0])}),
                                          index_const(0)),
                                index_const(H - 1));
          at[r - 1] = index_min(index_max(index_add({index_mul({idx[r - 1], index_const(st[1])}), index_const(j - pad[1])}),
                                          index_const(0)),
                                index_const(W - 1));
          ExprRef v = load(x, at);
          best = best ? expr_binary(ExprOp::Maximum, best, v, d) : v;
        }
      return best;
    });
    tuple_values_[id][0] = whole(values);
    return true;
  }

  // Fills (full, full_like, scalar_tensor, fill.Scalar): a pointwise kernel
  // storing one constant, which fusion folds into its readers, instead of an
  // extern kernel, which a GPU runtime would run on the host. An integer the
  // constant's double cannot hold exactly (beyond 2^53) keeps the extern.
  bool lower_fill(NodeId id) {
    const Node& n = g_[id];
    const std::string& t = n.target;
    const Arg* v = nullptr;
    if (t == "aten::full.default" || t == "aten::full_like.default") v = arg(n, 1, "fill_value");
    else if (t == "aten::scalar_tensor.default") v = arg(n, 0, "s");
    else if (t == "aten::fill.Scalar") v = arg(n, 1, "value");
    else return false;
    if (!v || !n.meta.val.is_tensor()) return false;
    double value = 0;
    if (v->kind == Arg::Kind::Float) value = v->f;
    else if (v->kind == Arg::Kind::Bool) value = v->b ? 1 : 0;
    else if (v->kind == Arg::Kind::Int && v->i >= -(int64_t(1) << 53) && v->i <= (int64_t(1) << 53)) value = double(v->i);
    else return false;
    const DType d = dtype_of(n);
    values_[id] = whole(pointwise(n, sizes_of(n), d, [&](const Indices&) { return expr_constant(value, d); }));
    return true;
  }

  // ---- extern kernels (Inductor's ExternKernel / FallbackKernel) ----

  void lower_getitem(NodeId id) {
    const Node& n = g_[id];
    if (n.args.size() != 2 || !n.args[0].is_node() || n.args[1].kind != Arg::Kind::Int)
      fail(n, "expects getitem(node, int)");
    auto it = tuple_values_.find(n.args[0].node_id());
    if (it == tuple_values_.end()) fail(n, "reads '", g_[n.args[0].node_id()].name, "', which has no tuple value");
    auto item = it->second.find(n.args[1].i);
    if (item == it->second.end()) {
      if (users_[size_t(id)].empty()) return;  // a result nobody reads was not made (max pool's indices)
      fail(n, "reads result ", n.args[1].i, ", which is not a tensor");
    }
    values_[id] = item->second;
  }

  // The buffer view an extern kernel reads for tensor argument `src`: the
  // value's buffer seen through its views when they are strided, else a
  // contiguous copy (Inductor's ExternKernel.realize_input).
  BufferView extern_input(const Node& n, NodeId src) {
    auto it = values_.find(src);
    if (it == values_.end()) fail(n, "reads node '", g_[src].name, "', which has no tensor value");
    const LValue v = it->second;
    const Buffer& b = p_.buffer(v.buffer);
    auto view = detail::as_strided_view(b, v.sizes, [&](const Indices& idx) {
      return strided_index(b.sizes, b.strides, b.offset, v.to_buffer(idx));
    });
    if (view) return *view;
    auto copied = copies_.find(src);
    if (copied == copies_.end()) {
      const Buffer& c = pointwise(g_[src], v.sizes, v.dtype, [&](const Indices& idx) { return load(v, idx); });
      copied = copies_.emplace(src, c.name).first;
    }
    const Buffer& c = p_.buffer(copied->second);
    return {c.name, c.sizes, c.strides, c.offset};
  }

  // A buffer for a tensor an extern kernel writes, laid out as meta['val'] says when that layout is dense.
  const Buffer& extern_output(const Node& n, const TensorMeta& m) {
    std::optional<DType> d = dtype_from_name(m.dtype);
    if (!d) fail(n, "has the unknown dtype '", m.dtype, "'");
    Shape sizes = concrete(n, m.sizes);
    Buffer& b = new_buffer(sizes, *d);
    if (m.strides) b.strides = detail::dense_strides_or_contiguous(sizes, concrete(n, *m.strides));
    return b;
  }

  // The node's meta['val'], or for a multi-output node without one (PyTorch's
  // print_readable annotates no tuple: a dump's `_scaled_dot_product_flash_attention_for_cpu = ...`)
  // a tuple of what its getitem readers' annotations say.
  Val extern_val(NodeId id) const {
    const Node& n = g_[id];
    if (n.meta.val.kind != Val::Kind::None || users_[size_t(id)].empty()) return n.meta.val;
    std::vector<Val> items;
    for (NodeId u : users_[size_t(id)]) {
      const Node& gi = g_[u];
      if (gi.target != "operator.getitem" || gi.args.size() != 2 || gi.args[1].kind != Arg::Kind::Int ||
          gi.args[1].i < 0 || !gi.meta.val.is_tensor())
        return n.meta.val;
      if (items.size() <= size_t(gi.args[1].i)) items.resize(size_t(gi.args[1].i) + 1);
      items[size_t(gi.args[1].i)] = gi.meta.val;
    }
    return Val::tuple(std::move(items));
  }

  void lower_extern(NodeId id) {
    const Node& n = g_[id];
    if (!op_registry().find(n.target))
      fail(n, "has no loop lowering and is not a registered ATen overload (no fallback kernel to call)");
    auto call = std::make_shared<ExternCall>();
    call->target = n.target;
    std::function<Arg(const Arg&)> convert = [&](const Arg& a) -> Arg {
      if (a.kind == Arg::Kind::Sym) fail(n, "has the symbolic argument ", a.s, "; only static shapes lower yet");
      Arg r = a;
      if (a.is_node()) {
        call->tensors.push_back(extern_input(n, a.node_id()));
        r.i = int64_t(call->tensors.size() - 1);
      }
      for (Arg& item : r.items) item = convert(item);
      return r;
    };
    for (const Arg& a : n.args) call->args.push_back(convert(a));
    for (const auto& [k, a] : n.kwargs) call->kwargs.emplace_back(k, convert(a));
    for (const BufferView& v : call->tensors)
      if (std::find(call->inputs.begin(), call->inputs.end(), v.buffer) == call->inputs.end())
        call->inputs.push_back(v.buffer);
    detail::classify_extern(*call);

    const Val val = extern_val(id);
    if (val.is_tensor()) {
      const Buffer& b = extern_output(n, val.tensor);
      call->outputs.push_back(b.name);
      call->output_results.push_back(0);
      values_[id] = whole(b);
    } else if (val.kind == Val::Kind::Tuple || val.kind == Val::Kind::List) {
      // Only the results some getitem reads get a buffer.
      std::map<int64_t, LValue>& items = tuple_values_[id];
      for (NodeId u : users_[size_t(id)]) {
        const Node& gi = g_[u];
        if (gi.target != "operator.getitem" || gi.args.size() != 2 || gi.args[1].kind != Arg::Kind::Int)
          fail(n, "returns a tuple read by '", gi.name, "', which is not a getitem");
        int64_t k = gi.args[1].i;
        if (k < 0 || size_t(k) >= val.items.size()) fail(gi, "reads result ", k, " of ", val.items.size());
        if (items.count(k)) continue;
        const Val& item = val.items[size_t(k)];
        if (!item.is_tensor())
          fail(n, "has a non-tensor result ", k, " that '", gi.name, "' reads; externs return tensors only");
        const Buffer& b = extern_output(n, item.tensor);
        call->outputs.push_back(b.name);
        call->output_results.push_back(size_t(k));
        items[k] = whole(b);
      }
    } else if (!users_[size_t(id)].empty() && val.kind == Val::Kind::None) {
      fail(n, "has no meta['val'] (an extern kernel's output sizes and dtype are read from it)");
    } else if (!users_[size_t(id)].empty()) {
      fail(n, "has a non-tensor result that '", g_[users_[size_t(id)][0]].name,
           "' reads (no loop lowering; an extern kernel returns tensors only)");
    }
    if (call->outputs.empty()) return;  // nothing reads it
    Kernel k;
    k.kind = KernelKind::Extern;
    k.output = call->outputs[0];
    k.origin = n.name;
    k.ranges = p_.buffer(k.output).sizes;
    k.call = std::move(call);
    p_.kernels.push_back(std::move(k));
  }

  void lower_unary(NodeId id, ExprOp op) {
    const Node& n = g_[id];
    DType d = dtype_of(n);
    const LValue& x = tensor_arg(n, 0);
    values_[id] = whole(pointwise(n, sizes_of(n), d, [&](const Indices& idx) {
      return expr_unary(op, expr_cast(load(x, idx), d), d);
    }));
  }

  void lower_binary(NodeId id, ExprOp op) {
    const Node& n = g_[id];
    DType d = dtype_of(n);
    if (op == ExprOp::Div) {
      const Arg* mode = arg(n, 2, "rounding_mode");
      if (mode && !mode->is_none()) fail(n, "uses rounding_mode, which has no loop lowering yet");
    }
    // Comparisons compute in the operands' common dtype, arithmetic in the result's.
    DType compute = d;
    if (is_comparison(op)) compute = comparison_dtype(n);
    // Half-precision arithmetic runs in float ("opmath") and rounds once, as
    // ATen's kernels do: a float scalar operand (a number or a zero-dim float
    // tensor) then keeps its full value instead of being rounded first.
    const bool opmath = !is_comparison(op) && (d == DType::Float16 || d == DType::BFloat16);
    if (opmath) compute = DType::Float32;
    const Arg* alpha = (op == ExprOp::Add || op == ExprOp::Sub) ? arg(n, 2, "alpha") : nullptr;
    values_[id] = whole(pointwise(n, sizes_of(n), d, [&](const Indices& idx) {
      ExprRef a = operand(n, 0, idx, compute), b = operand(n, 1, idx, compute);
      if (alpha && !alpha->is_none()) {
        double s = alpha->kind == Arg::Kind::Float ? alpha->f : double(alpha->kind == Arg::Kind::Bool ? alpha->b : alpha->i);
        if (s != 1) b = expr_binary(ExprOp::Mul, b, expr_constant(s, compute), compute);
      }
      ExprRef r = expr_binary(op, a, b, is_comparison(op) ? DType::Bool : compute);
      return opmath ? expr_cast(r, d) : r;
    }));
  }

  // A view of `x` with `sizes` whose indices map to x's through `to_x`.
  void make_view(NodeId id, const LValue& x, Shape sizes, std::function<Indices(const Indices&)> to_x) {
    LValue v;
    v.buffer = x.buffer;
    v.dtype = x.dtype;
    v.sizes = std::move(sizes);
    v.is_view = true;
    auto outer = x.to_buffer;
    v.to_buffer = [outer, to_x = std::move(to_x)](const Indices& idx) { return outer(to_x(idx)); };
    values_[id] = std::move(v);
  }

  bool lower_view(NodeId id) {
    const Node& n = g_[id];
    const std::string& t = n.target;
    if (t == "aten::alias.default") {
      values_[id] = tensor_arg(n, 0);
      return true;
    }
    bool reshape = t == "aten::view.default" || t == "aten::reshape.default" || t == "aten::_unsafe_view.default" ||
                   t == "aten::unsqueeze.default" || t == "aten::squeeze.dim" || t == "aten::squeeze.dims" ||
                   t == "aten::squeeze.default" || t == "aten::flatten.using_ints";
    bool known = reshape || t == "aten::permute.default" || t == "aten::expand.default" || t == "aten::slice.Tensor" ||
                 t == "aten::select.int" || t == "aten::transpose.int" || t == "aten::t.default";
    if (!known) return false;
    const LValue x = tensor_arg(n, 0);
    Shape out = sizes_of(n);
    int64_t rank = int64_t(x.sizes.size());
    if (reshape) {
      // Whatever the source's layout: the loop IR reads logical indices, so a reshape never copies.
      Shape from = x.sizes;
      make_view(id, x, out, [from, out](const Indices& idx) { return reshape_indices(from, out, idx); });
    } else if (t == "aten::permute.default" || t == "aten::transpose.int" || t == "aten::t.default") {
      Shape dims(static_cast<size_t>(rank));
      for (int64_t i = 0; i < rank; ++i) dims[size_t(i)] = i;
      if (t == "aten::permute.default") {
        std::optional<Shape> given = int_list_arg(n, 1, "dims");
        if (!given || int64_t(given->size()) != rank) fail(n, "needs one dim per input dim");
        dims = *given;
        for (int64_t& d : dims) d = wrap(d, rank);
      } else if (rank == 2 || (t == "aten::transpose.int" && rank > 0)) {
        int64_t a = t == "aten::t.default" ? 0 : wrap(int_arg(n, 1, "dim0"), rank);
        int64_t b = t == "aten::t.default" ? 1 : wrap(int_arg(n, 2, "dim1"), rank);
        if (a < 0 || a >= rank || b < 0 || b >= rank) fail(n, "dims ", a, " and ", b, " are out of range for rank ", rank);
        std::swap(dims[size_t(a)], dims[size_t(b)]);
      }
      // A 0-d tensor's transpose (dims 0 or -1, as ATen wraps them) is the tensor itself.
      for (int64_t d : dims)
        if (d < 0 || d >= rank) fail(n, "dim ", d, " is out of range for rank ", rank);
      make_view(id, x, out, [dims](const Indices& idx) {
        Indices src(idx.size());
        for (size_t i = 0; i < dims.size(); ++i) src[size_t(dims[i])] = idx[i];
        return src;
      });
    } else if (t == "aten::expand.default") {
      // load() already reads index 0 of a size-1 dim and aligns trailing dims.
      Shape xs = x.sizes;
      make_view(id, x, out, [xs](const Indices& idx) {
        size_t lead = idx.size() - xs.size();
        Indices src(xs.size());
        for (size_t d = 0; d < xs.size(); ++d) src[d] = xs[d] == 1 ? index_const(0) : idx[lead + d];
        return src;
      });
    } else if (t == "aten::slice.Tensor") {
      int64_t dim = wrap(int_arg(n, 1, "dim", 0), rank);
      int64_t size = x.sizes.at(size_t(dim));
      int64_t start = int_arg(n, 2, "start", 0), step = int_arg(n, 4, "step", 1);
      if (step <= 0) fail(n, "has a non-positive slice step");
      start = std::clamp(start < 0 ? start + size : start, int64_t{0}, size);
      make_view(id, x, out, [dim, start, step](const Indices& idx) {
        Indices src = idx;
        src[size_t(dim)] = index_add({index_mul({index_const(step), idx[size_t(dim)]}), index_const(start)});
        return src;
      });
    } else {  // select.int
      int64_t dim = wrap(int_arg(n, 1, "dim"), rank);
      int64_t index = int_arg(n, 2, "index");
      index = index < 0 ? index + x.sizes.at(size_t(dim)) : index;
      make_view(id, x, out, [dim, index](const Indices& idx) {
        Indices src = idx;
        src.insert(src.begin() + dim, index_const(index));
        return src;
      });
    }
    return true;
  }

  bool lower_reduction(NodeId id) {
    const Node& n = g_[id];
    const std::string& t = n.target;
    ReductionType type;
    // argmin is argmax of -x (the first extreme and NaN positions agree), all
    // is not any(x == 0): the loop IR keeps one reduction per direction.
    bool mean = false, all_dims = false, negate = false, all = false;
    if (t == "aten::sum.dim_IntList" || t == "aten::sum.default") type = ReductionType::Sum;
    else if (t == "aten::mean.dim" || t == "aten::mean.default") type = ReductionType::Sum, mean = true;
    else if (t == "aten::amax.default") type = ReductionType::Max;
    else if (t == "aten::amin.default") type = ReductionType::Min;
    else if (t == "aten::prod.dim_int" || t == "aten::prod.default") type = ReductionType::Prod;
    else if (t == "aten::argmax.default") type = ReductionType::Argmax;
    else if (t == "aten::argmin.default") type = ReductionType::Argmax, negate = true;
    else if (t == "aten::any.dim" || t == "aten::any.dims" || t == "aten::any.default") type = ReductionType::Any;
    else if (t == "aten::all.dim" || t == "aten::all.dims" || t == "aten::all.default") type = ReductionType::Any, all = true;
    else return false;
    all_dims = t == "aten::sum.default" || t == "aten::mean.default" || t == "aten::prod.default" ||
               t == "aten::any.default" || t == "aten::all.default";
    const LValue x = tensor_arg(n, 0);
    int64_t rank = int64_t(x.sizes.size());
    std::optional<Shape> dims = all_dims ? std::nullopt : int_list_arg(n, 1, "dim");
    std::vector<bool> reduced(size_t(rank), !dims || dims->empty());
    if (dims)
      for (int64_t d : *dims) reduced.at(size_t(wrap(d, rank))) = true;
    bool keepdim = false;
    if (!all_dims) {
      const Arg* k = arg(n, 2, "keepdim");
      keepdim = k && k->kind == Arg::Kind::Bool && k->b;
    }
    Shape out = sizes_of(n), red;
    for (int64_t d = 0; d < rank; ++d)
      if (reduced[size_t(d)]) red.push_back(x.sizes[size_t(d)]);
    DType d = dtype_of(n);
    // ATen's mean of a 16-bit tensor sums and divides in float32 and rounds
    // once: a float16 sum of 640,000 ones would overflow, and so would n.
    const DType acc = mean && (d == DType::Float16 || d == DType::BFloat16) ? DType::Float32 : d;

    enter_kernel(out, red);
    Buffer& b = new_buffer(out, acc);
    Kernel k;
    k.kind = KernelKind::Reduction;
    k.output = b.name;
    k.origin = n.name;
    k.ranges = out;
    k.reduction_ranges = red;
    k.reduction = type;
    Indices in(static_cast<size_t>(rank));
    int64_t next_out = 0, next_red = int64_t(out.size());
    for (int64_t i = 0; i < rank; ++i) {
      if (reduced[size_t(i)]) {
        in[size_t(i)] = index_var(next_red++);
        if (keepdim) ++next_out;
      } else {
        in[size_t(i)] = index_var(next_out++);
      }
    }
    if (type == ReductionType::Argmax) {
      // Compares the values themselves; the stored position is the int64 result.
      DType cmp = is_floating(x.dtype) ? x.dtype : DType::Float64;
      ExprRef v = expr_cast(load(x, in), cmp);
      k.body = negate ? expr_unary(ExprOp::Neg, v, cmp) : v;
    } else if (all) {
      k.body = expr_binary(ExprOp::Eq, load(x, in), expr_constant(0, x.dtype), DType::Bool);
    } else {
      k.body = expr_cast(load(x, in), acc);
    }
    k.store_index = store_index(b);
    p_.kernels.push_back(std::move(k));
    LValue result = whole(p_.buffers.back());
    if (all) {
      result = whole(pointwise(n, out, d, [&](const Indices& idx) {
        return expr_binary(ExprOp::Eq, load(result, idx), expr_constant(0, DType::Bool), DType::Bool);
      }));
    }
    if (mean) {
      int64_t count = 1;
      for (int64_t s : red) count *= s;
      result = whole(pointwise(n, out, d, [&](const Indices& idx) {
        return expr_cast(expr_binary(ExprOp::Div, load(result, idx), expr_constant(double(count), acc), acc), d);
      }));
    }
    values_[id] = std::move(result);
    return true;
  }

  const Graph& g_;
  std::vector<std::vector<NodeId>> users_;
  std::map<NodeId, std::map<int64_t, LValue>> tuple_values_;  // per multi-result extern node: its results read
  std::map<NodeId, std::string> copies_;  // a non-strided view copied for an extern kernel, once
  Program p_;
  std::map<NodeId, LValue> values_;
  IndexRanges ranges_;
  struct IndexLess {
    bool operator()(const IndexRef& a, const IndexRef& b) const { return compare_index(*a, *b) < 0; }
  };
  mutable std::map<IndexRef, IndexRef, IndexLess> simplified_;  // under ranges `simplified_for_`
  Shape simplified_for_;
  int next_buffer_ = 0;
};

}  // namespace

Program lower_to_loops(const Graph& g) { return Lowerer(g).run(); }

}  // namespace kiln::loopir
