#pragma once
// The "Ranks and timeline" panel of a dump: where the ranks of a distributed
// run part ways (core/trace/ranks.h, as `kiln-cli trace ranks` prints it) and
// the chromium events as a timeline, a band per rank with its phases nested.
// Both are computed on a worker (Workbench::loadTraceViews); a row or bar that
// belongs to a compile asks the workbench to select it.
#include <QAbstractItemModel>
#include <QTabWidget>
#include <QWidget>

#include <memory>
#include <string>
#include <vector>

#include "core/trace/ranks.h"
#include "core/trace/timeline.h"

class QLabel;
class QScrollArea;
class QTreeView;

namespace kiln::viewer {

// The rank report as a tree: an aspect and its groups of ranks, the first
// divergence and each rank's, collectives parity, execution-order steps,
// runtime spreads, missing ranks, diagnostics. Rows that name a compile carry
// its label (CompileRole).
class RankReportModel : public QAbstractItemModel {
  Q_OBJECT
 public:
  enum Column { What, Detail, ColumnCount };
  static constexpr int CompileRole = Qt::UserRole + 1;  // the compile's label, "" for none
  static constexpr int DivergesRole = Qt::UserRole + 2; // bool: this row says ranks differ
  using QAbstractItemModel::QAbstractItemModel;

  void setReport(const trace::RankReport& report);
  void clear();

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    QString what, detail, compile;
    bool diverges = false;
    int parent = -1, row = 0;
    std::vector<int> children;
  };
  int add(int parent, QString what, QString detail, QString compile = {}, bool diverges = false);
  std::vector<Row> rows_;
  std::vector<int> top_;
};

// A band per rank; within it a lane per nesting depth; a bar per phase,
// coloured by its name. Fitted to the width; Ctrl+wheel zooms about the
// pointer, dragging pans. Hover says what a bar is; a click selects its compile.
class TimelineView : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineView(QWidget* parent = nullptr);
  void setSpans(std::vector<trace::TimelineSpan> spans);
  const std::vector<trace::TimelineSpan>& spans() const { return spans_; }
  // The span drawn at a point of the widget, for tests and tooltips; -1 none.
  int spanAt(const QPoint& p) const;
  QRect spanRect(int span) const;
  QSize sizeHint() const override;

 signals:
  void compileClicked(const QString& label);

 protected:
  void paintEvent(QPaintEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void wheelEvent(QWheelEvent* e) override;
  bool event(QEvent* e) override;

 private:
  double xOf(double us) const;
  std::vector<trace::TimelineSpan> spans_;
  std::vector<int64_t> ranks_;      // in band order
  std::vector<int> band_top_;       // per band: its first lane
  std::vector<int> band_lanes_;     // per band: how many lanes
  double t0_ = 0, t1_ = 1;          // the time range shown
  double zoom_ = 1, offset_ = 0;    // offset_: microseconds at the left edge beyond t0_
  int drag_x_ = -1;
};

class TracePanel : public QTabWidget {
  Q_OBJECT
 public:
  explicit TracePanel(QWidget* parent = nullptr);
  // What the views show; `why` explains an empty panel ("not a trace", "no chromium events").
  void setViews(const trace::RankReport& report, std::vector<trace::TimelineSpan> spans);
  void clearViews(const QString& why);
  RankReportModel* rankModel() const { return ranks_; }
  QTreeView* rankTree() const { return tree_; }
  TimelineView* timeline() const { return timeline_; }
  QString rankSummary() const;

 signals:
  void compileRequested(const QString& label);

 private:
  RankReportModel* ranks_;
  QTreeView* tree_;
  QLabel* ranks_note_;
  TimelineView* timeline_;
  QLabel* timeline_note_;
};

}  // namespace kiln::viewer
