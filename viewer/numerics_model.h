#pragma once
// The numerics panel's table: per node, max abs and relative error of each
// rung against float64 eager; rows over the tolerance are tinted.
#include <QAbstractTableModel>

#include "session/numerics.h"
#include "viewer/session_names.h"

namespace kiln::viewer {

class NumericsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Node, Target, FirstRung };  // then abs, rel per rung
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

}  // namespace kiln::viewer
