#pragma once
// GraphView's private state, shared by graph_view.cpp (API, input, layout
// requests) and graph_view_paint.cpp (colours, painting, minimap, tooltips).
#include <QColor>
#include <QElapsedTimer>
#include <QFont>
#include <QFontMetricsF>
#include <QHash>
#include <QPainterPath>
#include <QPixmap>
#include <QPointF>
#include <QRectF>

#include <cmath>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "session/graph_layout_worker.h"
#include "viewer/graph_view.h"

namespace kiln {

// Lets the worker post results to a view that may be destroyed meanwhile:
// the view clears `view` under the lock before it dies, and Qt drops events
// already posted to a deleted object.
struct GraphViewRelay {
  std::mutex mutex;
  GraphView* view = nullptr;
};

struct DrawnEdge {
  QPainterPath path;
  QRectF bounds;  // of the path, slightly grown, for culling and hover hit tests
  QPointF tip;    // where the arrowhead goes
  QPointF tip_direction;
  // Spans many ranks in a big graph: drawn faint, so the long wires of saved
  // activations and weights do not hide the local structure.
  bool faint = false;
  // The shape of what flows along it (empty: unknown, or several values of
  // different shapes out of a collapsed scope: the tooltip lists them).
  QString shape;
  // Where its shape label may go: points at 1/2, 1/3 and 2/3 of its length,
  // found at the first paint that needs them (a length costs a subdivision).
  QPointF label_at[3];
  bool label_at_known = false;
};

// A region of an expanded scope: a cluster of its boxes that lie close
// together (the forward and the backward part of a joint graph's block are two).
struct Landmark {
  std::string scope;
  QRectF bounds;  // layout coordinates
  int ops = 0;    // call nodes inside
  int depth = 0;  // 1 for top-level scopes
  int top = 0;    // index of its top-level scope, for the colour
  QPointF anchor;  // where its label goes: the centre of its box nearest the middle
};

struct GraphViewState {
  // What the caller gave.
  std::shared_ptr<const Graph> graph;
  std::vector<int> fusion_groups;
  std::vector<double> errors;
  GraphColorMode color_mode = GraphColorMode::OpKind;
  bool show_shapes = true;
  std::vector<NodeId> selection;
  std::vector<char> selected;        // per node, mirrors `selection`
  QHash<NodeId, QColor> marks;

  // Layout requests and what came back.
  std::shared_ptr<GraphViewRelay> relay = std::make_shared<GraphViewRelay>();
  quint64 ticket = 0;                 // of the newest request
  bool layout_ready = false;          // the current graph's layout has arrived
  bool new_graph_pending = true;      // the next layout is a new graph: choose the first view
  std::set<std::string> expanded;
  std::shared_ptr<const SceneLayout> shown;
  std::vector<QRectF> boxes;          // per scene box, in layout coordinates
  std::vector<DrawnEdge> edges;       // per scene edge
  QRectF bounds;                      // of the whole layout
  double layout_ms = 0;
  bool layout_from_cache = false;
  // Keeps the box the user expanded or collapsed under the mouse across the relayout.
  NodeId anchor_node = kNoNode;
  QPointF anchor_widget_pos;
  bool center_selection_after_layout = false;

  // View transform: widget = (layout - origin) * zoom.
  double zoom = 1;
  QPointF origin;

  // Interaction.
  QPoint press_pos;
  QPointF press_origin;
  bool pressed = false, dragging = false, minimap_drag = false;
  int hover_edge = -1;
  int find_cursor = -1;  // node index of the last match

  std::vector<Landmark> landmarks;
  std::vector<int> box_ops;           // per scene box: call nodes inside
  std::vector<int> box_top;           // per scene box: its top-level scope's index (-1: none)
  std::vector<QString> box_title, box_subtitle;  // per scene box, made once per layout

  // Painting.
  std::vector<GraphView::DrawnLabel> drawn;  // by the last paint
  QFont font;
  TextMetrics metrics;
  QPixmap minimap;
  bool minimap_dirty = true;
};

// Colours, shared by the painter and the minimap.
QColor box_fill(const GraphViewState& s, const SceneBox& box);
QColor selection_color();
// `text` shortened from the front to `width`, dropping whole dotted components first.
QString elide_front(const QString& text, const QFontMetricsF& fm, double width);

}  // namespace kiln
