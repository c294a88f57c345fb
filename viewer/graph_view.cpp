// GraphView: API, layout requests and input. Painting, colours and tooltips
// are in graph_view_paint.cpp.
#include "viewer/graph_view.h"

#include <QContextMenuEvent>
#include <QFontMetricsF>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QMenu>
#include <QMouseEvent>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <map>

#include "viewer/graph_view_state.h"

namespace kiln {

namespace {
constexpr double kMinZoom = 0.01, kMaxZoom = 4;
// Below this zoom a fitted big graph is unreadable: the first view shows its top instead.
// A first view with scope boxes may be smaller: their labels keep their size.
constexpr double kScopeFirstViewMinZoom = 0.3;
constexpr double kFirstViewZoom = 0.8;
// Regions of expanded scopes get labels down to this depth ("layer1.0").
constexpr int kLandmarkDepth = 2;
// Edges of graphs with more boxes than this that span more ranks than this are drawn faint.
constexpr size_t kFaintEdgeMinBoxes = 80;
constexpr double kFaintEdgeRanks = 3.5;
constexpr double kFaintEdgeWidth = 6;  // ... or run sideways further than this many rank heights
}  // namespace

GraphView::GraphView(QWidget* parent) : QWidget(parent), d_(std::make_unique<GraphViewState>()) {
  qRegisterMetaType<kiln::NodeId>("kiln::NodeId");
  setFocusPolicy(Qt::StrongFocus);
  setMouseTracking(true);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setMinimumSize(120, 90);
  d_->relay->view = this;
  d_->font = font();
  d_->font.setPixelSize(11);
  QFont bold = d_->font;
  bold.setBold(true);
  QFontMetricsF plain(d_->font), strong(bold);
  d_->metrics.char_width = std::max(plain.averageCharWidth(), strong.averageCharWidth()) * 1.05;
  d_->metrics.line_height = std::max(plain.height(), strong.height());
  for (int c = 32; c < 127; ++c) {
    d_->metrics.title_advance[size_t(c)] = float(strong.horizontalAdvance(QChar(c)));
    d_->metrics.subtitle_advance[size_t(c)] = float(plain.horizontalAdvance(QChar(c)));
  }
}

GraphView::~GraphView() {
  {
    std::lock_guard lock(d_->relay->mutex);
    d_->relay->view = nullptr;
  }
  GraphLayoutWorker::instance().forget(this);
}

void GraphView::setGraph(std::shared_ptr<const Graph> g, std::vector<int> fusionGroups) {
  d_->graph = std::move(g);
  d_->fusion_groups = std::move(fusionGroups);
  d_->errors.clear();
  d_->selection.clear();
  d_->selected.assign(d_->graph ? d_->graph->size() : 0, 0);
  d_->marks.clear();
  d_->expanded.clear();
  d_->layout_ready = false;
  d_->new_graph_pending = true;
  d_->find_cursor = -1;
  d_->anchor_node = kNoNode;
  d_->hover_edge = -1;
  // The old layout's boxes name nodes of the old graph; painting them against
  // the new one (per-node selection, text) would read past its end.
  d_->shown.reset();
  d_->boxes.clear();
  d_->edges.clear();
  requestLayout();
}

void GraphView::requestLayout() {
  quint64 ticket = ++d_->ticket;
  if (!d_->graph) {
    GraphLayoutWorker::instance().forget(this);
    d_->shown.reset();
    d_->boxes.clear();
    d_->edges.clear();
    update();
    return;
  }
  SceneRequest request;
  request.graph = d_->graph;
  request.expanded = d_->expanded;
  request.choose_expansion = d_->new_graph_pending;
  request.collapse_threshold = kCollapseThreshold;
  request.metrics = d_->metrics;
  std::weak_ptr<GraphViewRelay> relay = d_->relay;
  auto done = [relay, ticket](std::shared_ptr<const SceneLayout> result) {
    auto r = relay.lock();
    if (!r) return;
    std::lock_guard lock(r->mutex);
    if (GraphView* view = r->view)
      QMetaObject::invokeMethod(view, [view, ticket, result] { view->onLayoutDone(ticket, result); },
                                Qt::QueuedConnection);
  };
  auto progress = [relay, ticket](int percent) {
    auto r = relay.lock();
    if (!r) return;
    std::lock_guard lock(r->mutex);
    if (GraphView* view = r->view)
      QMetaObject::invokeMethod(view, [view, ticket, percent] {
        if (ticket == view->d_->ticket) emit view->layoutProgress(percent);
      }, Qt::QueuedConnection);
  };
  emit layoutProgress(0);
  GraphLayoutWorker::instance().submit(this, std::move(request), std::move(done), std::move(progress));
}

void GraphView::onLayoutDone(quint64 ticket, std::shared_ptr<const SceneLayout> result) {
  if (ticket != d_->ticket || !result || result->graph != d_->graph) return;  // stale
  adoptLayout(std::move(result));
}

void GraphView::adoptLayout(std::shared_ptr<const SceneLayout> result) {
  // Where the anchor box was on screen, before the boxes change.
  d_->shown = std::move(result);
  const SceneLayout& s = *d_->shown;
  d_->expanded = s.expanded;
  d_->layout_ms = s.layout_ms;
  d_->layout_from_cache = s.from_cache;
  d_->boxes.clear();
  d_->boxes.reserve(s.scene.boxes.size());
  QRectF bounds(0, 0, s.layout.width, s.layout.height);
  LayoutInput sizes = layout_input(*d_->graph, s.scene, d_->metrics);
  for (size_t i = 0; i < s.scene.boxes.size(); ++i) {
    const LayoutPoint c = s.layout.centers[i];
    const double w = sizes.boxes[i].width, h = sizes.boxes[i].height;
    d_->boxes.push_back(QRectF(c.x - w / 2, c.y - h / 2, w, h));
    bounds |= d_->boxes.back();
  }
  d_->edges.clear();
  d_->edges.reserve(s.layout.edge_paths.size());
  // A rank: a box and the gap under it (graph_layout.h's rank_gap).
  const double rank_pitch = 2 * d_->metrics.line_height + 10 + LayoutOptions{}.rank_gap;
  for (const auto& pts : s.layout.edge_paths) {
    DrawnEdge e;
    if (pts.size() >= 4) {
      e.path.moveTo(pts[0].x, pts[0].y);
      for (size_t k = 1; k + 2 < pts.size(); k += 3)
        e.path.cubicTo(pts[k].x, pts[k].y, pts[k + 1].x, pts[k + 1].y, pts[k + 2].x, pts[k + 2].y);
      e.tip = QPointF(pts.back().x, pts.back().y);
      // The last control point that differs from the tip gives the arrow's direction.
      QPointF from = e.tip;
      for (size_t k = pts.size() - 1; k-- > 0 && from == e.tip;) from = QPointF(pts[k].x, pts[k].y);
      e.tip_direction = e.tip - from;
    }
    e.bounds = e.path.controlPointRect().adjusted(-4, -4, 4, 4);
    e.faint = s.scene.boxes.size() > kFaintEdgeMinBoxes &&
              (e.bounds.height() > kFaintEdgeRanks * rank_pitch || e.bounds.width() > kFaintEdgeWidth * rank_pitch);
    std::string shape;
    for (NodeId src : s.scene.edges[d_->edges.size()].sources) {
      std::string one = shape_label((*d_->graph)[src].meta.val);
      if (one.empty() || (!shape.empty() && one != shape)) {
        shape.clear();
        break;
      }
      shape = std::move(one);
    }
    e.shape = QString::fromStdString(shape);
    d_->edges.push_back(std::move(e));
  }
  d_->bounds = bounds.adjusted(-20, -20, 20, 20);
  d_->box_ops.assign(s.scene.boxes.size(), 0);
  d_->box_title.clear();
  d_->box_subtitle.clear();
  for (size_t i = 0; i < s.scene.boxes.size(); ++i) {
    for (NodeId m : s.scene.boxes[i].members) d_->box_ops[i] += is_call((*d_->graph)[m]);
    BoxText t = box_text(*d_->graph, s.scene.boxes[i]);
    d_->box_title.push_back(QString::fromStdString(t.title));
    d_->box_subtitle.push_back(QString::fromStdString(t.subtitle));
  }
  computeLandmarks();
  d_->minimap_dirty = true;
  d_->hover_edge = -1;

  if (d_->new_graph_pending) {
    d_->new_graph_pending = false;
    chooseFirstView();
  } else if (d_->anchor_node != kNoNode) {
    int box = s.scene.box_of_node[size_t(d_->anchor_node)];
    if (box >= 0) d_->origin = d_->boxes[size_t(box)].center() - d_->anchor_widget_pos / d_->zoom;
    d_->anchor_node = kNoNode;
  }
  if (d_->center_selection_after_layout && !d_->selection.empty()) {
    int box = s.scene.box_of_node[size_t(d_->selection.front())];
    if (box >= 0) centerOn(d_->boxes[size_t(box)].center());
  }
  d_->center_selection_after_layout = false;
  d_->layout_ready = true;
  emit layoutProgress(100);
  emit layoutReady();
  update();
}

void GraphView::computeLandmarks() {
  d_->landmarks.clear();
  const SceneLayout& s = *d_->shown;
  const Graph& g = *d_->graph;
  // Boxes this close (in ranks) to a region join it; farther ones start another
  // (the forward and the backward half of a block in a joint graph).
  const double reach = 4 * (2 * d_->metrics.line_height + 10 + LayoutOptions{}.rank_gap);
  std::map<std::string, std::vector<size_t>> by_scope;  // scope -> its landmarks
  std::map<std::string, int> tops;
  std::vector<std::vector<size_t>> members;  // per landmark, its boxes
  d_->box_top.assign(s.scene.boxes.size(), -1);
  for (size_t b = 0; b < s.scene.boxes.size(); ++b) {
    const SceneBox& box = s.scene.boxes[b];
    const std::string& path = box.is_scope() ? box.scope : g[box.node].meta.scope;
    if (path.empty()) continue;
    const std::string top = path.substr(0, path.find('.'));
    d_->box_top[b] = tops.emplace(top, int(tops.size())).first->second;
    const QRectF& r = d_->boxes[b];
    for (const std::string& p : scope_prefixes(path)) {
      const int depth = 1 + int(std::count(p.begin(), p.end(), '.'));
      if (depth > kLandmarkDepth || !d_->expanded.count(p)) break;  // a collapsed scope is a box, not a region
      auto& mine = by_scope[p];
      size_t into = d_->landmarks.size();
      for (size_t k : mine)
        if (d_->landmarks[k].bounds.adjusted(-reach, -reach, reach, reach).contains(r.center())) into = k;
      if (into == d_->landmarks.size()) {
        mine.push_back(into);
        Landmark l;
        l.scope = p;
        l.depth = depth;
        l.bounds = r;
        l.top = d_->box_top[b];
        d_->landmarks.push_back(std::move(l));
        members.emplace_back();
      }
      d_->landmarks[into].bounds |= r;
      d_->landmarks[into].ops += d_->box_ops[b];
      members[into].push_back(b);
    }
  }
  for (size_t k = 0; k < d_->landmarks.size(); ++k) {
    Landmark& l = d_->landmarks[k];
    QPointF mean;
    for (size_t b : members[k]) mean += d_->boxes[b].center();
    mean /= double(members[k].size());
    double best = 1e300;
    for (size_t b : members[k]) {
      const QPointF d = d_->boxes[b].center() - mean;
      if (double dist = d.x() * d.x() + d.y() * d.y(); dist < best) best = dist, l.anchor = d_->boxes[b].center();
    }
  }
  // Fragments (a few ops of a block that the layout put elsewhere) would only crowd the labels.
  std::map<std::string, int> scope_ops;
  for (const Landmark& l : d_->landmarks) scope_ops[l.scope] += l.ops;
  std::erase_if(d_->landmarks, [&](const Landmark& l) { return l.ops < std::max(2, scope_ops[l.scope] / 10); });
}

void GraphView::chooseFirstView() {
  fitToView();
  // Fitted is fine when node text is readable, or when the picture is of a
  // few scope boxes (their labels are screen-sized) and node titles still fit.
  bool any_scope = false;
  for (const SceneBox& b : d_->shown->scene.boxes) any_scope |= b.is_scope();
  if (d_->zoom * d_->font.pixelSize() >= kMinLabelPx || (any_scope && d_->zoom >= kScopeFirstViewMinZoom)) return;
  // Too small to read: start at the top (the inputs) at a readable size; the minimap shows the rest.
  d_->zoom = kFirstViewZoom;
  double visible_width = width() / d_->zoom;
  d_->origin = QPointF(d_->bounds.center().x() - visible_width / 2, d_->bounds.top());
  if (d_->bounds.width() > visible_width) {
    // Wide graphs: centre on the first op (where the computation starts)
    // rather than on empty space or on a row of inputs.
    const SceneLayout& s = *d_->shown;
    int first = d_->boxes.empty() ? -1 : 0;
    for (NodeId id = 0; id < NodeId(d_->graph->size()); ++id)
      if ((*d_->graph)[id].op == OpKind::CallFunction && s.scene.box_of_node[size_t(id)] >= 0) {
        first = s.scene.box_of_node[size_t(id)];
        break;
      }
    if (first >= 0) d_->origin.setX(d_->boxes[size_t(first)].center().x() - visible_width / 2);
  }
}

void GraphView::setColorMode(GraphColorMode m) {
  d_->color_mode = m;
  d_->minimap_dirty = true;
  update();
}

void GraphView::setShowShapes(bool on) {
  d_->show_shapes = on;
  update();
}

bool GraphView::showShapes() const { return d_->show_shapes; }

void GraphView::setNodeErrors(std::vector<double> errors) {
  d_->errors = std::move(errors);
  d_->minimap_dirty = true;
  update();
}

void GraphView::selectNodes(const std::vector<NodeId>& ids) {
  const size_t n = d_->graph ? d_->graph->size() : 0;
  d_->selection.clear();
  d_->selected.assign(n, 0);
  for (NodeId id : ids) {
    if (id < 0 || size_t(id) >= n) continue;
    d_->selection.push_back(id);
    d_->selected[size_t(id)] = 1;
  }
  d_->minimap_dirty = true;
  if (!d_->selection.empty() && d_->shown) {
    int box = d_->shown->scene.box_of_node[size_t(d_->selection.front())];
    if (box >= 0 && !visibleLayoutRect().contains(d_->boxes[size_t(box)])) centerOn(d_->boxes[size_t(box)].center());
  }
  update();
}

void GraphView::markNodes(const std::vector<NodeId>& ids, QColor outline) {
  for (NodeId id : ids) d_->marks.insert(id, outline);
  d_->minimap_dirty = true;
  update();
}

void GraphView::clearMarks() {
  d_->marks.clear();
  d_->minimap_dirty = true;
  update();
}

void GraphView::fitToView() {
  if (d_->bounds.isEmpty() || width() <= 0 || height() <= 0) return;
  d_->zoom = std::clamp(std::min(width() / d_->bounds.width(), height() / d_->bounds.height()), kMinZoom, 1.0);
  centerOn(d_->bounds.center());
}

bool GraphView::find(const QString& text) {
  if (!d_->graph || text.isEmpty()) return false;
  const Graph& g = *d_->graph;
  const std::string needle = text.toLower().toStdString();
  auto matches = [&](const std::string& hay) {
    return std::search(hay.begin(), hay.end(), needle.begin(), needle.end(),
                       [](char a, char b) { return std::tolower(uchar(a)) == b; }) != hay.end();
  };
  const int n = int(g.size());
  for (int step = 1; step <= n; ++step) {
    int id = (d_->find_cursor + step) % n;
    const Node& node = g[id];
    if (!matches(node.name) && !matches(node.target) && !matches(std::string(op_kind_name(node.op)))) continue;
    d_->find_cursor = id;
    // Reveal the match: expand every scope that hides it, then select it.
    bool hidden = false;
    for (const std::string& p : scope_prefixes(node.meta.scope)) hidden |= d_->expanded.insert(p).second;
    selectNodes({id});
    if (hidden) {
      d_->center_selection_after_layout = true;
      requestLayout();
    }
    return true;
  }
  return false;
}

bool GraphView::isLayoutReady() const { return d_->layout_ready; }
GraphColorMode GraphView::colorMode() const { return d_->color_mode; }
std::shared_ptr<const Graph> GraphView::graph() const { return d_->graph; }
std::vector<NodeId> GraphView::selectedNodes() const { return d_->selection; }

bool GraphView::isScopeCollapsed(const QString& scope) const { return !d_->expanded.count(scope.toStdString()); }

void GraphView::expandScope(const QString& scope) {
  bool changed = false;
  for (const std::string& p : scope_prefixes(scope.toStdString())) changed |= d_->expanded.insert(p).second;
  if (changed && d_->graph) requestLayout();
}

void GraphView::collapseScope(const QString& scope) {
  const std::string s = scope.toStdString();
  const std::string nested = s + ".";
  size_t before = d_->expanded.size();
  std::erase_if(d_->expanded, [&](const std::string& e) { return e == s || e.rfind(nested, 0) == 0; });
  if (d_->expanded.size() != before && d_->graph) requestLayout();
}

void GraphView::collapseAll() {
  if (!d_->graph || d_->expanded.empty()) return;
  d_->expanded.clear();
  requestLayout();
}

const std::vector<GraphView::DrawnLabel>& GraphView::lastPaintLabels() const { return d_->drawn; }

void GraphView::expandAll() {
  if (!d_->graph) return;
  std::set<std::string> all = scope_paths(*d_->graph);
  if (all == d_->expanded) return;
  d_->expanded = std::move(all);
  requestLayout();
}

int GraphView::visibleBoxCount() const { return d_->shown ? int(d_->boxes.size()) : 0; }

QPoint GraphView::nodeCenter(NodeId id) const {
  if (!d_->shown || id < 0 || size_t(id) >= d_->shown->scene.box_of_node.size()) return {};
  int box = d_->shown->scene.box_of_node[size_t(id)];
  if (box < 0) return {};
  return ((d_->boxes[size_t(box)].center() - d_->origin) * d_->zoom).toPoint();
}

double GraphView::zoom() const { return d_->zoom; }
void GraphView::setZoom(double factor) { zoomAround(factor / d_->zoom, QPointF(width() / 2.0, height() / 2.0)); }
double GraphView::lastLayoutMs() const { return d_->layout_ms; }
bool GraphView::lastLayoutFromCache() const { return d_->layout_from_cache; }
QString GraphView::lastLayoutEngine() const {
  return d_->shown ? QString::fromStdString(d_->shown->layout.engine) : QString();
}

void GraphView::centerOn(QPointF layoutPos) {
  d_->origin = layoutPos - QPointF(width(), height()) / (2 * d_->zoom);
  update();
}

void GraphView::zoomAround(double factor, QPointF widgetPos) {
  double zoom = std::clamp(d_->zoom * factor, kMinZoom, kMaxZoom);
  QPointF fixed = d_->origin + widgetPos / d_->zoom;  // the layout point under the cursor stays put
  d_->zoom = zoom;
  d_->origin = fixed - widgetPos / zoom;
  update();
}

QRectF GraphView::visibleLayoutRect() const { return QRectF(d_->origin, QSizeF(width(), height()) / d_->zoom); }

int GraphView::boxAt(QPointF widgetPos) const {
  QPointF p = d_->origin + widgetPos / d_->zoom;
  for (int i = int(d_->boxes.size()) - 1; i >= 0; --i)
    if (d_->boxes[size_t(i)].contains(p)) return i;
  return -1;
}

int GraphView::edgeAt(QPointF widgetPos) const {
  QPointF p = d_->origin + widgetPos / d_->zoom;
  const double reach = std::max(3.0, 5.0 / d_->zoom);  // about 5 pixels on screen
  QPainterPathStroker stroker;
  stroker.setWidth(2 * reach);
  QRectF probe(p.x() - reach, p.y() - reach, 2 * reach, 2 * reach);
  for (int i = 0; i < int(d_->edges.size()); ++i) {
    const DrawnEdge& e = d_->edges[size_t(i)];
    if (!e.bounds.contains(p)) continue;
    if (stroker.createStroke(e.path).intersects(probe)) return i;
  }
  return -1;
}

void GraphView::activateBox(int box, bool doubleClick) {
  const SceneBox& b = d_->shown->scene.boxes[size_t(box)];
  if (b.is_scope()) {
    if (doubleClick) {
      d_->anchor_node = b.members.front();
      d_->anchor_widget_pos = (d_->boxes[size_t(box)].center() - d_->origin) * d_->zoom;
      expandScope(QString::fromStdString(b.scope));
    } else {
      selectNodes(b.members);
    }
    return;
  }
  if (doubleClick) {
    emit nodeDoubleClicked(b.node);
  } else {
    selectNodes({b.node});
    emit nodeClicked(b.node);
  }
}

void GraphView::resizeEvent(QResizeEvent*) { update(); }

void GraphView::wheelEvent(QWheelEvent* event) {
  const double steps = event->angleDelta().y() / 120.0;
  if (steps != 0) zoomAround(std::pow(1.2, steps), event->position());
  event->accept();
}

void GraphView::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return QWidget::mousePressEvent(event);
  d_->pressed = true;
  d_->dragging = false;
  d_->press_pos = event->position().toPoint();
  d_->press_origin = d_->origin;
  d_->minimap_drag = minimapRect().contains(d_->press_pos);
  if (d_->minimap_drag) mouseMoveEvent(event);
}

void GraphView::mouseMoveEvent(QMouseEvent* event) {
  const QPointF pos = event->position();
  if (d_->pressed && d_->minimap_drag) {
    QRect mm = minimapRect();
    double scale = mm.width() / d_->bounds.width();
    centerOn(d_->bounds.topLeft() + (pos - QPointF(mm.topLeft())) / scale);
    return;
  }
  if (d_->pressed) {
    if (!d_->dragging && (pos.toPoint() - d_->press_pos).manhattanLength() >= 4) {
      d_->dragging = true;
      setCursor(Qt::ClosedHandCursor);
    }
    if (d_->dragging) {
      d_->origin = d_->press_origin - (pos - QPointF(d_->press_pos)) / d_->zoom;
      update();
    }
    return;
  }
  int hover = boxAt(pos) >= 0 ? -1 : edgeAt(pos);
  if (hover != d_->hover_edge) {
    d_->hover_edge = hover;
    update();
  }
}

void GraphView::mouseReleaseEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton || !d_->pressed) return QWidget::mouseReleaseEvent(event);
  const bool click = !d_->dragging && !d_->minimap_drag;
  d_->pressed = d_->dragging = d_->minimap_drag = false;
  unsetCursor();
  if (!click || !d_->shown) return;
  int box = boxAt(event->position());
  if (box >= 0) activateBox(box, false);
}

void GraphView::mouseDoubleClickEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton || !d_->shown || minimapRect().contains(event->position().toPoint())) return;
  int box = boxAt(event->position());
  if (box >= 0) activateBox(box, true);
}

void GraphView::keyPressEvent(QKeyEvent* event) {
  const double pan = 80 / d_->zoom;
  switch (event->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal: zoomAround(1.25, QPointF(width() / 2.0, height() / 2.0)); break;
    case Qt::Key_Minus: zoomAround(0.8, QPointF(width() / 2.0, height() / 2.0)); break;
    case Qt::Key_0:
    case Qt::Key_F: fitToView(); break;
    case Qt::Key_Left: d_->origin.rx() -= pan; update(); break;
    case Qt::Key_Right: d_->origin.rx() += pan; update(); break;
    case Qt::Key_Up: d_->origin.ry() -= pan; update(); break;
    case Qt::Key_Down: d_->origin.ry() += pan; update(); break;
    case Qt::Key_Backspace:
      // Folds the innermost expanded scope of the selection back into its box.
      if (!d_->selection.empty() && d_->graph) {
        std::string scope = (*d_->graph)[d_->selection.front()].meta.scope;
        while (!scope.empty() && !d_->expanded.count(scope)) scope = parent_scope(scope);
        if (!scope.empty()) collapseScope(QString::fromStdString(scope));
      }
      break;
    default: QWidget::keyPressEvent(event); return;
  }
  event->accept();
}

void GraphView::contextMenuEvent(QContextMenuEvent* event) {
  if (!d_->shown) return;
  QMenu menu(this);
  int box = boxAt(event->pos());
  if (box >= 0) {
    const SceneBox& b = d_->shown->scene.boxes[size_t(box)];
    if (b.is_scope()) {
      QString scope = QString::fromStdString(b.scope);
      menu.addAction(tr("Expand %1").arg(scope), this, [this, scope] { expandScope(scope); });
    }
    // Every expanded scope around the box can be folded from here.
    std::string around = b.is_scope() ? parent_scope(b.scope) : (*d_->graph)[b.node].meta.scope;
    for (; !around.empty(); around = parent_scope(around)) {
      if (!d_->expanded.count(around)) continue;
      QString scope = QString::fromStdString(around);
      menu.addAction(tr("Collapse %1").arg(scope), this, [this, scope] { collapseScope(scope); });
    }
    menu.addSeparator();
  }
  menu.addAction(tr("Expand all scopes"), this, [this] { expandAll(); });
  menu.addAction(tr("Collapse all scopes"), this, [this] { collapseAll(); });
  menu.addAction(tr("Fit to view"), this, [this] { fitToView(); });
  menu.exec(event->globalPos());
}

void GraphView::leaveEvent(QEvent*) {
  if (d_->hover_edge != -1) {
    d_->hover_edge = -1;
    update();
  }
}

bool GraphView::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip && d_->shown) {
    auto* help = static_cast<QHelpEvent*>(event);
    QString tip;
    if (int box = boxAt(help->pos()); box >= 0) {
      tip = nodeToolTip(box);
    } else if (int edge = edgeAt(help->pos()); edge >= 0) {
      tip = edgeToolTip(edge);
    }
    if (tip.isEmpty()) {
      QToolTip::hideText();
      event->ignore();
    } else {
      QToolTip::showText(help->globalPos(), tip, this);
    }
    return true;
  }
  return QWidget::event(event);
}

}  // namespace kiln
