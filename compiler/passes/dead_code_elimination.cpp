#include "compiler/passes/dead_code_elimination.h"

#include "compiler/passes/op_properties.h"

namespace kiln::pipeline {

PassResult eliminate_dead_code(Graph& g, const PassContext&) {
  // Backwards, so a chain of dead nodes goes in one sweep.
  std::vector<bool> live(g.size(), false), remove(g.size(), false);
  size_t removed = 0;
  for (size_t i = g.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    if (!live[i] && !has_side_effects(n)) {
      remove[i] = true;
      ++removed;
      continue;
    }
    for_each_input(n, [&](NodeId in) { live[size_t(in)] = true; });
  }
  if (removed == 0) return {};
  remove_nodes(g, remove);
  return {true, "removed " + std::to_string(removed) + (removed == 1 ? " node" : " nodes")};
}

}  // namespace kiln::pipeline
