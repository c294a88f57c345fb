#pragma once
// Traces one region of a frame: from the frame's pc to its return or to the
// first graph break. Runs on the real frame, stepping the interpreter one
// instruction at a time with VM::tracer set, and keeps a shadow of the value
// stack and locals holding the source of each value, so that what the trace
// reads becomes guards and graph inputs. Calls into Python functions are
// inlined (traced in the same region).
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "compiler/capture/capture.h"
#include "compiler/capture/guard.h"
#include "compiler/capture/source.h"
#include "core/graph/graph.h"
#include "core/python/torch_api.h"

namespace kiln::capture {

// An argument of a captured call, with graph values by node id.
struct ArgTemplate {
  enum class Kind { Const, Node, Tuple, List, Dict, Slice };
  Kind kind = Kind::Const;
  py::Value value;
  NodeId node = kNoNode;
  std::vector<ArgTemplate> items;  // Dict: key, value, key, value
};

struct RegionResult;

// How to run one call_function / call_method node again with real values.
struct GraphStep {
  NodeId node = kNoNode;
  // Aten: an ATen op called directly (torch.ops.aten.round(x) in a graph read
  // from a file); name is the op, "aten::round.default", or an overload packet
  // "aten::round" whose overload the arguments pick.
  // Cond: torch.ops.higher_order.cond; args are the predicate, two unused
  // slots (the branches' get_attr nodes) and the operand tuple; `branches`
  // holds the true and the false branch, each run as a region of its own.
  // Attr: a get_attr node naming a subgraph; it stands for no runtime value.
  // FunctionApply: torch.ops.higher_order.autograd_function_apply; args are
  // two unused slots (fwd_body_N, bwd_body_N) and the call's argument tuple;
  // it runs `function`'s apply eagerly, so the class's own backward is what
  // autograd records, as for an apply outside compiled code.
  // Marker: a node that runs nothing where the graph runs: a torch.autocast
  // block's _enter_autocast / _exit_autocast, which Dynamo records in the
  // graph (the casts themselves follow each step's `autocast`).
  // PyFunction: a Python function Dynamo keeps whole in its graph (one that
  // stands for an ATen builtin, torch.lstm_cell, or one allowed in the graph,
  // einops.rearrange): `function` runs again on the real arguments, so the
  // ops it runs are the ones eager code runs and the lowering sees.
  enum class Kind { Call, Method, Operator, GetItem, Aten, Cond, Attr, FunctionApply, Marker, PyFunction } kind = Kind::Call;
  const torchapi::Callable* callable = nullptr;  // Call: the torch function
  std::string name;         // Method: the method; Operator: "operator.add", ...; Aten: the op
  std::vector<ArgTemplate> args;
  std::vector<std::pair<std::string, ArgTemplate>> kwargs;
  int index = 0;            // GetItem
  bool grad_enabled = true;  // the grad mode it ran under (a no_grad block inside the region)
  // The autocast state it ran under: its casts are made again where the graph
  // runs and lowers (AOTAutograd traces them into the ATen graph).
  torchapi::AutocastState autocast;
  std::vector<std::shared_ptr<const RegionResult>> branches;  // Cond: true, false
  py::Value function;         // FunctionApply: the torch.autograd.Function subclass; PyFunction: the function
  bool single_output = false;  // FunctionApply: forward returned one tensor, not a tuple
};

// How a value of the frame's state after the region is rebuilt on a cache hit.
struct StateTemplate {
  enum class Kind { Const, Output, Source, Tuple, List, Dict, NamedTuple, Bound, Unbound, Range };
  Kind kind = Kind::Const;
  py::Value value;
  int output = 0;
  SourcePtr source;
  std::vector<StateTemplate> items;  // Dict: key, value, key, value
  std::vector<py::Value> fields;  // NamedTuple: field names; value holds the class
  // Bound: value is the method as traced, items[0] rebuilds its receiver
  int64_t range[3] = {0, 0, 0};  // Range iterator: cur, stop, step
};

// A global module, or a callable or module reached through one (torch,
// torch.abs, torch.nn.functional.relu), that the region read: Dynamo guards its
// identity (MODULE_MATCH, BUILTIN_MATCH, CLOSURE_MATCH). Kiln lists these for
// explain's "Out Guards"; it does not check them on a cache hit.
struct GlobalRead {
  std::string name;          // "G['torch'].abs"
  std::string create_fn;     // "MODULE_MATCH", "BUILTIN_MATCH", "CLOSURE_MATCH"
  std::string repr;          // the object's str(), as PyTorch prints it where Kiln knows it
  std::string type_name;     // "module", "builtin_function_or_method", "function"
  size_t inputs_before = 0;  // graph inputs lifted before the read: its place among the input guards
};

// A call of a function in torch._dynamo.config.reorderable_logging_functions
// (print) that the trace did not run: it runs after the graph, with the values
// its arguments have then, on the traced call and on every cache hit.
struct DeferredCall {
  py::Value fn;
  std::vector<StateTemplate> args;  // rebuilt on a cache hit
};

// A change the region made to an object that existed before it (self.attn = p,
// self.cache[k] = v, a list's append): Dynamo's side effects, applied after
// the graph on every cache hit, so the object ends each call as eager code
// leaves it, a tensor stored there being a graph output.
struct SideEffect {
  StateTemplate target;  // the object: an instance (its attributes), a dict or a list
  bool is_list = false;
  // An instance or dict: keys set (key, value, key, value, ...) and keys removed.
  std::vector<StateTemplate> sets, removed;
  // A list: its new items; kept[i] >= 0 takes the item the list held at that
  // index before the replay (its length is guarded), else items[i].
  std::vector<StateTemplate> items;
  std::vector<int> kept;
};

struct RegionResult {
  Graph graph;                          // placeholders, ops, output
  std::vector<GraphStep> steps;         // one per op node, in order
  std::vector<SourcePtr> inputs;        // one per placeholder
  std::vector<py::Value> input_values;  // the values the inputs had during the trace
  std::vector<Guard> guards;
  std::vector<GlobalRead> global_reads;  // in the order the trace read them
  int exit_pc = 0;
  bool returned = false;
  std::optional<py::BreakInfo> break_info;
  BreakRecord break_record;
  bool restarted = false;    // a break Dynamo handles by restarting analysis (compile id "_1")
  bool reusable = true;      // false: effects a cache hit could not replay; re-trace every call
  // Dynamo 2.11 cannot resume after this region's break (an RNN, GRU or LSTM
  // module call, allow_rnn off): the rest of the frame runs eagerly, and with
  // no inlined call completed before it Dynamo skips the frame: no graph.
  bool unresumable = false;
  bool frame_skipped = false;
  std::string not_reusable_why;
  // Set when reusable: how to rebuild the frame after the region.
  std::vector<StateTemplate> stack_after, locals_after;
  StateTemplate return_value;
  std::vector<DeferredCall> deferred_calls;  // in call order
  std::vector<SideEffect> side_effects;      // applied after the graph, before the deferred calls
  int op_count = 0;          // call_function + call_method nodes
  // Grad mode when the region ends (a region may enter or leave a no_grad
  // block): a cache hit sets it, as the traced run did.
  bool grad_enabled_after = true;
  torchapi::AutocastState autocast_after;  // as grad_enabled_after (a break inside an autocast block)
  // Whether some op ran under another grad mode than the region's entry.
  bool changes_grad_mode() const;
};

struct TraceSettings {
  std::vector<std::pair<std::string, int>> dynamic_dims;  // (source text, dim) sizes that vary
  bool all_dynamic = false;                               // dynamic=True
  // Int and float arguments (source text, "L['k']") that changed since the last
  // compile: graph inputs instead of guarded constants, as Dynamo's automatic
  // dynamic makes them SymInt / SymFloat inputs.
  std::vector<std::string> dynamic_scalars;
  // Runs the finished region's graph on its inputs (the backend); empty: run_graph.
  RegionRunner runner;
};

// Traces from frame.pc. On return the frame holds the real state after the
// region (the graph has run, fake tensors became real); when the region ended at
// a break, frame.pc is the breaking instruction, not yet executed.
RegionResult trace_region(py::VM& vm, py::Frame& frame, const TraceSettings& settings);

// While a region is traced, the engine's frame hook hands calls of Python
// functions here to be inlined; false when no trace is running.
bool inline_traced_call(py::VM& vm, py::Frame& frame, py::Value& result);

// torch.cond(pred, true_fn, false_fn, operands) with a tensor predicate, called
// while a region is traced (the "torch.cond.traced" hook): one
// torch.ops.higher_order.cond node with both branches as subgraphs.
py::Value traced_cond(py::VM& vm, const py::CallArgs& args);

// Function.apply(cls, args) of a torch.autograd.Function subclass called while
// a region is traced (the "torch.autograd.Function.apply.traced" hook): one
// torch.ops.higher_order.autograd_function_apply node with the forward as a
// subgraph, and a getitem per output, as Dynamo records it. A forward the
// trace cannot follow breaks the graph at the call.
py::Value traced_function_apply(py::VM& vm, const py::CallArgs& args);

// A torch.autocast block's __enter__ (args[1] true) or __exit__ on the
// autocast object args[0], run while a region is traced (the
// "torch.amp.autocast.traced" hook): an _enter_autocast / _exit_autocast node.
py::Value traced_autocast_marker(py::VM& vm, const py::CallArgs& args);

// The elements of a torch op's multi-output result: a tuple, a list, or a
// torch.return_types named tuple.
py::ValueVec result_items(const py::Value& v);

// Puts the VM's grad mode back as it was at construction when it goes out of scope.
// Autocast's state is put back with it.
struct GradModeRestore {
  explicit GradModeRestore(py::VM& vm) : vm(vm), saved(vm.grad_enabled), saved_autocast(torchapi::autocast_state()) {}
  ~GradModeRestore() {
    vm.grad_enabled = saved;
    torchapi::autocast_state() = saved_autocast;
  }
  GradModeRestore(const GradModeRestore&) = delete;
  GradModeRestore& operator=(const GradModeRestore&) = delete;
  py::VM& vm;
  bool saved;
  torchapi::AutocastState saved_autocast;
};

// While one lives, the Python frames a graph step calls run plain (not
// compiled): a replayed Function.apply stands for its traced forward, which
// Dynamo's node runs with no Python frame to compile.
struct PlainPython {
  PlainPython();
  ~PlainPython();
  PlainPython(const PlainPython&) = delete;
  PlainPython& operator=(const PlainPython&) = delete;
  static bool active();
};

// How `step` runs `call` again: as a method, an operator or a torch function
// (graph_replay.cpp); a Call step's callable is null when the call had none.
void set_step_call(GraphStep& step, const py::TorchCall& call);

// The value `a` stands for, with graph values taken from `env` by node id (graph_replay.cpp).
py::Value build_arg(const ArgTemplate& a, const std::vector<py::Value>& env);

// Runs a region's graph on the values of its inputs (graph_replay.cpp).
// `before_step`, when given, is called with each step's node before it runs.
std::vector<py::Value> run_graph(py::VM& vm, const RegionResult& region, const std::vector<py::Value>& inputs,
                                 const std::function<void(const GraphStep&)>& before_step = {});

}  // namespace kiln::capture
