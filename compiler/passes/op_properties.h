#pragma once
// What the graph passes need to know about a node's op before they may remove,
// merge, move or evaluate it. Registered ATen ops are judged by their schema
// (a `Tensor(a!)` argument is a write); unregistered ATen targets, which graphs
// from real dumps are full of, by ATen's naming conventions (a trailing
// underscore is in-place, an "out" overload writes its out= argument).
// Anything that is not an ATen op (torch-level calls, methods, modules,
// higher-order ops) is assumed to have effects: passes leave it alone.
#include <string_view>

#include "core/graph/graph.h"

namespace kiln::pipeline {

// "aten::add_.Tensor", "aten::add.out", "aten::copy_.default", or a schema with a write.
bool writes_an_input(const Node& n);
// Draws from the RNG: removing, merging or evaluating it ahead changes the
// random stream every later random op sees.
bool is_random_op(std::string_view target);
// Returns memory whose contents are unspecified (aten::empty and friends):
// two calls are never the same value, and evaluating one ahead means nothing.
bool is_uninitialized_op(std::string_view target);
// Effects beyond its result: writes, RNG, assertions, printing, and anything
// that is no ATen op (or operator.getitem, which only reads a tuple).
bool has_side_effects(const Node& n);
// A result that depends on its inputs only: no side effects, no randomness,
// no unspecified memory. Such nodes may be removed when unused, merged with
// an identical node and evaluated ahead of time.
bool is_pure(const Node& n);
// Whether any node mutates a value. Passes that forward one value in place of
// another (x for mul(x, 1)) or fold a value ahead are only sound on
// functional graphs, and skip the others.
bool graph_has_mutation(const Graph& g);

}  // namespace kiln::pipeline
