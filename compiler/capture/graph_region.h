#pragma once
// A torch-level graph read from a file (a Dynamo graph in a TORCH_TRACE log,
// the forward of an after-dynamo repro.py) as a captured region, so that it
// lowers to ATen through pipeline::lower_to_aten exactly as a graph Kiln
// captured from a program does. Each call_function node becomes a call of the
// torch binding its target names ("torch._C._nn.linear", "torch.sin"), each
// call_method a method call on its first argument, each operator.* the
// interpreter's operator.
#include <vector>

#include "compiler/capture/region_tracer.h"
#include "core/graph/graph.h"
#include "core/tensor/tensor.h"
#include "core/util/status.h"

namespace kiln::capture {

// True when `g` calls torch functions, methods, submodules or Python
// operators (other than getitem) rather than ATen ops only.
bool is_torch_level(const Graph& g);

// The region of `g` with `inputs` (one per placeholder, in order) as its
// example values. `vm` must have torch installed (install_capture). A node
// Kiln cannot replay (a submodule call, an attribute read, a function it has
// no binding for, a symbolic size) is an error naming it.
Expected<RegionResult> region_of_graph(py::VM& vm, const Graph& g, const std::vector<Tensor>& inputs);

}  // namespace kiln::capture
