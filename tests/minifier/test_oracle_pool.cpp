// The persistent PyTorch oracle's worker pool (minifier/oracle_pool.h), with
// a fake worker that speaks the same protocol (tests/data/oracle): lifecycle,
// crashes, hangs, the memory bound, parallel slots, workers that cannot
// start, and a minify through kiln-cli with the workers. python3 is part of
// the build's dependencies (scripts/install-deps.sh), so nothing here skips
// for want of it.
#include "test_support.h"

#include <QElapsedTimer>
#include <QTemporaryDir>

#include <csignal>
#include <fstream>
#include <set>

#include "minifier/oracle_pool.h"

using namespace kiln::minify;

namespace {

std::string fake_worker() { return std::string(KILN_SOURCE_DIR) + "/tests/data/oracle/fake_oracle_worker.py"; }

// A "repro.py" naming one ATen op: all the fake worker looks at.
OracleJob job_with(const QTemporaryDir& dir, const std::string& name, const std::string& op) {
  const std::string repro = dir.filePath(QString::fromStdString(name + ".py")).toStdString();
  std::ofstream(repro) << "x = torch.ops.aten." << op << ".default(y)\n";
  return {repro, dir.filePath(QString::fromStdString(name + ".out")).toStdString()};
}

OraclePoolOptions fake_options(int workers = 1) {
  OraclePoolOptions o;
  o.python = "python3";
  o.worker_script = fake_worker();
  o.parallel = workers;
  o.timeout_s = 20;
  o.startup_timeout_s = 30;
  o.memory_mb = 4096;
  return o;
}

}  // namespace

class TestOraclePool : public QObject {
  Q_OBJECT
 private slots:
  void one_worker_judges_candidate_after_candidate() {
    QTemporaryDir dir;
    OraclePool pool(fake_options());
    std::vector<OracleRun> runs = pool.run({job_with(dir, "a", "relu"), job_with(dir, "b", "add"), job_with(dir, "c", "relu")});
    QCOMPARE(runs.size(), size_t(3));
    QCOMPARE(int(runs[0].end), int(OracleRun::End::Exited));
    QCOMPARE(runs[0].exit_code, 1);
    QVERIFY(runs[0].output.find("KILN_FAILURE_CLASS=accuracy") != std::string::npos);
    QCOMPARE(runs[1].exit_code, 0);
    QCOMPARE(runs[2].exit_code, 1);
    // A second batch reuses the same worker: started once.
    std::vector<OracleRun> more = pool.run({job_with(dir, "d", "mul")});
    QCOMPARE(more[0].exit_code, 0);
    QCOMPARE(pool.stats().worker_starts, 1);
    QCOMPARE(more[0].worker_pid, runs[0].worker_pid);
    QVERIFY(pool.fatal_error().empty());
  }

  // Kiln's bytecode cache and the compile threads reach the workers (the
  // cache also where the environment turns bytecode off: it is written only
  // there); a setting of the user's own is kept.
  void the_workers_environment() {
    QTemporaryDir dir;
    OraclePoolOptions o = fake_options();
    o.pycache_dir = dir.filePath("pycache").toStdString();
    o.compile_threads = 1;
    o.env = {"PYTHONDONTWRITEBYTECODE=1"};
    std::vector<OracleRun> runs = OraclePool(o).run({job_with(dir, "a", "add")});
    QVERIFY2(runs[0].output.find("env PYTHONPYCACHEPREFIX=" + o.pycache_dir + "\n") != std::string::npos, runs[0].output.c_str());
    QVERIFY2(runs[0].output.find("env PYTHONDONTWRITEBYTECODE=(unset)\n") != std::string::npos, runs[0].output.c_str());
    QVERIFY2(runs[0].output.find("env TORCHINDUCTOR_COMPILE_THREADS=1\n") != std::string::npos, runs[0].output.c_str());
    o.env = {"PYTHONPYCACHEPREFIX=/elsewhere", "TORCHINDUCTOR_COMPILE_THREADS=3"};
    runs = OraclePool(o).run({job_with(dir, "b", "add")});
    QVERIFY2(runs[0].output.find("env PYTHONPYCACHEPREFIX=/elsewhere\n") != std::string::npos, runs[0].output.c_str());
    QVERIFY2(runs[0].output.find("env TORCHINDUCTOR_COMPILE_THREADS=3\n") != std::string::npos, runs[0].output.c_str());
  }

  void a_crash_is_the_candidates_and_the_worker_restarts() {
    QTemporaryDir dir;
    OraclePool pool(fake_options());
    std::vector<OracleRun> runs = pool.run({job_with(dir, "a", "atan2"), job_with(dir, "b", "relu")});
    QCOMPARE(int(runs[0].end), int(OracleRun::End::Signaled));
    QCOMPARE(runs[0].signal, SIGSEGV);
    QVERIFY2(runs[0].output.find("fake worker pid") != std::string::npos, "the output written before the crash is kept");
    QCOMPARE(int(runs[1].end), int(OracleRun::End::Exited));
    QCOMPARE(runs[1].exit_code, 1);
    QCOMPARE(pool.stats().restarts_crash, 1);
    QCOMPARE(pool.stats().worker_starts, 2);
    QVERIFY(runs[1].worker_pid != runs[0].worker_pid);
  }

  void a_hang_times_out_and_the_worker_restarts() {
    QTemporaryDir dir;
    OraclePoolOptions o = fake_options();
    o.timeout_s = 1;
    OraclePool pool(o);
    QElapsedTimer t;
    t.start();
    std::vector<OracleRun> runs = pool.run({job_with(dir, "a", "erfinv"), job_with(dir, "b", "add")});
    QCOMPARE(int(runs[0].end), int(OracleRun::End::TimedOut));
    QCOMPARE(int(runs[1].end), int(OracleRun::End::Exited));
    QCOMPARE(runs[1].exit_code, 0);
    QCOMPARE(pool.stats().restarts_hang, 1);
    QVERIFY2(t.elapsed() < 15000, qPrintable(QString("took %1 ms").arg(t.elapsed())));
  }

  void the_memory_bound_holds_during_and_between_candidates() {
    QTemporaryDir dir;
    OraclePoolOptions o = fake_options();
    o.memory_mb = 200;
    OraclePool pool(o);
    // lgamma grows to 600 MB while running, past twice the bound: killed, the
    // candidate is out of memory. digamma keeps 300 MB after answering (past
    // the bound, not twice): its answer stands, the worker is replaced.
    std::vector<OracleRun> runs = pool.run({job_with(dir, "a", "lgamma"), job_with(dir, "b", "digamma"), job_with(dir, "c", "relu")});
    QCOMPARE(int(runs[0].end), int(OracleRun::End::OutOfMemory));
    QCOMPARE(int(runs[1].end), int(OracleRun::End::Exited));
    QCOMPARE(runs[1].exit_code, 0);
    QCOMPARE(runs[2].exit_code, 1);
    QCOMPARE(pool.stats().restarts_memory, 2);
    QCOMPARE(pool.stats().worker_starts, 3);
  }

  void a_worker_may_ask_to_be_replaced() {
    QTemporaryDir dir;
    OraclePool pool(fake_options());
    std::vector<OracleRun> runs = pool.run({job_with(dir, "a", "trunc"), job_with(dir, "b", "add")});
    QCOMPARE(runs[0].exit_code, 0);
    QCOMPARE(runs[1].exit_code, 0);
    QCOMPARE(pool.stats().restarts_asked, 1);
    QVERIFY(runs[0].worker_pid != runs[1].worker_pid);
  }

  void candidates_run_in_parallel_over_the_slots() {
    QTemporaryDir dir;
    OraclePool pool(fake_options(4));
    std::vector<OracleJob> jobs;
    for (int i = 0; i < 8; ++i) jobs.push_back(job_with(dir, std::string("s").append(std::to_string(i)), "frac"));
    // Workers start before the clock: what is timed is the candidates.
    pool.run({job_with(dir, "w0", "add"), job_with(dir, "w1", "add"), job_with(dir, "w2", "add"), job_with(dir, "w3", "add")});
    QElapsedTimer t;
    t.start();
    std::vector<OracleRun> runs = pool.run(jobs);
    const qint64 ms = t.elapsed();
    std::set<int> pids;
    for (const OracleRun& r : runs) {
      QCOMPARE(r.exit_code, 0);
      pids.insert(r.worker_pid);
    }
    QCOMPARE(pids.size(), size_t(4));
    QCOMPARE(pool.stats().worker_starts, 4);
    // Eight candidates of 0.5 s each: 4 s one after another, 1 s over four slots.
    QVERIFY2(ms < 2500, qPrintable(QString("8 x 0.5 s over 4 slots took %1 ms").arg(ms)));
  }

  void a_worker_that_cannot_start_fails_every_candidate_with_its_reason() {
    QTemporaryDir dir;
    qputenv("FAKE_ORACLE_NOT_READY", "1");
    {
      OraclePool pool(fake_options(2));
      std::vector<OracleRun> runs = pool.run({job_with(dir, "a", "relu"), job_with(dir, "b", "add")});
      for (const OracleRun& r : runs) {
        QCOMPARE(int(r.end), int(OracleRun::End::Failed));
        QVERIFY2(r.detail.find("No module named 'torch'") != std::string::npos, r.detail.c_str());
      }
    }
    qunsetenv("FAKE_ORACLE_NOT_READY");
    OraclePoolOptions o = fake_options();
    o.python = "/nonexistent/python3";
    OraclePool pool(o);
    std::vector<OracleRun> runs = pool.run({job_with(dir, "a", "relu")});
    QCOMPARE(int(runs[0].end), int(OracleRun::End::Failed));
    QVERIFY2(runs[0].detail.find("ended before it was ready (exit 127)") != std::string::npos, runs[0].detail.c_str());
    QVERIFY2(runs[0].detail.find("/nonexistent/python3") != std::string::npos, runs[0].detail.c_str());
  }

  // Kiln's own worker on a Python without torch (the CI machine) says so.
  void the_real_worker_names_a_missing_torch() {
    if (QProcess::execute("python3", {"-c", "import torch"}) == 0)
      QSKIP("this python3 has torch: the real worker runs on the device (kiln-cli bench minify --oracle-python)");
    QTemporaryDir dir;
    OraclePoolOptions o = fake_options();
    o.worker_script.clear();
    OraclePool pool(o);
    std::vector<OracleRun> runs = pool.run({job_with(dir, "a", "relu")});
    QCOMPARE(int(runs[0].end), int(OracleRun::End::Failed));
    QVERIFY2(runs[0].detail.find("cannot import torch") != std::string::npos, runs[0].detail.c_str());
  }

  // End to end: kiln-cli minify with the workers (-j 2) finds the relu.
  void minify_with_persistent_workers() {
    QTemporaryDir dir;
    const QString input = QString::fromStdString(kiln::test::reference_dir()) + "/minifier/accuracy_cpu/repro.py";
    kiln::test::CliRun r = kiln::test::run_cli({"minify", input, "--check", "oracle", "--oracle-python", "python3",
                                                "--oracle-worker", QString::fromStdString(fake_worker()), "-j", "2",
                                                "--out", dir.filePath("out"), "--json"});
    QVERIFY2(r.code == 0, r.err.constData());
    QJsonObject o = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(o["final_ops"].toInt(), 1);
    QVERIFY2(o["oracle"].toObject()["worker_starts"].toInt() == 2, r.out.constData());
    QCOMPARE(o["steps"].toArray()[0].toObject()["strategy"].toString(), QString("probe-ops"));
    // The probes were judged beside the input's own verdict: probe-ops found them cached.
    QVERIFY2(o["cache_hits"].toInt() >= 1, r.out.constData());
    QFile torch_repro(o["torch_repro"].toString());
    QVERIFY(torch_repro.open(QIODevice::ReadOnly));
    QVERIFY2(torch_repro.readAll().contains("torch.ops.aten.relu.default("), "the single op left is the relu");
    // A bug that needs two ops together: no op fails alone, the probes cost a
    // batch and the other strategies find the pair.
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("FAKE_ORACLE_BUG_OPS", "relu,sigmoid");
    kiln::test::CliRun pair = kiln::test::run_cli({"minify", input, "--check", "oracle", "--oracle-python", "python3",
                                                   "--oracle-worker", QString::fromStdString(fake_worker()), "-j", "2",
                                                   "--out", dir.filePath("pair"), "--json"},
                                                  300000, env);
    QVERIFY2(pair.code == 0, pair.err.constData());
    QJsonObject po = QJsonDocument::fromJson(pair.out).object();
    for (const QJsonValue& step : po["steps"].toArray())
      QVERIFY2(step.toObject()["strategy"].toString() != "probe-ops", pair.out.constData());
    QFile pair_repro(po["torch_repro"].toString());
    QVERIFY(pair_repro.open(QIODevice::ReadOnly));
    const QByteArray pair_text = pair_repro.readAll();
    QVERIFY(pair_text.contains("torch.ops.aten.relu.default(") && pair_text.contains("torch.ops.aten.sigmoid.default("));
    QVERIFY2(po["final_ops"].toInt() <= 3, pair.out.constData());
    // --oracle and --oracle-python together is a usage error.
    kiln::test::CliRun both = kiln::test::run_cli({"minify", input, "--check", "oracle", "--oracle-python", "python3",
                                                   "--oracle", "python3 {repro}", "--out", dir.filePath("out2")});
    QCOMPARE(both.code, 2);
  }
};

QTEST_GUILESS_MAIN(TestOraclePool)
#include "test_oracle_pool.moc"
