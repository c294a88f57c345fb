#include "test_support.h"

#include <limits>

#include "core/ops/kernel_util.h"

using namespace kiln;
using kiln::test::arange_f32;
using kiln::test::call;
using kiln::test::call1;
using kiln::test::values;

namespace {

QString error_of(std::string_view op, const ValueList& args) {
  auto r = call_op(op, args);
  return r ? QString() : QString::fromStdString(r.status().message());
}

Tensor f32(std::vector<float> v, Shape s) { return Tensor::from_vector(v, std::move(s)); }
Tensor i64(std::vector<int64_t> v, Shape s) { return Tensor::from_vector(v, std::move(s)); }

double sum_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

// log_softmax over the class dim (1, or 0 for 1-D) of a [N, C, S...] list, by hand.
std::vector<double> log_softmax_ref(const std::vector<double>& x, size_t N, size_t C, size_t S) {
  std::vector<double> out(x.size());
  for (size_t n = 0; n < N; ++n)
    for (size_t s = 0; s < S; ++s) {
      double m = -1e300, sum = 0;
      for (size_t c = 0; c < C; ++c) m = std::max(m, x[(n * C + c) * S + s]);
      for (size_t c = 0; c < C; ++c) sum += std::exp(x[(n * C + c) * S + s] - m);
      for (size_t c = 0; c < C; ++c) out[(n * C + c) * S + s] = x[(n * C + c) * S + s] - m - std::log(sum);
    }
  return out;
}

}  // namespace

class TestOpsLoss : public QObject {
  Q_OBJECT
 private slots:
  void mse_and_l1() {
    Tensor x = f32({1, 2, 3, 4}, {2, 2}), t = f32({0, 2, 5, 3}, {2, 2});
    KILN_COMPARE_VALUES(call1("aten::mse_loss", {x, t}), {1.5});  // default reduction=Mean
    KILN_COMPARE_VALUES(call1("aten::mse_loss", {x, t, int64_t(2)}), {6});
    Tensor none = call1("aten::mse_loss", {x, t, int64_t(0)});
    QCOMPARE(none.sizes(), (Shape{2, 2}));
    KILN_COMPARE_VALUES(none, {1, 0, 4, 1});
    // Broadcast target.
    KILN_COMPARE_VALUES(call1("aten::mse_loss", {x, f32({1, 2}, {2}), int64_t(0)}), {0, 0, 4, 4});
    KILN_COMPARE_VALUES(call1("aten::l1_loss", {x, t}), {1});
    Tensor h = call1("aten::mse_loss", {x.to(DType::Float16), t.to(DType::Float16)});
    QCOMPARE(h.dtype(), DType::Float16);
    QVERIFY(error_of("aten::mse_loss", {x, t, int64_t(3)}).contains("not a valid value for reduction"));
    QVERIFY(error_of("aten::mse_loss", {i64({1}, {1}), i64({2}, {1})}).contains("floating"));
    auto meta = call_meta("aten::mse_loss", {Tensor::meta({3, 4}, DType::Float32), Tensor::meta({4}, DType::Float32), int64_t(0)});
    QVERIFY(meta.ok());
    QCOMPARE((*meta)[0].to_tensor().sizes(), (Shape{3, 4}));
  }

  void smooth_losses() {
    Tensor x = f32({0, 0, 0, 0}, {4}), t = f32({0.5, -1, 2, -3}, {4});
    // beta = 1: 0.5 d^2 below 1, else d - 0.5.
    KILN_COMPARE_VALUES(call1("aten::smooth_l1_loss", {x, t, int64_t(0)}), {0.125, 0.5, 1.5, 2.5});
    KILN_COMPARE_VALUES(call1("aten::smooth_l1_loss", {x, t, int64_t(0), 2.0}), {0.0625, 0.25, 1, 2});
    KILN_COMPARE_VALUES(call1("aten::smooth_l1_loss", {x, t, int64_t(0), 0.0}), {0.5, 1, 2, 3});
    KILN_COMPARE_VALUES(call1("aten::huber_loss", {x, t, int64_t(0), 2.0}), {0.125, 0.5, 2, 4});
    KILN_COMPARE_VALUES(call1("aten::huber_loss", {x, t, int64_t(2)}), {0.125 + 0.5 + 1.5 + 2.5});
  }

  void binary_cross_entropy() {
    Tensor p = f32({0.9f, 0.2f, 0.0f}, {3}), y = f32({1, 0, 1}, {3});
    // log(0) clamps at -100.
    std::vector<double> want = {-std::log(double(0.9f)), -std::log1p(-double(0.2f)), 100};
    KILN_COMPARE_VALUES(call1("aten::binary_cross_entropy", {p, y, Value(), int64_t(0)}), want);
    Tensor w = f32({1, 2, 0.5}, {3});
    KILN_COMPARE_VALUES(call1("aten::binary_cross_entropy", {p, y, w, int64_t(2)}),
                        {want[0] + 2 * want[1] + 0.5 * want[2]});
    QVERIFY(error_of("aten::binary_cross_entropy", {f32({1.5f}, {1}), f32({1}, {1})})
                .contains("all elements of input should be between 0 and 1"));
    Tensor logits = f32({2, -1, 0}, {3});
    auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
    std::vector<double> l = values(logits), yv = values(y), bce;
    for (size_t i = 0; i < 3; ++i) bce.push_back(-(yv[i] * std::log(sig(l[i])) + (1 - yv[i]) * std::log(1 - sig(l[i]))));
    KILN_COMPARE_VALUES(call1("aten::binary_cross_entropy_with_logits", {logits, y, Value(), Value(), int64_t(0)}), bce);
    Tensor pw = f32({3}, {1});
    std::vector<double> bce_pw;
    for (size_t i = 0; i < 3; ++i)
      bce_pw.push_back(-(3 * yv[i] * std::log(sig(l[i])) + (1 - yv[i]) * std::log(1 - sig(l[i]))));
    KILN_COMPARE_VALUES(call1("aten::binary_cross_entropy_with_logits", {logits, y, Value(), pw, int64_t(0)}), bce_pw);
  }

  void kl_div() {
    Tensor lp = f32({std::log(0.25f), std::log(0.75f)}, {2}), t = f32({0.5, 0.5}, {2});
    double want = 0.5 * (std::log(0.5) - std::log(0.25)) + 0.5 * (std::log(0.5) - std::log(0.75));
    KILN_COMPARE_VALUES(call1("aten::kl_div", {lp, t, int64_t(2)}), {want});
    KILN_COMPARE_VALUES(call1("aten::kl_div", {lp, t.to(DType::Float32), int64_t(2)}, {{"log_target", false}}), {want});
    Tensor lt = f32({std::log(0.5f), std::log(0.5f)}, {2});
    KILN_COMPARE_VALUES(call1("aten::kl_div", {lp, lt, int64_t(2)}, {{"log_target", true}}), {want});
    KILN_COMPARE_VALUES(call1("aten::kl_div", {lp, f32({0, 1}, {2}), int64_t(0)}), {0, -std::log(0.75)});
  }

  void nll_loss_forward() {
    Tensor x = f32({-1, -2, -3, -0.5, -1.5, -2.5, -4, -5, -6}, {3, 3});
    Tensor t = i64({0, 2, 1}, {3}), w = f32({1, 2, 3}, {3});
    ValueList mean = call("aten::nll_loss_forward", {x, t, Value(), int64_t(1), int64_t(-100)});
    KILN_COMPARE_VALUES(mean[0].to_tensor(), {(1 + 2.5 + 5) / 3.0});
    KILN_COMPARE_VALUES(mean[1].to_tensor(), {3});
    ValueList weighted = call("aten::nll_loss_forward", {x, t, w, int64_t(1), int64_t(2)});  // target 2 ignored
    KILN_COMPARE_VALUES(weighted[0].to_tensor(), {(1 * 1 + 2 * 5) / 3.0});
    KILN_COMPARE_VALUES(weighted[1].to_tensor(), {3});
    ValueList none = call("aten::nll_loss_forward", {x, t, w, int64_t(0), int64_t(-100)});
    KILN_COMPARE_VALUES(none[0].to_tensor(), {1, 7.5, 10});
    KILN_COMPARE_VALUES(none[1].to_tensor(), {0});
    KILN_COMPARE_VALUES(call("aten::nll_loss_forward", {x, t, Value(), int64_t(2), int64_t(-100)})[0].to_tensor(), {8.5});
    // 1-D input with a 0-dim target.
    ValueList one = call("aten::nll_loss_forward", {f32({-1, -2}, {2}), Tensor::scalar_tensor(int64_t(1), DType::Int64),
                                                    Value(), int64_t(1), int64_t(-100)});
    KILN_COMPARE_VALUES(one[0].to_tensor(), {2});
    // Everything ignored: mean is 0/0.
    ValueList all_ignored = call("aten::nll_loss_forward", {x, i64({-100, -100, -100}, {3}), Value(), int64_t(1), int64_t(-100)});
    QVERIFY(std::isnan(all_ignored[0].to_tensor().item().to_double()));
    QVERIFY(error_of("aten::nll_loss_forward", {x, i64({0, 3, 1}, {3}), Value(), int64_t(1), int64_t(-100)})
                .contains("Target 3 is out of bounds."));
    QVERIFY(error_of("aten::nll_loss_forward", {x, i64({0, 1}, {2}), Value(), int64_t(1), int64_t(-100)})
                .contains("size mismatch"));
    KILN_COMPARE_VALUES(call1("aten::nll_loss", {x, t}), {8.5 / 3});
  }

  void nll_loss_spatial_and_nd() {
    Tensor x = arange_f32({2, 3, 2, 2}, -1, -0.25f);  // [N, C, H, W]
    Tensor t = i64({0, 1, 2, 0, 2, 2, 1, 0}, {2, 2, 2});
    std::vector<double> xv = values(x), tv = values(t), per;
    for (size_t n = 0; n < 2; ++n)
      for (size_t s = 0; s < 4; ++s) per.push_back(-xv[(n * 3 + size_t(tv[n * 4 + s])) * 4 + s]);
    ValueList r = call("aten::nll_loss2d_forward", {x, t, Value(), int64_t(0), int64_t(-100)});
    QCOMPARE(r[0].to_tensor().sizes(), (Shape{2, 2, 2}));
    KILN_COMPARE_VALUES(r[0].to_tensor(), per);
    KILN_COMPARE_VALUES(call1("aten::nll_loss2d", {x, t}), {sum_of(per) / 8});
    // A 3-D input goes through the 2d kernel.
    Tensor x3 = x.reshape({2, 3, 4}), t3 = t.reshape({2, 4});
    Tensor nd = call1("aten::nll_loss_nd", {x3, t3, Value(), int64_t(0)});
    QCOMPARE(nd.sizes(), (Shape{2, 4}));
    KILN_COMPARE_VALUES(nd, per);
    KILN_COMPARE_VALUES(call1("aten::nll_loss_nd", {x3, t3}), {sum_of(per) / 8});
  }

  void cross_entropy() {
    Tensor x = f32({1, 2, 3, 0.5, -1, 2}, {2, 3});
    Tensor t = i64({2, 0}, {2});
    std::vector<double> lp = log_softmax_ref(values(x), 2, 3, 1);
    KILN_COMPARE_VALUES(call1("aten::cross_entropy_loss", {x, t}), {-(lp[2] + lp[3]) / 2});
    // Probability targets.
    Tensor pt = f32({0.2f, 0.3f, 0.5f, 1, 0, 0}, {2, 3});
    std::vector<double> ptv = values(pt);
    double soft = 0;
    for (size_t i = 0; i < 6; ++i) soft -= lp[i] * ptv[i];
    KILN_COMPARE_VALUES(call1("aten::cross_entropy_loss", {x, pt}), {soft / 2});
    // Label smoothing 0.1: (1 - 0.1) * nll + 0.1 / C * mean(-sum_c log p).
    double smooth = -(lp[0] + lp[1] + lp[2] + lp[3] + lp[4] + lp[5]) / 2;
    double want = 0.9 * (-(lp[2] + lp[3]) / 2) + 0.1 / 3 * smooth;
    KILN_COMPARE_VALUES(call1("aten::cross_entropy_loss", {x, t, Value(), int64_t(1), int64_t(-100), 0.1}), {want});
    Tensor none = call1("aten::cross_entropy_loss", {x, t, Value(), int64_t(0)});
    KILN_COMPARE_VALUES(none, {-lp[2], -lp[3]});
    QVERIFY(error_of("aten::cross_entropy_loss", {x, t, Value(), int64_t(1), int64_t(-100), 1.5})
                .contains("label_smoothing must be between 0.0 and 1.0"));
    auto meta = call_meta("aten::cross_entropy_loss", {Tensor::meta({4, 5, 6}, DType::Float32),
                                                       Tensor::meta({4, 6}, DType::Int64), Value(), int64_t(0)});
    QVERIFY(meta.ok());
    QCOMPARE((*meta)[0].to_tensor().sizes(), (Shape{4, 6}));
  }

  void backward_kernels() {
    Tensor x = f32({1, 2, 3, 4}, {2, 2}), t = f32({0, 2, 5, 3}, {2, 2});
    Tensor g = Tensor::scalar_tensor(1.0, DType::Float32);
    KILN_COMPARE_VALUES(call1("aten::mse_loss_backward", {g, x, t, int64_t(1)}), {0.5, 0, -1, 0.5});
    Tensor lx = f32({-1, -2, -3, -0.5, -1.5, -2.5}, {2, 3});
    Tensor lt = i64({2, 0}, {2}), w = f32({1, 2, 3}, {3});
    ValueList fwd = call("aten::nll_loss_forward", {lx, lt, w, int64_t(1), int64_t(-100)});
    Tensor gi = call1("aten::nll_loss_backward", {g, lx, lt, w, int64_t(1), int64_t(-100), fwd[1]});
    KILN_COMPARE_VALUES(gi, {0, 0, -3.0 / 4, -1.0 / 4, 0, 0});
  }
};

QTEST_MAIN(TestOpsLoss)
#include "test_ops_loss.moc"
