// `kiln-cli numerics` (docs/cli.md): the numerics ladder from the command
// line, on a reference trace (every rung within tolerance, exit 0), on the
// bundled example with relu miscompiled on purpose (the kiln rung diverges at
// relu, exit 1), on PyTorch repro files and Dynamo graphs, and on a compile id that is not there
// (exit 2, naming the ones that are).
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include "test_support.h"

class TestCliNumerics : public QObject {
  Q_OBJECT

  static QString trace(const char* name) { return QString::fromStdString(kiln::test::reference_dir()) + "/traces/" + name; }
  static QString example() { return QString(KILN_SOURCE_DIR) + "/resources/examples/workbench_demo.py"; }

 private slots:
  void traceStageWithinTolerance() {
    auto run = kiln::test::run_cli({"numerics", trace("s02_linear_relu"), "--compile-id", "0/0", "--stage", "aot_forward_graph"});
    QVERIFY2(run.code == 0, run.err.constData());
    QVERIFY(run.out.contains("numerics of [0/0] aot_forward_graph"));
    QVERIFY(run.out.contains("relu "));
    QVERIFY(run.out.contains("result: every node within 0.0001 on every rung"));
  }

  void injectedBugDivergesOnTheKilnRung() {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("KILN_INJECT_BUG", "relu:accuracy");
    auto run = kiln::test::run_cli({"numerics", example(), "--compile-id", "0/0", "--stage", "aot_forward_graph", "--json"},
                                   300000, env);
    QCOMPARE(run.code, 1);
    QJsonObject doc = QJsonDocument::fromJson(run.out).object();
    QCOMPARE(doc["first_divergent_rung"].toString(), QString("kiln"));
    QString divergent = doc["first_divergent"].toString();
    QJsonObject relu;
    for (const QJsonValue& row : doc["rows"].toArray())
      if (row.toObject()["node"].toString() == divergent) relu = row.toObject();
    QCOMPARE(relu["target"].toString(), QString("aten::relu.default"));
    // The eager rungs agree with float64; only Kiln's generated code is off.
    QVERIFY(relu["rel"].toObject()["eager"].toDouble() < 1e-4);
    QVERIFY(relu["rel"].toObject()["kiln"].toDouble() > 1e-2);
  }

  // Issue 25, point 8: counts and shares, not a bare relative error. relu's
  // 256 elements are all over on kiln and none on eager; its worst elements
  // carry 2-d indices; the error rule is stated.
  void injectedBugCountsElementsOverTheTolerance() {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("KILN_INJECT_BUG", "relu:accuracy");
    auto run = kiln::test::run_cli({"numerics", example(), "--compile-id", "0/0", "--stage", "aot_joint_graph", "--json"},
                                   300000, env);
    QCOMPARE(run.code, 1);
    QJsonObject doc = QJsonDocument::fromJson(run.out).object();
    QVERIFY(doc["error_rule"].toString().contains("largest finite |value| of either tensor"));
    QJsonObject relu;
    for (const QJsonValue& row : doc["rows"].toArray())
      if (row.toObject()["node"].toString() == "relu") relu = row.toObject();
    QCOMPARE(relu["elements"].toInt(), 256);
    QCOMPARE(relu["dtype"].toString(), QString("float32"));
    QCOMPARE(relu["over"].toObject()["kiln"].toInt(), 256);
    QCOMPARE(relu["over"].toObject()["eager"].toInt(), 0);
    QCOMPARE(relu["share"].toObject()["kiln"].toDouble(), 1.0);
    const QJsonObject kiln = relu["errors"].toObject()["kiln"].toObject();
    const QJsonArray worst = kiln["worst"].toArray();
    QCOMPARE(worst.size(), 10);
    QCOMPARE(worst[0].toObject()["index"].toArray().size(), 2);
    for (int i = 1; i < worst.size(); ++i)
      QVERIFY(worst[i - 1].toObject()["error"].toDouble() >= worst[i].toObject()["error"].toDouble());
    qint64 counted = 0;
    for (const QJsonValue& b : kiln["histogram"].toArray()) counted += b.toObject()["count"].toInteger();
    QCOMPARE(counted, 256);

    auto text = kiln::test::run_cli({"numerics", example(), "--compile-id", "0/0", "--stage", "aot_joint_graph"}, 300000, env);
    QVERIFY2(text.out.contains("first over the tolerance on rung kiln: 256 of 256 elements (100%) over"), text.out.constData());
    QVERIFY2(text.out.contains("256/256 (100%) kiln  <- first divergent"), text.out.constData());
  }

  // A PyTorch repro.py: its forward() is annotated only through load_args, and
  // every node is still measured on every rung (the sizes follow from the inputs).
  void pytorchReproIsMeasuredNodeByNode() {
    const QString repro = QString::fromStdString(kiln::test::reference_dir()) + "/minifier/accuracy_cpu/repro.py";
    auto run = kiln::test::run_cli({"numerics", repro, "--compile-id", "repro", "--stage", "repro", "--json"});
    QVERIFY2(run.code == 0 || run.code == 1, run.err.constData());
    QJsonObject doc = QJsonDocument::fromJson(run.out).object();
    const QJsonArray rows = doc["rows"].toArray();
    QVERIFY2(rows.size() >= 20, run.out.constData());
    int measured_on_kiln = 0;
    for (const QJsonValue& row : rows) {
      QVERIFY(row.toObject()["rel"].toObject().contains("eager"));
      measured_on_kiln += row.toObject()["rel"].toObject().contains("kiln");
    }
    QVERIFY2(measured_on_kiln >= 15, run.out.constData());
  }

  // A dynamic-shape repro reads a SymInt and a constant of Repro.__init__,
  // and a trace's Dynamo graph calls torch functions: both are measured as
  // `repro run` replays them (SymInts at their recorded values, the Dynamo
  // graph lowered to ATen by Kiln), and a note says so.
  void symbolicReproAndDynamoGraphAreMeasuredAsReplayed() {
    const QString repro = QString(KILN_SOURCE_DIR) + "/tests/data/repros/symint_constant_repro.py";
    auto run = kiln::test::run_cli({"numerics", repro, "--compile-id", "symint_constant_repro", "--stage", "repro", "--json"});
    QVERIFY2(run.code == 0, run.err.constData());
    QJsonObject doc = QJsonDocument::fromJson(run.out).object();
    QStringList nodes;
    for (const QJsonValue& row : doc["rows"].toArray()) nodes << row.toObject()["node"].toString();
    QCOMPARE(nodes, (QStringList{"view", "add", "mul_1"}));
    QVERIFY2(doc["notes"].toArray().first().toString().contains("its SymInts at the values the file recorded"), run.out.constData());

    auto dynamo = kiln::test::run_cli({"numerics", trace("s02_linear_relu"), "--compile-id", "0/0", "--stage", "dynamo_output_graph", "--json"});
    QVERIFY2(dynamo.code == 0, dynamo.err.constData());
    doc = QJsonDocument::fromJson(dynamo.out).object();
    QStringList targets;
    for (const QJsonValue& row : doc["rows"].toArray()) targets << row.toObject()["target"].toString();
    QVERIFY2(targets.contains("aten::relu.default"), dynamo.out.constData());
    QVERIFY2(doc["notes"].toArray().first().toString().contains("lowered to ATen by Kiln"), dynamo.out.constData());
  }

  void unknownCompileIdIsAUsageError() {
    auto run = kiln::test::run_cli({"numerics", example(), "--compile-id", "9/9", "--stage", "aot_forward_graph"});
    QCOMPARE(run.code, 2);
    QVERIFY(run.err.contains("has no compile id 9/9 (it has: "));
  }
};

QTEST_GUILESS_MAIN(TestCliNumerics)
#include "test_cli_numerics.moc"
