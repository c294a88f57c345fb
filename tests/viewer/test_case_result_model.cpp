#include <QAbstractItemModelTester>
#include <QtTest/QtTest>

#include "viewer/case_result_model.h"

using namespace kiln;

class TestCaseResultModel : public QObject {
  Q_OBJECT
 private slots:
  void rows_and_counts() {
    CaseResultModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.append({"c000", "aten::abs.default", CaseStatus::Pass, 0, 0, ""});
    model.append({"c001", "aten::neg.default", CaseStatus::Fail, 0.5, 0.25, "1 of 60 elements differ"});
    model.append({"c002", "aten::exp.default", CaseStatus::Skip, 0, 0, "no kernel"});
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(model.count(CaseStatus::Fail), 1);
    QCOMPARE(model.data(model.index(1, CaseResultModel::Status)).toString(), QString("FAIL"));
    QCOMPARE(model.data(model.index(1, CaseResultModel::MaxAbs)).toString(), QString("0.5"));
    QCOMPARE(model.data(model.index(2, CaseResultModel::Reason)).toString(), QString("no kernel"));
    QCOMPARE(model.headerData(CaseResultModel::Op, Qt::Horizontal).toString(), QString("Op"));
    model.clear();
    QCOMPARE(model.rowCount(), 0);
  }
};

QTEST_MAIN(TestCaseResultModel)
#include "test_case_result_model.moc"
