// The float32 GEMM libraries behind core/ops/gemm.h (oneDNN and OpenBLAS):
// each layout the BLAS view maps (plain, transposed flags, packed copies) and
// the beta rules against a float64 loop on both, bit-identical repeats at a
// fixed thread count, a fork child that multiplies after the parent's OpenMP
// threads ran, and KILN_GEMM's (and KILN_GEMM_SMALL's) choice as
// `kiln-cli --version` reports it.
#include <QtTest>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/ops/gemm.h"
#include "core/ops/gemm_onednn.h"
#include "core/tensor/parallel.h"
#include "test_support.h"

using namespace kiln;
using gemm::Backend;
using gemm::MatRef;

namespace {

std::vector<float> fill(size_t n, unsigned seed) {
  std::vector<float> v(n);
  for (auto& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = float(int(seed >> 9) % 2001 - 1000) * 1e-3f;
  }
  return v;
}

// A rows x cols operand laid out as `layout` says: 'r' row-major, 'c'
// column-major (a transposed flag), 's' every other column of a wider
// row-major matrix (neither: the library gets a packed copy).
struct Operand {
  std::vector<float> data;
  MatRef<float> ref;
  Operand(int64_t rows, int64_t cols, char layout, unsigned seed) {
    if (layout == 'r') data = fill(size_t(rows * cols), seed), ref = {data.data(), cols, 1};
    if (layout == 'c') data = fill(size_t(rows * cols), seed), ref = {data.data(), 1, rows};
    if (layout == 's') data = fill(size_t(rows * cols * 2), seed), ref = {data.data(), 2 * cols, 2};
  }
  double at(int64_t i, int64_t j) const { return ref.p[i * ref.rs + j * ref.cs]; }
};

bool onednn_built() { return gemm::onednn::available() || gemm::onednn::load_error().find("no oneDNN") == std::string::npos; }

struct RestoreBackend {
  Backend saved = gemm::float_backend();
  ~RestoreBackend() { gemm::set_float_backend(saved); }
};

}  // namespace

class TestGemmBackends : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    if (!onednn_built()) QSKIP("built with KILN_ONEDNN=OFF");
    QVERIFY2(gemm::onednn::available(), gemm::onednn::load_error().c_str());
  }

  void layouts_and_beta_match_float64_on_both() {
    RestoreBackend restore;
    const int64_t m = 70, n = 90, k = 65;  // above is_small: oneDNN runs it
    QVERIFY(!gemm::is_small(m, n, k));
    for (Backend backend : {Backend::OneDNN, Backend::OpenBLAS}) {
      QVERIFY(gemm::set_float_backend(backend));
      for (char la : {'r', 'c', 's'})
        for (char lb : {'r', 'c', 's'})
          for (float beta : {0.f, 1.f, -0.5f}) {
            Operand a(m, k, la, 1), b(k, n, lb, 2);
            const int64_t ldc = n + 3;
            std::vector<float> c = fill(size_t(m * ldc), 3);
            // beta == 0 overwrites C without reading it: NaN there must not survive.
            if (beta == 0.f) std::fill(c.begin(), c.end(), std::numeric_limits<float>::quiet_NaN());
            std::vector<float> c0 = c;
            gemm::gemm<float>(m, n, k, 1.5f, a.ref, b.ref, beta, c.data(), ldc);
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < n; ++j) {
                double want = 0;
                for (int64_t p = 0; p < k; ++p) want += a.at(i, p) * b.at(p, j);
                want *= 1.5;
                if (beta != 0.f) want += double(beta) * c0[size_t(i * ldc + j)];
                const float got = c[size_t(i * ldc + j)];
                if (!(std::fabs(got - want) <= 1e-5 + 1e-5 * std::fabs(want)))
                  QFAIL(qPrintable(QString("%1 %2%3 beta %4: c[%5,%6] = %7, want %8")
                                       .arg(gemm::backend_name(backend)).arg(la).arg(lb).arg(beta).arg(i).arg(j)
                                       .arg(got).arg(want)));
              }
            // The padding between rows of C is not written.
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = n; j < ldc; ++j)
                QVERIFY(std::memcmp(&c[size_t(i * ldc + j)], &c0[size_t(i * ldc + j)], sizeof(float)) == 0);
          }
    }
  }

  // oneDNN's matmul primitive with its post-ops: each epilogue Kiln plans
  // (a number, a bias row, an addend added or subtracted, relu, tanh gelu),
  // alone and combined, on plain and transposed operands, against float64.
  // Padded rows of C or of the addend: oneDNN 2.6 has only its reference
  // (scalar) matmul for them on some machines, which is refused by name.
  void matmul_epilogues_match_float64() {
    for (bool padded : {false, true}) {
      matmul_epilogue_cases(padded);
      if (QTest::currentTestFailed()) return;
    }
  }

 private:
  void matmul_epilogue_cases(bool padded) {
    using gemm::onednn::Activation;
    const int64_t m = 70, n = 90, k = 65, ldc = padded ? n + 3 : n, ld_addend = padded ? n + 5 : n;
    struct Case {
      float alpha, shift;
      bool bias, addend, subtract;
      Activation act;
    };
    const Case cases[] = {{1, 0, false, false, false, Activation::Relu},  {1.5f, 1, false, false, false, Activation::Relu},
                          {1, 0, true, false, false, Activation::GeluTanh}, {1, 0, true, true, false, Activation::None},
                          {1, 0, false, true, true, Activation::Relu},     {-0.5f, 0.25f, true, true, true, Activation::GeluTanh}};
    std::vector<float> bias = fill(size_t(n), 7), addend = fill(size_t(m * ld_addend), 8);
    for (char la : {'r', 'c'})
      for (char lb : {'r', 'c'})
        for (const Case& t : cases) {
          Operand a(m, k, la, 1), b(k, n, lb, 2);
          std::vector<float> c(size_t(m * ldc), -7.f);
          gemm::onednn::Epilogue e;
          e.shift = t.shift;
          e.bias = t.bias ? bias.data() : nullptr;
          e.addend = t.addend ? addend.data() : nullptr;
          e.addend_ld = ld_addend;
          e.subtract_addend = t.subtract;
          e.activation = t.act;
          std::string why;
          if (!gemm::onednn::matmul(m, n, k, t.alpha, a.ref.p, a.ref.rs, a.ref.cs, b.ref.p, b.ref.rs, b.ref.cs,
                                    c.data(), ldc, e, 2, &why)) {
            QVERIFY2(padded && why.find("reference matmul") != std::string::npos, why.c_str());
            QVERIFY(std::all_of(c.begin(), c.end(), [](float v) { return v == -7.f; }));  // untouched
            continue;
          }
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < n; ++j) {
              double x = 0;
              for (int64_t p = 0; p < k; ++p) x += a.at(i, p) * b.at(p, j);
              x = x * t.alpha + t.shift;
              if (t.bias) x += bias[size_t(j)];
              if (t.addend) x += (t.subtract ? -1.0 : 1.0) * addend[size_t(i * ld_addend + j)];
              if (t.act == Activation::Relu) x = std::max(x, 0.0);
              if (t.act == Activation::GeluTanh) x = 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
              const float got = c[size_t(i * ldc + j)];
              if (!(std::fabs(got - x) <= 1e-5 + 1e-5 * std::fabs(x)))
                QFAIL(qPrintable(QString("%1%2 case alpha %3 shift %4: c[%5,%6] = %7, want %8")
                                     .arg(la).arg(lb).arg(t.alpha).arg(t.shift).arg(i).arg(j).arg(got).arg(x)));
            }
            for (int64_t j = n; j < ldc; ++j) QCOMPARE(c[size_t(i * ldc + j)], -7.f);  // padding untouched
          }
        }
  }


 private slots:
  // Same inputs, same thread count: the same bits (oneDNN may split K by the
  // thread count, so a different count may round differently; docs/performance.md).
  void repeats_are_bit_identical() {
    RestoreBackend restore;
    QVERIFY(gemm::set_float_backend(Backend::OneDNN));
    set_num_threads(2);
    for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{64, 64, 4096}, {300, 200, 500}}) {
      std::vector<float> a = fill(size_t(m * k), 4), b = fill(size_t(k * n), 5);
      std::vector<float> c1(size_t(m * n)), c2(size_t(m * n));
      gemm::gemm<float>(m, n, k, 1.f, {a.data(), k, 1}, {b.data(), n, 1}, 0.f, c1.data(), n);
      gemm::gemm<float>(m, n, k, 1.f, {a.data(), k, 1}, {b.data(), n, 1}, 0.f, c2.data(), n);
      QVERIFY(std::memcmp(c1.data(), c2.data(), c1.size() * sizeof(float)) == 0);
    }
    set_num_threads(0);
  }

  // libgomp's threads do not survive fork: a child that asked for a team would
  // wait for them forever. The child must multiply on its own thread.
  void fork_child_multiplies_after_parent_threads() {
    RestoreBackend restore;
    QVERIFY(gemm::set_float_backend(Backend::OneDNN));
    set_num_threads(2);
    const int64_t s = 256;
    std::vector<float> a = fill(size_t(s * s), 6), b = fill(size_t(s * s), 7), c(size_t(s * s));
    gemm::gemm<float>(s, s, s, 1.f, {a.data(), s, 1}, {b.data(), s, 1}, 0.f, c.data(), s);
    const std::vector<float> want = c;
    pid_t pid = fork();
    if (pid == 0) {
      alarm(30);  // a hang fails the test instead of stalling it
      std::vector<float> d(size_t(s * s));
      gemm::gemm<float>(s, s, s, 1.f, {a.data(), s, 1}, {b.data(), s, 1}, 0.f, d.data(), s);
      bool close = true;
      for (size_t i = 0; i < d.size(); ++i) close = close && std::fabs(d[i] - want[i]) <= 1e-4f;
      _exit(close ? 0 : 3);
    }
    QVERIFY(pid > 0);
    int status = 0;
    QCOMPARE(waitpid(pid, &status, 0), pid);
    QVERIFY2(WIFEXITED(status), "the fork child did not finish (killed by its alarm: a hang)");
    QCOMPARE(WEXITSTATUS(status), 0);
    set_num_threads(0);
  }

  void kiln_gemm_picks_the_library() {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove("KILN_GEMM_SMALL");
    env.insert("KILN_GEMM", "openblas");
    auto run = kiln::test::run_cli({"--version"}, 60000, env);
    QCOMPARE(run.code, 0);
    QVERIFY2(run.out.contains("GEMM: float32 and float64: OpenBLAS") && run.out.contains("KILN_GEMM=openblas"),
             run.out.constData());
    env.remove("KILN_GEMM");
    run = kiln::test::run_cli({"--version"}, 60000, env);
    QVERIFY2(run.out.contains("GEMM: float32: oneDNN 2.") && run.out.contains("float64 and small products: OpenBLAS"),
             run.out.constData());
    env.insert("KILN_GEMM_SMALL", "onednn");
    run = kiln::test::run_cli({"--version"}, 60000, env);
    QVERIFY2(run.out.contains("(small products too, KILN_GEMM_SMALL=onednn); float64: OpenBLAS"), run.out.constData());
    env.insert("KILN_GEMM", "blis");
    run = kiln::test::run_cli({"--version"}, 60000, env);
    QVERIFY2(run.out.contains("KILN_GEMM=blis is neither onednn nor openblas"), run.out.constData());
  }
};

QTEST_GUILESS_MAIN(TestGemmBackends)
#include "test_gemm_backends.moc"
