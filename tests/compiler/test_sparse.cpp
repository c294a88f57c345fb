// Sparse COO tensors (core/python/sparse_prelude.cpp) against PyTorch 2.11:
// tests/data/sparse/program.py builds, prints and coalesces sparse tensors,
// multiplies them with dense ones (gradients included) and trains a two-layer
// graph convolution as pytorch/examples' GCN does; Kiln must print what
// PyTorch printed (expected.txt), numbers within 1e-4 relative (measured:
// identical text). Index checks PyTorch skips by default are errors here;
// what the subset does not model is refused with exit 3.
#include "test_support.h"

#include <string>

#include "program_run_util.h"
#include "pytorch_output_compare.h"

namespace {

using kiln::test::read_text;

QString data_path(const char* name) { return QStringLiteral(KILN_SOURCE_DIR "/tests/data/sparse/") + name; }

kiln::test::ProgramRun run(const std::string& source, const std::string& backend = "none") {
  return kiln::test::run_program_reporting(source, backend);
}

const kiln::test::ProgramRun& program_run() {
  static const kiln::test::ProgramRun r = run(read_text(data_path("program.py")));
  return r;
}

const char* const kMatrix = "import torch\ns = torch.sparse_coo_tensor(torch.tensor([[0, 1], [1, 0]]), "
                            "torch.tensor([2.0, 3.0]), (2, 2))\n";

}  // namespace

class TestSparse : public QObject {
  Q_OBJECT

 private slots:
  void program_runs() {
    const auto& r = program_run();
    kiln::test::expect_same_sections(r.code, r.err, r.out, read_text(data_path("expected.txt")), 6);
  }

  void matches_pytorch_data() { kiln::test::add_section_rows(program_run().out, read_text(data_path("expected.txt"))); }
  void matches_pytorch() { kiln::test::compare_fetched_section(1e-4); }

  // The products and the training depend on the random data: another seed
  // changes those sections only.
  void numbers_follow_the_data() {
    const std::string source =
        kiln::test::replaced_once(read_text(data_path("program.py")), "torch.manual_seed(5)", "torch.manual_seed(6)");
    QVERIFY(!source.empty());
    auto r = run(source);
    QCOMPARE(r.code, 0);
    QCOMPARE(kiln::test::differing_sections(r.out, read_text(data_path("expected.txt")), 1e-4),
             (QStringList{"products", "graph convolution"}));
  }

  // PyTorch builds a tensor with an index past its size unless invariant
  // checks are on, and crashes or reads garbage later; Kiln refuses it.
  void indices_are_checked() {
    auto r = run("import torch\ntorch.sparse_coo_tensor(torch.tensor([[0, 2]]), torch.ones(2), (2,))\n");
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.find("RuntimeError: size is inconsistent with indices: for dim 0, size is 2 but found index 2") !=
                 std::string::npos,
             r.err.c_str());
  }

  // What the sparse subset lacks is Kiln's gap, named at the program's line, exit 3.
  void unmodelled_uses_are_refused() {
    for (const char* use : {"s.sin()", "s[0]", "torch.nn.functional.relu(s)", "s.sum(0)", "s * torch.ones(2, 2)",
                            "torch.ones(2).to_sparse(1)"}) {
      auto r = run(std::string(kMatrix) + use + "\n");
      QVERIFY2(r.code == 3, use);
      QVERIFY2(r.err.find("outside Kiln's sparse subset") != std::string::npos, r.err.c_str());
      QVERIFY2(r.status.to_string().starts_with("test.py:3:"), r.status.to_string().c_str());
    }
  }

  // A compiled function given a sparse tensor computes what eager computes.
  void compiled_product_matches_eager() {
    auto r = run(std::string(kMatrix) +
                     "def f(a, x):\n    return torch.sparse.mm(a, x).relu()\n"
                     "x = torch.randn(2, 3)\nprint(torch.equal(torch.compile(f)(s, x), f(s, x)))\n",
                 "kiln");
    QVERIFY2(r.code == 0, r.err.c_str());
    QCOMPARE(QString::fromStdString(r.out), QString("True\n"));
  }
};

QTEST_GUILESS_MAIN(TestSparse)
#include "test_sparse.moc"
