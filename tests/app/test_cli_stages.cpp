// `kiln-cli stages`: a program's compiled regions go through to_aten and the
// graph passes, each stage printed; --stop-after N stops after the Nth pass
// application; a graph file runs the passes alone; bad input exits 3.
#include <QtTest>

#include <QTemporaryDir>

#include "test_support.h"

namespace {
QString example(const char* name) { return QStringLiteral(KILN_SOURCE_DIR "/resources/examples/") + name; }
}  // namespace

class TestCliStages : public QObject {
  Q_OBJECT
 private slots:
  void program_stages_show_aten_and_passes() {
    auto run = kiln::test::run_cli({"stages", example("e02_intro_module.py")});
    QCOMPARE(run.code, 0);
    QString out = QString::fromUtf8(run.out);
    QVERIFY(out.contains("=== [0/0] dynamo_output_graph"));
    QVERIFY(out.contains("=== [0/0] to_aten"));
    QVERIFY(out.contains("torch.ops.aten.linear.default(l_x_"));
    // The module's parameters require grad: a joint graph, split into forward and backward.
    QVERIFY(out.contains("=== [0/0] aot_joint_graph"));
    QVERIFY(out.contains("3 primals, 1 tangents"));  // weight, bias and x; x needs no gradient
    QVERIFY(out.contains("=== [0/0] aot_forward_graph"));
    QVERIFY(out.contains("=== [0/0] aot_backward_graph"));
    // linear decomposes into core ops in both graphs.
    QVERIFY(out.contains("=== [0/0] forward decompose #1"));
    QVERIFY(out.contains("torch.ops.aten.permute.default(primals_1"));
    QVERIFY(out.contains("=== [0/0] backward dce #6"));
  }

  void stop_after_stops_exactly() {
    auto run = kiln::test::run_cli({"stages", example("e02_intro_module.py"), "--stop-after", "2"});
    QCOMPARE(run.code, 0);
    QString out = QString::fromUtf8(run.out);
    QVERIFY(out.contains("canonicalize-views #2"));
    QVERIFY(!out.contains("simplify-algebra #3"));
    QVERIFY(out.contains("stopped after 2 pass application(s)"));
  }

  void graph_file_runs_the_passes() {
    QTemporaryDir dir;
    QString path = dir.filePath("g.txt");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("class GraphModule(torch.nn.Module):\n"
            "    def forward(self, x: \"f32[4]\"):\n"
            "        sin: \"f32[4]\" = torch.ops.aten.sin.default(x)\n"
            "        sin_1: \"f32[4]\" = torch.ops.aten.sin.default(x)\n"
            "        add: \"f32[4]\" = torch.ops.aten.add.Tensor(sin, sin_1)\n"
            "        return (add,)\n");
    f.close();
    auto run = kiln::test::run_cli({"stages", path, "--print-after", "cse"});
    QCOMPARE(run.code, 0);
    QString out = QString::fromUtf8(run.out);
    QVERIFY2(out.contains("=== cse #5"), run.out.constData());
    // After CSE the add reads the one sin twice.
    QVERIFY2(out.contains("torch.ops.aten.add.Tensor(sin, sin)"), run.out.constData());
  }

  void bad_input_exits_3() {
    auto missing = kiln::test::run_cli({"stages", "/nonexistent/g.txt"});
    QCOMPARE(missing.code, 3);
    QTemporaryDir dir;
    QString path = dir.filePath("bad.txt");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("class GraphModule(torch.nn.Module):\n    def forward(self, x):\n        y = = x\n");
    f.close();
    auto bad = kiln::test::run_cli({"stages", path});
    QCOMPARE(bad.code, 3);
    QVERIFY(bad.err.contains("bad.txt:3"));
  }
};

QTEST_GUILESS_MAIN(TestCliStages)
#include "test_cli_stages.moc"
