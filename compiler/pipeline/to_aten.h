#pragma once
// Lowers a captured torch-level region to an ATen-level graph, the way
// AOTAutograd traces through the dispatcher: the region's graph runs once on
// its example inputs while the torch bindings report every ATen op they run
// (torchapi::AtenObserver), and each becomes a call_function node
// ("aten::mul.Tensor") whose meta names the torch-level node it came from.
// An in-place write into a whole tensor becomes a functional aten::copy whose
// result stands for the tensor from then on; inputs written this way are
// returned after the region's outputs (output_descs says which is which), as
// a functionalized AOT graph does. A write into a view (x[i] = v) is lowered
// as aten::copy_ into the view and then made functional by the functionalize
// pass (compiler/passes/functionalize.h): a scatter into the base.
#include <string>
#include <vector>

#include "compiler/capture/region_tracer.h"
#include "core/graph/graph.h"
#include "core/tensor/tensor.h"
#include "core/util/status.h"

namespace kiln::pipeline {

// The ATen graph's placeholders are the region's inputs, in the same order;
// its outputs are the region's outputs, then the inputs it wrote into. Runs the region's graph (on the CPU
// kernels, with the inputs the region was traced with). A value the lowering
// cannot follow (a tensor made outside the observed ops) is an error naming
// the torch-level node.
Expected<Graph> lower_to_aten(py::VM& vm, const capture::RegionResult& region);

// A torch-level graph read from a file (capture/graph_region.h), lowered in
// an interpreter of its own with `inputs` as the placeholders' values. The
// ATen graph's placeholders are the given graph's, in order; each node's
// meta.from names the torch-level node it came from.
Expected<Graph> lower_torch_graph(const Graph& g, const std::vector<Tensor>& inputs);

// A module class as an after-dynamo repro writes it when its graph calls
// submodules or reads parameters (`self.L__self___fc = Linear(...)` in
// __init__, `self.L__self___fc(x)` in forward): the class runs in Kiln's
// interpreter, one instance's forward is captured on `inputs` as Kiln
// captures a program's region (submodules inlined, parameters and buffers
// lifted to inputs), and the region lowers to ATen. The ATen graph's
// placeholders are forward's arguments, then the parameters and buffers it
// read; `inputs` holds all their values (parameters as Kiln's layers
// initialize them), `names` their sources ("self.L__self___fc.weight").
struct LoweredModule {
  Graph graph;
  std::vector<Tensor> inputs;
  std::vector<std::string> names;
};
Expected<LoweredModule> lower_module_class(std::string_view class_source, const std::string& class_name,
                                           const std::vector<Tensor>& inputs);

}  // namespace kiln::pipeline
