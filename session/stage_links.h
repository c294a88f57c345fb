#pragma once
// How the stages of one compile relate: stepping through them, carrying a node
// selection from one stage to another through provenance (NodeMeta::from,
// along SessionStage::parent), and the structural difference a pass made.
// Plain functions over plain data, tested without a window.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "session/session.h"

namespace kiln::session {

// The stage `delta` steps from `current` (clamped); with `changed_only`,
// stages a pass left unchanged are skipped. -1 when there are no stages.
int step_stage(const SessionCompile& c, int current, int delta, bool changed_only);

// The graph of a stage by index, or null when it is not available (not parsed,
// or a code stage). The GUI passes a loader that parses trace graphs on its worker.
using GraphLookup = std::function<std::shared_ptr<const Graph>(int stage)>;

// The nodes of stage `to` linked to `names` in stage `from`: up the parent
// links to their common ancestor (ancestors: the names in NodeMeta::from), then
// down (descendants: nodes naming one of them). A node without provenance (a
// dump) stands for the node of the same name. Empty when the path crosses a
// stage whose graph is missing.
std::vector<NodeId> linked_nodes(const SessionCompile& c, int from, int to, const std::vector<std::string>& names,
                                 const GraphLookup& graph);

// The stages on the provenance path from `from` to `to`, both included.
std::vector<int> provenance_path(const SessionCompile& c, int from, int to);

struct StageDiff {
  std::vector<NodeId> added;      // in `after`: no node of that name before
  std::vector<NodeId> rewritten;  // in `after`: same name, another target or other arguments
  std::vector<NodeId> removed;    // in `before`: no node of that name after
  std::vector<std::string> removed_names;
  bool empty() const { return added.empty() && rewritten.empty() && removed.empty(); }
};
StageDiff diff_graphs(const Graph& before, const Graph& after);

// The stage a pass ran on: the parent link (for an unchanged stage, the graph
// it left as it was). -1 for a stage without one.
int diff_base(const SessionCompile& c, int stage);

}  // namespace kiln::session
