// The language against CPython: each program in tests/data/language prints
// what CPython printed for it (generate.sh there), to the byte, and when it
// fails, fails with CPython's traceback and exit code. The programs use no
// torch, so CPython itself is the oracle.
#include <QtTest/QtTest>

#include <fstream>
#include <sstream>

#include "core/python/vm.h"

using namespace kiln::py;

namespace {

const std::string kDir = std::string(KILN_SOURCE_DIR) + "/tests/data/language/";

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

class TestPythonLanguage : public QObject {
  Q_OBJECT
 private slots:
  void prints_what_cpython_printed_data() {
    QTest::addColumn<QString>("stem");
    const QStringList programs = QDir(QString::fromStdString(kDir)).entryList({"*.py"}, QDir::Files, QDir::Name);
    QVERIFY(programs.size() >= 3);
    for (const QString& p : programs) QTest::newRow(qPrintable(p)) << p.chopped(3);
  }

  void prints_what_cpython_printed() {
    QFETCH(QString, stem);
    const std::string name = stem.toStdString();
    const std::string source = read_text(kDir + name + ".py");
    const std::string want_out = read_text(kDir + name + ".stdout");
    const std::string want_err = read_text(kDir + name + ".stderr");
    const std::string exit_text = read_text(kDir + name + ".exit");
    const int want_exit = exit_text.empty() ? 0 : std::stoi(exit_text);
    QVERIFY2(!source.empty(), name.c_str());
    std::string out, err;
    VMOptions options;
    options.out = [&out](std::string_view s) { out += s; };
    options.err = [&err](std::string_view s) { err += s; };
    VM vm(options);
    int code = -1;
    vm.run_source(source, name + ".py", &code);
    QCOMPARE(QString::fromStdString(out), QString::fromStdString(want_out));
    QCOMPARE(QString::fromStdString(err), QString::fromStdString(want_err));
    QCOMPARE(code, want_exit);
  }
};

QTEST_GUILESS_MAIN(TestPythonLanguage)
#include "test_python_language.moc"
