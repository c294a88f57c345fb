// The ops Kiln gained for real programs (group and instance norms,
// transposed convolutions, padding modes, losses, 3-D pooling, im2col/col2im,
// QR, ...) against PyTorch 2.11: tests/data/opcorpus_wave is a corpus in the
// reference corpus' format, written on the device by its generate.py. Every
// case must pass through the eager kernels, the float64 kernels, AOT and
// decomposed graphs and Kiln's CPU code generator, and every gradient the
// corpus records must match the derivative formulas.
#include "test_support.h"

#include "compiler/aot/grad_check.h"
#include "compiler/pipeline/graph_backends.h"
#include "core/corpus/conformance.h"

using namespace kiln;

namespace {

const Corpus& wave_corpus() {
  static const Expected<Corpus> corpus = load_corpus(KILN_SOURCE_DIR "/tests/data/opcorpus_wave");
  if (!corpus.ok()) qFatal("%s", corpus.status().to_string().c_str());
  return *corpus;
}

QString failures_of(const ConformanceBackend& backend, int& passed) {
  QStringList failures;
  passed = 0;
  for (const CorpusCase& c : wave_corpus().cases) {
    CaseResult r = run_case(c, backend);
    if (r.status == CaseStatus::Pass) ++passed;
    else failures << QString::fromStdString(c.id + " " + c.op + ": " + std::string(case_status_name(r.status)) + " " + r.reason);
  }
  return failures.join("\n");
}

}  // namespace

class TestCorpusWave : public QObject {
  Q_OBJECT

 private slots:
  void corpus_is_pytorch_2_11() {
    QVERIFY(QString::fromStdString(wave_corpus().torch_version).startsWith("2.11"));
    QVERIFY(wave_corpus().cases.size() >= 83);
  }

  void backends_match_pytorch_data() {
    QTest::addColumn<QString>("backend");
    for (const char* b : {"eager", "eager-f64", "aot_eager", "decomp_eager", "kiln"}) QTest::newRow(b) << QString(b);
  }
  void backends_match_pytorch() {
    QFETCH(QString, backend);
    ConformanceBackend run = backend == "eager"       ? eager_backend()
                             : backend == "eager-f64" ? eager_f64_backend()
                             : backend == "aot_eager" ? pipeline::aot_eager_backend()
                             : backend == "decomp_eager" ? pipeline::decomp_eager_backend()
                                                         : pipeline::kiln_backend();
    int passed = 0;
    QString failures = failures_of(run, passed);
    QVERIFY2(failures.isEmpty(), qPrintable(failures));
    QCOMPARE(passed, int(wave_corpus().cases.size()));
  }

  void gradients_match_pytorch() {
    int with_grads = 0;
    QStringList failures;
    for (const CorpusCase& c : wave_corpus().cases) {
      if (c.grad_outputs.empty()) continue;
      ++with_grads;
      CaseResult r = aot::grad_check_case(c);
      if (r.status != CaseStatus::Pass) failures << QString::fromStdString(c.id + " " + c.op + ": " + r.reason);
    }
    QVERIFY2(failures.isEmpty(), qPrintable(failures.join("\n")));
    QVERIFY(with_grads >= 45);
  }
};

QTEST_GUILESS_MAIN(TestCorpusWave)
#include "test_corpus_wave.moc"
