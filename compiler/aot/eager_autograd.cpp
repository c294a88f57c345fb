#include "compiler/aot/eager_autograd.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <set>

#include "compiler/aot/derivatives.h"
#include "compiler/aot/tape.h"
#include "core/ops/registry.h"
#include "core/python/autograd.h"
#include "core/python/torch_api.h"

namespace kiln::aot {

namespace {

using pipeline::EagerEmitter;
using pipeline::TensorKey;
namespace ag = py::autograd;

// The name PyTorch's grad_fn shows for a gradient computed by `calls`: the
// backward of the op that made the first gradient ("aten::mul.Tensor" ->
// "MulBackward0"), as a double-backward graph's nodes are those ops' nodes.
std::string backward_name(const std::vector<GradCall>& calls, const GradList& grads) {
  for (const std::optional<Var>& g : grads) {
    if (!g) continue;
    for (auto c = calls.rbegin(); c != calls.rend(); ++c) {
      if (std::find(c->outputs.begin(), c->outputs.end(), *g) == c->outputs.end()) continue;
      std::string_view op = c->op;
      if (op.starts_with("aten::")) op.remove_prefix(6);
      op = op.substr(0, op.find('.'));
      std::string out;
      bool upper = true;
      for (char ch : op) {
        if (ch == '_') {
          upper = true;
          continue;
        }
        out += upper ? char(std::toupper(static_cast<unsigned char>(ch))) : ch;
        upper = false;
      }
      return out + "Backward0";
    }
  }
  return "CloneBackward0";
}

// One differentiable call: the ATen calls its binding made, over `values`
// (Var id = index), from its grad-requiring inputs to its outputs.
class TapeNode : public ag::Node {
 public:
  ~TapeNode() override { unwatch(); }

  Grads apply(const Grads& grad_outputs) override {
    if (!broken.empty()) throw Error("cannot differentiate through " + name + ": " + broken);
    check_versions();
    EagerEmitter e;
    for (const Tensor& t : values) e.input(t);
    GradList gouts;
    for (const std::optional<Tensor>& g : grad_outputs) gouts.push_back(g ? std::optional<Var>(e.input(*g)) : std::nullopt);
    GradList gins = backprop(e, calls, outputs, gouts, inputs);
    Grads out;
    for (const std::optional<Var>& g : gins) out.push_back(g ? std::optional<Tensor>(e.tensor(*g)) : std::nullopt);
    return out;
  }

  // create_graph=True: the gradients, and a node whose tape is this one's
  // forward calls followed by the backward calls that computed them, so
  // differentiating a gradient again reaches both the forward inputs and the
  // incoming gradients through formulas Kiln already has.
  HistoryGrads apply_with_history(py::VM&, const HistoryGrads& grad_outputs) override {
    if (!broken.empty()) throw Error("cannot differentiate through " + name + ": " + broken);
    check_versions();
    EagerEmitter e;
    for (const Tensor& t : values) e.input(t);
    auto again = std::make_shared<TapeNode>();
    again->calls = calls;
    again->inputs = inputs;
    again->next = next;
    again->origins = origins;
    GradList gouts;
    for (const std::optional<ag::GradValue>& g : grad_outputs) {
      if (!g) {
        gouts.push_back(std::nullopt);
        continue;
      }
      Var v = e.input(g->value);
      gouts.push_back(v);
      if (g->edge.node) {
        again->inputs.push_back(v);
        again->next.push_back(g->edge);
      }
    }
    RecordingEmitter recording(e);
    GradList gins = backprop(recording, calls, outputs, gouts, inputs);
    again->calls.insert(again->calls.end(), recording.calls().begin(), recording.calls().end());
    again->values = e.values();
    again->num_outputs = gins.size();
    again->name = backward_name(recording.calls(), gins);
    const std::set<int32_t> with_history = again->values_with_history();
    HistoryGrads out;
    for (size_t k = 0; k < gins.size(); ++k) {
      again->outputs.push_back(gins[k] ? *gins[k] : Var{});
      if (!gins[k]) {
        out.push_back(std::nullopt);
        continue;
      }
      ag::GradValue g{e.tensor(*gins[k]), {}};
      if (with_history.count(gins[k]->id)) g.edge = ag::Edge{again, uint32_t(k)};
      out.push_back(std::move(g));
    }
    again->seal();
    return out;
  }

  // The values that depend on an input with history, through the calls in
  // order: a gradient that does not (the 2 of d(2a)/da) is a constant to a
  // second differentiation and does not require grad, as in PyTorch.
  std::set<int32_t> values_with_history() const {
    std::set<int32_t> live;
    for (size_t k = 0; k < inputs.size(); ++k)
      if (next[k].node) live.insert(inputs[k].id);
    for (const GradCall& c : calls) {
      bool any = false;
      for (Var v : tensor_inputs(c)) any = any || live.count(v.id);
      if (!any) continue;
      for (Var o : c.outputs)
        if (o.valid() && is_floating(values.at(size_t(o.id)).dtype())) live.insert(o.id);
    }
    return live;
  }

  void release() override {
    unwatch();
    values.clear();
    calls.clear();
  }

  // The version of every value's storage now, which backward expects to find.
  void seal() {
    for (const Tensor& t : values) {
      const Storage* s = t.storage().get();
      if (s && watched_.insert(s).second) ag::watch_storage(s);
    }
    versions.clear();
    for (const Tensor& t : values) versions.push_back(ag::storage_version(t.storage().get()));
  }

  std::vector<Tensor> values;
  std::vector<uint64_t> versions;
  std::vector<GradCall> calls;
  std::vector<Var> inputs;   // one per `next` edge
  std::vector<Var> outputs;  // one per node output
  std::string broken;        // why backward cannot go through this node
  std::map<int32_t, std::string> origins;  // Var id -> "output 0 of AddBackward0", for messages

 private:
  // PyTorch's saved-variable check: a value a formula reads must not have been
  // overwritten in place since it was recorded.
  void check_versions() const {
    for (const GradCall& c : calls) {
      const DerivativeDef* def = find_derivative(c.op);
      if (!def) continue;
      std::vector<Var> read;
      if (def->needs_inputs) read = tensor_inputs(c);
      if (def->needs_outputs) read.insert(read.end(), c.outputs.begin(), c.outputs.end());
      for (Var v : read) {
        if (!v.valid()) continue;
        const Tensor& t = values.at(size_t(v.id));
        uint64_t now = ag::storage_version(t.storage().get());
        if (now == versions.at(size_t(v.id))) continue;
        std::string origin;
        if (auto o = origins.find(v.id); o != origins.end()) origin = "which is " + o->second + ", ";
        for (size_t k = 0; k < outputs.size() && origin.empty(); ++k)
          if (outputs[k] == v) origin = "which is output " + std::to_string(k) + " of " + name + ", ";
        throw Error("one of the variables needed for gradient computation has been modified by an inplace "
                    "operation: [" + std::string(torchapi::legacy_type_name(t.dtype())) + " " + shape_str(t.sizes()) + "], " + origin +
                    "is at version " + std::to_string(now) + "; expected version " +
                    std::to_string(versions.at(size_t(v.id))) + " instead.");
      }
    }
  }

  void unwatch() {
    for (const Storage* s : watched_) ag::unwatch_storage(s);
    watched_.clear();
  }

  std::set<const Storage*> watched_;
};

class TapeRecorder : public ag::Recorder {
 public:
  void add_input(const Tensor& t, const std::string& origin) override {
    Var v = add_value(t);
    if (!origin.empty()) node_->origins[v.id] = origin;
    // An alias given twice takes its gradient once, at the first.
    if (!vars_.try_emplace(pipeline::key_of(t), v).second) node_->merged_inputs.push_back(uint32_t(node_->inputs.size()));
    node_->inputs.push_back(v);
  }

  void add_constant(const Tensor& t) override { vars_.try_emplace(pipeline::key_of(t), add_value(t)); }

  void on_aten(std::string_view op, const ValueList& args, const KwargList& kwargs, const ValueList& results) override {
    if (!node_->broken.empty()) return;
    try {
      GradCall call;
      // The bindings may name an op without its overload ("aten::mean"); formulas are keyed by the full name.
      const OpDef* def = op_registry().find(op);
      call.op = def ? def->schema.full_name() : std::string(op);
      for (const Value& a : args) call.args.push_back(to_earg(a));
      for (const auto& [k, a] : kwargs) call.kwargs.emplace_back(k, to_earg(a));
      for (const Tensor& t : pipeline::result_tensors(results, op)) {
        if (!t.defined()) {
          call.outputs.push_back(Var{});
          continue;
        }
        Var v = add_value(t);
        vars_[pipeline::key_of(t)] = v;
        call.outputs.push_back(v);
      }
      node_->calls.push_back(std::move(call));
    } catch (const Error& e) {
      node_->broken = std::string(op) + ": " + e.what();
    }
  }

  // Earlier calls read the old value: they keep a copy of it.
  void before_copy(const Tensor& dst) override {
    if (!dst.storage()) return;
    for (Tensor& t : node_->values)
      if (t.storage() == dst.storage()) t = t.clone();
  }

  void on_copy(const Tensor& dst, const Tensor& src) override {
    if (!node_->broken.empty() || !dst.storage()) return;
    const TensorKey dkey = pipeline::key_of(dst);
    // A write into part of the largest tensor of dst's storage the node knows
    // (x[i] = v, where dst is the view x[i]) changes that tensor, not just dst.
    const std::pair<const TensorKey, Var>* base = largest_of_storage(dst);
    if (!base) return;  // a tensor outside the gradient's path (a module's running statistics)
    if (base->first != dkey && shape_numel(std::get<2>(base->first)) > dst.numel()) {
      write_into_view(*base, dst, src);
      return;
    }
    auto it = vars_.find(dkey);
    if (it == vars_.end()) {
      node_->broken = "an in-place write into a tensor that overlaps another one the gradient reads "
                      "is not differentiated yet";
      return;
    }
    try {
      Var s = var_of(src);
      Var written = add_value(dst);
      node_->calls.push_back(GradCall{"aten::copy.default", {it->second, s}, {}, {written}});
      // Views taken before the write saw the old value.
      for (auto v = vars_.begin(); v != vars_.end();)
        v = std::get<0>(v->first) == dst.storage().get() && v->first != dkey ? vars_.erase(v) : std::next(v);
      vars_[dkey] = written;
    } catch (const Error& e) {
      node_->broken = std::string("copy_: ") + e.what();
    }
  }

  // dst, a view of the known tensor `base` (x[i] = v), gets src: the base's
  // new value is as_strided_scatter of the old one, whose derivative routes
  // the gradient to src and around the overwritten part.
  void write_into_view(const std::pair<const TensorKey, Var>& base, const Tensor& dst, const Tensor& src) {
    const auto& [storage, base_offset, base_sizes, base_strides, base_dtype] = base.first;
    // Positions are counted in the base's contiguous layout from its first element.
    if (base_strides != contiguous_strides(base_sizes) || base_dtype != dst.dtype() || dst.storage_offset() < base_offset) {
      node_->broken = "an in-place write into part of a tensor that is itself a strided view (x[i] = v on a "
                      "transposed or stepped slice) is not differentiated yet";
      return;
    }
    try {
      Var s = var_of(src);
      if (src.sizes() != dst.sizes()) {
        Var expanded = add_value(src.expand(dst.sizes()));
        node_->calls.push_back(GradCall{"aten::expand.default", {s, dst.sizes()}, {}, {expanded}});
        s = expanded;
      }
      Var written = add_value(dst.as_strided(base_sizes, base_strides, base_offset));
      node_->calls.push_back(GradCall{"aten::as_strided_scatter.default",
                                      {base.second, s, dst.sizes(), dst.strides(), dst.storage_offset() - base_offset},
                                      {},
                                      {written}});
      const TensorKey base_key = base.first;
      for (auto v = vars_.begin(); v != vars_.end();)
        v = std::get<0>(v->first) == dst.storage().get() ? vars_.erase(v) : std::next(v);
      vars_[base_key] = written;
    } catch (const Error& e) {
      node_->broken = std::string("x[i] = v: ") + e.what();
    }
  }

  std::shared_ptr<ag::Node> finish(const std::vector<Tensor>& outputs) override {
    for (const Tensor& t : outputs) {
      auto it = vars_.find(pipeline::key_of(t));
      if (it != vars_.end()) {
        node_->outputs.push_back(it->second);
      } else if (node_->broken.empty() && largest_of_storage(t)) {
        node_->outputs.push_back(var_of(t));  // a view of a tensor the call wrote into: read from its new value
      } else {
        node_->outputs.push_back(add_value(t));
        if (node_->broken.empty())
          node_->broken = "an output of shape " + shape_str(t.sizes()) + " was made without an ATen op Kiln can differentiate";
      }
    }
    node_->seal();
    return node_;
  }

 private:
  // The known tensor of t's storage with the most elements; null when none.
  const std::pair<const TensorKey, Var>* largest_of_storage(const Tensor& t) const {
    if (!t.storage()) return nullptr;
    const std::pair<const TensorKey, Var>* base = nullptr;
    for (const auto& kv : vars_)
      if (std::get<0>(kv.first) == t.storage().get() &&
          (!base || shape_numel(std::get<2>(kv.first)) > shape_numel(std::get<2>(base->first))))
        base = &kv;
    return base;
  }

  Var add_value(const Tensor& t) {
    node_->values.push_back(t);
    return Var{int32_t(node_->values.size() - 1)};
  }

  EArg to_earg(const Value& a) {
    return pipeline::earg_of(a, [this](const Tensor& t) { return var_of(t); });
  }

  Var var_of(const Tensor& t) {
    auto it = vars_.find(pipeline::key_of(t));
    if (it != vars_.end()) return it->second;
    // A view a binding made without an ATen call: as_strided of the largest
    // known tensor of the same storage, which its gradient flows back through.
    if (const std::pair<const TensorKey, Var>* base = largest_of_storage(t)) {
      Var view = add_value(t);
      node_->calls.push_back(GradCall{"aten::as_strided.default",
                                      {base->second, t.sizes(), t.strides(), t.storage_offset()}, {}, {view}});
      vars_[pipeline::key_of(t)] = view;
      return view;
    }
    // A tensor from outside the call's inputs that takes no gradient (a
    // constant, a buffer, an input that does not require grad).
    Var c = add_value(t);
    vars_[pipeline::key_of(t)] = c;
    return c;
  }

  std::shared_ptr<TapeNode> node_ = std::make_shared<TapeNode>();
  std::map<TensorKey, Var> vars_;
};

std::unique_ptr<ag::Recorder> make_tape_recorder() { return std::make_unique<TapeRecorder>(); }

}  // namespace

void install_eager_autograd() { ag::set_recorder_factory(&make_tape_recorder); }

}  // namespace kiln::aot
