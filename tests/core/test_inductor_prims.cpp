// Inductor's max-pool prims (prims::_low_memory_max_pool_with_offsets and
// _low_memory_max_pool_offsets_to_indices) and convolution_backward with
// bias_sizes=[0], the form PyTorch's graphs use for a convolution without bias.
// Expected values are worked out by hand from the prims' definitions in
// torch/_inductor/inductor_prims.py: offset = kernel position flattened over
// kernel_size (kh * kW + kw), index = input position flattened over the input
// plane (h * W + w), input position = o * stride - padding + k * dilation.
#include "nn_test_util.h"

using namespace kiln;
using kiln::test::call;
using kiln::test::call1;
using kiln::test::error_of;
using kiln::test::ints;
using kiln::test::random_tensor;
using kiln::test::values;

namespace {

constexpr const char* kWithOffsets = "prims::_low_memory_max_pool_with_offsets";
constexpr const char* kToIndices = "prims::_low_memory_max_pool_offsets_to_indices";

ValueList with_offsets(const Tensor& x, Shape k, Shape s, Shape p, Shape d, bool ceil = false) {
  return call(kWithOffsets, {x, ints(k), ints(s), ints(p), ints(d), ceil});
}

Tensor to_indices(const Tensor& offsets, Shape k, Shape in, Shape s, Shape p, Shape d) {
  return call1(kToIndices, {offsets, ints(k), ints(in), ints(s), ints(p), ints(d)});
}

// The 4x4 plane of the hand-worked example: 3x3 windows, stride 2, padding 1.
Tensor example_plane() {
  return Tensor::from_vector(std::vector<float>{1, 9, 2, 3,  //
                                                4, 5, 8, 6,  //
                                                7, 0, 3, 11,  //
                                                10, 2, 1, 4},
                             {1, 1, 4, 4});
}

ValueList conv_backward(const Tensor& go, const Tensor& x, const Tensor& w, Value bias_sizes, std::array<bool, 3> mask) {
  return call("aten::convolution_backward", {go, x, w, std::move(bias_sizes), ints({1, 1}), ints({0, 0}), ints({1, 1}),
                                             false, ints({0, 0}), int64_t(1),
                                             ValueList{Value(mask[0]), Value(mask[1]), Value(mask[2])}});
}

}  // namespace

class TestInductorPrims : public QObject {
  Q_OBJECT

 private slots:
  void offsetsByHand() {
    // Windows (rows x cols): (0,0) rows 0-1 x cols 0-1 -> 9 at (0,1); (0,1) rows 0-1 x cols 1-3
    // -> 9 at (0,1); (1,0) rows 1-3 x cols 0-1 -> 10 at (3,0); (1,1) rows 1-3 x cols 1-3 -> 11 at (2,3).
    // Offsets relative to each window's corner (o * 2 - 1): (1,2), (1,0), (2,1), (1,2).
    ValueList r = with_offsets(example_plane(), {3, 3}, {2, 2}, {1, 1}, {1, 1});
    QCOMPARE(r.size(), size_t(2));
    Tensor v = r[0].to_tensor(), off = r[1].to_tensor();
    QCOMPARE(v.sizes(), (Shape{1, 1, 2, 2}));
    QCOMPARE(v.dtype(), DType::Float32);
    QCOMPARE(off.sizes(), (Shape{1, 1, 2, 2}));
    QCOMPARE(off.dtype(), DType::Int8);
    KILN_COMPARE_VALUES(v, {9, 9, 10, 11});
    KILN_COMPARE_VALUES(off, {5, 3, 7, 5});
    Tensor ind = to_indices(off, {3, 3}, {4, 4}, {2, 2}, {1, 1}, {1, 1});
    QCOMPARE(ind.dtype(), DType::Int64);
    QCOMPARE(ind.sizes(), (Shape{1, 1, 2, 2}));
    KILN_COMPARE_VALUES(ind, {1, 1, 12, 11});
  }

  void dilationAndCeilMode() {
    // 6x6 arange (the window's maximum is its last in-bounds element), 2x2 windows
    // with dilation 2 and stride 2: window rows {2o, 2o + 2}; ceil_mode adds o = 2,
    // whose second row (6) is past the input, so only row 4 (kernel position 0) is read.
    Tensor x = kiln::test::arange_f32({1, 1, 6, 6});
    ValueList r = with_offsets(x, {2, 2}, {2, 2}, {0, 0}, {2, 2}, true);
    Tensor off = r[1].to_tensor();
    QCOMPARE(off.sizes(), (Shape{1, 1, 3, 3}));
    KILN_COMPARE_VALUES(off, {3, 3, 2, 3, 3, 2, 1, 1, 0});
    KILN_COMPARE_VALUES(r[0].to_tensor(), {14, 16, 16, 26, 28, 28, 26, 28, 28});
    KILN_COMPARE_VALUES(to_indices(off, {2, 2}, {6, 6}, {2, 2}, {0, 0}, {2, 2}),
                        {14, 16, 16, 26, 28, 28, 26, 28, 28});
  }

  void threeD() {
    // 3x3x3 arange, 2x2x2 windows at stride 1: every maximum is the window's far
    // corner, offset (1,1,1) -> 1*4 + 1*2 + 1 = 7, index (d+1)*9 + (h+1)*3 + (w+1).
    Tensor x = kiln::test::arange_f32({1, 1, 3, 3, 3});
    ValueList r = with_offsets(x, {2, 2, 2}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1});
    QCOMPARE(r[1].to_tensor().sizes(), (Shape{1, 1, 2, 2, 2}));
    KILN_COMPARE_VALUES(r[1].to_tensor(), {7, 7, 7, 7, 7, 7, 7, 7});
    std::vector<double> want = {13, 14, 16, 17, 22, 23, 25, 26};
    KILN_COMPARE_VALUES(r[0].to_tensor(), want);
    KILN_COMPARE_VALUES(to_indices(r[1].to_tensor(), {2, 2, 2}, {3, 3, 3}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}), want);
  }

  // The pair computes what max_poolNd_with_indices does, whatever the layout:
  // the decomposition Inductor applies must not change values or indices.
  void roundTripMatchesMaxPoolWithIndices() {
    struct Case {
      Shape x, k, s, p, d;
      bool ceil;
    };
    const Case cases[] = {
        {{2, 3, 9, 7}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false},
        {{2, 3, 9, 7}, {3, 2}, {2, 1}, {1, 0}, {2, 1}, true},
        {{3, 8, 8}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false},  // unbatched
        {{1, 2, 5, 6, 7}, {3, 2, 3}, {2, 2, 1}, {1, 1, 1}, {1, 2, 1}, true},
    };
    uint64_t seed = 1;
    for (const Case& c : cases) {
      Tensor x = random_tensor(c.x, seed++);
      std::string pool = c.k.size() == 2 ? "aten::max_pool2d_with_indices" : "aten::max_pool3d_with_indices";
      ValueList want = call(pool, {x, ints(c.k), ints(c.s), ints(c.p), ints(c.d), c.ceil});
      ValueList got = with_offsets(x, c.k, c.s, c.p, c.d, c.ceil);
      QCOMPARE(values(got[0].to_tensor()), values(want[0].to_tensor()));
      Shape in(c.x.end() - int64_t(c.k.size()), c.x.end());
      Tensor ind = to_indices(got[1].to_tensor(), c.k, in, c.s, c.p, c.d);
      QCOMPARE(ind.sizes(), want[1].to_tensor().sizes());
      QCOMPARE(values(ind), values(want[1].to_tensor()));
    }
    // A channels-last input (as Inductor lays out convolution outputs) gives the same.
    Tensor x = random_tensor({2, 4, 6, 6}, 99);
    Tensor cl = x.permute(std::vector<int64_t>{0, 2, 3, 1}).contiguous().permute(std::vector<int64_t>{0, 3, 1, 2});
    ValueList a = with_offsets(x, {3, 3}, {2, 2}, {1, 1}, {1, 1});
    ValueList b = with_offsets(cl, {3, 3}, {2, 2}, {1, 1}, {1, 1});
    QCOMPARE(values(b[0].to_tensor()), values(a[0].to_tensor()));
    QCOMPARE(values(b[1].to_tensor()), values(a[1].to_tensor()));
  }

  void toIndicesTakesAnyIntegerOffsets() {
    // int32 offsets, the example's values, unbatched [C=2, 2, 2] with both planes alike.
    Tensor off = Tensor::from_vector(std::vector<int32_t>{5, 3, 7, 5, 5, 3, 7, 5}, {2, 2, 2});
    Tensor ind = to_indices(off, {3, 3}, {4, 4}, {2, 2}, {1, 1}, {1, 1});
    QCOMPARE(ind.sizes(), (Shape{2, 2, 2}));
    KILN_COMPARE_VALUES(ind, {1, 1, 12, 11, 1, 1, 12, 11});
  }

  void metaShapes() {
    auto r = call_meta(kWithOffsets, {Tensor::meta({16, 64, 64, 64}, DType::Float32), ints({3, 3}), ints({2, 2}),
                                      ints({1, 1}), ints({1, 1}), false});
    QVERIFY2(r.ok(), r.ok() ? "" : r.status().message().c_str());
    QCOMPARE((*r)[0].to_tensor().sizes(), (Shape{16, 64, 32, 32}));
    QCOMPARE((*r)[0].to_tensor().dtype(), DType::Float32);
    QCOMPARE((*r)[1].to_tensor().sizes(), (Shape{16, 64, 32, 32}));
    QCOMPARE((*r)[1].to_tensor().dtype(), DType::Int8);
    // The CPU entry point takes meta tensors too (shape propagation through graphs).
    auto m = call_op(kToIndices, {Tensor::meta({16, 64, 32, 32}, DType::Int8), ints({3, 3}), ints({64, 64}),
                                  ints({2, 2}), ints({1, 1}), ints({1, 1})});
    QVERIFY2(m.ok(), m.ok() ? "" : m.status().message().c_str());
    QVERIFY((*m)[0].to_tensor().is_meta());
    QCOMPARE((*m)[0].to_tensor().sizes(), (Shape{16, 64, 32, 32}));
    QCOMPARE((*m)[0].to_tensor().dtype(), DType::Int64);
  }

  void badArguments() {
    Tensor x = random_tensor({1, 1, 4, 4}, 5);
    KILN_EXPECT_ERROR(error_of(kWithOffsets, {x, ints({3}), ints({2}), ints({1}), ints({1}), false}),
                      "kernel_size must have 2 or 3 entries");
    KILN_EXPECT_ERROR(error_of(kWithOffsets, {x, ints({3, 3}), ints({2}), ints({1, 1}), ints({1, 1}), false}),
                      "stride must have 2 entries like kernel_size [3, 3], got [2]");
    KILN_EXPECT_ERROR(error_of(kWithOffsets, {x, ints({3, 3}), ints({0, 2}), ints({1, 1}), ints({1, 1}), false}),
                      "stride must be greater than zero");
    KILN_EXPECT_ERROR(error_of(kWithOffsets, {random_tensor({1, 1, 16, 16}, 6), ints({12, 12}), ints({1, 1}),
                                              ints({0, 0}), ints({1, 1}), false}),
                      "do not fit int8");
    // max_pool2d's own checks still apply (padding at most half the kernel).
    KILN_EXPECT_ERROR(error_of(kWithOffsets, {x, ints({2, 2}), ints({2, 2}), ints({2, 2}), ints({1, 1}), false}),
                      "pad");
    Tensor off = Tensor::zeros({1, 1, 2, 2}, DType::Int8);
    KILN_EXPECT_ERROR(error_of(kToIndices, {off, ints({3, 3}), ints({4}), ints({2, 2}), ints({1, 1}), ints({1, 1})}),
                      "input_size must have 2 entries");
    KILN_EXPECT_ERROR(error_of(kToIndices, {Tensor::zeros({1, 1, 2, 2}, DType::Float32), ints({3, 3}), ints({4, 4}),
                                            ints({2, 2}), ints({1, 1}), ints({1, 1})}),
                      "expected integer offsets");
    KILN_EXPECT_ERROR(error_of(kToIndices, {Tensor::zeros({2}, DType::Int8), ints({3, 3}), ints({4, 4}), ints({2, 2}),
                                            ints({1, 1}), ints({1, 1})}),
                      "fewer dims");
  }

  // PyTorch's graphs pass bias_sizes=[0] for a convolution without bias, with
  // output_mask[2] false: the bias size plays no part then.
  void convolutionBackwardWithoutBias() {
    // 1x1 kernel of weight 2 over a 2x2 input, grad_output all ones:
    // grad_input = 2 everywhere, grad_weight = sum(input) = 1+2+3+4.
    Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {1, 1, 2, 2});
    Tensor w = Tensor::full({1, 1, 1, 1}, Scalar(2.0), DType::Float32);
    Tensor go = Tensor::full({1, 1, 2, 2}, Scalar(1.0), DType::Float32);
    ValueList r = conv_backward(go, x, w, ints({0}), {true, true, false});
    QCOMPARE(r.size(), size_t(3));
    KILN_COMPARE_VALUES(r[0].to_tensor(), {2, 2, 2, 2});
    KILN_COMPARE_VALUES(r[1].to_tensor(), {10});
    QVERIFY(r[2].is_none());

    // The same gradients as without bias_sizes, on a larger case.
    Tensor x2 = random_tensor({2, 3, 6, 6}, 11), w2 = random_tensor({4, 3, 3, 3}, 12), g2 = random_tensor({2, 4, 4, 4}, 13);
    ValueList a = conv_backward(g2, x2, w2, ints({0}), {true, true, false});
    ValueList b = conv_backward(g2, x2, w2, Value(), {true, true, false});
    QCOMPARE(values(a[0].to_tensor()), values(b[0].to_tensor()));
    QCOMPARE(values(a[1].to_tensor()), values(b[1].to_tensor()));

    auto m = call_meta("aten::convolution_backward",
                       {Tensor::meta({2, 4, 4, 4}, DType::Float32), Tensor::meta({2, 3, 6, 6}, DType::Float32),
                        Tensor::meta({4, 3, 3, 3}, DType::Float32), ints({0}), ints({1, 1}), ints({0, 0}), ints({1, 1}),
                        false, ints({0, 0}), int64_t(1), ValueList{Value(true), Value(true), Value(false)}});
    QVERIFY2(m.ok(), m.ok() ? "" : m.status().message().c_str());
    QVERIFY((*m)[2].is_none());

    // Asking for the bias gradient with a size that does not match is still an error.
    KILN_EXPECT_ERROR(error_of("aten::convolution_backward",
                               {go, x, w, ints({0}), ints({1, 1}), ints({0, 0}), ints({1, 1}), false, ints({0, 0}),
                                int64_t(1), ValueList{Value(true), Value(true), Value(true)}}),
                      "bias_sizes [0] do not match the 1 output channels");
  }
};

QTEST_APPLESS_MAIN(TestInductorPrims)
#include "test_inductor_prims.moc"
