#include "test_ops_pointwise_support.h"

#include <functional>

using namespace kiln;
using kiln::test::call1;
using kiln::test::values;
using namespace kiln::test::pointwise;

class TestOpsPointwiseActivation : public QObject {
  Q_OBJECT
 private slots:
  void relu_family() {
    KILN_EXPECT_VALUES(call1("aten::relu", {f32({-1.5f, 0.0f, 2.0f, kNanF})}), {0, 0, 2, kNan});
    Tensor ri = call1("aten::relu", {i64({-3, 4})});
    QCOMPARE(ri.dtype(), DType::Int64);
    KILN_EXPECT_VALUES(ri, {0, 4});
    QVERIFY(contains(error_of("aten::relu", {Tensor::from_vector<bool>({true}, {1})}), "Boolean inputs not supported"));
    KILN_EXPECT_VALUES(call1("aten::relu6", {f32({-1, 3, 7})}), {0, 3, 6});
    Tensor x = f32({-2.0f, -0.25f, 0.5f, 1.0f});
    KILN_EXPECT_VALUES(call1("aten::hardtanh", {x}), {-1, -0.25, 0.5, 1});
    KILN_EXPECT_VALUES(call1("aten::hardtanh", {x, -0.5, 0.7}), {-0.5, -0.25, 0.5, 0.7});
    Tensor hi = call1("aten::hardtanh", {i64({-3, 0, 3}), -1.5, 2.5});
    QCOMPARE(hi.dtype(), DType::Int64);
    KILN_EXPECT_VALUES(hi, {-1, 0, 2});
    KILN_EXPECT_VALUES(call1("aten::threshold", {x, -0.25, 20}), {20, 20, 0.5, 1});
    KILN_EXPECT_VALUES(call1("aten::leaky_relu", {x}), {-0.02, -0.0025, 0.5, 1});
    KILN_EXPECT_VALUES(call1("aten::leaky_relu", {x, 0.1}), {-0.2, -0.025, 0.5, 1});
  }

  void elu_arguments() {
    Tensor x = f64({-1.0, 0.0, 2.0});
    KILN_EXPECT_VALUES(call1("aten::elu", {x}), {-0.6321205588, 0, 2});
    // alpha scales the negative side, scale both sides, input_scale the exponent.
    KILN_EXPECT_VALUES(call1("aten::elu", {x, 2.0, 3.0, 0.5}), {-2.3608160417, 0, 6});
  }

  void smooth_activations() {
    Tensor x = f64({-2.0, -0.5, 0.0, 1.0, 3.0});
    KILN_EXPECT_VALUES(call1("aten::gelu", {x}), {-0.0455002639, -0.1542687694, 0, 0.8413447461, 2.9959503059});
    KILN_EXPECT_VALUES(call1("aten::gelu", {x}, {{"approximate", "tanh"}}),
                        {-0.0454023059, -0.1542859902, 0, 0.8411919906, 2.9963626079});
    QVERIFY(contains(error_of("aten::gelu", {x}, {{"approximate", "fast"}}), "either none or tanh"));
    KILN_EXPECT_VALUES(call1("aten::silu", {x}), {-0.2384058440, -0.1887703343, 0, 0.7310585786, 2.8577223804});
    KILN_EXPECT_VALUES(call1("aten::mish", {x}), {-0.2525014827, -0.2207437747, 0, 0.8650983883, 2.986535005});
    KILN_EXPECT_VALUES(call1("aten::hardsigmoid", {x}), {1.0 / 6, 2.5 / 6, 0.5, 4.0 / 6, 1});
    KILN_EXPECT_VALUES(call1("aten::hardswish", {f64({-4, -1, 1, 4})}), {0, -1.0 / 3, 2.0 / 3, 4});
    KILN_EXPECT_VALUES(call1("aten::softplus", {x}), {0.1269280110, 0.4740769842, 0.6931471806, 1.3132616875,
                                                         3.0485873516});
    // Above threshold / beta softplus is the identity.
    KILN_EXPECT_VALUES(call1("aten::softplus", {f64({1.0, 30.0}), 2.0, 10.0}), {1.0634640055, 30});
    KILN_EXPECT_VALUES(call1("aten::logit", {f64({0.25, 0.5, 0.0})}), {-1.0986122887, 0, -kInf});
    KILN_EXPECT_VALUES(call1("aten::logit", {f64({0.0, 1.0})}, {{"eps", 0.25}}), {-1.0986122887, 1.0986122887});
    QCOMPARE(call1("aten::logit", {i64({0})}).dtype(), DType::Float32);
    QVERIFY(contains(error_of("aten::gelu", {i64({1})}), "\"gelu_cpu\" not implemented for 'Long'"));
  }

  void reduced_float_activations() {
    Tensor h = f32({-1.0f, 0.5f, 2.0f}).to(DType::Float16);
    Tensor out = call1("aten::gelu", {h});
    QCOMPARE(out.dtype(), DType::Float16);
    // float32 results rounded once to half.
    std::vector<double> want = values(call1("aten::gelu", {h.to(DType::Float32)}).to(DType::Float16));
    QCOMPARE(values(out), want);
    Tensor b = call1("aten::silu", {h.to(DType::BFloat16)});
    QCOMPARE(b.dtype(), DType::BFloat16);
    QCOMPARE(values(b), values(call1("aten::silu", {h.to(DType::Float32)}).to(DType::BFloat16)));
  }

  void clamp_scalars() {
    Tensor x = f32({-2.0f, 0.3f, 4.0f, kNanF});
    KILN_EXPECT_VALUES(call1("aten::clamp", {x, -1.0, 1.0}), {-1, 0.3, 1, kNan});
    KILN_EXPECT_VALUES(call1("aten::clamp", {x}, {{"min", 0.0}}), {0, 0.3, 4, kNan});
    KILN_EXPECT_VALUES(call1("aten::clamp", {x}, {{"max", 0.0}}), {-2, 0, 0, kNan});
    KILN_EXPECT_VALUES(call1("aten::clamp", {x, 2.0, 1.0}), {1, 1, 1, kNan});  // min > max: max wins
    KILN_EXPECT_VALUES(call1("aten::clamp_min", {x, 0.2}), {0.2, 0.3, 4, kNan});
    KILN_EXPECT_VALUES(call1("aten::clamp_max", {x, 0.2}), {-2, 0.2, 0.2, kNan});
    // Integer tensors promote with float bounds; int bounds keep the dtype.
    Tensor p = call1("aten::clamp", {i64({-3, 0, 3}), -0.5, 0.5});
    QCOMPARE(p.dtype(), DType::Float32);
    KILN_EXPECT_VALUES(p, {-0.5, 0, 0.5});
    Tensor q = call1("aten::clamp_min", {i64({-3, 0, 3}), 1});
    QCOMPARE(q.dtype(), DType::Int64);
    KILN_EXPECT_VALUES(q, {1, 1, 3});
    QVERIFY(contains(error_of("aten::clamp", {x}), "At least one of 'min' or 'max' must not be None"));
    QVERIFY(contains(error_of("aten::clamp", {x.to(DType::Float16), 1e6}),
                     "value cannot be converted to type at::Half without overflow"));
    QVERIFY(contains(error_of("aten::clamp", {vec<int8_t>({1}), 200}), "int8_t without overflow"));
    // A half tensor compares with bounds rounded to half.
    Tensor h = call1("aten::clamp", {f32({0.0f}).to(DType::Float16), 0.1}, {});
    QCOMPARE(h.item().to_double(), double(float(Half(0.1f))));
  }

  void clamp_tensors_broadcast() {
    Tensor x = kiln::test::arange_f32({2, 3});  // 0..5
    Tensor lo = f32({1, 2, 3});
    Tensor hi = Tensor::from_vector<float>({2, kNanF}, {2, 1});
    KILN_EXPECT_VALUES(call1("aten::clamp.Tensor", {x, lo, hi}),
                        {1, 2, 2, kNan, kNan, kNan});
    KILN_EXPECT_VALUES(call1("aten::clamp.Tensor", {x}, {{"min", lo}}), {1, 2, 3, 3, 4, 5});
    KILN_EXPECT_VALUES(call1("aten::clamp.Tensor", {x}, {{"max", lo}}), {0, 1, 2, 1, 2, 3});
    QVERIFY(contains(error_of("aten::clamp.Tensor", {x}), "At least one"));
    Tensor mixed = call1("aten::clamp_min.Tensor", {i64({-1, 5}), f64({0.5, 0.5})});
    QCOMPARE(mixed.dtype(), DType::Float64);
    KILN_EXPECT_VALUES(mixed, {0.5, 5});
    KILN_EXPECT_VALUES(call1("aten::clamp_max.Tensor", {i64({-1, 5}), i64({2})}), {-1, 2});
  }

  // Each backward formula against a central difference of its forward op, in float64.
  void backward_matches_finite_differences() {
    Tensor x = f64({-3.5, -1.2, -0.3, 0.4, 1.1, 2.9});
    Tensor g = f64({0.7, -1.3, 2.0, 0.5, -0.25, 1.5});
    const double h = 1e-6;
    auto forward_diff = [&](const std::function<Tensor(const Tensor&)>& f) {
      std::vector<double> up = values(f(call1("aten::add.Scalar", {x, h})));
      std::vector<double> dn = values(f(call1("aten::sub.Scalar", {x, h})));
      std::vector<double> gv = values(g), out(up.size());
      for (size_t i = 0; i < up.size(); ++i) out[i] = gv[i] * (up[i] - dn[i]) / (2 * h);
      return out;
    };
    auto check = [&](const std::vector<double>& got, const std::vector<double>& want) {
      QCOMPARE(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i)
        if (std::abs(got[i] - want[i]) > 1e-6 * (1 + std::abs(want[i])))
          QFAIL(qPrintable(QString("element %1: got %2, want %3").arg(i).arg(got[i]).arg(want[i])));
    };
    auto unary = [&](const char* op) { return [op](const Tensor& t) { return call1(op, {t}); }; };
    check(values(call1("aten::gelu_backward", {g, x})), forward_diff(unary("aten::gelu")));
    check(values(call1("aten::gelu_backward", {g, x}, {{"approximate", "tanh"}})),
          forward_diff([](const Tensor& t) { return call1("aten::gelu", {t}, {{"approximate", "tanh"}}); }));
    check(values(call1("aten::silu_backward", {g, x})), forward_diff(unary("aten::silu")));
    check(values(call1("aten::mish_backward", {g, x})), forward_diff(unary("aten::mish")));
    check(values(call1("aten::hardswish_backward", {g, x})), forward_diff(unary("aten::hardswish")));
    check(values(call1("aten::hardsigmoid_backward", {g, x})), forward_diff(unary("aten::hardsigmoid")));
    check(values(call1("aten::softplus_backward", {g, x, 1.5, 20.0})),
          forward_diff([](const Tensor& t) { return call1("aten::softplus", {t, 1.5, 20.0}); }));
    check(values(call1("aten::leaky_relu_backward", {g, x, 0.2, false})),
          forward_diff([](const Tensor& t) { return call1("aten::leaky_relu", {t, 0.2}); }));
    check(values(call1("aten::hardtanh_backward", {g, x, -1.0, 2.0})),
          forward_diff([](const Tensor& t) { return call1("aten::hardtanh", {t, -1.0, 2.0}); }));
    check(values(call1("aten::elu_backward", {g, 1.5, 2.0, 0.5, false, x})),
          forward_diff([](const Tensor& t) { return call1("aten::elu", {t, 1.5, 2.0, 0.5}); }));
    // From the result: y = elu(x) lets the negative side reuse y.
    Tensor y = call1("aten::elu", {x, 1.5, 2.0, 0.5});
    check(values(call1("aten::elu_backward", {g, 1.5, 2.0, 0.5, true, y})),
          values(call1("aten::elu_backward", {g, 1.5, 2.0, 0.5, false, x})));
    Tensor s = call1("aten::sigmoid", {x});
    check(values(call1("aten::sigmoid_backward", {g, s})), forward_diff(unary("aten::sigmoid")));
    Tensor t = call1("aten::tanh", {x});
    check(values(call1("aten::tanh_backward", {g, t})), forward_diff(unary("aten::tanh")));
    KILN_EXPECT_VALUES(call1("aten::threshold_backward", {g, x, 0.4}), {0, 0, 0, 0, -0.25, 1.5});
    QVERIFY(contains(error_of("aten::elu_backward", {g, -1.0, 1.0, 1.0, true, y}), "negative slope"));
  }

  void backward_promotes_and_broadcasts() {
    Tensor g = f32({1.0f}).to(DType::Float16);
    Tensor y = Tensor::from_vector<float>({0.25f, 0.5f}, {2, 1});
    Tensor out = call1("aten::sigmoid_backward", {g, y});
    QCOMPARE(out.dtype(), DType::Float32);
    QCOMPARE(out.sizes(), (Shape{2, 1}));
    KILN_EXPECT_VALUES(out, {0.1875, 0.25});
  }
};

QTEST_GUILESS_MAIN(TestOpsPointwiseActivation)
#include "test_ops_pointwise_activation.moc"
