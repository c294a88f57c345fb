#pragma once
// The seam between the interpreter and trace recording by execution
// (torch.jit.trace, torch.fx.symbolic_trace; compiler/capture/eager_trace.cpp).
// Unlike capture (tracer.h), the program runs for real: every torch call still
// computes its result, and the tape is shown each one afterwards with its real
// arguments and result, and each place a tensor's value or metadata leaves
// tensor land for Python (bool(t), t.item(), t.shape), where a recorded trace
// stops following the data.
#include "core/python/object.h"
#include "core/python/tracer.h"

namespace kiln::py {

class VM;

// How a tensor's data became a Python value, in PyTorch's TracerWarning words
// ("Converting a tensor to a Python boolean ...").
enum class ValueRead { Boolean, Number, Float, Integer, Index, List };
const char* value_read_name(ValueRead read);

class EagerTape {
 public:
  virtual ~EagerTape() = default;
  // `call` ran eagerly and returned `result`. Calls made while another one runs
  // (a binding calling back into Python) are not shown: the outer call is.
  virtual void record(VM& vm, const TorchCall& call, const Value& result) = 0;
  // `tensor`'s data was read into a Python value; may raise (FX's TraceError).
  virtual void value_read(VM& vm, const Value& tensor, ValueRead read) = 0;
  // `tensor`'s sizes, dtype or device were read by Python code.
  virtual void metadata_read(VM& vm, const Value& tensor) = 0;
  // A call the tape cannot record faithfully (out= arguments); throws.
  [[noreturn]] virtual void unsupported(VM& vm, const std::string& what) = 0;
};

// The tape recording on this thread, or null. Set by the recorder for the
// length of one traced call; nothing else writes it.
EagerTape*& active_eager_tape();

// No tape sees what runs while this lives (the calls a recorded call makes,
// the warnings a tape raises); the tape is back afterwards, also on a throw.
struct TapePaused {
  EagerTape* tape = active_eager_tape();
  TapePaused() { active_eager_tape() = nullptr; }
  ~TapePaused() { active_eager_tape() = tape; }
  TapePaused(const TapePaused&) = delete;
  TapePaused& operator=(const TapePaused&) = delete;
};

}  // namespace kiln::py
