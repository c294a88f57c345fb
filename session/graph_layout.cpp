// Graphviz `dot` in-process. This is the only file that includes Graphviz
// headers: they define macros (ND_coord, ...) and C types we keep out of the
// rest of the viewer.
#include "session/graph_layout.h"

#include <gvc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace kiln {
namespace {

// One context for the process: creating it loads the plugin configuration,
// which costs more than laying out a small graph. Graphviz is not reentrant,
// so callers serialize (the layout worker is one thread).
GVC_t* graphviz_context() {
  static GVC_t* context = [] {
    agseterr(AGMAX);  // warnings about our synthetic graphs would only clutter stderr
    return gvContext();
  }();
  return context;
}

std::string inches(double units) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", units / 72.0);
  return buf;
}

// cgraph takes char* for names and values it only reads.
char* mutable_chars(const char* s) { return const_cast<char*>(s); }

double squared_distance(LayoutPoint a, LayoutPoint b) {
  return (a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y);
}

}  // namespace

long long dot_work_estimate(const LayoutInput& input) {
  // Ranks by longest path over edges taken forward in box order, as the layered engine does.
  std::vector<int> rank(input.boxes.size(), 0);
  std::vector<std::pair<int, int>> forward;
  forward.reserve(input.edges.size());
  for (auto [a, b] : input.edges) forward.push_back(a < b ? std::pair{a, b} : std::pair{b, a});
  std::sort(forward.begin(), forward.end(), [](auto x, auto y) { return x.second < y.second; });
  for (auto [a, b] : forward) rank[size_t(b)] = std::max(rank[size_t(b)], rank[size_t(a)] + 1);
  long long work = (long long)input.boxes.size();
  for (auto [a, b] : forward) work += std::max(0, rank[size_t(b)] - rank[size_t(a)] - 1);
  return work;
}

LayoutResult layout_graph(const LayoutInput& input, const LayoutOptions& options) {
  bool use_dot = options.engine == LayoutEngine::Dot ||
                 (options.engine == LayoutEngine::Automatic && int(input.boxes.size()) <= options.dot_max_boxes &&
                  dot_work_estimate(input) <= options.dot_max_work);
  return use_dot ? layout_with_dot(input, options) : layout_layered(input, options);
}

LayoutResult layout_with_dot(const LayoutInput& input, const LayoutOptions& options) {
  if (options.progress) options.progress(5);
  GVC_t* gvc = graphviz_context();
  if (!gvc) return layout_layered(input, options);

  Agraph_t* g = agopen(mutable_chars("kiln"), Agdirected, nullptr);
  agattr(g, AGRAPH, mutable_chars("rankdir"), mutable_chars("TB"));
  agattr(g, AGRAPH, mutable_chars("nodesep"), mutable_chars(inches(options.node_gap).c_str()));
  agattr(g, AGRAPH, mutable_chars("ranksep"), mutable_chars(inches(options.rank_gap).c_str()));
  agattr(g, AGRAPH, mutable_chars("splines"), mutable_chars("spline"));
  // Bound the network-simplex passes (ranking and x placement): unbounded,
  // they ran for minutes on a 700-node backward graph; bounded, the picture
  // is nearly the same.
  if (input.boxes.size() > 200) {
    agattr(g, AGRAPH, mutable_chars("nslimit"), mutable_chars("1"));
    agattr(g, AGRAPH, mutable_chars("nslimit1"), mutable_chars("1"));
  }
  Agsym_t* width = agattr(g, AGNODE, mutable_chars("width"), mutable_chars("1"));
  Agsym_t* height = agattr(g, AGNODE, mutable_chars("height"), mutable_chars("0.5"));
  agattr(g, AGNODE, mutable_chars("shape"), mutable_chars("box"));
  agattr(g, AGNODE, mutable_chars("fixedsize"), mutable_chars("true"));
  agattr(g, AGNODE, mutable_chars("label"), mutable_chars(""));
  agattr(g, AGEDGE, mutable_chars("arrowhead"), mutable_chars("none"));

  std::vector<Agnode_t*> nodes(input.boxes.size());
  for (size_t i = 0; i < input.boxes.size(); ++i) {
    char name[24];
    std::snprintf(name, sizeof name, "b%zu", i);
    nodes[i] = agnode(g, name, 1);
    agxset(nodes[i], width, mutable_chars(inches(input.boxes[i].width).c_str()));
    agxset(nodes[i], height, mutable_chars(inches(input.boxes[i].height).c_str()));
  }
  std::vector<Agedge_t*> edges(input.edges.size());
  for (size_t i = 0; i < input.edges.size(); ++i) {
    auto [from, to] = input.edges[i];
    edges[i] = agedge(g, nodes[size_t(from)], nodes[size_t(to)], nullptr, 1);
  }
  if (options.progress) options.progress(10);

  if (gvLayout(gvc, g, "dot") != 0) {  // no dot plugin installed: still show the graph
    agclose(g);
    return layout_layered(input, options);
  }

  LayoutResult r;
  r.engine = "dot";
  boxf bb = GD_bb(g);
  r.width = bb.UR.x - bb.LL.x;
  r.height = bb.UR.y - bb.LL.y;
  auto to_view = [&](pointf p) { return LayoutPoint{p.x - bb.LL.x, bb.UR.y - p.y}; };
  r.centers.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) r.centers[i] = to_view(ND_coord(nodes[i]));
  r.edge_paths.resize(edges.size());
  for (size_t i = 0; i < edges.size(); ++i) {
    std::vector<LayoutPoint>& path = r.edge_paths[i];
    const splines* spl = ED_spl(edges[i]);
    if (spl) {
      for (int b = 0; b < spl->size; ++b) {
        const bezier& bz = spl->list[b];
        for (int k = (path.empty() ? 0 : 1); k < bz.size; ++k) path.push_back(to_view(bz.list[k]));
      }
    }
    const LayoutPoint& from = r.centers[size_t(input.edges[i].first)];
    const LayoutPoint& to = r.centers[size_t(input.edges[i].second)];
    if (path.size() < 4 || (path.size() - 1) % 3 != 0) {
      // No spline (dot skips some edges it cannot route): a straight segment as a degenerate Bezier.
      path = {from, from, to, to};
    } else if (squared_distance(path.front(), to) < squared_distance(path.front(), from)) {
      std::reverse(path.begin(), path.end());  // dot routes a reversed (cycle) edge head to tail
    }
  }
  gvFreeLayout(gvc, g);
  agclose(g);
  if (options.progress) options.progress(100);
  return r;
}

}  // namespace kiln
