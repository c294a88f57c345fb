// torch.save and torch.load in PyTorch's format: a checkpoint written by
// PyTorch loads with what PyTorch printed for it (fixtures and their text from
// tests/data/serialization/make_fixtures.py), Kiln's own files load back with
// views still sharing storage, and a file that calls a function is refused
// without running it.
#include <QTemporaryDir>
#include <QtTest/QtTest>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "python_run_util.h"

namespace {

std::string fixtures() { return std::string(KILN_SOURCE_DIR) + "/tests/data/serialization"; }

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

kiln::test::Ran run_in(const std::string& source, const std::string& read_dir, const std::string& write_dir = "") {
  kiln::test::Ran r;
  kiln::py::VMOptions o;
  o.out = [&r](std::string_view s) { r.out += s; };
  o.err = [&r](std::string_view s) { r.err += s; };
  o.argv = {"prog.py"};
  o.allow_read = {read_dir};
  if (!write_dir.empty()) o.allow_write = {write_dir};
  kiln::py::VM vm(o);
  r.status = vm.run_source(source, "prog.py", &r.exit);
  return r;
}

}  // namespace

class TestPythonSerialization : public QObject {
  Q_OBJECT

 private slots:
  void loadsWhatPyTorchWrote() {
    std::string program = read_text(fixtures() + "/load_checkpoint.py");
    const std::string path = fixtures() + "/checkpoint.pt";
    program.replace(program.find("\"checkpoint.pt\""), 15, "\"" + path + "\"");
    kiln::test::Ran r = run_in(program, fixtures());
    QVERIFY2(r.exit == 0, r.err.c_str());
    QCOMPARE(r.out, read_text(fixtures() + "/checkpoint.txt"));
  }

  void roundTripKeepsViewsAndKinds() {
    QTemporaryDir dir;
    const std::string d = dir.path().toStdString();
    const std::string program =
        "import torch, torch.nn as nn\n"
        "x = torch.arange(6.).reshape(2, 3)\n"
        "torch.save({'x': x, 'col': x[:, 1], 'p': nn.Parameter(torch.ones(2)), 'n': [1, 2.5, None, 'a', (True,)],\n"
        "            'big': -(2**40), 's': torch.Size([4])}, '" + d + "/ck.pt')\n"
        "s = torch.load('" + d + "/ck.pt')\n"
        "s['x'][1, 1] = 40.\n"
        "print(s['col'], type(s['p']).__name__, s['p'].requires_grad, s['n'], s['big'], s['s'])\n";
    kiln::test::Ran r = run_in(program, d, d);
    QVERIFY2(r.exit == 0, r.err.c_str());
    QCOMPARE(r.out, std::string("tensor([ 1., 40.]) Parameter True [1, 2.5, None, 'a', (True,)] -1099511627776 torch.Size([4])\n"));
    QVERIFY(!std::filesystem::exists(d + "/ck.pt.tmp"));
  }

  void codeInAFileIsNeverRun() {
    const std::string program = "import torch\ntry:\n    torch.load('" + fixtures() + "/hostile.pt')\nexcept Exception as e:\n"
                                "    print(type(e).__name__, 'os.system' in str(e))\n";
    kiln::test::Ran r = run_in(program, fixtures());
    QVERIFY2(r.exit == 0, r.err.c_str());
    QCOMPARE(r.out, std::string("UnpicklingError True\n"));
    const std::string unsafe = "import torch\ntorch.load('" + fixtures() + "/hostile.pt', weights_only=False)\n";
    r = run_in(unsafe, fixtures());
    QCOMPARE(r.exit, 3);
    QVERIFY2(kiln::test::last_error_line(r.err).find("os.system") != std::string::npos, r.err.c_str());
  }

  void refusesWhatItCannotWrite() {
    QTemporaryDir dir;
    const std::string d = dir.path().toStdString();
    kiln::test::Ran r = run_in("import torch, torch.nn as nn\ntorch.save(nn.Linear(2, 2), '" + d + "/m.pt')\n", d, d);
    QCOMPARE(r.exit, 3);
    QVERIFY2(kiln::test::last_error_line(r.err).find("state_dict()") != std::string::npos, r.err.c_str());
    QVERIFY(!std::filesystem::exists(d + "/m.pt"));
    r = run_in("import torch\ntorch.save({'a': 1}, 'elsewhere.pt')\n", d);
    QCOMPARE(r.exit, 1);  // PermissionError: no folder allows writing
  }
};

QTEST_GUILESS_MAIN(TestPythonSerialization)
#include "test_python_serialization.moc"
