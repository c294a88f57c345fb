// torch.distributions (distributions_prelude.cpp), torch.multinomial and
// torch.Generator objects taken by torch's random functions, against PyTorch
// 2.11: tests/data/distributions/program.py draws every number from seeded
// generators, so Kiln must print what PyTorch printed (expected.txt) sample
// for sample; floating values within 1e-4 relative (measured: identical text).
#include "test_support.h"

#include <string>

#include "program_run_util.h"
#include "pytorch_output_compare.h"

namespace {

using kiln::test::read_text;

QString data_path(const char* name) { return QStringLiteral(KILN_SOURCE_DIR "/tests/data/distributions/") + name; }

kiln::test::ProgramRun run(const std::string& source, const std::string& backend = "none") {
  return kiln::test::run_program_reporting(source, backend);
}

const kiln::test::ProgramRun& program_run() {
  static const kiln::test::ProgramRun r = run(read_text(data_path("program.py")));
  return r;
}

const kiln::test::ProgramRun& transforms_run_result() {
  static const kiln::test::ProgramRun r = run(read_text(data_path("transforms.py")));
  return r;
}

const kiln::test::ProgramRun& mvn_run_result() {
  static const kiln::test::ProgramRun r = run(read_text(data_path("mvn.py")));
  return r;
}

}  // namespace

class TestDistributions : public QObject {
  Q_OBJECT

 private slots:
  void program_runs() {
    const auto& r = program_run();
    kiln::test::expect_same_sections(r.code, r.err, r.out, read_text(data_path("expected.txt")), 8);
  }

  void matches_pytorch_data() { kiln::test::add_section_rows(program_run().out, read_text(data_path("expected.txt"))); }
  void matches_pytorch() { kiln::test::compare_fetched_section(1e-4); }

  // transforms.py: transforms, TransformedDistribution, Independent,
  // LogNormal, MultivariateNormal's sampling and kl_divergence. Its expected
  // output came from torch 1.13 (same formulas as 2.11 for what it prints);
  // regenerate with `cd tests/data/distributions && python3 transforms.py >
  // transforms_expected.txt`. Measured: identical text.
  void transforms_run() {
    const auto& r = transforms_run_result();
    kiln::test::expect_same_sections(r.code, r.err, r.out, read_text(data_path("transforms_expected.txt")), 8);
  }
  void transforms_match_pytorch_data() {
    kiln::test::add_section_rows(transforms_run_result().out, read_text(data_path("transforms_expected.txt")));
  }
  void transforms_match_pytorch() { kiln::test::compare_fetched_section(1e-4); }

  // The karpathy/pytorch-normalizing-flows line that used to stop Kiln.
  void logistic_prior_log_prob() {
    auto r = run("import torch\nfrom torch.distributions import Uniform, TransformedDistribution, SigmoidTransform\n"
                 "x = torch.tensor([[0.5, -1.0]])\n"
                 "print(TransformedDistribution(Uniform(0, 1), SigmoidTransform().inv).log_prob(x))\n");
    QVERIFY2(r.code == 0, r.err.c_str());
    QCOMPARE(QString::fromStdString(r.out), QString("tensor([[-1.4482, -1.6265]])\n"));
  }

  // mvn.py: MultivariateNormal from a covariance or precision matrix
  // (torch.linalg.cholesky, solve_triangular, cholesky_inverse), log_prob,
  // MVN-MVN kl_divergence, a few steps of fitting a covariance by SGD, and the
  // linalg ops with their gradients and error messages. Expected output from
  // Debian's torch 1.13 (the formulas and messages are 2.11's too; regenerate
  // with torch 2.11: cd tests/data/distributions && python3 mvn.py >
  // mvn_expected.txt). Measured: identical text.
  void multivariate_normal_by_covariance() {
    const auto& r = mvn_run_result();
    kiln::test::expect_same_sections(r.code, r.err, r.out, read_text(data_path("mvn_expected.txt")), 4);
  }
  void multivariate_normal_matches_pytorch_data() {
    kiln::test::add_section_rows(mvn_run_result().out, read_text(data_path("mvn_expected.txt")));
  }
  void multivariate_normal_matches_pytorch() { kiln::test::compare_fetched_section(1e-4); }

  // Distributions PyTorch has and Kiln does not model are refused by name.
  void unmodelled_distribution_refused() {
    auto r = run("import torch\nfrom torch.distributions import Beta\n");
    QCOMPARE(r.code, 3);
    QVERIFY2(r.err.find("'Beta'") != std::string::npos, r.err.c_str());
  }

  // The draws depend on the generator's state: another seed before the
  // Categorical section changes its samples and only what follows from them.
  void samples_follow_the_seed() {
    const std::string source =
        kiln::test::replaced_once(read_text(data_path("program.py")), "torch.manual_seed(5)", "torch.manual_seed(6)");
    QVERIFY(!source.empty());
    auto r = run(source);
    QCOMPARE(r.code, 0);
    QCOMPARE(kiln::test::differing_sections(r.out, read_text(data_path("expected.txt")), 1e-4), QStringList{"categorical"});
  }

  // A torch.Generator is a Python object Kiln does not put into a graph: the
  // compiled function breaks there, runs the draw eagerly, and draws from that
  // generator, not the global one.
  void generator_in_compiled_code() {
    auto r = run(R"PY(import torch
def f(x, g):
    y = x * 2
    return y + torch.rand(3, generator=g)
g = torch.Generator().manual_seed(1)
h = torch.Generator().manual_seed(1)
torch.manual_seed(0)
expected_global = torch.rand(3)
torch.manual_seed(0)
out = torch.compile(f, backend="eager")(torch.ones(3), g)
print(bool((out == 2 + torch.rand(3, generator=h)).all()))
print(bool((torch.rand(3) == expected_global).all()))
)PY", "eager");
    QVERIFY2(r.code == 0, r.err.c_str());
    QCOMPARE(QString::fromStdString(r.out), QString("True\nTrue\n"));
  }

  // Positional torch.Generator arguments are not PyTorch's signatures either.
  void generator_only_by_keyword() {
    auto r = run("import torch\ng = torch.Generator()\ntorch.rand(3, g)\n");
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.find("a torch.Generator is only taken as the generator= keyword") != std::string::npos, r.err.c_str());
  }
};

QTEST_GUILESS_MAIN(TestDistributions)
#include "test_distributions.moc"
