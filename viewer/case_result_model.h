#pragma once
// Conformance results as a table: status, case id, op, max abs/rel error, reason.
#include <QAbstractTableModel>

#include <vector>

#include "core/corpus/conformance.h"

namespace kiln {

class CaseResultModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Status, Id, Op, MaxAbs, MaxRel, Reason, ColumnCount };
  static constexpr int SortRole = Qt::UserRole + 1;  // errors as numbers, the rest as shown

  using QAbstractTableModel::QAbstractTableModel;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  void clear();
  void append(const CaseResult& r);
  const CaseResult& result(int row) const { return results_[size_t(row)]; }
  int count(CaseStatus s) const;

 private:
  std::vector<CaseResult> results_;
};

}  // namespace kiln
