// The minifier's processes and resources, end to end through kiln-cli: its
// children die with it, the oracle's temporary folders do not pile up, the
// oracle's output is bounded and matched in linear time, and --resume of a
// run that left nothing starts it. Each case once failed (issue 20).
#include "test_support.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QThread>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

namespace {

QString repro_py() { return QString::fromStdString(kiln::test::reference_dir()) + "/minifier/accuracy_cpu/repro.py"; }

bool process_alive(pid_t pid) {
  // A zombie waiting for init to reap it is dead for this purpose.
  QFile stat(QString("/proc/%1/stat").arg(pid));
  if (!stat.open(QIODevice::ReadOnly)) return false;
  const QByteArray text = stat.readAll();
  const int close = text.lastIndexOf(')');
  return close > 0 && close + 2 < text.size() && text[close + 2] != 'Z';
}

}  // namespace

class TestMinifyProcesses : public QObject {
  Q_OBJECT
 private slots:
  // kill -9 of minify left the forked evaluator and the oracle command
  // running (one used a CPU for four minutes).
  void children_die_with_the_minifier() {
    QTemporaryDir dir;
    const QString mark = dir.filePath("oracle.pid");
    QProcess p;
    p.start(QString::fromUtf8(KILN_CLI_PATH),
            {"minify", repro_py(), "--check", "oracle", "--oracle", "echo $$ > " + mark + "; sleep 600; true {repro}", "--out",
             dir.filePath("out")});
    QVERIFY(p.waitForStarted());
    for (int i = 0; i < 200 && !QFile::exists(mark); ++i) QThread::msleep(50);
    QThread::msleep(200);
    QFile f(mark);
    QVERIFY2(f.open(QIODevice::ReadOnly), "the oracle never started");
    const pid_t oracle = pid_t(f.readAll().trimmed().toLong());
    QVERIFY(oracle > 0 && process_alive(oracle));
    ::kill(pid_t(p.processId()), SIGKILL);
    p.waitForFinished();
    bool gone = false;
    for (int i = 0; i < 100 && !gone; ++i) {
      gone = !process_alive(oracle);
      if (!gone) QThread::msleep(50);
    }
    QVERIFY2(gone, "the oracle command outlived the minifier");
    // What the killed run left in the temp folder goes when the next one starts.
    QStringList left = QDir(QDir::tempPath()).entryList({"kiln-oracle-*"}, QDir::Dirs);
    QVERIFY(!left.isEmpty());
    auto next = kiln::test::run_cli({"minify", repro_py(), "--check", "oracle", "--oracle", "false {repro}", "--out",
                                     dir.filePath("out2"), "--timeout", "30"},
                                    300000);
    Q_UNUSED(next);
    for (const QString& name : left) {
      const long pid = name.mid(12).section('-', 0, 0).toLong();
      if (pid > 0 && ::kill(pid_t(pid), 0) != 0) QVERIFY2(!QDir(QDir::tempPath() + "/" + name).exists(), qPrintable(name));
    }
  }

  // --oracle 'yes {repro}' grew to 6.3 GB in 15 s; --oracle-match with
  // std::regex overflowed the stack on 200 KB of output.
  void oracle_output_is_bounded_and_matched_in_linear_time() {
    QTemporaryDir dir;
    auto endless = kiln::test::run_cli({"minify", repro_py(), "--check", "oracle", "--oracle", "yes {repro}", "--timeout", "4",
                                        "--out", dir.filePath("a")},
                                       300000);
    QVERIFY2(endless.code == 0 || endless.code == 1 || endless.code == 3, endless.err.constData());
    struct rusage usage {};
    ::getrusage(RUSAGE_CHILDREN, &usage);
    QVERIFY2(usage.ru_maxrss < 1024 * 1024, qPrintable(QString("largest child: %1 KB").arg(usage.ru_maxrss)));
    auto long_line = kiln::test::run_cli({"minify", repro_py(), "--check", "oracle", "--oracle",
                                          "head -c 200000 /dev/zero | tr '\\\\0' a; echo; exit 1; true {repro}",
                                          "--oracle-match", "(a|b)*c", "--out", dir.filePath("b"), "--timeout", "30"},
                                         300000);
    // The pattern never matches: nothing to minify (std::regex crashed the evaluator, a false "failure").
    QVERIFY2(long_line.code == 1 || long_line.code == 3, long_line.err.constData());
    QVERIFY2(long_line.err.contains("output does not match; nothing to minify"), long_line.err.constData());
  }

  // --resume where a run was killed before its first accepted step exited 3
  // "no run to resume"; with INPUT it now starts the run.
  void resume_with_nothing_to_resume_starts_the_run() {
    QTemporaryDir dir;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("KILN_INJECT_BUG", "relu:accuracy");
    auto r = kiln::test::run_cli({"minify", repro_py(), "--check", "accuracy", "--out", dir.filePath("out"), "--resume"}, 300000, env);
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.contains("nothing to resume") && r.out.contains("starting the run"), r.out.constData());
    auto none = kiln::test::run_cli({"minify", "--check", "accuracy", "--out", dir.filePath("empty"), "--resume"}, 60000, env);
    QCOMPARE(none.code, 3);
  }
};

QTEST_MAIN(TestMinifyProcesses)
#include "test_minify_processes.moc"
