// Convolution (1-D to 3-D, groups, dilation, transposed) against a direct
// float64 loop, the conv composites, error messages, and convolution_backward
// by adjoint identities and the corpus gradients. (Pooling: test_ops_pooling.)
#include "nn_test_util.h"

#include "core/corpus/conformance.h"

using namespace kiln;
using kiln::test::call;
using kiln::test::call1;
using kiln::test::dot_all;
using kiln::test::error_of;
using kiln::test::ints;
using kiln::test::random_tensor;
using kiln::test::values;

namespace {

struct Conv {
  Shape stride, pad, dil, out_pad;
  bool transposed = false;
  int64_t groups = 1;
};

// [N, C, s0, ...] sizes padded to exactly 3 spatial dims with leading ones.
Shape as5d(const Shape& s) {
  Shape r{s[0], s[1]};
  for (size_t i = s.size(); i < 5; ++i) r.push_back(1);
  r.insert(r.end(), s.begin() + 2, s.end());
  return r;
}
Shape pad3(const Shape& v, int64_t fill) {
  Shape r(3 - v.size(), fill);
  r.insert(r.end(), v.begin(), v.end());
  return r;
}

// The convolution sum written out directly: every (output, input, kernel)
// triple whose positions line up, in float64.
std::vector<double> ref_conv(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv& c, const Shape& out_sizes) {
  Shape xs = as5d(x.sizes()), ws = as5d(w.sizes()), os = as5d(out_sizes);
  Shape st = pad3(c.stride, 1), pd = pad3(c.pad, 0), dl = pad3(c.dil, 1);
  std::vector<double> xv = values(x), wv = values(w), out(size_t(shape_numel(os)), 0.0);
  int64_t G = c.groups;
  int64_t cin_g = c.transposed ? xs[1] / G : ws[1], cout_g = c.transposed ? ws[1] : ws[0] / G;
  auto xi = [&](int64_t n, int64_t ch, int64_t d, int64_t h, int64_t q) {
    return (((n * xs[1] + ch) * xs[2] + d) * xs[3] + h) * xs[4] + q;
  };
  auto oi = [&](int64_t n, int64_t ch, int64_t d, int64_t h, int64_t q) {
    return (((n * os[1] + ch) * os[2] + d) * os[3] + h) * os[4] + q;
  };
  for (int64_t n = 0; n < xs[0]; ++n)
    for (int64_t g = 0; g < G; ++g)
      for (int64_t ci = 0; ci < cin_g; ++ci)
        for (int64_t co = 0; co < cout_g; ++co)
          for (int64_t kd = 0; kd < ws[2]; ++kd)
            for (int64_t kh = 0; kh < ws[3]; ++kh)
              for (int64_t kw = 0; kw < ws[4]; ++kw) {
                int64_t widx = c.transposed ? ((((g * cin_g + ci) * cout_g + co) * ws[2] + kd) * ws[3] + kh) * ws[4] + kw
                                            : ((((g * cout_g + co) * cin_g + ci) * ws[2] + kd) * ws[3] + kh) * ws[4] + kw;
                // Non-transposed: input position = out * stride - pad + k * dil; transposed: the reverse.
                const Shape& small = c.transposed ? xs : os;
                const Shape& big = c.transposed ? os : xs;
                for (int64_t a = 0; a < small[2]; ++a)
                  for (int64_t b = 0; b < small[3]; ++b)
                    for (int64_t e = 0; e < small[4]; ++e) {
                      int64_t p0 = a * st[0] - pd[0] + kd * dl[0], p1 = b * st[1] - pd[1] + kh * dl[1],
                              p2 = e * st[2] - pd[2] + kw * dl[2];
                      if (p0 < 0 || p0 >= big[2] || p1 < 0 || p1 >= big[3] || p2 < 0 || p2 >= big[4]) continue;
                      if (c.transposed)
                        out[size_t(oi(n, g * cout_g + co, p0, p1, p2))] +=
                            xv[size_t(xi(n, g * cin_g + ci, a, b, e))] * wv[size_t(widx)];
                      else
                        out[size_t(oi(n, g * cout_g + co, a, b, e))] +=
                            xv[size_t(xi(n, g * cin_g + ci, p0, p1, p2))] * wv[size_t(widx)];
                    }
              }
  if (bias.defined()) {
    std::vector<double> bv = values(bias);
    int64_t per = shape_numel(std::span(os).subspan(2));
    for (size_t i = 0; i < out.size(); ++i) out[i] += bv[size_t((int64_t(i) / per) % os[1])];
  }
  return out;
}

Tensor run_conv(const Tensor& x, const Tensor& w, const Tensor& b, const Conv& c) {
  return call1("aten::convolution", {x, w, b.defined() ? Value(b) : Value(), ints(c.stride), ints(c.pad), ints(c.dil),
                                     c.transposed, ints(c.out_pad), c.groups});
}

// One convolution against the reference; `seed` varies the data.
void check_conv(Shape xs, Shape ws, bool with_bias, const Conv& c, uint64_t seed) {
  Tensor x = random_tensor(xs, seed), w = random_tensor(ws, seed + 1);
  int64_t cout = c.transposed ? ws[1] * c.groups : ws[0];
  Tensor b = with_bias ? random_tensor({cout}, seed + 2) : Tensor();
  Tensor y = run_conv(x, w, b, c);
  std::string what = "conv x=" + shape_str(xs) + " w=" + shape_str(ws) + (c.transposed ? " transposed" : "");
  std::string r = kiln::test::close_report(y, ref_conv(x, w, b, c, y.sizes()), 1e-5, 1e-5);
  QVERIFY2(r.empty(), (what + ": " + r).c_str());
}

}  // namespace

class TestOpsConvPool : public QObject {
  Q_OBJECT
 private slots:
  void conv2d_hand_values() {
    Tensor x = kiln::test::arange_f32({1, 1, 3, 3});
    Tensor w = Tensor::from_vector<float>({1, 0, 0, -1}, {1, 1, 2, 2});
    Tensor y = run_conv(x, w, Tensor(), {{1, 1}, {0, 0}, {1, 1}, {0, 0}});
    QCOMPARE(y.sizes(), (Shape{1, 1, 2, 2}));
    KILN_COMPARE_VALUES(y, {-4, -4, -4, -4});  // x[i][j] - x[i+1][j+1]
    Tensor yp = run_conv(x, w, Tensor::from_vector<float>({0.5f}, {1}), {{2, 2}, {1, 1}, {1, 1}, {0, 0}});
    QCOMPARE(yp.sizes(), (Shape{1, 1, 2, 2}));
    KILN_COMPARE_VALUES(yp, {0.5, -1.5, -5.5, -3.5});
  }

  void conv_matches_reference() {
    uint64_t seed = 100;
    check_conv({2, 3, 8, 8}, {4, 3, 3, 3}, true, {{1, 1}, {1, 1}, {1, 1}, {0, 0}}, seed++);
    check_conv({2, 4, 9, 7}, {6, 2, 3, 2}, false, {{2, 1}, {1, 0}, {1, 2}, {0, 0}, false, 2}, seed++);
    check_conv({1, 6, 10, 10}, {6, 1, 3, 3}, true, {{1, 1}, {2, 2}, {2, 2}, {0, 0}, false, 6}, seed++);  // depthwise
    check_conv({2, 3, 9, 8}, {6, 1, 3, 3}, false, {{2, 2}, {1, 1}, {1, 1}, {0, 0}, false, 3}, seed++);   // multiplier 2
    check_conv({1, 1, 9, 9}, {16, 1, 3, 3}, true, {{1, 1}, {1, 1}, {1, 1}, {0, 0}}, seed++);  // one input channel
    check_conv({3, 5, 6, 6}, {7, 5, 1, 1}, true, {{1, 1}, {0, 0}, {1, 1}, {0, 0}}, seed++);  // 1x1: no im2col
    check_conv({2, 5, 6, 6}, {7, 5, 1, 1}, false, {{2, 2}, {0, 0}, {1, 1}, {0, 0}}, seed++);
    check_conv({2, 3, 17}, {5, 3, 4}, true, {{3}, {2}, {1}, {0}}, seed++);                      // 1-D
    check_conv({1, 2, 5, 6, 7}, {4, 2, 2, 3, 3}, true, {{1, 2, 1}, {1, 0, 1}, {1, 1, 2}, {0, 0, 0}}, seed++);  // 3-D
    check_conv({0, 3, 8, 8}, {4, 3, 3, 3}, true, {{1, 1}, {1, 1}, {1, 1}, {0, 0}}, seed++);     // empty batch
    // A bigger case so im2col and OpenBLAS run multi-threaded.
    check_conv({2, 16, 24, 24}, {32, 16, 3, 3}, true, {{1, 1}, {1, 1}, {1, 1}, {0, 0}}, seed++);
  }

  void transposed_conv_matches_reference() {
    uint64_t seed = 200;
    check_conv({2, 4, 5, 5}, {4, 3, 3, 3}, true, {{2, 2}, {1, 1}, {1, 1}, {1, 1}, true, 1}, seed++);
    check_conv({1, 4, 4, 3}, {4, 2, 2, 3}, false, {{1, 2}, {0, 1}, {2, 1}, {0, 1}, true, 2}, seed++);
    check_conv({2, 3, 6}, {3, 2, 4}, true, {{2}, {1}, {1}, {0}, true, 1}, seed++);
    check_conv({1, 2, 3, 3, 3}, {2, 2, 2, 2, 2}, true, {{2, 2, 2}, {0, 0, 0}, {1, 1, 1}, {1, 0, 1}, true, 1}, seed++);
    check_conv({2, 6, 4, 4}, {6, 3, 1, 1}, true, {{1, 1}, {0, 0}, {1, 1}, {0, 0}, true, 1}, seed++);  // 1x1
    check_conv({1, 2, 4}, {2, 3, 1}, false, {{1}, {0}, {2}, {1}, true, 1}, seed++);  // 1x1 with output padding
  }

  void reduced_float_and_double() {
    Tensor x = random_tensor({2, 3, 6, 6}, 1), w = random_tensor({4, 3, 3, 3}, 2), b = random_tensor({4}, 3);
    Conv c{{1, 1}, {1, 1}, {1, 1}, {0, 0}};
    std::vector<double> want = ref_conv(x, w, b, c, {2, 4, 6, 6});
    Tensor y64 = run_conv(x.to(DType::Float64), w.to(DType::Float64), b.to(DType::Float64), c);
    QCOMPARE(y64.dtype(), DType::Float64);
    KILN_EXPECT_CLOSE(y64, want, 1e-12, 1e-12);
    Tensor yh = run_conv(x.to(DType::Float16), w.to(DType::Float16), b.to(DType::Float16), c);
    QCOMPARE(yh.dtype(), DType::Float16);
    KILN_EXPECT_CLOSE(yh, want, 1e-2, 2e-2);
    Tensor yb = run_conv(x.to(DType::BFloat16), w.to(DType::BFloat16), b.to(DType::BFloat16), c);
    QCOMPARE(yb.dtype(), DType::BFloat16);
    KILN_EXPECT_CLOSE(yb, want, 3e-2, 1e-1);
  }

  void non_contiguous_input() {
    Tensor base = random_tensor({2, 8, 3, 8}, 5);  // permuted to [2, 3, 8, 8]
    Tensor x = base.permute(std::vector<int64_t>{0, 2, 1, 3});
    Tensor w = random_tensor({4, 3, 3, 3}, 6);
    Conv c{{1, 1}, {1, 1}, {1, 1}, {0, 0}};
    KILN_EXPECT_CLOSE(run_conv(x, w, Tensor(), c), ref_conv(x.contiguous(), w, Tensor(), c, {2, 4, 8, 8}), 1e-5, 1e-5);
  }

  void composites_batchify_and_padding_modes() {
    Tensor x = random_tensor({3, 7, 7}, 7), w = random_tensor({2, 3, 3, 3}, 8), b = random_tensor({2}, 9);
    Tensor y = call1("aten::conv2d", {x, w, b}, {{"padding", ints({1, 1})}});
    QCOMPARE(y.sizes(), (Shape{2, 7, 7}));  // unbatched in, unbatched out
    KILN_EXPECT_CLOSE(y, ref_conv(x.unsqueeze(0), w, b, {{1, 1}, {1, 1}, {1, 1}, {0, 0}}, {1, 2, 7, 7}), 1e-5, 1e-5);
    // padding='same' with an even kernel pads one more on the right, as PyTorch does.
    Tensor we = random_tensor({2, 3, 2, 4}, 10);
    Tensor ys = call1("aten::conv2d.padding", {x.unsqueeze(0), we, b, ints({1, 1}), Value("same")});
    QCOMPARE(ys.sizes(), (Shape{1, 2, 7, 7}));
    Tensor padded = call1("aten::constant_pad_nd", {x.unsqueeze(0), ints({1, 2, 0, 1})});
    KILN_EXPECT_CLOSE(ys, ref_conv(padded, we, b, {{1, 1}, {0, 0}, {1, 1}, {0, 0}}, {1, 2, 7, 7}), 1e-5, 1e-5);
    Tensor yv = call1("aten::conv2d.padding", {x, w, Value(), ints({1, 1}), Value("valid")});
    QCOMPARE(yv.sizes(), (Shape{2, 5, 5}));
    Tensor y1 = call1("aten::conv1d", {random_tensor({2, 9}, 11), random_tensor({4, 2, 3}, 12)});
    QCOMPARE(y1.sizes(), (Shape{4, 7}));
    Tensor xt = random_tensor({1, 4, 5, 5}, 13), wt = random_tensor({4, 2, 3, 3}, 14);
    Tensor yt = call1("aten::conv_transpose2d.input", {xt, wt, Value(), ints({2, 2}), ints({1, 1}), ints({1, 1})});
    QCOMPARE(yt.sizes(), (Shape{1, 2, 10, 10}));
    KILN_EXPECT_CLOSE(yt, ref_conv(xt, wt, Tensor(), {{2, 2}, {1, 1}, {1, 1}, {1, 1}, true, 1}, {1, 2, 10, 10}), 1e-5,
                      1e-5);
    KILN_EXPECT_ERROR(error_of("aten::conv2d", {random_tensor({2, 3}, 1), w}),
                      "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [2, 3]");
    KILN_EXPECT_ERROR(error_of("aten::conv2d.padding", {x, w, Value(), ints({2, 2}), Value("same")}),
                      "padding='same' is not supported for strided convolutions");
  }

  void conv_errors() {
    Tensor w = Tensor::zeros({4, 3, 3, 3}, DType::Float32);
    Conv c{{1, 1}, {0, 0}, {1, 1}, {0, 0}};
    auto err = [&](const Tensor& x, const Tensor& wt, const Tensor& b, const Conv& cc) {
      return error_of("aten::convolution", {x, wt, b.defined() ? Value(b) : Value(), ints(cc.stride), ints(cc.pad),
                                            ints(cc.dil), cc.transposed, ints(cc.out_pad), cc.groups});
    };
    KILN_EXPECT_ERROR(err(Tensor::zeros({2, 4, 8, 8}, DType::Float32), w, Tensor(), c),
                      "Given groups=1, weight of size [4, 3, 3, 3], expected input[2, 4, 8, 8] to have 3 channels, but "
                      "got 4 channels instead");
    KILN_EXPECT_ERROR(err(Tensor::zeros({2, 3, 8, 8}, DType::Float32), w, Tensor::zeros({5}, DType::Float32), c),
                      "expected bias to be 1-dimensional with 4 elements, but got bias of size [5] instead");
    KILN_EXPECT_ERROR(err(Tensor::zeros({2, 3, 2, 2}, DType::Float32), w, Tensor(), c),
                      "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel size can't be "
                      "greater than actual input size");
    KILN_EXPECT_ERROR(err(Tensor::zeros({3, 8, 8}, DType::Float32), w, Tensor(), c),
                      "Expected 4-dimensional input for 4-dimensional weight [4, 3, 3, 3], but got 3-dimensional input");
    KILN_EXPECT_ERROR(err(Tensor::zeros({2, 3, 8, 8}, DType::Float32), w, Tensor(), {{1, 1}, {0, 0}, {1, 1}, {0, 0}, false, 3}),
                      "Given groups=3, expected weight to be divisible by 3 at dimension 0");
    KILN_EXPECT_ERROR(err(Tensor::zeros({2, 3, 8, 8}, DType::Float32), w, Tensor(), {{0, 1}, {0, 0}, {1, 1}, {0, 0}}),
                      "non-positive stride is not supported");
    KILN_EXPECT_ERROR(err(Tensor::zeros({2, 3, 8, 8}, DType::Float32), w, Tensor(), {{1, 1, 1}, {0}, {1}, {0}}),
                      "expected stride to be a single integer value or a list of 2 values");
    KILN_EXPECT_ERROR(err(Tensor::zeros({2, 3, 8, 8}, DType::Float64), w, Tensor(), c),
                      "Input type (float64) and weight type (float32) should be the same");
    KILN_EXPECT_ERROR(err(Tensor::zeros({2, 3, 8, 8}, DType::Int64), w.to(DType::Int64), Tensor(), c),
                      "not implemented for 'int64'");
    KILN_EXPECT_ERROR(err(Tensor::zeros({2, 4, 8, 8}, DType::Float32), w, Tensor(), {{1, 1}, {0, 0}, {1, 1}, {1, 1}, true, 1}),
                      "output padding must be smaller than either stride or dilation");
    auto meta = call_meta("aten::convolution", {Tensor::meta({8, 3, 32, 32}, DType::Float32), w, Value(), ints({2, 2}),
                                                ints({1, 1}), ints({1, 1}), false, ints({0, 0}), int64_t(1)});
    QVERIFY(meta.ok());
    QCOMPARE((*meta)[0].to_tensor().sizes(), (Shape{8, 4, 16, 16}));
  }

  // <conv(x, w), g> is linear in x and in w, so the backward must satisfy
  // <conv(x, w), g> = <x, grad_input> = <w, grad_weight>, and grad_bias = sum g.
  void backward_adjoint_identities() {
    struct Case {
      Shape xs, ws;
      Conv c;
    };
    std::vector<Case> cases = {
        {{2, 4, 7, 6}, {6, 2, 3, 2}, {{2, 1}, {1, 1}, {1, 2}, {0, 0}, false, 2}},
        {{2, 3, 5, 5}, {3, 2, 3, 3}, {{2, 2}, {1, 1}, {1, 1}, {1, 1}, true, 1}},
        {{1, 4, 6}, {4, 1, 3}, {{1}, {2}, {2}, {0}, false, 4}},
        {{2, 3, 4, 4}, {5, 3, 1, 1}, {{1, 1}, {0, 0}, {1, 1}, {0, 0}, false, 1}},
    };
    uint64_t seed = 300;
    for (const Case& k : cases) {
      Tensor x = random_tensor(k.xs, seed++), w = random_tensor(k.ws, seed++);
      Tensor y = run_conv(x, w, Tensor(), k.c);
      Tensor g = random_tensor(y.sizes(), seed++);
      ValueList r = call("aten::convolution_backward",
                         {g, x, w, ints({y.size(1)}), ints(k.c.stride), ints(k.c.pad), ints(k.c.dil), k.c.transposed,
                          ints(k.c.out_pad), k.c.groups, ValueList{Value(true), Value(true), Value(true)}});
      double lhs = dot_all(y, g);
      QCOMPARE(r[0].to_tensor().sizes(), x.sizes());
      QCOMPARE(r[1].to_tensor().sizes(), w.sizes());
      QVERIFY2(std::abs(dot_all(x, r[0].to_tensor()) - lhs) < 1e-4 * (1 + std::abs(lhs)), "grad_input adjoint");
      QVERIFY2(std::abs(dot_all(w, r[1].to_tensor()) - lhs) < 1e-4 * (1 + std::abs(lhs)), "grad_weight adjoint");
      std::vector<double> gv = values(g), gb(size_t(y.size(1)), 0.0);
      int64_t per = y.numel() / (y.size(0) * y.size(1));
      for (size_t i = 0; i < gv.size(); ++i) gb[size_t((int64_t(i) / per) % y.size(1))] += gv[i];
      KILN_EXPECT_CLOSE(r[2].to_tensor(), gb, 1e-5, 1e-5);
    }
    // output_mask false leaves that gradient undefined (None).
    Tensor x = random_tensor({1, 2, 4, 4}, 1), w = random_tensor({2, 2, 3, 3}, 2);
    ValueList r = call("aten::convolution_backward",
                       {random_tensor({1, 2, 2, 2}, 3), x, w, Value(), ints({1, 1}), ints({0, 0}), ints({1, 1}), false,
                        ints({0, 0}), int64_t(1), ValueList{Value(false), Value(true), Value(false)}});
    QVERIFY(r[0].is_none() && r[2].is_none());
    QCOMPARE(r[1].to_tensor().sizes(), w.sizes());
  }

  void im2col_and_col2im() {
    Tensor x = kiln::test::arange_f32({1, 1, 3, 3});
    Tensor c = call1("aten::im2col", {x, ints({2, 2}), ints({1, 1}), ints({0, 0}), ints({1, 1})});
    QCOMPARE(c.sizes(), (Shape{1, 4, 4}));
    KILN_COMPARE_VALUES(c, {0, 1, 3, 4, 1, 2, 4, 5, 3, 4, 6, 7, 4, 5, 7, 8});
    // Each input cell is counted once per block covering it.
    Tensor f = call1("aten::col2im", {Tensor::full({4, 4}, Scalar(1.0), DType::Float32), ints({3, 3}), ints({2, 2}),
                                      ints({1, 1}), ints({0, 0}), ints({1, 1})});
    QCOMPARE(f.sizes(), (Shape{1, 3, 3}));
    KILN_COMPARE_VALUES(f, {1, 2, 1, 2, 4, 2, 1, 2, 1});
    // col2im is im2col's adjoint, with padding, stride and dilation too.
    Tensor y = random_tensor({2, 3, 7, 6}, 40);
    ValueList geo{ints({3, 2}), ints({2, 1}), ints({1, 1}), ints({2, 1})};
    Tensor u = call1("aten::im2col", {y, geo[0], geo[1], geo[2], geo[3]});
    Tensor g = random_tensor(u.sizes(), 41);
    Tensor back = call1("aten::col2im", {g, ints({7, 6}), geo[0], geo[1], geo[2], geo[3]});
    QCOMPARE(back.sizes(), y.sizes());
    QVERIFY(std::abs(dot_all(u, g) - dot_all(y, back)) < 1e-4);
    KILN_EXPECT_ERROR(error_of("aten::col2im", {g, ints({7, 7}), geo[0], geo[1], geo[2], geo[3]}),
                      "expected size of input's dimension 2 to match the calculated number of sliding blocks");
  }

  // The corpus' convolution cases carry PyTorch's gradients for a random grad_output.
  void backward_matches_corpus_gradients() {
    auto corpus = load_corpus(kiln::test::reference_dir() + "/opcorpus");
    QVERIFY2(corpus.ok(), corpus.status().to_string().c_str());
    int checked = 0;
    for (const CorpusCase& k : corpus->cases) {
      if (k.op != "aten::convolution.default" || k.grad_outputs.empty()) continue;
      const Tensor &x = k.args[0].to_tensor(), &w = k.args[1].to_tensor();
      bool has_bias = !k.args[2].is_none();
      ValueList r = call("aten::convolution_backward",
                         {k.grad_outputs[0], x, w, has_bias ? ints({w.size(0)}) : Value(), k.args[3], k.args[4],
                          k.args[5], k.args[6], k.args[7], k.args[8], ValueList{Value(true), Value(true), Value(true)}});
      for (const auto& [name, want] : k.grad_inputs) {
        size_t arg = name.back() - '0';
        Comparison cmp = compare_tensors(r[arg].to_tensor(), want);
        QVERIFY2(cmp.ok, (k.id + " grad of arg " + std::to_string(arg) + ": " + cmp.reason).c_str());
        ++checked;
      }
    }
    QVERIFY(checked >= 6);
  }
};

QTEST_GUILESS_MAIN(TestOpsConvPool)
#include "test_ops_conv_pool.moc"
