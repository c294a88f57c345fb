// `kiln-cli bench compile`: both rows of CLI.md's shape come out with real
// figures. Timings are not asserted (they depend on the machine); what is
// asserted is that the bench measured what it names.
#include <QtTest>

#include "test_support.h"

class TestCliBenchCompile : public QObject {
  Q_OBJECT
 private slots:
  void json_has_guard_check_and_capture_rows() {
    auto run = kiln::test::run_cli({"bench", "compile", "--json", "--reps", "3"});
    QVERIFY2(run.code == 0, run.err.constData());
    QJsonParseError error;
    QJsonObject doc = QJsonDocument::fromJson(run.out, &error).object();
    QVERIFY2(error.error == QJsonParseError::NoError, qPrintable(error.errorString()));
    QJsonObject guard, capture, cold, cached;
    for (const QJsonValue& r : doc["rows"].toArray()) {
      QJsonObject row = r.toObject();
      if (row["name"].toString() == "guard_check") guard = row;
      if (row["name"].toString() == "capture_100_ops") capture = row;
      if (row["name"].toString() == "seed_cpu_cold") cold = row;
      if (row["name"].toString() == "seed_cpu_cached") cached = row;
    }
    QVERIFY(!guard.isEmpty());
    QVERIFY(!capture.isEmpty());
    QVERIFY(guard["us"].toDouble() > 0);
    QVERIFY(guard["ms"].toDouble() > 0);
    QVERIFY(guard["guards"].toInt() >= 4);  // grad mode and one tensor match per argument
    QVERIFY(guard["ratio_to_ceiling"].toDouble() > 0);
    QVERIFY(capture["ms"].toDouble() > 0);
    QVERIFY(capture["eager_ms"].toDouble() > 0);
    QCOMPARE(capture["ops"].toInt(), 100);
    QVERIFY(doc["ceiling"].toObject()["us"].toDouble() > 0);
    QCOMPARE(doc["reps"].toInt(), 3);
    // The seed rows: the first fresh process compiles, the second finds its cache entry.
    QVERIFY(cold["ms"].toDouble() > 0 && cached["ms"].toDouble() > 0);
    QCOMPARE(cold["cache_hit"].toBool(), false);
    QCOMPARE(cached["cache_hit"].toBool(), true);
    QVERIFY(cold["stats"].toObject()["codegen_ms"].toDouble() > 0);
    QCOMPARE(cold["target_ms"].toDouble(), 50.0);
  }

  void text_mode_prints_a_table() {
    auto run = kiln::test::run_cli({"bench", "compile", "--reps", "1"});
    QVERIFY2(run.code == 0, run.err.constData());
    QVERIFY(run.out.contains("guard_check"));
    QVERIFY(run.out.contains("capture_100_ops"));
  }
};

QTEST_GUILESS_MAIN(TestCliBenchCompile)
#include "test_cli_bench_compile.moc"
