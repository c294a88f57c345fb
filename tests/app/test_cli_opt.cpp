// `kiln-cli opt`: errors and --verify-numerics failing on a pass result that
// computes something else. The passes' own results are checked by the golden
// files in tests/golden/passes (FileCheck, one CTest each).
#include <QtTest>
#include <QTemporaryDir>

#include "test_support.h"

namespace {
// A graph file in `dir`, for one test.
QString write_graph(const QTemporaryDir& dir, const QByteArray& text) {
  QFile f(dir.filePath("g.txt"));
  if (!f.open(QIODevice::WriteOnly)) qFatal("cannot write %s", qPrintable(f.fileName()));
  f.write(text);
  return f.fileName();
}
}  // namespace

class TestCliOpt : public QObject {
  Q_OBJECT
 private slots:
  void unknown_pass_is_a_usage_error_listing_the_passes() {
    QTemporaryDir dir;
    const QString path = write_graph(dir, "class GraphModule(torch.nn.Module):\n    def forward(self, x: \"f32[4]\"):\n"
            "        sin: \"f32[4]\" = torch.ops.aten.sin.default(x)\n        return (sin,)\n");
    auto r = kiln::test::run_cli({"opt", path, "--pass", "fusion"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("unknown pass 'fusion'") && r.err.contains("cse"), r.err.constData());
  }

  void a_case_that_does_not_parse_names_its_line() {
    QTemporaryDir dir;
    const QString path = write_graph(dir, "class GraphModule(torch.nn.Module):\n    def forward(self, x: \"f32[4]\"):\n"
            "        sin: \"f32[4]\" = torch.ops.aten.sin.default(x)\n        return (sin,)\n# -----\n"
            "class GraphModule(torch.nn.Module):\n    def forward(self, x: \"f32[4]\"):\n        y = = x\n");
    auto r = kiln::test::run_cli({"opt", path, "--pass", "dce", "--split-input-file"});
    QCOMPARE(r.code, 3);
    QVERIFY2(r.err.contains("g.txt:8"), r.err.constData());
  }

  // A graph whose two runs cannot agree (a random op) shows that the check compares.
  void verify_numerics_reports_a_difference() {
    QTemporaryDir dir;
    const QString path = write_graph(dir, "class GraphModule(torch.nn.Module):\n    def forward(self, x: \"f32[64]\"):\n"
            "        bernoulli: \"f32[64]\" = torch.ops.aten.bernoulli.p(x, 0.5)\n        return (bernoulli,)\n");
    auto r = kiln::test::run_cli({"opt", path, "--pass", "dce", "--verify-numerics"});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("numerics differ after the passes"), r.err.constData());
  }
};

QTEST_GUILESS_MAIN(TestCliOpt)
#include "test_cli_opt.moc"
