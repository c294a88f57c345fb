#pragma once
// The seam between the interpreter and capture (compiler/capture). While a
// frame is being traced, VM::tracer is set: torch calls that touch tensors go
// to the tracer instead of the kernels (it records graph nodes and returns fake
// tensors), and whatever cannot be traced raises a graph break at the current
// instruction, which leaves the frame as it was before that instruction.
#include <string>
#include <vector>

#include "core/python/object.h"

namespace kiln::torchapi { struct Callable; }

namespace kiln::py {

class VM;
struct Frame;

enum class BreakKind {
  UnsupportedCall,   // print, unknown builtins, calls capture cannot follow (Dynamo restarts: attempt _1)
  DataDependentJump, // branching on a tensor value ("generic_jump")
  ScalarOutput,      // Tensor.item()
  ListOutput,        // Tensor.tolist()
  Explicit,          // torch._dynamo.graph_break()
  DynamicShape,      // an op whose output shape depends on tensor data (nonzero, boolean masks, unique)
};

struct BreakInfo {
  BreakKind kind = BreakKind::UnsupportedCall;
  std::string reason;       // first line, as Dynamo's explain shows it ("Failed to trace builtin operator")
  std::string explanation;  // the indented details that follow ("  Explanation: ...", hints)
};

// Thrown (not a PyError: no Python code can see it) to stop a traced frame.
struct GraphBreakSignal {
  BreakInfo info;
};

// One call into the torch surface, as the bindings see it.
struct TorchCall {
  const torchapi::Callable* callable = nullptr;  // null for operators
  std::string graph_target;    // "torch.sin", "operator.mul", method name "sum" for methods
  bool is_method = false;
  CallArgs args;               // Python-level arguments (for methods args[0] is self)
};

class Tracer {
 public:
  virtual ~Tracer() = default;
  // Runs `call` symbolically: records a graph node and returns its (fake) result.
  // `eager` computes the result from meta tensors (the bindings in Meta mode).
  virtual Value record(VM& vm, const TorchCall& call, const std::function<Value(const CallArgs&)>& run_meta) = 0;
  // True when `v` is a tensor the tracer stands in for (a fake, or a real input it lifted).
  virtual bool is_traced_tensor(const Value& v) const = 0;
  // The tensor a traced value stands for with meta data only (for shape/dtype reads); guards it.
  virtual Value inspect_tensor(VM& vm, const Value& v) = 0;
  // `x.shape`: the sizes are handed out as ints the tracer can follow (a
  // dynamic size stays symbolic where a tensor op consumes it).
  virtual Value inspect_sizes(VM& vm, const Value& v) { return inspect_tensor(vm, v); }
  [[noreturn]] virtual void graph_break(VM& vm, BreakInfo info) = 0;
  // A Python object is about to be mutated (setattr, setitem, list.append, ...).
  virtual void note_mutation(VM& vm, const Value& obj) = 0;
  // A generator `gen` was made with its frame bound (not yet run): true when
  // the tracer takes it over, so that its resumes run under the trace; false
  // breaks the graph at the call that made it.
  virtual bool generator_made(VM&, const Value& /*gen*/, Frame& /*frame*/) { return false; }
  // Whether resuming the generator running `frame` is traced (resume_generator);
  // when not, the graph breaks before the generator runs.
  virtual bool traces_generator(const Frame& /*frame*/) const { return false; }
  // Runs a generator frame the tracer took over up to its next Yield or its
  // return, as VM::run_frame does.
  virtual Value resume_generator(VM& vm, Frame& frame);
  // An iterator is about to be advanced (every `for`, next() and builtin loop).
  virtual void note_iteration(VM&, const Value& /*iterator*/) {}
};

}  // namespace kiln::py
