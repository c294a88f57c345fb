#pragma once
// The numerics panel's table: per node, its element count, how many elements
// are over the tolerance (on the rung with most of them) and their share, then
// max abs and relative error of each rung against float64 eager; cells over
// the tolerance are tinted. NumericsDetail shows one row's histogram and worst
// elements.
#include <QAbstractTableModel>

#include "session/numerics.h"
#include "viewer/session_names.h"

namespace kiln::viewer {

class NumericsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Node, Target, Elements, Over, Share, FirstRung };  // then abs, rel per rung
  using QAbstractTableModel::QAbstractTableModel;
  void setResult(NumericsResult r);
  void clear();
  const NumericsResult& result() const { return result_; }
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  NumericsResult result_;
};

// "256 of 4,096 (6.25%)", "3 differ": how a rung's elements over read in the panel.
QString over_text(const TensorErrors& e);
QString share_text(double share);

}  // namespace kiln::viewer
