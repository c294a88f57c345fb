#include "compiler/passes/input_writes.h"

namespace kiln::pipeline {

std::vector<InputWrite> epilogue_input_writes(const Graph& g) {
  std::vector<std::vector<NodeId>> users = compute_users(g);
  std::vector<InputWrite> out;
  for (NodeId i = 0; i < NodeId(g.size()); ++i) {
    const Node& n = g[i];
    if (n.op != OpKind::CallFunction || n.target != "aten::copy_.default" || !users[size_t(i)].empty() || n.args.size() < 2 ||
        !n.args[0].is_node())
      continue;
    const Node& dst = g[n.args[0].node_id()];
    if (dst.op != OpKind::Placeholder && dst.op != OpKind::GetAttr) continue;
    out.push_back({i, n.args[0].node_id(), n.args[1]});
  }
  return out;
}

}  // namespace kiln::pipeline
