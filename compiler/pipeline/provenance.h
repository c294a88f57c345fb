#pragma once
// Node provenance across stages (NodeMeta::from): every node of a stage names
// the nodes of the previous stage it came from, so a stage view can go from a
// node to its origins and back.
#include <vector>

#include "core/graph/graph.h"
#include "core/graph/verify.h"

namespace kiln::pipeline {

// from = {own name} for every node: what a pass starts from, so a node a pass
// keeps or edits in place names itself, and one it makes names what it replaced.
void reset_provenance(Graph& g);

// Every node of `next` has a non-empty `from`, and every name in it is a node
// of `previous`.
std::vector<Diagnostic> check_provenance(const Graph& previous, const Graph& next);

}  // namespace kiln::pipeline
