// mm, addmm, bmm, baddbmm, mv, addmv, dot, matmul and linear against hand
// values and a float64 reference loop.
#include "nn_test_util.h"

using namespace kiln;
using kiln::test::call1;
using kiln::test::error_of;
using kiln::test::random_tensor;
using kiln::test::values;

namespace {

// [batch, m, k] @ [batch, k, n] in double, row-major; a batch of 1 for 2-D.
std::vector<double> ref_bmm(const Tensor& a, const Tensor& b) {
  Tensor a3 = a.dim() == 2 ? a.unsqueeze(0) : a, b3 = b.dim() == 2 ? b.unsqueeze(0) : b;
  std::vector<double> x = values(a3), y = values(b3);
  int64_t B = a3.size(0), m = a3.size(1), k = a3.size(2), n = b3.size(2);
  std::vector<double> out(size_t(B * m * n), 0.0);
  for (int64_t z = 0; z < B; ++z)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) s += x[size_t((z * m + i) * k + p)] * y[size_t((z * k + p) * n + j)];
        out[size_t((z * m + i) * n + j)] = s;
      }
  return out;
}

Value sc(double v) { return Value(v); }

}  // namespace

class TestOpsLinalg : public QObject {
  Q_OBJECT
 private slots:
  void mm_hand_values() {
    Tensor a = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    Tensor b = Tensor::from_vector<float>({7, 8, 9, 10, 11, 12}, {3, 2});
    Tensor c = call1("aten::mm", {a, b});
    QCOMPARE(c.sizes(), (Shape{2, 2}));
    KILN_COMPARE_VALUES(c, {58, 64, 139, 154});
    Tensor ct = call1("aten::mm", {b.t(), a.t()});  // transposed views reach BLAS as flags
    KILN_COMPARE_VALUES(ct, {58, 139, 64, 154});
  }

  void mm_strided_and_large() {
    Tensor big = random_tensor({130, 258}, 1);
    Tensor a = big.slice(1, 0, 258, 2);         // column stride 2: packed copy
    Tensor b = random_tensor({33, 129}, 2).t();  // transposed
    Tensor c = call1("aten::mm", {a, b});
    QCOMPARE(c.sizes(), (Shape{130, 33}));
    KILN_EXPECT_CLOSE(c, ref_bmm(a, b), 1e-5, 1e-5);
    Tensor a64 = a.to(DType::Float64), b64 = b.to(DType::Float64);
    KILN_EXPECT_CLOSE(call1("aten::mm", {a64, b64}), ref_bmm(a64, b64), 1e-12, 1e-12);
    Tensor e = random_tensor({1, 8}, 3).expand({5, 8});  // zero row stride
    KILN_EXPECT_CLOSE(call1("aten::mm", {e, b.slice(0, 0, 8)}), ref_bmm(e, b.slice(0, 0, 8)), 1e-5, 1e-5);
  }

  void mm_integers_exact_and_wrapping() {
    Tensor a = Tensor::from_vector<int64_t>({1, -2, 3, 4}, {2, 2});
    Tensor b = Tensor::from_vector<int64_t>({5, 6, 7, 8}, {2, 2});
    Tensor c = call1("aten::mm", {a, b});
    QCOMPARE(c.dtype(), DType::Int64);
    KILN_COMPARE_VALUES(c, {-9, -10, 43, 50});
    Tensor i8 = Tensor::from_vector<int8_t>({100, 100}, {1, 2});
    Tensor j8 = Tensor::from_vector<int8_t>({1, 1}, {2, 1});
    KILN_COMPARE_VALUES(call1("aten::mm", {i8, j8}), {-56});  // 200 wraps like torch's int8
    Tensor u8 = Tensor::from_vector<uint8_t>({3, 4}, {1, 2});
    KILN_COMPARE_VALUES(call1("aten::mm", {u8, u8.t()}), {25});
  }

  void mm_reduced_floats_round_once() {
    // 1 + 2^-11 + 2^-11 = 1 + 2^-10 in float32, one rounding; summing in
    // float16 would lose each 2^-11 (ties to even) and give 1.
    Tensor a = Tensor::from_vector<float>({1.f, 1.f, 1.f}, {1, 3}).to(DType::Float16);
    Tensor b = Tensor::from_vector<float>({1.f, 1.f / 2048, 1.f / 2048}, {3, 1}).to(DType::Float16);
    Tensor c = call1("aten::mm", {a, b});
    QCOMPARE(c.dtype(), DType::Float16);
    QCOMPARE(values(c)[0], 1.0 + 1.0 / 1024);
    Tensor x = random_tensor({9, 17}, 4, DType::BFloat16), y = random_tensor({17, 5}, 5, DType::BFloat16);
    Tensor z = call1("aten::mm", {x, y});
    QCOMPARE(z.dtype(), DType::BFloat16);
    std::vector<double> want = ref_bmm(x, y);
    for (double& v : want) v = double(float(BFloat16(float(v))));
    KILN_EXPECT_CLOSE(z, want, 1e-6, 1e-6);
  }

  void mm_errors() {
    Tensor a = Tensor::zeros({2, 3}, DType::Float32), b = Tensor::zeros({4, 2}, DType::Float32);
    KILN_EXPECT_ERROR(error_of("aten::mm", {a, b}), "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x2)");
    KILN_EXPECT_ERROR(error_of("aten::mm", {a, Tensor::zeros({3}, DType::Float32)}), "mat2 must be a matrix");
    KILN_EXPECT_ERROR(error_of("aten::mm", {a, Tensor::zeros({3, 2}, DType::Float64)}), "same dtype");
    KILN_EXPECT_ERROR(error_of("aten::mm", {a.to(DType::Bool), Tensor::zeros({3, 2}, DType::Bool)}),
                      "not implemented for 'Bool'");
  }

  void mm_empty_dims() {
    Tensor c = call1("aten::mm", {Tensor::zeros({2, 0}, DType::Float32), Tensor::zeros({0, 3}, DType::Float32)});
    QCOMPARE(c.sizes(), (Shape{2, 3}));
    KILN_COMPARE_VALUES(c, {0, 0, 0, 0, 0, 0});
    QCOMPARE(call1("aten::mm", {Tensor::zeros({0, 4}, DType::Float32), Tensor::zeros({4, 3}, DType::Float32)}).sizes(),
             (Shape{0, 3}));
  }

  void addmm_scalars_and_broadcast() {
    Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}), b = Tensor::from_vector<float>({1, 0, 0, 1}, {2, 2});
    Tensor bias = Tensor::from_vector<float>({10, 20}, {2});
    Tensor c = call1("aten::addmm", {bias, a, b}, {{"beta", sc(0.5)}, {"alpha", sc(2.0)}});
    KILN_COMPARE_VALUES(c, {7, 14, 11, 18});
    // beta = 0 ignores self entirely, NaN included.
    Tensor nan_self = Tensor::full({2, 2}, Scalar(std::nan("")), DType::Float32);
    KILN_COMPARE_VALUES(call1("aten::addmm", {nan_self, a, b}, {{"beta", Value(int64_t(0))}}), {1, 2, 3, 4});
    Tensor i = Tensor::from_vector<int64_t>({1, 2, 3, 4}, {2, 2});
    KILN_COMPARE_VALUES(call1("aten::addmm", {Tensor::from_vector<int64_t>({1}, {1}), i, i},
                              {{"alpha", Value(int64_t(2))}}),
                        {15, 21, 31, 45});
    KILN_EXPECT_ERROR(error_of("aten::addmm", {i, i, i}, {{"alpha", sc(0.5)}}),
                      "argument alpha must not be a floating point number");
    KILN_EXPECT_ERROR(error_of("aten::addmm", {Tensor::zeros({3}, DType::Float32), a, b}), "cannot be broadcast");
  }

  void bmm_and_baddbmm() {
    Tensor a = random_tensor({64, 8, 8}, 6), b = random_tensor({64, 8, 5}, 7);  // small: parallel over batch
    KILN_EXPECT_CLOSE(call1("aten::bmm", {a, b}), ref_bmm(a, b), 1e-5, 1e-5);
    Tensor bt = random_tensor({3, 6, 4}, 8).transpose(1, 2);  // [3, 4, 6] transposed matrices
    Tensor a2 = random_tensor({3, 5, 4}, 9);
    KILN_EXPECT_CLOSE(call1("aten::bmm", {a2, bt}), ref_bmm(a2, bt), 1e-5, 1e-5);
    Tensor shared = random_tensor({1, 5, 4}, 10).expand({3, 5, 4});  // batch stride 0
    KILN_EXPECT_CLOSE(call1("aten::bmm", {shared, bt}), ref_bmm(shared, bt), 1e-5, 1e-5);
    Tensor self = Tensor::full({6}, Scalar(1.0), DType::Float32);
    Tensor r = call1("aten::baddbmm", {self, a2, bt}, {{"beta", sc(2.0)}, {"alpha", sc(-1.0)}});
    std::vector<double> want = ref_bmm(a2, bt);
    for (double& v : want) v = 2.0 - v;
    KILN_EXPECT_CLOSE(r, want, 1e-5, 1e-5);
    KILN_EXPECT_ERROR(error_of("aten::bmm", {a2, a2}),
                      "Expected size for first two dimensions of batch2 tensor to be: [3, 4] but got: [3, 5].");
    KILN_EXPECT_ERROR(error_of("aten::bmm", {a2.select(0, 0), bt}), "batch1 must be a 3D tensor");
  }

  void mv_addmv_dot() {
    Tensor m = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    Tensor v = Tensor::from_vector<float>({1, 0, -1}, {3});
    KILN_COMPARE_VALUES(call1("aten::mv", {m, v}), {-2, -2});
    KILN_COMPARE_VALUES(call1("aten::mv", {m.t().contiguous().t(), v}), {-2, -2});
    KILN_COMPARE_VALUES(call1("aten::addmv", {Tensor::from_vector<float>({1, 1}, {2}), m, v},
                              {{"beta", sc(3.0)}, {"alpha", sc(2.0)}}),
                        {-1, -1});
    Tensor d = call1("aten::dot", {v, Tensor::from_vector<float>({2, 5, 3}, {3})});
    QCOMPARE(d.dim(), int64_t(0));
    KILN_COMPARE_VALUES(d, {-1});
    Tensor strided = Tensor::from_vector<float>({1, 9, 2, 9, 3, 9}, {6}).slice(0, 0, 6, 2);
    KILN_COMPARE_VALUES(call1("aten::dot", {strided, strided}), {14});
    KILN_EXPECT_ERROR(error_of("aten::dot", {v, Tensor::zeros({4}, DType::Float32)}),
                      "inconsistent tensor size, expected tensor [3] and src [4]");
    KILN_EXPECT_ERROR(error_of("aten::dot", {m, v}), "1D tensors expected, but got 2D and 1D tensors");
    KILN_EXPECT_ERROR(error_of("aten::mv", {m, Tensor::zeros({2}, DType::Float32)}),
                      "size mismatch, got input (2), mat (2x3), vec (2)");
    KILN_COMPARE_VALUES(call1("aten::dot", {Tensor::from_vector<int64_t>({2, 3}, {2}),
                                            Tensor::from_vector<int64_t>({4, 5}, {2})}),
                        {23});
  }

  void matmul_cases() {
    Tensor v3 = random_tensor({3}, 11), m23 = random_tensor({2, 3}, 12), m34 = random_tensor({3, 4}, 13);
    QCOMPARE(call1("aten::matmul", {v3, v3}).dim(), int64_t(0));
    QCOMPARE(call1("aten::matmul", {m23, v3}).sizes(), (Shape{2}));
    QCOMPARE(call1("aten::matmul", {v3, m34}).sizes(), (Shape{4}));
    KILN_EXPECT_CLOSE(call1("aten::matmul", {v3, m34}), ref_bmm(v3.unsqueeze(0), m34), 1e-6, 1e-6);
    // >= 3-D with a matrix folds into one mm.
    Tensor t = random_tensor({2, 5, 3}, 14);
    Tensor tm = call1("aten::matmul", {t, m34});
    QCOMPARE(tm.sizes(), (Shape{2, 5, 4}));
    KILN_EXPECT_CLOSE(tm, ref_bmm(t.reshape({10, 3}), m34), 1e-6, 1e-6);
    QCOMPARE(call1("aten::matmul", {t, v3}).sizes(), (Shape{2, 5}));
    // Broadcast batch dims: [2, 1, 5, 3] @ [4, 3, 6] -> [2, 4, 5, 6].
    Tensor a = random_tensor({2, 1, 5, 3}, 15), b = random_tensor({4, 3, 6}, 16);
    Tensor ab = call1("aten::matmul", {a, b});
    QCOMPARE(ab.sizes(), (Shape{2, 4, 5, 6}));
    Tensor ae = a.expand({2, 4, 5, 3}).reshape({8, 5, 3}), be = b.unsqueeze(0).expand({2, 4, 3, 6}).reshape({8, 3, 6});
    KILN_EXPECT_CLOSE(ab, ref_bmm(ae, be), 1e-6, 1e-6);
    // A vector against a batch: [3] @ [4, 3, 6] -> [4, 6]; matrix against a batch: [5, 3] @ [4, 3, 6].
    QCOMPARE(call1("aten::matmul", {v3, b}).sizes(), (Shape{4, 6}));
    Tensor mb = call1("aten::matmul", {a.select(0, 0).select(0, 0), b});
    QCOMPARE(mb.sizes(), (Shape{4, 5, 6}));
    KILN_EXPECT_CLOSE(mb.select(0, 2), ref_bmm(a.select(0, 0).select(0, 0), b.select(0, 2)), 1e-6, 1e-6);
    KILN_EXPECT_ERROR(error_of("aten::matmul", {Tensor::zeros({}, DType::Float32), m34}),
                      "both arguments to matmul need to be at least 1D, but they are 0D and 2D");
    KILN_EXPECT_ERROR(error_of("aten::matmul", {a, random_tensor({4, 4, 6}, 1)}), "Expected size");
    auto meta = call_meta("aten::matmul", {Tensor::meta({7, 1, 5, 3}, DType::Float32), Tensor::meta({2, 3, 4}, DType::Float32)});
    QVERIFY(meta.ok());
    QCOMPARE((*meta)[0].to_tensor().sizes(), (Shape{7, 2, 5, 4}));
  }

  void linear_with_and_without_bias() {
    Tensor x = random_tensor({2, 3, 4}, 20), w = random_tensor({5, 4}, 21), bias = random_tensor({5}, 22);
    Tensor y = call1("aten::linear", {x, w, bias});
    QCOMPARE(y.sizes(), (Shape{2, 3, 5}));
    std::vector<double> want = ref_bmm(x.reshape({6, 4}), w.t()), bv = values(bias);
    for (size_t i = 0; i < want.size(); ++i) want[i] += bv[i % 5];
    KILN_EXPECT_CLOSE(y, want, 1e-6, 1e-6);
    // Non-contiguous 3-D input takes the matmul-then-add path: same numbers.
    Tensor xt = x.transpose(0, 1).contiguous().transpose(0, 1);
    KILN_EXPECT_CLOSE(call1("aten::linear", {xt, w, bias}), want, 1e-6, 1e-6);
    Tensor y1 = call1("aten::linear", {x.select(0, 0).select(0, 0), w});
    QCOMPARE(y1.sizes(), (Shape{5}));
    KILN_EXPECT_CLOSE(y1, ref_bmm(x.select(0, 0).slice(0, 0, 1), w.t()), 1e-6, 1e-6);
    Tensor yh = call1("aten::linear", {x.to(DType::Float16), w.to(DType::Float16), bias.to(DType::Float16)});
    QCOMPARE(yh.dtype(), DType::Float16);
    KILN_EXPECT_CLOSE(yh, want, 1e-2, 1e-2);
  }
};

QTEST_GUILESS_MAIN(TestOpsLinalg)
#include "test_ops_linalg.moc"
