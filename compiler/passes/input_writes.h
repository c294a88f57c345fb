#pragma once
// The epilogue of an AOT graph: `aten::copy_.default(input, new_value)` nodes
// that nothing reads, writing a graph input (a placeholder or a get_attr
// buffer): batch norm's running statistics, num_batches_tracked. Functionalize
// (functionalize.h) leaves a graph's mutations of its caller's tensors in this
// form, and PyTorch's dumps carry it. Callers that must not run a write (the
// numerics ladder) or must return it as a value (a dumped joint graph before
// partitioning, aot/joint_from_dump.h) find the same nodes here.
//
// Tests: tests/compiler/test_joint_from_dump.cpp, tests/session/test_numerics.cpp.
#include <vector>

#include "core/graph/graph.h"

namespace kiln::pipeline {

struct InputWrite {
  NodeId copy;   // the copy_ node
  NodeId input;  // the placeholder or get_attr it writes
  Arg value;     // the new value
};

// In graph order.
std::vector<InputWrite> epilogue_input_writes(const Graph& g);

}  // namespace kiln::pipeline
