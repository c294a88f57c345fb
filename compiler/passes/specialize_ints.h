#pragma once
// A graph with SymInt inputs (a dynamic-shape repro's reader.symint(6)) made
// replayable at the values recorded for them: every use of such a placeholder
// becomes the integer, the integer arithmetic Dynamo recorded on it
// (operator.mul(s0, 8), operator.floordiv, comparisons, sym_max, ...) folds
// to constants, and the placeholders and folded nodes go. The replay is
// exact for those values, which are the ones the failure was recorded at;
// the caller keeps the symbols and their values to say so.
//
// Tests: tests/compiler/test_specialize_ints.cpp.
#include <map>
#include <vector>

#include "core/graph/graph.h"
#include "core/util/status.h"

namespace kiln::pipeline {

// `values`: placeholder -> its value. An error names a node that still reads
// a specialized value in a way that cannot be folded into a constant and
// is not an argument of an op (a call_method or call_module on it).
// `tensor_sizes`: tensor placeholder -> its replayed sizes, so that
// aten.sym_size.int of it (the graph asking a dynamic dimension's size) folds
// to the size as well.
Status specialize_int_inputs(Graph& g, const std::map<NodeId, int64_t>& values,
                             const std::map<NodeId, std::vector<int64_t>>& tensor_sizes = {});

}  // namespace kiln::pipeline
