// constant_pad_nd (growing, cropping, any dtype), reflection / replication
// padding with their backwards, and the pad composite.
#include "nn_test_util.h"

#include "core/corpus/conformance.h"

using namespace kiln;
using kiln::test::call1;
using kiln::test::dot_all;
using kiln::test::error_of;
using kiln::test::ints;
using kiln::test::random_tensor;
using kiln::test::values;

class TestOpsPadding : public QObject {
  Q_OBJECT
 private slots:
  void constant_pad_grow_and_crop() {
    Tensor x = kiln::test::arange_f32({2, 3}, 1.f);  // [[1,2,3],[4,5,6]]
    Tensor y = call1("aten::constant_pad_nd", {x, ints({1, 0, 0, 1}), 9.0});
    QCOMPARE(y.sizes(), (Shape{3, 4}));
    KILN_COMPARE_VALUES(y, {9, 1, 2, 3, 9, 4, 5, 6, 9, 9, 9, 9});
    Tensor c = call1("aten::constant_pad_nd", {x, ints({-1, 1})});  // crop left, pad right
    KILN_COMPARE_VALUES(c, {2, 3, 0, 5, 6, 0});
    QCOMPARE(call1("aten::constant_pad_nd", {x, ints({-3, 0})}).sizes(), (Shape{2, 0}));
    Tensor b = call1("aten::constant_pad_nd", {Tensor::full({1}, Scalar(false), DType::Bool), ints({1, 1}), 1.0});
    QCOMPARE(b.dtype(), DType::Bool);
    KILN_COMPARE_VALUES(b, {1, 0, 1});
    Tensor i = call1("aten::constant_pad_nd", {Tensor::from_vector<int64_t>({5}, {1}), ints({0, 2}), int64_t(-3)});
    KILN_COMPARE_VALUES(i, {5, -3, -3});
    Tensor nc = call1("aten::constant_pad_nd", {x.t(), ints({1, 1})});  // non-contiguous input
    KILN_COMPARE_VALUES(nc, {0, 1, 4, 0, 0, 2, 5, 0, 0, 3, 6, 0});
    KILN_EXPECT_ERROR(error_of("aten::constant_pad_nd", {x, ints({1, 1, 1})}), "Length of pad must be even but instead it equals 3");
    KILN_EXPECT_ERROR(error_of("aten::constant_pad_nd", {x, ints({1, 1, 1, 1, 1, 1})}),
                      "Pad length is 6 while the input has 2 dimensions");
    KILN_EXPECT_ERROR(error_of("aten::constant_pad_nd", {x, ints({-2, -2})}),
                      "The input size 3, plus negative padding -2 and -2 resulted in a negative output size");
  }

  void reflection_and_replication() {
    Tensor x = Tensor::from_vector<float>({1, 2, 3}, {1, 3});
    KILN_COMPARE_VALUES(call1("aten::reflection_pad1d", {x, ints({2, 1})}), {3, 2, 1, 2, 3, 2});
    KILN_COMPARE_VALUES(call1("aten::replication_pad1d", {x, ints({2, 1})}), {1, 1, 1, 2, 3, 3});
    Tensor q = kiln::test::arange_f32({1, 1, 2, 2}, 1.f);  // [[1,2],[3,4]]
    Tensor r = call1("aten::reflection_pad2d", {q, ints({1, 0, 1, 0})});
    QCOMPARE(r.sizes(), (Shape{1, 1, 3, 3}));
    KILN_COMPARE_VALUES(r, {4, 3, 4, 2, 1, 2, 4, 3, 4});
    Tensor p = call1("aten::replication_pad2d", {q, ints({0, 1, 1, 0})});
    KILN_COMPARE_VALUES(p, {1, 2, 2, 1, 2, 2, 3, 4, 4});
    QCOMPARE(call1("aten::replication_pad3d", {random_tensor({2, 2, 2, 2}, 1), ints({1, 1, 1, 1, 1, 1})}).sizes(),
             (Shape{2, 4, 4, 4}));
    KILN_COMPARE_VALUES(call1("aten::reflection_pad1d", {Tensor::from_vector<int64_t>({1, 2, 3}, {1, 3}), ints({1, 1})}),
                        {2, 1, 2, 3, 2});
    KILN_EXPECT_ERROR(error_of("aten::reflection_pad1d", {x, ints({3, 0})}),
                      "Padding size should be less than the corresponding input dimension, but got: padding (3, 0)");
    KILN_EXPECT_ERROR(error_of("aten::reflection_pad2d", {x, ints({1, 1, 1, 1})}), "3D or 4D");
  }

  void pad_composite() {
    Tensor x = Tensor::from_vector<float>({1, 2, 3}, {1, 1, 3});
    KILN_COMPARE_VALUES(call1("aten::pad", {x, ints({1, 1}), Value("reflect")}), {2, 1, 2, 3, 2});
    KILN_COMPARE_VALUES(call1("aten::pad", {x, ints({2, 1}), Value("circular")}), {2, 3, 1, 2, 3, 1});
    KILN_COMPARE_VALUES(call1("aten::pad", {x, ints({1, 0}), Value("constant"), 7.0}), {7, 1, 2, 3});
    KILN_COMPARE_VALUES(call1("aten::pad", {x, ints({0, 1})}), {1, 2, 3, 0});
    KILN_EXPECT_ERROR(error_of("aten::pad", {x, ints({1, 1}), Value("reflect"), 1.0}), "doesn't take in value argument");
  }

  // Reflection/replication padding is linear: <pad(x), g> = <x, pad_backward(g)>.
  void backward_adjoints() {
    Tensor x = random_tensor({2, 3, 5, 4}, 2);
    for (const char* mode : {"reflection", "replication"}) {
      std::string op = std::string("aten::") + mode + "_pad2d";
      Tensor y = call1(op, {x, ints({2, 1, 3, 0})});
      Tensor g = random_tensor(y.sizes(), 3);
      Tensor gi = call1(op + "_backward", {g, x, ints({2, 1, 3, 0})});
      QCOMPARE(gi.sizes(), x.sizes());
      QVERIFY2(std::abs(dot_all(y, g) - dot_all(x, gi)) < 1e-4, mode);
    }
  }

  void constant_pad_matches_corpus() {
    auto corpus = load_corpus(kiln::test::reference_dir() + "/opcorpus");
    QVERIFY(corpus.ok());
    int checked = 0;
    for (const CorpusCase& k : corpus->cases) {
      if (k.op != "aten::constant_pad_nd.default") continue;
      Tensor y = call1("aten::constant_pad_nd", k.args);
      QVERIFY(compare_tensors(y, k.outputs[0]).ok);
      ++checked;
    }
    QVERIFY(checked >= 1);
  }
};

QTEST_GUILESS_MAIN(TestOpsPadding)
#include "test_ops_padding.moc"
