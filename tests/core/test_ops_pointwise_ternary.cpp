#include "test_ops_pointwise_support.h"

#include <cmath>

using namespace kiln;
using kiln::test::call1;
using kiln::test::values;
using namespace kiln::test::pointwise;

class TestOpsPointwiseTernary : public QObject {
  Q_OBJECT
 private slots:
  void where_broadcasts_and_promotes() {
    Tensor cond = Tensor::from_vector<bool>({true, false}, {2, 1});
    Tensor out = call1("aten::where.self", {cond, i64({1, 2, 3}), Tensor::scalar_tensor(0.5, DType::Float32)});
    QCOMPARE(out.sizes(), (Shape{2, 3}));
    QCOMPARE(out.dtype(), DType::Float32);  // a float zero-dim tensor lifts the integer category
    KILN_EXPECT_VALUES(out, {1, 2, 3, 0.5, 0.5, 0.5});
    Tensor c3 = vec<bool>({true, false, true});
    Tensor s = call1("aten::where.ScalarSelf", {c3, 1.5, i64({7, 8, 9})});
    QCOMPARE(s.dtype(), DType::Float32);
    KILN_EXPECT_VALUES(s, {1.5, 8, 1.5});
    Tensor o = call1("aten::where.ScalarOther", {c3, i64({7, 8, 9}), -1});
    QCOMPARE(o.dtype(), DType::Int64);
    KILN_EXPECT_VALUES(o, {7, -1, 9});
    Tensor both = call1("aten::where.Scalar", {c3, 1, 0});
    QCOMPARE(both.dtype(), DType::Int64);
    KILN_EXPECT_VALUES(both, {1, 0, 1});
    QCOMPARE(call1("aten::where.Scalar", {c3, 1.0, 0}).dtype(), DType::Float32);
    QVERIFY(contains(error_of("aten::where.self", {f32({1}), f32({1}), f32({2})}),
                     "where expected condition to be a boolean tensor, but got a tensor with dtype Float"));
    Tensor strided = call1("aten::where.self", {c3.expand({2, 3}).t(), f32({1, 2}), f32({9, 9})});
    KILN_EXPECT_VALUES(strided, {1, 2, 9, 9, 1, 2});
  }

  void masked_fill() {
    Tensor x = kiln::test::arange_f32({2, 3});
    Tensor mask = vec<bool>({true, false, true});
    Tensor out = call1("aten::masked_fill.Scalar", {x, mask, -1.0});
    KILN_EXPECT_VALUES(out, {-1, 1, -1, -1, 4, -1});
    KILN_EXPECT_VALUES(x, {0, 1, 2, 3, 4, 5});  // out of place
    Tensor column_mask = Tensor::from_vector<bool>({true, false}, {2, 1});
    Tensor grown = call1("aten::masked_fill.Scalar", {f32({1, 2, 3}), column_mask, 0});
    QCOMPARE(grown.sizes(), (Shape{2, 3}));
    KILN_EXPECT_VALUES(grown, {0, 0, 0, 1, 2, 3});
    Tensor ints = call1("aten::masked_fill.Scalar", {i64({5, 6, 7}), mask, 2.7});
    QCOMPARE(ints.dtype(), DType::Int64);
    KILN_EXPECT_VALUES(ints, {2, 6, 2});
    KILN_EXPECT_VALUES(call1("aten::masked_fill.Tensor", {x, mask, Tensor::scalar_tensor(9, DType::Int64)}),
                        {9, 1, 9, 9, 4, 9});
    QVERIFY(contains(error_of("aten::masked_fill.Scalar", {vec<int8_t>({1, 2, 3}), mask, 300}),
                     "int8_t without overflow"));
    QVERIFY(contains(error_of("aten::masked_fill.Tensor", {x, mask, f32({1})}),
                     "only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s)."));
    QVERIFY(contains(error_of("aten::masked_fill.Scalar", {x, f32({1, 0, 1}), 0}),
                     "masked_fill_ only supports boolean masks, but got mask with dtype Float"));
  }

  void lerp() {
    Tensor a = f32({0, 10}), b = f32({10, 20});
    KILN_EXPECT_VALUES(call1("aten::lerp.Scalar", {a, b, 0.25}), {2.5, 12.5});
    KILN_EXPECT_VALUES(call1("aten::lerp.Scalar", {a, b, 0.75}), {7.5, 17.5});
    KILN_EXPECT_VALUES(call1("aten::lerp.Tensor", {a, b, f32({0, 1})}), {0, 20});
    // Large weights count back from end, so weight 1 reproduces end exactly.
    Tensor big = f32({1e8f}), small = f32({1.0f});
    QCOMPARE(call1("aten::lerp.Scalar", {big, small, 1.0}).item().to_double(), 1.0);
    Tensor ends = Tensor::from_vector<float>({4, 8}, {2, 1});
    Tensor bcast = call1("aten::lerp.Tensor", {f32({0}), ends, f32({0.5f, 1.0f})});
    QCOMPARE(bcast.sizes(), (Shape{2, 2}));
    KILN_EXPECT_VALUES(bcast, {2, 4, 4, 8});
    QVERIFY(contains(error_of("aten::lerp.Scalar", {a, b.to(DType::Float64), 0.5}), "for `end` but got dtype"));
    QVERIFY(contains(error_of("aten::lerp.Scalar", {i64({1}), i64({2}), 0.5}), "not implemented for 'Long'"));
    Tensor h = call1("aten::lerp.Scalar", {a.to(DType::Float16), b.to(DType::Float16), 0.3});
    QCOMPARE(h.dtype(), DType::Float16);
    KILN_EXPECT_VALUES(h, {3, 13});
  }

  void addcmul_addcdiv() {
    Tensor s = f32({1, 2}), t1 = f32({3, 4}), t2 = f32({5, 8});
    KILN_EXPECT_VALUES(call1("aten::addcmul", {s, t1, t2}), {16, 34});
    KILN_EXPECT_VALUES(call1("aten::addcmul", {s, t1, t2}, {{"value", 2}}), {31, 66});
    KILN_EXPECT_VALUES(call1("aten::addcdiv", {s, t1, t2}, {{"value", 0.5}}), {1.3, 2.25});
    Tensor im = call1("aten::addcmul", {i64({1}), i64({2}), i64({3})}, {{"value", 4}});
    QCOMPARE(im.dtype(), DType::Int64);
    KILN_EXPECT_VALUES(im, {25});
    Tensor promoted = call1("aten::addcdiv", {i64({1}), f32({3}), i64({2})});
    QCOMPARE(promoted.dtype(), DType::Float32);
    KILN_EXPECT_VALUES(promoted, {2.5});
    QVERIFY(contains(error_of("aten::addcdiv", {s, i64({1, 2}), i64({1, 2})}),
                     "Integer division with addcdiv is no longer supported"));
    Tensor bc = call1("aten::addcmul", {f32({0}), Tensor::from_vector<float>({1, 2}, {2, 1}), f32({10, 20, 30})});
    QCOMPARE(bc.sizes(), (Shape{2, 3}));
    KILN_EXPECT_VALUES(bc, {10, 20, 30, 20, 40, 60});
  }

  // prims::fma rounds a * b + c once. Each case below is one where rounding
  // the product first gives 0 instead: (1 + e)^2 - (1 + 2e) = e^2 exactly,
  // with e^2 below half an ulp of 1 + 2e.
  void fma_rounds_once() {
    const float e32 = std::ldexp(1.0f, -12);
    Tensor a = f32({1 + e32, 2}), c = f32({-(1 + 2 * e32), 1});
    Tensor r = call1("prims::fma", {a, a, c});
    QCOMPARE(r.dtype(), DType::Float32);
    QCOMPARE(values(r), (std::vector<double>{std::ldexp(1.0, -24), 5}));
    const double e64 = std::ldexp(1.0, -27);
    Tensor d = f64({1 + e64}), dc = f64({-(1 + 2 * e64)});
    QCOMPARE(values(call1("prims::fma", {d, d, dc})), (std::vector<double>{std::ldexp(1.0, -54)}));
    // float16 computes in float32 and rounds at the store: 2^-12 is a float16.
    const double e16 = std::ldexp(1.0, -6);
    Tensor h = f32({float(1 + e16)}).to(DType::Float16), hc = f32({float(-(1 + 2 * e16))}).to(DType::Float16);
    Tensor rh = call1("prims::fma", {h, h, hc});
    QCOMPARE(rh.dtype(), DType::Float16);
    QCOMPARE(values(rh), (std::vector<double>{std::ldexp(1.0, -12)}));
  }

  void fma_broadcasts_integers_and_promotes_like_its_fallback() {
    Tensor col = Tensor::from_vector<int64_t>({1, 2}, {2, 1});
    Tensor r = call1("prims::fma", {col, i64({3, 4, 5}), i64({10})});
    QCOMPARE(r.sizes(), (Shape{2, 3}));
    QCOMPARE(r.dtype(), DType::Int64);
    QCOMPARE(values(r), (std::vector<double>{13, 14, 15, 16, 18, 20}));
    QCOMPARE(values(call1("prims::fma", {boolean({true, true, false}), boolean({true, false, false}),
                                         boolean({false, false, true})})),
             (std::vector<double>{1, 0, 1}));
    // (a * b) + c promotes in two steps: int64[3] * float64[] is float64 (the zero-dim operand
    // brings the float category), then + float32[3] stays float64, where promoting all three
    // together would give float32.
    Tensor p = call1("prims::fma", {i64({1, 2, 3}), Tensor::scalar_tensor(Scalar(0.5), DType::Float64), f32({1, 1, 1})});
    QCOMPARE(p.dtype(), DType::Float64);
    QCOMPARE(values(p), (std::vector<double>{1.5, 2, 2.5}));
  }

  void meta() {
    auto r = call_meta("aten::where.self", {Tensor::meta({4, 1}, DType::Bool), Tensor::meta({3}, DType::Float16),
                                            Tensor::meta({1}, DType::Float32)});
    QVERIFY(r.ok());
    QCOMPARE(r->at(0).to_tensor().sizes(), (Shape{4, 3}));
    QCOMPARE(r->at(0).to_tensor().dtype(), DType::Float32);
    auto m = call_op("aten::masked_fill.Scalar",
                     {Tensor::meta({2}, DType::Int32), Tensor::meta({3, 2}, DType::Bool), 1});
    QVERIFY(m.ok());
    QVERIFY(m->at(0).to_tensor().is_meta());
    QCOMPARE(m->at(0).to_tensor().sizes(), (Shape{3, 2}));
  }
};

QTEST_GUILESS_MAIN(TestOpsPointwiseTernary)
#include "test_ops_pointwise_ternary.moc"
