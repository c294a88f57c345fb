// `kiln-cli run` and `kiln-cli explain` on the reference programs: the numbers
// PyTorch 2.11 printed (logs/<scenario>/stdout.log) and explain's counts.
#include <QtTest>

#include <QDir>
#include <QElapsedTimer>
#include <QTemporaryDir>

#include <cmath>

#include "test_support.h"

namespace {

QString program(const char* name) { return QString::fromStdString(kiln::test::reference_dir() + "/programs/" + name); }

QStringList lines(const QByteArray& text) { return QString::fromUtf8(text).split('\n', Qt::SkipEmptyParts); }

}  // namespace

namespace {

// A program that once ran unbounded, and what its error must say.
struct ProgramCase {
  const char* name;
  const char* source;
  const char* expect;
};

QString write_program(const QTemporaryDir& dir, const char* name, const char* source) {
  QFile f(dir.filePath(name));
  if (!f.open(QIODevice::WriteOnly)) qFatal("cannot write %s", name);
  f.write(source);
  return f.fileName();
}

}  // namespace

class TestCliRun : public QObject {
  Q_OBJECT
 private slots:
  void seeded_linear_relu_prints_pytorch_number() {
    auto run = kiln::test::run_cli({"run", program("s02_linear_relu.py")});
    QCOMPARE(run.code, 0);
    QFile ref(QString::fromStdString(kiln::test::reference_dir() + "/logs/s02_linear_relu/stdout.log"));
    QVERIFY(ref.open(QIODevice::ReadOnly));
    QStringList want = lines(ref.readAll()), got = lines(run.out);
    QCOMPARE(got.size(), want.size());
    for (int i = 0; i < want.size(); ++i) QVERIFY2(kiln::test::same_printed_line(got[i], want[i]), qPrintable(got[i] + " vs " + want[i]));
  }

  // KILN_INJECT_BUG (CLI.md): relu:accuracy changes what the compiled relu
  // program prints; an unknown value is bad input (exit 3), not a warning per region.
  void injected_relu_bug() {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("KILN_COMPILE_CACHE", "0");
    auto clean = kiln::test::run_cli({"run", program("s02_linear_relu.py")}, 300000, env);
    QCOMPARE(clean.code, 0);
    env.insert("KILN_INJECT_BUG", "relu:accuracy");
    auto wrong = kiln::test::run_cli({"run", program("s02_linear_relu.py")}, 300000, env);
    QCOMPARE(wrong.code, 0);
    QVERIFY2(wrong.out != clean.out, wrong.out.constData());
    env.insert("KILN_INJECT_BUG", "relu:sometimes");
    auto bad = kiln::test::run_cli({"run", program("s02_linear_relu.py")}, 300000, env);
    QCOMPARE(bad.code, 3);
    QVERIFY2(bad.err.contains("KILN_INJECT_BUG='relu:sometimes' is not one of"), bad.err.constData());
  }

  void graph_breaks_program_prints_pytorch_numbers() {
    auto run = kiln::test::run_cli({"run", program("s03_graph_breaks.py")});
    QCOMPARE(run.code, 0);
    QFile ref(QString::fromStdString(kiln::test::reference_dir() + "/logs/s03_graph_breaks/stdout.log"));
    QVERIFY(ref.open(QIODevice::ReadOnly));
    QStringList want = lines(ref.readAll()), got = lines(run.out);
    // The lines before the explain printouts carry the numbers.
    for (int i = 0; i < 8; ++i) QVERIFY2(kiln::test::same_printed_line(got[i], want[i]), qPrintable(got[i] + " vs " + want[i]));
    // Each explain printout's counts.
    for (const char* head : {"Graph Count: 2", "Graph Count: 3", "Op Count: 5"}) QVERIFY(got.contains(head));
  }

  void kiln_trace_is_read_back_by_trace_summary() {
    // KILN_TRACE writes a TORCH_TRACE-format log; Kiln's own reader must see
    // the same compile ids, breaks and graph sizes PyTorch's trace of s03 has.
    QTemporaryDir dir;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("KILN_TRACE", dir.path());
    auto run = kiln::test::run_cli({"run", program("s03_graph_breaks.py")}, 300000, env);
    QCOMPARE(run.code, 0);
    auto summary = kiln::test::run_cli({"trace", "summary", "--json", dir.path()});
    QCOMPARE(summary.code, 0);
    QJsonObject doc = QJsonDocument::fromJson(summary.out).object();
    QVERIFY(doc["diagnostics"].toArray().isEmpty());
    QJsonArray ids = doc["compile_ids"].toArray();
    QVERIFY(ids.size() >= 10);
    QJsonObject first = ids[0].toObject();
    QCOMPARE(first["id"].toString(), QString("0/0"));  // f_print: a restart, attempt 1
    QCOMPARE(first["function"].toString(), QString("f_print"));
    QCOMPARE(first["graph_breaks"].toArray()[0].toObject()["line"].toInt(), 4);
    QCOMPARE(first["stages"].toObject()["dynamo_output_graph"].toObject()["ops"].toInt(), 1);
    QVERIFY(first["guard_count"].toInt() > 0);
  }

  void explain_counts_match_dynamo() {
    auto run = kiln::test::run_cli({"explain", "--json", program("s03_graph_breaks.py")});
    QCOMPARE(run.code, 0);
    QJsonDocument doc = QJsonDocument::fromJson(run.out);
    QJsonArray fns = doc.object()["functions"].toArray();
    // f_print, f_data_dep, f_item, f_explicit, Net: (graphs, breaks, ops, break line) from PyTorch's explain.
    struct Want { const char* name; int graphs, breaks, ops, line; };
    const Want want[] = {{"f_print", 2, 1, 1, 4}, {"f_data_dep", 2, 1, 2, 8}, {"f_item", 2, 1, 1, 12},
                         {"f_explicit", 2, 1, 2, 16}, {"Net", 3, 2, 5, 25}};
    QVERIFY(fns.size() >= 5);
    for (const Want& w : want) {
      bool found = false;
      for (const QJsonValue& f : fns) {
        QJsonObject o = f.toObject();
        if (o["name"].toString() != w.name) continue;
        found = true;
        QCOMPARE(o["graph_count"].toInt(), w.graphs);
        QCOMPARE(o["graph_break_count"].toInt(), w.breaks);
        QCOMPARE(o["op_count"].toInt(), w.ops);
        QCOMPARE(o["break_reasons"].toArray()[0].toObject()["line"].toInt(), w.line);
        break;
      }
      QVERIFY2(found, w.name);
    }
  }

  void recompile_reasons_follow_pytorch() {
    auto run = kiln::test::run_cli({"explain", "--json", program("s04_recompiles.py")});
    QCOMPARE(run.code, 0);
    QJsonArray fns = QJsonDocument::fromJson(run.out).object()["functions"].toArray();
    QVERIFY(!fns.isEmpty());
    QJsonArray rc = fns[0].toObject()["recompiles"].toArray();
    // PyTorch: size, dtype, float constant, loop count, stride (then device, absent without CUDA).
    const char* kinds[] = {"size mismatch at index 0", "dtype mismatch", "scale == 2.0", "n == 2", "stride mismatch"};
    QCOMPARE(rc.size(), 5);
    for (int i = 0; i < 5; ++i) {
      // The newest entry's reason comes first; the kind that triggered this recompile is among them.
      QString all;
      for (const QJsonValue& r : rc[i].toObject()["reasons"].toArray()) all += r.toString() + "\n";
      QVERIFY2(all.contains(kinds[i]), qPrintable(all));
    }
  }

  // A torch.compile wrapper made anew in a loop (the custom-Function tutorial)
  // reuses the frame's entry; explain's first call of each wrapper sees a fresh
  // cache, so its own compiles never add up to the recompile limit (they did:
  // "[0/8] hit config.recompile_limit" with an empty last reason, then no graphs).
  void explain_of_wrappers_made_in_a_loop() {
    QTemporaryDir dir;
    const QString p = write_program(dir, "loop_wrappers.py",
                                    "import torch\ndef f(x):\n    return x * 2 + 1\nx = torch.ones(3)\n"
                                    "for i in range(12):\n    g = torch.compile(f)\n    g(x)\n");
    for (const char* mode : {"run", "explain"}) {
      QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
      env.insert("KILN_LOGS", "recompiles");
      auto run = kiln::test::run_cli({mode, p}, 60000, env);
      QCOMPARE(run.code, 0);
      QVERIFY2(!run.err.contains("recompile"), run.err.constData());
    }
    auto run = kiln::test::run_cli({"explain", "--json", p});
    QJsonArray fns = QJsonDocument::fromJson(run.out).object()["functions"].toArray();
    QCOMPARE(fns.size(), 12);
    for (const QJsonValue& f : fns) QCOMPARE(f.toObject()["graph_count"].toInt(), 1);
  }

  // The recompile-limit warning names the newest entry's failing guard, as
  // Dynamo's format_guard_failures does.
  void recompile_limit_names_last_reason() {
    QTemporaryDir dir;
    const QString p = write_program(dir, "limit.py",
                                    "import torch\n@torch.compile(dynamic=False)\ndef f(x):\n    return x + 1\n"
                                    "for n in range(2, 12):\n    f(torch.ones(n))\n");
    for (const char* mode : {"run", "explain"}) {
      auto run = kiln::test::run_cli({mode, p});
      QCOMPARE(run.code, 0);
      QVERIFY2(run.err.contains("[0/8] torch._dynamo hit config.recompile_limit (8)"), run.err.constData());
      QVERIFY2(run.err.contains("last reason: 0/7: tensor 'x' size mismatch at index 0. expected 9, actual 10"),
               run.err.constData());
    }
  }

  // `self.step += 1` in a compiled forward: Dynamo 2.11 specializes ints read
  // from nn modules (allow_unspec_int_on_nn_module=False, its default), so each
  // call recompiles on `self.step == N` until the limit, then runs eagerly.
  void module_int_attribute_recompiles_until_the_limit() {
    QTemporaryDir dir;
    const QString p = write_program(dir, "step.py",
                                    "import torch\nimport torch.nn as nn\n"
                                    "print(torch._dynamo.config.allow_unspec_int_on_nn_module)\n"
                                    "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                                    "        self.step = 0\n    def forward(self, x):\n        self.step += 1\n"
                                    "        return x * 2\nm = torch.compile(M())\nfor i in range(12):\n"
                                    "    y = m(torch.ones(3))\nprint(m.step, y.tolist())\n");
    auto run = kiln::test::run_cli({"run", p});
    QCOMPARE(run.code, 0);
    QCOMPARE(run.out, QByteArray("False\n12 [2.0, 2.0, 2.0]\n"));
    QVERIFY2(run.err.contains("last reason: 0/7: self.step == 7"), run.err.constData());
    auto ex = kiln::test::run_cli({"explain", "--json", p});
    QJsonObject f = QJsonDocument::fromJson(ex.out).object()["functions"].toArray()[0].toObject();
    QCOMPARE(f["graph_count"].toInt(), 1);
    QCOMPARE(f["recompiles"].toArray().size(), 8);
  }

  void syntax_error_exits_3_with_location() {
    QTemporaryDir dir;
    QFile f(dir.filePath("bad.py"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("import torch\ndef f(x)\n    return x\n");
    f.close();
    auto run = kiln::test::run_cli({"run", f.fileName()});
    QCOMPARE(run.code, 3);
    QVERIFY2(run.err.contains("bad.py:2"), run.err.constData());
  }

  void forbidden_import_exits_3() {
    QTemporaryDir dir;
    QFile f(dir.filePath("np.py"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("import scipy\nprint(1)\n");
    f.close();
    auto run = kiln::test::run_cli({"run", f.fileName()});
    QCOMPARE(run.code, 3);
    QVERIFY2(run.err.contains("np.py:1"), run.err.constData());
    QVERIFY(!run.out.contains("1"));
  }

  // Outside the subset, found while running: exit 3 (Kiln cannot run this,
  // not the program's error) with the user's FILE:LINE:COL. The generator
  // methods once exited 1 as a plain AttributeError.
  void runtime_refusals_exit_3_with_location() {
    QTemporaryDir dir;
    const ProgramCase cases[] = {
        {"fwd_ad.py", "import torch\nimport torch.autograd.forward_ad as fwAD\n", "fwd_ad.py:2:8: ModuleNotFoundError"},
        {"fwd_ad_attr.py", "import torch\nwith torch.autograd.forward_ad.dual_level():\n    pass\n", "fwd_ad_attr.py:2:6: AttributeError"},
        {"named.py", "import torch\nx = torch.zeros(2, 3, names=('N', 'C'))\n", "named.py:2:5: RuntimeError: zeros(names=...)"},
        {"refine.py", "import torch\nx = torch.zeros(2).refine_names('N')\n", "refine.py:2:5: AttributeError"},
        {"jit_load.py", "import torch\nm = torch.jit.load('m.pt')\n", "jit_load.py:2:5: NotImplementedError: torch.jit.load"},
        {"open.py", "f = open('x.txt', 'w')\n", "open.py:1:5: NotImplementedError: open()"},
        {"subprocess.py", "import subprocess\nsubprocess.run(['ls'])\n", "subprocess.py:2:1: NotImplementedError: subprocess.run()"},
        {"socket.py", "import socket\ns = socket.socket()\n", "socket.py:2:5: NotImplementedError: socket.socket()"},
        {"threads.py", "import threading\n", "threads.py:1:8: ModuleNotFoundError: No module named 'threading'"},
        {"exec.py", "exec('x = 1')\n", "exec.py:1:1: NotImplementedError: exec()"},
        {"eval.py", "print(eval('1'))\n", "eval.py:1:7: NotImplementedError: eval()"},
        {"send.py", "def g():\n    x = yield 1\ng().send(None)\n", "send.py:3:1: AttributeError: 'generator' object has no attribute 'send' (CPython has it"},
    };
    for (const ProgramCase& c : cases) {
      auto run = kiln::test::run_cli({"run", write_program(dir, c.name, c.source)});
      QVERIFY2(run.code == 3, qPrintable(QString(c.name) + ": " + run.err));
      QVERIFY2(run.err.contains(c.expect), run.err.constData());
    }
    // names=None is PyTorch's default, not a named tensor.
    auto none = kiln::test::run_cli({"run", write_program(dir, "names_none.py", "import torch\nprint(torch.ones(2, names=None))\n")});
    QCOMPARE(none.code, 0);
    QCOMPARE(none.out, QByteArray("tensor([1., 1.])\n"));
  }

  // The words after `--` are the program's sys.argv[1:]: argparse reads them,
  // and its usage error ends the run with CPython's status 2.
  void program_arguments_after_double_dash() {
    QTemporaryDir dir;
    QFile f(dir.filePath("args.py"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("import argparse\np = argparse.ArgumentParser()\np.add_argument('--lr', type=float, default=0.1)\n"
            "p.add_argument('-v', action='store_true')\nargs = p.parse_args()\nprint(args.lr * 2, args.v)\n");
    f.close();
    auto run = kiln::test::run_cli({"run", f.fileName(), "--backend", "eager", "--", "--lr", "0.25", "-v"});
    QCOMPARE(run.code, 0);
    QCOMPARE(run.out, QByteArray("0.5 True\n"));
    run = kiln::test::run_cli({"run", f.fileName(), "--", "--lr", "x"});
    QCOMPARE(run.code, 2);
    QCOMPARE(run.err, QByteArray("usage: args.py [-h] [--lr LR] [-v]\nargs.py: error: argument --lr: invalid float value: 'x'\n"));
    run = kiln::test::run_cli({"run", f.fileName()});
    QCOMPARE(run.out, QByteArray("0.2 False\n"));
  }

  // A chain of 100,000 differentiable ops was freed by as many nested
  // destructor calls, which overflowed the stack at exit (a segfault).
  void long_autograd_chain_exits_cleanly() {
    QTemporaryDir dir;
    QFile f(dir.filePath("chain.py"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("import torch\nx = torch.ones(2, requires_grad=True)\ny = x\nfor i in range(100000):\n    y = y * 1.0\n"
            "print(y.sum().item())\n");
    f.close();
    auto run = kiln::test::run_cli({"run", f.fileName(), "--backend", "none"});
    QCOMPARE(run.code, 0);
    QCOMPARE(run.out, QByteArray("2.0\n"));
  }

  // Programs that ran forever or grew until the kernel killed them stop at
  // their budgets with the program's line, exit 1 (as python3 exits on an
  // uncaught error). Each case once ran unbounded.
  void programs_stop_at_their_time_limit() {
    QTemporaryDir dir;
    const ProgramCase cases[] = {
        {"loop.py", "x = 0\nwhile True:\n    x += 1\n", "loop.py:"},
        {"builtin.py", "print(sum(range(10**12)))\n", "builtin.py:1:"},
        {"kernel.py", "import torch\nprint(torch.ones(1).expand(10**12).sum())\n", "kernel.py: TimeoutError"},
        {"compiled.py", "import torch\n@torch.compile\ndef f(x):\n    while True:\n        x = x + 1\n    return x\nf(torch.ones(2))\n",
         "compiled.py:"},
    };
    for (const ProgramCase& c : cases) {
      const QString program = write_program(dir, c.name, c.source);
      QElapsedTimer clock;
      clock.start();
      auto run = kiln::test::run_cli({"run", program, "--time-limit", "1"}, 60000);
      QVERIFY2(clock.elapsed() < 20000, c.name);
      QCOMPARE(run.code, 1);
      QVERIFY2(run.err.contains(c.expect) && run.err.contains("TimeoutError"), run.err.constData());
    }
  }

  void programs_stop_at_their_memory_limit() {
    QTemporaryDir dir;
    const ProgramCase cases[] = {
        {"list.py", "x = [1]\nwhile True:\n    x = x + x\n", "list.py:3:9: MemoryError"},
        {"text.py", "s = 'ab'\nwhile True:\n    s = s + s\n", "text.py:3:9: MemoryError"},
        {"range.py", "x = list(range(10**12))\n", "range.py:1:5: MemoryError"},
        {"tensors.py", "import torch\nxs = []\nfor i in range(100):\n    xs.append(torch.ones(1024, 1024, 64))\n",
         "tensors.py:4:15: RuntimeError: out of memory (tensors past the memory budget; --memory-limit)"},
    };
    for (const ProgramCase& c : cases) {
      const QString program = write_program(dir, c.name, c.source);
      auto run = kiln::test::run_cli({"run", program, "--memory-limit", "512M"}, 120000);
      QCOMPARE(run.code, 1);
      QVERIFY2(run.err.contains(c.expect), run.err.constData());
    }
    auto bad = kiln::test::run_cli({"run", "none.py", "--memory-limit", "lots"});
    QCOMPARE(bad.code, 2);
  }

  // What a file declares is checked against the memory budget before it is
  // allocated: these once ended in an uncaught bad_alloc or the OOM killer.
  void declared_sizes_are_checked_before_allocating() {
    QTemporaryDir dir;
    QFile graph(dir.filePath("big.txt"));
    QVERIFY(graph.open(QIODevice::WriteOnly));
    graph.write("class GraphModule(torch.nn.Module):\n    def forward(self, x: \"f32[1000000, 1000000]\"):\n"
                "        relu: \"f32[1000000, 1000000]\" = torch.ops.aten.relu.default(x);  x = None\n        return (relu,)\n");
    graph.close();
    QFile repro(dir.filePath("repro.py"));
    QVERIFY(repro.open(QIODevice::WriteOnly));
    repro.write("import torch\nclass Repro(torch.nn.Module):\n    def forward(self, arg0_1):\n"
                "        relu = torch.ops.aten.relu.default(arg0_1);  arg0_1 = None\n        return (relu,)\n\n"
                "def load_args(reader):\n    buf0 = reader.storage(None, 4000000000000)\n"
                "    reader.tensor(buf0, (1000000000000,))  # arg0_1\nload_args._version = 0\nmod = Repro()\n");
    repro.close();
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("KILN_MEMORY_LIMIT", "1G");
    auto g = kiln::test::run_cli({"minify", graph.fileName(), "--check", "accuracy", "--out", dir.filePath("out1")}, 60000, env);
    QCOMPARE(g.code, 3);
    QVERIFY2(g.err.contains("big.txt: the graph's inputs (up to placeholder 'x') declares 3.6 TB, over the memory budget of 1.0 GB"),
             g.err.constData());
    auto r = kiln::test::run_cli({"repro", "run", repro.fileName()}, 60000, env);
    QCOMPARE(r.code, 3);
    QVERIFY2(r.err.contains("repro.py:9: load_args (up to input 'arg0_1') declares 3.6 TB"), r.err.constData());
    // A size past 64 bits was called "not a plain integer (symbolic sizes ...)".
    QFile huge(dir.filePath("huge.py"));
    QVERIFY(huge.open(QIODevice::WriteOnly));
    huge.write("import torch\nclass Repro(torch.nn.Module):\n    def forward(self, arg0_1):\n"
               "        relu = torch.ops.aten.relu.default(arg0_1);  arg0_1 = None\n        return (relu,)\n\n"
               "def load_args(reader):\n    buf0 = reader.storage(None, 99999999999999999999)\n"
               "    reader.tensor(buf0, (4,))  # arg0_1\nload_args._version = 0\nmod = Repro()\n");
    huge.close();
    auto h = kiln::test::run_cli({"repro", "run", huge.fileName()}, 60000, env);
    QCOMPARE(h.code, 3);
    QVERIFY2(h.err.contains("huge.py:9: input 'arg0_1': storage size 99999999999999999999 does not fit in 64 bits"), h.err.constData());

    // --max-input-bytes: below the memory budget, refused at once with both sizes named.
    QFile mid(dir.filePath("mid.py"));
    QVERIFY(mid.open(QIODevice::WriteOnly));
    mid.write("import torch\nclass Repro(torch.nn.Module):\n    def forward(self, arg0_1):\n"
              "        relu = torch.ops.aten.relu.default(arg0_1);  arg0_1 = None\n        return (relu,)\n\n"
              "def load_args(reader):\n    buf0 = reader.storage(None, 4*262144)\n"
              "    reader.tensor(buf0, (262144,))  # arg0_1\nload_args._version = 0\nmod = Repro()\n");
    mid.close();
    QElapsedTimer timer;
    timer.start();
    auto m = kiln::test::run_cli({"repro", "run", mid.fileName(), "--check", "accuracy", "--max-input-bytes", "512K"}, 60000, env);
    QCOMPARE(m.code, 3);
    QVERIFY2(m.err.contains("mid.py:9: load_args (up to input 'arg0_1') declares 1.0 MB, over --max-input-bytes 512.0 KB"), m.err.constData());
    QVERIFY2(timer.elapsed() < 5000, qPrintable(QString::number(timer.elapsed())));
    QCOMPARE(kiln::test::run_cli({"repro", "run", mid.fileName(), "--check", "accuracy", "--max-input-bytes", "2M"}, 60000, env).code, 0);
    QCOMPARE(kiln::test::run_cli({"repro", "run", mid.fileName(), "--max-input-bytes", "lots"}, 60000, env).code, 2);
    auto mm = kiln::test::run_cli({"minify", mid.fileName(), "--check", "accuracy", "--max-input-bytes", "512K", "--out", dir.filePath("out3")},
                                  60000, env);
    QCOMPARE(mm.code, 3);
    QVERIFY2(mm.err.contains("over --max-input-bytes"), mm.err.constData());
  }

  // Drawing the inputs a repro declares counts against --timeout: a 7.8 GB
  // input from a real bug report ran past a 60 s timeout for minutes.
  void drawing_inputs_counts_against_the_timeout() {
    QTemporaryDir dir;
    QFile big(dir.filePath("big.py"));
    QVERIFY(big.open(QIODevice::WriteOnly));
    big.write("import torch\nclass Repro(torch.nn.Module):\n    def forward(self, arg0_1):\n"
              "        relu = torch.ops.aten.relu.default(arg0_1);  arg0_1 = None\n        return (relu,)\n\n"
              "def load_args(reader):\n    buf0 = reader.storage(None, 4*400000000)\n"
              "    reader.tensor(buf0, (400000000,))  # arg0_1\nload_args._version = 0\nmod = Repro()\n");
    big.close();
    QElapsedTimer timer;
    timer.start();
    auto r = kiln::test::run_cli({"repro", "run", big.fileName(), "--check", "accuracy", "--timeout", "0.2", "--max-input-bytes", "4G"});
    const qint64 ms = timer.elapsed();
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("big.py: timed out before a verdict: reading it and drawing the inputs it declares took more than --timeout (0.2 s)"),
             r.err.constData());
    // Drawing 1.6 GB of normal values takes seconds; the watchdog ends it at 0.2 s.
    QVERIFY2(ms < 1500, qPrintable(QString("%1 ms").arg(ms)));
    auto m = kiln::test::run_cli({"minify", big.fileName(), "--check", "accuracy", "--timeout", "0.2", "--max-input-bytes", "4G",
                                  "--out", dir.filePath("out")});
    QCOMPARE(m.code, 1);
    QVERIFY2(m.err.contains("kiln-cli minify: ") && m.err.contains("timed out before a verdict"), m.err.constData());
  }

  // A replay that runs past --timeout says so: it was reported as "still
  // fails: timeout", as if the hang were the recorded failure.
  void a_replay_past_its_timeout_has_no_verdict() {
    QTemporaryDir dir;
    QFile repro(dir.filePath("slow.py"));
    QVERIFY(repro.open(QIODevice::WriteOnly));
    // A small input (read in a millisecond: reading counts against --timeout
    // too) and a graph whose compile and run take longer than 0.05 s.
    std::string text = "import torch\nclass Repro(torch.nn.Module):\n    def forward(self, arg0_1):\n"
                       "        mm = torch.ops.aten.mm.default(arg0_1, arg0_1);  arg0_1 = None\n";
    std::string last = "mm";
    for (int i = 1; i <= 12; ++i) {
      const std::string name = "mm_" + std::to_string(i);
      text.append("        ").append(name).append(" = torch.ops.aten.mm.default(").append(last).append(", ").append(last).append(")\n");
      last = name;
    }
    text.append("        relu = torch.ops.aten.relu.default(").append(last).append(")\n        return (relu,)\n\n");
    text.append("def load_args(reader):\n    buf0 = reader.storage(None, 1048576)\n"
                "    reader.tensor(buf0, (512, 512))  # arg0_1\nload_args._version = 0\nmod = Repro()\n");
    repro.write(text.c_str());
    repro.close();
    // A compile cache of its own: a cached compile of an earlier run would finish in time.
    QTemporaryDir cache;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("KILN_CACHE_DIR", cache.path());
    auto r = kiln::test::run_cli({"repro", "run", repro.fileName(), "--check", "accuracy", "--timeout", "0.05"}, 300000, env);
    QCOMPARE(r.code, 1);
    // Under load even reading the file can take the 0.05 s: that phase says so on stderr.
    QVERIFY2(r.out.contains("timed out before a verdict: timeout: no verdict within 0.05 s") ||
                 r.err.contains("timed out before a verdict: reading it and drawing the inputs"),
             (r.out + r.err).constData());
    QVERIFY2(!r.out.contains("still fails"), r.out.constData());
    auto j = kiln::test::run_cli({"repro", "run", repro.fileName(), "--check", "accuracy", "--timeout", "0.05", "--json"}, 300000, env);
    QCOMPARE(j.code, 1);
    QJsonObject doc = QJsonDocument::fromJson(j.out).object();
    QCOMPARE(doc["verdict"].toString(), QString("timed out before a verdict"));
    QCOMPARE(doc["same_failure"].toBool(), false);
  }

  // A program wrote a shell script with safetensors.save_file and read
  // /etc/passwd's first bytes through load_file's error. Files are off by
  // default; --allow-read / --allow-write name folders, checked after
  // symlinks and ".." are resolved.
  void programs_touch_only_the_folders_they_are_given() {
    QTemporaryDir dir, outside;
    const QString allowed = dir.filePath("allowed");
    QVERIFY(QDir().mkpath(allowed));
    QVERIFY(QFile::link(outside.filePath("target.safetensors"), allowed + "/link.safetensors"));
    auto write_program = [&](const QString& name, const QString& target) {
      QFile f(dir.filePath(name));
      f.open(QIODevice::WriteOnly);
      f.write(("import torch\nfrom safetensors.torch import save_file, load_file\n"
               "save_file({'x': torch.arange(4, dtype=torch.uint8)}, '" + target + "')\n"
               "print(load_file('" + target + "')['x'].tolist())\n").toUtf8());
      return f.fileName();
    };
    // No folder given: denied, nothing written.
    auto denied = kiln::test::run_cli({"run", write_program("a.py", outside.filePath("w.safetensors"))});
    QCOMPARE(denied.code, 1);
    QVERIFY2(denied.err.contains("PermissionError: [Errno 13] Permission denied"), denied.err.constData());
    QVERIFY(!QFile::exists(outside.filePath("w.safetensors")));
    // Inside the given folder: allowed.
    auto ok = kiln::test::run_cli({"run", write_program("b.py", allowed + "/w.safetensors"), "--allow-write", allowed});
    QCOMPARE(ok.code, 0);
    QCOMPARE(ok.out, QByteArray("[0, 1, 2, 3]\n"));
    // Out of it through "..", and through a symlink inside it.
    auto dotdot = kiln::test::run_cli({"run", write_program("c.py", allowed + "/../escape.safetensors"), "--allow-write", allowed});
    QCOMPARE(dotdot.code, 1);
    QVERIFY(!QFile::exists(dir.filePath("escape.safetensors")));
    auto link = kiln::test::run_cli({"run", write_program("d.py", allowed + "/link.safetensors"), "--allow-write", allowed});
    QCOMPARE(link.code, 1);
    QVERIFY(!QFile::exists(outside.filePath("target.safetensors")));
    // Reading: a read folder is not writable, and a file outside shows nothing of itself.
    auto read_only = kiln::test::run_cli({"run", write_program("e.py", allowed + "/r.safetensors"), "--allow-read", allowed});
    QCOMPARE(read_only.code, 1);
    QVERIFY(read_only.err.contains("--allow-write DIR"));
    QFile secret(outside.filePath("secret.txt"));
    secret.open(QIODevice::WriteOnly);
    secret.write("root:x:0:0:hidden\n");
    secret.close();
    QFile reader(dir.filePath("f.py"));
    reader.open(QIODevice::WriteOnly);
    reader.write(("from safetensors.torch import load_file\nload_file('" + secret.fileName() + "')\n").toUtf8());
    reader.close();
    auto leak = kiln::test::run_cli({"run", reader.fileName(), "--allow-read", allowed});
    QCOMPARE(leak.code, 1);
    QVERIFY2(leak.err.contains("PermissionError") && !leak.err.contains("root:x"), leak.err.constData());
    auto no_folder = kiln::test::run_cli({"run", reader.fileName(), "--allow-read", dir.filePath("missing")});
    QCOMPARE(no_folder.code, 2);
  }
};

QTEST_MAIN(TestCliRun)
#include "test_cli_run.moc"
