// torch.nn.functional activations (with inplace=), softmax/log_softmax with
// PyTorch's implicit dim, and dropout drawing from the default generator.
#include <cmath>

#include "core/python/torch_api_binding.h"

namespace kiln::torchapi::detail {

const char* const kFunctional = "torch.nn.functional";

ValueList maybe_inplace(const Bound& b, bool in_place, const char* name, ValueList r) {
  if (!in_place) return r;
  write_inplace(b.tensor(0), r.at(0).to_tensor(), b.mode(), name);
  b.set_returns_arg(0);
  return ValueList{b[0]};
}

ValueList dropout(const Bound& b, double p, bool training, bool in_place, bool feature, bool unbatched) {
  KILN_USER_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
  const Tensor& x = b.tensor(0);
  Mode m = b.mode();
  if (p == 0 || !training || x.numel() == 0) {
    b.set_returns_arg(0);
    return ValueList{b[0]};
  }
  Tensor noise;
  if (p == 1) {
    noise = scalar_to_tensor(Scalar(int64_t{0}), x.dtype(), m);
  } else {
    // Every step is an ATen call, the draw included, so that a captured graph
    // and eager autograd record it: a graph without the draw multiplied by
    // uninitialized memory.
    if (feature) {
      KILN_USER_CHECK(x.dim() >= 2, "Feature dropout requires at least 2 dimensions in the input");
      std::vector<int64_t> s(size_t(x.dim()), 1);
      s[0] = x.size(0);
      // An input without its batch dim is dropped as if unsqueezed to one
      // (F.dropout1d/3d): one draw per channel, the noise (1, C, 1...) seen as (C, 1...).
      if (!unbatched) s[1] = x.size(1);
      noise = aten_t(m, "aten::new_empty", {b[0], Value::int_list(s)});
    } else {
      noise = aten_t(m, "aten::empty_like", {b[0]});
    }
    noise = aten_t(m, "aten::bernoulli.p", {noise, 1 - p});
    noise = aten_t(m, "aten::div.Scalar", {noise, 1 - p});
  }
  return maybe_inplace(b, in_place, "dropout_", aten(m, "aten::mul.Tensor", {b[0], noise}));
}

namespace {
const char* const kF = kFunctional;

Handler A(const char* op) { return to_aten(op); }

// An activation whose last parameter is `inplace`: the others go to `op` in order.
Handler activation(const char* op, const char* name) {
  return [op, name](const Bound& b) {
    ValueList args(b.values().begin(), b.values().end() - 1);
    return maybe_inplace(b, b.boolean(b.size() - 1), name, aten(b.mode(), op, args));
  };
}

void activations(Table& t) {
  t.def_in(kF, "relu", PyKind::PyFunction, {{"(Tensor input, bool inplace=False)", activation("aten::relu", "relu_")}});
  t.def_in(kF, "relu_", PyKind::TorchBuiltin, {{"(Tensor input)", inplace(A("aten::relu"), "relu_")}});
  t.def_in(kF, "relu6", PyKind::PyFunction, {{"(Tensor input, bool inplace=False)", activation("aten::relu6", "relu6_")}});
  t.def_in(kF, "elu", PyKind::PyFunction,
           {{"(Tensor input, float alpha=1.0, bool inplace=False)", [](const Bound& b) {
              return maybe_inplace(b, b.boolean(2), "elu_", aten(b.mode(), "aten::elu", {b[0], b[1]}));
            }}});
  t.def_in(kF, "elu_", PyKind::NnBuiltin, {{"(Tensor input, Scalar alpha=1.0)", inplace(A("aten::elu"), "elu_")}});
  t.def_in(kF, "selu", PyKind::PyFunction, {{"(Tensor input, bool inplace=False)", [](const Bound& b) {
             ValueList r = aten(b.mode(), "aten::elu", {b[0], 1.6732632423543772848170429916717, 1.0507009873554804934193349852946, 1});
             return maybe_inplace(b, b.boolean(1), "selu_", r);
           }}});
  t.def_in(kF, "celu", PyKind::PyFunction, {{"(Tensor input, float alpha=1.0, bool inplace=False)", [](const Bound& b) {
             double alpha = b.real(1);
             return maybe_inplace(b, b.boolean(2), "celu_", aten(b.mode(), "aten::elu", {b[0], alpha, 1, 1.0 / alpha}));
           }}});
  t.def_in(kF, "leaky_relu", PyKind::PyFunction,
           {{"(Tensor input, float negative_slope=0.01, bool inplace=False)", activation("aten::leaky_relu", "leaky_relu_")}});
  t.def_in(kF, "leaky_relu_", PyKind::NnBuiltin,
           {{"(Tensor input, Scalar negative_slope=0.01)", inplace(A("aten::leaky_relu"), "leaky_relu_")}});
  t.def_in(kF, "hardtanh", PyKind::PyFunction,
           {{"(Tensor input, float min_val=-1.0, float max_val=1.0, bool inplace=False)", activation("aten::hardtanh", "hardtanh_")}});
  t.def_in(kF, "hardtanh_", PyKind::NnBuiltin,
           {{"(Tensor input, Scalar min_val=-1, Scalar max_val=1)", inplace(A("aten::hardtanh"), "hardtanh_")}});
  // F.threshold (_threshold), F.pad and F.rms_norm are Python functions Dynamo
  // traces into: the graph shows the builtin each calls.
  t.def_in(kF, "threshold", PyKind::TorchBuiltin,
           {{"(Tensor input, float threshold, float value, bool inplace=False)", activation("aten::threshold", "threshold_")}})
      .dynamo_inlines = true;
  t.def_in(kF, "silu", PyKind::PyFunction, {{"(Tensor input, bool inplace=False)", activation("aten::silu", "silu_")}});
  t.def_in(kF, "mish", PyKind::PyFunction, {{"(Tensor input, bool inplace=False)", activation("aten::mish", "mish_")}});
  t.def_in(kF, "hardswish", PyKind::PyFunction, {{"(Tensor input, bool inplace=False)", activation("aten::hardswish", "hardswish_")}});
  t.def_in(kF, "hardsigmoid", PyKind::PyFunction,
           {{"(Tensor input, bool inplace=False)", activation("aten::hardsigmoid", "hardsigmoid_")}});
  t.def_in(kF, "gelu", PyKind::NnBuiltin, {{"(Tensor input, *, str approximate=\"none\")", A("aten::gelu")}});
  t.def_in(kF, "sigmoid", PyKind::PyFunction, {{"(Tensor input)", A("aten::sigmoid")}});
  t.def_in(kF, "tanh", PyKind::PyFunction, {{"(Tensor input)", A("aten::tanh")}});
  t.def_in(kF, "softplus", PyKind::NnBuiltin, {{"(Tensor input, Scalar beta=1, Scalar threshold=20)", A("aten::softplus")}});
  t.def_in(kF, "logsigmoid", PyKind::NnBuiltin, {{"(Tensor input)", [](const Bound& b) {
             // log(sigmoid(x)) = -softplus(-x), computed without overflow.
             Tensor neg = aten_t(b.mode(), "aten::neg", {b[0]});
             return aten(b.mode(), "aten::neg", {aten_t(b.mode(), "aten::softplus", {neg})});
           }}},
           "torch._C._nn.log_sigmoid");
  t.def_in(kF, "softsign", PyKind::PyFunction, {{"(Tensor input)", [](const Bound& b) {
             Tensor d = aten_t(b.mode(), "aten::add.Scalar", {aten_t(b.mode(), "aten::abs", {b[0]}), 1});
             return aten(b.mode(), "aten::div.Tensor", {b[0], d});
           }}});
  t.def_in(kF, "tanhshrink", PyKind::PyFunction, {{"(Tensor input)", [](const Bound& b) {
             return aten(b.mode(), "aten::sub.Tensor", {b[0], aten_t(b.mode(), "aten::tanh", {b[0]})});
           }}});
  t.def_in(kF, "hardshrink", PyKind::TorchBuiltin, {{"(Tensor input, Scalar lambd=0.5)", [](const Bound& b) {
             Mode m = b.mode();
             double l = b.real(1);
             Tensor inside = aten_t(m, "aten::logical_and", {aten_t(m, "aten::ge.Scalar", {b[0], -l}),
                                                              aten_t(m, "aten::le.Scalar", {b[0], l})});
             return aten(m, "aten::masked_fill.Scalar", {b[0], inside, 0});
           }}});
  t.def_in(kF, "softshrink", PyKind::NnBuiltin, {{"(Tensor input, Scalar lambd=0.5)", [](const Bound& b) {
             Mode m = b.mode();
             double l = b.real(1);
             Tensor up = aten_t(m, "aten::sub.Scalar", {b[0], l}), down = aten_t(m, "aten::add.Scalar", {b[0], l});
             Tensor r = aten_t(m, "aten::where.ScalarOther", {aten_t(m, "aten::gt.Scalar", {b[0], l}), up, 0});
             return aten(m, "aten::where.self", {aten_t(m, "aten::lt.Scalar", {b[0], -l}), down, r});
           }}});
  t.def_in(kF, "prelu", PyKind::TorchBuiltin, {{"(Tensor input, Tensor weight)", [](const Bound& b) {
             Mode m = b.mode();
             const Tensor &x = b.tensor(0), &w = b.tensor(1);
             Tensor weight = w;
             if (w.numel() != 1) {
               KILN_USER_CHECK(x.dim() >= 2 && x.size(1) == w.numel(),
                               "Mismatch of parameter numbers and input channel size. Found parameter numbers = ",
                               w.numel(), " and channel size = ", x.dim() >= 2 ? x.size(1) : 1, ".");
               Shape s(size_t(x.dim() - 1), 1);
               s[0] = w.numel();
               weight = aten_t(m, "aten::reshape", {w, Value::int_list(s)});
             }
             Tensor neg = aten_t(m, "aten::mul.Tensor", {b[0], weight});
             return aten(m, "aten::where.self", {aten_t(m, "aten::gt.Scalar", {b[0], 0}), b[0], neg});
           }}});
  t.def_in(kF, "glu", PyKind::PyFunction, {{"(Tensor input, int dim=-1)", [](const Bound& b) {
             Mode m = b.mode();
             int64_t d = wrap_dim(b.integer(1), b.tensor(0).dim());
             KILN_USER_CHECK(b.tensor(0).size(d) % 2 == 0, "Halving dimension must be even, but dimension ", d,
                             " is size ", b.tensor(0).size(d));
             ValueList halves = aten(m, "aten::chunk", {b[0], 2, d}).at(0).to_list();
             return aten(m, "aten::mul.Tensor", {halves[0], aten_t(m, "aten::sigmoid", {halves[1]})});
           }}});
  t.def_in(kF, "rrelu", PyKind::PyFunction,
           {{"(Tensor input, float lower=0.125, float upper=0.3333333333333333, bool training=False, bool inplace=False)",
             [](const Bound& b) {
               KILN_USER_CHECK(!b.boolean(3), "F.rrelu(training=True) is not supported by Kiln");
               double slope = (b.real(1) + b.real(2)) / 2;
               return maybe_inplace(b, b.boolean(4), "rrelu_", aten(b.mode(), "aten::leaky_relu", {b[0], slope}));
             }}});
}

// F.softmax(input, dim=None): without dim, PyTorch's _get_softmax_dim picks 0 for 0-, 1- and 3-D inputs, else 1.
int64_t softmax_dim(const Bound& b, size_t i) {
  if (!b.is_none(i)) return b.integer(i);
  int64_t nd = b.tensor(0).dim();
  return nd == 0 || nd == 1 || nd == 3 ? 0 : 1;
}

void softmaxes(Table& t) {
  const char* text = "(Tensor input, int? dim=None, int _stacklevel=3, ScalarType? dtype=None)";
  t.def_in(kF, "softmax", PyKind::PyFunction, {{text, [](const Bound& b) {
             return aten(b.mode(), "aten::softmax.int", {b[0], softmax_dim(b, 1), b[3]});
           }}});
  t.def_in(kF, "log_softmax", PyKind::PyFunction, {{text, [](const Bound& b) {
             return aten(b.mode(), "aten::log_softmax.int", {b[0], softmax_dim(b, 1), b[3]});
           }}});
  t.def_in(kF, "softmin", PyKind::PyFunction, {{text, [](const Bound& b) {
             Tensor neg = aten_t(b.mode(), "aten::neg", {b[0]});
             return aten(b.mode(), "aten::softmax.int", {neg, softmax_dim(b, 1), b[3]});
           }}});
}

void dropouts(Table& t) {
  t.def_in(kF, "dropout", PyKind::PyFunction,
           {{"(Tensor input, float p=0.5, bool training=True, bool inplace=False)",
             [](const Bound& b) { return dropout(b, b.real(1), b.boolean(2), b.boolean(3), false, false); }}});
  // F.dropout1d takes (N, C, L) or (C, L); dropout3d (N, C, D, H, W) or
  // (C, D, H, W); dropout2d any input as batched (its warnings off 4-D input come
  // first, from nn_prelude_vision.cpp's Python wrapper, as in PyTorch's functional.py).
  t.def_in(kF, "dropout1d", PyKind::PyFunction,
           {{"(Tensor input, float p=0.5, bool training=True, bool inplace=False)", [](const Bound& b) {
              const int64_t d = b.tensor(0).dim();
              KILN_USER_CHECK(d == 2 || d == 3, "dropout1d: Expected 2D or 3D input, but received a ", d,
                              "D input. Note that dropout1d exists to provide channel-wise dropout on inputs with 1 "
                              "spatial dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
                              "inputs).");
              return dropout(b, b.real(1), b.boolean(2), b.boolean(3), true, d == 2);
            }}});
  t.def_in(kF, "dropout2d", PyKind::PyFunction,
           {{"(Tensor input, float p=0.5, bool training=True, bool inplace=False)",
             [](const Bound& b) { return dropout(b, b.real(1), b.boolean(2), b.boolean(3), true, false); }}});
  t.def_in(kF, "dropout3d", PyKind::PyFunction,
           {{"(Tensor input, float p=0.5, bool training=True, bool inplace=False)", [](const Bound& b) {
              return dropout(b, b.real(1), b.boolean(2), b.boolean(3), true, b.tensor(0).dim() != 5);
            }}});
  t.def("dropout", kTorch, {{"(Tensor input, float p, bool train)",
                             [](const Bound& b) { return dropout(b, b.real(1), b.boolean(2), false, false, false); }}});
  t.def("dropout_", kTorch, {{"(Tensor input, float p, bool train)",
                              [](const Bound& b) { return dropout(b, b.real(1), b.boolean(2), true, false, false); }}});
  t.def("feature_dropout", kTorch, {{"(Tensor input, float p, bool train)",
                                     [](const Bound& b) { return dropout(b, b.real(1), b.boolean(2), false, true, false); }}});
}

}  // namespace

void register_nn_activations(Table& t) {
  activations(t);
  softmaxes(t);
  dropouts(t);
}

}  // namespace kiln::torchapi::detail
