// The workbench and `kiln-cli stages` list the same stages, with the same
// names, for every bundled example and every reference dump (issue 21): both
// come from run_region() (and for dumps from session/trace_stages.h), and this
// is the check that nothing in between adds, drops or renames one. The CLI's
// own summary lines ("result", "stopped after") are no stages, and steps that
// did not run ("skipped", "not generated") show in the workbench's status,
// not its stage list; a dump's own stages are "from the trace".
#include <QDir>
#include <QRegularExpression>
#include <QtTest>

#include "test_support.h"
#include "session/session.h"

using namespace kiln::session;

class TestStageLists : public QObject {
  Q_OBJECT

  // "[0/0] forward cse #6" per stage the CLI printed.
  static QStringList cli_stages(const QString& input) {
    auto run = kiln::test::run_cli({"stages", input, "--print-after", "none"});
    if (run.code != 0) qWarning("kiln-cli stages %s: exit %d: %s", qPrintable(input), run.code, run.err.constData());
    static const QRegularExpression header(
        R"(^=== (\[[^\]]+\] .+?)  (\d+\.\d+ ms|from the trace|skipped|not generated|failed))");
    QStringList out;
    for (const QByteArray& line : run.out.split('\n')) {
      auto m = header.match(QString::fromUtf8(line));
      if (!m.hasMatch() || !(m.captured(2).endsWith(" ms") || m.captured(2) == "from the trace")) continue;
      out << m.captured(1);
    }
    return out;
  }

  // The first difference, with what surrounds it; empty when the lists agree.
  static QString difference(const QString& name, const QStringList& gui, const QStringList& cli) {
    if (gui == cli) return {};
    qsizetype i = 0;
    while (i < gui.size() && i < cli.size() && gui[i] == cli[i]) ++i;
    return QString("%1: stage %2 differs: workbench '%3', kiln-cli '%4' (%5 against %6 stages)")
        .arg(name)
        .arg(i)
        .arg(i < gui.size() ? gui[i] : "(none)")
        .arg(i < cli.size() ? cli[i] : "(none)")
        .arg(gui.size())
        .arg(cli.size());
  }

  // `input` loaded in the session (its stages into `gui`) and through
  // kiln-cli stages: what is wrong, or empty when both list the same stages.
  static QString same_stages(const QString& input, const QString& name, QStringList& gui) {
    auto session = load_session(input.toStdString());
    if (!session.ok()) return name + ": " + QString::fromStdString(session.status().to_string());
    gui = gui_stages(**session);
    if (gui.isEmpty()) return name + ": the workbench lists no stages";
    return difference(name, gui, cli_stages(input));
  }

  // Every dump the reference data holds: TORCH_TRACE folders, TORCH_COMPILE_DEBUG
  // folders, and the minifier runs' trace folders and repro files.
  static QStringList reference_dumps() {
    const QDir ref(QString::fromStdString(kiln::test::reference_dir()));
    QStringList out;
    for (const QString& d : QDir(ref.filePath("traces")).entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name))
      out << ref.filePath("traces/" + d);
    for (const QString& d : QDir(ref.filePath("compile_debug")).entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name))
      for (const QString& run : QDir(ref.filePath("compile_debug/" + d)).entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name))
        out << ref.filePath("compile_debug/" + d + "/" + run);
    for (const QString& d : QDir(ref.filePath("minifier")).entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name))
      for (const QString& f : {QStringLiteral("trace"), QStringLiteral("repro.py"), QStringLiteral("minifier_launcher.py")})
        if (QFileInfo::exists(ref.filePath("minifier/" + d + "/" + f))) out << ref.filePath("minifier/" + d + "/" + f);
    return out;
  }

  static QStringList gui_stages(const Session& s) {
    QStringList out;
    for (const SessionCompile& c : s.compiles)
      for (const SessionStage& st : c.stages) out << QString::fromStdString("[" + c.id + "] " + st.name);
    return out;
  }

 private slots:
  void every_example_lists_the_same_stages() {
    const QDir examples(QStringLiteral(KILN_SOURCE_DIR "/resources/examples"));
    const QStringList programs = examples.entryList({"*.py"}, QDir::Files, QDir::Name);
    QVERIFY2(programs.size() >= 10, qPrintable(examples.path()));
    for (const QString& name : programs) {
      QStringList gui;
      if (QString problem = same_stages(examples.filePath(name), name, gui); !problem.isEmpty()) QFAIL(qPrintable(problem));
    }
  }

  // Each dump lists PyTorch's stages and then Kiln's ("kiln ..."), the same in both.
  void every_reference_dump_lists_the_same_stages() {
    const QStringList dumps = reference_dumps();
    QVERIFY2(dumps.size() >= 12, qPrintable(dumps.join(", ")));
    int with_kiln_stages = 0;
    for (const QString& path : dumps) {
      QStringList gui;
      if (QString problem = same_stages(path, path, gui); !problem.isEmpty()) QFAIL(qPrintable(problem));
      with_kiln_stages += gui.filter(QRegularExpression(R"(^\[[^\]]+\] kiln )")).isEmpty() ? 0 : 1;
    }
    // Kiln's pipeline ran on the dumps' ATen graphs, not only PyTorch's stages were listed.
    QVERIFY2(with_kiln_stages >= dumps.size() - 2, qPrintable(QString::number(with_kiln_stages)));
  }
};

QTEST_GUILESS_MAIN(TestStageLists)
#include "test_stage_lists.moc"
