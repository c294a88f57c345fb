#pragma once
// Lowering of a decomposed ATen graph to the loop IR (Inductor's lowerings.py
// for the pointwise and reduction subset). Every pointwise or reduction node
// becomes its own kernel writing its own buffer: fusing them is the
// scheduler's job. Views (permute, expand, slice, select, view/reshape,
// squeeze/unsqueeze) make no kernel: they fold into the indices of the loads
// that read them. mean is a sum kernel then a division kernel.
//
// Sizes and dtypes come from each node's meta['val'] (what AOT tracing
// records), so the graph must carry it and have concrete sizes. A registered op
// without a loop lowering becomes an extern kernel (extern_call.h: mm, bmm,
// addmm, convolution on BLAS; any other op a fallback to its eager kernel).
// An unregistered target, a non-tensor result read later, a missing meta or a
// symbolic size is a kiln::Error naming the node.
#include "compiler/loopir/loop_ir.h"
#include "core/graph/graph.h"

namespace kiln::loopir {

Program lower_to_loops(const Graph& g);

}  // namespace kiln::loopir
