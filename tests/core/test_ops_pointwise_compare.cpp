#include "test_ops_pointwise_support.h"

using namespace kiln;
using kiln::test::call1;
using kiln::test::values;
using namespace kiln::test::pointwise;

class TestOpsPointwiseCompare : public QObject {
  Q_OBJECT
 private slots:
  void extrema() {
    Tensor a = f32({1, kNanF, 3, -2}), b = f32({2, 1, kNanF, -5});
    KILN_EXPECT_VALUES(call1("aten::maximum", {a, b}), {2, kNan, kNan, -2});
    KILN_EXPECT_VALUES(call1("aten::minimum", {a, b}), {1, kNan, kNan, -5});
    KILN_EXPECT_VALUES(call1("aten::fmax", {a, b}), {2, 1, 3, -2});
    KILN_EXPECT_VALUES(call1("aten::fmin", {a, b}), {1, 1, 3, -5});
    Tensor m = call1("aten::maximum", {i64({1, 5}), f32({2.5f, 2.5f})});
    QCOMPARE(m.dtype(), DType::Float32);
    KILN_EXPECT_VALUES(m, {2.5, 5});
    KILN_EXPECT_VALUES(call1("aten::maximum", {boolean({false, true}), boolean({false, false})}), {0, 1});
  }

  void comparisons() {
    Tensor i = i64({1, 2, 3});
    Tensor lt = call1("aten::lt.Scalar", {i, 2.5});
    QCOMPARE(lt.dtype(), DType::Bool);
    KILN_EXPECT_VALUES(lt, {1, 1, 0});
    KILN_EXPECT_VALUES(call1("aten::ge.Scalar", {i, 2}), {0, 1, 1});
    KILN_EXPECT_VALUES(call1("aten::gt.Tensor", {i, f32({0.5f, 2.0f, 3.5f})}), {1, 0, 0});
    Tensor column = Tensor::from_vector<float>({1, 2}, {2, 1});
    KILN_EXPECT_VALUES(call1("aten::le.Tensor", {column, f32({1, 2})}), {1, 1, 0, 1});
    KILN_EXPECT_VALUES(call1("aten::ne.Tensor", {f32({kNanF, 1}), f32({kNanF, 1})}), {1, 0});
    KILN_EXPECT_VALUES(call1("aten::eq.Tensor", {f32({kNanF, 1}), f32({kNanF, 1})}), {0, 1});
    // Compared in the promoted dtype: 2^24 + 1 and 2^24 are one float32.
    KILN_EXPECT_VALUES(call1("aten::eq.Scalar", {i64({16777217}), 16777216.0}), {1});
  }

  void logical_and_bitwise() {
    Tensor a = f32({0, 0.5f, kNanF, 2}), b = i64({1, 1, 0, 0});
    KILN_EXPECT_VALUES(call1("aten::logical_and", {a, b}), {0, 1, 0, 0});
    KILN_EXPECT_VALUES(call1("aten::logical_or", {a, b}), {1, 1, 1, 1});
    Tensor x = call1("aten::logical_xor", {a, b});
    QCOMPARE(x.dtype(), DType::Bool);
    KILN_EXPECT_VALUES(x, {1, 0, 1, 1});
    Tensor p = i64({12, -1}), q = i64({10, 6});
    KILN_EXPECT_VALUES(call1("aten::bitwise_and.Tensor", {p, q}), {8, 6});
    KILN_EXPECT_VALUES(call1("aten::bitwise_or.Tensor", {p, q}), {14, -1});
    KILN_EXPECT_VALUES(call1("aten::bitwise_xor.Tensor", {p, q}), {6, -7});
    KILN_EXPECT_VALUES(call1("aten::bitwise_and.Scalar", {p, 3}), {0, 3});
    Tensor bb = call1("aten::bitwise_xor.Tensor", {boolean({true, true}), boolean({true, false})});
    QCOMPARE(bb.dtype(), DType::Bool);
    KILN_EXPECT_VALUES(bb, {0, 1});
    QCOMPARE(QString::fromStdString(error_of("aten::bitwise_and.Tensor", {f32({1}), f32({1})})),
             QString("aten::bitwise_and.Tensor: \"bitwise_and_cpu\" not implemented for 'Float'"));
  }

  void strided_broadcast_and_meta() {
    Tensor x = kiln::test::arange_f32({3, 4});
    Tensor gt = call1("aten::gt.Tensor", {x.t(), f32({1, 5, 9})});  // [4, 3] transposed against [3]
    QCOMPARE(gt.sizes(), (Shape{4, 3}));
    KILN_EXPECT_VALUES(gt.select(0, 1), {0, 0, 0});
    KILN_EXPECT_VALUES(gt.select(0, 2), {1, 1, 1});
    auto r = call_meta("aten::maximum", {Tensor::meta({2, 1}, DType::Int32), Tensor::meta({3}, DType::Float16)});
    QVERIFY(r.ok());
    QCOMPARE(r->at(0).to_tensor().sizes(), (Shape{2, 3}));
    QCOMPARE(r->at(0).to_tensor().dtype(), DType::Float16);
    QVERIFY(contains(error_of("aten::eq.Tensor", {f32({1, 2}), f32({1, 2, 3})}), "[3]"));
  }
};

QTEST_GUILESS_MAIN(TestOpsPointwiseCompare)
#include "test_ops_pointwise_compare.moc"
