// `kiln-cli stages`: a program's compiled regions go through to_aten and the
// graph passes, each stage printed; --stop-after N stops after the Nth pass
// application; a graph file runs the passes alone; a TORCH_TRACE log runs each
// compile id's ATen graph (a joint graph through Kiln's partitioner); bad input
// exits 3.
#include <algorithm>
#include <QtTest>

#include <QTemporaryDir>

#include "test_support.h"

namespace {
QString example(const char* name) { return QStringLiteral(KILN_SOURCE_DIR "/resources/examples/") + name; }

// The folder of one reference TORCH_TRACE scenario; empty when the reference
// data is not there (the caller skips: these cases need PyTorch's own logs).
QString reference_trace(const char* scenario) {
  QByteArray env = qgetenv("KILN_REFERENCE_DIR");
  QString dir = env.isEmpty() ? QStringLiteral(KILN_DEFAULT_REFERENCE_DIR) : QString::fromUtf8(env);
  if (!QFileInfo::exists(dir + "/README.md")) return {};
  return QString::fromStdString(kiln::test::reference_dir()) + "/traces/" + scenario;
}

// The one log file of a reference scenario.
QString reference_log(const QString& folder) {
  QStringList logs = QDir(folder).entryList({"*.log"}, QDir::Files);
  return logs.size() == 1 ? folder + "/" + logs[0] : QString();
}

// The stage header lines ("=== ...") of a stages run, without timings.
QStringList headers(const QByteArray& out) {
  QStringList h;
  static const QRegularExpression time("  [0-9.]+ ms");
  for (const QString& line : QString::fromUtf8(out).split('\n'))
    if (line.startsWith("=== ")) h << QString(line).remove(time);
  return h;
}
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
    // Pass numbers are not fixed (passes get added): match any application number.
    QVERIFY(out.contains(QRegularExpression(R"(=== \[0/0\] forward decompose #\d+ )")));
    QVERIFY(out.contains("torch.ops.aten.permute.default(primals_1"));
    QVERIFY(out.contains(QRegularExpression(R"(=== \[0/0\] backward dce #\d+ )")));
  }

  // A region with a no_grad block trains on its torch-level graph (autodiff of
  // the whole graph would differentiate the block): stages says so instead of
  // showing a joint graph the runtime does not use.
  void a_region_that_changes_grad_mode_has_no_joint_graph() {
    QTemporaryDir dir;
    const QString path = dir.filePath("no_grad_block.py");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("import torch\nimport torch.nn as nn\n"
            "class M(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.lin = nn.Linear(4, 4)\n"
            "        self.register_buffer('stat', torch.zeros(4))\n"
            "    def forward(self, x):\n"
            "        h = self.lin(x)\n"
            "        with torch.no_grad():\n"
            "            self.stat.mul_(0.9).add_(h.mean(0))\n"
            "        return h.relu()\n"
            "m = torch.compile(M())\n"
            "m(torch.randn(2, 4)).sum().backward()\n");
    f.close();
    auto run = kiln::test::run_cli({"stages", path});
    QCOMPARE(run.code, 0);
    QString out = QString::fromUtf8(run.out);
    QVERIFY2(out.contains("aot_joint_graph  skipped: grad mode changes inside the region"), run.out.constData());
    QVERIFY(!out.contains("=== [0/0] aot_forward_graph"));
  }

  // Issue 5's training example: the joint graph of the whole ResNet-18, what
  // the partitioner saves, and the decomposed forward and backward.
  void resnet18_training_stages() {
    auto run = kiln::test::run_cli({"stages", example("resnet18_train.py"), "--print-after", "aot_forward_graph"});
    QCOMPARE(run.code, 0);
    QString out = QString::fromUtf8(run.out);
    // Dynamo's graph of torchvision's resnet18 forward, as PyTorch 2.11 traced it (s05's trace).
    QVERIFY(out.contains("=== [0/0] dynamo_output_graph  0.000 ms  213 nodes, 89 ops"));
    // 62 parameters and 60 running statistics + the input; the loss's one tangent.
    QVERIFY(out.contains(QRegularExpression(R"(=== \[0/0\] aot_joint_graph .* 123 primals, 1 tangents)")));
    QVERIFY(out.contains(QRegularExpression(R"(=== \[0/0\] aot_forward_graph .*default partition, saves \d+ tensor\(s\))")));
    QVERIFY(out.contains("conv2d: float32[4, 64, 32, 32] (1048576 bytes)"));  // the stem's output, saved
    QVERIFY(out.contains(QRegularExpression(R"(=== \[0/0\] forward decompose #\d+ .*decomposed \d+ node)")));
    QVERIFY(out.contains(QRegularExpression(R"(=== \[0/0\] backward decompose #\d+ .*decomposed \d+ node)")));
    QVERIFY(out.contains("torch.ops.aten.conv2d.default(primals_"));
  }

  void stop_after_stops_exactly() {
    auto run = kiln::test::run_cli({"stages", example("e02_intro_module.py"), "--stop-after", "2"});
    QCOMPARE(run.code, 0);
    QString out = QString::fromUtf8(run.out);
    // Every forward and backward (two per compiled region) runs exactly two pass applications.
    qsizetype stops = out.count("stopped after 2 pass application(s)");
    QVERIFY(stops >= 2 && stops % 2 == 0);
    QCOMPARE(headers(run.out).filter(QRegularExpression(R"( #2  )")).size(), stops);
    QVERIFY(!out.contains(QRegularExpression(R"( #3 )")));
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
    QVERIFY2(out.contains(QRegularExpression(R"(=== cse #\d+ )")), run.out.constData());
    // After CSE the add reads the one sin twice.
    QVERIFY2(out.contains("torch.ops.aten.add.Tensor(sin, sin)"), run.out.constData());
  }

  // Machine code: a small graph gets it (the LLVM stages' headers), `never`
  // leaves it out, and past 500 fused kernels `auto` says why it is left out;
  // texts are printed only when asked for.
  void codegen_stages_follow_the_codegen_option() {
    QTemporaryDir dir;
    auto write = [&](const QString& name, int diamonds) {
      QByteArray text = "class GraphModule(torch.nn.Module):\n    def forward(self, x: \"f32[8]\"):\n";
      QByteArray last = "x";
      for (int i = 0; i < diamonds; ++i) {
        QByteArray n = QByteArray::number(i);
        text += "        s" + n + ": \"f32[8]\" = torch.ops.aten.sin.default(" + last + ")\n";
        text += "        c" + n + ": \"f32[8]\" = torch.ops.aten.cos.default(" + last + ")\n";
        text += "        a" + n + ": \"f32[8]\" = torch.ops.aten.add.Tensor(s" + n + ", c" + n + ")\n";
        last = "a" + n;
      }
      text += "        return (" + last + ",)\n";
      QFile f(dir.filePath(name));
      if (!f.open(QIODevice::WriteOnly)) return QString();
      f.write(text);
      return f.fileName();
    };
    const QString small = write("small.txt", 2), large = write("large.txt", 6000);
    QVERIFY(!small.isEmpty() && !large.isEmpty());

    auto plain = kiln::test::run_cli({"stages", small, "--print-after", "none"});
    QCOMPARE(plain.code, 0);
    QStringList h = headers(plain.out);
    QVERIFY2(h.contains("=== llvm_ir") && h.contains("=== llvm_ir_optimized"), qPrintable(h.join('\n')));
    QVERIFY2(std::any_of(h.begin(), h.end(), [](const QString& l) { return l.startsWith("=== assembly  object "); }),
             qPrintable(h.join('\n')));
    QVERIFY2(!plain.out.contains("define "), "the LLVM IR printed without being asked for");

    auto asked = kiln::test::run_cli({"stages", small, "--print-after", "llvm_ir"});
    QCOMPARE(asked.code, 0);
    QVERIFY2(asked.out.contains("define ") && asked.out.contains("=== llvm_ir  "), asked.out.constData());

    auto never = kiln::test::run_cli({"stages", small, "--print-after", "none", "--codegen", "never"});
    QCOMPARE(never.code, 0);
    QVERIFY2(headers(never.out).contains("=== machine code  not generated (--codegen never)"), never.out.constData());
    QVERIFY(!headers(never.out).contains("=== llvm_ir"));

    auto big = kiln::test::run_cli({"stages", large, "--print-after", "none"});
    QCOMPARE(big.code, 0);
    const QString last = headers(big.out).last();
    QVERIFY2(last.startsWith("=== machine code  not generated: ") && last.contains("(over 500;") &&
                 last.contains("--codegen always generates it"),
             qPrintable(last));
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

  // s02 (nn.Linear + relu, training): the joint graph from the log goes through
  // Kiln's partitioner. Sizes of PyTorch's graphs as `trace summary` counts them
  // (every node, placeholders and output included), from the reference log.
  void trace_joint_graph_is_partitioned() {
    QString trace = reference_trace("s02_linear_relu");
    if (trace.isEmpty()) QSKIP("reference data not found (KILN_REFERENCE_DIR): the case needs PyTorch's trace of s02");
    auto run = kiln::test::run_cli({"stages", trace, "--print-after", "cse"});
    QCOMPARE(run.code, 0);
    QStringList h = headers(run.out);
    QString all = h.join('\n');
    // PyTorch's stages first, as the log has them; Kiln's pipeline starts from the joint graph.
    QVERIFY2(h.size() > 4 && h[0].startsWith("=== [0/0] dynamo_output_graph  from the trace: 6 nodes, 2 ops"), qPrintable(all));
    const qsizetype joint = h.indexOf(QRegularExpression(R"(^=== \[0/0\] aot_joint_graph  from the trace: 19 nodes, 14 ops.*)"));
    QVERIFY2(joint > 0 && h[joint].contains("Kiln's pipeline starts here: 3 primals, 1 tangents"), qPrintable(all));
    QVERIFY2(h.indexOf(QRegularExpression(R"(^=== \[0/0\] aot_forward_graph  from the trace: 8 nodes, 4 ops.*)")) > joint, qPrintable(all));
    // Kiln's split, after all of PyTorch's stages, beside PyTorch's sizes.
    const qsizetype forward = h.indexOf(QRegularExpression(R"(^=== \[0/0\] kiln aot_forward_graph .*)"));
    QVERIFY2(forward > joint && h[forward].contains("PyTorch's: 8 nodes, 4 ops"), qPrintable(all));
    QVERIFY2(h.filter(QRegularExpression(R"(from the trace)")).size() == forward, qPrintable(all));
    // The backward half after the forward's passes and code, as in the workbench's stage list.
    const QStringList backward = h.filter(QRegularExpression(R"(^=== \[0/0\] kiln aot_backward_graph )"));
    QVERIFY2(backward.size() == 1 && backward[0].contains("PyTorch's: 10 nodes, 6 ops"), qPrintable(all));
    const qsizetype forward_dce = h.indexOf(QRegularExpression(R"(^=== \[0/0\] kiln forward dce #.*)"));
    QVERIFY2(forward_dce > forward && h.indexOf(backward[0]) > forward_dce, qPrintable(all));
    // Each half through the passes, each ending with its size before and after.
    static const QRegularExpression result(R"(^=== \[0/0\] kiln (forward|backward) result  (\d+) nodes, \d+ ops \(input (\d+) nodes)");
    int results = 0;
    for (const QString& line : h)
      if (auto m = result.match(line); m.hasMatch()) {
        ++results;
        QVERIFY2(m.captured(2).toInt() > 3 && m.captured(3).toInt() > 3, qPrintable(line));
      }
    QCOMPARE(results, 2);
    QCOMPARE(h.filter(QRegularExpression(R"(^=== \[0/0\] kiln forward decompose #\d+ )")).size(), 1);
    // The joint graph's record is named by its log line.
    QVERIFY2(h[joint].contains(".log:896)"), qPrintable(h[joint]));
  }

  // s04 (recompiles, symbolic sizes s77): one compile id and one stage; the
  // inference graph sizes are PyTorch's, from the log.
  void trace_one_compile_id_and_stage() {
    QString trace = reference_trace("s04_recompiles");
    if (trace.isEmpty()) QSKIP("reference data not found (KILN_REFERENCE_DIR): the case needs PyTorch's trace of s04");
    auto run = kiln::test::run_cli(
        {"stages", trace, "--compile-id", "0/4", "--stage", "aot_inference_graph", "--print-after", "aot_inference_graph"});
    QCOMPARE(run.code, 0);
    QStringList h = headers(run.out);
    const QStringList inference = h.filter(QRegularExpression(R"(^=== \[0/4\] aot_inference_graph  from the trace: 24 nodes, 20 ops)"));
    QVERIFY2(inference.size() == 1 && inference[0].contains("Kiln's pipeline starts here"), qPrintable(h.join('\n')));
    QStringList result = h.filter(QRegularExpression(R"(^=== \[0/4\] kiln result  )"));
    QCOMPARE(result.size(), 1);
    QVERIFY(result[0].contains("(input 24 nodes, 20 ops)"));
    // A symbolic size (arg0_1 is the SymInt s77): no code, and the line says why.
    QVERIFY2(h.last().startsWith("=== [0/4] kiln codegen  not generated: ") && h.last().contains("arg0_1"), qPrintable(h.last()));
    QVERIFY(h.filter("[0/3]").isEmpty());
    QVERIFY(QString::fromUtf8(run.out).contains("f32[s77, 8]"));  // a symbolic size, as the log has it
  }

  // s03 (graph breaks, then the same functions under backend="eager"): every
  // compile id with a graph; the eager ones have a Dynamo graph alone, which Kiln lowers.
  void trace_every_compile_id() {
    QString trace = reference_trace("s03_graph_breaks");
    if (trace.isEmpty()) QSKIP("reference data not found (KILN_REFERENCE_DIR): the case needs PyTorch's trace of s03");
    auto run = kiln::test::run_cli({"stages", trace, "--print-after", "none"});
    QCOMPARE(run.code, 0);
    QStringList h = headers(run.out);
    QCOMPARE(h.filter(QRegularExpression(R"(^=== \[\d+/0\] aot_inference_graph  )")).size(), 8);
    QCOMPARE(h.filter(QRegularExpression(R"(^=== \[\d+/0\] aot_joint_graph  )")).size(), 3);
    // The compile ids with a Dynamo graph alone: Kiln lowers it to ATen itself.
    QStringList lowered = h.filter(QRegularExpression(
        R"(^=== \[\d+/0#\d\] dynamo_output_graph  .*Kiln's pipeline starts here, from its own lowering of this torch-level graph to ATen)"));
    QCOMPARE(lowered.size(), 11);
    QVERIFY(h.filter("skipped").isEmpty());
    // A torch-level stage asked for by name is lowered and compiled as well.
    auto dyn = kiln::test::run_cli({"stages", trace, "--compile-id", "2/0", "--stage", "dynamo_output_graph"});
    QCOMPARE(dyn.code, 0);
    QVERIFY2(dyn.out.contains("from its own lowering of this torch-level graph to ATen"), dyn.out.constData());
    QVERIFY2(dyn.out.contains("kiln result  "), dyn.out.constData());
  }

  void trace_bad_arguments() {
    QString trace = reference_trace("s01_sin_cos");
    if (trace.isEmpty()) QSKIP("reference data not found (KILN_REFERENCE_DIR): the case needs PyTorch's trace of s01");
    auto no_id = kiln::test::run_cli({"stages", trace, "--compile-id", "7/7"});
    QCOMPARE(no_id.code, 3);
    QVERIFY2(no_id.err.contains("no compile id '7/7'") && no_id.err.contains("0/1"), no_id.err.constData());
    auto no_stage = kiln::test::run_cli({"stages", trace, "--compile-id", "0/0", "--stage", "aot_joint_graph"});
    QCOMPARE(no_stage.code, 3);
    QVERIFY2(no_stage.err.contains("aot_inference_graph"), no_stage.err.constData());  // says what there is
    auto not_trace = kiln::test::run_cli({"stages", example("e02_intro_module.py"), "--compile-id", "0/0"});
    QCOMPARE(not_trace.code, 2);
  }

  // A log cut short inside the joint graph's payload, and one that is garbage:
  // each gives a message naming the file (and the line), never a crash.
  void damaged_trace_is_reported() {
    QString trace = reference_trace("s02_linear_relu");
    if (trace.isEmpty()) QSKIP("reference data not found (KILN_REFERENCE_DIR): the case needs PyTorch's trace of s02");
    QFile src(reference_log(trace));
    QVERIFY(src.open(QIODevice::ReadOnly));
    QList<QByteArray> lines = src.readAll().split('\n');
    QVERIFY(lines.size() > 920);
    QTemporaryDir dir;
    QString cut = dir.filePath("dedicated_log_torch_trace_cut.log");
    QFile f(cut);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(lines.mid(0, 915).join('\n'));  // line 896 starts the joint graph record; its payload stops at a node
    f.close();
    auto run = kiln::test::run_cli({"stages", cut, "--print-after", "none"});
    QCOMPARE(run.code, 3);
    QVERIFY2(run.err.contains("dedicated_log_torch_trace_cut.log:"), run.err.constData());
    QVERIFY2(QString::fromUtf8(run.out).contains(QRegularExpression(
                 R"(=== \[0/0\] aot_joint_graph  from the trace: .*Kiln's pipeline cannot start here: does not parse)")),
             run.out.constData());
    QVERIFY(run.out.contains("=== [0/0] dynamo_output_graph"));  // the graphs before the damage still show

    QString garbled = dir.filePath("dedicated_log_torch_trace_garbled.log");
    QFile g(garbled);
    QVERIFY(g.open(QIODevice::WriteOnly));
    g.write(QByteArray("\x01\x02 not a log\n{\"dynamo_output_graph\": \n\tclass GraphModule(\n", 52));
    g.close();
    auto bad = kiln::test::run_cli({"stages", garbled});
    QCOMPARE(bad.code, 3);
    QVERIFY2(bad.err.contains("dedicated_log_torch_trace_garbled.log"), bad.err.constData());
  }
};

QTEST_GUILESS_MAIN(TestCliStages)
#include "test_cli_stages.moc"
