#include "viewer/numerics_detail.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QPainter>
#include <QPushButton>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>

#include <cmath>

#include "viewer/numerics_model.h"

namespace kiln::viewer {

namespace {

QString value_text(double v, char format = 'g', int precision = 6) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return QString::number(v, format, precision);
}

QString index_text(const std::vector<int64_t>& index) {
  QStringList parts;
  for (int64_t i : index) parts << QString::number(i);
  return "[" + parts.join(", ") + "]";
}

// Short labels under the bars: the decade's exponent.
QString bucket_label(int b) {
  if (b == ErrorHistogram::kEqual) return "0";
  if (b == ErrorHistogram::kBelow) return "<-10";
  if (b == ErrorHistogram::kAbove) return "≥0";
  if (b == ErrorHistogram::kNonFinite) return "NaN";
  return QString::number(b - ErrorHistogram::kFirstDecade - ErrorHistogram::kDecades);
}

}  // namespace

// ---- worst elements

void WorstElementsModel::set(const TensorErrors& e, const QString& rung) {
  beginResetModel();
  worst_ = e.worst;
  rung_ = rung;
  endResetModel();
}

int WorstElementsModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(worst_.size()); }
int WorstElementsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : Columns; }

QVariant WorstElementsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= Columns) return {};
  const WorstElement& w = worst_[size_t(index.row())];
  const double diff = std::fabs(w.value - w.reference);
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Index: return index_text(w.index);
      // Four digits fit the detail's width; |diff| tells close values apart, the tooltip has all 17.
      case Reference: return value_text(w.reference, 'g', 4);
      case Value: return value_text(w.value, 'g', 4);
      case AbsDiff: return value_text(diff, 'g', 3);
      case Error: return value_text(w.error, 'g', 3);
    }
  }
  if (role == Qt::ToolTipRole && index.column() >= Reference)
    return value_text(index.column() == Reference ? w.reference : index.column() == Value ? w.value
                                                  : index.column() == AbsDiff            ? diff
                                                                                          : w.error,
                      'g', 17);
  if (role == Qt::TextAlignmentRole && index.column() >= Reference) return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ForegroundRole && (std::isnan(w.value) || std::isinf(w.value)) && index.column() == Value)
    return QColor(170, 30, 120);
  return {};
}

QVariant WorstElementsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal) return {};
  if (role == Qt::ToolTipRole) {
    if (section == Error) return QString(error_rule());
    if (section == Reference) return QString("The same graph in float64 on the eager kernels");
    return {};
  }
  if (role != Qt::DisplayRole) return {};
  switch (section) {
    case Index: return QString("Index");
    case Reference: return QString("fp64 ref");
    case Value: return rung_.isEmpty() ? QString("Value") : rung_;
    case AbsDiff: return QString("|diff|");
    case Error: return QString("Error");
  }
  return {};
}

// ---- histogram

ErrorHistogramView::ErrorHistogramView(QWidget* parent) : QWidget(parent) {
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
}

void ErrorHistogramView::set(const ErrorHistogram& h, double tolerance, bool exact) {
  histogram_ = h;
  tolerance_ = tolerance;
  exact_ = exact;
  empty_ = false;
  update();
}

void ErrorHistogramView::clear() {
  histogram_ = {};
  empty_ = true;
  update();
}

QRect ErrorHistogramView::plotArea() const { return rect().adjusted(8, 16, -8, -30); }

bool ErrorHistogramView::bucketOver(int b) const {
  if (b == ErrorHistogram::kEqual) return false;
  if (b == ErrorHistogram::kNonFinite || exact_) return true;
  // A bucket is over when its elements can be: its upper edge lies above the tolerance.
  const double upper = b + 1 < ErrorHistogram::kNonFinite ? ErrorHistogram::lower_edge(b + 1) : INFINITY;
  return upper > tolerance_;
}

QRect ErrorHistogramView::barRect(int b) const {
  if (empty_ || b < 0 || b >= ErrorHistogram::kBuckets || histogram_.counts[b] == 0) return {};
  int64_t most = 0;
  for (int64_t c : histogram_.counts) most = std::max(most, c);
  const QRect area = plotArea();
  const double slot = double(area.width()) / ErrorHistogram::kBuckets;
  const double height = std::log1p(double(histogram_.counts[b])) / std::log1p(double(most)) * area.height();
  const int h = std::max(2, int(std::lround(height)));
  return QRect(int(area.left() + b * slot + 2), area.bottom() - h + 1, std::max(1, int(slot) - 4), h);
}

void ErrorHistogramView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  const QRect area = plotArea();
  p.setPen(palette().color(QPalette::Mid));
  p.drawLine(area.bottomLeft(), area.bottomRight());
  if (empty_) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(area, Qt::AlignCenter, "No node selected");
    return;
  }
  QFont small = font();
  small.setPointSizeF(std::max(7.0, small.pointSizeF() * 0.85));
  p.setFont(small);
  const double slot = double(area.width()) / ErrorHistogram::kBuckets;
  for (int b = 0; b < ErrorHistogram::kBuckets; ++b) {
    const QRect label(int(area.left() + b * slot), area.bottom() + 3, int(slot), 14);
    p.setPen(palette().color(QPalette::Text));
    p.drawText(label, Qt::AlignHCenter | Qt::AlignTop, bucket_label(b));
    const QRect bar = barRect(b);
    if (bar.isEmpty()) continue;
    const QColor colour = b == ErrorHistogram::kEqual      ? QColor(150, 150, 150)
                          : b == ErrorHistogram::kNonFinite ? QColor(170, 30, 120)
                          : bucketOver(b)                   ? QColor(220, 80, 60)
                                                            : QColor(90, 170, 90);
    p.fillRect(bar, colour);
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRect(bar.left() - 10, bar.top() - 14, bar.width() + 20, 13), Qt::AlignHCenter | Qt::AlignBottom,
               QLocale::c().toString(qlonglong(histogram_.counts[b])));
  }
  // The tolerance, placed on the decade axis.
  if (!exact_ && tolerance_ > 0) {
    const double lg = std::log10(tolerance_);
    double pos = -1;
    if (lg >= -ErrorHistogram::kDecades && lg < 0)
      pos = ErrorHistogram::kFirstDecade + (lg + ErrorHistogram::kDecades);
    else if (lg < -ErrorHistogram::kDecades)
      pos = ErrorHistogram::kFirstDecade;
    if (pos >= 0) {
      const int x = int(area.left() + pos * slot);
      p.setPen(QPen(QColor(200, 40, 40), 1, Qt::DashLine));
      p.drawLine(x, area.top() - 12, x, area.bottom());
      // Over the count labels of nearby bars, on its own background, so it stays readable.
      const QString tol = "tol " + QString::number(tolerance_, 'g', 3);
      const QRect box(x + 2, area.top() - 15, p.fontMetrics().horizontalAdvance(tol) + 4, p.fontMetrics().height());
      p.fillRect(box, palette().base());
      p.drawText(box, Qt::AlignCenter, tol);
    }
  }
  p.setPen(palette().color(QPalette::PlaceholderText));
  p.drawText(QRect(area.left(), area.bottom() + 15, area.width(), 14), Qt::AlignHCenter | Qt::AlignTop,
             exact_ ? "equal | differ (bool and integer: compared exactly)" : "log10 of the element error, by decade");
}

// ---- the detail

NumericsDetail::NumericsDetail(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 0, 0, 0);
  title_ = new QLabel(this);
  title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  title_->setWordWrap(true);
  layout->addWidget(title_);
  auto* bar = new QHBoxLayout;
  rungs_ = new QComboBox(this);
  rungs_->setObjectName("numerics_detail_rung");
  for (int k = 0; k < kRungs; ++k) rungs_->addItem(rung_name(k), k);
  rungs_->setToolTip("The rung whose elements are shown");
  minify_ = new QPushButton("Minify from here", this);
  minify_->setObjectName("numerics_minify_from_here");
  minify_->setToolTip("Minify the subgraph that computes this node (the node as the only output, and what it depends "
                      "on) with the minifier panel's predicate, tolerance and jobs");
  bar->addWidget(new QLabel("Rung", this));
  bar->addWidget(rungs_);
  bar->addStretch(1);
  bar->addWidget(minify_);
  layout->addLayout(bar);
  summary_ = new QLabel(this);
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(summary_);
  histogram_ = new ErrorHistogramView(this);
  layout->addWidget(histogram_);
  worst_ = new WorstElementsModel(this);
  worst_table_ = new QTableView(this);
  worst_table_->setObjectName("numerics_worst_elements");
  worst_table_->setModel(worst_);
  worst_table_->verticalHeader()->hide();
  worst_table_->verticalHeader()->setDefaultSectionSize(worst_table_->fontMetrics().height() + 4);
  // The values share what width the detail has; the index takes what it needs.
  worst_table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  worst_table_->horizontalHeader()->setSectionResizeMode(WorstElementsModel::Index, QHeaderView::ResizeToContents);
  worst_table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  layout->addWidget(worst_table_, 1);
  connect(rungs_, &QComboBox::currentIndexChanged, this, [this](int i) {
    rung_ = rungs_->itemData(i).toInt();
    showRung();
  });
  connect(minify_, &QPushButton::clicked, this, [this] {
    if (!node_.name.empty()) emit minifyRequested(node());
  });
  clear();
}

void NumericsDetail::clear(const QString& hint) {
  node_ = {};
  rung_ = -1;
  title_->setText(hint.isEmpty() ? QString("Select a node to see its errors.") : hint);
  summary_->clear();
  histogram_->clear();
  worst_->set({}, {});
  rungs_->setEnabled(false);
  minify_->setEnabled(false);
}

void NumericsDetail::setMinifyEnabled(bool enabled) {
  minify_allowed_ = enabled;
  bool over = false;
  for (int k = 0; k < kRungs; ++k) over |= node_.over(k);
  minify_->setEnabled(enabled && over);
}

void NumericsDetail::setRow(const NumericsResult& r, int row) {
  if (row < 0 || size_t(row) >= r.rows.size()) {
    clear();
    return;
  }
  node_ = r.rows[size_t(row)];
  tolerance_ = r.tolerance;
  QStringList sizes;
  for (int64_t d : node_.sizes) sizes << QString::number(d);
  title_->setText(QString("<b>%1</b> &nbsp;%2 &nbsp;%3[%4], %5 elements")
                      .arg(QString::fromStdString(node_.name).toHtmlEscaped(),
                           QString::fromStdString(node_.target).toHtmlEscaped(), QString::fromStdString(node_.dtype),
                           sizes.join(", "), QLocale::c().toString(qlonglong(node_.elements()))));
  // The rung where the error enters, else the one most off.
  int rung = -1;
  for (int k = 0; k < kRungs && rung < 0; ++k)
    if (node_.over(k)) rung = k;
  if (rung < 0) rung = node_.worst_rung();
  if (rung < 0) rung = kKilnRung;
  auto* items = qobject_cast<QStandardItemModel*>(rungs_->model());
  for (int k = 0; k < kRungs; ++k) {
    const bool measured = node_.errors[k].measured;
    rungs_->setItemText(k, measured ? QString(rung_name(k)) : QString("%1 (not measured)").arg(rung_name(k)));
    if (items) items->item(k)->setEnabled(measured);
  }
  rungs_->setEnabled(true);
  setMinifyEnabled(minify_allowed_);
  setRung(rung);
}

void NumericsDetail::setRung(int rung) {
  if (rung < 0 || rung >= kRungs) return;
  rung_ = rung;
  {
    const QSignalBlocker quiet(rungs_);
    rungs_->setCurrentIndex(rung);
  }
  showRung();
}

QString NumericsDetail::summary() const { return summary_->text(); }

void NumericsDetail::showRung() {
  if (rung_ < 0 || node_.name.empty()) return;
  const TensorErrors& e = node_.errors[rung_];
  if (!e.measured) {
    summary_->setText(QString("Not measured on %1: a pass replaced the node, or the rung did not run.").arg(rung_name(rung_)));
    histogram_->clear();
    worst_->set({}, {});
    return;
  }
  const QLocale c = QLocale::c();
  QString counts = QString("%1 of %2 elements %3").arg(c.toString(qlonglong(e.over)), c.toString(qlonglong(e.elements)),
                                                       e.exact ? "differ" : "over the tolerance " + QString::number(tolerance_));
  if (e.over > 0) counts += " (" + share_text(e.share()) + ")";
  if (e.non_finite > 0) counts += QString(", %1 of them NaN/Inf").arg(c.toString(qlonglong(e.non_finite)));
  QString text = QString("<b>%1</b> on %2").arg(counts, rung_name(rung_));
  text += e.exact ? QString(" (bool/integer: compared exactly) &middot; max abs %1").arg(value_text(e.max_abs, 'g', 3))
                  : QString(" &middot; max abs %1 &middot; max error %2").arg(value_text(e.max_abs, 'g', 3), value_text(e.max_error, 'g', 3));
  text += "<br><span style='color:gray'>error = |x &minus; ref| / " + QString::number(e.scale, 'g', 4) +
          ", the largest |value| of either tensor</span>";
  summary_->setText(text);
  summary_->setToolTip(error_rule());
  histogram_->set(e.histogram, tolerance_, e.exact);
  worst_->set(e, rung_name(rung_));
}

}  // namespace kiln::viewer
