// Nearest, nearest-exact and linear upsampling: PyTorch's source-index rules
// (including user scales that differ from the size ratio), align_corners,
// errors, and the backwards by adjoint identity and the corpus gradient.
#include "nn_test_util.h"

#include "core/corpus/conformance.h"

using namespace kiln;
using kiln::test::call1;
using kiln::test::dot_all;
using kiln::test::error_of;
using kiln::test::ints;
using kiln::test::random_tensor;
using kiln::test::values;

namespace {
Value floats(std::vector<double> v) {
  ValueList l;
  for (double x : v) l.emplace_back(x);
  return Value(l);
}
}  // namespace

class TestOpsUpsample : public QObject {
  Q_OBJECT
 private slots:
  void nearest_indices() {
    Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 1, 2, 2});
    Tensor y = call1("aten::upsample_nearest2d.vec", {x, ints({4, 4}), Value()});
    KILN_COMPARE_VALUES(y, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
    Tensor r = kiln::test::arange_f32({1, 1, 5});
    // From the size ratio 5/8 = 0.625, and from a user scale 1/1.7: different sources at o = 5.
    KILN_COMPARE_VALUES(call1("aten::upsample_nearest1d", {r, ints({8})}), {0, 0, 1, 1, 2, 3, 3, 4});
    Tensor s = call1("aten::upsample_nearest1d.vec", {r, Value(), floats({1.7})});
    QCOMPARE(s.sizes(), (Shape{1, 1, 8}));
    KILN_COMPARE_VALUES(s, {0, 0, 1, 1, 2, 2, 3, 4});
    KILN_COMPARE_VALUES(call1("aten::upsample_nearest1d", {r.slice(2, 0, 3), ints({5})}), {0, 0, 1, 1, 2});
    KILN_COMPARE_VALUES(call1("aten::_upsample_nearest_exact1d", {r.slice(2, 0, 3), ints({5})}), {0, 0, 1, 2, 2});
    Tensor u8 = Tensor::from_vector<uint8_t>({7, 9}, {1, 1, 1, 2});
    Tensor yu = call1("aten::upsample_nearest2d", {u8, ints({2, 4})});
    QCOMPARE(yu.dtype(), DType::UInt8);
    KILN_COMPARE_VALUES(yu, {7, 7, 9, 9, 7, 7, 9, 9});
    Tensor v = random_tensor({2, 3, 2, 3, 2}, 1);
    Tensor v3 = call1("aten::upsample_nearest3d.vec", {v, Value(), floats({2, 2, 2})});
    QCOMPARE(v3.sizes(), (Shape{2, 3, 4, 6, 4}));
    QCOMPARE(values(v3.select(2, 3).select(2, 5).select(2, 3)), values(v.select(2, 1).select(2, 2).select(2, 1)));
  }

  void linear_modes() {
    Tensor x = Tensor::from_vector<float>({0, 10, 20}, {1, 1, 3});
    KILN_COMPARE_VALUES(call1("aten::upsample_linear1d", {x, ints({5}), false}), {0, 4, 10, 16, 20});
    KILN_COMPARE_VALUES(call1("aten::upsample_linear1d", {x, ints({5}), true}), {0, 5, 10, 15, 20});
    Tensor q = Tensor::from_vector<float>({0, 10, 20, 30}, {1, 1, 2, 2});
    Tensor b = call1("aten::upsample_bilinear2d.vec", {q, ints({4, 4}), true, Value()});
    KILN_COMPARE_VALUES(b, {0, 10.0 / 3, 20.0 / 3, 10, 20.0 / 3, 10, 40.0 / 3, 50.0 / 3, 40.0 / 3, 50.0 / 3, 20,
                            70.0 / 3, 20, 70.0 / 3, 80.0 / 3, 30});
    // align_corners=False, 2x: sources at -0.25 (clamped), 0.25, 0.75, 1.25 (clamped to the edge).
    Tensor c = call1("aten::upsample_bilinear2d", {q, ints({4, 4}), false});
    KILN_COMPARE_VALUES(c.select(2, 0), {0, 2.5, 7.5, 10});
    KILN_COMPARE_VALUES(c.select(3, 0), {0, 5, 15, 20});
    // A constant stays constant in 3-D.
    Tensor k = Tensor::full({1, 2, 2, 3, 2}, Scalar(1.5), DType::Float32);
    Tensor t = call1("aten::upsample_trilinear3d", {k, ints({3, 5, 4}), false});
    for (double v : values(t)) QCOMPARE(v, 1.5);
    Tensor h = call1("aten::upsample_bilinear2d", {q.to(DType::Float16), ints({3, 5}), false});
    QCOMPARE(h.dtype(), DType::Float16);
    KILN_EXPECT_CLOSE(h, values(call1("aten::upsample_bilinear2d", {q, ints({3, 5}), false})), 1e-3, 1e-2);
  }

  void user_scales_reach_linear_weights() {
    // Scale 2.1: output floor(8.4) = 8, and the source step is 1/2.1, not the size ratio 4/8.
    Tensor x = Tensor::from_vector<float>({0, 1, 2, 3}, {1, 1, 4});
    Tensor y = call1("aten::upsample_linear1d.vec", {x, Value(), false, floats({2.1})});
    QCOMPARE(y.sizes(), (Shape{1, 1, 8}));
    std::vector<double> want;
    for (int o = 0; o < 8; ++o) want.push_back(std::min(std::max(float(1.0 / 2.1) * (o + 0.5f) - 0.5f, 0.f), 3.f));
    KILN_EXPECT_CLOSE(y, want, 1e-6, 1e-6);
  }

  void errors() {
    Tensor x = random_tensor({1, 1, 2, 2}, 2);
    KILN_EXPECT_ERROR(error_of("aten::upsample_nearest2d.vec", {x, ints({4, 4}), floats({2, 2})}),
                      "Must specify exactly one of output_size and scale_factors");
    KILN_EXPECT_ERROR(error_of("aten::upsample_nearest2d", {x.select(0, 0), ints({4, 4})}),
                      "Non-empty 4D data tensor expected but got a tensor with sizes [1, 2, 2]");
    KILN_EXPECT_ERROR(error_of("aten::upsample_nearest2d", {x, ints({0, 4})}),
                      "Input and output sizes should be greater than 0, but got input (H: 2, W: 2) output (H: 0, W: 4)");
    KILN_EXPECT_ERROR(error_of("aten::upsample_bilinear2d", {x.to(DType::UInt8), ints({4, 4}), false}),
                      "not implemented for 'uint8'");
    KILN_EXPECT_ERROR(error_of("aten::upsample_nearest2d", {x.to(DType::Int64), ints({4, 4})}),
                      "not implemented for 'int64'");
  }

  // Every upsample is linear in its input: <up(x), g> = <x, up_backward(g)>.
  void backward_adjoints() {
    Tensor x = random_tensor({2, 3, 4, 5}, 3);
    Tensor g = random_tensor({2, 3, 7, 9}, 4);
    auto check = [&](const Tensor& y, const Tensor& gi) {
      QCOMPARE(gi.sizes(), x.sizes());
      QVERIFY(std::abs(dot_all(y, g) - dot_all(x, gi)) < 1e-4);
    };
    check(call1("aten::upsample_nearest2d", {x, ints({7, 9})}),
          call1("aten::upsample_nearest2d_backward", {g, ints({7, 9}), ints({2, 3, 4, 5})}));
    check(call1("aten::_upsample_nearest_exact2d", {x, ints({7, 9}), 1.6, 1.9}),
          call1("aten::_upsample_nearest_exact2d_backward", {g, ints({7, 9}), ints({2, 3, 4, 5}), 1.6, 1.9}));
    for (bool align : {false, true})
      check(call1("aten::upsample_bilinear2d", {x, ints({7, 9}), align}),
            call1("aten::upsample_bilinear2d_backward", {g, ints({7, 9}), ints({2, 3, 4, 5}), align}));
    Tensor x1 = random_tensor({2, 3, 6}, 5), g1 = random_tensor({2, 3, 4}, 6);  // downsampling too
    Tensor y1 = call1("aten::upsample_linear1d", {x1, ints({4}), false});
    Tensor b1 = call1("aten::upsample_linear1d_backward", {g1, ints({4}), ints({2, 3, 6}), false});
    QVERIFY(std::abs(dot_all(y1, g1) - dot_all(x1, b1)) < 1e-4);
    KILN_EXPECT_ERROR(error_of("aten::upsample_nearest2d_backward", {g, ints({7, 8}), ints({2, 3, 4, 5})}),
                      "expected grad_output of size [2, 3, 7, 8]");
  }

  void backward_matches_corpus() {
    auto corpus = load_corpus(kiln::test::reference_dir() + "/opcorpus");
    QVERIFY(corpus.ok());
    int checked = 0;
    for (const CorpusCase& k : corpus->cases) {
      if (k.op != "aten::upsample_nearest2d.vec" || k.grad_outputs.empty()) continue;
      Tensor x = k.args[0].to_tensor();
      Tensor gi = call1("aten::upsample_nearest2d_backward",
                        {k.grad_outputs[0], ints({k.outputs[0].size(2), k.outputs[0].size(3)}), ints(x.sizes())});
      Comparison cmp = compare_tensors(gi, k.grad_inputs.at(0).second);
      QVERIFY2(cmp.ok, cmp.reason.c_str());
      ++checked;
    }
    QVERIFY(checked >= 1);
  }
};

QTEST_GUILESS_MAIN(TestOpsUpsample)
#include "test_ops_upsample.moc"
