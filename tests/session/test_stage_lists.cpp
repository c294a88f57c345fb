// The workbench and `kiln-cli stages` list the same stages, with the same
// names, for every bundled example (issue 21): both come from run_region(),
// and this is the check that nothing in between adds, drops or renames one.
// The CLI's own summary lines ("result", "stopped after") are no stages, and
// steps that did not run ("skipped", "not generated") show in the
// workbench's status, not its stage list.
#include <QDir>
#include <QRegularExpression>
#include <QtTest>

#include "test_support.h"
#include "session/session.h"

using namespace kiln::session;

class TestStageLists : public QObject {
  Q_OBJECT

  // "[0/0] forward cse #6" per stage the CLI printed.
  static QStringList cli_stages(const QString& program) {
    auto run = kiln::test::run_cli({"stages", program, "--print-after", "none"});
    if (run.code != 0) qWarning("kiln-cli stages %s: exit %d: %s", qPrintable(program), run.code, run.err.constData());
    static const QRegularExpression header(R"(^=== (\[[^\]]+\] .+?)  (\d+\.\d+ ms|skipped|not generated|failed))");
    QStringList out;
    for (const QByteArray& line : run.out.split('\n')) {
      auto m = header.match(QString::fromUtf8(line));
      if (!m.hasMatch() || !m.captured(2).endsWith(" ms")) continue;
      out << m.captured(1);
    }
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
      const QString path = examples.filePath(name);
      auto session = load_session(path.toStdString());
      QVERIFY2(session.ok(), qPrintable(name + ": " + QString::fromStdString(session.status().to_string())));
      const QStringList gui = gui_stages(**session);
      const QStringList cli = cli_stages(path);
      QVERIFY2(!gui.isEmpty(), qPrintable(name));
      if (gui != cli) {
        // The first difference, with what surrounds it.
        qsizetype i = 0;
        while (i < gui.size() && i < cli.size() && gui[i] == cli[i]) ++i;
        QFAIL(qPrintable(QString("%1: stage %2 differs: workbench '%3', kiln-cli '%4' (%5 against %6 stages)")
                             .arg(name)
                             .arg(i)
                             .arg(i < gui.size() ? gui[i] : "(none)")
                             .arg(i < cli.size() ? cli[i] : "(none)")
                             .arg(gui.size())
                             .arg(cli.size())));
      }
    }
  }
};

QTEST_GUILESS_MAIN(TestStageLists)
#include "test_stage_lists.moc"
