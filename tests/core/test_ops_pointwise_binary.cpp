#include "test_ops_pointwise_support.h"

using namespace kiln;
using kiln::test::call1;
using kiln::test::values;
using namespace kiln::test::pointwise;

class TestOpsPointwiseBinary : public QObject {
  Q_OBJECT
 private slots:
  void add_broadcasts_with_alpha() {
    Tensor a = Tensor::from_vector<float>({1, 2}, {2, 1});
    Tensor b = f32({10, 20, 30});
    Tensor out = call1("aten::add.Tensor", {a, b});
    QCOMPARE(out.sizes(), (Shape{2, 3}));
    KILN_EXPECT_VALUES(out, {11, 21, 31, 12, 22, 32});
    KILN_EXPECT_VALUES(call1("aten::add.Tensor", {a, b}, {{"alpha", 2}}), {21, 41, 61, 22, 42, 62});
    KILN_EXPECT_VALUES(call1("aten::add.Scalar", {b, 1.5, 2}), {13, 23, 33});
    QVERIFY(contains(error_of("aten::add.Tensor", {f32({1, 2}), f32({1, 2, 3})}), "[2]"));
  }

  void add_promotes() {
    Tensor i = i64({1, 2});
    QCOMPARE(call1("aten::add.Scalar", {i, 2}).dtype(), DType::Int64);
    Tensor f = call1("aten::add.Scalar", {i, 2.5});
    QCOMPARE(f.dtype(), DType::Float32);
    KILN_EXPECT_VALUES(f, {3.5, 4.5});
    // A zero-dim tensor of a higher category decides; of the same category it does not.
    QCOMPARE(call1("aten::add.Tensor", {i, Tensor::scalar_tensor(0.5, DType::Float64)}).dtype(), DType::Float64);
    Tensor half = f32({1}).to(DType::Float16);
    QCOMPARE(call1("aten::add.Tensor", {half, Tensor::scalar_tensor(0.5, DType::Float64)}).dtype(), DType::Float16);
    Tensor u8 = vec<uint8_t>({200}), s8 = vec<int8_t>({-100});
    Tensor w = call1("aten::add.Tensor", {u8, s8});
    QCOMPARE(w.dtype(), DType::Int16);
    KILN_EXPECT_VALUES(w, {100});
    Tensor bools = call1("aten::add.Tensor", {boolean({true, false, false}), boolean({true, true, false})});
    QCOMPARE(bools.dtype(), DType::Bool);
    KILN_EXPECT_VALUES(bools, {1, 1, 0});
    QVERIFY(contains(error_of("aten::add.Tensor", {i, i}, {{"alpha", 0.5}}),
                     "For integral input tensors, argument alpha must not be a floating point number."));
    QVERIFY(contains(error_of("aten::add.Tensor", {f32({1}), f32({1})}, {{"alpha", true}}),
                     "Boolean alpha only supported for Boolean results."));
  }

  void sub_and_rsub() {
    Tensor x = f32({5, 3}), y = f32({1, 1});
    KILN_EXPECT_VALUES(call1("aten::sub.Tensor", {x, y}, {{"alpha", 2}}), {3, 1});
    KILN_EXPECT_VALUES(call1("aten::sub.Scalar", {x, 1}), {4, 2});
    KILN_EXPECT_VALUES(call1("aten::rsub.Tensor", {x, y}), {-4, -2});
    KILN_EXPECT_VALUES(call1("aten::rsub.Scalar", {x, 10, 2}), {0, 4});
    QVERIFY(contains(error_of("aten::sub.Tensor", {boolean({true}), boolean({false})}), "with two bool tensors"));
    QVERIFY(contains(error_of("aten::sub.Scalar", {i64({1}), true}), "with a bool tensor is not supported"));
    KILN_EXPECT_VALUES(call1("aten::sub.Tensor", {vec<uint8_t>({1}), vec<uint8_t>({2})}), {255});
  }

  void mul_wraps_and_ands() {
    Tensor m = call1("aten::mul.Tensor", {vec<int8_t>({100, -3}), vec<int8_t>({3, 5})});
    QCOMPARE(m.dtype(), DType::Int8);
    KILN_EXPECT_VALUES(m, {44, -15});
    KILN_EXPECT_VALUES(call1("aten::mul.Tensor", {boolean({true, true}), boolean({true, false})}), {1, 0});
    KILN_EXPECT_VALUES(call1("aten::mul.Scalar", {f32({2, -1}), -3.0}), {-6, 3});
  }

  void reduced_float_arithmetic_rounds_once() {
    Tensor one = f32({1.0f, 1.0f}).to(DType::Float16);
    Tensor small = f32({0.00048828125f, 0.00146484375f}).to(DType::Float16);  // 2^-11, 3 * 2^-11
    Tensor s = call1("aten::add.Tensor", {one, small});
    QCOMPARE(s.dtype(), DType::Float16);
    KILN_EXPECT_VALUES(s, {1.0, 1.001953125});  // exact sums rounded to even once
    // mul/add/div read a Python number at float precision (ATen's original_scalar_value):
    // 200 * 1.003 = 200.6 rounds to 201 in bfloat16, while bfloat16(1.003) would be 1.
    Tensor b = call1("aten::mul.Scalar", {f32({200}).to(DType::BFloat16), 1.003});
    QCOMPARE(b.item().to_double(), 201.0);
    // ...as is a one-element tensor, before its cast: 3 * 2049 = 6147 -> 6148 (3 * 2048 would be 6144).
    KILN_EXPECT_VALUES(call1("aten::mul.Tensor", {f32({3, 3}).to(DType::Float16), i64({2049})}), {6148, 6148});
    // add rounds the number to bfloat16 first: 256 + 1 ties to 256, where 256 + 1.003 would give 258.
    KILN_EXPECT_VALUES(call1("aten::add.Scalar", {f32({256}).to(DType::BFloat16), 1.003}), {256});
    // Comparisons round the number to the tensor dtype first, so a half 0.1 equals 0.1.
    KILN_EXPECT_VALUES(call1("aten::eq.Scalar", {f32({0.1f}).to(DType::Float16), 0.1}), {1});
    KILN_EXPECT_VALUES(call1("aten::eq.Scalar", {f32({0.1f}), 0.1}), {1});
    KILN_EXPECT_VALUES(call1("aten::eq.Scalar", {f32({0.1f}).to(DType::Float64), 0.1}), {0});
  }

  void true_division() {
    Tensor q = call1("aten::div.Tensor", {i64({7, -7}), i64({2, 2})});
    QCOMPARE(q.dtype(), DType::Float32);
    KILN_EXPECT_VALUES(q, {3.5, -3.5});
    Tensor bq = call1("aten::div.Tensor", {boolean({true}), boolean({true})});
    QCOMPARE(bq.dtype(), DType::Float32);
    KILN_EXPECT_VALUES(call1("aten::div.Scalar", {i64({3}), 2}), {1.5});
    KILN_EXPECT_VALUES(call1("aten::div.Tensor", {f32({1, -1, 0}), f32({0, 0, 0})}), {kInf, -kInf, kNan});
    KILN_EXPECT_VALUES(call1("aten::div.Tensor_mode", {i64({7}), i64({2})}, {{"rounding_mode", Value()}}), {3.5});
  }

  void rounded_division() {
    Tensor a = i64({7, -7, 7, -7}), b = i64({2, 2, -2, -2});
    Tensor t = call1("aten::div.Tensor_mode", {a, b}, {{"rounding_mode", "trunc"}});
    QCOMPARE(t.dtype(), DType::Int64);
    KILN_EXPECT_VALUES(t, {3, -3, -3, 3});
    KILN_EXPECT_VALUES(call1("aten::div.Tensor_mode", {a, b}, {{"rounding_mode", "floor"}}), {3, -4, -4, 3});
    KILN_EXPECT_VALUES(call1("aten::floor_divide", {a, b}), {3, -4, -4, 3});
    KILN_EXPECT_VALUES(call1("aten::div.Scalar_mode", {a, 3}, {{"rounding_mode", "floor"}}), {2, -3, 2, -3});
    Tensor fa = f32({-7.5f, 7.5f, 1.0f, 0.0f, 1.0f, 5.0f}), fb = f32({2, 2, -3, -3, 0, 0.1f});
    Tensor ff = call1("aten::div.Tensor_mode", {fa, fb}, {{"rounding_mode", "floor"}});
    KILN_EXPECT_VALUES(ff, {-4, 3, -1, -0.0, kInf, 49});  // 5 // 0.1 is 49 in Python too
    QVERIFY(std::signbit(values(ff)[3]));
    KILN_EXPECT_VALUES(call1("aten::div.Tensor_mode", {fa, fb}, {{"rounding_mode", "trunc"}}),
                        {-3, 3, -0.0, -0.0, kInf, 50});
    QCOMPARE(QString::fromStdString(error_of("aten::div.Tensor_mode", {a, i64({0})}, {{"rounding_mode", "floor"}})),
             QString("aten::div.Tensor_mode: ZeroDivisionError"));
    QVERIFY(contains(error_of("aten::div.Scalar_mode", {a, 0}, {{"rounding_mode", "trunc"}}), "ZeroDivisionError"));
    QVERIFY(contains(error_of("aten::div.Tensor_mode", {a, b}, {{"rounding_mode", "round"}}),
                     "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'"));
    // INT64_MIN / -1 wraps instead of trapping.
    Tensor lo = i64({std::numeric_limits<int64_t>::min()});
    Tensor w = call1("aten::div.Tensor_mode", {lo, i64({-1})}, {{"rounding_mode", "trunc"}});
    QCOMPARE(w.data<int64_t>()[0], std::numeric_limits<int64_t>::min());
    QCOMPARE(call1("aten::remainder.Tensor", {lo, i64({-1})}).data<int64_t>()[0], int64_t(0));
  }

  void integer_overflow_wraps_and_scalar_arguments_are_range_checked() {
    const int64_t max = std::numeric_limits<int64_t>::max(), min = std::numeric_limits<int64_t>::min();
    QCOMPARE(call1("aten::add.Scalar", {i64({max}), 1}).data<int64_t>()[0], min);
    QCOMPARE(call1("aten::mul.Tensor", {i64({max}), i64({2})}).data<int64_t>()[0], int64_t(-2));
    QCOMPARE(call1("aten::neg", {i64({min})}).data<int64_t>()[0], min);
    KILN_EXPECT_VALUES(call1("aten::mul.Tensor", {vec<int16_t>({-32768}), vec<int16_t>({-1})}), {-32768});
    // A Python-number operand is cast like a tensor (wraps); arguments such as alpha are checked.
    KILN_EXPECT_VALUES(call1("aten::add.Scalar", {vec<uint8_t>({1}), 300}), {45});
    QVERIFY(contains(error_of("aten::add.Tensor", {vec<int8_t>({1}), vec<int8_t>({1})}, {{"alpha", 1000}}),
                     "value cannot be converted to type int8_t without overflow"));
    // add takes alpha in the tensor dtype (ATen's alpha.to<scalar_t>()), so half refuses 1e6.
    Tensor h = f32({1}).to(DType::Float16);
    QVERIFY(contains(error_of("aten::add.Tensor", {h, h}, {{"alpha", 1e6}}),
                     "value cannot be converted to type at::Half without overflow"));
    // A zero divisor deep inside a parallel loop still surfaces as the op's error.
    Tensor num = Tensor::full({200000}, Scalar(int64_t(7)), DType::Int64);
    Tensor den = Tensor::full({200000}, Scalar(int64_t(2)), DType::Int64);
    den.data<int64_t>()[150001] = 0;
    QVERIFY(contains(error_of("aten::floor_divide", {num, den}), "ZeroDivisionError"));
  }

  void remainder_and_fmod() {
    KILN_EXPECT_VALUES(call1("aten::remainder.Tensor", {i64({-3, 3, 3}), i64({2, 2, -2})}), {1, 1, -1});
    KILN_EXPECT_VALUES(call1("aten::remainder.Tensor", {f32({-3.5f, 3.5f, 5.0f}), f32({2, 2, -3})}), {0.5, 1.5, -1});
    KILN_EXPECT_VALUES(call1("aten::remainder.Scalar", {f32({-1.0f}), 3}), {2});
    KILN_EXPECT_VALUES(call1("aten::remainder.Scalar_Tensor", {5, i64({3, -3})}), {2, -1});
    KILN_EXPECT_VALUES(call1("aten::fmod.Tensor", {f32({-3.5f, 3.5f}), f32({2, -2})}), {-1.5, 1.5});
    KILN_EXPECT_VALUES(call1("aten::fmod.Scalar", {i64({-7, 7}), 3}), {-1, 1});
    QVERIFY(contains(error_of("aten::fmod.Scalar", {i64({1}), 0}), "ZeroDivisionError"));
    QVERIFY(contains(error_of("aten::remainder.Tensor", {i64({1}), i64({0})}), "ZeroDivisionError"));
    KILN_EXPECT_VALUES(call1("aten::fmod.Scalar", {f32({1}), 0}), {kNan});
  }

  void pow_overloads() {
    Tensor x = f32({-0.0f, 4.0f, -kInfF, 2.0f});
    KILN_EXPECT_VALUES(call1("aten::pow.Tensor_Scalar", {x, 0.5}), {-0.0, 2, kNan, 1.4142135624});  // sqrt
    QVERIFY(std::signbit(values(call1("aten::pow.Tensor_Scalar", {x, 0.5}))[0]));
    KILN_EXPECT_VALUES(call1("aten::pow.Tensor_Scalar", {x, 2}), {0, 16, kInf, 4});
    KILN_EXPECT_VALUES(call1("aten::pow.Tensor_Scalar", {x, -1}), {-kInf, 0.25, -0.0, 0.5});
    KILN_EXPECT_VALUES(call1("aten::pow.Tensor_Scalar", {f32({2, 9}), 1.5}), {2.8284271247, 27});
    KILN_EXPECT_VALUES(call1("aten::pow.Tensor_Scalar", {f32({kNanF}), 0}), {1});
    Tensor ip = call1("aten::pow.Tensor_Scalar", {i64({2, -3}), 3});
    QCOMPARE(ip.dtype(), DType::Int64);
    KILN_EXPECT_VALUES(ip, {8, -27});
    QCOMPARE(call1("aten::pow.Tensor_Scalar", {i64({2}), 0.5}).dtype(), DType::Float32);
    QVERIFY(contains(error_of("aten::pow.Tensor_Scalar", {i64({2}), -1}),
                     "Integers to negative integer powers are not allowed."));
    // Tensor exponents: negative integer powers give 0 except for bases 1 and -1.
    KILN_EXPECT_VALUES(call1("aten::pow.Tensor_Tensor", {i64({1, -1, -1, 2, 0}), i64({-2, -3, -2, -1, 3})}),
                        {1, -1, 1, 0, 0});
    Tensor wrap = call1("aten::pow.Tensor_Tensor", {i64({3}), i64({40})});
    QCOMPARE(wrap.data<int64_t>()[0], int64_t(-6289078614652622815LL));  // 3^40 mod 2^64
    KILN_EXPECT_VALUES(call1("aten::pow.Tensor_Tensor", {f32({2, 4}), f64({0.5, -2})}), {1.4142135624, 0.0625});
    Tensor ps = call1("aten::pow.Scalar", {2, i64({0, 1, 3})});
    QCOMPARE(ps.dtype(), DType::Int64);
    KILN_EXPECT_VALUES(ps, {1, 2, 8});
    Tensor pf = call1("aten::pow.Scalar", {2.0, i64({0, 1, 3})});
    QCOMPARE(pf.dtype(), DType::Float32);
    KILN_EXPECT_VALUES(pf, {1, 2, 8});
    KILN_EXPECT_VALUES(call1("aten::pow.Tensor_Scalar", {f32({3}).to(DType::BFloat16), 3}), {27});
  }

  void float_math() {
    Tensor t = call1("aten::atan2", {i64({1, -1}), i64({1, 0})});
    QCOMPARE(t.dtype(), DType::Float32);
    KILN_EXPECT_VALUES(t, {0.7853981634, -1.5707963268});
    KILN_EXPECT_VALUES(call1("aten::hypot", {f32({3, 5}), f32({4, 12})}), {5, 13});
    QVERIFY(contains(error_of("aten::hypot", {i64({3}), i64({4})}), "not implemented for 'Long'"));
    Tensor c = call1("aten::copysign.Tensor", {i64({1, -2}), f32({-1, 1})});
    QCOMPARE(c.dtype(), DType::Float32);
    KILN_EXPECT_VALUES(c, {-1, 2});
    KILN_EXPECT_VALUES(call1("aten::copysign.Scalar", {f32({3}), -0.0}), {-3});
    KILN_EXPECT_VALUES(call1("aten::xlogy.Tensor", {f64({0, 1, 2, 0}), f64({0, kNan, std::exp(1.0), kNan})}),
                        {0, kNan, 2, kNan});
    KILN_EXPECT_VALUES(call1("aten::xlogy.Scalar_Self", {3, f32({1, std::exp(2.0f)})}), {0, 6});
    KILN_EXPECT_VALUES(call1("aten::xlogy.Scalar_Other", {f32({2}), 1.0}), {0});
  }

  void strided_inputs() {
    Tensor x = kiln::test::arange_f32({3, 4});
    Tensor y = kiln::test::arange_f32({4, 3}, 100.f);
    Tensor out = call1("aten::add.Tensor", {x.t(), y.slice(1, 0, 3)});  // [4, 3] transposed + contiguous
    KILN_EXPECT_VALUES(out.select(0, 1), {1 + 103, 5 + 104, 9 + 105});
    // A large broadcast goes through the parallel loops.
    Tensor col = kiln::test::arange_f32({1000, 1}), row = kiln::test::arange_f32({1, 300}, 0.f, 1000.f);
    Tensor big = call1("aten::sub.Tensor", {row, col});
    QCOMPARE(big.sizes(), (Shape{1000, 300}));
    std::vector<double> v = values(big);
    for (size_t i : {size_t(0), size_t(299), size_t(300 * 517 + 33), v.size() - 1})
      QCOMPARE(v[i], double(int64_t(i % 300) * 1000 - int64_t(i / 300)));
    Tensor e = call1("aten::mul.Tensor", {Tensor::empty({0, 4}, DType::Float32), f32({1, 2, 3, 4})});
    QCOMPARE(e.sizes(), (Shape{0, 4}));
  }

  void meta_shapes_and_dtypes() {
    auto r = call_meta("aten::div.Tensor", {Tensor::meta({3, 1}, DType::Int32), Tensor::meta({5}, DType::Int64)});
    QVERIFY(r.ok());
    QCOMPARE(r->at(0).to_tensor().sizes(), (Shape{3, 5}));
    QCOMPARE(r->at(0).to_tensor().dtype(), DType::Float32);
    auto c = call_op("aten::lt.Scalar", {Tensor::meta({2}, DType::Float64), 1});
    QVERIFY(c.ok());
    QVERIFY(c->at(0).to_tensor().is_meta());
    QCOMPARE(c->at(0).to_tensor().dtype(), DType::Bool);
  }
};

QTEST_GUILESS_MAIN(TestOpsPointwiseBinary)
#include "test_ops_pointwise_binary.moc"
