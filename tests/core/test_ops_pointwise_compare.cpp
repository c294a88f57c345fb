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

  // ATen's lshift/rshift kernels: counts past the bit width or below zero are
  // defined (0 for a left shift, the sign for a right shift), and a left shift
  // wraps like unsigned arithmetic.
  void shifts_int64() {
    Tensor a = i64({1, -3, 5, 7, 1, 1}), n = i64({3, 2, 0, 63, 64, -1});
    Tensor l = call1("aten::__lshift__.Tensor", {a, n});
    QCOMPARE(l.dtype(), DType::Int64);
    const int64_t* lp = l.data<int64_t>();
    QCOMPARE(std::vector<int64_t>(lp, lp + 6),
             (std::vector<int64_t>{8, -12, 5, std::numeric_limits<int64_t>::min(), 0, 0}));
    Tensor b = i64({-8, 8, -1, 100, -100, 5}), m = i64({1, 2, 63, 64, -1, 0});
    Tensor rr = call1("aten::bitwise_right_shift.Tensor", {b, m});
    const int64_t* rp = rr.data<int64_t>();
    QCOMPARE(std::vector<int64_t>(rp, rp + 6), (std::vector<int64_t>{-4, 2, -1, 0, -1, 5}));
    // The two spellings are one op.
    QCOMPARE(values(call1("aten::bitwise_left_shift.Tensor", {a, n})), values(l));
    QCOMPARE(values(call1("aten::__rshift__.Tensor", {b, m})), values(rr));
  }

  void shifts_narrow_types_and_promotion() {
    // int8: 64 << 1 wraps to -128; counts 7 and 8 against a width of 8.
    Tensor c = i64({1, 64, -1, 1, 1}).to(DType::Int8);
    Tensor cl = call1("aten::__lshift__.Tensor", {c, i64({3, 1, 1, 7, 8}).to(DType::Int8)});
    QCOMPARE(cl.dtype(), DType::Int8);
    QCOMPARE(values(cl), (std::vector<double>{8, -128, -2, -128, 0}));
    // Signed right shifts saturate at width - 1 (sign fill), unsigned at the width (0).
    Tensor cr = call1("aten::__rshift__.Scalar", {i64({-100, 100}).to(DType::Int8), 9});
    QCOMPARE(values(cr), (std::vector<double>{-1, 0}));
    Tensor u = i64({255, 128, 255}).to(DType::UInt8);
    QCOMPARE(values(call1("aten::__rshift__.Tensor", {u, i64({7, 8, 200}).to(DType::UInt8)})),
             (std::vector<double>{1, 0, 0}));
    Tensor i32 = i64({-5, 5, 3}).to(DType::Int32);
    Tensor r32 = call1("aten::bitwise_right_shift.Tensor_Scalar", {i32, 31});
    QCOMPARE(r32.dtype(), DType::Int32);
    QCOMPARE(values(r32), (std::vector<double>{-1, 0, 0}));
    QCOMPARE(values(call1("aten::__lshift__.Scalar", {i32, 40})), (std::vector<double>{0, 0, 0}));
    // A Python int is a wrapped scalar: cast to the tensor's dtype (uint8: 257 -> 1, 300 -> 44).
    Tensor u3 = i64({3}).to(DType::UInt8);
    Tensor us = call1("aten::__lshift__.Scalar", {u3, 257});
    QCOMPARE(us.dtype(), DType::UInt8);
    QCOMPARE(values(us), (std::vector<double>{6}));
    QCOMPARE(values(call1("aten::__lshift__.Scalar", {u3, 300})), (std::vector<double>{0}));
    // Tensors promote: int32 << int64 is int64; a number first is a wrapped scalar too.
    QCOMPARE(call1("aten::__lshift__.Tensor", {i32, i64({1, 1, 1})}).dtype(), DType::Int64);
    Tensor st = call1("aten::bitwise_left_shift.Scalar_Tensor", {3, i64({0, 1, 2}).to(DType::Int32)});
    QCOMPARE(st.dtype(), DType::Int32);
    QCOMPARE(values(st), (std::vector<double>{3, 6, 12}));
    QCOMPARE(values(call1("aten::bitwise_right_shift.Scalar_Tensor", {-64, i64({1, 70})})),
             (std::vector<double>{-32, -1}));
  }

  void shift_errors() {
    // Floats and bool have no shift kernel; a float number promotes an int tensor to float.
    QCOMPARE(QString::fromStdString(error_of("aten::__lshift__.Scalar", {i64({1}), 1.5})),
             QString("aten::__lshift__.Scalar: \"lshift_cpu\" not implemented for 'Float'"));
    QCOMPARE(QString::fromStdString(error_of("aten::bitwise_right_shift.Tensor", {boolean({true}), boolean({true})})),
             QString("aten::bitwise_right_shift.Tensor: \"rshift_cpu\" not implemented for 'Bool'"));
    QVERIFY(contains(error_of("aten::__rshift__.Tensor", {f32({1}), i64({1})}), "'Float'"));
    auto r = call_meta("aten::__lshift__.Tensor", {Tensor::meta({2, 1}, DType::Int16), Tensor::meta({3}, DType::Int8)});
    QVERIFY(r.ok());
    QCOMPARE(r->at(0).to_tensor().sizes(), (Shape{2, 3}));
    QCOMPARE(r->at(0).to_tensor().dtype(), DType::Int16);
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
