#include "compiler/aot/joint_from_dump.h"

#include <string>
#include <vector>

#include "compiler/passes/input_writes.h"

namespace kiln::aot {
namespace {

size_t outputs_for_unread_input_writes(Graph& g) {
  std::vector<bool> drop(g.size(), false);
  std::vector<Arg> new_values;
  std::vector<std::string> descs;
  for (const pipeline::InputWrite& w : pipeline::epilogue_input_writes(g)) {
    const Node& dst = g[w.input];
    if (dst.op != OpKind::Placeholder || !dst.name.starts_with("primals_") || !w.value.is_node()) continue;
    drop[size_t(w.copy)] = true;
    new_values.push_back(w.value);
    descs.push_back("InputMutationAOTOutput(mutated_input=" + dst.name + ")");
  }
  Node* out = g.nodes.empty() || g.nodes.back().op != OpKind::Output ? nullptr : &g.nodes.back();
  if (new_values.empty() || !out || out->args.empty() || !out->args[0].is_container()) return 0;
  // Where the forward outputs end: before the gradients, one per primal.
  size_t primals = 0;
  for (const Node& n : g.nodes) primals += n.op == OpKind::Placeholder && n.name.starts_with("primals_");
  std::vector<Arg>& items = out->args[0].items;
  if (items.size() < primals) return 0;
  std::vector<std::string>& out_descs = out->meta.output_descs;
  out_descs.resize(items.size());
  auto at = std::ptrdiff_t(items.size() - primals);
  items.insert(items.begin() + at, new_values.begin(), new_values.end());
  out_descs.insert(out_descs.begin() + at, descs.begin(), descs.end());
  remove_nodes(g, drop);
  return new_values.size();
}

}  // namespace

Expected<JointGraph> joint_from_dump(const Graph& dumped, size_t* input_writes) {
  JointGraph j;
  j.graph = dumped;
  const size_t writes = outputs_for_unread_input_writes(j.graph);
  if (input_writes) *input_writes = writes;
  for (const Node& n : j.graph.nodes) {
    if (n.op != OpKind::Placeholder) continue;
    if (n.name.starts_with("primals_") && j.num_tangents == 0) {
      ++j.num_primals;
    } else if (n.name.starts_with("tangents_")) {
      ++j.num_tangents;
    } else {
      return Status::error("placeholder '" + n.name + "' is neither primals_N nor tangents_N after the primals");
    }
  }
  Node* out = j.graph.nodes.empty() || j.graph.nodes.back().op != OpKind::Output ? nullptr : &j.graph.nodes.back();
  if (!out || out->args.empty() || (out->args[0].kind != Arg::Kind::List && out->args[0].kind != Arg::Kind::Tuple))
    return Status::error("the output is not a list of forward outputs and gradients");
  const std::vector<Arg>& items = out->args[0].items;
  if (items.size() < j.num_primals)
    return Status::error("the output has " + std::to_string(items.size()) + " entries, fewer than the " +
                         std::to_string(j.num_primals) + " primals' gradients");
  j.num_forward_outputs = items.size() - j.num_primals;
  out->meta.output_descs.resize(items.size());  // the partitioners index it like the items
  for (size_t i = j.num_forward_outputs; i < items.size(); ++i) j.requires_grad.push_back(!items[i].is_none());
  // The backward starts at the first node that reads a tangent (directly or not).
  std::vector<bool> from_tangent(j.graph.size(), false);
  j.first_backward_node = NodeId(j.graph.size() - 1);  // the output, when no node reads a tangent
  for (size_t i = 0; i < j.graph.size(); ++i) {
    const Node& n = j.graph.nodes[i];
    if (n.op == OpKind::Placeholder) {
      from_tangent[i] = n.name.starts_with("tangents_");
      continue;
    }
    if (n.op == OpKind::Output) break;
    for_each_input(n, [&](NodeId in) { from_tangent[i] = from_tangent[i] || from_tangent[size_t(in)]; });
    if (from_tangent[i]) {
      j.first_backward_node = NodeId(i);
      break;
    }
  }
  // tangent_of_output stays empty: the dump does not say it in a form the
  // parser keeps, and the partitioners do not read it.
  return j;
}

}  // namespace kiln::aot
