#include "compiler/pipeline/provenance.h"

#include <string_view>
#include <unordered_set>

namespace kiln::pipeline {

void reset_provenance(Graph& g) {
  for (Node& n : g.nodes) n.meta.from = {n.name};
}

std::vector<Diagnostic> check_provenance(const Graph& previous, const Graph& next) {
  std::unordered_set<std::string_view> names;
  for (const Node& n : previous.nodes) names.insert(n.name);
  std::vector<Diagnostic> out;
  auto report = [&](size_t i, std::string message) {
    Diagnostic d;
    d.node = NodeId(i);
    d.node_name = next.nodes[i].name;
    d.message = std::move(message);
    out.push_back(std::move(d));
  };
  for (size_t i = 0; i < next.size(); ++i) {
    const Node& n = next.nodes[i];
    if (n.meta.from.empty()) report(i, "no provenance: meta.from names no node of the previous stage");
    for (const std::string& f : n.meta.from)
      if (!names.count(f)) report(i, "comes from '" + f + "', which is no node of the previous stage");
  }
  return out;
}

}  // namespace kiln::pipeline
