// The scaled-dot-product-attention kernels (core/ops/attention.cpp) against a
// float64 reference built from plain ops (matmul, softmax, sum): forward
// output and logsumexp, backward gradients (grad_bias too), causal masks,
// additive and bool masks broadcast over batch and heads, grouped query
// attention, L != S and E != Ev; PyTorch's output layouts and dtypes; and bad
// input refused with a message naming the op. The cuDNN pair is checked
// against the layouts PyTorch 2.11's AOT dumps annotate on an H200.
#include "test_support.h"

#include <cmath>
#include <limits>
#include <random>

#include "core/ops/kernel_util.h"

using namespace kiln;
using kiln::test::call;
using kiln::test::call1;
using kiln::test::values;

namespace {

const double kInf = std::numeric_limits<double>::infinity();
const char* const kForCpu = "aten::_scaled_dot_product_flash_attention_for_cpu";
const char* const kForCpuBwd = "aten::_scaled_dot_product_flash_attention_for_cpu_backward";
const char* const kEff = "aten::_scaled_dot_product_efficient_attention";
const char* const kEffBwd = "aten::_scaled_dot_product_efficient_attention_backward";
const char* const kFlash = "aten::_scaled_dot_product_flash_attention";
const char* const kFlashBwd = "aten::_scaled_dot_product_flash_attention_backward";
const char* const kCudnn = "aten::_scaled_dot_product_cudnn_attention";
const char* const kCudnnBwd = "aten::_scaled_dot_product_cudnn_attention_backward";

Tensor randn(Shape sizes, uint32_t seed, DType dtype = DType::Float64) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> dist(0.0, 1.0);
  std::vector<double> v(size_t(shape_numel(sizes)));
  for (double& f : v) f = dist(gen);
  return Tensor::from_vector(v, std::move(sizes)).to(dtype);
}

void expect_close(const Tensor& got, const Tensor& want, double tol, const char* what) {
  QVERIFY2(got.sizes() == want.sizes(),
           qPrintable(QString("%1: shape %2, want %3")
                          .arg(what, QString::fromStdString(shape_str(got.sizes())),
                               QString::fromStdString(shape_str(want.sizes())))));
  std::vector<double> g = values(got), w = values(want);
  for (size_t i = 0; i < g.size(); ++i) {
    bool ok = (std::isinf(w[i]) && g[i] == w[i]) || std::abs(g[i] - w[i]) <= tol * (1 + std::abs(w[i]));
    if (!ok)
      QFAIL(qPrintable(QString("%1: element %2: got %3, want %4").arg(what).arg(i).arg(g[i], 0, 'g', 15).arg(w[i], 0, 'g', 15)));
  }
}

QString error_of(std::string_view op, const ValueList& args, const KwargList& kwargs = {}) {
  auto r = call_op(op, args, kwargs);
  return r ? QString() : QString::fromStdString(r.status().message());
}

// ---- the reference, from plain ops in float64 ----

struct Case {
  Tensor q, k, v, mask;  // mask: additive float or bool, broadcastable; undefined for none
  bool causal = false;
  std::optional<double> scale;
};

// key/value heads repeated for grouped query attention: [B, Hk, S, X] -> [B, Hq, S, X].
Tensor repeat_heads(const Tensor& t, int64_t hq) {
  const int64_t g = hq / t.size(1);
  if (g == 1) return t;
  Tensor u = call1("aten::unsqueeze", {t, int64_t(2)});
  Tensor e = call1("aten::expand", {u, Value::int_list({t.size(0), t.size(1), g, t.size(2), t.size(3)})});
  return call1("aten::reshape", {e, Value::int_list({t.size(0), hq, t.size(2), t.size(3)})});
}
// The gradient of repeat_heads: the group summed back.
Tensor sum_heads(const Tensor& t, int64_t hk) {
  const int64_t g = t.size(1) / hk;
  if (g == 1) return t;
  Tensor r = call1("aten::reshape", {t, Value::int_list({t.size(0), hk, g, t.size(2), t.size(3)})});
  return call1("aten::sum.dim_IntList", {r, Value::int_list({2}), false});
}

// The float64 mask over [L, S] scores: additive, bool (-inf where false), causal.
Tensor mask_f64(const Case& c, int64_t L, int64_t S) {
  Tensor m = Tensor::zeros({L, S}, DType::Float64);
  if (c.causal) {
    std::vector<double> v(size_t(L * S));
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < S; ++j) v[size_t(i * S + j)] = j > i ? -kInf : 0.0;
    m = Tensor::from_vector(v, {L, S});
  }
  if (c.mask.defined()) {
    Tensor add = c.mask.dtype() == DType::Bool
                     ? call1("aten::where.Scalar", {call1("aten::logical_not", {c.mask}), -kInf, 0.0})
                     : c.mask.to(DType::Float64);
    m = call1("aten::add.Tensor", {m, add});
  }
  return m;
}

struct Ref {
  Tensor out, lse, p, scores;
  Tensor kk, vv;  // key and value with repeated heads
  double scale;
};

Ref reference(const Case& c) {
  Ref r;
  const Tensor q = c.q.to(DType::Float64);
  r.kk = repeat_heads(c.k.to(DType::Float64), q.size(1));
  r.vv = repeat_heads(c.v.to(DType::Float64), q.size(1));
  r.scale = c.scale ? *c.scale : 1.0 / std::sqrt(double(q.size(3)));
  Tensor s = call1("aten::matmul", {q, call1("aten::transpose.int", {r.kk, int64_t(-2), int64_t(-1)})});
  s = call1("aten::mul.Scalar", {s, r.scale});
  s = call1("aten::add.Tensor", {s, mask_f64(c, q.size(2), r.kk.size(2))});
  r.scores = s;
  r.p = call1("aten::_softmax", {s, int64_t(-1), false});
  r.out = call1("aten::matmul", {r.p, r.vv});
  r.lse = call1("aten::logsumexp", {s, Value::int_list({-1}), false});
  return r;
}

struct RefGrads {
  Tensor dq, dk, dv, dscores;
};

// dV = P^T dO, dP = dO V^T, dS = P (dP - rowsum(dP P)), dQ = scale dS K, dK = scale dS^T Q.
RefGrads reference_grads(const Case& c, const Ref& r, const Tensor& dout) {
  RefGrads g;
  const Tensor q = c.q.to(DType::Float64), go = dout.to(DType::Float64);
  auto t = [](const Tensor& x) { return call1("aten::transpose.int", {x, int64_t(-2), int64_t(-1)}); };
  Tensor dv = call1("aten::matmul", {t(r.p), go});
  Tensor dp = call1("aten::matmul", {go, t(r.vv)});
  Tensor row = call1("aten::sum.dim_IntList", {call1("aten::mul.Tensor", {dp, r.p}), Value::int_list({-1}), true});
  Tensor ds = call1("aten::mul.Tensor", {r.p, call1("aten::sub.Tensor", {dp, row})});
  g.dscores = ds;
  g.dq = call1("aten::mul.Scalar", {call1("aten::matmul", {ds, r.kk}), r.scale});
  Tensor dk = call1("aten::mul.Scalar", {call1("aten::matmul", {t(ds), q}), r.scale});
  g.dk = sum_heads(dk, c.k.size(1));
  g.dv = sum_heads(dv, c.k.size(1));
  return g;
}

KwargList for_cpu_kwargs(const Case& c) {
  KwargList kw;
  if (c.mask.defined()) kw.emplace_back("attn_mask", c.mask);
  if (c.scale) kw.emplace_back("scale", *c.scale);
  return kw;
}

std::vector<Case> cases() {
  std::vector<Case> cs;
  // L != S, E != Ev
  cs.push_back({randn({2, 3, 4, 5}, 1), randn({2, 3, 6, 5}, 2), randn({2, 3, 6, 7}, 3), Tensor(), false, {}});
  // causal, square, custom scale
  cs.push_back({randn({1, 2, 5, 4}, 4), randn({1, 2, 5, 4}, 5), randn({1, 2, 5, 4}, 6), Tensor(), true, 0.3});
  // causal with L < S (top-left aligned: row m sees keys 0..m)
  cs.push_back({randn({2, 1, 3, 4}, 7), randn({2, 1, 6, 4}, 8), randn({2, 1, 6, 3}, 9), Tensor(), true, {}});
  // additive mask broadcast over batch and heads ([L, S])
  cs.push_back({randn({2, 2, 3, 4}, 10), randn({2, 2, 5, 4}, 11), randn({2, 2, 5, 4}, 12), randn({3, 5}, 13), false, {}});
  // additive mask per head, broadcast over batch and query rows ([1, H, 1, S])
  cs.push_back({randn({2, 3, 4, 2}, 14), randn({2, 3, 5, 2}, 15), randn({2, 3, 5, 6}, 16), randn({1, 3, 1, 5}, 17), false, 1.5});
  // grouped query attention (4 query heads over 2 key/value heads) with a mask and causality
  cs.push_back({randn({2, 4, 5, 3}, 18), randn({2, 2, 5, 3}, 19), randn({2, 2, 5, 4}, 20), randn({2, 1, 5, 5}, 21), true, {}});
  return cs;
}

}  // namespace

class TestOpsAttention : public QObject {
  Q_OBJECT
 private slots:
  void for_cpu_forward_matches_matmul_softmax() {
    for (const Case& c : cases()) {
      Ref r = reference(c);
      ValueList out = call(kForCpu, {c.q, c.k, c.v, 0.0, c.causal}, for_cpu_kwargs(c));
      QCOMPARE(out.size(), size_t(2));
      expect_close(out[0].to_tensor(), r.out, 1e-12, "output");
      expect_close(out[1].to_tensor(), r.lse, 1e-12, "logsumexp");
    }
  }

  void bool_mask_keeps_where_true() {
    Case c{randn({1, 2, 3, 4}, 30), randn({1, 2, 5, 4}, 31), randn({1, 2, 5, 4}, 32), Tensor(), false, {}};
    std::vector<double> keep{1, 0, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 0, 1, 0};
    c.mask = Tensor::from_vector(keep, {3, 5}).to(DType::Bool);
    Ref r = reference(c);
    ValueList out = call(kForCpu, {c.q, c.k, c.v}, for_cpu_kwargs(c));
    expect_close(out[0].to_tensor(), r.out, 1e-12, "output");
    expect_close(out[1].to_tensor(), r.lse, 1e-12, "logsumexp");
  }

  void for_cpu_backward_matches_reference() {
    for (const Case& c : cases()) {
      Ref r = reference(c);
      Tensor dout = randn(r.out.sizes(), 99);
      RefGrads want = reference_grads(c, r, dout);
      KwargList kw = for_cpu_kwargs(c);
      ValueList g = call(kForCpuBwd, {dout, c.q, c.k, c.v, r.out, r.lse, 0.0, c.causal}, kw);
      QCOMPARE(g.size(), size_t(3));
      expect_close(g[0].to_tensor(), want.dq, 1e-11, "grad_query");
      expect_close(g[1].to_tensor(), want.dk, 1e-11, "grad_key");
      expect_close(g[2].to_tensor(), want.dv, 1e-11, "grad_value");
    }
  }

  // float32 operands: float32 results within float32 rounding of the float64
  // reference, PyTorch's layouts ([B, L, H, E] storage) and a float32 logsumexp.
  void for_cpu_float32_layouts_and_dtypes() {
    Case c{randn({2, 3, 4, 5}, 40, DType::Float32), randn({2, 3, 6, 5}, 41, DType::Float32),
           randn({2, 3, 6, 5}, 42, DType::Float32), Tensor(), true, {}};
    Ref r = reference(c);
    ValueList out = call(kForCpu, {c.q, c.k, c.v, 0.0, true});
    const Tensor& o = out[0].to_tensor();
    const Tensor& l = out[1].to_tensor();
    QCOMPARE(o.dtype(), DType::Float32);
    QCOMPARE(l.dtype(), DType::Float32);
    QCOMPARE(o.strides(), (Shape{4 * 3 * 5, 5, 3 * 5, 1}));
    QCOMPARE(l.strides(), (Shape{4 * 3, 1, 3}));
    expect_close(o, r.out, 2e-7, "output");
    expect_close(l, r.lse, 2e-7, "logsumexp");
    ValueList meta = call_meta(kForCpu, {c.q, c.k, c.v, 0.0, true}).value();
    QCOMPARE(meta[0].to_tensor().strides(), o.strides());
    Tensor dout = randn(o.sizes(), 43, DType::Float32);
    ValueList g = call(kForCpuBwd, {dout, c.q, c.k, c.v, o, l, 0.0, true});
    QCOMPARE(g[0].to_tensor().dtype(), DType::Float32);
    QCOMPARE(g[1].to_tensor().strides(), (Shape{6 * 3 * 5, 5, 3 * 5, 1}));
    RefGrads want = reference_grads(c, r, dout);
    expect_close(g[0].to_tensor(), want.dq, 1e-5, "grad_query");
    expect_close(g[2].to_tensor(), want.dv, 1e-5, "grad_value");
  }

  void efficient_forward_pads_logsumexp() {
    for (const Case& c : cases()) {
      if (c.mask.defined() && c.mask.dtype() == DType::Bool) continue;
      Ref r = reference(c);
      KwargList kw;
      if (c.scale) kw.emplace_back("scale", *c.scale);
      Value bias = c.mask.defined() ? Value(c.mask) : Value();
      ValueList out = call(kEff, {c.q, c.k, c.v, bias, true, 0.0, c.causal}, kw);
      QCOMPARE(out.size(), size_t(4));
      expect_close(out[0].to_tensor(), r.out, 1e-12, "output");
      const Tensor& lse = out[1].to_tensor();
      const int64_t L = c.q.size(2);
      QCOMPARE(lse.sizes(), (Shape{c.q.size(0), c.q.size(1), 32}));
      expect_close(lse.narrow(2, 0, L), r.lse, 1e-12, "logsumexp");
      for (double x : values(lse.narrow(2, L, 32 - L))) QCOMPARE(x, kInf);
      QCOMPARE(out[2].to_tensor().dtype(), DType::Int64);
      QCOMPARE(out[2].to_tensor().dim(), int64_t(0));
      QCOMPARE(out[3].to_tensor().dim(), int64_t(0));
      // Without compute_log_sumexp: [B, H, 0].
      ValueList no_lse = call(kEff, {c.q, c.k, c.v, bias, false, 0.0, c.causal}, kw);
      QCOMPARE(no_lse[1].to_tensor().sizes(), (Shape{c.q.size(0), c.q.size(1), 0}));
    }
    // 33 query rows pad to 64; float32 operands give a float32 logsumexp.
    Tensor q = randn({1, 1, 33, 4}, 50, DType::Float32), k = randn({1, 1, 7, 4}, 51, DType::Float32);
    ValueList out = call(kEff, {q, k, k, Value(), true});
    QCOMPARE(out[1].to_tensor().sizes(), (Shape{1, 1, 64}));
    QCOMPARE(out[1].to_tensor().dtype(), DType::Float32);
  }

  void efficient_backward_with_bias_gradient() {
    for (const Case& c : cases()) {
      if (!c.mask.defined()) continue;
      Ref r = reference(c);
      Tensor dout = randn(r.out.sizes(), 77);
      RefGrads want = reference_grads(c, r, dout);
      KwargList kw{{"scale", r.scale}};
      ValueList fwd = call(kEff, {c.q, c.k, c.v, c.mask, true, 0.0, c.causal}, kw);
      ValueList g = call(kEffBwd, {dout, c.q, c.k, c.v, c.mask, fwd[0], fwd[1], fwd[2], fwd[3], 0.0,
                                   Value(ValueList{true, true, true, true}), c.causal},
                         kw);
      QCOMPARE(g.size(), size_t(4));
      expect_close(g[0].to_tensor(), want.dq, 1e-11, "grad_query");
      expect_close(g[1].to_tensor(), want.dk, 1e-11, "grad_key");
      expect_close(g[2].to_tensor(), want.dv, 1e-11, "grad_value");
      // grad_bias: the scores' gradient summed to the bias's (broadcast) shape.
      const Tensor& gb = g[3].to_tensor();
      QCOMPARE(gb.sizes(), c.mask.sizes());
      Tensor full = want.dscores;
      const int64_t lead = full.dim() - c.mask.dim();
      std::vector<int64_t> dims;
      for (int64_t i = 0; i < full.dim(); ++i)
        if (i < lead || c.mask.size(i - lead) == 1) dims.push_back(i);
      Tensor want_bias = call1("aten::reshape", {call1("aten::sum.dim_IntList", {full, Value::int_list(dims), true}),
                                                 Value::int_list(c.mask.sizes())});
      expect_close(gb, want_bias, 1e-11, "grad_bias");
      // Rows padded to 16 elements, as the CUDA kernel allocates them.
      QCOMPARE(gb.stride(-2), int64_t(16));
      // Not asked for: None.
      ValueList g2 = call(kEffBwd, {dout, c.q, c.k, c.v, c.mask, fwd[0], fwd[1], fwd[2], fwd[3], 0.0,
                                    Value(ValueList{true, true, true, false}), c.causal},
                          kw);
      QVERIFY(g2[3].is_none());
    }
    // No bias: None in its place, as AOT graphs pass it.
    Case c = cases()[0];
    Ref r = reference(c);
    ValueList fwd = call(kEff, {c.q, c.k, c.v, Value(), true});
    Tensor dout = randn(r.out.sizes(), 78);
    ValueList g = call(kEffBwd, {dout, c.q, c.k, c.v, Value(), fwd[0], fwd[1], fwd[2], fwd[3], 0.0,
                                 Value(ValueList{true, true, true, false})});
    expect_close(g[0].to_tensor(), reference_grads(c, r, dout).dq, 1e-11, "grad_query");
    QVERIFY(g[3].is_none());
  }

  void flash_outputs_as_pytorch_gives_them() {
    // query laid out as [B, L, H, E] (transposed), as models make it: the output follows it.
    Tensor q = randn({2, 5, 3, 4}, 60).transpose(1, 2), k = randn({2, 3, 6, 4}, 61), v = randn({2, 3, 6, 4}, 62);
    Case c{q, k, v, Tensor(), true, {}};
    Ref r = reference(c);
    ValueList out = call(kFlash, {q, k, v, 0.0, true});
    QCOMPARE(out.size(), size_t(9));
    expect_close(out[0].to_tensor(), r.out, 1e-12, "output");
    QCOMPARE(out[0].to_tensor().strides(), q.strides());
    expect_close(out[1].to_tensor(), r.lse, 1e-12, "logsumexp");
    QVERIFY(out[2].is_none());
    QVERIFY(out[3].is_none());
    QCOMPARE(out[4].to_int(), int64_t(5));
    QCOMPARE(out[5].to_int(), int64_t(6));
    QCOMPARE(out[6].to_tensor().sizes(), (Shape{2}));
    QCOMPARE(out[7].to_tensor().dim(), int64_t(0));
    QCOMPARE(out[8].to_tensor().sizes(), (Shape{0}));
    ValueList meta = call_meta(kFlash, {q, k, v, 0.0, true, true}).value();
    QCOMPARE(meta[8].to_tensor().sizes(), (Shape{2, 3, 5, 128}));
    QCOMPARE(meta[1].to_tensor().dtype(), DType::Float64);
    QCOMPARE(call_meta(kFlash, {q.to(DType::Float16), k.to(DType::Float16), v.to(DType::Float16)})
                 .value()[1]
                 .to_tensor()
                 .dtype(),
             DType::Float32);

    Tensor dout = randn(r.out.sizes(), 63);
    RefGrads want = reference_grads(c, r, dout);
    ValueList g = call(kFlashBwd, {dout, q, k, v, out[0], out[1], Value(), Value(), out[4], out[5], 0.0, true,
                                   out[6], out[7]});
    expect_close(g[0].to_tensor(), want.dq, 1e-11, "grad_query");
    expect_close(g[1].to_tensor(), want.dk, 1e-11, "grad_key");
    expect_close(g[2].to_tensor(), want.dv, 1e-11, "grad_value");
    QCOMPARE(g[0].to_tensor().strides(), q.strides());
  }

  void bad_input_is_refused_by_name() {
    Tensor q = randn({1, 2, 3, 4}, 70), k = randn({1, 2, 5, 4}, 71), v = randn({1, 2, 5, 4}, 72);
    auto has = [](const QString& e, const char* op, const char* what) {
      QVERIFY2(e.contains(op) && e.contains(what), qPrintable(e));
    };
    // Wrong ranks.
    has(error_of(kForCpu, {randn({2, 3, 4}, 1), k, v}), "_for_cpu", "expected 4-D");
    has(error_of(kEff, {q, randn({2, 5, 4}, 1), v, Value(), true}), "_efficient_attention", "expected 4-D");
    has(error_of(kFlashBwd, {q, randn({3, 4}, 1), k, v, q, randn({1, 2, 3}, 1), Value(), Value(), 3, 5, 0.0, false,
                             Value(), Value()}),
        "_flash_attention_backward", "expected 4-D");
    // Mismatched head dims, heads, sequence lengths, batch.
    has(error_of(kForCpu, {q, randn({1, 2, 5, 3}, 1), v}), "_for_cpu", "query and key head dims differ");
    has(error_of(kFlash, {q, k, randn({1, 2, 5, 6}, 1)}), "_scaled_dot_product_flash_attention", "same head dim");
    has(error_of(kForCpu, {randn({1, 3, 3, 4}, 1), k, v}), "_for_cpu", "multiple of key/value heads");
    has(error_of(kForCpu, {q, k, randn({1, 2, 4, 4}, 1)}), "_for_cpu", "sequence lengths differ");
    has(error_of(kEff, {q, randn({2, 2, 5, 4}, 1), v, Value(), true}), "_efficient_attention", "batch sizes differ");
    // dropout_p > 0.
    has(error_of(kForCpu, {q, k, v, 0.1}), "_for_cpu", "dropout_p");
    has(error_of(kEff, {q, k, v, Value(), true, 0.2}), "_efficient_attention", "dropout_p");
    has(error_of(kFlash, {q, k, v, 0.5}), "_scaled_dot_product_flash_attention", "dropout_p = 0.5");
    // Masks that do not broadcast, of the wrong dtype; mixed dtypes; integer inputs.
    has(error_of(kForCpu, {q, k, v}, {{"attn_mask", randn({3, 4}, 1)}}), "_for_cpu", "does not broadcast");
    has(error_of(kEff, {q, k, v, Tensor::zeros({3, 5}, DType::Bool), true}), "_efficient_attention", "floating point");
    has(error_of(kForCpu, {q, k.to(DType::Float32), v}), "_for_cpu", "one dtype");
    has(error_of(kForCpu, {q.to(DType::Int64), k.to(DType::Int64), v.to(DType::Int64)}), "_for_cpu", "floating point");
    // A backward with a logsumexp of the wrong shape, grad_out of the wrong shape.
    has(error_of(kForCpuBwd, {q, q, k, v, q, randn({1, 2}, 1), 0.0, false}), "_for_cpu_backward", "logsumexp");
    has(error_of(kForCpuBwd, {k, q, k, v, q, randn({1, 2, 3}, 1), 0.0, false}), "_for_cpu_backward", "grad_out");
    // The debug mask is the CUDA kernel's own.
    has(error_of(kFlash, {q, k, v, 0.0, false, true}), "_scaled_dot_product_flash_attention", "return_debug_mask");
  }
  // The cuDNN forward: output and logsumexp ([B, H, L, 1]) against the
  // reference, additive bias, causal, GQA; the other outputs as PyTorch's meta
  // function gives them.
  void cudnn_forward_matches_matmul_softmax() {
    for (const Case& c : cases()) {
      if (c.mask.defined() && c.mask.dtype() == DType::Bool) continue;
      Ref r = reference(c);
      KwargList kw;
      if (c.scale) kw.emplace_back("scale", *c.scale);
      Value bias = c.mask.defined() ? Value(c.mask) : Value();
      ValueList out = call(kCudnn, {c.q, c.k, c.v, bias, true, 0.0, c.causal}, kw);
      QCOMPARE(out.size(), size_t(9));
      expect_close(out[0].to_tensor(), r.out, 1e-12, "output");
      const Tensor& lse = out[1].to_tensor();
      const Shape lse_shape{c.q.size(0), c.q.size(1), c.q.size(2), 1};
      QCOMPARE(lse.sizes(), lse_shape);
      QCOMPARE(lse.strides(), contiguous_strides(lse_shape));
      expect_close(lse.select(3, 0), r.lse, 1e-12, "logsumexp");
      QVERIFY(out[2].is_none());
      QVERIFY(out[3].is_none());
      QCOMPARE(out[4].to_int(), c.q.size(2));
      QCOMPARE(out[5].to_int(), c.k.size(2));
      QCOMPARE(out[6].to_tensor().dtype(), DType::Int64);
      QCOMPARE(out[6].to_tensor().dim(), int64_t(0));
      QCOMPARE(out[7].to_tensor().dim(), int64_t(0));
      QVERIFY(out[8].is_none());
      // compute_log_sumexp=False still gives it (the meta function always allocates it).
      ValueList no_lse = call(kCudnn, {c.q, c.k, c.v, bias, false, 0.0, c.causal}, kw);
      expect_close(no_lse[1].to_tensor().select(3, 0), r.lse, 1e-12, "logsumexp without compute_log_sumexp");
    }
  }

  // As an H200 trace of PyTorch 2.11 annotates them: q, k, v are [B, L, H, E]
  // views of one [B, L, 3 * H * E] projection (strides [L*3C, E, 3C, 1]); the
  // float16 output is dense [B, L, H, E] storage, logsumexp float32 [B, H, L, 1]
  // contiguous, the philox scalars int64, and the backward's gradients dense
  // in the inputs' dim order (empty_like).
  void cudnn_layouts_as_the_h200_trace_gives_them() {
    const int64_t B = 2, L = 16, H = 4, E = 8, C = H * E;
    Tensor qkv = randn({B, L, 3 * C}, 80, DType::Float16);
    auto part = [&](int64_t i) {
      return qkv.narrow(2, i * C, C).view({B, L, H, E}).transpose(1, 2);
    };
    Tensor q = part(0), k = part(1), v = part(2);
    QCOMPARE(q.strides(), (Shape{L * 3 * C, E, 3 * C, 1}));
    ValueList out = call(kCudnn, {q, k, v, Value(), true, 0.0, true});
    const Tensor& o = out[0].to_tensor();
    QCOMPARE(o.dtype(), DType::Float16);
    QCOMPARE(o.strides(), (Shape{L * C, E, C, 1}));
    QCOMPARE(out[1].to_tensor().dtype(), DType::Float32);
    QCOMPARE(out[1].to_tensor().strides(), (Shape{H * L, L, 1, 1}));
    ValueList meta = call_meta(kCudnn, {q, k, v, Value(), true, 0.0, true}).value();
    QCOMPARE(meta[0].to_tensor().strides(), o.strides());
    QCOMPARE(meta[1].to_tensor().sizes(), (Shape{B, H, L, 1}));
    // float16 results within float16 rounding of the float64 reference.
    Case c{q, k, v, Tensor(), true, {}};
    Ref r = reference(c);
    expect_close(o, r.out, 1e-3, "output");
    expect_close(out[1].to_tensor().select(3, 0), r.lse, 1e-6, "logsumexp");
    Tensor dout = randn({B, L, H, E}, 81, DType::Float16).transpose(1, 2);
    ValueList g = call(kCudnnBwd, {dout, q, k, v, o, out[1], out[6], out[7], Value(), Value(), Value(), L, L, 0.0,
                                   true});
    QCOMPARE(g.size(), size_t(3));
    for (const Value& x : g) {
      QCOMPARE(x.to_tensor().dtype(), DType::Float16);
      QCOMPARE(x.to_tensor().strides(), (Shape{L * C, E, C, 1}));
    }
    // A contiguous query gives contiguous results.
    Tensor qc = q.contiguous();
    QCOMPARE(call(kCudnn, {qc, qc, qc, Value(), true})[0].to_tensor().strides(), qc.strides());
    // Ev != E: the output in the query's dim order.
    Tensor v2 = randn({B, L, H, 6}, 82, DType::Float16).transpose(1, 2);
    QCOMPARE(call(kCudnn, {q, k, v2, Value(), true})[0].to_tensor().strides(), (Shape{L * H * 6, 6, H * 6, 1}));
  }

  void cudnn_backward_matches_reference() {
    for (const Case& c : cases()) {
      if (c.mask.defined() && c.mask.dtype() == DType::Bool) continue;
      Ref r = reference(c);
      Tensor dout = randn(r.out.sizes(), 91);
      RefGrads want = reference_grads(c, r, dout);
      KwargList kw{{"scale", r.scale}};
      Value bias = c.mask.defined() ? Value(c.mask) : Value();
      ValueList fwd = call(kCudnn, {c.q, c.k, c.v, bias, true, 0.0, c.causal}, kw);
      ValueList g = call(kCudnnBwd, {dout, c.q, c.k, c.v, fwd[0], fwd[1], fwd[6], fwd[7], bias, Value(), Value(),
                                     c.q.size(2), c.k.size(2), 0.0, c.causal},
                         kw);
      QCOMPARE(g.size(), size_t(3));
      expect_close(g[0].to_tensor(), want.dq, 1e-11, "grad_query");
      expect_close(g[1].to_tensor(), want.dk, 1e-11, "grad_key");
      expect_close(g[2].to_tensor(), want.dv, 1e-11, "grad_value");
    }
  }

  void cudnn_bad_input_is_refused_by_name() {
    Tensor q = randn({1, 2, 3, 4}, 70), k = randn({1, 2, 5, 4}, 71), v = randn({1, 2, 5, 4}, 72);
    auto has = [](const QString& e, const char* op, const char* what) {
      QVERIFY2(e.contains(op) && e.contains(what), qPrintable(e));
    };
    has(error_of(kCudnn, {q, k, v, Value(), true, 0.1}), "_cudnn_attention", "dropout_p = 0.1");
    has(error_of(kCudnn, {q, k, v, Value(), true, 0.0, false, true}), "_cudnn_attention", "return_debug_mask");
    has(error_of(kCudnn, {q, k, v, randn({3, 4}, 1), true}), "_cudnn_attention", "does not broadcast");
    has(error_of(kCudnn, {q, randn({1, 2, 5, 3}, 1), v, Value(), true}), "_cudnn_attention", "head dims differ");
    ValueList fwd = call(kCudnn, {q, k, v, Value(), true});
    Tensor lse = fwd[1].to_tensor();
    has(error_of(kCudnnBwd, {q, q, k, v, fwd[0], randn({1, 2}, 1), fwd[6], fwd[7], Value(), Value(), Value(), 3, 5,
                             0.0, false}),
        "_cudnn_attention_backward", "logsumexp");
    has(error_of(kCudnnBwd, {q, q, k, v, fwd[0], lse, fwd[6], fwd[7], Value(), Tensor::zeros({2}, DType::Int32),
                             Value(), 3, 5, 0.0, false}),
        "_cudnn_attention_backward", "cum_seq_q");
    has(error_of(kCudnnBwd, {q, q, k, v, fwd[0], lse, fwd[6], fwd[7], Value(), Value(), Value(), 3, 5, 0.3, false}),
        "_cudnn_attention_backward", "dropout_p");
  }
};

QTEST_MAIN(TestOpsAttention)
#include "test_ops_attention.moc"
