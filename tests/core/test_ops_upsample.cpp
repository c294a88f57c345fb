// Nearest, nearest-exact, linear and bicubic upsampling: PyTorch's
// source-index rules (including user scales that differ from the size ratio),
// align_corners, errors, and the backwards by adjoint identity and the corpus
// gradient.
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

  // Bicubic weights worked out from UpSample.h: A = -0.75, taps at t + 1, t,
  // 1 - t, 2 - t. For t = 0.25 they are (-27, 225, 67, -9) / 256 and for
  // t = 0.75 the reverse; t = 0.5 gives (-3, 19, 19, -3) / 32. The inputs are
  // small integers, so every value below is exact in float32.
  void bicubic_weights_by_hand() {
    Tensor x = Tensor::from_vector<float>({0, 1, 2, 3}, {1, 1, 1, 4});
    // align_corners=False, 4 -> 8: sources 0.5 o - 0.25, never clamped at 0 (o = 0 is -0.25:
    // index -1, t = 0.75, taps -2..1 read 0, 0, 0, 1); past the right edge taps repeat x[3].
    Tensor y = call1("aten::upsample_bicubic2d", {x, ints({1, 8}), false});
    QCOMPARE(y.sizes(), (Shape{1, 1, 1, 8}));
    QCOMPARE(values(y), (std::vector<double>{-0.10546875, 0.19140625, 0.66796875, 1.296875, 1.703125, 2.33203125,
                                             2.80859375, 3.10546875}));
    // align_corners=True, 4 -> 7: sources 0.5 o; whole positions copy the input.
    QCOMPARE(values(call1("aten::upsample_bicubic2d", {x, ints({1, 7}), true})),
             (std::vector<double>{0, 0.40625, 1, 1.5, 2, 2.59375, 3}));
    // 2-D: rows interpolated along W, then the four rows along H.
    Tensor q = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 1, 2, 2});
    Tensor z = call1("aten::upsample_bicubic2d.vec", {q, Value(), false, floats({2.0, 2.0})});
    QCOMPARE(z.sizes(), (Shape{1, 1, 4, 4}));
    QCOMPARE(values(z), (std::vector<double>{0.68359375, 1.015625, 1.5625, 1.89453125, 1.34765625, 1.6796875,
                                             2.2265625, 2.55859375, 2.44140625, 2.7734375, 3.3203125, 3.65234375,
                                             3.10546875, 3.4375, 3.984375, 4.31640625}));
    QCOMPARE(values(call1("aten::upsample_bicubic2d.vec", {q, ints({3, 3}), true, Value()})),
             (std::vector<double>{1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4}));
    // A user scale 1.6 sets the source step to 0.625, not the size ratio 4/6.
    QCOMPARE(values(call1("aten::upsample_bicubic2d", {x, ints({1, 6}), false, Value(), 1.6})),
             (std::vector<double>{-0.09283447265625, 0.34906005859375, 1.088134765625, 1.647216796875,
                                  2.40313720703125, 2.95306396484375}));
    // The weights of the forward kernel are stored in the input's dtype: float64 gets the same
    // numbers here, float16 rounds them.
    QCOMPARE(values(call1("aten::upsample_bicubic2d", {x.to(DType::Float64), ints({1, 8}), false})), values(y));
    Tensor h = call1("aten::upsample_bicubic2d", {q.to(DType::Float16), ints({4, 4}), false});
    QCOMPARE(h.dtype(), DType::Float16);
    KILN_EXPECT_CLOSE(h, values(z), 1e-3, 2e-3);
  }

  void bicubic_backward() {
    // One output from two inputs: t = 0.5 at index 0, taps 0, 0, 1, 1, weights (-3, 19, 19, -3) / 32.
    Tensor g = Tensor::full({1, 1, 1, 1}, Scalar(2.0), DType::Float32);
    QCOMPARE(values(call1("aten::upsample_bicubic2d_backward", {g, ints({1, 1}), ints({1, 1, 1, 2}), false})),
             (std::vector<double>{1, 1}));
    // 2 -> 4 in both dims, gradient at two corners: each tap's weight product lands on the clamped
    // input; a constant gradient sums the weights (1 per output) to 4 per input.
    Tensor corners = Tensor::from_vector<float>({1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, {1, 1, 4, 4});
    QCOMPARE(values(call1("aten::upsample_bicubic2d_backward", {corners, ints({4, 4}), ints({1, 1, 2, 2}), false})),
             (std::vector<double>{1.233184814453125, -0.233184814453125, -0.233184814453125, 1.233184814453125}));
    Tensor ones = Tensor::full({1, 1, 4, 4}, Scalar(1.0), DType::Float32);
    QCOMPARE(values(call1("aten::upsample_bicubic2d_backward", {ones, ints({4, 4}), ints({1, 1, 2, 2}), false})),
             (std::vector<double>{4, 4, 4, 4}));
    // Adjoint of the forward, both alignments, up and down, with user scales.
    Tensor x = random_tensor({2, 3, 4, 5}, 7);
    for (bool align : {false, true}) {
      Tensor gy = random_tensor({2, 3, 7, 3}, align ? 8 : 9);
      Tensor y = call1("aten::upsample_bicubic2d", {x, ints({7, 3}), align, 1.9, 0.7});
      Tensor gi = call1("aten::upsample_bicubic2d_backward", {gy, ints({7, 3}), ints({2, 3, 4, 5}), align, 1.9, 0.7});
      QCOMPARE(gi.sizes(), x.sizes());
      QVERIFY(std::abs(dot_all(y, gy) - dot_all(x, gi)) < 1e-4);
    }
    // 16-bit gradients accumulate in float32 and round once.
    Tensor gh = call1("aten::upsample_bicubic2d_backward",
                      {ones.to(DType::BFloat16), ints({4, 4}), ints({1, 1, 2, 2}), false});
    QCOMPARE(gh.dtype(), DType::BFloat16);
    QCOMPARE(values(gh), (std::vector<double>{4, 4, 4, 4}));
  }

  void bicubic_errors() {
    Tensor x = random_tensor({1, 1, 2, 2}, 2);
    KILN_EXPECT_ERROR(error_of("aten::upsample_bicubic2d", {x.to(DType::UInt8), ints({4, 4}), false}),
                      "uint8 input is not supported by Kiln");
    KILN_EXPECT_ERROR(error_of("aten::upsample_bicubic2d", {x.to(DType::Int32), ints({4, 4}), false}),
                      "not implemented for 'int32'");
    KILN_EXPECT_ERROR(error_of("aten::upsample_bicubic2d.vec", {x, ints({4, 4}), false, floats({2, 2})}),
                      "Must specify exactly one of output_size and scale_factors");
    KILN_EXPECT_ERROR(error_of("aten::upsample_bicubic2d", {x.select(0, 0), ints({4, 4}), false}),
                      "Non-empty 4D data tensor expected");
    KILN_EXPECT_ERROR(error_of("aten::upsample_bicubic2d_backward",
                               {random_tensor({1, 1, 4, 3}, 3), ints({4, 4}), ints({1, 1, 2, 2}), false}),
                      "expected grad_output of size [1, 1, 4, 4]");
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
