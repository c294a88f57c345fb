// The input signature check in the Guards panel on scalar guards too: s04's
// frame recompiled for a float constant (scale 2.0 -> 3.0, which PyTorch then
// made dynamic: its entry guards only scale's type) and a loop count (n 2 ->
// 3). A call like the scale-3.0 one is not "run by" entry 0/0 just because
// x's tensor guards pass there: scale == 2.0 fails. Scalars are rows of the
// signature (their value from the guard, or from the dump's create_symbol
// when the compile made them dynamic, as are dynamic sizes), edited like
// shapes; the verdict
// scrolls when it is long.
#include <QAbstractItemModelTester>
#include <QLabel>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QtTest/QtTest>

#include "test_support.h"
#include "workbench_test_util.h"
#include "viewer/guard_models.h"
#include "viewer/workbench.h"

using namespace kiln;
using namespace kiln::viewer;
using namespace kiln::session;

using test::settle;
using test::trace_dir;

namespace {

int row_of(SignatureModel* m, const QString& source) {
  for (int r = 0; r < m->rowCount(); ++r)
    if (m->index(r, SignatureModel::Input).data().toString() == source) return r;
  return -1;
}

}  // namespace

class TestSignatureCheckGui : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    test::isolate_settings("kiln_test_signature_check.kiln");
  }

  void scalarGuardsAreChecked() {
    Workbench w;
    w.show();
    QSignalSpy opened(&w, &Workbench::sessionOpened);
    w.open({QString::fromStdString(trace_dir("s04_recompiles"))});
    QVERIFY(opened.wait(60000));
    QVERIFY(settle(w, 120000));
    // The entry compiled for scale 3.0: 0/3, with scale dynamic from then on.
    const QString scale3 = "0/3";
    QVERIFY(w.currentSession()->find("0/3"));
    QCOMPARE(w.currentSession()->find("0/3")->input_values.at("L['scale']"), std::string("3.0"));
    QVERIFY(w.selectCompile(scale3));
    QVERIFY(settle(w));
    SignatureModel* sig = w.signatureModel();
    QAbstractItemModelTester tester(sig, QAbstractItemModelTester::FailureReportingMode::QtTest);
    const int scale = row_of(sig, "L['scale']"), n = row_of(sig, "L['n']"), x = row_of(sig, "L['x']");
    QVERIFY2(scale >= 0 && n >= 0 && x >= 0, qPrintable(QString::number(sig->rowCount())));
    QCOMPARE(sig->index(scale, SignatureModel::Shape).data().toString(), QString("3.0"));
    QCOMPARE(sig->index(scale, SignatureModel::DType).data().toString(), QString("float"));
    QCOMPARE(sig->index(n, SignatureModel::Shape).data().toString(), QString("2"));
    // Entry 0/0 has x's tensor guards passing but scale == 2.0 failing: the call runs the 3.0 entry.
    QString verdict = w.signatureVerdict();
    QVERIFY2(!verdict.contains("would run entry 0/0"), qPrintable(verdict));
    QVERIFY2(verdict.contains("scale == 2.0"), qPrintable(verdict));
    QVERIFY2(verdict.contains("would run entry " + scale3), qPrintable(verdict));
    // Back at scale 2.0: entry 0/0 again.
    QVERIFY(sig->setData(sig->index(scale, SignatureModel::Shape), "2.0"));
    QVERIFY2(w.signatureVerdict().contains("would run entry 0/0"), qPrintable(w.signatureVerdict()));
    // Another loop count: every entry with n == 2 fails; 0/4 took n dynamic.
    QVERIFY(sig->setData(sig->index(n, SignatureModel::Shape), "7"));
    QVERIFY2(w.signatureVerdict().contains("[0/0] <span style='color:#c03030'>n == 2</span>"), qPrintable(w.signatureVerdict()));
    QVERIFY2(w.signatureVerdict().contains("would run entry 0/4"), qPrintable(w.signatureVerdict()));
    // A float where an int was: the type guard fails first, as in Dynamo.
    QVERIFY(sig->setData(sig->index(n, SignatureModel::Shape), "2.0"));
    QCOMPARE(sig->index(n, SignatureModel::DType).data().toString(), QString("float"));
    QVERIFY2(w.signatureVerdict().contains("type=&lt;class 'int'&gt;") || w.signatureVerdict().contains("type=<class 'int'>"),
             qPrintable(w.signatureVerdict()));
    // A scalar's value must be a literal; its type follows it.
    QVERIFY(!sig->setData(sig->index(n, SignatureModel::Shape), "two"));
    QVERIFY(!(sig->flags(sig->index(n, SignatureModel::DType)) & Qt::ItemIsEditable));
    QVERIFY(sig->flags(sig->index(x, SignatureModel::DType)) & Qt::ItemIsEditable);
  }

  // Every entry of the frame failing: a long verdict, which scrolls in a short panel.
  void aLongVerdictScrolls() {
    Workbench w;
    w.show();
    QSignalSpy opened(&w, &Workbench::sessionOpened);
    w.open({QString::fromStdString(trace_dir("s04_recompiles"))});
    QVERIFY(opened.wait(60000));
    QVERIFY(settle(w, 120000));
    QVERIFY(w.selectCompile("0/0"));
    QVERIFY(settle(w));
    SignatureModel* sig = w.signatureModel();
    const int x = row_of(sig, "L['x']");
    QVERIFY(x >= 0);
    QVERIFY(sig->setData(sig->index(x, SignatureModel::DType), "int64"));  // no entry takes it
    QVERIFY(w.signatureVerdict().contains("would recompile"));
    auto* scroll = w.findChild<QScrollArea*>("signature_verdict_scroll");
    QVERIFY(scroll);
    QVERIFY(scroll->widget() && scroll->widget()->findChild<QLabel*>() == nullptr);
    QCOMPARE(qobject_cast<QLabel*>(scroll->widget())->text(), w.signatureVerdict());
    w.showPanel("guards");
    QTRY_VERIFY_WITH_TIMEOUT(scroll->isVisible(), 10000);
    // The verdict is taller than the room it has: the rest is a scroll away, not cut.
    QTRY_VERIFY2_WITH_TIMEOUT(scroll->verticalScrollBar()->maximum() > 0,
                              qPrintable(QString("%1 px of verdict in %2 px").arg(scroll->widget()->height()).arg(scroll->viewport()->height())), 10000);
  }
};

QTEST_MAIN(TestSignatureCheckGui)
#include "test_signature_check_gui.moc"
