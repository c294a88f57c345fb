// The fast layered layout for graphs too big for dot: Sugiyama's steps, each
// in its cheapest good-enough form.
//   1. Acyclic: an edge that goes backwards in box order is reversed (box
//      order follows graph order, which is topological for FX graphs; only
//      collapsed scopes create cycles).
//   2. Ranks: longest path from the sources, then balanced: inputs and
//      weights pulled down to just above their first use.
//   3. Long edges get a dummy point per rank they cross, so ordering and
//      routing see them.
//   4. Order in a rank: barycenter sweeps, down and up.
//   5. x: each rank placed as close as possible to the mean x of its
//      neighbours with boxes kept apart; solved exactly per rank as an
//      isotonic regression (pool adjacent violators).
//   6. Edges: cubic curves with vertical tangents through the dummy points.
#include <algorithm>
#include <cstdint>
#include <numeric>

#include "session/graph_layout.h"

namespace kiln {
namespace {

struct Vertex {
  double width = 0, height = 0;
  int rank = 0;
  double order = 0;  // position in its rank, as a sort key
  double x = 0;
  std::vector<int> up, down;  // neighbours one rank above / below
};

bool cancelled(const LayoutOptions& o) { return o.cancel && o.cancel->load(std::memory_order_relaxed); }

// Places x[i] (in rank order) as close to want[i] as possible with
// x[i+1] - x[i] >= gap[i], minimizing the sum of squared moves.
void place_rank(const std::vector<double>& want, const std::vector<double>& gap, std::vector<double>& x) {
  size_t n = want.size();
  std::vector<double> offset(n, 0);
  for (size_t i = 1; i < n; ++i) offset[i] = offset[i - 1] + gap[i - 1];
  // With y = x - offset the constraint is y non-decreasing: pool adjacent violators.
  struct Block {
    double sum;
    int count;
    double mean() const { return sum / count; }
  };
  std::vector<Block> blocks;
  blocks.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    blocks.push_back({want[i] - offset[i], 1});
    while (blocks.size() > 1 && blocks[blocks.size() - 2].mean() > blocks.back().mean()) {
      Block top = blocks.back();
      blocks.pop_back();
      blocks.back().sum += top.sum;
      blocks.back().count += top.count;
    }
  }
  x.resize(n);
  size_t i = 0;
  for (const Block& b : blocks)
    for (int k = 0; k < b.count; ++k, ++i) x[i] = b.mean() + offset[i];
}

}  // namespace

LayoutResult layout_layered(const LayoutInput& input, const LayoutOptions& options) {
  LayoutResult r;
  r.engine = "layered";
  const int boxes = int(input.boxes.size());
  auto report = [&](int percent) {
    if (options.progress) options.progress(percent);
  };

  // 1-2. Ranks.
  std::vector<std::pair<int, int>> edges;  // forward in box order
  std::vector<bool> reversed(input.edges.size(), false);
  for (size_t i = 0; i < input.edges.size(); ++i) {
    auto [a, b] = input.edges[i];
    reversed[i] = a > b;
    edges.push_back(reversed[i] ? std::pair{b, a} : std::pair{a, b});
  }
  std::vector<std::vector<int>> preds(static_cast<size_t>(boxes)), succs(static_cast<size_t>(boxes));
  for (auto [a, b] : edges) {
    succs[size_t(a)].push_back(b);
    preds[size_t(b)].push_back(a);
  }
  std::vector<int> rank(static_cast<size_t>(boxes), 0);
  for (int v = 0; v < boxes; ++v)
    for (int p : preds[size_t(v)]) rank[size_t(v)] = std::max(rank[size_t(v)], rank[size_t(p)] + 1);
  // Balance: a node with more consumers than producers moves down as far as
  // its consumers allow, one with more producers moves up; inputs and
  // weights land just above their first use, as dot's network simplex would
  // put them (a cheap step toward its shortest total edge length).
  int max_rank = 0;
  for (int r : rank) max_rank = std::max(max_rank, r);
  for (int pass = 0; pass < 2; ++pass) {
    for (int v = boxes - 1; v >= 0; --v) {
      const auto &in = preds[size_t(v)], &out = succs[size_t(v)];
      if (in.size() == out.size()) continue;
      int lo = 0, hi = max_rank;
      for (int p : in) lo = std::max(lo, rank[size_t(p)] + 1);
      for (int q : out) hi = std::min(hi, rank[size_t(q)] - 1);
      rank[size_t(v)] = out.size() > in.size() ? hi : lo;
    }
  }
  report(15);

  // 3. Vertices: boxes, then dummies. Too many dummies (a graph whose
  // activations are read far below) would cost more than they help: then long
  // edges are drawn straight.
  std::vector<Vertex> vs(static_cast<size_t>(boxes));
  for (int v = 0; v < boxes; ++v) {
    vs[size_t(v)].width = input.boxes[size_t(v)].width;
    vs[size_t(v)].height = input.boxes[size_t(v)].height;
    vs[size_t(v)].rank = rank[size_t(v)];
  }
  long long dummy_count = 0;
  for (auto [a, b] : edges) dummy_count += std::max(0, rank[size_t(b)] - rank[size_t(a)] - 1);
  const bool use_dummies = dummy_count <= 200000;
  std::vector<std::vector<int>> chain(edges.size());  // per edge its vertices, source to target
  for (size_t e = 0; e < edges.size(); ++e) {
    auto [a, b] = edges[e];
    chain[e].push_back(a);
    if (use_dummies) {
      for (int k = rank[size_t(a)] + 1; k < rank[size_t(b)]; ++k) {
        Vertex d;
        d.width = 2;
        d.rank = k;
        vs.push_back(d);
        chain[e].push_back(int(vs.size()) - 1);
      }
    }
    chain[e].push_back(b);
    for (size_t k = 0; k + 1 < chain[e].size(); ++k) {
      vs[size_t(chain[e][k])].down.push_back(chain[e][k + 1]);
      vs[size_t(chain[e][k + 1])].up.push_back(chain[e][k]);
    }
  }
  int rank_count = 0;
  for (const Vertex& v : vs) rank_count = std::max(rank_count, v.rank + 1);
  std::vector<std::vector<int>> ranks(static_cast<size_t>(rank_count));
  for (int v = 0; v < int(vs.size()); ++v) ranks[size_t(vs[size_t(v)].rank)].push_back(v);
  auto renumber = [&](std::vector<int>& layer) {
    for (size_t i = 0; i < layer.size(); ++i) vs[size_t(layer[i])].order = double(i);
  };
  for (auto& layer : ranks) renumber(layer);
  report(25);

  // 4. Barycenter sweeps.
  auto sweep = [&](bool downwards) {
    for (int k = 0; k < rank_count; ++k) {
      auto& layer = ranks[size_t(downwards ? k : rank_count - 1 - k)];
      for (int v : layer) {
        const auto& nb = downwards ? vs[size_t(v)].up : vs[size_t(v)].down;
        if (nb.empty()) continue;
        double sum = 0;
        for (int u : nb) sum += vs[size_t(u)].order;
        vs[size_t(v)].order = sum / double(nb.size());
      }
      std::stable_sort(layer.begin(), layer.end(),
                       [&](int a, int b) { return vs[size_t(a)].order < vs[size_t(b)].order; });
      renumber(layer);
    }
  };
  for (int pass = 0; pass < 4; ++pass) {
    if (cancelled(options)) return r.cancelled = true, r;
    sweep(true);
    sweep(false);
    report(25 + 10 * (pass + 1));
  }

  // 5. x coordinates.
  for (auto& layer : ranks) {
    double x = 0;
    for (int v : layer) {
      vs[size_t(v)].x = x + vs[size_t(v)].width / 2;
      x += vs[size_t(v)].width + options.node_gap;
    }
  }
  std::vector<double> want, gap, placed;
  auto align = [&](bool downwards) {
    for (int k = 0; k < rank_count; ++k) {
      auto& layer = ranks[size_t(downwards ? k : rank_count - 1 - k)];
      want.assign(layer.size(), 0);
      gap.assign(layer.size(), 0);
      for (size_t i = 0; i < layer.size(); ++i) {
        const Vertex& v = vs[size_t(layer[i])];
        const auto& nb = downwards ? v.up : v.down;
        double sum = 0;
        for (int u : nb) sum += vs[size_t(u)].x;
        want[i] = nb.empty() ? v.x : sum / double(nb.size());
        if (i + 1 < layer.size())
          gap[i] = (v.width + vs[size_t(layer[i + 1])].width) / 2 + (v.width > 2 ? options.node_gap : 4);
      }
      place_rank(want, gap, placed);
      for (size_t i = 0; i < layer.size(); ++i) vs[size_t(layer[i])].x = placed[i];
    }
  };
  for (int pass = 0; pass < 4; ++pass) {
    if (cancelled(options)) return r.cancelled = true, r;
    align(true);
    align(false);
  }
  align(true);
  report(90);

  // y per rank, and the bounding box.
  std::vector<double> rank_height(static_cast<size_t>(rank_count), 0), rank_y(static_cast<size_t>(rank_count), 0);
  for (const Vertex& v : vs) rank_height[size_t(v.rank)] = std::max(rank_height[size_t(v.rank)], v.height);
  double y = 0;
  for (int k = 0; k < rank_count; ++k) {
    rank_y[size_t(k)] = y + rank_height[size_t(k)] / 2;
    y += rank_height[size_t(k)] + options.rank_gap;
  }
  double min_x = 0, max_x = 0;
  bool first = true;
  for (const Vertex& v : vs) {
    double l = v.x - v.width / 2, h = v.x + v.width / 2;
    min_x = first ? l : std::min(min_x, l);
    max_x = first ? h : std::max(max_x, h);
    first = false;
  }
  const double margin = 4;
  auto point_of = [&](int v) {
    return LayoutPoint{vs[size_t(v)].x - min_x + margin, rank_y[size_t(vs[size_t(v)].rank)] + margin};
  };
  r.width = max_x - min_x + 2 * margin;
  r.height = std::max(0.0, y - options.rank_gap) + 2 * margin;
  r.centers.resize(size_t(boxes));
  for (int v = 0; v < boxes; ++v) r.centers[size_t(v)] = point_of(v);

  // 6. Edge curves, from the bottom of the source to the top of the target.
  r.edge_paths.resize(edges.size());
  for (size_t e = 0; e < edges.size(); ++e) {
    std::vector<LayoutPoint> stops;
    for (size_t k = 0; k < chain[e].size(); ++k) {
      LayoutPoint p = point_of(chain[e][k]);
      if (k == 0) p.y += vs[size_t(chain[e][k])].height / 2;
      if (k + 1 == chain[e].size()) p.y -= vs[size_t(chain[e][k])].height / 2;
      stops.push_back(p);
    }
    auto& path = r.edge_paths[e];
    path.push_back(stops[0]);
    for (size_t k = 0; k + 1 < stops.size(); ++k) {
      double dy = (stops[k + 1].y - stops[k].y) / 2;
      path.push_back({stops[k].x, stops[k].y + dy});
      path.push_back({stops[k + 1].x, stops[k + 1].y - dy});
      path.push_back(stops[k + 1]);
    }
    if (reversed[e]) std::reverse(path.begin(), path.end());
  }
  report(100);
  return r;
}

}  // namespace kiln
