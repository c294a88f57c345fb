// The journal: steps written as they are accepted, read back as candidates;
// kiln-cli minify killed with SIGKILL mid-run resumes with --resume and loses
// no accepted step; malformed input exits 3 naming the file.
#include <QtTest/QtTest>

#include <csignal>
#include <nlohmann/json.hpp>

#include "core/graph/hash.h"
#include "minifier/journal.h"
#include "minify_test_util.h"

using namespace kiln;
using namespace kiln::minify;

class TestMinifyJournal : public QObject {
  Q_OBJECT
 private slots:
  void steps_read_back_as_candidates() {
    QTemporaryDir dir;
    auto j = Journal::open((dir.path() + "/minify.db").toStdString());
    QVERIFY2(j.ok(), j.status().message().c_str());
    Candidate input = test::launcher_candidate(test::reference_dir() + "/minifier/accuracy_cpu/minifier_launcher.py");
    Verdict v{Verdict::Outcome::Fail, "accuracy", "accuracy", "output 0"};
    QVERIFY((*j)->begin_run("in.py", R"({"check": "accuracy"})", input, v).ok());
    Candidate smaller = input;
    set_outputs(smaller.graph, {output_items(smaller.graph)[0]});
    prune(smaller);
    QVERIFY(annotate(smaller).ok());
    Step s;
    s.index = 1;
    s.strategy = "remove-outputs";
    s.description = "removed 10 of 11 outputs";
    s.nodes_before = 27;
    s.nodes_after = op_count(smaller.graph);
    QVERIFY((*j)->add_step(s, smaller).ok());
    j->reset();

    auto again = Journal::open((dir.path() + "/minify.db").toStdString());
    QVERIFY(again.ok());
    auto last = (*again)->latest_run();
    QVERIFY2(last.ok(), last.status().message().c_str());
    QVERIFY(last->has_value());
    const Journal::Resumed& r = **last;
    QCOMPARE(r.input, std::string("in.py"));
    QCOMPARE(r.original.signature, std::string("accuracy"));
    QCOMPARE(r.initial_nodes, size_t(27));
    QCOMPARE(r.steps.size(), size_t(1));
    QCOMPARE(r.steps[0].description, s.description);
    QCOMPARE(structural_hash(r.last.graph), structural_hash(smaller.graph));
    QCOMPARE(r.last.inputs.size(), smaller.inputs.size());
    for (size_t i = 0; i < smaller.inputs.size(); ++i)
      QCOMPARE(test::values(r.last.inputs[i]), test::values(smaller.inputs[i]));
  }

  void killed_run_resumes_without_losing_steps() {
    QTemporaryDir dir;
    const QString out = dir.path() + "/out";
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("KILN_INJECT_BUG", "relu:compile-error");
    env.insert("KILN_MINIFY_TEST_HOOK", "sleep:*");  // 300 ms per candidate: time to kill it mid-run
    QProcess p;
    p.setProcessEnvironment(env);
    const QString launcher = QString::fromStdString(test::reference_dir() + "/minifier/accuracy_cuda/minifier_launcher.py");
    p.start(KILN_CLI_PATH, {"minify", launcher, "--check", "compile-error", "--out", out});
    QVERIFY(p.waitForStarted());
    QByteArray printed;
    QElapsedTimer t;
    t.start();
    while (!printed.contains("step 1 ") && t.elapsed() < 60000 && p.state() == QProcess::Running) {
      p.waitForReadyRead(100);
      printed += p.readAllStandardOutput();
    }
    QVERIFY2(printed.contains("step 1 "), printed.constData());
    ::kill(pid_t(p.processId()), SIGKILL);
    p.waitForFinished();
    printed += p.readAllStandardOutput();
    QVERIFY2(!printed.contains("done:"), "the run finished before it was killed");
    // Every step it printed is in the journal.
    std::vector<std::string> before;
    for (const QByteArray& line : printed.split('\n'))
      if (line.startsWith("step ")) before.push_back(line.mid(0, line.indexOf(':')).toStdString());
    {
      auto j = Journal::open((out + "/minify.db").toStdString());
      QVERIFY(j.ok());
      auto last = (*j)->latest_run();
      QVERIFY(last.ok() && last->has_value());
      QVERIFY((*last)->steps.size() >= before.size());
      QVERIFY(!(*last)->completed);
    }
    env.remove("KILN_MINIFY_TEST_HOOK");
    test::CliRun resumed = test::run_cli({"minify", "--resume", "--out", out, "--json"}, 120000, env);
    QVERIFY2(resumed.code == 0, resumed.err.constData());
    nlohmann::json doc = nlohmann::json::parse(resumed.out.toStdString());
    QCOMPARE(doc["final_ops"].get<int>(), 1);
    QCOMPARE(doc["initial_nodes"].get<int>(), 27);
    // The steps printed before the kill come first, with the same numbers and text.
    const auto& steps = doc["steps"];
    QVERIFY(steps.size() >= before.size());
    for (size_t i = 0; i < before.size(); ++i) {
      std::string line = "step " + std::to_string(steps[i]["index"].get<int>()) + " [" +
                         steps[i]["strategy"].get<std::string>() + "] " + steps[i]["description"].get<std::string>();
      QCOMPARE(line, before[i]);
    }
    for (size_t i = 1; i < steps.size(); ++i)
      QCOMPARE(steps[i]["index"].get<int>(), steps[i - 1]["index"].get<int>() + 1);
    QVERIFY(QFileInfo::exists(out + "/repro/graph.txt"));
    QVERIFY(QFileInfo::exists(out + "/repro.py"));
  }

  void malformed_input_exits_3_naming_the_file() {
    QTemporaryDir dir;
    const QString bad = dir.path() + "/bad_graph.txt";
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("class GraphModule(torch.nn.Module):\n    def forward(self, x: \"f32[4]\"):\n        y = torch.ops.aten.sin.default(x\n        return (y,)\n");
    f.close();
    test::CliRun r = test::run_cli({"minify", bad, "--check", "accuracy", "--out", dir.path() + "/out"});
    QCOMPARE(r.code, 3);
    QVERIFY2(r.err.contains("bad_graph.txt:"), r.err.constData());
    r = test::run_cli({"minify", dir.path() + "/missing.py", "--check", "accuracy", "--out", dir.path() + "/out"});
    QCOMPARE(r.code, 3);
    r = test::run_cli({"minify", bad, "--check", "sideways"});
    QCOMPARE(r.code, 2);
    r = test::run_cli({"minify", "--resume", "--out", dir.path() + "/empty"});
    QCOMPARE(r.code, 3);
    QVERIFY(r.err.contains("no run to resume"));
  }
};

QTEST_GUILESS_MAIN(TestMinifyJournal)
#include "test_minify_journal.moc"
