// Max, average and adaptive pooling (1-D to 3-D) with their backwards: hand
// values, PyTorch's index and NaN conventions, shapes with ceil_mode, error
// messages, and the corpus gradients.
#include "nn_test_util.h"

#include "core/corpus/conformance.h"

using namespace kiln;
using kiln::test::call;
using kiln::test::call1;
using kiln::test::dot_all;
using kiln::test::error_of;
using kiln::test::ints;
using kiln::test::random_tensor;
using kiln::test::values;

namespace {

ValueList max_pool2d(const Tensor& x, Shape k, Shape s, Shape p, Shape d = {1, 1}, bool ceil = false) {
  return call("aten::max_pool2d_with_indices", {x, ints(k), ints(s), ints(p), ints(d), ceil});
}

Tensor avg_pool2d(const Tensor& x, Shape k, Shape s, Shape p, bool ceil, bool include_pad, Value divisor = Value()) {
  return call1("aten::avg_pool2d", {x, ints(k), ints(s), ints(p), ceil, include_pad, divisor});
}

// Runs the corpus' cases of `op` through `backward(case)` and compares with
// PyTorch's gradient of argument 0.
template <class Fn>
int check_corpus_grads(const std::string& op, Fn backward) {
  auto corpus = load_corpus(kiln::test::reference_dir() + "/opcorpus");
  if (!corpus.ok()) qFatal("%s", corpus.status().to_string().c_str());
  int checked = 0;
  for (const CorpusCase& k : corpus->cases) {
    if (k.op != op || k.grad_outputs.empty()) continue;
    Tensor got = backward(k);
    for (const auto& [name, want] : k.grad_inputs) {
      if (name.back() != '0') continue;
      Comparison cmp = compare_tensors(got, want);
      if (!cmp.ok) qWarning("%s: %s", k.id.c_str(), cmp.reason.c_str());
      checked += cmp.ok ? 1 : -1000;
    }
  }
  return checked;
}

// Max pooling written out over kernel offsets, for [N, C, D, H, W] (unused dims 1).
struct PoolRef {
  std::vector<double> values;
  std::vector<double> indices;
};
PoolRef ref_max_pool(const Tensor& x5, const Shape& out5, const Shape& k, const Shape& s, const Shape& p, const Shape& d) {
  std::vector<double> xv = values(x5);
  PoolRef r;
  int64_t planes = out5[0] * out5[1];
  const Shape& in = x5.sizes();
  for (int64_t c = 0; c < planes; ++c)
    for (int64_t a = 0; a < out5[2]; ++a)
      for (int64_t b = 0; b < out5[3]; ++b)
        for (int64_t e = 0; e < out5[4]; ++e) {
          double best = -INFINITY;
          int64_t best_i = -1;
          for (int64_t i = 0; i < k[0]; ++i)
            for (int64_t j = 0; j < k[1]; ++j)
              for (int64_t l = 0; l < k[2]; ++l) {
                int64_t z = a * s[0] - p[0] + i * d[0], y = b * s[1] - p[1] + j * d[1], w = e * s[2] - p[2] + l * d[2];
                if (z < 0 || z >= in[2] || y < 0 || y >= in[3] || w < 0 || w >= in[4]) continue;
                int64_t flat = (z * in[3] + y) * in[4] + w;
                double v = xv[size_t(c * in[2] * in[3] * in[4] + flat)];
                if (v > best) {
                  best = v;
                  best_i = flat;
                }
              }
          r.values.push_back(best);
          r.indices.push_back(double(best_i));
        }
  return r;
}

}  // namespace

class TestOpsPooling : public QObject {
  Q_OBJECT
 private slots:
  void max_pool2d_values_and_indices() {
    Tensor x = Tensor::from_vector<float>({1, 5, 2, 0, 3, 4, 8, 1, 9, 2, 6, 7, 0, 1, 3, 2}, {1, 1, 4, 4});
    ValueList r = max_pool2d(x, {2, 2}, {}, {0, 0});  // stride [] means kernel_size
    KILN_COMPARE_VALUES(r[0].to_tensor(), {5, 8, 9, 7});
    QCOMPARE(r[1].to_tensor().dtype(), DType::Int64);
    KILN_COMPARE_VALUES(r[1].to_tensor(), {1, 6, 8, 11});  // flat h * W + w in the plane
    // Padding never wins (it is -inf), and indices still point into the input.
    ValueList rp = max_pool2d(x, {3, 3}, {2, 2}, {1, 1});
    KILN_COMPARE_VALUES(rp[0].to_tensor(), {5, 8, 9, 8});
    KILN_COMPARE_VALUES(rp[1].to_tensor(), {1, 6, 8, 6});
    // Dilation 2: the window of output 0 is rows/cols {0, 2}.
    ValueList rd = max_pool2d(x, {2, 2}, {1, 1}, {0, 0}, {2, 2});
    QCOMPARE(rd[0].to_tensor().sizes(), (Shape{1, 1, 2, 2}));
    KILN_COMPARE_VALUES(rd[0].to_tensor(), {9, 7, 8, 4});
  }

  void max_pool_nan_ceil_int_unbatched() {
    Tensor x = Tensor::from_vector<float>({1, NAN, 3, 2, 7, 4, NAN, 0, 1}, {1, 3, 3});  // unbatched [C, H, W]
    ValueList r = max_pool2d(x, {2, 2}, {1, 1}, {0, 0});
    QCOMPARE(r[0].to_tensor().sizes(), (Shape{1, 2, 2}));
    std::vector<double> v = values(r[0].to_tensor());
    QVERIFY(std::isnan(v[0]) && std::isnan(v[1]) && std::isnan(v[2]) && v[3] == 7);
    KILN_COMPARE_VALUES(r[1].to_tensor(), {1, 1, 6, 4});
    // ceil_mode keeps a last, partial window that starts inside the input.
    Tensor y = random_tensor({2, 3, 5, 5}, 1);
    QCOMPARE(max_pool2d(y, {2, 2}, {2, 2}, {0, 0}, {1, 1}, true)[0].to_tensor().sizes(), (Shape{2, 3, 3, 3}));
    QCOMPARE(max_pool2d(y, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false)[0].to_tensor().sizes(), (Shape{2, 3, 2, 2}));
    QCOMPARE(max_pool2d(y, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true)[0].to_tensor().sizes(), (Shape{2, 3, 3, 3}));
    Tensor xi = Tensor::from_vector<int64_t>({-5, -7, -9, -6}, {1, 1, 2, 2});
    ValueList ri = max_pool2d(xi, {2, 2}, {}, {0, 0});
    QCOMPARE(ri[0].to_tensor().dtype(), DType::Int64);
    KILN_COMPARE_VALUES(ri[0].to_tensor(), {-5});
    Tensor mp = call1("aten::max_pool2d", {y, ints({3, 3}), ints({}), ints({1, 1})});
    KILN_EXPECT_CLOSE(mp, values(max_pool2d(y, {3, 3}, {3, 3}, {1, 1})[0].to_tensor()), 0, 0);
  }

  void max_pool_matches_reference() {
    struct Case {
      Shape xs, k, s, p, d;
      bool ceil;
    };
    std::vector<Case> cases = {
        {{2, 3, 9, 8}, {3, 2}, {2, 3}, {1, 1}, {1, 2}, true},
        {{1, 2, 7, 7}, {2, 2}, {3, 3}, {1, 0}, {2, 2}, true},
        {{2, 2, 5, 6, 7}, {2, 3, 2}, {2, 1, 2}, {1, 1, 0}, {2, 1, 3}, false},
        {{1, 3, 6, 5, 4}, {3, 2, 2}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, true},
    };
    uint64_t seed = 50;
    for (const Case& c : cases) {
      Tensor x = random_tensor(c.xs, seed++);
      bool three = c.xs.size() == 5;
      ValueList r = call(three ? "aten::max_pool3d_with_indices" : "aten::max_pool2d_with_indices",
                         {x, ints(c.k), ints(c.s), ints(c.p), ints(c.d), c.ceil});
      Tensor y = r[0].to_tensor();
      auto pad3 = [&](const Shape& v, int64_t fill) {
        Shape o(3 - v.size(), fill);
        o.insert(o.end(), v.begin(), v.end());
        return o;
      };
      Tensor x5 = three ? x : x.unsqueeze(2);
      Shape o5 = three ? y.sizes() : y.unsqueeze(2).sizes();
      PoolRef want = ref_max_pool(x5, o5, pad3(c.k, 1), pad3(c.s, 1), pad3(c.p, 0), pad3(c.d, 1));
      KILN_EXPECT_CLOSE(y, want.values, 0, 0);
      KILN_EXPECT_CLOSE(r[1].to_tensor(), want.indices, 0, 0);
    }
  }

  void max_pool_1d_3d() {
    Tensor x = Tensor::from_vector<float>({3, 1, 4, 1, 5, 9, 2, 6}, {1, 8});
    ValueList r = call("aten::max_pool1d_with_indices", {x, ints({3}), ints({2}), ints({1})});
    KILN_COMPARE_VALUES(r[0].to_tensor(), {3, 4, 9, 9});
    KILN_COMPARE_VALUES(r[1].to_tensor(), {0, 2, 5, 5});
    KILN_COMPARE_VALUES(call1("aten::max_pool1d", {x, ints({2})}), {3, 4, 9, 6});
    Tensor v = kiln::test::arange_f32({1, 1, 2, 2, 2});
    ValueList r3 = call("aten::max_pool3d_with_indices", {v, ints({2, 2, 2})});
    KILN_COMPARE_VALUES(r3[0].to_tensor(), {7});
    KILN_COMPARE_VALUES(r3[1].to_tensor(), {7});  // d * H * W + h * W + w
  }

  void max_pool_errors() {
    Tensor x = random_tensor({1, 3, 4, 4}, 2);
    KILN_EXPECT_ERROR(error_of("aten::max_pool2d_with_indices", {x, ints({3, 3}), ints({1, 1}), ints({2, 2})}),
                      "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1");
    KILN_EXPECT_ERROR(error_of("aten::max_pool2d_with_indices", {x, ints({5, 5})}),
                      "Given input size: (3x4x4). Calculated output size: (3x0x0). Output size is too small");
    KILN_EXPECT_ERROR(error_of("aten::max_pool2d_with_indices", {x, ints({2, 2, 2})}),
                      "kernel_size must either be a single int, or a tuple of two ints");
    KILN_EXPECT_ERROR(error_of("aten::max_pool2d_with_indices", {random_tensor({4, 4}, 1), ints({2, 2})}),
                      "3D or 4D");
    KILN_EXPECT_ERROR(error_of("aten::max_pool2d_with_indices", {x.to(DType::Bool), ints({2, 2})}), "'Bool'");
    KILN_EXPECT_ERROR(error_of("aten::max_pool2d_with_indices", {x, ints({2, 2}), ints({0, 1})}),
                      "stride should not be zero");
  }

  void avg_pool2d_variants() {
    Tensor x = kiln::test::arange_f32({1, 1, 3, 3}, 1.f);  // 1..9
    KILN_COMPARE_VALUES(avg_pool2d(x, {2, 2}, {1, 1}, {0, 0}, false, true), {3, 4, 6, 7});
    // Padding 1, kernel 3 at the corner: 4 real cells, 9 counting padding.
    KILN_COMPARE_VALUES(avg_pool2d(x, {3, 3}, {2, 2}, {1, 1}, false, true), {12.0 / 9, 16.0 / 9, 24.0 / 9, 28.0 / 9});
    KILN_COMPARE_VALUES(avg_pool2d(x, {3, 3}, {2, 2}, {1, 1}, false, false), {3, 4, 6, 7});
    KILN_COMPARE_VALUES(avg_pool2d(x, {3, 3}, {2, 2}, {1, 1}, false, true, Value(int64_t(2))), {6, 8, 12, 14});
    // ceil_mode: the window past the end counts only up to input + padding.
    Tensor c = avg_pool2d(x, {2, 2}, {2, 2}, {0, 0}, true, true);
    QCOMPARE(c.sizes(), (Shape{1, 1, 2, 2}));
    KILN_COMPARE_VALUES(c, {3, 4.5, 7.5, 9});
    Tensor xi = Tensor::from_vector<int64_t>({1, 2, 3, 5}, {1, 2, 2});
    Tensor ci = avg_pool2d(xi, {2, 2}, {}, {0, 0}, false, true);
    QCOMPARE(ci.dtype(), DType::Int64);
    KILN_COMPARE_VALUES(ci, {2});  // 11 / 4 truncates
    KILN_EXPECT_ERROR(error_of("aten::avg_pool2d", {x, ints({2, 2}), ints({}), ints({0, 0}), false, true, int64_t(0)}),
                      "divisor must be not zero");
    KILN_EXPECT_ERROR(error_of("aten::avg_pool2d", {x.to(DType::Int32), ints({2, 2})}), "not implemented for 'int32'");
    KILN_COMPARE_VALUES(call1("aten::avg_pool1d", {Tensor::from_vector<float>({1, 2, 3, 4}, {1, 4}), ints({2})}), {1.5, 3.5});
    Tensor v = kiln::test::arange_f32({1, 2, 2, 2});
    KILN_COMPARE_VALUES(call1("aten::avg_pool3d", {v, ints({2, 2, 2})}), {3.5});
  }

  void adaptive_avg_windows() {
    // 5 -> 3: windows [0, 2), [1, 4), [3, 5) (floor start, ceil end).
    Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5}, {1, 1, 5});
    Tensor y = call1("aten::_adaptive_avg_pool2d", {x, ints({1, 3})});
    KILN_COMPARE_VALUES(y, {1.5, 3, 4.5});
    Tensor z = random_tensor({2, 3, 7, 7}, 3);
    Tensor g = call1("aten::_adaptive_avg_pool2d", {z, ints({1, 1})});
    QCOMPARE(g.sizes(), (Shape{2, 3, 1, 1}));
    std::vector<double> zv = values(z), means(6, 0.0);
    for (size_t i = 0; i < zv.size(); ++i) means[i / 49] += zv[i] / 49;
    KILN_EXPECT_CLOSE(g, means, 1e-6, 1e-6);
    QCOMPARE(call1("aten::adaptive_avg_pool2d", {z, ints({3, 2})}).sizes(), (Shape{2, 3, 3, 2}));
    QCOMPARE(call1("aten::_adaptive_avg_pool2d", {z, ints({0, 2})}).sizes(), (Shape{2, 3, 0, 2}));
    KILN_COMPARE_VALUES(call1("aten::adaptive_avg_pool1d", {Tensor::from_vector<float>({1, 2, 3, 4}, {1, 4}), ints({2})}),
                        {1.5, 3.5});
    KILN_EXPECT_ERROR(error_of("aten::_adaptive_avg_pool2d", {z.to(DType::Int64), ints({1, 1})}),
                      "not implemented for 'int64'");
    KILN_EXPECT_ERROR(error_of("aten::_adaptive_avg_pool2d", {Tensor::zeros({2, 0, 4}, DType::Float32), ints({1, 1})}),
                      "Expected input to have non-zero size for non-batch dimensions");
    ValueList m = call("aten::adaptive_max_pool2d", {x, ints({1, 3})});
    KILN_COMPARE_VALUES(m[0].to_tensor(), {2, 4, 5});
    KILN_COMPARE_VALUES(m[1].to_tensor(), {1, 3, 4});
  }

  void backwards_scatter_and_adjoint() {
    Tensor x = Tensor::from_vector<float>({1, 5, 2, 0, 3, 4, 8, 1, 9, 2, 6, 7, 0, 1, 3, 2}, {1, 1, 4, 4});
    // Overlapping windows: input 8 (index 6) is the max of two windows and gets both gradients.
    ValueList r = max_pool2d(x, {2, 2}, {1, 1}, {0, 0});
    Tensor go = Tensor::full({1, 1, 3, 3}, Scalar(1.0), DType::Float32);
    Tensor gi = call1("aten::max_pool2d_with_indices_backward",
                      {go, x, ints({2, 2}), ints({1, 1}), ints({0, 0}), ints({1, 1}), false, r[1]});
    KILN_COMPARE_VALUES(gi, {0, 1, 0, 0, 0, 0, 4, 0, 2, 0, 1, 1, 0, 0, 0, 0});
    // Average pooling and adaptive average pooling are linear: <pool(x), g> = <x, backward(g)>.
    Tensor y = random_tensor({2, 3, 7, 6}, 4);
    Tensor p = avg_pool2d(y, {3, 2}, {2, 2}, {1, 1}, true, false);
    Tensor g = random_tensor(p.sizes(), 5);
    Tensor b = call1("aten::avg_pool2d_backward", {g, y, ints({3, 2}), ints({2, 2}), ints({1, 1}), true, false, Value()});
    QVERIFY(std::abs(dot_all(p, g) - dot_all(y, b)) < 1e-4);
    Tensor a = call1("aten::_adaptive_avg_pool2d", {y, ints({4, 5})});
    Tensor ga = random_tensor(a.sizes(), 6);
    Tensor ba = call1("aten::_adaptive_avg_pool2d_backward", {ga, y});
    QVERIFY(std::abs(dot_all(a, ga) - dot_all(y, ba)) < 1e-4);
    ValueList am = call("aten::adaptive_max_pool2d", {y, ints({3, 3})});
    Tensor gm = random_tensor(am[0].to_tensor().sizes(), 7);
    Tensor bm = call1("aten::adaptive_max_pool2d_backward", {gm, y, am[1]});
    QVERIFY(std::abs(dot_all(am[0].to_tensor(), gm) - dot_all(y, bm)) < 1e-4);  // max picks one input per output
    Tensor bad = Tensor::full(r[1].to_tensor().sizes(), Scalar(int64_t(99)), DType::Int64);
    KILN_EXPECT_ERROR(error_of("aten::max_pool2d_with_indices_backward",
                               {go, x, ints({2, 2}), ints({1, 1}), ints({0, 0}), ints({1, 1}), false, bad}),
                      "out of range");
  }

  void backwards_match_corpus() {
    QVERIFY(check_corpus_grads("aten::max_pool2d_with_indices.default", [](const CorpusCase& k) {
              Tensor x = k.args[0].to_tensor();
              ValueList fwd = call("aten::max_pool2d_with_indices", k.args);
              return call1("aten::max_pool2d_with_indices_backward",
                           {k.grad_outputs[0], x, k.args[1], k.args[2], ints({0, 0}), ints({1, 1}), false, fwd[1]});
            }) >= 1);
    QVERIFY(check_corpus_grads("aten::avg_pool2d.default", [](const CorpusCase& k) {
              return call1("aten::avg_pool2d_backward", {k.grad_outputs[0], k.args[0], k.args[1], k.args[2], k.args[3],
                                                         false, true, Value()});
            }) >= 1);
    QVERIFY(check_corpus_grads("aten::_adaptive_avg_pool2d.default", [](const CorpusCase& k) {
              return call1("aten::_adaptive_avg_pool2d_backward", {k.grad_outputs[0], k.args[0]});
            }) >= 1);
  }

  void meta_shapes() {
    auto m = call_meta("aten::max_pool2d_with_indices", {Tensor::meta({8, 64, 112, 112}, DType::Float32), ints({3, 3}),
                                                         ints({2, 2}), ints({1, 1})});
    QVERIFY(m.ok());
    QCOMPARE((*m)[0].to_tensor().sizes(), (Shape{8, 64, 56, 56}));
    QCOMPARE((*m)[1].to_tensor().dtype(), DType::Int64);
  }
};

QTEST_GUILESS_MAIN(TestOpsPooling)
#include "test_ops_pooling.moc"
