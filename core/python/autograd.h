#pragma once
// Eager autograd for the interpreter: the graph of backward nodes that
// differentiable calls leave behind, and the engine that walks it when a
// program calls Tensor.backward().
//
// The interpreter cannot differentiate anything itself: derivative formulas
// live in the compiler library (compiler/aot), which the interpreter must not
// depend on. So a differentiable call is recorded at the level PyTorch's
// dispatcher sees (every ATen op the torch bindings run, through
// torchapi::AtenObserver) by a Recorder that the compiler installs with
// set_recorder_factory(); the Recorder turns what it saw into a Node. Without
// a factory, calls are not recorded and backward() says why.
//
// Tests: tests/compiler/test_eager_autograd.cpp.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/python/torch_api.h"
#include "core/tensor/tensor.h"

namespace kiln::py {

class VM;
class Value;
struct TensorObj;
struct CallArgs;

namespace autograd {

struct Node;

// Where one gradient goes: output `output_nr` of `node` (the node that made
// the tensor). Null node: the tensor needs no gradient.
struct Edge {
  std::shared_ptr<Node> node;
  uint32_t output_nr = 0;
};

// A backward function: gradients of its outputs in, gradients of its inputs
// (one per `next` edge) out. nullopt stands for a zero gradient.
// A gradient and, under create_graph=True, the edge its value came from in
// the graph that differentiating it again walks (null: it has no history).
struct GradValue {
  Tensor value;
  Edge edge;
};

struct Node {
  // Frees the chain behind it without recursion: a program's 100,000 ops
  // deep graph would otherwise take as many nested destructor calls.
  virtual ~Node();
  using Grads = std::vector<std::optional<Tensor>>;
  virtual Grads apply(const Grads& grad_outputs) = 0;
  // apply() for create_graph=True: the gradients out carry edges into new
  // nodes whose backward differentiates this one's. A node that cannot
  // refuses (exit 3) rather than give a gradient without its history.
  using HistoryGrads = std::vector<std::optional<GradValue>>;
  virtual HistoryGrads apply_with_history(VM& vm, const HistoryGrads& grad_outputs);
  // Frees what the node saved for backward (after a backward without retain_graph).
  virtual void release() {}

  std::string name;        // "AddmmBackward0", as grad_fn shows it
  std::vector<Edge> next;  // one per differentiable input
  // Inputs that alias an earlier one (x and x.view_as(x) in one call): the
  // recorder sees one tensor, so their gradient all goes to the earlier
  // input. Right for backward() into leaves; autograd.grad asking for the
  // alias itself is refused.
  std::vector<uint32_t> merged_inputs;
  size_t num_outputs = 1;
  bool released = false;
};

// Records the ATen calls of one differentiable call; made by the installed
// factory, fed by the interpreter.
class Recorder : public torchapi::AtenObserver {
 public:
  // A tensor the call reads that takes a gradient, in `next` edge order;
  // `origin` names where it came from for error messages ("output 0 of
  // AddBackward0", empty for a leaf).
  virtual void add_input(const Tensor& t, const std::string& origin) = 0;
  // A tensor the call writes into that takes no gradient itself (the target
  // of x[i] = v): its old value is a constant of the node.
  virtual void add_constant(const Tensor& t) = 0;
  // The node whose outputs are `outputs` (the call's differentiable results,
  // as the interpreter returns them).
  virtual std::shared_ptr<Node> finish(const std::vector<Tensor>& outputs) = 0;
};
using RecorderFactory = std::unique_ptr<Recorder> (*)();
void set_recorder_factory(RecorderFactory factory);

// How many in-place writes `storage` has had since a recorder started
// watching it (PyTorch's version counter). Watching is counted so the table
// forgets storages no node needs any more.
uint64_t storage_version(const Storage* storage);
void watch_storage(const Storage* storage);
void unwatch_storage(const Storage* storage);
void bump_storage_version(const Storage* storage);

// Records one Python-level call when grad mode is on, `enabled` (the call is
// differentiable and runs eagerly) and an input requires grad. Between
// construction and finish() the recorder sees every ATen op the bindings run.
class CallRecording {
 public:
  CallRecording(VM& vm, const CallArgs& args, bool enabled);
  ~CallRecording();
  CallRecording(const CallRecording&) = delete;
  CallRecording& operator=(const CallRecording&) = delete;
  bool active() const { return recorder_ != nullptr; }
  // See Recorder::add_constant; before the call's ATen ops run.
  void add_constant(const Tensor& t) {
    if (recorder_) recorder_->add_constant(t);
  }
  // The call writes into `target` in place. When `target` views another
  // tensor, that base's value changes too: it joins the call as an input
  // (or a constant when it has no history) and gets the node's output for
  // its new value, as PyTorch's CopySlices.
  void begin_write(VM& vm, TensorObj* target);
  // Gives `target` the node `name` (its base, CopySlices) and notes the write
  // in their storage, so that views taken before it are known stale.
  void finish_write(TensorObj* target, const std::string& name);
  // Gives each of `outputs` (null entries skipped) the node named `name`.
  void finish(const std::vector<TensorObj*>& outputs, const std::string& name);

 private:
  void add_base(TensorObj* base);
  void stop();
  bool enabled_ = false;  // grad mode, eager: the call is recorded when it has inputs with a history
  TensorObj* write_base_ = nullptr;
  std::unique_ptr<Recorder> recorder_;
  std::vector<Edge> edges_;
  torchapi::AtenObserver* previous_ = nullptr;
  bool installed_ = false;
  std::unique_ptr<torchapi::AtenObserver> chain_;
};

// The edge a gradient for `t` flows into: its node, or for a leaf that
// requires grad the node accumulating into its .grad. Null when it needs none.
Edge edge_of(TensorObj* t);
// Gives `t` a node of its own (its value was replaced by an in-place write
// that the node stands for).
void set_history(TensorObj* t, std::shared_ptr<Node> node, uint32_t output_nr);

// ---- views and in-place writes ----
// PyTorch gives a view's base a new history when the view is written in place
// (CopySlices) and regenerates a view's history after its base is written.
// Kiln does the first; a tensor whose history an in-place write into its
// memory made stale is refused when it takes part in a recorded call, never
// differentiated through its old history.

// `view` (a view op's result) shares the memory of `of`: remember the base.
void note_view(TensorObj* view, const TensorObj* of);
// An in-place write into `target` that no call would record although its base
// has a gradient history (the view was made under no_grad, or before the base
// had one): PyTorch's error, or the stale-view refusal. Never silently untracked.
void check_untracked_view_write(VM& vm, const TensorObj* target);

// Tensor.retain_grad() on a non-leaf `t`: later backward passes through its
// node also fill t.grad (accumulating, as PyTorch's retains_grad hook), for as
// long as the program holds the tensor.
void retain_grad(VM& vm, TensorObj* t);

// Tensor.backward(): runs the graph from `roots` with `grads` (an implicit
// 1.0 for a one-element root with no gradient given) and accumulates into the
// .grad of the leaves reached. Frees the graph unless `retain_graph`.
// With `create_graph` the gradients keep their history (.grad of a leaf is a
// tensor that can be differentiated again).
void backward(VM& vm, const std::vector<TensorObj*>& roots, const std::vector<std::optional<GradValue>>& grads,
              bool retain_graph, bool create_graph = false);

// The leaf `from`'s place in the graphs recorded so far passes to `to`, an
// object for the same tensor: backward accumulates into to.grad. (A region's
// real run made `from`; the program holds `to`.)
void move_leaf(TensorObj* from, TensorObj* to);

// Adds `g` into leaf.grad as AccumulateGrad does: in place once it exists (a
// program holding p.grad sees the sum), else a copy of its own in the leaf's dtype.
void accumulate_grad(TensorObj& leaf, const Tensor& g);

// torch.autograd.grad: the gradients of `roots` with respect to `inputs`
// (nullopt where none arrives: unused, or allowed by allow_unused), running
// only the nodes on a path to an input and filling no .grad. With
// `create_graph` each carries the edge of its history.
std::vector<std::optional<GradValue>> grad(VM& vm, const std::vector<TensorObj*>& roots,
                                           const std::vector<std::optional<GradValue>>& grads,
                                           const std::vector<TensorObj*>& inputs, bool retain_graph, bool allow_unused,
                                           bool create_graph = false);
// A tensor object for gradient `g`, carrying its history when it has one.
Value grad_value_object(const GradValue& g);
// The gradient a program passed (grad_outputs, backward's gradient): its
// value, with its edge when it takes part in autograd.
GradValue grad_value_of(TensorObj* t);

}  // namespace autograd
}  // namespace kiln::py
