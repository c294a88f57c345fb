#include "test_ops_pointwise_support.h"

#include <cfloat>

using namespace kiln;
using kiln::test::call1;
using kiln::test::values;
using namespace kiln::test::pointwise;

class TestOpsPointwiseUnary : public QObject {
  Q_OBJECT
 private slots:
  void transcendental_values() {
    Tensor x = f32({0.5f, 1.0f, 2.0f});
    KILN_EXPECT_VALUES(call1("aten::exp", {x}), {1.6487212707, 2.7182818285, 7.3890560989});
    KILN_EXPECT_VALUES(call1("aten::log", {x}), {-0.6931471806, 0.0, 0.6931471806});
    KILN_EXPECT_VALUES(call1("aten::log2", {x}), {-1, 0, 1});
    KILN_EXPECT_VALUES(call1("aten::log10", {x}), {-0.3010299957, 0, 0.3010299957});
    KILN_EXPECT_VALUES(call1("aten::exp2", {x}), {1.4142135624, 2, 4});
    KILN_EXPECT_VALUES(call1("aten::sqrt", {x}), {0.7071067812, 1, 1.4142135624});
    KILN_EXPECT_VALUES(call1("aten::rsqrt", {x}), {1.4142135624, 1, 0.7071067812});
    KILN_EXPECT_VALUES(call1("aten::reciprocal", {x}), {2, 1, 0.5});
    KILN_EXPECT_VALUES(call1("aten::sin", {x}), {0.4794255386, 0.8414709848, 0.9092974268});
    KILN_EXPECT_VALUES(call1("aten::tanh", {x}), {0.4621171573, 0.7615941560, 0.9640275801});
    KILN_EXPECT_VALUES(call1("aten::sigmoid", {x}), {0.6224593312, 0.7310585786, 0.8807970780});
    KILN_EXPECT_VALUES(call1("aten::erf", {x}), {0.5204998778, 0.8427007929, 0.9953222650});
    KILN_EXPECT_VALUES(call1("aten::erfc", {x}), {0.4795001222, 0.1572992071, 0.0046777350});
    KILN_EXPECT_VALUES(call1("aten::acosh", {x}), {kNan, 0, 1.3169578969});
    // expm1/log1p keep precision near zero.
    Tensor tiny = Tensor::from_vector<double>({1e-10}, {1});
    QCOMPARE(call1("aten::expm1", {tiny}).item().to_double(), 1.00000000005e-10);
    QCOMPARE(call1("aten::log1p", {tiny}).item().to_double(), 9.9999999995e-11);
  }

  // float sin/cos take a vectorized formula below 2^19 and the library above:
  // both must stay within one float ulp of the exact value, signs of zero kept.
  void sin_cos_accuracy_across_ranges() {
    std::vector<float> xs = {-0.0f, 0.0f, 1e-30f, 3.14159265f, -1.5707964f, 100.0f, 12345.678f, 524287.9f,
                             524288.5f, 1e7f, -3e38f, kInfF, -kInfF, kNanF};
    for (int i = 0; i < 4000; ++i) xs.push_back(float(std::ldexp(std::sin(i * 7.31), i % 24)));
    Tensor x = vec(xs);
    for (const char* op : {"aten::sin", "aten::cos"}) {
      bool is_sin = op[6] == 's';
      std::vector<double> got = values(call1(op, {x}));
      std::vector<double> strided = values(call1(op, {x.slice(0, 0, int64_t(xs.size()), 2)}));
      for (size_t i = 0; i < xs.size(); ++i) {
        double want = is_sin ? std::sin(double(xs[i])) : std::cos(double(xs[i]));
        float ulp = std::nextafter(std::abs(float(want)), kInfF) - std::abs(float(want));
        if (std::isnan(want)) {
          QVERIFY(std::isnan(got[i]));
          continue;
        }
        if (!(std::abs(got[i] - want) <= ulp))
          QFAIL(qPrintable(QString("%1(%2): got %3, want %4")
                               .arg(op)
                               .arg(xs[i], 0, 'g', 9)
                               .arg(got[i], 0, 'g', 9)
                               .arg(want, 0, 'g', 9)));
        if (i % 2 == 0) QCOMPARE(strided[i / 2], got[i]);
      }
    }
    QVERIFY(std::signbit(values(call1("aten::sin", {f32({-0.0f})}))[0]));
    KILN_EXPECT_VALUES(call1("aten::cos", {f32({0.0f}).to(DType::BFloat16)}), {1});
  }

  void erfinv_inverts_erf() {
    Tensor y = Tensor::from_vector<double>({-0.999, -0.5, 0.0, 0.3, 0.7, 0.95, 1.0, 1.5}, {8});
    std::vector<double> x = values(call1("aten::erfinv", {y}));
    QCOMPARE(x[2], 0.0);
    QVERIFY(std::abs(x[1] + 0.4769362762044699) < 1e-14);
    for (int i : {0, 3, 4, 5}) QVERIFY(std::abs(std::erf(x[size_t(i)]) - values(y)[size_t(i)]) < 1e-14);
    QVERIFY(std::isinf(x[6]) && x[6] > 0);
    QVERIFY(std::isnan(x[7]));
  }

  void integers_promote_to_float32() {
    Tensor out = call1("aten::exp", {i64({0, 1})});
    QCOMPARE(out.dtype(), DType::Float32);
    KILN_EXPECT_VALUES(out, {1, 2.7182818285});
    Tensor b = Tensor::from_vector<bool>({true, false}, {2});
    QCOMPARE(call1("aten::sqrt", {b}).dtype(), DType::Float32);
    QCOMPARE(call1("aten::sin", {Tensor::from_vector<double>({1.0}, {1})}).dtype(), DType::Float64);
  }

  void reduced_floats_round_once() {
    for (DType t : {DType::Float16, DType::BFloat16}) {
      Tensor out = call1("aten::exp", {f32({1.0f}).to(t)});
      QCOMPARE(out.dtype(), t);
      QCOMPARE(out.item().to_double(), 2.71875);  // the nearest half and bfloat16 to e
    }
    // sigmoid of a large negative half: exp overflows in half, not in float.
    Tensor h = f32({-12.0f}).to(DType::Float16);
    QVERIFY(std::abs(call1("aten::sigmoid", {h}).item().to_double() - 6.1e-6) < 1e-7);
  }

  void abs_neg_keep_integer_dtypes() {
    Tensor i8 = Tensor::from_vector<int8_t>({-128, -3, 5}, {3});
    Tensor a = call1("aten::abs", {i8});
    QCOMPARE(a.dtype(), DType::Int8);
    KILN_EXPECT_VALUES(a, {-128, 3, 5});  // wraps like two's complement, as in PyTorch
    KILN_EXPECT_VALUES(call1("aten::neg", {i64({-2, 7})}), {2, -7});
    KILN_EXPECT_VALUES(call1("aten::abs", {f32({-0.0f, -2.5f})}), {0, 2.5});
    QVERIFY(!std::signbit(values(call1("aten::abs", {f32({-0.0f})}))[0]));
    Tensor b = Tensor::from_vector<bool>({true}, {1});
    QVERIFY(contains(error_of("aten::neg", {b}), "Negation, the `-` operator, on a bool tensor is not supported"));
    QVERIFY(contains(error_of("aten::abs", {b}), "\"abs_cpu\" not implemented for 'Bool'"));
  }

  void sign_and_sgn() {
    KILN_EXPECT_VALUES(call1("aten::sign", {f32({-2.5f, 0.0f, 3.0f, kNanF})}), {-1, 0, 1, 0});
    Tensor s = call1("aten::sgn", {i64({-4, 0, 9})});
    QCOMPARE(s.dtype(), DType::Int64);
    KILN_EXPECT_VALUES(s, {-1, 0, 1});
    Tensor b = call1("aten::sign", {Tensor::from_vector<bool>({true, false}, {2})});
    QCOMPARE(b.dtype(), DType::Bool);
    KILN_EXPECT_VALUES(b, {1, 0});
    KILN_EXPECT_VALUES(call1("aten::sign", {Tensor::from_vector<uint8_t>({0, 7}, {2})}), {0, 1});
  }

  void rounding() {
    Tensor x = f32({0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.7f, 2.7f});
    KILN_EXPECT_VALUES(call1("aten::round", {x}), {0, 2, 2, -0.0, -2, -3, 3});  // half to even
    KILN_EXPECT_VALUES(call1("aten::floor", {x}), {0, 1, 2, -1, -2, -3, 2});
    KILN_EXPECT_VALUES(call1("aten::ceil", {x}), {1, 2, 3, -0.0, -1, -2, 3});
    KILN_EXPECT_VALUES(call1("aten::trunc", {x}), {0, 1, 2, -0.0, -1, -2, 2});
    KILN_EXPECT_VALUES(call1("aten::frac", {x}), {0.5, 0.5, 0.5, -0.5, -0.5, -0.7, 0.7});
    Tensor ints = call1("aten::floor", {i64({-3, 4})});
    QCOMPARE(ints.dtype(), DType::Int64);
    KILN_EXPECT_VALUES(ints, {-3, 4});
    QVERIFY(contains(error_of("aten::frac", {i64({1})}), "not implemented for 'Long'"));
  }

  void round_decimals() {
    Tensor x = Tensor::from_vector<double>({1.2345, -2.675, 1234.5, 0.125}, {4});
    // -2.675 * 100 rounds to -267.5 in double, then to even: ATen's algorithm, not Python's decimal rounding.
    KILN_EXPECT_VALUES(call1("aten::round.decimals", {x}, {{"decimals", 2}}), {1.23, -2.68, 1234.5, 0.12});
    KILN_EXPECT_VALUES(call1("aten::round.decimals", {x}, {{"decimals", -2}}), {0, -0.0, 1200, 0});
    KILN_EXPECT_VALUES(call1("aten::round.decimals", {i64({7})}, {{"decimals", 0}}), {7});
    QVERIFY(contains(error_of("aten::round.decimals", {i64({7})}, {{"decimals", 1}}), "round_cpu"));
  }

  void predicates() {
    Tensor x = f32({1.0f, kNanF, kInfF, -kInfF});
    Tensor n = call1("aten::isnan", {x});
    QCOMPARE(n.dtype(), DType::Bool);
    KILN_EXPECT_VALUES(n, {0, 1, 0, 0});
    KILN_EXPECT_VALUES(call1("aten::isinf", {x}), {0, 0, 1, 1});
    KILN_EXPECT_VALUES(call1("aten::isfinite", {x}), {1, 0, 0, 0});
    KILN_EXPECT_VALUES(call1("aten::isfinite", {i64({5})}), {1});
    KILN_EXPECT_VALUES(call1("aten::isinf", {i64({5})}), {0});
    KILN_EXPECT_VALUES(call1("aten::logical_not", {f32({0.0f, -2.0f, kNanF})}), {1, 0, 0});
    KILN_EXPECT_VALUES(call1("aten::logical_not", {f32({0.5f}).to(DType::BFloat16)}), {0});
  }

  void bitwise_not() {
    KILN_EXPECT_VALUES(call1("aten::bitwise_not", {i64({0, 5, -1})}), {-1, -6, 0});
    KILN_EXPECT_VALUES(call1("aten::bitwise_not", {Tensor::from_vector<uint8_t>({0, 200}, {2})}), {255, 55});
    Tensor b = call1("aten::bitwise_not", {Tensor::from_vector<bool>({true, false}, {2})});
    QCOMPARE(b.dtype(), DType::Bool);
    KILN_EXPECT_VALUES(b, {0, 1});
    QCOMPARE(QString::fromStdString(error_of("aten::bitwise_not", {f32({1})})),
             QString("aten::bitwise_not.default: \"bitwise_not_cpu\" not implemented for 'Float'"));
  }

  void nan_to_num() {
    Tensor x = f32({kNanF, kInfF, -kInfF, 1.5f});
    KILN_EXPECT_VALUES(call1("aten::nan_to_num", {x}), {0, double(FLT_MAX), -double(FLT_MAX), 1.5});
    KILN_EXPECT_VALUES(call1("aten::nan_to_num", {x, 2.0, 100.0, -100.0}), {2, 100, -100, 1.5});
    KILN_EXPECT_VALUES(call1("aten::nan_to_num", {x.to(DType::Float16)}), {0, 65504, -65504, 1.5});
    KILN_EXPECT_VALUES(call1("aten::nan_to_num", {i64({3})}, {{"nan", 1.0}}), {3});
  }

  void positive_aliases_input() {
    Tensor x = f32({1, -2});
    Tensor p = call1("aten::positive", {x});
    QCOMPARE(p.storage().get(), x.storage().get());
    QVERIFY(contains(error_of("aten::positive", {Tensor::from_vector<bool>({true}, {1})}), "bool tensor"));
  }

  void strided_and_empty_inputs() {
    Tensor x = kiln::test::arange_f32({3, 4}, -1.0f, 0.5f);
    Tensor t = x.t().slice(0, 1, 4, 2);  // [2, 3], strides (2, 4)
    Tensor out = call1("aten::neg", {t});
    QVERIFY(out.is_contiguous());
    QCOMPARE(out.sizes(), (Shape{2, 3}));
    KILN_EXPECT_VALUES(out, {0.5, -1.5, -3.5, -0.5, -2.5, -4.5});
    Tensor e = call1("aten::exp", {Tensor::empty({0, 3}, DType::Int32)});
    QCOMPARE(e.sizes(), (Shape{0, 3}));
    QCOMPARE(e.dtype(), DType::Float32);
    Tensor scalar = call1("aten::cos", {Tensor::scalar_tensor(0.0, DType::Float64)});
    QCOMPARE(scalar.dim(), int64_t(0));
    QCOMPARE(scalar.item().to_double(), 1.0);
  }

  void large_tensor_runs_in_parallel_chunks() {
    const int64_t n = 300000;
    Tensor x = kiln::test::arange_f32({n}, -1.0f, 1e-5f);
    std::vector<double> got = values(call1("aten::sin", {x.slice(0, 0, n, 3)}));
    std::vector<double> in = values(x.slice(0, 0, n, 3));
    QCOMPARE(got.size(), in.size());
    for (size_t i = 0; i < got.size(); i += 997) QVERIFY(std::abs(got[i] - std::sin(in[i])) < 1e-6);
  }

  void meta_inputs_give_meta_outputs() {
    auto r = call_op("aten::log", {Tensor::meta({2, 5}, DType::Int16)});
    QVERIFY(r.ok());
    Tensor out = r->at(0).to_tensor();
    QVERIFY(out.is_meta());
    QCOMPARE(out.sizes(), (Shape{2, 5}));
    QCOMPARE(out.dtype(), DType::Float32);
    auto m = call_meta("aten::isnan", {Tensor::meta({4}, DType::Float16)});
    QVERIFY(m.ok());
    QCOMPARE(m->at(0).to_tensor().dtype(), DType::Bool);
  }
};

QTEST_GUILESS_MAIN(TestOpsPointwiseUnary)
#include "test_ops_pointwise_unary.moc"
