#include "viewer/numerics_model.h"

#include <QColor>
#include <QLocale>

namespace kiln::viewer {

namespace {

const QColor kOver(255, 210, 200), kFirst(255, 236, 200);

QString number(double v) {
  if (std::isnan(v)) return QString("—");
  if (std::isinf(v)) return QString("inf");
  return QString::number(v, 'g', 3);
}

// Per rung, for the tooltip of the count columns.
QString rungs_breakdown(const NodeNumerics& n) {
  QString out;
  for (int k = 0; k < kRungs; ++k) {
    if (!out.isEmpty()) out += "\n";
    out += QString("%1: %2").arg(rung_name(k), n.errors[k].measured ? over_text(n.errors[k]) : QString("not measured"));
  }
  return out;
}

}  // namespace

QString share_text(double share) {
  if (share == 0) return "0%";
  if (share < 1e-4) return "<0.01%";
  return QString::number(100 * share, 'g', 3) + "%";
}

QString over_text(const TensorErrors& e) {
  const QLocale c = QLocale::c();
  QString text = e.exact ? QString("%1 of %2 differ").arg(c.toString(qlonglong(e.over)), c.toString(qlonglong(e.elements)))
                         : QString("%1 of %2 over").arg(c.toString(qlonglong(e.over)), c.toString(qlonglong(e.elements)));
  if (e.over > 0) text += " (" + share_text(e.share()) + ")";
  if (e.non_finite > 0) text += QString(", %1 NaN/Inf").arg(c.toString(qlonglong(e.non_finite)));
  return text;
}

void NumericsModel::setResult(NumericsResult r) {
  beginResetModel();
  result_ = std::move(r);
  endResetModel();
}

void NumericsModel::clear() { setResult({}); }

int NumericsModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(result_.rows.size()); }
int NumericsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : FirstRung + 2 * kRungs; }

QVariant NumericsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= columnCount()) return {};
  const NodeNumerics& n = result_.rows[size_t(index.row())];
  const int col = index.column();
  const int worst = n.worst_rung();
  const int k = col >= FirstRung ? (col - FirstRung) / 2 : -1;
  if (role == Qt::DisplayRole) {
    if (col == Node) return QString::fromStdString(n.name);
    if (col == Target) return QString::fromStdString(n.target);
    if (col == Elements) return QLocale::c().toString(qlonglong(n.elements()));
    if (col == Over) return worst < 0 ? QString("—") : QLocale::c().toString(qlonglong(n.errors[worst].over));
    if (col == Share) return worst < 0 ? QString("—") : share_text(n.errors[worst].share());
    const bool abs = (col - FirstRung) % 2 == 0;
    // Bool and integer outputs: a count of elements that differ, not a relative error of 1.
    if (!abs && n.errors[k].measured && n.errors[k].exact)
      return n.errors[k].over == 0 ? QString("0") : QString("%1 differ").arg(QLocale::c().toString(qlonglong(n.errors[k].over)));
    return number(abs ? n.abs[k] : n.rel[k]);
  }
  if (role == Qt::UserRole) {  // the numbers, for sorting and tests
    if (col == Elements) return qlonglong(n.elements());
    if (col == Over) return worst < 0 ? QVariant() : QVariant(qlonglong(n.errors[worst].over));
    if (col == Share) return worst < 0 ? QVariant() : QVariant(n.errors[worst].share());
    if (k >= 0) return (col - FirstRung) % 2 == 0 ? n.abs[k] : n.rel[k];
    return {};
  }
  if (role == Qt::TextAlignmentRole && col >= Elements) return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::BackgroundRole) {
    if (k >= 0 && n.over(k)) return kOver;
    if ((col == Over || col == Share) && worst >= 0 && n.errors[worst].over > 0) return kOver;
    if (index.row() == result_.first_divergent) return kFirst;
  }
  if (role == Qt::ToolTipRole) {
    if (col == Node || col == Target) return QString::fromStdString(col == Node ? n.name : n.target);
    if (col == Over || col == Share || col == Elements)
      return QString("%1 %2[%3]\n%4")
          .arg(QString::fromStdString(n.name), QString::fromStdString(n.dtype))
          .arg([&] {
            QStringList s;
            for (int64_t d : n.sizes) s << QString::number(d);
            return s.join(", ");
          }())
          .arg(rungs_breakdown(n));
    if (k >= 0 && n.errors[k].measured)
      return QString("%1: max abs %2, max error %3; %4")
          .arg(rung_name(k), number(n.abs[k]), number(n.errors[k].max_error), over_text(n.errors[k]));
    if (index.row() == result_.first_divergent) return QString("the first node over the tolerance");
  }
  return {};
}

QVariant NumericsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal) return {};
  if (role == Qt::ToolTipRole) {
    if (section == Elements) return QString("Elements of the node's output");
    if (section == Over || section == Share)
      return QString("Elements over the tolerance, and their share of the output, on the rung with most of them "
                     "(bool and integer outputs: elements that differ). Per rung in the cell's tooltip.\n%1")
          .arg(error_rule());
    if (section >= FirstRung && section < FirstRung + 2 * kRungs) {
      static const char* what[kRungs] = {
          "the graph as shown, on the eager kernels in float32",
          "functionalized, as AOTAutograd hands the graph on, on the eager kernels",
          "functionalized and decomposed to core ATen ops, on the eager kernels",
          "every graph pass, then Kiln's CPU code generator (unfused, so every node has a buffer)"};
      int k = (section - FirstRung) / 2;
      return QString("%1: %2.\n%3 against the same graph run in float64 on the eager kernels.")
          .arg(rung_name(k), what[k],
               (section - FirstRung) % 2 == 0
                   ? "Max absolute error"
                   : "Max |x - ref| / s, s the largest |value| of either tensor (bool and integer outputs: the "
                     "elements that differ)");
    }
    return {};
  }
  if (role != Qt::DisplayRole) return {};
  if (section == Node) return QString("Node");
  if (section == Target) return QString("Op");
  if (section == Elements) return QString("Elements");
  if (section == Over) return QString("Over");
  if (section == Share) return QString("Share");
  int k = (section - FirstRung) / 2;
  if (k < 0 || k >= kRungs) return {};
  return QString("%1 %2").arg(rung_name(k), (section - FirstRung) % 2 == 0 ? "abs" : "rel");
}

}  // namespace kiln::viewer
