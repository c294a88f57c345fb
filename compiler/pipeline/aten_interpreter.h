#pragma once
// Runs an ATen-level graph (call_function nodes whose targets are registered
// overloads, "aten::mul.Tensor", plus operator.getitem) on the CPU kernels:
// the aot_eager / decomp_eager backends, and the reference every pass's output
// is checked against in tests.
#include <functional>
#include <optional>
#include <vector>

#include "core/graph/graph.h"
#include "core/ops/value.h"
#include "core/util/status.h"

namespace kiln::pipeline {

// One value per placeholder, in graph order; returns the output tuple's
// elements. An unknown target or a kernel error is a Status naming the node.
Expected<std::vector<Value>> run_aten_graph(const Graph& g, const std::vector<Value>& inputs);

// A constant argument of a graph node as the op registry takes it (dtype names
// become DTypes, lists become lists); a node reference is an error here.
Expected<Value> constant_value(const Arg& a);

// Any argument of a graph node as the op registry takes it: node references
// (also inside lists) are read through `node_value`, which returns nullopt for
// a value not known (an error naming the node); the rest as constant_value.
Expected<Value> arg_value(const Arg& a, const std::function<std::optional<Value>(NodeId)>& node_value);

}  // namespace kiln::pipeline
