#pragma once
// Module scopes ("layer1.0.conv1") for graphs read from PyTorch's dumps, which
// print no nn_module_stack: only the innermost source line of each node
// ("# File: resnet.py:92 in forward, code: out = self.conv1(x)") and, in the
// Dynamo graph, the module path of every parameter and buffer in its input's
// name (L_self_modules_layer1_modules_0_modules_conv1_parameters_weight_).
//
// The parameters anchor the scopes: an op that reads layer1.0.conv1's weight
// lies in layer1.0.conv1, and so does every op of the same source statement.
// A statement that reads no parameter (`out = self.relu(out)`) takes the
// instance ("layer1.0") of the nearest statement that does, within the same
// call of the same function, plus the attribute it calls ("relu"). AOT graphs
// name their inputs primals_<k>: the k-th input of the Dynamo graph.
//
// Tests: tests/core/test_module_scopes.cpp.
#include <string>
#include <string_view>
#include <vector>

#include "core/graph/graph.h"

namespace kiln::trace {

// "L_self_modules_layer1_modules_0_modules_conv1_parameters_weight_" ->
// "layer1.0.conv1.weight"; "" for a name that is no module's state ("L_x_", "primals_3").
std::string module_state_path(std::string_view graph_name);

// The module state path of each placeholder of a Dynamo graph, in order ("" where none).
std::vector<std::string> input_state_paths(const Graph& dynamo_graph);

// Fills meta.scope where the graph has no scopes at all (a graph that has some
// is left alone). `dynamo_inputs`: input_state_paths of the compile's Dynamo
// graph, for graphs whose inputs are primals_<k>; may be empty.
// Returns the number of nodes given a scope.
size_t infer_module_scopes(Graph& g, const std::vector<std::string>& dynamo_inputs);

}  // namespace kiln::trace
