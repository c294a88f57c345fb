#include "viewer/case_result_model.h"

#include <QBrush>
#include <QColor>

namespace kiln {

int CaseResultModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(results_.size());
}

int CaseResultModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant CaseResultModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const CaseResult& r = results_[size_t(index.row())];
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Status: return QString::fromUtf8(case_status_name(r.status).data());
      case Id: return QString::fromStdString(r.id);
      case Op: return QString::fromStdString(r.op);
      case MaxAbs: return QString::number(r.max_abs, 'g', 3);
      case MaxRel: return QString::number(r.max_rel, 'g', 3);
      case Reason: return QString::fromStdString(r.reason);
      default: return {};
    }
  }
  if (role == Qt::ForegroundRole && index.column() == Status) {
    switch (r.status) {
      case CaseStatus::Pass: return QBrush(QColor(0x2e, 0x7d, 0x32));
      case CaseStatus::Fail: return QBrush(QColor(0xc6, 0x28, 0x28));
      case CaseStatus::Skip: return QBrush(QColor(0x9e, 0x9e, 0x9e));
    }
  }
  if (role == Qt::ToolTipRole && index.column() == Reason) return QString::fromStdString(r.reason);
  if (role == Qt::TextAlignmentRole && (index.column() == MaxAbs || index.column() == MaxRel))
    return int(Qt::AlignRight | Qt::AlignVCenter);
  // What the table sorts by: errors as numbers (as text "1e-07" would sort after "0.5").
  if (role == SortRole) {
    if (index.column() == MaxAbs) return r.max_abs;
    if (index.column() == MaxRel) return r.max_rel;
    return data(index, Qt::DisplayRole);
  }
  return {};
}

QVariant CaseResultModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* const kNames[] = {"Status", "Case", "Op", "Max abs", "Max rel", "Reason"};
  return section >= 0 && section < ColumnCount ? QString(kNames[section]) : QVariant();
}

void CaseResultModel::clear() {
  beginResetModel();
  results_.clear();
  endResetModel();
}

void CaseResultModel::append(const CaseResult& r) {
  int row = rowCount();
  beginInsertRows({}, row, row);
  results_.push_back(r);
  endInsertRows();
}

int CaseResultModel::count(CaseStatus s) const {
  int n = 0;
  for (const auto& r : results_) n += r.status == s;
  return n;
}

}  // namespace kiln
