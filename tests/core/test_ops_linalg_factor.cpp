// linalg_cholesky_ex, linalg_solve_triangular, cholesky_inverse and
// linalg_inv_ex (core/ops/linalg_factor.cpp): each result against the identity
// it must satisfy, computed in double here, PyTorch's values for a hand
// matrix (torch 1.13 printed them; LAPACK in both), batching and broadcasting,
// the info outputs and PyTorch's error messages.
#include "nn_test_util.h"

#include "core/ops/linalg_factor.h"

using namespace kiln;
using kiln::test::call;
using kiln::test::call1;
using kiln::test::error_of;
using kiln::test::random_tensor;
using kiln::test::values;

namespace {

// A batch of symmetric positive definite matrices: R R^T + n I.
Tensor spd(Shape batch, int64_t n, uint64_t seed, DType dtype = DType::Float64) {
  Shape s = batch;
  s.insert(s.end(), {n, n});
  Tensor r = random_tensor(s, seed, DType::Float64);
  Tensor a = call1("aten::matmul", {r, r.transpose(-2, -1)});
  Tensor eye = call1("aten::eye", {n}, {{"dtype", Value(DType::Float64)}});
  return call1("aten::add.Tensor", {a, call1("aten::mul.Scalar", {eye, Value(double(n))})}).to(dtype);
}

Tensor mm(const Tensor& a, const Tensor& b) { return call1("aten::matmul", {a, b}); }

// max |a - b| over all elements.
double max_diff(const Tensor& a, const Tensor& b) {
  std::vector<double> x = values(a), y = values(b.expand(a.sizes()).contiguous());
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

// The op's message without the "aten::op.overload: " the registry puts first.
std::string error_text(std::string_view op, const ValueList& args, const KwargList& kwargs = {}) {
  std::string e = error_of(op, args, kwargs);
  size_t p = e.find(".default: ");
  return p == std::string::npos ? e : e.substr(p + 10);
}

Tensor eye_like(int64_t n, DType dtype) { return call1("aten::eye", {n}, {{"dtype", Value(dtype)}}); }

}  // namespace

class TestOpsLinalgFactor : public QObject {
  Q_OBJECT
 private slots:
  void cholesky_of_a_hand_matrix() {
    Tensor a = Tensor::from_vector<float>({4, 1, 0.5f, 1, 3, -0.2f, 0.5f, -0.2f, 2}, {3, 3});
    ValueList r = call("aten::linalg_cholesky_ex", {a});
    Tensor l = r[0].to_tensor(), info = r[1].to_tensor();
    QCOMPARE(l.dtype(), DType::Float32);
    QCOMPARE(info.dtype(), DType::Int32);
    QCOMPARE(info.dim(), int64_t(0));
    QCOMPARE(values(info)[0], 0.0);
    // torch.linalg.cholesky(A) as PyTorch prints it.
    KILN_EXPECT_CLOSE(l, (std::vector<double>{2, 0, 0, 0.5, 1.6583124, 0, 0.25, -0.19599, 1.3781}), 1e-4, 1e-4);
    Tensor u = call1("aten::linalg_cholesky_ex", {a}, {{"upper", Value(true)}});
    QCOMPARE(values(u), values(l.transpose(0, 1).contiguous()));
  }

  void cholesky_reconstructs_batches() {
    for (bool upper : {false, true}) {
      Tensor a = spd({2, 3}, 5, 1);
      Tensor l = call1("aten::linalg_cholesky_ex", {a}, {{"upper", Value(upper)}});
      QCOMPARE(l.sizes(), (Shape{2, 3, 5, 5}));
      Tensor back = upper ? mm(l.transpose(-2, -1), l) : mm(l, l.transpose(-2, -1));
      QVERIFY(max_diff(back, a) < 1e-12);
      std::vector<double> v = values(l);
      for (int64_t b = 0; b < 6; ++b)
        for (int64_t i = 0; i < 5; ++i)
          for (int64_t j = 0; j < 5; ++j) {
            double x = v[size_t(b * 25 + i * 5 + j)];
            if (upper ? j < i : j > i) QCOMPARE(x, 0.0);
            if (i == j) QVERIFY(x > 0);
          }
    }
  }

  // Only the triangle named by `upper` is read, as LAPACK does.
  void cholesky_reads_one_triangle() {
    Tensor a = spd({}, 4, 2);
    Tensor junk_upper = call1("aten::add.Tensor", {a, call1("aten::triu", {random_tensor({4, 4}, 3, DType::Float64), int64_t(1)})});
    QCOMPARE(values(call1("aten::linalg_cholesky_ex", {junk_upper})), values(call1("aten::linalg_cholesky_ex", {a})));
  }

  void cholesky_info_and_errors() {
    Tensor bad = Tensor::from_vector<float>({1, 2, 2, 1}, {2, 2});
    ValueList r = call("aten::linalg_cholesky_ex", {bad});
    QCOMPARE(values(r[1].to_tensor())[0], 2.0);
    // LAPACK's partial factor, as PyTorch returns it.
    KILN_COMPARE_VALUES(r[0].to_tensor(), {1, 0, 2, -3});
    QCOMPARE(QString::fromStdString(error_text("aten::linalg_cholesky_ex", {bad}, {{"check_errors", Value(true)}})),
             QString("linalg.cholesky_ex: The factorization could not be completed because the input is not "
                     "positive-definite (the leading minor of order 2 is not positive-definite)."));
    Tensor batch = call1("aten::stack", {Value(ValueList{Value(eye_like(2, DType::Float32)), Value(bad)})});
    ValueList rb = call("aten::linalg_cholesky_ex", {batch});
    KILN_COMPARE_VALUES(rb[1].to_tensor(), {0, 2});
    try {
      check_linalg_errors(rb[1].to_tensor(), "linalg.cholesky", false);
      QFAIL("no error");
    } catch (const Error& e) {
      QCOMPARE(QString(e.what()), QString("linalg.cholesky: (Batch element 1): The factorization could not be "
                                          "completed because the input is not positive-definite (the leading "
                                          "minor of order 2 is not positive-definite)."));
    }
    QCOMPARE(QString::fromStdString(error_text("aten::linalg_cholesky_ex", {Tensor::zeros({2, 3}, DType::Float32)})),
             QString("linalg.cholesky: A must be batches of square matrices, but they are 2 by 3 matrices"));
    QCOMPARE(QString::fromStdString(error_text("aten::linalg_cholesky_ex", {Tensor::zeros({3}, DType::Float32)})),
             QString("linalg.cholesky: The input tensor A must have at least 2 dimensions."));
    QCOMPARE(QString::fromStdString(error_text("aten::linalg_cholesky_ex", {Tensor::zeros({2, 2}, DType::Int64)})),
             QString("linalg.cholesky: Expected a floating point or complex tensor as input. Got Long"));
    Tensor empty = call1("aten::linalg_cholesky_ex", {Tensor::zeros({0, 2, 2}, DType::Float32)});
    QCOMPARE(empty.sizes(), (Shape{0, 2, 2}));
    QCOMPARE(call("aten::linalg_cholesky_ex", {Tensor::zeros({3, 0, 0}, DType::Float32)})[1].to_tensor().sizes(),
             (Shape{3}));
  }

  void solve_triangular_left_right_unit() {
    Tensor a = spd({2}, 4, 4);
    Tensor l = call1("aten::linalg_cholesky_ex", {a}), u = l.transpose(-2, -1).contiguous();
    Tensor b = random_tensor({2, 4, 3}, 5, DType::Float64);
    for (bool upper : {false, true}) {
      Tensor t = upper ? u : l;
      Tensor x = call1("aten::linalg_solve_triangular", {t, b}, {{"upper", Value(upper)}});
      QVERIFY(max_diff(mm(t, x), b) < 1e-12);
      Tensor bt = b.transpose(-2, -1);
      Tensor y = call1("aten::linalg_solve_triangular", {t, bt}, {{"upper", Value(upper)}, {"left", Value(false)}});
      QCOMPARE(y.sizes(), (Shape{2, 3, 4}));
      QVERIFY(max_diff(mm(y, t), bt) < 1e-12);
      // unitriangular: the diagonal is taken as ones, whatever it holds.
      Tensor z = call1("aten::linalg_solve_triangular", {t, b},
                       {{"upper", Value(upper)}, {"unitriangular", Value(true)}});
      Tensor unit = call1("aten::add.Tensor",
                          {call1(upper ? "aten::triu" : "aten::tril", {t, int64_t(upper ? 1 : -1)}),
                           eye_like(4, DType::Float64)});
      QVERIFY(max_diff(mm(unit, z), b) < 1e-12);
    }
  }

  void solve_triangular_broadcasts_and_casts() {
    Tensor l = Tensor::from_vector<float>({2, 0, 1, 3}, {1, 2, 2});
    Tensor b = Tensor::from_vector<double>({2, 5, 4, 3, 0, 3}, {3, 2, 1});
    Tensor x = call1("aten::linalg_solve_triangular", {l, b}, {{"upper", Value(false)}});
    QCOMPARE(x.sizes(), (Shape{3, 2, 1}));
    QCOMPARE(x.dtype(), DType::Float32);  // A's dtype, as ATen allocates the result from A
    KILN_COMPARE_VALUES(x, {1, 4.0 / 3, 2, 1.0 / 3, 0, 1});
    QCOMPARE(QString::fromStdString(error_text("aten::linalg_solve_triangular", {eye_like(2, DType::Float32), Tensor::zeros({3, 1}, DType::Float32)}, {{"upper", Value(false)}})),
             QString("linalg.solve_triangular: Incompatible shapes of A and B for the equation AX = B (2x2 and 3x1)"));
    QCOMPARE(QString::fromStdString(error_text("aten::linalg_solve_triangular", {eye_like(2, DType::Float32), Tensor::zeros({2}, DType::Float32)}, {{"upper", Value(false)}})),
             QString("linalg.solve_triangular: The input tensor B must have at least 2 dimensions."));
    QCOMPARE(QString::fromStdString(error_text("aten::linalg_solve_triangular", {eye_like(2, DType::Float32), Tensor::zeros({2, 3}, DType::Float32)}, {{"upper", Value(false)}, {"left", Value(false)}})),
             QString("linalg.solve_triangular: Incompatible shapes of A and B for the equation XA = B (2x2 and 2x3)"));
  }

  void cholesky_inverse_and_inv() {
    Tensor a = spd({3}, 4, 6);
    for (bool upper : {false, true}) {
      Tensor l = call1("aten::linalg_cholesky_ex", {a}, {{"upper", Value(upper)}});
      Tensor inv = call1("aten::cholesky_inverse", {l, upper});
      QVERIFY(max_diff(mm(inv, a), eye_like(4, DType::Float64)) < 1e-12);
      QVERIFY(max_diff(inv, inv.transpose(-2, -1)) < 1e-15);
    }
    Tensor g = random_tensor({2, 5, 5}, 7, DType::Float64);
    ValueList r = call("aten::linalg_inv_ex", {g});
    QVERIFY(max_diff(mm(g, r[0].to_tensor()), eye_like(5, DType::Float64)) < 1e-10);
    KILN_COMPARE_VALUES(r[1].to_tensor(), {0, 0});
    Tensor f = Tensor::from_vector<float>({4, 1, 0.5f, 1, 3, -0.2f, 0.5f, -0.2f, 2}, {3, 3});
    // torch.linalg.inv(A) as PyTorch prints it.
    KILN_EXPECT_CLOSE(call1("aten::linalg_inv_ex", {f}),
                      (std::vector<double>{0.2853, -0.1005, -0.0814, -0.1005, 0.3710, 0.0622, -0.0814, 0.0622, 0.5266}),
                      1e-4, 1e-4);
    ValueList s = call("aten::linalg_inv_ex", {Tensor::zeros({2, 2}, DType::Float32)});
    QCOMPARE(values(s[1].to_tensor())[0], 1.0);
    QCOMPARE(QString::fromStdString(error_text("aten::linalg_inv_ex", {Tensor::zeros({2, 2}, DType::Float32)}, {{"check_errors", Value(true)}})),
             QString("linalg.inv_ex: The diagonal element 1 is zero, the inversion could not be completed because "
                     "the input matrix is singular."));
    QCOMPARE(QString::fromStdString(error_text("aten::cholesky_inverse", {Tensor::from_vector<float>({1, 0, 1, 0}, {2, 2})})),
             QString("cholesky_inverse: The diagonal element 2 is zero, the inversion could not be completed because "
                     "the input matrix is singular."));
    QCOMPARE(QString::fromStdString(error_text("aten::cholesky_inverse", {Tensor::zeros({2, 3}, DType::Float32)})),
             QString("cholesky_inverse: A must be batches of square matrices, but they are 2 by 3 matrices"));
  }

  // Meta calls give the shapes and dtypes the compiled backends plan with.
  void meta_shapes() {
    Tensor a = Tensor::meta({4, 1, 3, 3}, DType::Float32), b = Tensor::meta({5, 3, 2}, DType::Float64);
    ValueList c = call("aten::linalg_cholesky_ex", {a});
    QCOMPARE(c[0].to_tensor().sizes(), (Shape{4, 1, 3, 3}));
    QCOMPARE(c[1].to_tensor().sizes(), (Shape{4, 1}));
    Tensor x = call1("aten::linalg_solve_triangular", {a, b}, {{"upper", Value(true)}});
    QCOMPARE(x.sizes(), (Shape{4, 5, 3, 2}));
    QCOMPARE(x.dtype(), DType::Float32);
  }
};

QTEST_GUILESS_MAIN(TestOpsLinalgFactor)
#include "test_ops_linalg_factor.moc"
