#include "viewer/numerics_model.h"

#include <QColor>

namespace kiln::viewer {

void NumericsModel::setResult(NumericsResult r) {
  beginResetModel();
  result_ = std::move(r);
  endResetModel();
}

void NumericsModel::clear() { setResult({}); }

int NumericsModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(result_.rows.size()); }
int NumericsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : FirstRung + 2 * kRungs; }

QVariant NumericsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const NodeNumerics& n = result_.rows[size_t(index.row())];
  int col = index.column();
  if (role == Qt::DisplayRole) {
    if (col == Node) return QString::fromStdString(n.name);
    if (col == Target) return QString::fromStdString(n.target);
    int k = (col - FirstRung) / 2;
    double v = (col - FirstRung) % 2 == 0 ? n.abs[k] : n.rel[k];
    return std::isnan(v) ? QString("—") : QString::number(v, 'g', 3);
  }
  if (role == Qt::TextAlignmentRole && col >= FirstRung) return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::BackgroundRole) {
    if (col >= FirstRung) {
      int k = (col - FirstRung) / 2;
      if (!std::isnan(n.rel[k]) && n.rel[k] > result_.tolerance) return QColor(255, 210, 200);
    }
    if (index.row() == result_.first_divergent) return QColor(255, 236, 200);
  }
  if (role == Qt::ToolTipRole && index.row() == result_.first_divergent) return QString("the first node over the tolerance");
  return {};
}

QVariant NumericsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal) return {};
  if (role == Qt::ToolTipRole && section >= FirstRung && section < FirstRung + 2 * kRungs) {
    static const char* what[kRungs] = {
        "the graph as shown, on the eager kernels in float32",
        "functionalized, as AOTAutograd hands the graph on, on the eager kernels",
        "functionalized and decomposed to core ATen ops, on the eager kernels",
        "every graph pass, then Kiln's CPU code generator (unfused, so every node has a buffer)"};
    int k = (section - FirstRung) / 2;
    return QString("%1: %2.\n%3 against the same graph run in float64 on the eager kernels.")
        .arg(rung_name(k), what[k], (section - FirstRung) % 2 == 0 ? "Max absolute error" : "Max |x - ref| / max |ref|");
  }
  if (role != Qt::DisplayRole) return {};
  if (section == Node) return QString("Node");
  if (section == Target) return QString("Op");
  int k = (section - FirstRung) / 2;
  if (k < 0 || k >= kRungs) return {};
  return QString("%1 %2").arg(rung_name(k), (section - FirstRung) % 2 == 0 ? "abs" : "rel");
}

}  // namespace kiln::viewer
