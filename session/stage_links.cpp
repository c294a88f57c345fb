#include "session/stage_links.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/graph/printer.h"

namespace kiln::session {

int step_stage(const SessionCompile& c, int current, int delta, bool changed_only) {
  int n = int(c.stages.size());
  if (n == 0) return -1;
  if (current < 0 || current >= n) return delta >= 0 ? 0 : n - 1;
  int step = delta >= 0 ? 1 : -1;
  int left = std::abs(delta);
  int i = current;
  while (left > 0) {
    int j = i + step;
    while (j >= 0 && j < n && changed_only && !c.stages[size_t(j)].changed) j += step;
    if (j < 0 || j >= n) break;
    i = j;
    --left;
  }
  return i;
}

namespace {

std::vector<int> ancestors(const SessionCompile& c, int s) {
  std::vector<int> out;
  for (int i = s; i >= 0 && int(out.size()) <= int(c.stages.size()); i = c.stages[size_t(i)].parent) out.push_back(i);
  return out;
}

const std::vector<std::string>& origins(const Node& n, std::vector<std::string>& own) {
  if (!n.meta.from.empty()) return n.meta.from;
  own.assign(1, n.name);
  return own;
}

// Names in the parent stage of the given names in the child stage.
std::set<std::string> up(const Graph& child, const std::set<std::string>& names) {
  std::set<std::string> out;
  std::vector<std::string> own;
  for (const Node& n : child.nodes)
    if (names.count(n.name))
      for (const std::string& f : origins(n, own)) out.insert(f);
  return out;
}

std::set<std::string> down(const Graph& child, const std::set<std::string>& names) {
  std::set<std::string> out;
  std::vector<std::string> own;
  for (const Node& n : child.nodes)
    for (const std::string& f : origins(n, own))
      if (names.count(f)) {
        out.insert(n.name);
        break;
      }
  return out;
}

}  // namespace

std::vector<int> provenance_path(const SessionCompile& c, int from, int to) {
  std::vector<int> a = ancestors(c, from), b = ancestors(c, to);
  int common = -1;
  for (int x : a)
    if (std::find(b.begin(), b.end(), x) != b.end()) {
      common = x;
      break;
    }
  if (common < 0) return {};
  std::vector<int> path;
  for (int x : a) {
    path.push_back(x);
    if (x == common) break;
  }
  std::vector<int> tail;
  for (int x : b) {
    if (x == common) break;
    tail.push_back(x);
  }
  path.insert(path.end(), tail.rbegin(), tail.rend());
  return path;
}

std::vector<NodeId> linked_nodes(const SessionCompile& c, int from, int to, const std::vector<std::string>& names,
                                 const GraphLookup& graph) {
  std::vector<int> path = provenance_path(c, from, to);
  if (path.empty()) return {};
  std::set<std::string> current(names.begin(), names.end());
  std::shared_ptr<const Graph> g = graph(path.front());
  if (!g) return {};
  for (size_t k = 1; k < path.size(); ++k) {
    int prev = path[k - 1], next = path[k];
    std::shared_ptr<const Graph> ng = graph(next);
    if (!ng) return {};
    if (ng != g) {  // an unchanged stage shares its graph: the same nodes
      bool going_up = c.stages[size_t(prev)].parent == next;
      current = going_up ? up(*g, current) : down(*ng, current);
    }
    g = ng;
  }
  std::vector<NodeId> out;
  for (NodeId i = 0; i < NodeId(g->size()); ++i)
    if (current.count((*g)[i].name)) out.push_back(i);
  return out;
}

namespace {

// A node's computation with its inputs by name, so renumbering is no change.
std::string signature(const Graph& g, const Node& n) {
  std::string s = std::string(op_kind_name(n.op)) + " " + n.target + "(";
  for (const Arg& a : n.args) s += print_arg(g, a) + ",";
  for (const auto& [k, v] : n.kwargs) s += k + "=" + print_arg(g, v) + ",";
  return s + ")";
}

}  // namespace

StageDiff diff_graphs(const Graph& before, const Graph& after) {
  StageDiff d;
  std::unordered_map<std::string, NodeId> old_ids;
  for (NodeId i = 0; i < NodeId(before.size()); ++i) old_ids[before[i].name] = i;
  std::unordered_set<std::string> kept;
  for (NodeId i = 0; i < NodeId(after.size()); ++i) {
    const Node& n = after[i];
    auto it = old_ids.find(n.name);
    if (it == old_ids.end()) {
      d.added.push_back(i);
      continue;
    }
    kept.insert(n.name);
    if (signature(before, before[it->second]) != signature(after, n)) d.rewritten.push_back(i);
  }
  for (NodeId i = 0; i < NodeId(before.size()); ++i)
    if (!kept.count(before[i].name)) {
      d.removed.push_back(i);
      d.removed_names.push_back(before[i].name);
    }
  return d;
}

int diff_base(const SessionCompile& c, int stage) {
  if (stage < 0 || stage >= int(c.stages.size())) return -1;
  return c.stages[size_t(stage)].parent;
}

}  // namespace kiln::session
