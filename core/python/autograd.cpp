#include "core/python/autograd.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "core/ops/registry.h"
#include "core/python/object.h"
#include "core/python/torch_convert.h"
#include "core/python/vm.h"

namespace kiln::py::autograd {

namespace {

RecorderFactory g_factory = nullptr;

struct VersionEntry {
  uint64_t version = 0;
  int watchers = 0;
};
std::mutex g_versions_mutex;
std::unordered_map<const Storage*, VersionEntry> g_versions;

Tensor add_grads(const Tensor& a, const Tensor& b) {
  Expected<kiln::ValueList> sum = call_op("aten::add.Tensor", {kiln::Value(a), kiln::Value(b)}, {});
  if (!sum) throw Error(sum.status().message());
  return sum->at(0).to_tensor();
}

// Accumulates into a leaf's .grad, in place once it exists (as PyTorch's
// AccumulateGrad does, so a program holding p.grad sees the sum).
struct AccumulateGrad : Node {
  explicit AccumulateGrad(Ref<TensorObj> leaf) : leaf(std::move(leaf)) {
    name = "AccumulateGrad";
    num_outputs = 1;
  }
  Grads apply(const Grads& grads) override {
    if (!grads.empty() && grads[0]) accumulate_grad(*leaf, *grads[0]);
    return {};
  }
  // Under create_graph PyTorch's AccumulateGrad keeps the history: .grad is a
  // clone of the first gradient (CloneBackward0), then old + new out of place.
  HistoryGrads apply_with_history(VM&, const HistoryGrads& grads) override;
  Ref<TensorObj> leaf;
};

// The backward of clone: the gradient passes through unchanged.
struct CloneNode : Node {
  explicit CloneNode(Edge from) {
    name = "CloneBackward0";
    next = {std::move(from)};
  }
  Grads apply(const Grads& g) override { return {g.at(0)}; }
  HistoryGrads apply_with_history(VM&, const HistoryGrads& g) override { return {g.at(0)}; }
};

// Two gradients for one slot under create_graph: their sum, whose backward
// hands its gradient to both (PyTorch's engine adds them with a recorded add).
struct SumNode : Node {
  SumNode(Edge a, Edge b) {
    name = "AddBackward0";
    next = {std::move(a), std::move(b)};
  }
  Grads apply(const Grads& g) override { return {g.at(0), g.at(0)}; }
  HistoryGrads apply_with_history(VM&, const HistoryGrads& g) override { return {g.at(0), g.at(0)}; }
};

GradValue add_grad_values(const GradValue& a, const GradValue& b) {
  GradValue sum{add_grads(a.value, b.value), {}};
  if (a.edge.node || b.edge.node) sum.edge = Edge{std::make_shared<SumNode>(a.edge, b.edge), 0};
  return sum;
}

}  // namespace

Node::HistoryGrads AccumulateGrad::apply_with_history(VM&, const HistoryGrads& grads) {
  if (grads.empty() || !grads[0]) return {};
  const GradValue& g = *grads[0];
  GradValue result;
  if (leaf->grad.is(ObjKind::Tensor)) {
    result = add_grad_values(grad_value_of(leaf->grad.as<TensorObj>()), g);
  } else {
    result.value = g.value.clone();
    if (g.edge.node) result.edge = Edge{std::make_shared<CloneNode>(g.edge), 0};
  }
  if (result.value.dtype() != leaf->t.dtype()) {
    if (result.edge.node)
      throw PyError("NotImplementedError", "create_graph=True with a gradient of another dtype than its leaf",
                    /*unsupported=*/true);
    result.value = result.value.to(leaf->t.dtype());
  }
  leaf->grad = grad_value_object(result);
  leaf->grad.as<TensorObj>()->device = leaf->device;
  return {};
}

void accumulate_grad(TensorObj& leaf, const Tensor& g) {
  if (leaf.grad.is(ObjKind::Tensor)) {
    const Tensor& old = leaf.grad.as<TensorObj>()->t;
    old.copy_(add_grads(old, g));
    bump_storage_version(old.storage().get());
  } else {
    // The gradient may alias a value saved elsewhere: the leaf gets its own.
    Tensor own = g.clone();
    if (own.dtype() != leaf.t.dtype()) own = own.to(leaf.t.dtype());
    leaf.grad = tensor_value(own);
    leaf.grad.as<TensorObj>()->device = leaf.device;
  }
}

namespace {

// Sees every ATen call for the recorder and for the observer that was
// installed before (an ATen lowering in progress).
class Chain : public torchapi::AtenObserver {
 public:
  Chain(torchapi::AtenObserver& first, torchapi::AtenObserver& second) : first_(first), second_(second) {}
  void on_aten(std::string_view op, const ValueList& args, const KwargList& kwargs, const ValueList& results) override {
    first_.on_aten(op, args, kwargs, results);
    second_.on_aten(op, args, kwargs, results);
  }
  void before_copy(const Tensor& dst) override {
    first_.before_copy(dst);
    second_.before_copy(dst);
  }
  void on_copy(const Tensor& dst, const Tensor& src) override {
    first_.on_copy(dst, src);
    second_.on_copy(dst, src);
  }

 private:
  torchapi::AtenObserver& first_;
  torchapi::AtenObserver& second_;
};


}  // namespace

Node::~Node() {
  std::vector<std::shared_ptr<Node>> doomed;
  for (Edge& e : next)
    if (e.node) doomed.push_back(std::move(e.node));
  while (!doomed.empty()) {
    std::shared_ptr<Node> n = std::move(doomed.back());
    doomed.pop_back();
    // The last owner takes the node's edges first, so it dies with none.
    if (n.use_count() == 1)
      for (Edge& e : n->next)
        if (e.node) doomed.push_back(std::move(e.node));
  }
}

void set_recorder_factory(RecorderFactory factory) { g_factory = factory; }

uint64_t storage_version(const Storage* storage) {
  std::lock_guard lock(g_versions_mutex);
  auto it = g_versions.find(storage);
  return it == g_versions.end() ? 0 : it->second.version;
}

void watch_storage(const Storage* storage) {
  if (!storage) return;
  std::lock_guard lock(g_versions_mutex);
  ++g_versions[storage].watchers;
}

void unwatch_storage(const Storage* storage) {
  if (!storage) return;
  std::lock_guard lock(g_versions_mutex);
  auto it = g_versions.find(storage);
  if (it != g_versions.end() && --it->second.watchers <= 0) g_versions.erase(it);
}

void bump_storage_version(const Storage* storage) {
  if (!storage) return;
  std::lock_guard lock(g_versions_mutex);
  auto it = g_versions.find(storage);
  if (it != g_versions.end()) ++it->second.version;
}

// ---- recording ----

namespace {
bool takes_part(const TensorObj* t) {
  auto has_history = [](const TensorObj* x) { return x->requires_grad || x->grad_node != nullptr; };
  return has_history(t) || (t->view_base && has_history(t->view_base.get()));
}

// A view whose memory an in-place write changed after its history was made
// would be differentiated through its old value: refused instead. (Tensors
// that are not views get a history of their own from every write into them.)
void check_not_stale(const TensorObj* t) {
  if (!t || !t->view_base || !t->t.storage() || t->history_seen == t->t.storage()->history_writes() ||
      !takes_part(t))
    return;
  throw PyError("RuntimeError",
                "a tensor of shape " + shape_str(t->t.sizes()) + " shares memory with a tensor written in place after "
                "it was made (a view taken before the write); "
                "PyTorch regenerates its gradient history, Kiln does not: take the view again after the write",
                /*unsupported=*/true);
}
}  // namespace

void check_untracked_view_write(VM& vm, const TensorObj* target) {
  if (!vm.grad_enabled || !target || !target->view_base || target->requires_grad || target->grad_node) return;
  const TensorObj* base = target->view_base.get();
  if (!base->requires_grad && !base->grad_node) return;
  check_not_stale(target);
  throw PyError("RuntimeError",
                "A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that "
                "this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both "
                "the view and the inplace either both inside the no_grad block (if you don't want the inplace to be "
                "tracked) or both outside (if you want the inplace to be tracked).");
}

void note_view(TensorObj* view, const TensorObj* of) {
  if (!view || !of || view == of || !view->t.storage() || view->t.storage() != of->t.storage()) return;
  view->view_base = of->view_base ? of->view_base : Ref<TensorObj>(const_cast<TensorObj*>(of));
  view->history_seen = view->t.storage()->history_writes();
}

namespace {

// The base whose history an in-place write into `target` changes too; null
// when there is none. PyTorch's error for a view of a leaf that requires grad.
TensorObj* base_of_write(VM& vm, TensorObj* target) {
  if (!target || !target->view_base) return nullptr;
  TensorObj* base = target->view_base.get();
  if (vm.grad_enabled && base->requires_grad && base->grad_fn.empty())
    throw PyError("RuntimeError", "a view of a leaf Variable that requires grad is being used in an in-place operation.");
  return base;
}

// After a recorded in-place write: the storage counts it; target and base
// (may be null) have current histories.
void note_history_write(TensorObj* target, TensorObj* base) {
  if (!target || !target->t.storage()) return;
  target->t.storage()->note_history_write();
  target->history_seen = target->t.storage()->history_writes();
  if (base) base->history_seen = target->history_seen;
}

}  // namespace

void CallRecording::begin_write(VM& vm, TensorObj* target) {
  if (!enabled_) return;
  write_base_ = base_of_write(vm, target);
  add_base(write_base_);
}

void CallRecording::finish_write(TensorObj* target, const std::string& name) {
  mark_grad(target, name);
  mark_grad(write_base_, "CopySlices");
  finish({target, write_base_}, name);
  if (enabled_) note_history_write(target, write_base_);
}

void CallRecording::add_base(TensorObj* base) {
  if (!recorder_ || !base) return;
  if (base->requires_grad || base->grad_node) {
    edges_.push_back(edge_of(base));
    recorder_->add_input(base->t, base->grad_node ? "output " + std::to_string(base->output_nr) + " of " + base->grad_node->name : "");
  } else {
    recorder_->add_constant(base->t);
  }
}

CallRecording::CallRecording(VM& vm, const CallArgs& args, bool enabled) : enabled_(enabled) {
  if (!enabled || !g_factory) return;
  for (size_t i = 0; i < args.npos; ++i) check_not_stale(tensor_obj(args[i]));
  std::vector<TensorObj*> inputs = inputs_requiring_grad(vm, args);
  if (inputs.empty()) return;
  recorder_ = g_factory();
  std::vector<const TensorObj*> added;
  for (TensorObj* t : inputs) {
    // x * x: one input, whose edge takes the whole gradient.
    if (std::find(added.begin(), added.end(), t) != added.end()) continue;
    added.push_back(t);
    edges_.push_back(edge_of(t));
    recorder_->add_input(t->t, t->grad_node ? "output " + std::to_string(t->output_nr) + " of " + t->grad_node->name : "");
  }
  previous_ = torchapi::set_aten_observer(nullptr);
  installed_ = true;
  if (previous_) {
    chain_ = std::make_unique<Chain>(*recorder_, *previous_);
    torchapi::set_aten_observer(chain_.get());
  } else {
    torchapi::set_aten_observer(recorder_.get());
  }
}

CallRecording::~CallRecording() { stop(); }

void CallRecording::stop() {
  if (!installed_) return;
  installed_ = false;
  torchapi::set_aten_observer(previous_);
  chain_.reset();
  previous_ = nullptr;
}

void CallRecording::finish(const std::vector<TensorObj*>& outputs, const std::string& name) {
  if (!recorder_) return;
  stop();
  std::vector<TensorObj*> differentiable;
  std::vector<Tensor> tensors;
  for (TensorObj* t : outputs)
    if (t && is_floating(t->t.dtype())) {
      differentiable.push_back(t);
      tensors.push_back(t->t);
    }
  if (differentiable.empty()) return;
  std::shared_ptr<Node> node = recorder_->finish(tensors);
  node->name = name;
  node->next = std::move(edges_);
  node->num_outputs = tensors.size();
  for (size_t i = 0; i < differentiable.size(); ++i) set_history(differentiable[i], node, uint32_t(i));
  recorder_.reset();
}

Edge edge_of(TensorObj* t) {
  if (!t) return {};
  if (t->grad_node) return {t->grad_node, t->output_nr};
  if (!t->requires_grad) return {};
  std::shared_ptr<Node> acc = t->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(Ref<TensorObj>(t));
    t->grad_accumulator = acc;
  }
  return {acc, 0};
}

void move_leaf(TensorObj* from, TensorObj* to) {
  to->requires_grad = from->requires_grad;
  std::shared_ptr<Node> acc = from->grad_accumulator.lock();
  if (!acc) return;
  static_cast<AccumulateGrad*>(acc.get())->leaf = Ref<TensorObj>(to);
  to->grad_accumulator = acc;
  from->grad_accumulator.reset();
}

void set_history(TensorObj* t, std::shared_ptr<Node> node, uint32_t output_nr) {
  t->requires_grad = true;
  t->grad_node = std::move(node);
  t->output_nr = output_nr;
}

// ---- the engine ----

namespace {

using Retained = std::vector<Ref<TensorObj>>;

Retained& retained(VM& vm) {
  auto& slot = vm.extensions["kiln.retained_grads"];
  if (!slot) slot = std::make_shared<Retained>();
  return *static_cast<Retained*>(slot.get());
}

// A retained tensor's .grad gets the gradient of its node's output.
void fill_retained(TensorObj& t, const Tensor& g) {
  if (t.grad.is(ObjKind::Tensor)) {
    t.grad = tensor_value(add_grads(t.grad.as<TensorObj>()->t, g));
  } else {
    t.grad = tensor_value(g.clone());
  }
  t.grad.as<TensorObj>()->device = t.device;
}

}  // namespace

void retain_grad(VM& vm, TensorObj* t) {
  if (t->retains_grad) return;
  Retained& list = retained(vm);
  // Tensors only this list still holds are gone for the program.
  std::erase_if(list, [](const Ref<TensorObj>& r) { return r->refs == 1; });
  t->retains_grad = true;
  list.push_back(Ref<TensorObj>(t));
}

namespace {

// The roots of a pass and the gradients they start with, checked as PyTorch
// checks them.
void root_edges_and_grads(const std::vector<TensorObj*>& roots, const std::vector<std::optional<GradValue>>& grads,
                          std::vector<Edge>& root_edges, std::vector<GradValue>& root_grads) {
  if (!g_factory)
    throw PyError("RuntimeError",
                  "Tensor.backward(): this interpreter records no gradients (the host did not install Kiln's "
                  "derivative formulas)", /*unsupported=*/true);
  for (size_t i = 0; i < roots.size(); ++i) {
    Edge e = edge_of(roots[i]);
    if (!e.node)
      throw PyError("RuntimeError", "element " + std::to_string(i) + " of tensors does not require grad and does not have a grad_fn");
    std::optional<GradValue> g = i < grads.size() ? grads[i] : std::nullopt;
    if (!g) {
      if (roots[i]->t.numel() != 1) throw PyError("RuntimeError", "grad can be implicitly created only for scalar outputs");
      g = GradValue{Tensor::full(roots[i]->t.sizes(), Scalar(1.0), roots[i]->t.dtype()), {}};
    } else if (g->value.sizes() != roots[i]->t.sizes()) {
      throw PyError("RuntimeError", "Mismatch in shape: grad_output[" + std::to_string(i) + "] has a shape of " +
                                        shape_str(g->value.sizes()) + " and output[" + std::to_string(i) +
                                        "] has a shape of " + shape_str(roots[i]->t.sizes()) + ".");
    }
    root_edges.push_back(e);
    root_grads.push_back(*g);
  }
}

// A gradient autograd.grad asks for: what arrives at `edge` (the input's own
// node output, or its AccumulateGrad for a leaf).
struct Capture {
  Edge edge;
  std::optional<GradValue> grad;
};

// Walks the graph from the roots. Without captures every reachable node runs
// and the leaves' AccumulateGrad nodes fill .grad (backward()). With
// captures (autograd.grad) only the nodes on a path to a captured edge run,
// and no .grad is touched, as PyTorch's engine prunes by exec_info. With
// create_graph each node's gradients keep their history (apply_with_history)
// and grad mode is on while they are computed, as in PyTorch.
void run_pass(VM& vm, const std::vector<Edge>& root_edges, const std::vector<GradValue>& root_grads, bool retain_graph,
              std::vector<Capture>* captures, bool create_graph) {
  // How many edges lead into each node reachable from the roots: a node runs
  // once every gradient for it has arrived.
  std::unordered_map<Node*, int> pending;
  std::vector<Node*> stack;
  std::unordered_set<Node*> seen;
  for (const Edge& e : root_edges)
    if (seen.insert(e.node.get()).second) stack.push_back(e.node.get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    if (n->released)
      throw PyError("RuntimeError",
                    "Trying to backward through the graph a second time (or directly access saved tensors after they "
                    "have already been freed). Saved intermediate values of the graph are freed when you call "
                    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
                    "graph a second time or if you need to access saved tensors after calling backward.");
    for (const Edge& e : n->next) {
      if (!e.node) continue;
      ++pending[e.node.get()];
      if (seen.insert(e.node.get()).second) stack.push_back(e.node.get());
    }
  }

  // Which nodes run: all of them for backward(); for autograd.grad those with
  // a path to a captured edge (children before parents in reverse Kahn order).
  std::unordered_map<Node*, std::vector<Capture*>> captured_at;
  std::unordered_set<Node*> runs;
  if (captures) {
    for (Capture& c : *captures)
      if (c.edge.node && seen.count(c.edge.node.get())) captured_at[c.edge.node.get()].push_back(&c);
    std::unordered_map<Node*, int> indegree = pending;
    std::vector<Node*> topo;
    std::vector<Node*> frontier;
    for (const Edge& e : root_edges)
      if (indegree[e.node.get()] == 0 && std::find(frontier.begin(), frontier.end(), e.node.get()) == frontier.end())
        frontier.push_back(e.node.get());
    while (!frontier.empty()) {
      Node* n = frontier.back();
      frontier.pop_back();
      topo.push_back(n);
      for (const Edge& e : n->next)
        if (e.node && --indegree[e.node.get()] == 0) frontier.push_back(e.node.get());
    }
    for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
      Node* n = *it;
      if (dynamic_cast<AccumulateGrad*>(n)) continue;
      for (const Edge& e : n->next)
        if (e.node && (runs.count(e.node.get()) || captured_at.count(e.node.get()))) {
          runs.insert(n);
          break;
        }
    }
  }
  auto should_run = [&](Node* n) { return !captures || runs.count(n); };

  // Retained non-leaves reached by this pass, by the node that makes them
  // (their current node: an in-place write moves the tensor to a new one).
  std::unordered_map<Node*, std::vector<TensorObj*>> retained_at;
  for (const Ref<TensorObj>& r : retained(vm))
    if (r->refs > 1 && r->grad_node && seen.count(r->grad_node.get())) retained_at[r->grad_node.get()].push_back(r.get());

  std::unordered_map<Node*, Node::HistoryGrads> buffers;
  auto deliver = [&](const Edge& e, const GradValue& g) {
    Node::HistoryGrads& b = buffers[e.node.get()];
    if (b.size() < e.node->num_outputs) b.resize(e.node->num_outputs);
    std::optional<GradValue>& slot = b.at(e.output_nr);
    slot = slot ? add_grad_values(*slot, g) : g;
  };
  for (size_t i = 0; i < root_edges.size(); ++i) deliver(root_edges[i], root_grads[i]);

  std::vector<Node*> ran;
  bool saved_mode = vm.grad_enabled;
  vm.grad_enabled = create_graph;  // backward records only what create_graph asks to differentiate again
  try {
    std::vector<Node*> ready;
    for (const Edge& e : root_edges)
      if (pending[e.node.get()] == 0 && std::find(ready.begin(), ready.end(), e.node.get()) == ready.end())
        ready.push_back(e.node.get());
    while (!ready.empty()) {
      Node* n = ready.back();
      ready.pop_back();
      Node::HistoryGrads in = std::move(buffers[n]);
      buffers.erase(n);
      in.resize(n->num_outputs);
      if (auto it = captured_at.find(n); it != captured_at.end())
        for (Capture* c : it->second)
          if (c->edge.output_nr < in.size()) c->grad = in[c->edge.output_nr];
      Node::HistoryGrads out;
      if (should_run(n)) {
        if (auto it = retained_at.find(n); it != retained_at.end())
          for (TensorObj* t : it->second)
            if (t->output_nr < in.size() && in[t->output_nr]) fill_retained(*t, in[t->output_nr]->value);
        // A backward pass is one VM call that may run for seconds: the time
        // limit and cancellation are checked per node, not per instruction.
        vm.check_deadline();
        for (uint32_t k : n->merged_inputs)
          if (captures && k < n->next.size() && n->next[k].node &&
              (captured_at.count(n->next[k].node.get()) || runs.count(n->next[k].node.get())))
            throw PyError("NotImplementedError",
                          "torch.autograd.grad through " + n->name + ", which took two aliases of one tensor (x and a "
                          "view of all of x): Kiln cannot tell their gradients apart",
                          /*unsupported=*/true);
        if (create_graph) {
          out = n->apply_with_history(vm, in);
        } else {
          Node::Grads plain;
          for (const std::optional<GradValue>& g : in) plain.push_back(g ? std::optional<Tensor>(g->value) : std::nullopt);
          for (std::optional<Tensor>& g : n->apply(plain)) out.push_back(g ? std::optional<GradValue>(GradValue{*g, {}}) : std::nullopt);
        }
        ran.push_back(n);
      }
      for (size_t k = 0; k < n->next.size(); ++k) {
        const Edge& e = n->next[k];
        if (!e.node) continue;
        if (k < out.size() && out[k]) deliver(e, *out[k]);
        if (--pending[e.node.get()] == 0) ready.push_back(e.node.get());
      }
    }
  } catch (const Error& e) {
    vm.grad_enabled = saved_mode;
    // An op Kiln has no formula for (a backward op differentiated again under
    // create_graph): Kiln's gap, exit 3, not the program's error.
    const std::string message = e.what();
    if (message.find("no derivative formula for") != std::string::npos) throw PyError("NotImplementedError", message, true);
    throw PyError("RuntimeError", message);
  } catch (...) {
    vm.grad_enabled = saved_mode;
    throw;
  }
  vm.grad_enabled = saved_mode;
  // What ran frees what it saved; a node autograd.grad pruned keeps it, as in PyTorch.
  if (!retain_graph)
    for (Node* n : ran)
      if (!dynamic_cast<AccumulateGrad*>(n)) {
        n->release();
        n->released = true;
      }
}

}  // namespace

Node::HistoryGrads Node::apply_with_history(VM&, const HistoryGrads&) {
  throw PyError("NotImplementedError",
                "create_graph=True through " + name + ": Kiln cannot differentiate this node's backward again",
                /*unsupported=*/true);
}

void backward(VM& vm, const std::vector<TensorObj*>& roots, const std::vector<std::optional<GradValue>>& grads,
              bool retain_graph, bool create_graph) {
  std::vector<Edge> root_edges;
  std::vector<GradValue> root_grads;
  root_edges_and_grads(roots, grads, root_edges, root_grads);
  run_pass(vm, root_edges, root_grads, retain_graph, nullptr, create_graph);
}

std::vector<std::optional<GradValue>> grad(VM& vm, const std::vector<TensorObj*>& roots,
                                           const std::vector<std::optional<GradValue>>& grads,
                                           const std::vector<TensorObj*>& inputs, bool retain_graph, bool allow_unused,
                                           bool create_graph) {
  std::vector<Edge> root_edges;
  std::vector<GradValue> root_grads;
  root_edges_and_grads(roots, grads, root_edges, root_grads);
  std::vector<Capture> captures;
  for (TensorObj* t : inputs) {
    if (!t->requires_grad && !t->grad_node) throw PyError("RuntimeError", "One of the differentiated Tensors does not require grad");
    captures.push_back(Capture{edge_of(t), std::nullopt});
  }
  run_pass(vm, root_edges, root_grads, retain_graph, &captures, create_graph);
  std::vector<std::optional<GradValue>> result;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::optional<GradValue>& g = captures[i].grad;
    if (!g && !allow_unused)
      throw PyError("RuntimeError",
                    "One of the differentiated Tensors appears to not have been used in the graph. Set "
                    "allow_unused=True if this is the desired behavior.");
    if (g && g->value.dtype() != inputs[i]->t.dtype()) {
      if (g->edge.node)
        throw PyError("NotImplementedError", "create_graph=True with a gradient of another dtype than its input",
                      /*unsupported=*/true);
      g->value = g->value.to(inputs[i]->t.dtype());
    }
    result.push_back(g);
  }
  return result;
}

Value grad_value_object(const GradValue& g) {
  Value v = tensor_value(g.value);
  if (g.edge.node) {
    TensorObj* t = v.as<TensorObj>();
    set_history(t, g.edge.node, g.edge.output_nr);
    t->grad_fn = g.edge.node->name;
  }
  return v;
}

GradValue grad_value_of(TensorObj* t) {
  GradValue g{t->t, {}};
  if (t->requires_grad || t->grad_node) g.edge = edge_of(t);
  return g;
}

}  // namespace kiln::py::autograd
