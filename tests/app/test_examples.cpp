// Kiln's example programs (resources/examples) against what PyTorch 2.11 did
// with them (tests/data/python, written by generate.py there): each program's
// printed numbers line for line within 1e-4 relative, `kiln-cli explain`'s
// graph count, graph break count, op count and break lines per compiled callable,
// and the recompile reasons KILN_LOGS=recompiles prints.
// A new example with its expected files is picked up without changing this file.
#include <QRegularExpression>
#include <QtTest>

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include "test_support.h"

namespace {

QString examples_dir() { return QStringLiteral(KILN_SOURCE_DIR "/resources/examples"); }
QString expected_dir() { return QStringLiteral(KILN_SOURCE_DIR "/tests/data/python"); }

QByteArray read(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) qFatal("cannot read %s", qPrintable(path));
  return f.readAll();
}

QStringList lines(const QByteArray& text) { return QString::fromUtf8(text).split('\n', Qt::SkipEmptyParts); }

// What Kiln does not do yet, by example; each is reported as an expected
// failure with its reason, never as a pass.
QString recompile_gap(const QString& name) {
  if (name == "e16_args_kwargs_main")
    return "a constant passed on to an inlined call is guarded where the call is made; PyTorch's user stack ends where the callee reads it";
  return {};
}

// The [__recompiles] lines of a run, comparable across machines: the program's
// folder and the guard comments (whose paths PyTorch truncates) removed, and
// library frames of user stacks dropped (PyTorch's are torch/nn files, Kiln's
// its own prelude).
QStringList recompile_lines(const QString& text, const QString& program_dir) {
  QStringList out;
  bool skip_code = false;
  for (QString line : text.split('\n', Qt::SkipEmptyParts)) {
    if (!line.contains("[__recompiles]")) continue;
    line.replace(program_dir, "DIR").replace("/home/dev/models", "DIR");
    if (skip_code) {
      skip_code = false;
      if (line.contains("-     ")) continue;
    }
    if (line.contains("-   File \"") && !line.contains("\"DIR/")) {
      skip_code = true;
      continue;
    }
    int comment = line.indexOf("  # ");
    if (comment >= 0) line.truncate(comment);
    out << line.trimmed();
  }
  return out;
}

QString line_gap(const QString& name, int line) {
  if (name == "e10_compile_options" && line == 12)
    return "torch._dynamo.list_backends() lists Kiln's backends, not PyTorch's (cudagraphs, openxla, tvm)";
  return {};
}

}  // namespace

class TestExamples : public QObject {
  Q_OBJECT
 private slots:
  // With each backend of the ladder eager -> aot_eager (regions lowered to ATen)
  // -> decomp_eager (and decomposed to core ATen ops): the same numbers.
  void prints_pytorch_numbers_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("backend");
    for (const QString& name : programs())
      for (const char* backend : {"eager", "aot_eager", "decomp_eager", "kiln"})
        QTest::newRow(qPrintable(name + "/" + backend)) << name << QString(backend);
  }
  void prints_pytorch_numbers() {
    QFETCH(QString, name);
    QFETCH(QString, backend);
    auto run = kiln::test::run_cli({"run", "--backend", backend, examples_dir() + "/" + name + ".py"});
    QVERIFY2(run.code == 0, run.err.constData());
    // Backend kiln runs generated code: a region left on the eager kernels is
    // a failure of this test, except the two known gaps below.
    if (backend == "kiln") {
      QString err = run.err;
      // Training-mode batch norm updates its running statistics in place; until
      // functionalization returns them as outputs, such regions stay on the eager kernels.
      err.remove(QRegularExpression("W kiln kiln: \\[[0-9/]+\\] not decomposed and runs on the eager kernels: training-mode batch norm[^\n]*\n"));
      // A tensor made from Python data inside a region (torch.tensor([...])) has no ATen form yet.
      err.remove(QRegularExpression("W kiln kiln: \\[[0-9/]+\\] runs with the eager kernels: lowering to ATen: [^\n]*torch.tensor data[^\n]*\n"));
      QVERIFY2(!err.contains("eager kernels"), run.err.constData());
    }
    // PyTorch's inductor run is AOTAutograd's too: its outputs' grad_fn is
    // CompiledFunctionBackward, as with Kiln's aot_eager and decomp_eager. The
    // eager backend compares with PyTorch's eager-backend run where the two differ.
    QString eager = expected_dir() + "/" + name + ".eager.stdout";
    bool eager_run = backend == "eager" && QFile::exists(eager);
    QStringList want = lines(read(eager_run ? eager : expected_dir() + "/" + name + ".stdout"));
    QStringList got = lines(run.out);
    QCOMPARE(got.size(), want.size());
    for (int i = 0; i < want.size(); ++i) {
      QString gap = line_gap(name, i + 1);
      if (!gap.isEmpty()) QEXPECT_FAIL("", qPrintable(gap), Continue);
      QVERIFY2(kiln::test::same_printed_line(got[i], want[i]), qPrintable(QString("line %1: %2\n   PyTorch: %3").arg(i + 1).arg(got[i], want[i])));
    }
  }

  void recompiles_match_dynamo_data() { add_rows(); }
  void recompiles_match_dynamo() {
    QFETCH(QString, name);
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("KILN_LOGS", "recompiles");
    auto run = kiln::test::run_cli({"run", examples_dir() + "/" + name + ".py"}, 300000, env);
    QVERIFY2(run.code == 0, run.err.constData());
    // The eager backend's reasons where inductor adds guards of its own (e09's <= 4096).
    QString eager = expected_dir() + "/" + name + ".recompiles.eager.txt";
    QStringList want = recompile_lines(QString::fromUtf8(read(QFile::exists(eager) ? eager : expected_dir() + "/" + name + ".recompiles.txt")), "DIR");
    QStringList got = recompile_lines(QString::fromUtf8(run.err), examples_dir());
    QString gap = recompile_gap(name);
    if (!gap.isEmpty()) QEXPECT_FAIL("", qPrintable(gap), Abort);
    QVERIFY2(got == want, qPrintable("Kiln:\n" + got.join('\n') + "\nPyTorch:\n" + want.join('\n')));
  }

  void explain_matches_dynamo_data() { add_rows(); }
  void explain_matches_dynamo() {
    QFETCH(QString, name);
    auto run = kiln::test::run_cli({"explain", "--json", examples_dir() + "/" + name + ".py"});
    QVERIFY2(run.code == 0, run.err.constData());
    QJsonArray got = QJsonDocument::fromJson(run.out).object()["functions"].toArray();
    QJsonArray want = QJsonDocument::fromJson(read(expected_dir() + "/" + name + ".explain.json")).object()["functions"].toArray();
    int g = 0;
    for (const QJsonValue& wv : want) {
      QJsonObject w = wv.toObject();
      if (w["disabled"].toBool()) continue;  // torch.compile(disable=True) compiles nothing
      QVERIFY2(g < got.size(), qPrintable("Kiln reports no callable for " + w["name"].toString()));
      QJsonObject k = got[g++].toObject();
      QString who = name + ": " + w["name"].toString();
      QCOMPARE(k["name"].toString(), w["name"].toString());
      for (const char* key : {"graph_count", "graph_break_count", "op_count"})
        QVERIFY2(k[key].toInt() == w[key].toInt(),
                 qPrintable(QString("%1 %2: Kiln %3, PyTorch %4").arg(who, key).arg(k[key].toInt()).arg(w[key].toInt())));
      QJsonArray kb = k["break_reasons"].toArray(), wb = w["break_reasons"].toArray();
      QVERIFY2(kb.size() == wb.size(), qPrintable(QString("%1: %2 break reasons, PyTorch %3").arg(who).arg(kb.size()).arg(wb.size())));
      for (int i = 0; i < wb.size(); ++i) QCOMPARE(kb[i].toObject()["line"].toInt(), wb[i].toObject()["line"].toInt());
    }
    QCOMPARE(g, got.size());
  }

  // Issue 5's training example: two SGD steps of a ResNet-18 give the same
  // losses with every backend (1e-5 relative, the bar) and PyTorch's
  // printed figures (1e-4). PyTorch 2.11 on CPU printed, for this program:
  //   step 0 loss 6.834287166595459 / step 1 loss 4.74453067779541
  //   fc.weight.grad norm 10.456981658935547 / bn1 running_mean sum -0.020516974851489067
  //   params 11689512
  void resnet18_training_steps() {
    const QStringList pytorch = {"step 0 loss 6.834287166595459", "step 1 loss 4.74453067779541",
                                 "fc.weight.grad norm 10.456981658935547",
                                 "bn1 running_mean sum -0.020516974851489067", "params 11689512"};
    QStringList eager;
    for (const char* backend : {"eager", "aot_eager", "decomp_eager", "kiln"}) {
      auto run = kiln::test::run_cli({"run", "--backend", backend, examples_dir() + "/resnet18_train.py"});
      QVERIFY2(run.code == 0, run.err.constData());
      QStringList got = lines(run.out);
      QCOMPARE(got.size(), pytorch.size());
      for (int i = 0; i < got.size(); ++i)
        QVERIFY2(kiln::test::same_printed_line(got[i], pytorch[i]), qPrintable(backend + (": " + got[i])));
      if (eager.isEmpty()) eager = got;
      for (int i = 0; i < 2; ++i)
        QVERIFY2(kiln::test::same_printed_line(got[i], eager[i], 1e-5), qPrintable(got[i] + " vs eager " + eager[i]));
    }
  }

 private:
  // The examples that have PyTorch's expectations (one PyTorch has not run yet is left out).
  static QStringList programs() {
    QStringList out;
    for (const QString& p : QDir(examples_dir()).entryList({"*.py"}, QDir::Files, QDir::Name))
      if (QFile::exists(expected_dir() + "/" + p.chopped(3) + ".stdout")) out << p.chopped(3);
    if (out.isEmpty()) qFatal("no examples with expectations in %s", qPrintable(expected_dir()));
    return out;
  }
  static void add_rows() {
    QTest::addColumn<QString>("name");
    for (const QString& name : programs()) QTest::newRow(qPrintable(name)) << name;
  }
};

QTEST_GUILESS_MAIN(TestExamples)
#include "test_examples.moc"
