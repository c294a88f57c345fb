#include "viewer/trace_panel.h"

#include <QHeaderView>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollArea>
#include <QToolTip>
#include <QTreeView>
#include <QVBoxLayout>
#include <QWheelEvent>

#include <algorithm>
#include <map>

namespace kiln::viewer {

namespace {
QString q(const std::string& s) { return QString::fromStdString(s); }
constexpr int kLane = 18, kGutter = 90, kBandGap = 6;
}  // namespace

// --- RankReportModel -------------------------------------------------------

int RankReportModel::add(int parent, QString what, QString detail, QString compile, bool diverges) {
  Row r{std::move(what), std::move(detail), std::move(compile), diverges, parent, 0, {}};
  const int id = int(rows_.size());
  std::vector<int>& siblings = parent < 0 ? top_ : rows_[size_t(parent)].children;
  r.row = int(siblings.size());
  siblings.push_back(id);
  rows_.push_back(std::move(r));
  return id;
}

void RankReportModel::clear() {
  beginResetModel();
  rows_.clear();
  top_.clear();
  endResetModel();
}

void RankReportModel::setReport(const trace::RankReport& r) {
  beginResetModel();
  rows_.clear();
  top_.clear();
  std::vector<size_t> all;
  for (size_t i = 0; i < r.ranks.size(); ++i) all.push_back(i);
  const int ranks = add(-1, QString("%1 rank(s)").arg(r.ranks.size()), q(trace::rank_names(r, all)));
  for (const trace::RankProfile& p : r.ranks)
    add(ranks, q(p.name()),
        QString("%1 compiles, %2 recompiles, %3 failures, %4 graph breaks  (%5)")
            .arg(p.compiles.size())
            .arg(p.recompiles)
            .arg(p.failures)
            .arg(p.graph_breaks)
            .arg(q(p.file)),
        p.compiles.empty() ? QString() : q(p.compiles.front().label));
  if (!r.missing_ranks.empty()) {
    QStringList missing;
    for (int64_t k : r.missing_ranks) missing << QString::number(k);
    add(-1, "missing ranks", "no log file for " + missing.join(", "), {}, true);
  }
  if (r.ranks.size() > 1)
    for (const trace::RankAspect& a : r.aspects) {
      if (!a.diverges()) {
        add(-1, q(a.name), "the same on every rank: " + q(a.groups.front().summary));
        continue;
      }
      const int row = add(-1, q(a.name), QString("DIFFER: %1 groups of ranks").arg(a.groups.size()), {}, true);
      for (const trace::RankGroup& g : a.groups) add(row, q(trace::rank_names(r, g.members)), q(g.summary));
    }
  if (!r.divergences.empty()) {
    auto label_of = [&](const trace::RankDivergence& d) {
      const auto& compiles = r.ranks[d.rank].compiles;
      return d.index < compiles.size() ? q(compiles[d.index].label) : QString();
    };
    const trace::RankDivergence& first = r.divergences.front();
    const int row = add(-1, "first divergence", q(r.ranks[first.rank].name() + " leaves " + r.ranks[first.reference].name() + " " + first.detail),
                        label_of(first), true);
    for (const trace::RankDivergence& d : r.divergences) add(row, q(r.ranks[d.rank].name()), q(d.what + ": " + d.detail), label_of(d), true);
  }
  if (r.parity_checked) {
    const int row = add(-1, "collectives parity",
                        QString("%1 of %2 compiles: the code disagrees with the schedule").arg(r.parity.size()).arg(r.parity_checked), {},
                        !r.parity.empty());
    for (const trace::CollectiveParity& p : r.parity) {
      QString label;
      for (const trace::RankCompile& c : r.ranks[p.rank].compiles)
        if (c.id == p.compile) label = q(c.label);
      add(row, q(r.ranks[p.rank].name() + " [" + p.compile + "]"),
          QString("offset %1, %2 collectives without a wait_tensor").arg(p.offset).arg(p.missing_waits), label, true);
    }
  }
  if (r.execution_order_differs || !r.execution.empty()) {
    const int row = add(-1, "graph execution order", r.execution_order_differs ? "differs across ranks" : "the same on every rank", {},
                        r.execution_order_differs);
    for (const trace::ExecutionStep& s : r.execution) {
      QStringList ran;
      for (const auto& [rank, what] : s.by_rank) ran << q(r.ranks[rank].name() + " " + what);
      QString note = ran.join(", ");
      if (s.schedule_mismatch) note += "  (collective schedules differ)";
      if (s.cache_mismatch) note += "  (cache outcomes differ)";
      add(row, QString("run #%1").arg(s.index + 1), note, {}, true);
    }
  }
  if (!r.runtime_spreads.empty()) {
    const trace::RuntimeSpread& w = r.runtime_spreads.front();
    add(-1, "estimated runtime",
        QString("widest spread %1 ms at [%2]: %3 %4 ms, %5 %6 ms")
            .arg((w.slowest_ns - w.fastest_ns) * 1e-6, 0, 'f', 3)
            .arg(q(w.compile), q(r.ranks[w.slowest].name()))
            .arg(w.slowest_ns * 1e-6, 0, 'f', 3)
            .arg(q(r.ranks[w.fastest].name()))
            .arg(w.fastest_ns * 1e-6, 0, 'f', 3));
  }
  if (!r.diagnostics.empty()) {
    const int row = add(-1, "diagnostics", QString("%1 payloads left out of the comparison").arg(r.diagnostics.size()), {}, true);
    for (const trace::Diagnostic& d : r.diagnostics) add(row, q(d.file + ":" + std::to_string(d.line)), q(d.message));
  }
  endResetModel();
}

QModelIndex RankReportModel::index(int row, int column, const QModelIndex& parent) const {
  if (row < 0 || column < 0 || column >= ColumnCount) return {};
  if (parent.isValid() && parent.column() != 0) return {};
  const std::vector<int>& kids = parent.isValid() ? rows_[size_t(parent.internalId())].children : top_;
  if (row >= int(kids.size())) return {};
  return createIndex(row, column, quintptr(kids[size_t(row)]));
}

QModelIndex RankReportModel::parent(const QModelIndex& child) const {
  if (!child.isValid()) return {};
  const int p = rows_[size_t(child.internalId())].parent;
  if (p < 0) return {};
  return createIndex(rows_[size_t(p)].row, 0, quintptr(p));
}

int RankReportModel::rowCount(const QModelIndex& parent) const {
  if (!parent.isValid()) return int(top_.size());
  if (parent.column() != 0) return 0;
  return int(rows_[size_t(parent.internalId())].children.size());
}

int RankReportModel::columnCount(const QModelIndex&) const { return ColumnCount; }

QVariant RankReportModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const Row& r = rows_[size_t(index.internalId())];
  switch (role) {
    case Qt::DisplayRole: return index.column() == What ? r.what : r.detail;
    case Qt::ToolTipRole: return r.compile.isEmpty() ? r.detail : r.detail + "\n(double-click: select " + r.compile + ")";
    case Qt::ForegroundRole: return r.diverges ? QVariant(QColor(200, 60, 40)) : QVariant();
    case CompileRole: return r.compile;
    case DivergesRole: return r.diverges;
    default: return {};
  }
}

QVariant RankReportModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  return section == What ? QString("What") : QString("Across the ranks");
}

// --- TimelineView ----------------------------------------------------------

TimelineView::TimelineView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumHeight(60);
}

void TimelineView::setSpans(std::vector<trace::TimelineSpan> spans) {
  spans_ = std::move(spans);
  ranks_.clear();
  band_top_.clear();
  band_lanes_.clear();
  std::map<int64_t, int> depth;
  t0_ = spans_.empty() ? 0 : spans_.front().start_us;
  t1_ = t0_ + 1;
  for (const trace::TimelineSpan& s : spans_) {
    depth[s.rank] = std::max(depth[s.rank], s.depth + 1);
    t0_ = std::min(t0_, s.start_us);
    t1_ = std::max(t1_, s.end_us);
  }
  int lane = 0;
  for (const auto& [rank, lanes] : depth) {
    ranks_.push_back(rank);
    band_top_.push_back(lane);
    band_lanes_.push_back(lanes);
    lane += lanes;
  }
  zoom_ = 1;
  offset_ = 0;
  updateGeometry();
  update();
}

QSize TimelineView::sizeHint() const {
  int lanes = 0;
  for (int n : band_lanes_) lanes += n;
  return {600, 8 + lanes * kLane + int(ranks_.size()) * kBandGap};
}

double TimelineView::xOf(double us) const {
  const double w = std::max(1, width() - kGutter - 8);
  return kGutter + (us - t0_ - offset_) / (t1_ - t0_) * w * zoom_;
}

QRect TimelineView::spanRect(int i) const {
  const trace::TimelineSpan& s = spans_[size_t(i)];
  const size_t band = size_t(std::find(ranks_.begin(), ranks_.end(), s.rank) - ranks_.begin());
  const int y = 4 + (band_top_[band] + s.depth) * kLane + int(band) * kBandGap;
  const int x0 = int(xOf(s.start_us)), x1 = std::max(x0 + 2, int(xOf(s.end_us)));
  return {x0, y, x1 - x0, kLane - 2};
}

int TimelineView::spanAt(const QPoint& p) const {
  if (p.x() < kGutter) return -1;
  // Deepest first: an inner phase is drawn over its parent.
  int best = -1;
  for (int i = 0; i < int(spans_.size()); ++i)
    if (spanRect(i).contains(p) && (best < 0 || spans_[size_t(i)].depth > spans_[size_t(best)].depth)) best = i;
  return best;
}

void TimelineView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  for (size_t b = 0; b < ranks_.size(); ++b) {
    const int y = 4 + band_top_[b] * kLane + int(b) * kBandGap;
    p.fillRect(QRect(0, y - 2, width(), band_lanes_[b] * kLane + 2), b % 2 ? QColor(245, 245, 248) : QColor(252, 252, 252));
    p.setPen(palette().text().color());
    p.drawText(QRect(4, y, kGutter - 8, kLane), Qt::AlignVCenter | Qt::AlignLeft, QString("rank %1").arg(ranks_[b]));
  }
  p.setClipRect(QRect(kGutter, 0, width() - kGutter, height()));
  for (int i = 0; i < int(spans_.size()); ++i) {
    const trace::TimelineSpan& s = spans_[size_t(i)];
    const QRect r = spanRect(i);
    if (r.right() < kGutter || r.left() > width()) continue;
    const QColor c = QColor::fromHsv(int(qHash(QString::fromStdString(s.name)) % 360), 90, 230);
    p.fillRect(r, c);
    p.setPen(s.unfinished ? QPen(QColor(200, 60, 40), 1, Qt::DashLine) : QPen(c.darker(140)));
    p.drawRect(r.adjusted(0, 0, -1, -1));
    if (r.width() > 40) {
      // "inductor_compile [0/1]": the compile without its rank, which the band already says.
      QString text = QString::fromStdString(s.name);
      if (!s.compile.empty()) text += " [" + QString::fromStdString(s.compile.substr(trace::rank_part(s.compile).size())) + "]";
      p.setPen(Qt::black);
      p.drawText(r.adjusted(3, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft, p.fontMetrics().elidedText(text, Qt::ElideRight, r.width() - 5));
    }
  }
}

bool TimelineView::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    const int i = spanAt(help->pos());
    if (i < 0) {
      QToolTip::hideText();
      return true;
    }
    const trace::TimelineSpan& s = spans_[size_t(i)];
    QToolTip::showText(help->globalPos(), QString("%1\n%2 rank %3\n%4 ms%5")
                                              .arg(QString::fromStdString(s.name))
                                              .arg(s.compile.empty() ? QString("the run's own phase,") : "[" + QString::fromStdString(s.compile) + "],")
                                              .arg(s.rank)
                                              .arg((s.end_us - s.start_us) / 1e3, 0, 'f', 3)
                                              .arg(s.unfinished ? "\nnever ended in the log" : ""));
    return true;
  }
  return QWidget::event(e);
}

void TimelineView::mousePressEvent(QMouseEvent* e) {
  drag_x_ = int(e->position().x());
  const int i = spanAt(e->position().toPoint());
  if (i >= 0 && !spans_[size_t(i)].compile.empty()) emit compileClicked(QString::fromStdString(spans_[size_t(i)].compile));
}

void TimelineView::mouseMoveEvent(QMouseEvent* e) {
  if (!(e->buttons() & Qt::LeftButton) || drag_x_ < 0) return;
  const double per_px = (t1_ - t0_) / std::max(1.0, double(width() - kGutter - 8)) / zoom_;
  offset_ -= (e->position().x() - drag_x_) * per_px;
  drag_x_ = int(e->position().x());
  update();
}

void TimelineView::wheelEvent(QWheelEvent* e) {
  if (!(e->modifiers() & Qt::ControlModifier)) {
    QWidget::wheelEvent(e);  // the scroll area scrolls the ranks
    return;
  }
  // Zoom about the pointer: the time under it stays under it.
  const double x = e->position().x();
  const double w = std::max(1.0, double(width() - kGutter - 8));
  const double at = t0_ + offset_ + (x - kGutter) / w * (t1_ - t0_) / zoom_;
  zoom_ = std::clamp(zoom_ * (e->angleDelta().y() > 0 ? 1.25 : 0.8), 1.0, 1e6);
  offset_ = at - t0_ - (x - kGutter) / w * (t1_ - t0_) / zoom_;
  update();
}

// --- TracePanel ------------------------------------------------------------

TracePanel::TracePanel(QWidget* parent) : QTabWidget(parent) {
  auto* ranks_page = new QWidget(this);
  auto* rl = new QVBoxLayout(ranks_page);
  rl->setContentsMargins(2, 2, 2, 2);
  ranks_note_ = new QLabel("Open a TORCH_TRACE folder of rank logs to compare its ranks.", ranks_page);
  ranks_note_->setWordWrap(true);
  ranks_ = new RankReportModel(this);
  tree_ = new QTreeView(ranks_page);
  tree_->setModel(ranks_);
  tree_->setUniformRowHeights(true);
  tree_->header()->setStretchLastSection(true);
  tree_->setColumnWidth(0, 220);
  rl->addWidget(ranks_note_);
  rl->addWidget(tree_, 1);
  connect(tree_, &QTreeView::doubleClicked, this, [this](const QModelIndex& i) {
    const QString label = ranks_->data(i, RankReportModel::CompileRole).toString();
    if (!label.isEmpty()) emit compileRequested(label);
  });
  addTab(ranks_page, "Ranks");

  auto* timeline_page = new QWidget(this);
  auto* tl = new QVBoxLayout(timeline_page);
  tl->setContentsMargins(2, 2, 2, 2);
  timeline_note_ = new QLabel(timeline_page);
  timeline_note_->setWordWrap(true);
  timeline_ = new TimelineView(timeline_page);
  auto* scroll = new QScrollArea(timeline_page);
  scroll->setWidget(timeline_);
  scroll->setWidgetResizable(true);
  tl->addWidget(timeline_note_);
  tl->addWidget(scroll, 1);
  connect(timeline_, &TimelineView::compileClicked, this, &TracePanel::compileRequested);
  addTab(timeline_page, "Timeline");
  clearViews("Open a TORCH_TRACE log to see its ranks and the timeline of its compiles.");
}

void TracePanel::setViews(const trace::RankReport& report, std::vector<trace::TimelineSpan> spans) {
  ranks_->setReport(report);
  tree_->expandToDepth(0);
  ranks_note_->setText(report.ranks.size() < 2 ? "One rank: nothing to compare; its compiles are below."
                       : report.diverges()  ? "The ranks diverge (red rows). Double-click a row to select its compile."
                                            : "The ranks agree on everything compared.");
  timeline_note_->setText(spans.empty() ? "The trace has no chromium_event records: nothing to draw."
                                        : QString("%1 phases. Ctrl+wheel zooms, drag pans; click a bar to select its compile; a dashed "
                                                  "bar never ended in the log.")
                                              .arg(spans.size()));
  timeline_->setSpans(std::move(spans));
}

void TracePanel::clearViews(const QString& why) {
  ranks_->clear();
  timeline_->setSpans({});
  ranks_note_->setText(why);
  timeline_note_->setText(why);
}

QString TracePanel::rankSummary() const { return ranks_note_->text(); }

}  // namespace kiln::viewer
