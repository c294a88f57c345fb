// _linalg_det, _linalg_slogdet and linalg_lu_solve (core/ops/linalg_factor.cpp):
// a hand matrix's determinant bit for bit as torch 1.13 printed it (the
// factorization of A^T for contiguous A, of A itself for a strided view, as
// ATen's), the permutation's sign, -0 and 0 for singular matrices, empty
// matrices, lu_solve against A X = B, and PyTorch's error messages. A batch
// with a row-flipped matrix is held to 4 ulps: OpenBLAS rounds it by CPU.
#include <algorithm>
#include <cmath>

#include "nn_test_util.h"

using namespace kiln;
using kiln::test::call;
using kiln::test::call1;
using kiln::test::error_of;
using kiln::test::random_tensor;
using kiln::test::values;

namespace {

// 4 x 4, no structure; torch.det gives 1.4188998937606812 for it (float32).
Tensor hand() {
  return Tensor::from_vector<float>({0.7f, -1.3f, 2.1f, 0.4f, 1.9f, 0.2f, -0.6f, 1.1f, -0.8f, 2.4f, 0.3f, -1.7f, 0.5f,
                                     0.9f, -2.2f, 0.6f},
                                    {4, 4});
}

double scalar(const Tensor& t) { return values(t).at(0); }

std::string error_text(std::string_view op, const ValueList& args) {
  std::string e = error_of(op, args);
  size_t p = e.find(".default: ");
  return p == std::string::npos ? e : e.substr(p + 10);
}

}  // namespace

class TestOpsLinalgDet : public QObject {
  Q_OBJECT

  // Within 4 float32 ulps, relative above 1 and absolute below (a log's
  // error is the relative error of its argument).
  static void expect_within_4_ulps(const std::vector<double>& got, const std::vector<double>& torch_values) {
    QCOMPARE(got.size(), torch_values.size());
    for (size_t i = 0; i < got.size(); ++i)
      QVERIFY2(std::abs(got[i] - torch_values[i]) <= 4 * 1.1920929e-07 * std::max(1.0, std::abs(torch_values[i])),
               qPrintable(QString::number(got[i], 'g', 17)));
  }

 private slots:
  void det_of_a_hand_matrix_as_pytorch() {
    ValueList r = call("aten::_linalg_det", {hand()});
    QCOMPARE(r.size(), size_t(3));
    QCOMPARE(scalar(r[0].to_tensor()), 1.4188998937606812);
    QCOMPARE(r[1].to_tensor().sizes(), (Shape{4, 4}));
    QCOMPARE(r[2].to_tensor().dtype(), DType::Int32);
    QCOMPARE(scalar(call1("aten::_linalg_det", {hand().to(DType::Float64)})), 1.4188998714119183);
    // A strided view is factored as it is, a contiguous one through A^T: the
    // two round differently, as in PyTorch.
    Tensor at = hand().transpose(0, 1);
    QCOMPARE(scalar(call1("aten::_linalg_det", {at})), 1.4188998937606812);
    QCOMPARE(scalar(call1("aten::_linalg_det", {at.contiguous()})), 1.4188997745513916);
  }

  void batches_and_slogdet() {
    Tensor a = hand();
    Tensor flipped = call1("aten::flip", {a, Value::int_list({0})});
    Tensor b = call1("aten::stack", {Value::tensor_list({a, flipped, call1("aten::mul.Scalar", {a, 2.0})})});
    // OpenBLAS picks its getrf kernel by CPU, and a row-flipped matrix takes
    // other pivots: torch 1.13 gives 1.4188987016677856 for it on the machine
    // these figures came from and 1.4188989400863647 on an AMD EPYC. Kiln
    // calls the same routine, so it is held to 4 float32 ulps of torch there.
    expect_within_4_ulps(values(call1("aten::_linalg_det", {b})), {1.4188998937606812, 1.4188987016677856, 22.7023983001709});
    ValueList s = call("aten::_linalg_slogdet", {b});
    QCOMPARE(s.size(), size_t(4));
    QCOMPARE(values(s[0].to_tensor()), (std::vector<double>{1, 1, 1}));
    expect_within_4_ulps(values(s[1].to_tensor()), {0.349881649017334, 0.34988105297088623, 3.1224703788757324});
    // An odd row swap flips the sign (the elimination differs, so it rounds apart).
    Tensor swapped = call1("aten::index_select", {a, 0, Tensor::from_vector<int64_t>({1, 0, 2, 3}, {4})});
    QVERIFY(std::abs(scalar(call1("aten::_linalg_det", {swapped})) + 1.4188998937606812) < 1e-5);
    QCOMPARE(scalar(call("aten::_linalg_slogdet", {swapped})[0].to_tensor()), -1.0);
  }

  void singular_and_empty() {
    // U's last pivot is an exact zero after one row swap: -1 * 0 is -0.
    Tensor s = Tensor::from_vector<float>({1, 2, 2, 4}, {2, 2});
    double d = scalar(call1("aten::_linalg_det", {s}));
    QCOMPARE(d, 0.0);
    QVERIFY(std::signbit(d));
    ValueList sl = call("aten::_linalg_slogdet", {s});
    QCOMPARE(scalar(sl[1].to_tensor()), -std::numeric_limits<double>::infinity());
    QCOMPARE(scalar(sl[0].to_tensor()), 0.0);
    // n = 0: det 1, sign 1, logabsdet 0, per batch element.
    Tensor e = Tensor::zeros({2, 0, 0}, DType::Float32);
    QCOMPARE(values(call1("aten::_linalg_det", {e})), (std::vector<double>{1, 1}));
    ValueList es = call("aten::_linalg_slogdet", {e});
    QCOMPARE(values(es[0].to_tensor()), (std::vector<double>{1, 1}));
    QCOMPARE(values(es[1].to_tensor()), (std::vector<double>{0, 0}));
    QCOMPARE(call1("aten::_linalg_det", {Tensor::zeros({0, 3, 3}, DType::Float64)}).sizes(), (Shape{0}));
  }

  // lu_solve on _linalg_det's factors (those of A^T): A^T X = B, and with
  // adjoint, A X = B; left=false solves X A^T = B.
  void lu_solve_on_the_det_factors() {
    Tensor a = random_tensor({2, 5, 5}, 3, DType::Float64), b = random_tensor({2, 5, 3}, 4, DType::Float64);
    ValueList f = call("aten::_linalg_det", {a});
    Tensor lu = f[1].to_tensor(), piv = f[2].to_tensor(), at = a.transpose(-2, -1);
    auto residual = [](const Tensor& lhs, const Tensor& rhs) {
      std::vector<double> x = values(lhs), y = values(rhs);
      double m = 0;
      for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
      return m;
    };
    Tensor x = call1("aten::linalg_lu_solve", {lu, piv, b});
    QVERIFY(residual(call1("aten::matmul", {at, x}), b) < 1e-12);
    Tensor y = call1("aten::linalg_lu_solve", {lu, piv, b}, {{"adjoint", Value(true)}});
    QVERIFY(residual(call1("aten::matmul", {a, y}), b) < 1e-12);
    Tensor bt = b.transpose(-2, -1).contiguous();
    Tensor z = call1("aten::linalg_lu_solve", {lu, piv, bt}, {{"left", Value(false)}});
    QVERIFY(residual(call1("aten::matmul", {z, at}), bt) < 1e-12);
  }

  void pytorch_messages() {
    QCOMPARE(QString::fromStdString(error_text("aten::_linalg_det", {Tensor::zeros({2, 3}, DType::Float32)})),
             QString("linalg.det: A must be batches of square matrices, but they are 2 by 3 matrices"));
    QCOMPARE(QString::fromStdString(error_text("aten::_linalg_det", {Tensor::zeros({3}, DType::Float32)})),
             QString("linalg.det: The input tensor A must have at least 2 dimensions."));
    QCOMPARE(QString::fromStdString(error_text("aten::_linalg_det", {Tensor::zeros({2, 2}, DType::Int64)})),
             QString("linalg.det: Expected a floating point or complex tensor as input. Got Long"));
    QVERIFY(error_of("aten::_linalg_det", {Tensor::zeros({2, 2}, DType::Float16)})
                .find("\"lu_cpu\" not implemented for 'Half'") != std::string::npos);
    QCOMPARE(QString::fromStdString(error_text("aten::_linalg_slogdet", {Tensor::zeros({2, 2}, DType::BFloat16)})),
             QString("linalg.slogdet: Low precision dtypes not supported. Got BFloat16"));
    QCOMPARE(QString::fromStdString(error_text("aten::_linalg_slogdet", {Tensor::zeros({3, 2}, DType::Float64)})),
             QString("linalg.slogdet: A must be batches of square matrices, but they are 3 by 2 matrices"));
  }

  void meta_shapes() {
    ValueList r = call("aten::_linalg_slogdet", {Tensor::meta({4, 1, 3, 3}, DType::Float32)});
    QCOMPARE(r[0].to_tensor().sizes(), (Shape{4, 1}));
    QCOMPARE(r[1].to_tensor().sizes(), (Shape{4, 1}));
    QCOMPARE(r[2].to_tensor().sizes(), (Shape{4, 1, 3, 3}));
    QCOMPARE(r[3].to_tensor().sizes(), (Shape{4, 1, 3}));
  }
};

QTEST_GUILESS_MAIN(TestOpsLinalgDet)
#include "test_ops_linalg_det.moc"
