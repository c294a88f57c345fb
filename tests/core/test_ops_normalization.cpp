#include "test_support.h"

#include <limits>
#include <random>

#include "core/ops/kernel_util.h"

using namespace kiln;
using kiln::test::arange_f32;
using kiln::test::call;
using kiln::test::call1;
using kiln::test::values;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

Tensor randn(Shape sizes, uint32_t seed, DType dtype = DType::Float32) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> dist(0.0, 1.0);
  std::vector<double> v(size_t(shape_numel(sizes)));
  for (double& f : v) f = dist(gen);
  return Tensor::from_vector(v, std::move(sizes)).to(dtype);
}

using kiln::test::ints;

QString error_of(std::string_view op, const ValueList& args) {
  auto r = call_op(op, args);
  return r ? QString() : QString::fromStdString(r.status().message());
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  QCOMPARE(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= tol * (1 + std::abs(want[i]))))
      QFAIL(qPrintable(QString("element %1: got %2, want %3").arg(i).arg(got[i], 0, 'g', 12).arg(want[i], 0, 'g', 12)));
}

// Per-row mean and biased variance of a row-major [rows, n] list.
std::pair<std::vector<double>, std::vector<double>> row_stats(const std::vector<double>& v, size_t n) {
  std::vector<double> mean, var;
  for (size_t r = 0; r * n < v.size(); ++r) {
    double s = 0, q = 0;
    for (size_t j = 0; j < n; ++j) s += v[r * n + j];
    for (size_t j = 0; j < n; ++j) q += (v[r * n + j] - s / n) * (v[r * n + j] - s / n);
    mean.push_back(s / n);
    var.push_back(q / n);
  }
  return {mean, var};
}

// d(sum(loss_weights * f(x)))/dx by central differences, for checking backward kernels.
template <class F>
std::vector<double> numeric_grad(const Tensor& x, const std::vector<double>& gout, F f) {
  std::vector<double> xv = values(x), grad(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) {
    auto eval = [&](double h) {
      std::vector<double> p = xv;
      p[i] += h;
      std::vector<double> out = values(f(Tensor::from_vector(p, x.sizes())));
      double s = 0;
      for (size_t k = 0; k < out.size(); ++k) s += out[k] * gout[k];
      return s;
    };
    grad[i] = (eval(1e-6) - eval(-1e-6)) / 2e-6;
  }
  return grad;
}

}  // namespace

class TestOpsNormalization : public QObject {
  Q_OBJECT
 private slots:
  void softmax_values() {
    Tensor x = Tensor::from_vector<float>({1, 2, 3, 1000, 1000, -float(kInf)}, {2, 3});
    KILN_COMPARE_VALUES(call1("aten::_softmax", {x, int64_t(-1), false}),
                        {0.09003057, 0.24472847, 0.66524096, 0.5, 0.5, 0});
    Tensor ls = call1("aten::_log_softmax", {x, int64_t(1), false});
    std::vector<double> l = values(ls);
    QCOMPARE(float(l[0]), float(std::log(0.09003057317038046)));
    QCOMPARE(float(l[3]), float(-std::log(2.0)));
    QCOMPARE(l[5], -kInf);
    // Across dim 0 (strided lanes).
    Tensor c = call1("aten::_softmax", {arange_f32({2, 2}), int64_t(0), false});
    double e = 1 / (1 + std::exp(2.0));
    KILN_COMPARE_VALUES(c, {e, e, 1 - e, 1 - e});
    // A row of -inf has no maximum to subtract: NaN, as in PyTorch.
    Tensor ninf = Tensor::full({1, 2}, Scalar(-kInf), DType::Float32);
    QVERIFY(std::isnan(values(call1("aten::_softmax", {ninf, int64_t(1), false}))[0]));
  }

  void softmax_dtypes() {
    Tensor h = Tensor::from_vector<float>({0, 1, 2}, {3}).to(DType::Float16);
    Tensor sh = call1("aten::_softmax", {h, int64_t(0), false});
    QCOMPARE(sh.dtype(), DType::Float16);
    QCOMPARE(values(sh)[2], double(float(Half(0.66524096f))));
    QCOMPARE(call1("aten::_softmax", {h, int64_t(0), true}).dtype(), DType::Float32);
    Tensor sd = call1("aten::softmax.int", {h, int64_t(0), DType::Float64});
    QCOMPARE(sd.dtype(), DType::Float64);
    KILN_COMPARE_VALUES(sd, {0.09003057317038046, 0.24472847105479764, 0.6652409557748219});
    QCOMPARE(call1("aten::log_softmax.int", {h, int64_t(0)}).dtype(), DType::Float16);
    QVERIFY(error_of("aten::_softmax", {Tensor::zeros({3}, DType::Int64), int64_t(0), false}).contains("floating"));
    Tensor z = Tensor::scalar_tensor(3.0, DType::Float32);
    KILN_COMPARE_VALUES(call1("aten::_softmax", {z, int64_t(0), false}), {1});
  }

  void softmax_backward() {
    Tensor x = randn({3, 4}, 1, DType::Float64), g = randn({3, 4}, 2, DType::Float64);
    std::vector<double> gv = values(g);
    for (bool log : {false, true}) {
      const char* fwd = log ? "aten::_log_softmax" : "aten::_softmax";
      const char* bwd = log ? "aten::_log_softmax_backward_data" : "aten::_softmax_backward_data";
      Tensor y = call1(fwd, {x, int64_t(1), false});
      Tensor gi = call1(bwd, {g, y, int64_t(1), DType::Float64});
      auto num = numeric_grad(x, gv, [&](const Tensor& t) { return call1(fwd, {t, int64_t(1), false}); });
      expect_close(values(gi), num, 1e-6);
    }
    // A float32 gradient of a float16 input goes back as float16.
    Tensor y32 = call1("aten::_softmax", {x.to(DType::Float32), int64_t(1), false});
    QCOMPARE(call1("aten::_softmax_backward_data", {g.to(DType::Float32), y32, int64_t(1), DType::Float16}).dtype(),
             DType::Float16);
  }

  void layer_norm_forward() {
    Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, -1, 0, 1, 6}, {2, 4});
    Tensor w = Tensor::from_vector<float>({1, 2, 0.5, -1}, {4});
    Tensor b = Tensor::from_vector<float>({0, 1, 0, 0.25}, {4});
    ValueList r = call("aten::native_layer_norm", {x, ints({4}), w, b, 1e-5});
    auto [mean, var] = row_stats(values(x), 4);
    QCOMPARE(r[1].to_tensor().sizes(), (Shape{2, 1}));
    KILN_COMPARE_VALUES(r[1].to_tensor(), {mean[0], mean[1]});
    KILN_COMPARE_VALUES(r[2].to_tensor(), {1 / std::sqrt(var[0] + 1e-5), 1 / std::sqrt(var[1] + 1e-5)});
    std::vector<double> want, xv = values(x), wv = values(w), bv = values(b);
    for (size_t i = 0; i < 8; ++i)
      want.push_back((xv[i] - mean[i / 4]) / std::sqrt(var[i / 4] + 1e-5) * wv[i % 4] + bv[i % 4]);
    KILN_COMPARE_VALUES(r[0].to_tensor(), want);
    // The composite op, over two normalized dims of a transposed (non-contiguous) input.
    Tensor t = arange_f32({3, 2}).t();
    Tensor ln = call1("aten::layer_norm", {t.unsqueeze(0), ints({2, 3})});
    auto [m2, v2] = row_stats(values(t), 6);
    std::vector<double> want2;
    for (double v : values(t)) want2.push_back((v - m2[0]) / std::sqrt(v2[0] + 1e-5));
    KILN_COMPARE_VALUES(ln, want2);
  }

  void layer_norm_dtypes_and_errors() {
    Tensor x = randn({2, 3, 4}, 3, DType::BFloat16);
    ValueList plain = call("aten::native_layer_norm", {x, ints({4}), Value(), Value(), 1e-5});
    QCOMPARE(plain[0].to_tensor().dtype(), DType::BFloat16);
    QCOMPARE(plain[1].to_tensor().dtype(), DType::BFloat16);
    Tensor w = Tensor::full({4}, Scalar(1.0), DType::Float32);
    ValueList mixed = call("aten::native_layer_norm", {x, ints({4}), w, Value(), 1e-5});
    QCOMPARE(mixed[0].to_tensor().dtype(), DType::BFloat16);
    QCOMPARE(mixed[2].to_tensor().dtype(), DType::Float32);
    QCOMPARE(mixed[2].to_tensor().sizes(), (Shape{2, 3, 1}));
    QVERIFY(error_of("aten::native_layer_norm", {x, ints({3}), Value(), Value(), 1e-5})
                .contains("Given normalized_shape=[3], expected input with shape [*, 3]"));
    QVERIFY(error_of("aten::native_layer_norm", {x, ints({4}), Tensor::zeros({3}, DType::Float32), Value(), 1e-5})
                .contains("Expected weight to be of same shape as normalized_shape"));
    auto meta = call_meta("aten::native_layer_norm", {Tensor::meta({5, 6}, DType::Float32), ints({6}), Value(), Value(), 1e-5});
    QVERIFY(meta.ok());
    QCOMPARE((*meta)[2].to_tensor().sizes(), (Shape{5, 1}));
  }

  void layer_norm_backward() {
    Tensor x = randn({3, 5}, 4, DType::Float64), w = randn({5}, 5, DType::Float64), b = randn({5}, 6, DType::Float64);
    Tensor g = randn({3, 5}, 7, DType::Float64);
    ValueList fwd = call("aten::native_layer_norm", {x, ints({5}), w, b, 1e-5});
    ValueList bwd = call("aten::native_layer_norm_backward",
                         {g, x, ints({5}), fwd[1], fwd[2], w, b, Value::int_list({1, 1, 1})});
    std::vector<double> gv = values(g);
    auto dx = numeric_grad(x, gv, [&](const Tensor& t) { return call1("aten::native_layer_norm", {t, ints({5}), w, b, 1e-5}); });
    expect_close(values(bwd[0].to_tensor()), dx, 1e-5);
    auto dw = numeric_grad(w, gv, [&](const Tensor& t) { return call1("aten::native_layer_norm", {x, ints({5}), t, b, 1e-5}); });
    expect_close(values(bwd[1].to_tensor()), dw, 1e-5);
    auto db = numeric_grad(b, gv, [&](const Tensor& t) { return call1("aten::native_layer_norm", {x, ints({5}), w, t, 1e-5}); });
    expect_close(values(bwd[2].to_tensor()), db, 1e-5);
    ValueList only_dx = call("aten::native_layer_norm_backward",
                             {g, x, ints({5}), fwd[1], fwd[2], w, b, Value::int_list({1, 0, 0})});
    QVERIFY(only_dx[1].is_none());
  }

  void batch_norm_training() {
    Tensor x = randn({4, 3, 5}, 8);
    Tensor w = Tensor::from_vector<float>({1, 2, -1}, {3}), b = Tensor::from_vector<float>({0, 0.5, 1}, {3});
    Tensor rm = Tensor::zeros({3}, DType::Float32), rv = Tensor::full({3}, Scalar(1.0), DType::Float32);
    ValueList r = call("aten::native_batch_norm", {x, w, b, rm, rv, true, 0.1, 1e-5});
    // Per-channel statistics over dims 0 and 2, by hand.
    std::vector<double> xv = values(x), mean(3, 0), var(3, 0);
    for (size_t i = 0; i < xv.size(); ++i) mean[(i / 5) % 3] += xv[i] / 20;
    for (size_t i = 0; i < xv.size(); ++i) var[(i / 5) % 3] += (xv[i] - mean[(i / 5) % 3]) * (xv[i] - mean[(i / 5) % 3]) / 20;
    KILN_COMPARE_VALUES(r[1].to_tensor(), mean);
    std::vector<double> invstd, run_mean, run_var, want;
    for (int c = 0; c < 3; ++c) {
      invstd.push_back(1 / std::sqrt(var[size_t(c)] + 1e-5));
      run_mean.push_back(0.1 * mean[size_t(c)]);
      run_var.push_back(0.9 + 0.1 * var[size_t(c)] * 20 / 19);
    }
    KILN_COMPARE_VALUES(r[2].to_tensor(), invstd);
    KILN_COMPARE_VALUES(rm, run_mean);  // updated in place, with the unbiased variance
    KILN_COMPARE_VALUES(rv, run_var);
    std::vector<double> wv = values(w), bv = values(b);
    for (size_t i = 0; i < xv.size(); ++i) {
      size_t c = (i / 5) % 3;
      want.push_back((xv[i] - mean[c]) * invstd[c] * wv[c] + bv[c]);
    }
    KILN_COMPARE_VALUES(r[0].to_tensor(), want);
    // _native_batch_norm_legit is the same op with mandatory running stats; no_stats has none.
    ValueList legit = call("aten::_native_batch_norm_legit.no_stats", {x, w, b, true, 0.1, 1e-5});
    KILN_COMPARE_VALUES(legit[0].to_tensor(), want);
  }

  void batch_norm_eval() {
    Tensor x = arange_f32({2, 2, 2});
    Tensor rm = Tensor::from_vector<float>({1, 2}, {2}), rv = Tensor::from_vector<float>({4, 9}, {2});
    ValueList r = call("aten::_native_batch_norm_legit_no_training", {x, Value(), Value(), rm, rv, 0.1, 0.0});
    KILN_COMPARE_VALUES(r[0].to_tensor(), {-0.5, 0, 0, 1.0 / 3, 1.5, 2, 4.0 / 3, 5.0 / 3});
    QCOMPARE(r[1].to_tensor().sizes(), (Shape{0}));
    KILN_COMPARE_VALUES(rm, {1, 2});  // untouched in evaluation
    Tensor composite = call1("aten::batch_norm", {x, Value(), Value(), rm, rv, false, 0.1, 0.0, true});
    KILN_COMPARE_VALUES(composite, values(r[0].to_tensor()));
    QVERIFY(error_of("aten::native_batch_norm", {x, Value(), Value(), Value(), Value(), false, 0.1, 1e-5})
                .contains("running_mean must be defined in evaluation mode"));
    QVERIFY(error_of("aten::native_batch_norm", {x, Tensor::zeros({3}, DType::Float32), Value(), rm, rv, false, 0.1, 1e-5})
                .contains("weight should contain 2 elements not 3"));
  }

  void batch_norm_backward() {
    Tensor x = randn({3, 2, 4}, 9, DType::Float64), w = randn({2}, 10, DType::Float64);
    Tensor g = randn({3, 2, 4}, 11, DType::Float64);
    ValueList fwd = call("aten::native_batch_norm", {x, w, Value(), Value(), Value(), true, 0.1, 1e-5});
    ValueList bwd = call("aten::native_batch_norm_backward", {g, x, w, Value(), Value(), fwd[1], fwd[2], true, 1e-5,
                                                              Value::int_list({1, 1, 1})});
    std::vector<double> gv = values(g);
    auto dx = numeric_grad(x, gv, [&](const Tensor& t) {
      return call1("aten::native_batch_norm", {t, w, Value(), Value(), Value(), true, 0.1, 1e-5});
    });
    expect_close(values(bwd[0].to_tensor()), dx, 1e-5);
    auto dw = numeric_grad(w, gv, [&](const Tensor& t) {
      return call1("aten::native_batch_norm", {x, t, Value(), Value(), Value(), true, 0.1, 1e-5});
    });
    expect_close(values(bwd[1].to_tensor()), dw, 1e-5);
    std::vector<double> db(2, 0.0);
    for (size_t i = 0; i < gv.size(); ++i) db[(i / 4) % 2] += gv[i];
    expect_close(values(bwd[2].to_tensor()), db, 1e-9);
  }

  // Batch norm's statistics and backward sums accumulate in double, so the float32 mean, invstd
  // and bias gradient are the float64 ones rounded once. A float32 running sum over these 32768
  // elements a channel (offset input) drifts to ~1e-6; PyTorch's CPU kernel (float32 vector sums
  // a plane, double across planes) lands in between. The weight gradient reads the saved float32
  // mean, whose rounding shifts every xhat alike: PyTorch 1.13 is up to ~7e-6 off on such data.
  void batch_norm_float32_matches_float64() {
    std::vector<double> xv = values(randn({8, 4, 64, 64}, 12));
    for (double& v : xv) v = double(float(0.1 * v + 3.0));
    Tensor x32 = Tensor::from_vector(xv, {8, 4, 64, 64}).to(DType::Float32);
    Tensor g32 = randn({8, 4, 64, 64}, 13), w32 = randn({4}, 14), b32 = randn({4}, 15);
    auto run = [&](DType dt) {
      Tensor x = x32.to(dt), g = g32.to(dt), w = w32.to(dt), b = b32.to(dt);
      ValueList fwd = call("aten::native_batch_norm", {x, w, b, Value(), Value(), true, 0.1, 1e-5});
      ValueList bwd = call("aten::native_batch_norm_backward", {g, x, w, Value(), Value(), fwd[1], fwd[2], true, 1e-5,
                                                                Value::int_list({1, 1, 1})});
      return std::vector<std::vector<double>>{values(fwd[1].to_tensor()), values(fwd[2].to_tensor()),
                                              values(bwd[1].to_tensor()), values(bwd[2].to_tensor())};
    };
    auto f32 = run(DType::Float32), f64 = run(DType::Float64);
    const char* names[] = {"mean", "invstd", "grad_weight", "grad_bias"};
    const double tol[] = {2e-7, 2e-7, 2e-5, 2e-7};
    for (size_t k = 0; k < 4; ++k)
      for (size_t c = 0; c < 4; ++c) {
        double got = f32[k][c], want = f64[k][c];
        if (!(std::abs(got - want) <= tol[k] * std::abs(want)))
          QFAIL(qPrintable(QString("%1[%2]: float32 %3, float64 %4").arg(names[k]).arg(c).arg(got, 0, 'g', 12).arg(want, 0, 'g', 12)));
      }
  }

  void group_norm() {
    Tensor x = randn({2, 4, 3}, 12);
    Tensor w = Tensor::from_vector<float>({1, 2, 3, 4}, {4}), b = Tensor::from_vector<float>({0, 0, 1, 1}, {4});
    ValueList r = call("aten::native_group_norm", {x, w, b, int64_t(2), int64_t(4), int64_t(3), int64_t(2), 1e-5});
    QCOMPARE(r[1].to_tensor().sizes(), (Shape{2, 2}));
    auto [mean, var] = row_stats(values(x), 6);
    KILN_COMPARE_VALUES(r[1].to_tensor(), mean);
    std::vector<double> xv = values(x), want, wv = values(w), bv = values(b);
    for (size_t i = 0; i < xv.size(); ++i) {
      size_t c = (i / 3) % 4, g = i / 6;
      want.push_back((xv[i] - mean[g]) / std::sqrt(var[g] + 1e-5) * wv[c] + bv[c]);
    }
    KILN_COMPARE_VALUES(r[0].to_tensor(), want);
    KILN_COMPARE_VALUES(call1("aten::group_norm", {x, int64_t(2), w, b}), want);
    QVERIFY(error_of("aten::group_norm", {x, int64_t(3)}).contains("divisible by num_groups"));
  }
};

QTEST_MAIN(TestOpsNormalization)
#include "test_ops_normalization.moc"
