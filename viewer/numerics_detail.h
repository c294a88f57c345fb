#pragma once
// One node of the numerics table in detail, for one rung: how many elements
// are over the tolerance and how the errors spread (a histogram by decade,
// painted here), the worst elements with their indices, reference and value,
// and "Minify from here", which minifies the node's subgraph.
#include <QAbstractTableModel>
#include <QWidget>

#include "session/numerics.h"
#include "viewer/session_names.h"

class QComboBox;
class QLabel;
class QPushButton;
class QTableView;

namespace kiln::viewer {

class WorstElementsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Index, Reference, Value, AbsDiff, Error, Columns };
  using QAbstractTableModel::QAbstractTableModel;
  void set(const TensorErrors& e, const QString& rung);
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<WorstElement> worst_;
  QString rung_;
};

// Bars per bucket of ErrorHistogram, heights on a log scale so one stray
// element still shows beside thousands; buckets at or over the tolerance red.
class ErrorHistogramView : public QWidget {
  Q_OBJECT
 public:
  explicit ErrorHistogramView(QWidget* parent = nullptr);
  void set(const ErrorHistogram& h, double tolerance, bool exact);
  void clear();
  const ErrorHistogram& histogram() const { return histogram_; }
  QRect barRect(int bucket) const;  // empty for an empty bucket
  bool bucketOver(int bucket) const;
  QSize sizeHint() const override { return {420, 130}; }
  QSize minimumSizeHint() const override { return {260, 100}; }

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  QRect plotArea() const;
  ErrorHistogram histogram_;
  double tolerance_ = 0;
  bool exact_ = false, empty_ = true;
};

class NumericsDetail : public QWidget {
  Q_OBJECT
 public:
  explicit NumericsDetail(QWidget* parent = nullptr);
  // Row `row` of `r` (its first rung over the tolerance, else kiln's); -1 clears.
  void setRow(const NumericsResult& r, int row);
  void clear(const QString& hint = {});
  void setRung(int rung);
  void setMinifyEnabled(bool enabled);  // off while the minifier runs

  QString node() const { return QString::fromStdString(node_.name); }
  int rung() const { return rung_; }
  QString summary() const;
  WorstElementsModel* worstModel() const { return worst_; }
  ErrorHistogramView* histogramView() const { return histogram_; }
  QPushButton* minifyButton() const { return minify_; }

 signals:
  void minifyRequested(const QString& node);

 private:
  void showRung();

  NodeNumerics node_;
  double tolerance_ = 0;
  int rung_ = -1;
  bool minify_allowed_ = true;
  QLabel* title_;
  QComboBox* rungs_;
  QLabel* summary_;
  ErrorHistogramView* histogram_;
  WorstElementsModel* worst_;
  QTableView* worst_table_;
  QPushButton* minify_;
};

}  // namespace kiln::viewer
