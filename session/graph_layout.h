#pragma once
// Layered (Sugiyama) layout of a DAG of boxes: Graphviz `dot` run in-process
// through libgvc/cgraph, or, for graphs too big for dot to finish quickly, a
// layered layout of our own (longest-path ranks, barycenter ordering). Plain
// C++: no Qt and no Graphviz types here, so the header can be included
// anywhere and the layout can run on any worker thread.
//
// Graphviz keeps global state, so every call must come from one thread at a
// time; GraphLayoutWorker (graph_layout_worker.h) is that thread.
// Covered by tests/session/test_graph_layout.cpp.
#include <atomic>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace kiln {

struct LayoutPoint {
  double x = 0, y = 0;
};

struct LayoutInput {
  struct Box {
    double width = 0, height = 0;  // in layout units (pixels at zoom 1)
  };
  std::vector<Box> boxes;
  std::vector<std::pair<int, int>> edges;  // (from box, to box); no duplicates, no self loops
};

struct LayoutResult {
  // Box centres, y grows downwards, everything within [0, width] x [0, height].
  std::vector<LayoutPoint> centers;
  // Per input edge a cubic Bezier chain: p0, c1, c2, p1, c1, c2, p2, ...
  // (3k+1 points), from the source box's border to the target box's border.
  std::vector<std::vector<LayoutPoint>> edge_paths;
  double width = 0, height = 0;
  std::string engine;  // "dot" or "layered"
  bool cancelled = false;
};

enum class LayoutEngine { Automatic, Dot, Layered };

struct LayoutOptions {
  LayoutEngine engine = LayoutEngine::Automatic;
  // Automatic uses dot up to this many boxes (dot's time grows much faster
  // than linearly: about 1 s at 1,000 boxes, minutes at 5,000).
  int dot_max_boxes = 1500;
  // ... and while dot_work_estimate stays below this: dot's time is driven
  // by the virtual nodes of long edges (a forward graph's output node reads
  // every saved activation), far more than by the box count.
  long long dot_max_work = 15000;
  double node_gap = 18;  // horizontal gap between boxes in a rank
  double rank_gap = 36;  // vertical gap between ranks
  std::function<void(int percent)> progress;
  const std::atomic<bool>* cancel = nullptr;
};

LayoutResult layout_graph(const LayoutInput& input, const LayoutOptions& options = {});
// Boxes plus the virtual nodes dot would insert for edges spanning several
// ranks (ranked by longest path: an upper bound of dot's own ranking).
long long dot_work_estimate(const LayoutInput& input);
// The engines themselves; layout_graph picks one. layout_with_dot falls back
// to the layered engine when Graphviz's dot plugin cannot be loaded.
LayoutResult layout_with_dot(const LayoutInput& input, const LayoutOptions& options);
LayoutResult layout_layered(const LayoutInput& input, const LayoutOptions& options);

}  // namespace kiln
