#pragma once
// What the graph view shows of a Graph: one box per node, except that the
// nodes of a collapsed module scope share one box. Built from the graph and
// the set of expanded scopes; plain C++ so it can be built on the layout
// worker and tested without a window.
//
// Scopes nest by dots: "layer1.0.conv1" lies in "layer1.0", which lies in
// "layer1". A node is drawn in the box of the outermost scope on its path
// that is not expanded; a node whose whole path is expanded is its own box.
// Expanding "layer1" therefore shows "layer1.0", "layer1.1" as boxes: one
// level at a time. A scope box that would hold a single node shows the node.
#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "session/graph_layout.h"

namespace kiln {

struct SceneBox {
  NodeId node = kNoNode;       // a node's own box
  std::string scope;           // a collapsed scope's box: its path
  std::vector<NodeId> members;  // every node drawn in this box (one for a node box)
  bool is_scope() const { return !scope.empty(); }
};

struct SceneEdge {
  int from = 0, to = 0;          // box indices
  std::vector<NodeId> sources;   // the producer nodes whose values flow along this edge
};

struct GraphScene {
  std::vector<SceneBox> boxes;
  std::vector<SceneEdge> edges;
  std::vector<int> box_of_node;  // per node index
};

// "a.b.c" -> {"a", "a.b", "a.b.c"}; "" -> {}.
std::vector<std::string> scope_prefixes(const std::string& scope);
// Every scope path that occurs in g, prefixes included.
std::set<std::string> scope_paths(const Graph& g);
// The scope one level up: "a.b" -> "a", "a" -> "".
std::string parent_scope(const std::string& scope);

GraphScene build_scene(const Graph& g, const std::set<std::string>& expanded);

// Box text: a title (the op, or the scope path) and a subtitle (the node's
// name, a module state's path for Dynamo's long input names, or how many
// nodes the scope holds).
struct BoxText {
  std::string title, subtitle;
};
BoxText box_text(const Graph& g, const SceneBox& box);
// "aten::convolution.default" -> "convolution"; "torch.sin" -> "sin".
std::string short_target(const Node& n);
// "f32[64, 3, 7, 7]" and the like, as print_readable annotates values.
std::string describe_val(const Val& v);
// The short form the graph view draws on edges, as Netron does: "1×64×56×56",
// the dtype after it unless float32 ("2×3 f16", "8 i64", "4 bool"), "scalar"
// for a 0-d tensor, a tuple's tensors joined by ", ". Empty when no shape is
// known (no meta, a symbolic scalar, an annotation we could not read).
std::string shape_label(const Val& v);

// Sizes from box_text with per-character advances measured once on the GUI
// thread (title bold, subtitle plain), so the worker needs no fonts and short
// names always fit; the painter elides only what is over the width cap.
// Without advances (tests), a fixed average character width.
struct TextMetrics {
  double char_width = 7, line_height = 15;
  std::array<float, 128> title_advance{}, subtitle_advance{};  // ASCII; others take char_width
  double text_width(const std::string& text, bool title) const;
};
LayoutInput layout_input(const Graph& g, const GraphScene& scene, const TextMetrics& metrics);

// A cache key for a scene's layout: the graph's structural hash plus what the
// hash leaves out but the layout depends on (scopes, names as box widths),
// the expanded scopes and the text metrics.
uint64_t scene_layout_key(const Graph& g, const std::set<std::string>& expanded, const TextMetrics& metrics);

}  // namespace kiln
