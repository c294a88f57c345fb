// The program-level fuzzer's parts (tools/program_fuzz): the comparison, the
// rendering of a reduced program, ddmin, the generator's determinism, and that
// the whole loop notices a wrong compiled result (an injected relu bug).
#include <QtTest/QtTest>

#include <cstdlib>

#include "compare.h"
#include "program_gen.h"
#include "reduce.h"
#include "runner.h"

using namespace kiln::fuzz;

class TestProgramFuzz : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { qputenv("KILN_COMPILE_CACHE", "0"); }

  void numbers_compare_within_tolerance_text_exactly() {
    QCOMPARE(compare_outputs("loss [] 0.5\nw [2] 1 2\n", "loss [] 0.5000001\nw [2] 1 2\n"), std::string());
    QVERIFY(compare_outputs("loss [] 0.5\n", "loss [] 0.51\n").find("line 1, token 3") != std::string::npos);
    QVERIFY(compare_outputs("a None\n", "a [2] 0 0\n").find("line 1") != std::string::npos);
    QVERIFY(compare_outputs("a 1\n", "a 1\nb 2\n").find("extra line") != std::string::npos);
    QVERIFY(compare_outputs("a 1\nb 2\n", "a 1\n").find("missing line") != std::string::npos);
    QVERIFY(compare_outputs("x nan\n", "x 1\n") != "");
    QCOMPARE(compare_outputs("x nan\n", "x nan\n"), std::string());
    // Near-zero elements of a large tensor take the tensor's rounding...
    QCOMPARE(compare_outputs("g [3] 259.568 -0.00102 42\n", "g [3] 259.585 3.03e-05 42\n"), std::string());
    // ...but not a wrong value of that size.
    QVERIFY(compare_outputs("g [3] 259.568 -0.5 42\n", "g [3] 259.568 0.5 42\n") != "");
  }

  void an_emptied_block_gets_pass() {
    ProgramText p;
    ProgramBuilder b(p);
    b.open("def f(x):");
    b.line("y = x + 1");
    b.line("return x", false);
    b.close();
    b.open("for i in range(2):");
    b.line("print(f(i))");
    b.close();
    std::vector<size_t> keep;  // every removable line left out
    QCOMPARE(p.render(&keep), std::string("def f(x):\n    return x\nfor i in range(2):\n    pass\n"));
    QCOMPARE(p.render(), std::string("def f(x):\n    y = x + 1\n    return x\nfor i in range(2):\n    print(f(i))\n"));
  }

  void ddmin_keeps_only_what_the_failure_needs() {
    ProgramText p;
    ProgramBuilder b(p);
    for (int i = 0; i < 40; ++i) b.line("a" + std::to_string(i) + " = " + std::to_string(i));
    auto fails = [](const std::string& s) { return s.find("a7 =") != std::string::npos && s.find("a31 =") != std::string::npos; };
    Reduced r = reduce_program(p, fails, 500);
    QCOMPARE(r.program, std::string("a7 = 7\na31 = 31\n"));
    QCOMPARE(r.lines_before, size_t(40));
    QCOMPARE(r.lines_after, size_t(2));
    QVERIFY(!r.budget_hit);
  }

  void a_seed_always_gives_the_same_program() {
    QCOMPARE(generate_program(42).render(), generate_program(42).render());
    QVERIFY(generate_program(42).render() != generate_program(43).render());
    GenOptions five;
    five.steps = 5;
    QVERIFY(generate_program(42, five).render().find("range(5)") != std::string::npos);
  }

  // The loop must be able to fail: with the kiln backend's relu made wrong,
  // some program of a few seeds that calls F.relu prints other numbers.
  void an_injected_codegen_bug_is_a_mismatch() {
    const char* program = R"(import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)
lin = nn.Linear(4, 4)
@torch.compile
def f(x):
    return F.relu(lin(x)).sum()
print("%.6f" % f(torch.randn(3, 4)).item())
)";
    std::vector<RunResult> clean = run_all({{program, "none", 120}, {program, "kiln", 120}}, 2);
    QCOMPARE(clean[0].status(), std::string("ok"));
    QCOMPARE(classify_run(clean[0], clean[1]).first, std::string());
    qputenv("KILN_INJECT_BUG", "relu:accuracy");
    std::vector<RunResult> wrong = run_all({{program, "none", 120}, {program, "kiln", 120}}, 2);
    qunsetenv("KILN_INJECT_BUG");
    QCOMPARE(wrong[0].out, clean[0].out);
    QCOMPARE(classify_run(wrong[0], wrong[1]).first, std::string("wrong-output"));
  }

  void a_crash_and_an_error_are_findings() {
    RunResult ok, crash, error;
    ok.out = "a 1\n";
    crash.signal = 11;
    error.code = 1;
    error.err = "Traceback\nRuntimeError: boom\n";
    QCOMPARE(classify_run(ok, crash).first, std::string("crash"));
    auto [kind, detail] = classify_run(ok, error);
    QCOMPARE(kind, std::string("error"));
    QVERIFY2(detail.find("RuntimeError: boom") != std::string::npos, detail.c_str());
  }

  void generated_programs_agree_under_every_cpu_backend() {
    for (uint64_t seed = 1000; seed < 1006; ++seed) {
      const std::string source = generate_program(seed).render();
      std::vector<RunResult> r = run_all({{source, "none", 120}, {source, "aot_eager", 120}, {source, "kiln", 120}}, 2);
      QVERIFY2(r[0].status() == "ok", (std::to_string(seed) + ": " + r[0].err).c_str());
      for (size_t k = 1; k < r.size(); ++k) {
        auto [kind, detail] = classify_run(r[0], r[k]);
        QVERIFY2(kind.empty(), (std::to_string(seed) + ": " + kind + ": " + detail).c_str());
      }
    }
  }
};

QTEST_GUILESS_MAIN(TestProgramFuzz)
#include "test_program_fuzz.moc"
