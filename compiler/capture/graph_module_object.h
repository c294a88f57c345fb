#pragma once
// The torch.fx.GraphModule a callable torch.compile backend receives: the
// captured region's graph as a Python object (gm.graph with its nodes and
// print_tabular(), gm.code, gm.print_readable(), gm.forward / gm(*inputs),
// which run the graph with the eager kernels).
#include <memory>

#include "compiler/capture/region_tracer.h"
#include "core/python/object.h"

namespace kiln::capture {

py::Value make_graph_module(py::VM& vm, std::shared_ptr<const RegionResult> region);

}  // namespace kiln::capture
