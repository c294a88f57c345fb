// `kiln-cli bench scale` on small sizes: a row per graph and size, each
// measured by a real `stages` child (time and peak memory above zero), the
// growth exponent between neighbouring sizes. Timings are not asserted.
#include <QtTest>

#include "test_support.h"

class TestCliBenchScale : public QObject {
  Q_OBJECT
 private slots:
  void json_has_a_row_per_graph_and_size() {
    auto run = kiln::test::run_cli({"bench", "scale", "--sizes", "30,300", "--reps", "1", "--json"});
    QVERIFY2(run.code == 0, run.err.constData());
    QJsonParseError error;
    QJsonObject doc = QJsonDocument::fromJson(run.out, &error).object();
    QVERIFY2(error.error == QJsonParseError::NoError, qPrintable(error.errorString()));
    QJsonArray rows = doc["rows"].toArray();
    QCOMPARE(rows.size(), 4);
    QStringList seen;
    for (const QJsonValue& r : rows) {
      QJsonObject row = r.toObject();
      seen << row["graph"].toString() + "/" + QString::number(row["nodes"].toInt());
      QVERIFY(row["seconds"].toDouble() > 0);
      QVERIFY(row["peak_bytes"].toDouble() > 1e6);  // a real process, not a stub
      QCOMPARE(row.contains("growth_exponent"), row["nodes"].toInt() == 300);
      if (row["nodes"].toInt() == 300) QCOMPARE(row["target_exponent"].toDouble(), 1.2);
    }
    QCOMPARE(seen, QStringList({"chain/30", "chain/300", "diamond/30", "diamond/300"}));
    QVERIFY(doc.contains("meets_targets"));
  }

  void sizes_below_three_are_a_usage_error() {
    auto run = kiln::test::run_cli({"bench", "scale", "--sizes", "2", "--reps", "1"});
    QCOMPARE(run.code, 2);  // below the smallest size the option takes
  }
};

QTEST_GUILESS_MAIN(TestCliBenchScale)
#include "test_cli_bench_scale.moc"
