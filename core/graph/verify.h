#pragma once
// Checks the invariants every stage relies on: placeholders first, exactly one
// output and it is last, unique names, every reference to an earlier node,
// and, for ATen ops registered in Kiln's op registry, arity against the
// schema (too many positional args, unknown or duplicate kwargs, missing
// required args). Unregistered ops are not an error: the registry grows op by op.
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace kiln {

class OpRegistry;

struct Diagnostic {
  std::string subgraph;   // path of the nested submodule ("body_graph"); empty for the outer graph
  NodeId node = kNoNode;  // kNoNode: about the graph as a whole
  std::string node_name;
  std::string message;
  // "node 'add' (#3): ..." or "graph: ...", prefixed by the subgraph path.
  std::string to_string() const;
};

// Against kiln::op_registry().
std::vector<Diagnostic> verify(const Graph& g);
std::vector<Diagnostic> verify(const Graph& g, const OpRegistry& ops);

}  // namespace kiln
