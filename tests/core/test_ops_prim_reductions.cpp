// prims::xor_sum and prims::prepare_softmax_online, with values worked out by
// hand from their definitions (torch/_prims: xor_sum's meta function and
// Inductor's xor reduction from 0; torch/_inductor/inductor_prims.py:
// eager_prepare_softmax).
#include "test_ops_pointwise_support.h"

#include <cmath>

using namespace kiln;
using kiln::test::call;
using kiln::test::call1;
using kiln::test::ints;
using kiln::test::values;
using namespace kiln::test::pointwise;

namespace {
Tensor xor_sum(const Tensor& x, std::vector<int64_t> dims) {
  return call1("prims::xor_sum", {x, ints(dims)});
}
}  // namespace

class TestOpsPrimReductions : public QObject {
  Q_OBJECT
 private slots:
  void xor_sum_by_hand() {
    Tensor x = Tensor::from_vector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3});
    Tensor cols = xor_sum(x, {0});
    QCOMPARE(cols.dtype(), DType::Int32);
    QCOMPARE(cols.sizes(), (Shape{3}));
    QCOMPARE(values(cols), (std::vector<double>{5, 7, 5}));  // 1^4, 2^5, 3^6
    QCOMPARE(values(xor_sum(x, {1})), (std::vector<double>{0, 7}));  // 1^2^3, 4^5^6
    Tensor all = xor_sum(x, {0, 1});
    QCOMPARE(all.sizes(), Shape{});
    QCOMPARE(values(all), (std::vector<double>{7}));
    // No dims: nothing reduced. A repeated dim is reduced once.
    QCOMPARE(values(xor_sum(x, {})), values(x));
    QCOMPARE(values(xor_sum(x, {1, 1})), (std::vector<double>{0, 7}));
    // Transposed input: the same xors, whatever the strides.
    QCOMPARE(values(xor_sum(x.t(), {1})), (std::vector<double>{5, 7, 5}));
    // Negative values keep their bits: -1 ^ 5 = -6.
    QCOMPARE(values(xor_sum(Tensor::from_vector<int64_t>({-1, 5}, {2}), {0})), (std::vector<double>{-6}));
  }

  void xor_sum_edges() {
    // 0..999 xored: every block of four from a multiple of 4 cancels, so 0 (long enough to take
    // the engine's many-lane path); 0..1000 then gives 1000.
    std::vector<int64_t> v(1001);
    for (size_t i = 0; i < v.size(); ++i) v[i] = int64_t(i);
    Tensor r = Tensor::from_vector(v, {1001});
    QCOMPARE(values(xor_sum(r.slice(0, 0, 1000), {0})), (std::vector<double>{0}));
    QCOMPARE(values(xor_sum(r, {0})), (std::vector<double>{1000}));
    // An empty reduction is 0; a zero-dim tensor reduces over "dim 0" to itself.
    Tensor e = xor_sum(Tensor::zeros({0, 3}, DType::Int64), {0});
    QCOMPARE(e.sizes(), (Shape{3}));
    QCOMPARE(values(e), (std::vector<double>{0, 0, 0}));
    QCOMPARE(values(xor_sum(Tensor::scalar_tensor(Scalar(int64_t(9)), DType::Int64), {0})),
             (std::vector<double>{9}));
    // bool: parity; uint8 keeps its dtype.
    Tensor b = xor_sum(boolean({true, true, true, false}), {0});
    QCOMPARE(b.dtype(), DType::Bool);
    QCOMPARE(values(b), (std::vector<double>{1}));
    Tensor u = xor_sum(Tensor::from_vector<int64_t>({0xF0, 0x3C}, {2}).to(DType::UInt8), {0});
    QCOMPARE(u.dtype(), DType::UInt8);
    QCOMPARE(values(u), (std::vector<double>{0xCC}));
  }

  void xor_sum_refusals() {
    Tensor x = Tensor::from_vector<int32_t>({1, 2}, {2});
    QVERIFY(contains(error_of("prims::xor_sum", {f32({1, 2}), ints({0})}), "expected an integer or bool tensor"));
    QVERIFY(contains(error_of("prims::xor_sum", {x, ints({-1})}), "dim -1 is out of range"));
    QVERIFY(contains(error_of("prims::xor_sum", {x, ints({1})}), "dim 1 is out of range"));
    QVERIFY(contains(error_of("prims::xor_sum", {x, Value()}), "dims must be a list"));
    QVERIFY(contains(error_of("prims::xor_sum", {x, ints({0})}, {{"output_dtype", Value(DType::Int64)}}),
                     "output_dtype"));
    QVERIFY(error_of("prims::xor_sum", {x, ints({0})}, {{"output_dtype", Value(DType::Int32)}}).empty());
    auto m = call_meta("prims::xor_sum", {Tensor::meta({4, 5, 6}, DType::Int16), ints({0, 2})});
    QVERIFY(m.ok());
    QCOMPARE(m->at(0).to_tensor().sizes(), (Shape{5}));
    QCOMPARE(m->at(0).to_tensor().dtype(), DType::Int16);
  }

  void prepare_softmax_online_by_hand() {
    Tensor x = Tensor::from_vector<float>({1, 2, 3, 0, 0, 0}, {2, 3});
    ValueList r = call("prims::prepare_softmax_online", {x, int64_t(1)});
    QCOMPARE(r.size(), size_t(2));
    Tensor max = r[0].to_tensor(), sum = r[1].to_tensor();
    QCOMPARE(max.sizes(), (Shape{2, 1}));
    QCOMPARE(sum.sizes(), (Shape{2, 1}));
    QCOMPARE(sum.dtype(), DType::Float32);
    KILN_EXPECT_VALUES(max, {3, 0});
    KILN_EXPECT_VALUES(sum, {std::exp(-2.0) + std::exp(-1.0) + 1, 3});
    // dim -2 (= 0): column maxima 1, 2, 3 and sums 1 + e^-1, 1 + e^-2, 1 + e^-3.
    ValueList c = call("prims::prepare_softmax_online", {x, int64_t(-2)});
    QCOMPARE(c[0].to_tensor().sizes(), (Shape{1, 3}));
    KILN_EXPECT_VALUES(c[1].to_tensor(), {1 + std::exp(-1.0), 1 + std::exp(-2.0), 1 + std::exp(-3.0)});
  }

  void prepare_softmax_online_edges() {
    // An all -inf row: the max is -inf and -inf - -inf is NaN, as in the eager definition.
    ValueList r = call("prims::prepare_softmax_online", {f32({-kInfF, -kInfF}), int64_t(0)});
    KILN_EXPECT_VALUES(r[0].to_tensor(), {-kInf});
    KILN_EXPECT_VALUES(r[1].to_tensor(), {kNan});
    // +inf: the max, exp(inf - inf) is NaN.
    KILN_EXPECT_VALUES(call("prims::prepare_softmax_online", {f32({kInfF, 0}), int64_t(0)})[1].to_tensor(), {kNan});
    // Integers: the max stays int64, exp makes the sum float32.
    ValueList i = call("prims::prepare_softmax_online", {i64({1, 3}), int64_t(0)});
    QCOMPARE(i[0].to_tensor().dtype(), DType::Int64);
    KILN_EXPECT_VALUES(i[0].to_tensor(), {3});
    QCOMPARE(i[1].to_tensor().dtype(), DType::Float32);
    KILN_EXPECT_VALUES(i[1].to_tensor(), {1 + std::exp(-2.0)});
    // float16 stays float16 (the prim does not upcast its outputs).
    ValueList h = call("prims::prepare_softmax_online", {f32({0, 0}).to(DType::Float16), int64_t(0)});
    QCOMPARE(h[1].to_tensor().dtype(), DType::Float16);
    KILN_EXPECT_VALUES(h[1].to_tensor(), {2});
    auto m = call_meta("prims::prepare_softmax_online", {Tensor::meta({4, 5, 6}, DType::Float32), int64_t(1)});
    QVERIFY(m.ok());
    QCOMPARE(m->at(1).to_tensor().sizes(), (Shape{4, 1, 6}));
    QVERIFY(contains(error_of("prims::prepare_softmax_online", {f32({1}), int64_t(3)}), "out of range"));
  }
};

QTEST_GUILESS_MAIN(TestOpsPrimReductions)
#include "test_ops_prim_reductions.moc"
