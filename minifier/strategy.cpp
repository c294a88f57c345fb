#include "minifier/strategy.h"

#include <map>

#include "minifier/ddmin.h"

namespace kiln::minify {

bool reduce_by_ddmin(ReductionContext& ctx, size_t n, const KeepFn& build,
                     const std::function<std::string(size_t removed, size_t of)>& what) {
  if (n == 0) return false;
  const Candidate base = ctx.current();
  bool accepted = false;
  auto first_interesting = [&](const std::vector<std::vector<size_t>>& keeps) -> int {
    std::vector<std::optional<Candidate>> candidates;
    for (const std::vector<size_t>& keep : keeps) candidates.push_back(build(base, keep));
    int k = ctx.first_interesting(candidates);
    if (k >= 0) {
      ctx.accept(std::move(*candidates[size_t(k)]), what(n - keeps[size_t(k)].size(), n));
      accepted = true;
    }
    return k;
  };
  ddmin_batched(n, first_interesting, size_t(ctx.jobs()), nullptr, [&] { return ctx.cancelled(); });
  return accepted;
}

std::optional<Candidate> replace_nodes_by_inputs(const Candidate& base, const std::vector<bool>& keep_node,
                                                 const Recording& values) {
  Candidate c = base;
  std::map<std::string, Tensor> input_of;  // by placeholder name, so the inputs survive reordering
  size_t next = 0;
  for (const Node& n : c.graph.nodes)
    if (n.op == OpKind::Placeholder) input_of[n.name] = c.inputs[next++];
  bool changed = false;
  for (size_t i = 0; i < c.graph.size(); ++i) {
    Node& n = c.graph.nodes[i];
    if (n.op != OpKind::CallFunction || (i < keep_node.size() && keep_node[i])) continue;
    auto it = values.eager.find(n.name);
    if (it == values.eager.end() || !n.meta.val.is_tensor()) continue;
    n.op = OpKind::Placeholder;
    n.target = n.name;
    n.args.clear();
    n.kwargs.clear();
    // The recording itself for now: most of these are pruned below, and
    // copying hundreds of recorded activations per candidate was most of a
    // ResNet minify's time.
    input_of[n.name] = it->second;
    changed = true;
  }
  if (!changed) return std::nullopt;
  c.inputs.clear();
  reorder_placeholders_first(c);
  for (const Node& n : c.graph.nodes)
    if (n.op == OpKind::Placeholder) c.inputs.push_back(input_of.at(n.name));
  prune(c);
  // The values that stay are the candidate's own, compact copies: a graph
  // that writes into an input (copy_) must not write into the recording.
  size_t k = 0;
  for (const Node& n : c.graph.nodes) {
    if (n.op != OpKind::Placeholder) continue;
    auto it = values.eager.find(n.name);
    if (it != values.eager.end() && c.inputs[k].raw_data() == it->second.raw_data()) c.inputs[k] = compact_copy(c.inputs[k]);
    ++k;
  }
  return c;
}

}  // namespace kiln::minify
