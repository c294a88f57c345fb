#include <QAbstractItemModelTester>
#include <QSortFilterProxyModel>
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

  // Errors sort as numbers: 2e-07 is smaller than 0.5 (as text it would not be).
  void sorts_errors_as_numbers() {
    CaseResultModel model;
    model.append({"c000", "aten::exp.default", CaseStatus::Fail, 0.5, 0.5, ""});
    model.append({"c001", "aten::cos.default", CaseStatus::Pass, 2e-07, 2e-07, ""});
    model.append({"c002", "aten::sin.default", CaseStatus::Pass, 0.03, 0.03, ""});
    QSortFilterProxyModel proxy;
    proxy.setSourceModel(&model);
    proxy.setSortRole(CaseResultModel::SortRole);
    proxy.sort(CaseResultModel::MaxAbs, Qt::AscendingOrder);
    QCOMPARE(proxy.index(0, CaseResultModel::Id).data().toString(), QString("c001"));
    QCOMPARE(proxy.index(2, CaseResultModel::Id).data().toString(), QString("c000"));
    proxy.sort(CaseResultModel::Id, Qt::DescendingOrder);
    QCOMPARE(proxy.index(0, CaseResultModel::Id).data().toString(), QString("c002"));
  }
};

QTEST_MAIN(TestCaseResultModel)
#include "test_case_result_model.moc"
