// core/python/torch_api: Meta mode (fake-tensor capture) gives the sizes, strides
// and dtypes Eager mode gives, over a table of calls across every family.
#include <QtTest/QtTest>

#include <cmath>

#include "torch_api_test_util.h"

using namespace kiln;
using namespace kiln::torchapi;
using namespace kiln::torchapi_test;
using kiln::test::values;

class TestTorchApiMeta : public QObject {
  Q_OBJECT

 private slots:
  void metaMatchesEager();
};

// Every call below runs in Eager mode and in Meta mode (inputs made meta):
// the results must agree on sizes, strides and dtype.
void TestTorchApiMeta::metaMatchesEager() {
  Tensor x = kiln::test::arange_f32({2, 3}, -2.f, 0.5f);
  Tensor x3 = kiln::test::arange_f32({2, 3, 4}, -1.f, 0.25f);
  Tensor xt = x3.transpose(1, 2);  // non-contiguous input
  Tensor sq = kiln::test::arange_f32({3, 3}, 0.5f, 0.5f);
  Tensor v = kiln::test::arange_f32({3}, 1.f);
  Tensor i = I64({0, 2, 1, 1, 0, 2}, {2, 3});
  Tensor ip = I64({1, 3, 2, 2, 1, 3}, {2, 3});
  Tensor idx = I64({1, 0}, {2});
  Tensor bm = B({true, false, true, false, true, true}, {2, 3});
  Tensor img = kiln::test::arange_f32({2, 3, 8, 8}, 0.f, 0.01f);
  Tensor cw = kiln::test::arange_f32({4, 3, 3, 3}, 0.f, 0.01f);
  Tensor cb = kiln::test::arange_f32({4});
  Tensor ch = Tensor::full({3}, 1.0, DType::Float32);
  Tensor lw = kiln::test::arange_f32({5, 3}, 0.f, 0.1f);
  Tensor tgt = I64({1, 0}, {2});
  Tensor h = Tensor::full({2}, 1, DType::Float16);
  Tensor i32 = Tensor::full({2, 3}, 3, DType::Int32);
  Tensor xs = run1("torch.sigmoid", {x}), xsm = run1("torch.softmax", {x, 1});
  Tensor nhwc = Tensor::empty_strided({2, 3, 8, 8}, {192, 1, 24, 3}, DType::Float32);
  nhwc.copy_(img);
  struct Case {
    const char* fn;
    ValueList args;
    KwargList kwargs = {};
  };
  std::vector<Case> cases = {
      {"torch.sin", {x}}, {"torch.exp", {xt}}, {"torch.abs", {i}}, {"torch.sqrt", {i}}, {"torch.sigmoid", {h}},
      {"torch.relu", {xt}}, {"torch.neg", {i32}}, {"torch.reciprocal", {i}}, {"torch.round", {x}, {{"decimals", 1}}},
      {"torch.logical_not", {bm}}, {"torch.bitwise_not", {i}}, {"torch.isnan", {x}}, {"torch.square", {i}},
      {"torch.nan_to_num", {x}}, {"torch.logit", {x}, {{"eps", 0.1}}}, {"Tensor.log1p", {xt}}, {"Tensor.erf", {x}},
      {"torch.add", {x, 2}}, {"torch.add", {x, x3.select(2, 0)}, {{"alpha", 2}}}, {"torch.add", {i, 2.5}},
      {"torch.sub", {i32, i}}, {"torch.mul", {h, 2.0}}, {"torch.mul", {i, x}}, {"torch.div", {i, 2}},
      {"torch.div", {i, 2}, {{"rounding_mode", "floor"}}}, {"torch.div", {x, x}, {{"rounding_mode", "trunc"}}},
      {"torch.true_divide", {i, i}}, {"torch.floor_divide", {i, 2}}, {"torch.remainder", {x, 1.5}},
      {"torch.remainder", {3, ip}}, {"torch.fmod", {i, ip}}, {"torch.pow", {x, 2}}, {"torch.pow", {2, i}},
      {"torch.pow", {i, x}}, {"torch.float_power", {x, 2}}, {"torch.atan2", {x, x}}, {"torch.maximum", {x, x3.select(2, 1)}},
      {"torch.minimum", {i, i32}}, {"torch.bitwise_and", {i, 3}}, {"torch.bitwise_xor", {bm, bm}},
      {"torch.logical_and", {bm, x}}, {"torch.eq", {x, 0}}, {"torch.ne", {i, i32}}, {"torch.gt", {x, x3.select(2, 0)}},
      {"torch.lerp", {x, x, 0.5}}, {"torch.addcmul", {x, x, x}, {{"value", 2}}}, {"torch.clamp", {x}, {{"min", 0}}},
      {"torch.clamp", {i, 0, 1}}, {"torch.clamp_min", {x, v.select(0, 0)}}, {"torch.where", {bm, x, 0.0}},
      {"torch.where", {bm, 1, 0}}, {"torch.where", {bm, x, i}}, {"torch.xlogy", {x, 2}}, {"torch.copysign", {x, -1}},
      {"torch.hypot", {x, x}}, {"torch.selu", {x}}, {"torch.celu", {x}}, {"torch.softmax", {x3, 1}},
      {"Tensor.log_softmax", {xt, -1}}, {"torch.isclose", {x, x}},
      // reductions
      {"torch.sum", {x}}, {"torch.sum", {i}}, {"torch.sum", {bm}}, {"Tensor.sum", {xt, L({0, 2})}, {{"keepdim", true}}},
      {"Tensor.sum", {x, -1}, {{"dtype", DType::Float64}}}, {"torch.mean", {x3, 1}}, {"torch.nansum", {x}},
      {"torch.prod", {i, 1}}, {"torch.amax", {xt, -1}}, {"torch.amin", {x3}}, {"torch.max", {x}}, {"torch.max", {xt, 1}},
      {"torch.min", {i, 0, true}}, {"torch.aminmax", {x}}, {"torch.argmax", {x3, 2}}, {"torch.argmin", {x}},
      {"torch.any", {bm, 1}}, {"torch.all", {bm}}, {"torch.var", {x3, 1}}, {"torch.std", {x}},
      {"torch.var_mean", {x3, L({0, 1})}}, {"torch.std_mean", {x}, {{"correction", 0}}},
      {"torch.logsumexp", {x3, 1}}, {"torch.norm", {x3}}, {"torch.norm", {x3, 1, 2}},
      {"torch.linalg.vector_norm", {x3}, {{"dim", -1}}}, {"torch.cumsum", {xt, 1}}, {"torch.cumsum", {i, 0}},
      {"torch.cumprod", {x, 1}}, {"torch.median", {x3, 1}}, {"torch.kthvalue", {x, 2}}, {"torch.sort", {xt, 1}},
      {"torch.argsort", {x3}, {{"descending", true}}}, {"torch.topk", {x3, 2}}, {"torch.msort", {x}},
      {"torch.count_nonzero", {x, 1}},
      // shapes
      {"Tensor.view", {x3, 4, -1}}, {"Tensor.view", {x3, L({6, 4})}}, {"Tensor.reshape", {xt, -1}},
      {"Tensor.reshape", {x3, 4, 6}}, {"Tensor.expand", {v, 2, 3}}, {"Tensor.expand_as", {v, x}},
      {"torch.broadcast_to", {v, L({4, 3})}}, {"torch.permute", {x3, L({2, 0, 1})}}, {"Tensor.permute", {xt, 1, 0, 2}},
      {"torch.transpose", {x3, 0, 2}}, {"torch.t", {x}}, {"torch.flatten", {x3, 1}}, {"Tensor.flatten", {xt}},
      {"torch.unflatten", {x3, 2, L({2, 2})}}, {"torch.squeeze", {x3.unsqueeze(0)}}, {"torch.unsqueeze", {xt, 1}},
      {"torch.movedim", {x3, 0, -1}}, {"Tensor.contiguous", {xt}}, {"Tensor.contiguous", {x}}, {"torch.clone", {xt}},
      {"torch.clone", {nhwc}}, {"Tensor.contiguous", {nhwc}}, {"torch.detach", {xt}}, {"torch.cat", {LT({x, x})}},
      {"torch.cat", {LT({xt, xt}), 1}}, {"torch.stack", {LT({x, x}), -1}}, {"torch.hstack", {LT({x, x})}},
      {"torch.vstack", {LT({v, v})}}, {"torch.chunk", {x3, 2, 2}}, {"torch.split", {x3, 1}},
      {"Tensor.split", {xt, L({1, 3}), 1}}, {"torch.unbind", {xt, 2}}, {"torch.tensor_split", {x3, 3, 2}},
      {"torch.narrow", {x3, 2, 1, 2}}, {"torch.select", {xt, 1, -1}}, {"torch.index_select", {x3, 1, idx}},
      {"torch.gather", {x, 1, i}}, {"torch.scatter", {x, 1, i, x}}, {"torch.scatter_add", {x, 1, i, x}},
      {"torch.index_add", {x, 1, idx, x.narrow(1, 0, 2)}}, {"torch.masked_fill", {xt, Tensor::full({4, 1}, true, DType::Bool), 1.5}},
      {"torch.take", {x3, i}}, {"torch.flip", {xt, L({0, 2})}}, {"torch.roll", {x3, 1, 2}}, {"torch.rot90", {x}},
      {"Tensor.repeat", {x, 2, 1, 2}}, {"torch.tile", {v, L({2, 2})}}, {"torch.repeat_interleave", {x, 2}, {{"dim", 1}}},
      {"torch.tril", {sq, -1}}, {"torch.triu", {xt}}, {"torch.diagonal", {x3, 0, 1, 2}}, {"torch.diag", {v}},
      {"torch.trace", {sq}}, {"Tensor.unfold", {x3, 2, 2, 1}}, {"torch.meshgrid", {v, v}},
      {"torch.broadcast_tensors", {x, v}}, {"torch.as_strided", {x, L({2, 2}), L({1, 2})}},
      // products
      {"torch.matmul", {x, sq}}, {"torch.matmul", {x3, kiln::test::arange_f32({3, 4}).t()}}, {"torch.mm", {x, sq}},
      {"torch.bmm", {x3, xt}}, {"torch.mv", {sq, v}}, {"torch.dot", {v, v}}, {"torch.addmm", {v, x, sq}},
      {"torch.baddbmm", {Tensor::zeros({2, 3, 3}, DType::Float32), x3.narrow(2, 0, 3), xt.narrow(1, 0, 3)}},
      {"torch.outer", {v, v}}, {"torch.einsum", {"bij,bjk->bik", x3, xt}}, {"torch.einsum", {"ij->j", x}},
      {"torch.tensordot", {x3, kiln::test::arange_f32({4, 5})}, {{"dims", 1}}},
      // conversions and creation
      {"Tensor.to", {x, DType::Float16}}, {"Tensor.to", {xt, DType::Int64}}, {"Tensor.to", {nhwc, DType::Float64}},
      {"Tensor.float", {i}}, {"Tensor.bool", {x}}, {"Tensor.type_as", {i, x}}, {"Tensor.half", {xt}},
      {"torch.zeros", {2, 3}}, {"torch.ones", {L({4})}, {{"dtype", DType::Int8}}}, {"torch.full", {L({2}), 1.5}},
      {"torch.empty", {3, 2}}, {"torch.arange", {10}}, {"torch.arange", {1.0, 4}}, {"torch.linspace", {0, 1, 7}},
      {"torch.eye", {3}}, {"torch.zeros_like", {xt}}, {"torch.ones_like", {nhwc}}, {"torch.empty_like", {xt}},
      {"torch.full_like", {i, 7}}, {"torch.rand_like", {nhwc}}, {"torch.randn", {2, 5}}, {"torch.rand", {L({3})}},
      {"torch.randint", {10, L({4})}}, {"torch.randint_like", {i, 5}}, {"torch.normal", {x, 1.0}},
      {"torch.bernoulli", {Tensor::full({2, 2}, 0.5, DType::Float32)}}, {"torch.tensor", {LT({1.5, 2})}},
      {"Tensor.new_zeros", {i, L({2})}}, {"Tensor.new_full", {x, L({2}), 3}},
      // nn.functional
      {"torch.nn.functional.relu", {xt}}, {"torch.nn.functional.gelu", {x}, {{"approximate", "tanh"}}},
      {"torch.nn.functional.silu", {x}}, {"torch.nn.functional.elu", {x}}, {"torch.nn.functional.leaky_relu", {xt}},
      {"torch.nn.functional.hardswish", {x}}, {"torch.nn.functional.softplus", {x}}, {"torch.nn.functional.mish", {x}},
      {"torch.nn.functional.softmax", {x3, -1}}, {"torch.nn.functional.log_softmax", {xt}, {{"dim", 1}}},
      {"torch.nn.functional.softmax", {h, 0}, {{"dtype", DType::Float32}}}, {"torch.nn.functional.glu", {x3}},
      {"torch.nn.functional.dropout", {xt, 0.3}}, {"torch.nn.functional.dropout", {x}, {{"training", false}}},
      {"torch.nn.functional.linear", {x3.narrow(2, 0, 3), lw}}, {"torch.nn.functional.linear", {x, lw, kiln::test::arange_f32({5})}},
      {"torch.nn.functional.conv2d", {img, cw, cb}}, {"torch.nn.functional.conv2d", {img, cw}, {{"stride", 2}, {"padding", 1}}},
      {"torch.nn.functional.conv2d", {nhwc, cw}, {{"padding", "same"}}},
      {"torch.nn.functional.conv2d", {img, cw.narrow(0, 0, 3).narrow(1, 0, 1).contiguous()}, {{"groups", 3}}},
      {"torch.nn.functional.conv1d", {x3.narrow(1, 0, 3), kiln::test::arange_f32({2, 3, 2})}},
      {"torch.nn.functional.conv_transpose2d", {img, cw.transpose(0, 1).contiguous()}, {{"stride", 2}}},
      {"torch.nn.functional.max_pool2d", {img, 2}}, {"torch.nn.functional.max_pool2d", {nhwc, 3, 2, 1}},
      {"torch.nn.functional.max_pool2d", {img, 2}, {{"return_indices", true}}},
      {"torch.nn.functional.avg_pool2d", {img, 3}, {{"stride", 2}, {"padding", 1}}},
      {"torch.nn.functional.adaptive_avg_pool2d", {img, 1}}, {"torch.nn.functional.adaptive_avg_pool2d", {nhwc, L({2, 3})}},
      {"torch.nn.functional.adaptive_max_pool2d", {img, 2}}, {"torch.nn.functional.avg_pool1d", {x3, 2}},
      {"torch.nn.functional.batch_norm", {img, Tensor::zeros({3}, DType::Float32), ch.clone(), ch, ch, true}},
      {"torch.nn.functional.batch_norm", {nhwc, Tensor::zeros({3}, DType::Float32), ch.clone()}},
      {"torch.nn.functional.layer_norm", {x3, L({4})}}, {"torch.nn.functional.layer_norm", {img, L({8, 8})}},
      {"torch.nn.functional.group_norm", {img, 3}}, {"torch.nn.functional.instance_norm", {img}},
      {"torch.nn.functional.rms_norm", {x3, L({4})}}, {"torch.nn.functional.normalize", {x}},
      {"torch.nn.functional.embedding", {i, lw}}, {"torch.nn.functional.one_hot", {i, 3}},
      {"torch.nn.functional.pad", {x3, L({1, 2})}}, {"torch.nn.functional.pad", {img, L({1, 1, 2, 2})}, {{"mode", "reflect"}}},
      {"torch.nn.functional.interpolate", {img}, {{"scale_factor", 2}}},
      {"torch.nn.functional.interpolate", {img}, {{"size", L({5, 7})}, {"mode", "bilinear"}}},
      {"torch.nn.functional.interpolate", {x3}, {{"size", 6}, {"mode", "linear"}, {"align_corners", true}}},
      {"torch.nn.functional.unfold", {img, 3}}, {"torch.nn.functional.pixel_shuffle", {kiln::test::arange_f32({1, 8, 2, 3}), 2}},
      {"torch.nn.functional.cosine_similarity", {x, x}}, {"torch.nn.functional.pairwise_distance", {x, x}},
      {"torch.nn.functional.scaled_dot_product_attention", {img, img, img}},
      {"torch.nn.functional.scaled_dot_product_attention", {x3, x3, x3}, {{"is_causal", true}}},
      {"torch.nn.functional.cross_entropy", {x, tgt}}, {"torch.nn.functional.cross_entropy", {x, tgt}, {{"reduction", "none"}}},
      {"torch.nn.functional.cross_entropy", {x, xsm}, {{"label_smoothing", 0.1}}},
      {"torch.nn.functional.nll_loss", {x, tgt}}, {"torch.nn.functional.mse_loss", {x, x3.select(2, 0)}},
      {"torch.nn.functional.l1_loss", {x, x}, {{"reduction", "none"}}}, {"torch.nn.functional.smooth_l1_loss", {x, x}},
      {"torch.nn.functional.huber_loss", {x, x}}, {"torch.nn.functional.binary_cross_entropy", {xs, xs}},
      {"torch.nn.functional.binary_cross_entropy_with_logits", {x, xs}},
      {"torch.nn.functional.kl_div", {x, x}, {{"reduction", "batchmean"}}},
  };
  int checked = 0;
  QStringList failures;
  for (const Case& c : cases) {
    auto eager = call(fn(c.fn), c.args, c.kwargs, Mode::Eager);
    if (!eager) {
      failures << QString("%1 eager: %2").arg(c.fn, QString::fromStdString(eager.status().message()));
      continue;
    }
    ValueList meta_args;
    for (const Value& a : c.args) meta_args.push_back(to_meta(a));
    KwargList meta_kwargs;
    for (const auto& [k, val] : c.kwargs) meta_kwargs.emplace_back(k, to_meta(val));
    auto meta = call(fn(c.fn), meta_args, meta_kwargs, Mode::Meta);
    if (!meta) {
      failures << QString("%1 meta: %2").arg(c.fn, QString::fromStdString(meta.status().message()));
      continue;
    }
    std::string e = meta_of(Value(*eager)), m = meta_of(Value(*meta));
    if (e != m) {
      failures << QString("%1: eager %2, meta %3").arg(c.fn, e.c_str(), m.c_str());
      continue;
    }
    for (const Value& r : *meta)
      if (r.is_tensor() && !r.to_tensor().is_meta()) failures << QString("%1: a result is not meta").arg(c.fn);
    ++checked;
  }
  if (!failures.isEmpty()) QFAIL(qPrintable(failures.join("\n")));
  qInfo("meta vs eager: %d calls agree", checked);
  QVERIFY(checked >= 150);
}

QTEST_APPLESS_MAIN(TestTorchApiMeta)
#include "test_torch_api_meta.moc"
