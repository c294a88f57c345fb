// _linalg_eigh, linalg_matrix_exp (core/ops/linalg_eigen.cpp), geqrf and
// linalg_householder_product (core/ops/linalg_householder.cpp) against what
// torch 1.13 gave for a hand matrix: eigenvalues, and eigenvectors up to
// sign (MKL and OpenBLAS may pick either); the exponential in float64 and
// float32; the compact QR and the product of its reflectors. Then the
// identities that hold whatever the rounding, batches, empty matrices and
// PyTorch's error messages.
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

Tensor hand() {
  return Tensor::from_vector<double>({0.7, -1.3, 2.1, 0.4, 1.9, 0.2, -0.6, 1.1, -0.8, 2.4, 0.3, -1.7, 0.5, 0.9, -2.2,
                                      0.6},
                                     {4, 4});
}

Tensor symmetric() { return call1("aten::add.Tensor", {hand(), hand().transpose(0, 1)}); }

Tensor mT(const Tensor& t) { return t.transpose(-2, -1); }

double max_diff(const Tensor& a, const Tensor& b) {
  std::vector<double> x = values(a), y = values(b);
  double m = x.size() == y.size() ? 0.0 : INFINITY;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

std::string error_text(std::string_view op, const ValueList& args) {
  std::string e = error_of(op, args);
  size_t p = e.find(".default: ");
  return p == std::string::npos ? e : e.substr(p + 10);
}

}  // namespace

class TestOpsLinalgEigen : public QObject {
  Q_OBJECT

 private slots:
  void eigh_as_pytorch() {
    ValueList r = call("aten::_linalg_eigh", {symmetric()});
    KILN_EXPECT_CLOSE(r[0].to_tensor(), (std::vector<double>{-4.683950790120809, 0.4454158419508187,
                                                              3.0025083299733235, 4.836026618196667}),
                      1e-14, 1e-14);
    Tensor v = r[1].to_tensor();
    KILN_EXPECT_CLOSE(call1("aten::abs", {v}),
                      (std::vector<double>{0.18216910755296403, 0.7272455605183648, 0.6597053403851361,
                                           0.05212652709530334, 0.44181378837142027, 0.6580082631741759,
                                           0.6075166006968655, 0.05243359492846321, 0.6396708132679405,
                                           0.18287353502198334, 0.32512985412476186, 0.672063314575722,
                                           0.6020267795633194, 0.0685294862770498, 0.30000503612750845,
                                           0.7367933526419428}),
                      1e-13, 1e-13);
    // V diag(L) V^T is A, V^T V is I.
    Tensor scaled = call1("aten::mul.Tensor", {v, r[0].to_tensor()});
    QVERIFY(max_diff(call1("aten::matmul", {scaled, mT(v)}), symmetric()) < 1e-13);
    QVERIFY(max_diff(call1("aten::matmul", {mT(v), v}), call1("aten::eye", {4}, {{"dtype", DType::Float64}})) < 1e-14);
    // float32, rounded by ssyevd.
    KILN_EXPECT_CLOSE(call("aten::_linalg_eigh", {symmetric().to(DType::Float32)})[0].to_tensor(),
                      (std::vector<double>{-4.683951377868652, 0.4454158842563629, 3.0025081634521484,
                                           4.836027145385742}),
                      4 * 1.2e-7, 1e-6);
  }

  void eigh_reads_one_triangle() {
    Tensor upper = call1("aten::triu", {symmetric()}), lower = call1("aten::tril", {symmetric()});
    Tensor want = call("aten::_linalg_eigh", {symmetric()})[0].to_tensor();
    QVERIFY(max_diff(call("aten::_linalg_eigh", {upper, std::string("U")})[0].to_tensor(), want) < 1e-13);
    QVERIFY(max_diff(call("aten::_linalg_eigh", {lower, std::string("l")})[0].to_tensor(), want) < 1e-13);
    // Without eigenvectors the second output is empty, as ATen's.
    ValueList r = call("aten::_linalg_eigh", {symmetric(), std::string("L"), false});
    QCOMPARE(r[1].to_tensor().sizes(), (Shape{0}));
    QVERIFY(max_diff(r[0].to_tensor(), want) < 1e-13);
  }

  void eigh_batches_and_empty() {
    Tensor r = random_tensor({3, 5, 5}, 7, DType::Float64);
    Tensor s = call1("aten::add.Tensor", {r, mT(r)});
    ValueList batch = call("aten::_linalg_eigh", {s});
    for (int64_t i = 0; i < 3; ++i) {
      Tensor one = call("aten::_linalg_eigh", {s.select(0, i).contiguous()})[0].to_tensor();
      QCOMPARE(values(batch[0].to_tensor().select(0, i)), values(one));
    }
    std::vector<double> l = values(batch[0].to_tensor());
    for (size_t i = 0; i + 1 < l.size(); ++i)
      if ((i + 1) % 5) QVERIFY(l[i] <= l[i + 1]);
    ValueList e = call("aten::_linalg_eigh", {Tensor::zeros({2, 0, 0}, DType::Float32)});
    QCOMPARE(e[0].to_tensor().sizes(), (Shape{2, 0}));
    QCOMPARE(e[1].to_tensor().sizes(), (Shape{2, 0, 0}));
  }

  void matrix_exp_as_pytorch() {
    KILN_EXPECT_CLOSE(call1("aten::linalg_matrix_exp", {hand()}),
                      (std::vector<double>{0.7285131471706247, 1.842710428374744, 3.6420765370842876,
                                           -2.2044500145778803, 2.70236393123251, 0.241537193269951,
                                           0.3400262353892301, 1.8365372555141923, 1.125215780099382,
                                           2.9572238296601134, 2.683797055127559, -1.4385822236090227,
                                           1.5884588733730112, -2.519038301655714, -3.441822351226919,
                                           4.389556800605906}),
                      1e-13, 1e-13);
    // A norm of 16: four squarings.
    Tensor big = call1("aten::mul.Scalar", {hand(), 3.0});
    KILN_EXPECT_CLOSE(call1("aten::linalg_matrix_exp", {big}),
                      (std::vector<double>{55.749265311293144, 109.76453572069148, 129.01602134386172,
                                           -67.56443397923773, 16.495282098997304, 19.421810393223314,
                                           27.081388908303175, -7.909642124159352, 53.67034422747244,
                                           90.29124830629797, 110.82945466577215, -51.23404697624088,
                                           -49.26568086097524, -107.22280013277032, -123.21491819812066,
                                           69.44716604833873}),
                      1e-12, 1e-12);
    // float32 is the float64 result rounded once: within 4 ulps of PyTorch's.
    Tensor f = call1("aten::linalg_matrix_exp", {hand().to(DType::Float32)});
    QCOMPARE(f.dtype(), DType::Float32);
    KILN_EXPECT_CLOSE(f,
                      (std::vector<double>{0.7285128235816956, 1.8427106142044067, 3.642076253890991,
                                           -2.2044498920440674, 2.7023637294769287, 0.24153688549995422,
                                           0.340025931596756, 1.8365375995635986, 1.125215768814087,
                                           2.957224130630493, 2.6837971210479736, -1.4385823011398315,
                                           1.5884590148925781, -2.5190389156341553, -3.4418225288391113,
                                           4.389557361602783}),
                      5e-7, 5e-7);
  }

  void matrix_exp_identities() {
    // exp of a skew-symmetric matrix is orthogonal; exp(0) = I; a batch is its matrices.
    Tensor a = hand();
    Tensor skew = call1("aten::sub.Tensor", {a, mT(a)});
    Tensor q = call1("aten::linalg_matrix_exp", {skew});
    Tensor eye = call1("aten::eye", {4}, {{"dtype", DType::Float64}});
    QVERIFY(max_diff(call1("aten::matmul", {mT(q), q}), eye) < 1e-13);
    QCOMPARE(values(call1("aten::linalg_matrix_exp", {Tensor::zeros({4, 4}, DType::Float64)})), values(eye));
    Tensor b = call1("aten::stack", {Value::tensor_list({a, skew})});
    Tensor eb = call1("aten::linalg_matrix_exp", {b});
    QCOMPARE(values(eb.select(0, 1)), values(q));
    QCOMPARE(call1("aten::linalg_matrix_exp", {Tensor::zeros({0, 0}, DType::Float32)}).sizes(), (Shape{0, 0}));
  }

  void geqrf_and_householder_product_as_pytorch() {
    Tensor tall = hand().narrow(1, 0, 3);
    ValueList qr = call("aten::geqrf", {tall});
    Tensor a = qr[0].to_tensor(), tau = qr[1].to_tensor();
    KILN_EXPECT_CLOSE(a,
                      (std::vector<double>{-2.2338307903688674, 0.8953229620716907, 0.45213809584620335,
                                           0.6476174448224107, -2.7383200677764408, 1.6487516095605916,
                                           -0.2726810293989098, 0.41315518748769986, -2.6033035305657166,
                                           0.17042564337431862, 0.29223047211558073, -0.3201218768206046}),
                      1e-13, 1e-13);
    KILN_EXPECT_CLOSE(tau, (std::vector<double>{1.3133630367250917, 1.5922351686863632, 1.8140951301883073}), 1e-13,
                      1e-13);
    Tensor q = call1("aten::linalg_householder_product", {a, tau});
    KILN_EXPECT_CLOSE(q,
                      (std::vector<double>{-0.3133630367250917, 0.3722862384685773, -0.6253115753610922,
                                           -0.8505568139681058, -0.35113610618679647, -0.13963233801164948,
                                           0.3581291848286762, -0.7593556143797835, -0.5339619170109134,
                                           -0.2238307405179226, -0.40185251335383493, 0.5517000227323359}),
                      1e-13, 1e-13);
    // Q R is the input.
    Tensor r = call1("aten::triu", {a.narrow(0, 0, 3)});
    QVERIFY(max_diff(call1("aten::matmul", {q, r}), tall) < 1e-13);
    // Fewer reflectors than columns: the rest are the identity's.
    KILN_EXPECT_CLOSE(call1("aten::linalg_householder_product", {a, tau.narrow(0, 0, 1)}),
                      (std::vector<double>{-0.3133630367250917, -0.8505568139681058, 0.3581291848286762,
                                           -0.8505568139681058, 0.4491645694616848, 0.2319307075950801,
                                           0.3581291848286762, 0.2319307075950801, 0.9023449652231241,
                                           -0.2238307405179226, -0.14495669224692506, 0.061034396735547405}),
                      1e-13, 1e-13);
    // Wide input: tau has min(m, n) entries.
    QCOMPARE(call("aten::geqrf", {Tensor::zeros({2, 3, 4}, DType::Float32)})[1].to_tensor().sizes(), (Shape{2, 3}));
  }

  void pytorch_messages() {
    auto text = [](std::string_view op, const ValueList& args) { return QString::fromStdString(error_text(op, args)); };
    QCOMPARE(text("aten::_linalg_eigh", {Tensor::zeros({2, 3}, DType::Float32)}),
             QString("linalg.eigh: A must be batches of square matrices, but they are 2 by 3 matrices"));
    QCOMPARE(text("aten::_linalg_eigh", {Tensor::zeros({3}, DType::Float32)}),
             QString("linalg.eigh: The input tensor A must have at least 2 dimensions."));
    QVERIFY(error_of("aten::_linalg_eigh", {Tensor::zeros({2, 2}, DType::Float32), std::string("X")})
                .find("Expected UPLO argument to be 'L' or 'U', but got X") != std::string::npos);
    QVERIFY(error_of("aten::_linalg_eigh", {Tensor::zeros({2, 2}, DType::Int64)})
                .find("\"linalg_eigh_cpu\" not implemented for 'Long'") != std::string::npos);
    QCOMPARE(text("aten::linalg_matrix_exp", {Tensor::zeros({2, 3}, DType::Float32)}),
             QString("linalg.matrix_exp: A must be batches of square matrices, but they are 2 by 3 matrices"));
    QVERIFY(error_of("aten::linalg_matrix_exp", {Tensor::zeros({2, 2}, DType::Int64)})
                .find("matrix_exp: Expected a floating point or complex tensor as input. Got Long") !=
            std::string::npos);
    QVERIFY(error_of("aten::linalg_householder_product",
                     {Tensor::zeros({2, 3}, DType::Float32), Tensor::zeros({1}, DType::Float32)})
                .find("torch.linalg.householder_product: input.shape[-2] must be greater than or equal to "
                      "input.shape[-1]") != std::string::npos);
    QVERIFY(error_of("aten::linalg_householder_product",
                     {Tensor::zeros({3, 2}, DType::Float32), Tensor::zeros({2}, DType::Float64)})
                .find("tau dtype Double does not match input dtype Float") != std::string::npos);
    QVERIFY(error_of("aten::geqrf", {Tensor::zeros({3}, DType::Float32)})
                .find("torch.geqrf: input must have at least 2 dimensions.") != std::string::npos);
  }
};

QTEST_GUILESS_MAIN(TestOpsLinalgEigen)
#include "test_ops_linalg_eigen.moc"
