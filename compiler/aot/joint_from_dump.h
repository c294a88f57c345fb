#pragma once
// A joint graph as PyTorch dumps it (TORCH_TRACE's aot_joint_graph), in the
// shape Kiln's partitioners take, so a trace's training graph can be split by
// Kiln and compared with PyTorch's own split.
//
// Tests: tests/compiler/test_joint_from_dump.cpp.
#include <cstddef>

#include "compiler/aot/joint.h"
#include "core/graph/graph.h"
#include "core/util/status.h"

namespace kiln::aot {

// Placeholders primals_* then tangents_*, one output list of the forward
// outputs then one gradient or None per primal. PyTorch keeps writes into
// buffers (batch norm's running statistics) as `copy_(primals_N, value)`
// nodes that nothing reads; the partitioners keep only what outputs need, so
// each such write becomes a forward output instead (after the existing ones,
// as Kiln's own lowering returns written inputs). `input_writes`, when given,
// receives how many. An error says which part of the shape is missing.
Expected<JointGraph> joint_from_dump(const Graph& dumped, size_t* input_writes = nullptr);

}  // namespace kiln::aot
