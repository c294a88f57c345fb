// Issue 25, point 8: numerics that tell a bug from noise. The table counts
// the elements over the tolerance and their share; bool and integer outputs
// are counted, not given a relative error of 1; a zero reference does not
// read as 1e+30; the selected row's detail draws a histogram of its errors by
// decade and lists its worst elements; "Minify from here" minifies the
// divergent node's subgraph.
#include <QAbstractItemModelTester>
#include <QFile>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTableView>
#include <QtTest/QtTest>

#include <cmath>
#include <limits>

#include "test_support.h"
#include "workbench_test_util.h"
#include "viewer/minifier_panel.h"
#include "viewer/numerics_detail.h"
#include "viewer/numerics_model.h"
#include "viewer/workbench.h"

using namespace kiln;
using namespace kiln::viewer;
using namespace kiln::session;

using test::settle;

namespace {

int column_named(const QAbstractItemModel* m, const QString& name) {
  for (int c = 0; c < m->columnCount(); ++c)
    if (m->headerData(c, Qt::Horizontal).toString() == name) return c;
  return -1;
}

int row_named(const QAbstractItemModel* m, const QString& name) {
  for (int r = 0; r < m->rowCount(); ++r)
    if (m->index(r, 0).data().toString() == name) return r;
  return -1;
}

// A row as measure_numerics makes it, from values on the eager and kiln rungs.
NodeNumerics row_of(const char* name, const char* target, const Tensor& ref, const Tensor& eager, const Tensor& kiln,
                    double tolerance) {
  NodeNumerics n;
  n.name = name;
  n.target = target;
  n.dtype = std::string(dtype_name(ref.dtype()));
  n.sizes = ref.sizes();
  for (int k : {int(kEagerRung), int(kKilnRung)}) {
    n.errors[k] = compare_tensors(k == kEagerRung ? eager : kiln, ref, tolerance);
    n.abs[k] = n.errors[k].max_abs;
    n.rel[k] = n.errors[k].exact ? n.errors[k].share() : n.errors[k].max_error;
  }
  return n;
}

// The user's two rows: a bool `le` with one element of 64 flipped on kiln, a
// relu whose reference is all zeros where kiln has 0.5s; and a NaN where the
// reference is finite.
NumericsResult user_result() {
  NumericsResult r;
  r.tolerance = 1e-4;
  std::vector<uint8_t> le(64, 0);
  for (int i = 0; i < 64; i += 3) le[size_t(i)] = 1;
  std::vector<uint8_t> le_kiln = le;
  le_kiln[5] = 1;
  const Tensor le_ref = Tensor::from_vector(le, {8, 8}).to(DType::Bool);
  r.rows.push_back(row_of("le", "aten::le.Scalar", le_ref, le_ref, Tensor::from_vector(le_kiln, {8, 8}).to(DType::Bool), 1e-4));
  std::vector<double> zeros(16, 0.0), halves(16, 0.0);
  for (int i = 0; i < 16; i += 4) halves[size_t(i)] = 0.5;
  const Tensor relu_ref = Tensor::from_vector(zeros, {4, 4});
  r.rows.push_back(row_of("relu", "aten::relu.default", relu_ref, relu_ref.to(DType::Float32),
                          Tensor::from_vector(halves, {4, 4}).to(DType::Float32), 1e-4));
  std::vector<double> ref = {1, 2, 3, 4}, nan = {1, std::numeric_limits<double>::quiet_NaN(), 3, 4 + 1e-5};
  r.rows.push_back(row_of("div", "aten::div.Tensor", Tensor::from_vector(ref, {2, 2}),
                          Tensor::from_vector(ref, {2, 2}).to(DType::Float32), Tensor::from_vector(nan, {2, 2}).to(DType::Float32),
                          1e-4));
  r.first_divergent = 0;
  r.first_divergent_rung = kKilnRung;
  return r;
}

}  // namespace

class TestNumericsDetail : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    test::isolate_settings("kiln_test_numerics_detail.kiln");
  }

  // The table's new columns on the user's rows, with the model tester attached.
  void tableCountsInsteadOfRelOneAndOneE30() {
    NumericsModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    m.setResult(user_result());
    QCOMPARE(m.rowCount(), 3);
    const int over = column_named(&m, "Over"), share = column_named(&m, "Share"), elements = column_named(&m, "Elements");
    const int kiln_rel = column_named(&m, "kiln rel");
    QVERIFY(over >= 0 && share >= 0 && elements >= 0 && kiln_rel >= 0);
    // le: one element of 64 differs; the rel cell says so instead of "1".
    QCOMPARE(m.index(0, elements).data().toString(), QString("64"));
    QCOMPARE(m.index(0, over).data().toString(), QString("1"));
    QCOMPARE(m.index(0, share).data().toString(), QString("1.56%"));
    QCOMPARE(m.index(0, kiln_rel).data().toString(), QString("1 differ"));
    QVERIFY(m.index(0, over).data(Qt::ToolTipRole).toString().contains("kiln: 1 of 64 differ (1.56%)"));
    // relu: 4 of 16 off, the error bounded by the tensor's scale, not 1e+30.
    QCOMPARE(m.index(1, over).data().toString(), QString("4"));
    QCOMPARE(m.index(1, share).data().toString(), QString("25%"));
    QCOMPARE(m.index(1, kiln_rel).data().toString(), QString("1"));
    QCOMPARE(m.index(1, kiln_rel).data(Qt::UserRole).toDouble(), 1.0);
    // div: the NaN is a mismatch, shown as such.
    QCOMPARE(m.index(2, over).data().toString(), QString("1"));
    QCOMPARE(m.index(2, kiln_rel).data().toString(), QString("inf"));
    QVERIFY(m.index(2, over).data(Qt::ToolTipRole).toString().contains("1 NaN/Inf"));
    // Cells over the tolerance are tinted; relu's eager rung is not.
    QVERIFY(m.index(1, kiln_rel).data(Qt::BackgroundRole).isValid());
    QVERIFY(!m.index(1, column_named(&m, "eager rel")).data(Qt::BackgroundRole).isValid());
    QVERIFY(m.headerData(over, Qt::Horizontal, Qt::ToolTipRole).toString().contains("largest finite |value|"));
  }

  // The detail of a row: its rung, summary, histogram bars (painted, red over
  // the tolerance) and worst elements with their indices.
  void detailDrawsTheHistogramAndListsTheWorst() {
    NumericsDetail d;
    QAbstractItemModelTester tester(d.worstModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    d.resize(520, 420);
    d.show();
    QVERIFY(QTest::qWaitForWindowExposed(&d));
    const NumericsResult r = user_result();
    QVERIFY(!d.minifyButton()->isEnabled());

    d.setRow(r, 2);  // div
    QCOMPARE(d.node(), QString("div"));
    QCOMPARE(d.rung(), int(kKilnRung));  // the first rung over
    QVERIFY2(d.summary().contains("1 of 4 elements over the tolerance"), qPrintable(d.summary()));
    QVERIFY2(d.summary().contains("1 of them NaN/Inf"), qPrintable(d.summary()));
    WorstElementsModel* worst = d.worstModel();
    QCOMPARE(worst->rowCount(), 2);  // the NaN, then the 1e-5 under the tolerance (equal elements are not "worst")
    QCOMPARE(worst->index(0, WorstElementsModel::Index).data().toString(), QString("[0, 1]"));
    QCOMPARE(worst->index(0, WorstElementsModel::Reference).data().toString(), QString("2"));
    QCOMPARE(worst->index(0, WorstElementsModel::Value).data().toString(), QString("NaN"));
    QCOMPARE(worst->index(0, WorstElementsModel::Error).data().toString(), QString("inf"));
    QCOMPARE(worst->index(1, WorstElementsModel::Index).data().toString(), QString("[1, 1]"));
    QCOMPARE(worst->headerData(WorstElementsModel::Value, Qt::Horizontal).toString(), QString("kiln"));
    QVERIFY(d.minifyButton()->isEnabled());

    // relu on kiln: 12 equal, 4 at error 1: bars in those two buckets only.
    d.setRow(r, 1);
    ErrorHistogramView* h = d.histogramView();
    QCOMPARE(h->histogram().counts[ErrorHistogram::kEqual], int64_t(12));
    QCOMPARE(h->histogram().counts[ErrorHistogram::kAbove], int64_t(4));
    for (int b = 0; b < ErrorHistogram::kBuckets; ++b)
      QCOMPARE(h->barRect(b).isEmpty(), b != ErrorHistogram::kEqual && b != ErrorHistogram::kAbove);
    QVERIFY(h->barRect(ErrorHistogram::kEqual).height() > h->barRect(ErrorHistogram::kAbove).height());
    QVERIFY(h->bucketOver(ErrorHistogram::kAbove));
    QVERIFY(!h->bucketOver(ErrorHistogram::kFirstDecade + 5));  // [1e-5, 1e-4): under 1e-4
    QVERIFY(h->bucketOver(ErrorHistogram::kFirstDecade + 6));   // [1e-4, 1e-3)
    const QImage image = h->grab().toImage();
    const QColor over = image.pixelColor(h->barRect(ErrorHistogram::kAbove).center());
    QVERIFY2(over.red() > 180 && over.green() < 120, qPrintable(over.name()));
    const QColor equal = image.pixelColor(h->barRect(ErrorHistogram::kEqual).center());
    QVERIFY2(equal.red() == equal.green(), qPrintable(equal.name()));

    // The eager rung of relu agrees: no bar over, no worst elements, nothing to minify there.
    d.setRung(kEagerRung);
    QCOMPARE(d.worstModel()->rowCount(), 0);
    QCOMPARE(d.histogramView()->histogram().counts[ErrorHistogram::kEqual], int64_t(16));
    QVERIFY2(d.summary().contains("0 of 16 elements over"), qPrintable(d.summary()));

    // le: compared exactly.
    d.setRow(r, 0);
    QVERIFY2(d.summary().contains("1 of 64 elements differ (1.56%)"), qPrintable(d.summary()));
    QCOMPARE(d.worstModel()->index(0, WorstElementsModel::Index).data().toString(), QString("[0, 5]"));
    QVERIFY(d.histogramView()->bucketOver(ErrorHistogram::kAbove));

    QSignalSpy minify(&d, &NumericsDetail::minifyRequested);
    d.minifyButton()->click();
    QCOMPARE(minify.count(), 1);
    QCOMPARE(minify.front().at(0).toString(), QString("le"));
    d.setRow(r, -1);
    QVERIFY(!d.minifyButton()->isEnabled());
    QCOMPARE(d.worstModel()->rowCount(), 0);
  }

  // End to end on the bundled example with relu miscompiled on purpose: the
  // joint graph's relu is 256 of 256 over on kiln; the panel's detail shows
  // its worst elements; "Minify from here" minifies relu's subgraph (2 ops:
  // linear and relu, not the joint graph's 8) down to relu.
  void minifyFromTheFirstDivergentNode() {
    qputenv("KILN_INJECT_BUG", "relu:accuracy");
    Workbench w;
    QAbstractItemModelTester tester(w.numericsModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    w.resize(1600, 1000);
    w.show();
    QSignalSpy opened(&w, &Workbench::sessionOpened);
    w.setPendingSelection("0/0", "aot_joint_graph");
    w.open({test::example()});
    QVERIFY(opened.wait(60000));
    QVERIFY(settle(w));
    QSignalSpy done(&w, &Workbench::numericsDone);
    w.measureNumerics();
    QVERIFY(done.wait(120000));
    QVERIFY(settle(w));
    const QAbstractItemModel* m = w.numericsModel();
    const int relu = row_named(m, "relu"), linear = row_named(m, "linear");
    const int over = column_named(m, "Over"), share = column_named(m, "Share");
    QVERIFY(relu >= 0 && linear >= 0);
    QVERIFY2(over >= 0 && share >= 0, "no Over and Share columns");
    QCOMPARE(m->index(relu, over).data().toString(), QString("256"));
    QCOMPARE(m->index(relu, share).data().toString(), QString("100%"));
    QCOMPARE(m->index(linear, over).data().toString(), QString("0"));
    QVERIFY2(w.numericsNotes().contains("256 of 256 over (100%)"), qPrintable(w.numericsNotes()));

    // The detail shows the first divergent node until a row is picked.
    auto* worst = w.findChild<QTableView*>("numerics_worst_elements");
    QVERIFY(worst);
    QCOMPARE(worst->model()->rowCount(), 10);
    QVERIFY(QRegularExpression("^\\[\\d, \\d+\\]$").match(worst->model()->index(0, 0).data().toString()).hasMatch());
    QCOMPARE(worst->model()->headerData(2, Qt::Horizontal).toString(), QString("kiln"));

    auto* button = w.findChild<QPushButton*>("numerics_minify_from_here");
    QVERIFY(button && button->isEnabled());
    MinifierPanel* minifier = w.minifierPanel();
    QSignalSpy finished(minifier, &MinifierPanel::finished);
    button->click();
    QVERIFY(minifier->isRunning());
    QVERIFY(!button->isEnabled());  // one run at a time
    QVERIFY(finished.wait(180000));
    QVERIFY2(finished.front().at(0).toBool(), qPrintable(minifier->log()));
    QVERIFY2(minifier->log().contains("minify the subgraph of relu in aot_joint_graph"), qPrintable(minifier->log()));
    QVERIFY2(QRegularExpression("done: 2 -> 1 ops").match(minifier->log()).hasMatch(), qPrintable(minifier->log()));
    QFile graph(minifier->reproPath() + "/graph.txt");
    QVERIFY(graph.open(QIODevice::ReadOnly));
    const QByteArray text = graph.readAll();
    QVERIFY2(text.contains("aten.relu.default") && !text.contains("threshold_backward"), text.constData());
    QVERIFY(button->isEnabled());
    QDir(QFileInfo(minifier->torchRepro()).absolutePath()).removeRecursively();
    qunsetenv("KILN_INJECT_BUG");
  }
};

QTEST_MAIN(TestNumericsDetail)
#include "test_numerics_detail.moc"
