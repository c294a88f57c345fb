// Complex tensors (core/python/complex_prelude.cpp) against PyTorch 2.11:
// tests/data/complex/program.py builds Llama-style rotary embeddings, prints
// complex tensors, takes gradients through view_as_complex, polar and complex
// products, and provokes PyTorch's errors; Kiln must print what PyTorch
// printed (expected.txt), numbers within 1e-4 relative (measured: identical
// text). Compiled, the same rotation is one graph of real ops whose numbers
// equal eager's; what the subset does not model is refused with exit 3.
#include "test_support.h"

#include <string>

#include "program_run_util.h"
#include "pytorch_output_compare.h"

namespace {

using kiln::test::read_text;

QString data_path(const char* name) { return QStringLiteral(KILN_SOURCE_DIR "/tests/data/complex/") + name; }

kiln::test::ProgramRun run(const std::string& source, const std::string& backend = "none") {
  return kiln::test::run_program_reporting(source, backend);
}

const kiln::test::ProgramRun& program_run() {
  static const kiln::test::ProgramRun r = run(read_text(data_path("program.py")));
  return r;
}

const char* const kRotary = R"PY(import torch
torch.manual_seed(0)
def table(dim, end):
    freqs = 1.0 / (10000.0 ** (torch.arange(0, dim, 2).float() / dim))
    angles = torch.outer(torch.arange(end), freqs).float()
    return torch.polar(torch.ones_like(angles), angles)
def rotate(x, freqs):
    x_ = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    freqs = freqs.view(1, x_.shape[1], 1, x_.shape[-1])
    return torch.view_as_real(x_ * freqs).flatten(3).type_as(x)
freqs = table(8, 5)
x = torch.randn(2, 5, 3, 8)
compiled = torch.compile(rotate)(x, freqs)
eager = rotate(x, freqs)
print((compiled - eager).abs().max().item() < 1e-6, compiled.shape)
explained = torch._dynamo.explain(rotate)(x, freqs)
print(explained.graph_count, explained.graph_break_count)
)PY";

}  // namespace

class TestComplex : public QObject {
  Q_OBJECT

 private slots:
  void program_runs() {
    const auto& r = program_run();
    kiln::test::expect_same_sections(r.code, r.err, r.out, read_text(data_path("expected.txt")), 9);
  }

  void matches_pytorch_data() { kiln::test::add_section_rows(program_run().out, read_text(data_path("expected.txt"))); }
  void matches_pytorch() { kiln::test::compare_fetched_section(1e-4); }

  // The rotation's numbers depend on the angles: another seed changes the
  // rotated and gradient sections only.
  void numbers_follow_the_data() {
    const std::string source =
        kiln::test::replaced_once(read_text(data_path("program.py")), "torch.manual_seed(5)", "torch.manual_seed(6)");
    QVERIFY(!source.empty());
    auto r = run(source);
    QCOMPARE(r.code, 0);
    QCOMPARE(kiln::test::differing_sections(r.out, read_text(data_path("expected.txt")), 1e-4),
             (QStringList{"rotate", "half precision"}));
  }

  // Dynamo captures the rotation in one graph; Kiln's is real ops on the pair.
  void compiled_rotation_is_one_graph() {
    for (const char* backend : {"eager", "kiln"}) {
      auto r = run(kRotary, backend);
      QVERIFY2(r.code == 0, r.err.c_str());
      QCOMPARE(QString::fromStdString(r.out), QString("True torch.Size([2, 5, 3, 8])\n1 0\n"));
    }
  }

  // What the complex subset lacks is Kiln's gap, named, with exit 3.
  void unmodelled_uses_are_refused() {
    const std::string z = "import torch\nz = torch.complex(torch.ones(2), torch.zeros(2))\n";
    for (const char* use : {"torch.matmul(z, z)", "z.sin()", "z.tolist()", "torch.nn.functional.relu(z)",
                            "torch.randn(2, dtype=torch.complex64)", "z.to(torch.float32)"}) {
      auto r = run(z + use + "\n");
      QVERIFY2(r.code == 3, use);
      QVERIFY2(r.err.find("outside Kiln's complex subset") != std::string::npos, r.err.c_str());
      // Located at the program's line, not in Kiln's Python that refused it.
      QVERIFY2(r.status.to_string().starts_with("test.py:3:"), r.status.to_string().c_str());
    }
  }

  // Operators between tensors and other objects still raise Python's TypeError
  // once no reflected method answers; a class's own __neg__ is used.
  void operators_with_other_objects() {
    auto r = run("import torch\ntorch.ones(2) + [1]\n");
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.find("TypeError: unsupported operand type(s) for +: 'Tensor' and 'list'") != std::string::npos,
             r.err.c_str());
    r = run("import torch\nclass A:\n    def __rmul__(self, o):\n        return 'r'\n    def __neg__(self):\n"
            "        return 'n'\nprint(torch.ones(2) * A(), -A())\n");
    QVERIFY2(r.code == 0, r.err.c_str());
    QCOMPARE(QString::fromStdString(r.out), QString("r n\n"));
  }
};

QTEST_GUILESS_MAIN(TestComplex)
#include "test_complex.moc"
