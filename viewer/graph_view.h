#pragma once
// The graph view: a zoomable, pannable picture of one Graph, laid out by
// Graphviz on a worker thread. Big graphs open with their module scopes
// collapsed into one box each; double-clicking a box expands it one level.
// Painting is done by hand in paintEvent with level of detail, so thousands of
// boxes stay smooth without an item per node: node text is drawn at the
// layout's scale while that is readable (kMinLabelPx), then as a title at the
// smallest readable size while it fits its box, then not at all; scope boxes
// and the regions of expanded scopes keep screen-sized labels at every zoom
// (landmarks), fewer where they would overlap. While node text is drawn,
// edges carry the shape of the value they hold ("1×64×56×56", "8 i64"), as
// Netron does, where a label fits beside the edge without covering a box.
#include <QColor>
#include <QRectF>
#include <QString>
#include <QWidget>

#include <memory>
#include <vector>

#include "core/graph/graph.h"

class QPainter;

namespace kiln {

enum class GraphColorMode { OpKind, FusionGroup, Numerics };

struct GraphViewState;
struct SceneLayout;

class GraphView : public QWidget {
  Q_OBJECT
 public:
  explicit GraphView(QWidget* parent = nullptr);
  ~GraphView() override;

  // Shows `g`; layout runs on a worker thread (the UI never waits); a newer call replaces a stale queued one.
  // fusionGroups: per node index a fusion group (-1 none), may be empty.
  void setGraph(std::shared_ptr<const Graph> g, std::vector<int> fusionGroups = {});
  void setColorMode(GraphColorMode m);
  // Per node index a relative error (NaN = not measured) for Numerics colouring.
  void setNodeErrors(std::vector<double> errors);
  // Highlight (selection colour) and scroll to the first; empty clears.
  void selectNodes(const std::vector<NodeId>& ids);
  // Diff marks: added / removed / rewritten nodes get distinct outlines.
  void markNodes(const std::vector<NodeId>& ids, QColor outline);
  void clearMarks();
  void fitToView();
  bool find(const QString& text);  // by node name, target or op; selects the next match
  bool isLayoutReady() const;
  // Tensor shapes on edges (on by default).
  void setShowShapes(bool on);
  bool showShapes() const;

  // Extras beyond the embedding contract, used by tests and the app.
  GraphColorMode colorMode() const;
  std::shared_ptr<const Graph> graph() const;
  std::vector<NodeId> selectedNodes() const;
  // Collapse state: a scope path ("layer1", "layer1.0") is collapsed when shown as one box.
  bool isScopeCollapsed(const QString& scope) const;
  void expandScope(const QString& scope);    // one level: its children scopes stay collapsed
  void collapseScope(const QString& scope);  // folds the scope back into its box
  void expandAll();
  void collapseAll();  // back to the top-level scopes
  // Number of boxes (nodes + collapsed scopes) in the current layout; 0 before the first layout.
  int visibleBoxCount() const;
  // Widget coordinates of the centre of a node's box (or of the scope box that holds it);
  // an invalid point when it is not laid out yet.
  QPoint nodeCenter(NodeId id) const;
  double zoom() const;
  void setZoom(double factor);  // 1.0 = one layout point per pixel
  // Milliseconds the worker spent on the last layout (about 0 when it came from the cache).
  double lastLayoutMs() const;
  bool lastLayoutFromCache() const;
  // Name of the engine that made the last layout: "dot" or "layered" (the fast fallback).
  QString lastLayoutEngine() const;
  // Graphs whose visible box count exceeds this open with scopes collapsed.
  static constexpr int kCollapseThreshold = 300;
  // No text is drawn smaller than this many pixels.
  static constexpr double kMinLabelPx = 8;
  // Shape labels' size at zoom 1; never drawn under kMinLabelPx.
  static constexpr double kShapeLabelPx = 10;

  // What the last paint drew as text, for tests and --bench-view: each label's
  // text, font size in pixels and place in widget coordinates; `scope` for the
  // labels of scope boxes and of expanded scopes' regions, `shape` for the
  // tensor shapes on edges.
  struct DrawnLabel {
    QString text;
    double pixel_size = 0;
    QRectF rect;
    bool scope = false;
    bool shape = false;
  };
  const std::vector<DrawnLabel>& lastPaintLabels() const;

 signals:
  void nodeClicked(kiln::NodeId id);
  void nodeDoubleClicked(kiln::NodeId id);
  void layoutReady();  // the first frame of the current graph can be painted
  void layoutProgress(int percent);
  // A frame was painted; tests measure setGraph -> first paint with it.
  void painted();

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void contextMenuEvent(QContextMenuEvent* event) override;
  void leaveEvent(QEvent* event) override;
  bool event(QEvent* event) override;

 private:
  void requestLayout();
  void onLayoutDone(quint64 ticket, std::shared_ptr<const SceneLayout> result);
  void adoptLayout(std::shared_ptr<const SceneLayout> result);
  void chooseFirstView();
  void centerOn(QPointF layoutPos);
  void zoomAround(double factor, QPointF widgetPos);
  int boxAt(QPointF widgetPos) const;
  int edgeAt(QPointF widgetPos) const;
  void activateBox(int box, bool doubleClick);
  QRectF visibleLayoutRect() const;
  QRect minimapRect() const;
  void paintMinimap(QPainter& p);
  QString nodeToolTip(int box) const;
  QString edgeToolTip(int edge) const;
  void computeLandmarks();
  void paintScreenLabels(QPainter& p);
  void paintShapeLabels(QPainter& p);

  std::unique_ptr<GraphViewState> d_;
};

}  // namespace kiln
