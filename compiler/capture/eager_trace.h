#pragma once
// torch.jit.trace for Kiln's interpreter: the function runs once for real
// while a tape (core/python/eager_tape.h) records every torch call it makes;
// the result replays those calls on new inputs. Python values computed from
// tensors along the way (a branch on x.sum() < 0) are frozen into the trace,
// with PyTorch's TracerWarning, as in PyTorch.
#include "core/python/vm.h"

namespace kiln::capture {

// Defines torch.jit._kiln_record, which torch.jit.trace in the torch.jit
// prelude (core/python/jit_prelude.cpp) is built on.
void install_eager_trace(py::VM& vm);

}  // namespace kiln::capture
