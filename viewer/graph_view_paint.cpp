// GraphView: painting with level of detail, colours, the minimap and tooltips.
// Everything is drawn by hand from the layout's rectangles and paths: an item
// per node would cost more than the whole frame for thousands of boxes.
#include <QFontMetricsF>
#include <QPainter>
#include <QPaintEvent>

#include <algorithm>
#include <cmath>

#include "viewer/graph_view.h"
#include "viewer/graph_view_state.h"

namespace kiln {
namespace {

// Below kOutlineZoom boxes lose outlines and antialiasing. Text: see graph_view.h.
constexpr double kOutlineZoom = 0.15;
// Screen-sized labels of scopes and regions; node titles when the layout's text is too small.
constexpr int kScopeLabelPx = 12, kRegionLabelPx = 11;
constexpr int kMinimapMaxWidth = 200, kMinimapMaxHeight = 160, kMinimapMargin = 10;

bool any_of_words(const std::string& op, std::initializer_list<const char*> words) {
  for (const char* w : words)
    if (op == w) return true;
  return false;
}

QColor op_kind_color(const Node& n) {
  switch (n.op) {
    case OpKind::Placeholder: return QColor(0xcd, 0xe8, 0xcd);
    case OpKind::GetAttr: return QColor(0xf3, 0xe3, 0xb3);
    case OpKind::Output: return QColor(0xd4, 0xd4, 0xd4);
    default: break;
  }
  std::string op = short_target(n);
  if (size_t dot = op.find('.'); dot != std::string::npos) op.resize(dot);
  if (op.find("backward") != std::string::npos) return QColor(0xf2, 0xc4, 0xcf);
  if (any_of_words(op, {"mm", "addmm", "bmm", "baddbmm", "matmul", "convolution", "conv2d", "conv1d", "linear",
                        "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
                        "scaled_dot_product_attention", "einsum"}))
    return QColor(0xb6, 0xd0, 0xf0);
  if (op.find("norm") != std::string::npos) return QColor(0xd8, 0xc6, 0xef);
  if (any_of_words(op, {"sum", "mean", "amax", "amin", "max", "min", "var", "std", "prod", "argmax", "argmin",
                        "_softmax", "softmax", "_log_softmax", "log_softmax", "logsumexp", "var_mean", "cumsum"}))
    return QColor(0xf3, 0xcc, 0xa6);
  if (any_of_words(op, {"view", "reshape", "_unsafe_view", "permute", "transpose", "t", "expand", "squeeze",
                        "unsqueeze", "slice", "select", "as_strided", "clone", "alias", "split", "split_with_sizes",
                        "cat", "stack", "contiguous", "flatten", "getitem", "detach", "_to_copy", "copy_", "copy",
                        "empty", "zeros", "ones", "full", "new_zeros", "new_empty", "lift_fresh_copy"}))
    return QColor(0xe6, 0xe6, 0xe6);
  return QColor(0xfa, 0xfa, 0xf4);  // pointwise and everything else
}

QColor fusion_color(int group) {
  if (group < 0) return QColor(0xee, 0xee, 0xee);
  double hue = std::fmod(group * 0.618033988749895, 1.0);  // golden ratio: neighbours get far-apart hues
  return QColor::fromHsvF(float(hue), 0.38f, 0.97f);
}

// Relative error on a log scale: 1e-7 and below green, 1e-1 and above red.
// A landmark region's tint: one hue per top-level scope.
QColor region_color(int top, int alpha) {
  double hue = std::fmod(0.58 + top * 0.618033988749895, 1.0);
  QColor c = QColor::fromHsvF(float(hue), 0.45f, 0.85f);
  c.setAlpha(alpha);
  return c;
}

QColor error_color(double e) {
  if (std::isnan(e)) return QColor(0xe2, 0xe2, 0xe2);
  double t = std::clamp((std::log10(std::max(e, 1e-12)) + 7) / 6, 0.0, 1.0);
  return QColor::fromHsvF(float((1 - t) * 120.0 / 360.0), 0.5f, 0.98f);
}

// Labels already placed on screen, bucketed in cells, so testing a new one
// for overlap looks at its neighbours only (thousands of node titles a frame).
class PlacedLabels {
 public:
  explicit PlacedLabels(QSize screen) : columns_(screen.width() / kCell + 1), rows_(screen.height() / kCell + 1),
                                        cells_(size_t(columns_ * rows_)) {}
  bool clashes(const QRectF& r) const {
    bool hit = false;
    visit(r, [&](const std::vector<QRectF>& cell) {
      for (const QRectF& q : cell) hit = hit || q.intersects(r);
    });
    return hit;
  }
  void add(const QRectF& r) {
    visit(r, [&](std::vector<QRectF>& cell) { cell.push_back(r); });
  }

 private:
  static constexpr int kCell = 64;
  template <class Fn>
  void visit(const QRectF& r, Fn&& fn) const {
    auto* self = const_cast<PlacedLabels*>(this);
    const int x0 = std::clamp(int(r.left()) / kCell, 0, columns_ - 1), x1 = std::clamp(int(r.right()) / kCell, 0, columns_ - 1);
    const int y0 = std::clamp(int(r.top()) / kCell, 0, rows_ - 1), y1 = std::clamp(int(r.bottom()) / kCell, 0, rows_ - 1);
    for (int y = y0; y <= y1; ++y)
      for (int x = x0; x <= x1; ++x) fn(self->cells_[size_t(y * columns_ + x)]);
  }
  int columns_, rows_;
  std::vector<std::vector<QRectF>> cells_;
};

}  // namespace

// Shortened from the front, whole dotted components first, so the part that
// tells weights apart stays: "...layer1.0.conv1.weight".
QString elide_front(const QString& text, const QFontMetricsF& fm, double width) {
  if (fm.horizontalAdvance(text) <= width) return text;
  const QString ellipsis = QStringLiteral("…");
  for (qsizetype i = text.indexOf('.'); i >= 0 && i + 1 < text.size(); i = text.indexOf('.', i + 1)) {
    QString tail = ellipsis + text.mid(i + 1);
    if (fm.horizontalAdvance(tail) <= width) return tail;
  }
  return fm.elidedText(text, Qt::ElideLeft, width);
}

QColor selection_color() { return QColor(0x1e, 0x6f, 0xd9); }

QColor box_fill(const GraphViewState& s, const SceneBox& box) {
  const Graph& g = *s.graph;
  switch (s.color_mode) {
    case GraphColorMode::OpKind:
      return box.is_scope() ? QColor(0xe8, 0xee, 0xf7) : op_kind_color(g[box.node]);
    case GraphColorMode::FusionGroup: {
      // A scope box takes its members' group when they share one.
      int group = -2;
      for (NodeId m : box.members) {
        int gm = size_t(m) < s.fusion_groups.size() ? s.fusion_groups[size_t(m)] : -1;
        group = group == -2 || group == gm ? gm : -1;
      }
      return fusion_color(group);
    }
    case GraphColorMode::Numerics: {
      double worst = std::nan("");  // a scope shows its worst member
      for (NodeId m : box.members) {
        double e = size_t(m) < s.errors.size() ? s.errors[size_t(m)] : std::nan("");
        if (!std::isnan(e) && (std::isnan(worst) || e > worst)) worst = e;
      }
      return error_color(worst);
    }
  }
  return Qt::white;
}

void GraphView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), QColor(0xfc, 0xfc, 0xfd));
  if (!d_->shown) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter, d_->graph ? tr("Laying out…") : tr("No graph"));
    emit painted();
    return;
  }
  const SceneLayout& s = *d_->shown;
  const double zoom = d_->zoom;
  const QRectF visible = visibleLayoutRect();
  p.setRenderHint(QPainter::Antialiasing, zoom >= kOutlineZoom);
  p.save();
  p.scale(zoom, zoom);
  p.translate(-d_->origin);

  // Edges under boxes: faint long ones first, then the rest, then the hovered
  // one and those of the selection on top.
  // Zoomed far out, edges fade so the boxes (the shape of the computation) stay visible.
  const QColor edge_colour(0x70, 0x78, 0x88, zoom >= kOutlineZoom ? 255 : 70);
  const QColor faint_colour(0x70, 0x78, 0x88, zoom >= kOutlineZoom ? 60 : 25);
  QPen edge_pen(edge_colour, 1.0), faint_pen(faint_colour, 1.0), hot_pen(selection_color(), 2.0);
  for (QPen* pen : {&edge_pen, &faint_pen, &hot_pen}) pen->setCosmetic(true);
  const bool arrows = zoom >= kOutlineZoom;
  std::vector<char> box_selected(d_->boxes.size(), 0);
  if (!d_->selection.empty())
    for (size_t b = 0; b < s.scene.boxes.size(); ++b)
      for (NodeId m : s.scene.boxes[b].members) box_selected[b] |= d_->selected[size_t(m)];
  auto draw_edge = [&](size_t i, const QPen& pen, const QColor& head_colour) {
    const DrawnEdge& e = d_->edges[i];
    p.setPen(pen);
    p.setBrush(Qt::NoBrush);
    p.drawPath(e.path);
    if (!arrows) return;
    double len = std::hypot(e.tip_direction.x(), e.tip_direction.y());
    if (len <= 0) return;
    QPointF u = e.tip_direction / len, n(-u.y(), u.x());
    const double a = 7;
    QPointF head[3] = {e.tip, e.tip - u * a + n * a * 0.45, e.tip - u * a - n * a * 0.45};
    p.setPen(Qt::NoPen);
    p.setBrush(head_colour);
    p.drawPolygon(head, 3);
  };
  std::vector<size_t> hot;
  for (int pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < d_->edges.size(); ++i) {
      const DrawnEdge& e = d_->edges[i];
      if (e.faint != (pass == 0) || !e.bounds.intersects(visible)) continue;
      const SceneEdge& se = s.scene.edges[i];
      if (int(i) == d_->hover_edge || box_selected[size_t(se.from)] || box_selected[size_t(se.to)]) {
        hot.push_back(i);
        continue;
      }
      draw_edge(i, e.faint ? faint_pen : edge_pen, e.faint ? faint_colour : edge_colour);
    }
  for (size_t i : hot) draw_edge(i, hot_pen, selection_color());

  // Boxes.
  d_->drawn.clear();
  const double text_px = zoom * d_->font.pixelSize();
  const bool text = text_px >= kMinLabelPx;
  const bool outlines = zoom >= kOutlineZoom;
  QFont bold = d_->font;
  bold.setBold(true);
  QPen outline(QColor(0x5a, 0x62, 0x70), 1.0);
  outline.setCosmetic(true);
  const QFontMetricsF bold_metrics(bold), plain_metrics(d_->font);
  QPen select_pen(selection_color(), 3.0);
  select_pen.setCosmetic(true);
  for (size_t i = 0; i < d_->boxes.size(); ++i) {
    const QRectF& r = d_->boxes[i];
    if (!r.intersects(visible)) continue;
    const SceneBox& box = s.scene.boxes[i];
    const QColor fill = box_fill(*d_, box);
    bool selected = false;
    const QColor* mark = nullptr;
    for (NodeId m : box.members) {
      selected |= d_->selected[size_t(m)] != 0;
      if (!mark) {
        auto it = d_->marks.constFind(m);
        if (it != d_->marks.constEnd()) mark = &*it;
      }
    }
    if (!outlines) {  // at least two pixels, and darker, or the boxes vanish among the edges
      QRectF dot = r;
      dot.setSize(r.size().expandedTo(QSizeF(2 / zoom, 2 / zoom)));
      // Far out, op kinds cannot be told apart; the top-level module each box lies in can.
      const bool by_scope = d_->color_mode == GraphColorMode::OpKind && d_->box_top[i] >= 0;
      p.fillRect(dot, selected ? selection_color() : mark ? *mark : by_scope ? region_color(d_->box_top[i], 255) : fill.darker(140));
      continue;
    }
    if (box.is_scope()) {  // a stack of cards: this box holds many nodes
      p.setPen(outline);
      p.setBrush(fill.darker(104));
      p.drawRoundedRect(r.adjusted(6, 0, 0, -6), 4, 4);
    }
    QRectF face = box.is_scope() ? r.adjusted(0, 6, -6, 0) : r;
    p.setPen(outline);
    p.setBrush(fill);
    p.drawRoundedRect(face, 4, 4);
    if (mark) {
      QPen mark_pen(*mark, 3.0);
      mark_pen.setCosmetic(true);
      p.setPen(mark_pen);
      p.setBrush(Qt::NoBrush);
      p.drawRoundedRect(face.adjusted(-2, -2, 2, 2), 5, 5);
    }
    if (selected) {
      p.setPen(select_pen);
      p.setBrush(Qt::NoBrush);
      p.drawRoundedRect(face.adjusted(-4, -4, 4, 4), 6, 6);
    }
    if (text) {
      QRectF inner = face.adjusted(6, 4, -6, -4);
      QRectF top(inner.left(), inner.top(), inner.width(), inner.height() / 2);
      QRectF bottom(inner.left(), inner.center().y(), inner.width(), inner.height() / 2);
      const QString title = elide_front(d_->box_title[i], bold_metrics, top.width());
      const QString subtitle = elide_front(d_->box_subtitle[i], plain_metrics, bottom.width());
      p.setPen(QColor(0x20, 0x22, 0x28));
      p.setFont(bold);
      p.drawText(top, Qt::AlignCenter, title);
      p.setPen(QColor(0x55, 0x5a, 0x66));
      p.setFont(d_->font);
      p.drawText(bottom, Qt::AlignCenter, subtitle);
      const QPointF o = d_->origin;
      d_->drawn.push_back({title, text_px, QRectF((top.topLeft() - o) * zoom, top.size() * zoom), box.is_scope()});
      d_->drawn.push_back({subtitle, text_px, QRectF((bottom.topLeft() - o) * zoom, bottom.size() * zoom), box.is_scope()});
    }
  }
  p.restore();
  if (text && d_->show_shapes) paintShapeLabels(p);
  paintScreenLabels(p);
  paintMinimap(p);
  emit painted();
}

// Shapes beside their edges, as Netron labels them: at the middle of an edge
// (or a third of the way along either end) on whichever side is free, never
// over a box or another shape; an edge with no free place goes without.
// Drawn only while node text is (the caller checks), at the layout's scale
// but no smaller than kMinLabelPx.
void GraphView::paintShapeLabels(QPainter& p) {
  const double zoom = d_->zoom;
  const QRectF visible = visibleLayoutRect();
  const QRectF screen = QRectF(rect());
  auto to_screen = [&](QPointF q) { return (q - d_->origin) * zoom; };
  PlacedLabels placed(size());
  for (size_t i = 0; i < d_->boxes.size(); ++i)
    if (d_->boxes[i].intersects(visible)) {
      const QRectF& r = d_->boxes[i];
      placed.add(QRectF(to_screen(r.topLeft()), r.size() * zoom).adjusted(-2, -2, 2, 2));
    }
  QFont font = d_->font;
  const double px = std::max(kMinLabelPx, kShapeLabelPx * zoom);
  font.setPixelSize(int(std::lround(px)));
  const QFontMetricsF fm(font);
  p.setFont(font);
  p.setRenderHint(QPainter::TextAntialiasing, true);
  const double gap = std::max(3.0, 4 * zoom), height = fm.height() + 2;
  // Edges between neighbours first: the long faint ones are the likeliest to find no room.
  for (int pass = 0; pass < 2; ++pass)
    for (DrawnEdge& e : d_->edges) {
      if (e.faint != (pass == 1) || e.shape.isEmpty() || !e.bounds.intersects(visible)) continue;
      if (!e.label_at_known) {
        const double ts[3] = {0.5, 1.0 / 3, 2.0 / 3};
        for (int k = 0; k < 3; ++k) e.label_at[k] = e.path.pointAtPercent(ts[k]);
        e.label_at_known = true;
      }
      const double width = fm.horizontalAdvance(e.shape) + 6;
      for (const QPointF& at : e.label_at) {
        const QPointF c = to_screen(at);
        bool done = false;
        for (double left : {c.x() + gap, c.x() - gap - width}) {
          const QRectF r(left, c.y() - height / 2, width, height);
          if (!screen.contains(r) || placed.clashes(r)) continue;
          placed.add(r);
          p.setPen(Qt::NoPen);
          p.setBrush(QColor(0xfc, 0xfc, 0xfd, 230));  // the background: the edge under it stays visible beside
          p.drawRoundedRect(r, 3, 3);
          p.setPen(QColor(0x3d, 0x5a, 0x80));
          p.drawText(r, Qt::AlignCenter, e.shape);
          d_->drawn.push_back({e.shape, double(font.pixelSize()), r, false, true});
          done = true;
          break;
        }
        if (done) break;
      }
    }
}

// Text that keeps its size on screen when the layout's own text would be too
// small: node titles at the smallest readable size where they fit their box,
// then the names of collapsed scopes (with their op counts) and of expanded
// scopes' regions, bigger ones first, leaving out any that would overlap.
void GraphView::paintScreenLabels(QPainter& p) {
  const double zoom = d_->zoom;
  if (zoom * d_->font.pixelSize() >= kMinLabelPx) return;  // the boxes carry their own text
  const SceneLayout& s = *d_->shown;
  const QRectF visible = visibleLayoutRect();
  const QRectF screen = QRectF(rect());
  auto to_screen = [&](const QRectF& r) { return QRectF((r.topLeft() - d_->origin) * zoom, r.size() * zoom); };
  p.setRenderHint(QPainter::Antialiasing, true);
  p.setRenderHint(QPainter::TextAntialiasing, true);

  // Scope and region labels, most ops first.
  struct Candidate {
    QString text;
    QPointF anchor;  // screen: the label's centre
    int ops;
    int depth;
    bool region;
    int top;
  };
  std::vector<Candidate> cands;
  for (size_t i = 0; i < d_->boxes.size(); ++i) {
    const SceneBox& b = s.scene.boxes[i];
    if (!b.is_scope() || !d_->boxes[i].intersects(visible)) continue;
    cands.push_back({d_->box_title[i] + tr(" · %1 ops").arg(d_->box_ops[i]), to_screen(d_->boxes[i]).center(),
                     d_->box_ops[i], 0, false, 0});
  }
  for (const Landmark& l : d_->landmarks) {
    if (!visible.contains(l.anchor)) continue;
    cands.push_back({QString::fromStdString(l.scope) + tr(" · %1 ops").arg(l.ops), (l.anchor - d_->origin) * zoom, l.ops,
                     l.depth, true, l.top});
  }
  std::stable_sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
    return a.depth != b.depth ? a.depth < b.depth : a.ops > b.ops;
  });
  QFont scope_font = d_->font, region_font = d_->font;
  scope_font.setBold(true);
  scope_font.setPixelSize(kScopeLabelPx);
  region_font.setBold(true);
  region_font.setPixelSize(kRegionLabelPx);
  const QFontMetricsF scope_metrics(scope_font), region_metrics(region_font);
  PlacedLabels placed(size());
  for (const Candidate& c : cands) {
    const QFontMetricsF& fm = c.region ? region_metrics : scope_metrics;
    const QString text = elide_front(c.text, fm, 260);
    const QSizeF size(fm.horizontalAdvance(text) + 10, fm.height() + 4);
    QRectF r(QPointF(c.anchor.x() - size.width() / 2, c.anchor.y() - size.height() / 2), size);
    if (!screen.intersects(r)) continue;
    if (placed.clashes(r)) continue;
    placed.add(r);
    p.setPen(c.region ? region_color(c.top, 255).darker(150) : QColor(0x8a, 0x94, 0xa6));
    p.setBrush(QColor(255, 255, 255, 225));
    p.drawRoundedRect(r, 4, 4);
    p.setFont(c.region ? region_font : scope_font);
    p.setPen(c.region ? region_color(c.top, 255).darker(260) : QColor(0x20, 0x22, 0x28));
    p.drawText(r, Qt::AlignCenter, text);
    d_->drawn.push_back({text, double(c.region ? kRegionLabelPx : kScopeLabelPx), r, true});
  }

  // Node titles at kMinLabelPx while a box is tall enough for them, a little
  // wider than their box where nothing else is (a cut op name says nothing).
  QFont small = d_->font;
  small.setBold(true);
  small.setPixelSize(int(kMinLabelPx));
  const QFontMetricsF small_metrics(small);
  const double box_px = (2 * d_->metrics.line_height + 10) * zoom;
  if (box_px < small_metrics.height()) return;
  p.setFont(small);
  const QColor ink(0x20, 0x22, 0x28);
  for (size_t i = 0; i < d_->boxes.size(); ++i) {
    if (s.scene.boxes[i].is_scope() || !d_->boxes[i].intersects(visible)) continue;
    const QRectF box = to_screen(d_->boxes[i]);
    const QString& t = d_->box_title[i];
    const double w = small_metrics.horizontalAdvance(t) + 4;
    if (w > 2 * box.width()) continue;
    const QRectF r(box.center().x() - w / 2, box.center().y() - small_metrics.height() / 2, w, small_metrics.height());
    if (placed.clashes(r)) continue;
    placed.add(r);
    if (w > box.width()) {  // over the box's edges: on a backing of the box's colour
      p.setPen(Qt::NoPen);
      p.setBrush(box_fill(*d_, s.scene.boxes[i]));
      p.drawRoundedRect(r, 2, 2);
    }
    p.setPen(ink);
    p.drawText(r, Qt::AlignCenter, t);
    d_->drawn.push_back({t, kMinLabelPx, r, false});
  }
}

QRect GraphView::minimapRect() const {
  if (!d_->shown || d_->bounds.isEmpty()) return {};
  // Only when part of the graph is off screen.
  if (visibleLayoutRect().contains(d_->bounds)) return {};
  double scale = std::min(kMinimapMaxWidth / d_->bounds.width(), kMinimapMaxHeight / d_->bounds.height());
  int w = std::max(24, int(d_->bounds.width() * scale)), h = std::max(24, int(d_->bounds.height() * scale));
  if (w + 2 * kMinimapMargin > width() / 2 || h + 2 * kMinimapMargin > height() / 2) return {};
  return QRect(width() - w - kMinimapMargin, height() - h - kMinimapMargin, w, h);
}

void GraphView::paintMinimap(QPainter& p) {
  const QRect mm = minimapRect();
  if (mm.isEmpty()) return;
  const double scale = mm.width() / d_->bounds.width();
  if (d_->minimap_dirty || d_->minimap.size() != mm.size() * devicePixelRatioF()) {
    QPixmap pix(mm.size() * devicePixelRatioF());
    pix.setDevicePixelRatio(devicePixelRatioF());
    pix.fill(QColor(255, 255, 255, 235));
    QPainter mp(&pix);
    mp.scale(scale, scale);
    mp.translate(-d_->bounds.topLeft());
    const SceneLayout& s = *d_->shown;
    for (size_t i = 0; i < d_->boxes.size(); ++i) {
      const SceneBox& box = s.scene.boxes[i];
      bool selected = false;
      for (NodeId m : box.members) selected |= d_->selected[size_t(m)] != 0;
      // Coloured by top-level module, as the view far out: the minimap shows where each lies.
      const bool by_scope = d_->color_mode == GraphColorMode::OpKind && d_->box_top[i] >= 0;
      QColor c = selected ? selection_color() : by_scope ? region_color(d_->box_top[i], 255) : box_fill(*d_, box).darker(125);
      // At least a pixel, or small graphs' boxes vanish.
      QRectF r = d_->boxes[i];
      QSizeF min_size(1.5 / scale, 1.5 / scale);
      r.setSize(r.size().expandedTo(min_size));
      mp.fillRect(r, c);
    }
    d_->minimap = pix;
    d_->minimap_dirty = false;
  }
  p.setRenderHint(QPainter::Antialiasing, false);
  p.drawPixmap(mm.topLeft(), d_->minimap);
  p.setPen(QColor(0x90, 0x96, 0xa0));
  p.setBrush(Qt::NoBrush);
  p.drawRect(mm.adjusted(0, 0, -1, -1));
  QRectF view = visibleLayoutRect();
  QRectF shown((view.left() - d_->bounds.left()) * scale + mm.left(), (view.top() - d_->bounds.top()) * scale + mm.top(),
               view.width() * scale, view.height() * scale);
  p.setPen(QPen(selection_color(), 1.5));
  p.setBrush(QColor(30, 111, 217, 30));
  p.drawRect(shown.intersected(QRectF(mm)));
}

QString GraphView::nodeToolTip(int box) const {
  const Graph& g = *d_->graph;
  const SceneBox& b = d_->shown->scene.boxes[size_t(box)];
  if (b.is_scope()) {
    return tr("<b>%1</b><br>%2 nodes, collapsed; double-click to expand")
        .arg(QString::fromStdString(b.scope).toHtmlEscaped())
        .arg(b.members.size());
  }
  const Node& n = g[b.node];
  // The full name: the box shows it shortened from the front.
  QString tip = QStringLiteral("<b>%1</b> = %2").arg(QString::fromStdString(n.name).toHtmlEscaped(),
                                                      QString::fromStdString(n.target).toHtmlEscaped());
  if (std::string v = describe_val(n.meta.val); !v.empty())
    tip += QStringLiteral("<br>%1").arg(QString::fromStdString(v).toHtmlEscaped());
  if (!n.meta.scope.empty()) tip += tr("<br>scope: %1").arg(QString::fromStdString(n.meta.scope).toHtmlEscaped());
  if (!n.meta.stack.empty()) {
    const StackFrame& f = n.meta.stack.back();
    tip += QStringLiteral("<br>%1:%2 %3").arg(QString::fromStdString(f.file).toHtmlEscaped()).arg(f.line)
               .arg(QString::fromStdString(f.code).toHtmlEscaped());
  }
  if (d_->color_mode == GraphColorMode::Numerics && size_t(b.node) < d_->errors.size() &&
      !std::isnan(d_->errors[size_t(b.node)]))
    tip += tr("<br>relative error: %1").arg(d_->errors[size_t(b.node)], 0, 'g', 3);
  if (d_->color_mode == GraphColorMode::FusionGroup && size_t(b.node) < d_->fusion_groups.size())
    tip += tr("<br>fusion group: %1").arg(d_->fusion_groups[size_t(b.node)]);
  return tip;
}

QString GraphView::edgeToolTip(int edge) const {
  const Graph& g = *d_->graph;
  const SceneEdge& e = d_->shown->scene.edges[size_t(edge)];
  QStringList lines;
  const size_t shown = std::min<size_t>(e.sources.size(), 8);
  for (size_t i = 0; i < shown; ++i) {
    const Node& n = g[e.sources[i]];
    std::string v = describe_val(n.meta.val);
    lines << QStringLiteral("%1: %2").arg(QString::fromStdString(n.name).toHtmlEscaped(),
                                          v.empty() ? tr("(no shape)") : QString::fromStdString(v).toHtmlEscaped());
  }
  if (e.sources.size() > shown) lines << tr("… and %1 more").arg(e.sources.size() - shown);
  return lines.join(QStringLiteral("<br>"));
}

}  // namespace kiln
