// torch.nn.functional: convolutions and pooling, normalizations, embedding,
// padding, interpolation and attention (activations: torch_api_nn_activations.cpp).
// Which of them are C builtins (torch._C._nn.gelu, torch.conv2d) and which are
// Python functions decides the graph target Dynamo prints.
#include <cmath>
#include <limits>

#include "core/ops/grid_sample.h"
#include "core/python/torch_api_binding.h"

namespace kiln::torchapi::detail {
namespace {

const char* const kF = kFunctional;

Handler A(const char* op) { return to_aten(op); }

// Convolutions are the torch.convNd builtins, also under F.
void convolutions(Table& t) {
  for (int d = 1; d <= 3; ++d) {
    std::string n = std::to_string(d);
    std::string conv = "conv" + n + "d", tconv = "conv_transpose" + n + "d";
    std::string ints = "int[" + n + "]";
    std::string a = "(Tensor input, Tensor weight, Tensor? bias=None, " + ints + " stride=1, " + ints +
                    " padding=0, " + ints + " dilation=1, int groups=1)";
    std::string s = "(Tensor input, Tensor weight, Tensor? bias=None, " + ints + " stride=1, str padding=\"valid\", " +
                    ints + " dilation=1, int groups=1)";
    std::string tr = "(Tensor input, Tensor weight, Tensor? bias=None, " + ints + " stride=1, " + ints + " padding=0, " +
                     ints + " output_padding=0, int groups=1, " + ints + " dilation=1)";
    auto conv_sigs = [&](const std::string& name) {
      std::vector<Signature> v{parse_signature(name, a), parse_signature(name, s)};
      v[0].handler = to_aten("aten::" + conv);
      v[1].handler = to_aten("aten::" + conv + ".padding");
      return v;
    };
    auto tconv_sigs = [&](const std::string& name) {
      std::vector<Signature> v{parse_signature(name, tr)};
      v[0].handler = to_aten("aten::" + tconv + (d == 1 ? "" : ".input"));
      return v;
    };
    t.add("torch", conv, PyKind::TorchBuiltin, conv_sigs(conv));
    t.add(kF, conv, PyKind::TorchBuiltin, conv_sigs(conv));
    t.add("torch", tconv, PyKind::TorchBuiltin, tconv_sigs(tconv));
    t.add(kF, tconv, PyKind::TorchBuiltin, tconv_sigs(tconv));
  }
  t.def_in(kF, "linear", PyKind::NnBuiltin, {{"(Tensor input, Tensor weight, Tensor? bias=None)", A("aten::linear")}});
}

Value list_or_empty(const Value& v) { return v.is_none() ? Value(ValueList{}) : v; }

// F.max_poolNd(..., return_indices=): the indices variant gives (output, indices).
Handler max_pool(int d) {
  return [d](const Bound& b) {
    std::string op = "aten::max_pool" + std::to_string(d) + "d";
    ValueList args{b[0], b[1], list_or_empty(b[2]), b[3], b[4], b[5]};
    if (!b.boolean(6)) return aten(b.mode(), op, args);
    return aten(b.mode(), op + "_with_indices", args);
  };
}

// adaptive output sizes may hold None: that dim keeps the input's size.
Value adaptive_size(const Tensor& x, const Value& size, int d) {
  std::vector<int64_t> out;
  if (size.is_int()) return Value::int_list(std::vector<int64_t>(size_t(d), size.to_int()));
  KILN_USER_CHECK(size.is_list() && int64_t(size.to_list().size()) == d, "adaptive pooling: output_size must be an int or ",
                  d, " values, got ", size.repr());
  for (size_t i = 0; i < size_t(d); ++i) {
    const Value& v = size.to_list()[i];
    out.push_back(v.is_none() ? x.size(x.dim() - d + int64_t(i)) : v.to_int());
  }
  return Value::int_list(out);
}

void pools(Table& t) {
  for (int d = 1; d <= 3; ++d) {
    std::string n = std::to_string(d), ints = "int[" + n + "]";
    t.def_in(kF, "max_pool" + n + "d", PyKind::Dispatch,
             {{("(Tensor input, " + ints + " kernel_size, " + ints + "? stride=None, " + ints + " padding=0, " + ints +
                " dilation=1, bool ceil_mode=False, bool return_indices=False)").c_str(), max_pool(d)}});
    t.def_in(kF, "max_pool" + n + "d_with_indices", PyKind::PyFunction,
             {{("(Tensor input, " + ints + " kernel_size, " + ints + "? stride=None, " + ints + " padding=0, " + ints +
                " dilation=1, bool ceil_mode=False, bool return_indices=True)").c_str(), max_pool(d)}});
    Handler avg = [d](const Bound& b) {
      ValueList args{b[0], b[1], list_or_empty(b[2]), b[3], b[4], b[5]};
      if (d > 1) args.push_back(b[6]);
      return aten(b.mode(), "aten::avg_pool" + std::to_string(d) + "d", args);
    };
    std::string avg_text = "(Tensor input, " + ints + " kernel_size, " + ints + "? stride=None, " + ints +
                           " padding=0, bool ceil_mode=False, bool count_include_pad=True" +
                           (d > 1 ? ", int? divisor_override=None)" : ")");
    t.def_in(kF, "avg_pool" + n + "d", d == 1 ? PyKind::TorchBuiltin : PyKind::NnBuiltin, {{avg_text.c_str(), avg}});
    if (d == 1) t.def("avg_pool1d", kTorch, {{avg_text.c_str(), avg}});
    Handler adaptive_avg = [d](const Bound& b) {
      return aten(b.mode(), "aten::adaptive_avg_pool" + std::to_string(d) + "d",
                  {b[0], adaptive_size(b.tensor(0), b[1], d)});
    };
    t.def_in(kF, "adaptive_avg_pool" + n + "d", d == 1 ? PyKind::TorchBuiltin : PyKind::PyFunction,
             {{"(Tensor input, Any output_size)", adaptive_avg}});
    if (d == 1) t.def("adaptive_avg_pool1d", kTorch, {{"(Tensor input, Any output_size)", adaptive_avg}});
    Handler adaptive_max = [d](const Bound& b) {
      ValueList r = aten(b.mode(), "aten::adaptive_max_pool" + std::to_string(d) + "d",
                         {b[0], adaptive_size(b.tensor(0), b[1], d)});
      if (b.boolean(2)) return r;
      return ValueList{r[0]};
    };
    t.def_in(kF, "adaptive_max_pool" + n + "d", PyKind::Dispatch,
             {{"(Tensor input, Any output_size, bool return_indices=False)", adaptive_max}});
  }
}

ValueList batch_norm(const Bound& b) {
  const Tensor& x = b.tensor(0);
  if (b.boolean(5)) {
    int64_t per_channel = x.dim() > 0 ? x.size(0) : 1;
    for (int64_t d = 2; d < x.dim(); ++d) per_channel *= x.size(d);
    KILN_USER_CHECK(per_channel != 1, "Expected more than 1 value per channel when training, got input size ",
                    shape_text(x.sizes()));
  }
  return aten(b.mode(), "aten::batch_norm", {b[0], b[3], b[4], b[1], b[2], b[5], b[6], b[7], true});
}

// instance_norm is batch_norm over a (1, N*C, ...) view, as ATen does it.
ValueList instance_norm(const Bound& b) {
  Mode m = b.mode();
  const Tensor& x = b.tensor(0);
  KILN_USER_CHECK(x.dim() >= 2, "instance_norm: expected at least 2-D input, got ", x.dim(), "-D");
  int64_t n = x.size(0), c = x.size(1);
  if (b.boolean(5)) {
    int64_t spatial = 1;
    for (int64_t d = 2; d < x.dim(); ++d) spatial *= x.size(d);
    KILN_USER_CHECK(spatial != 1, "Expected more than 1 spatial element when training, got input size ",
                    shape_text(x.sizes()));
  }
  Shape flat = x.sizes();
  flat[0] = 1;
  flat[1] = n * c;
  Tensor in = aten_t(m, "aten::view", {aten_t(m, "aten::contiguous", {b[0]}), Value::int_list(flat)});
  auto repeat = [&](const Value& v) -> Value {
    if (v.is_none()) return v;
    return aten_t(m, "aten::repeat", {v, Value::int_list({n})});
  };
  Value rm = repeat(b[1]), rv = repeat(b[2]);
  Tensor out = aten_t(m, "aten::batch_norm", {in, repeat(b[3]), repeat(b[4]), rm, rv, b[5], b[6], b[7], true});
  if (m == Mode::Eager) {
    // The repeated running stats were updated per (n, c): fold them back as ATen does.
    auto fold = [&](const Value& running, const Value& repeated) {
      if (running.is_none()) return;
      Tensor r = aten_t(m, "aten::mean.dim", {aten_t(m, "aten::view", {repeated, Value::int_list({n, c})}),
                                              Value::int_list({0}), false});
      copy_observed(running.to_tensor(), r);
    };
    fold(b[1], rm);
    fold(b[2], rv);
  }
  return aten(m, "aten::view", {out, Value::int_list(x.sizes())});
}

ValueList rms_norm(const Bound& b) {
  Mode m = b.mode();
  const Tensor& x = b.tensor(0);
  std::vector<int64_t> shape = b.ints(1);
  KILN_USER_CHECK(int64_t(shape.size()) <= x.dim(), "rms_norm: normalized_shape has more dims than the input");
  std::vector<int64_t> dims;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t d = x.dim() - int64_t(shape.size()) + int64_t(i);
    KILN_USER_CHECK(x.size(d) == shape[i], "Given normalized_shape=", shape_text(shape),
                    ", expected input with shape [*, ", shape_text(shape).substr(1), ", but got input of size",
                    shape_text(x.sizes()));
    dims.push_back(d);
  }
  DType compute = x.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  double eps = b.is_none(3) ? (compute == DType::Float64 ? std::numeric_limits<double>::epsilon()
                                                         : double(std::numeric_limits<float>::epsilon()))
                            : b.real(3);
  Tensor up = aten_t(m, "aten::to.dtype", {b[0], Value(compute)});
  Tensor ms = aten_t(m, "aten::mean.dim", {aten_t(m, "aten::pow.Tensor_Scalar", {up, 2}), Value::int_list(dims), true});
  Tensor r = aten_t(m, "aten::rsqrt", {aten_t(m, "aten::add.Scalar", {ms, eps})});
  Tensor out = aten_t(m, "aten::to.dtype", {aten_t(m, "aten::mul.Tensor", {up, r}), Value(x.dtype())});
  if (!b.is_none(2)) out = aten_t(m, "aten::mul.Tensor", {out, b[2]});
  return ValueList{out};
}

void normalizations(Table& t) {
  t.def_in(kF, "batch_norm", PyKind::PyFunction,
           {{"(Tensor input, Tensor? running_mean, Tensor? running_var, Tensor? weight=None, Tensor? bias=None, "
             "bool training=False, float momentum=0.1, float eps=1e-05)", batch_norm}});
  t.def_in(kF, "instance_norm", PyKind::PyFunction,
           {{"(Tensor input, Tensor? running_mean=None, Tensor? running_var=None, Tensor? weight=None, "
             "Tensor? bias=None, bool use_input_stats=True, float momentum=0.1, float eps=1e-05)", instance_norm}});
  t.def_in(kF, "layer_norm", PyKind::PyFunction,
           {{"(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05)",
             [](const Bound& b) { return aten(b.mode(), "aten::layer_norm", {b[0], b[1], b[2], b[3], b[4]}); }}});
  t.def_in(kF, "group_norm", PyKind::PyFunction,
           {{"(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1e-05)",
             [](const Bound& b) { return aten(b.mode(), "aten::group_norm", {b[0], b[1], b[2], b[3], b[4]}); }}});
  const char* rms_text = "(Tensor input, int[] normalized_shape, Tensor? weight=None, float? eps=None)";
  t.def_in(kF, "rms_norm", PyKind::TorchBuiltin, {{rms_text, rms_norm}}).dynamo_inlines = true;
  t.def("rms_norm", kTorch, {{rms_text, rms_norm}});
  t.def_in(kF, "normalize", PyKind::PyFunction,
           {{"(Tensor input, float p=2.0, int dim=1, float eps=1e-12, Tensor? out=None)", [](const Bound& b) {
              KILN_USER_CHECK(b.is_none(4), "F.normalize(out=...) is not supported by Kiln");
              Mode m = b.mode();
              Tensor n = aten_t(m, "aten::norm.ScalarOpt_dim", {b[0], b[1], Value::int_list({b.integer(2)}), true});
              Tensor denom = aten_t(m, "aten::expand_as", {aten_t(m, "aten::clamp_min", {n, b[3]}), b[0]});
              return aten(m, "aten::div.Tensor", {b[0], denom});
            }}});
}

void embeddings(Table& t) {
  t.def_in(kF, "embedding", PyKind::PyFunction,
           {{"(Tensor input, Tensor weight, int? padding_idx=None, float? max_norm=None, float norm_type=2.0, "
             "bool scale_grad_by_freq=False, bool sparse=False)", [](const Bound& b) {
              const Tensor& w = b.tensor(1);
              int64_t pad = -1;
              if (!b.is_none(2)) {
                pad = b.integer(2);
                KILN_USER_CHECK(pad < w.size(0) && pad >= -w.size(0), "Padding_idx must be within num_embeddings");
                if (pad < 0) pad += w.size(0);
              }
              KILN_USER_CHECK(b.is_none(3), "F.embedding(max_norm=...) renormalizes the weight in place: not supported by Kiln");
              return aten(b.mode(), "aten::embedding", {b[1], b[0], pad, b[5], b[6]});
            }}});
  t.def_in(kF, "one_hot", PyKind::NnBuiltin, {{"(Tensor tensor, int num_classes=-1)", [](const Bound& b) {
             Mode m = b.mode();
             const Tensor& x = b.tensor(0);
             KILN_USER_CHECK(x.dtype() == DType::Int64, "one_hot is only applicable to index tensor of type LongTensor.");
             int64_t n = b.integer(1);
             if (m == Mode::Eager && x.numel() > 0) {
               int64_t lo = item_of(aten_t(m, "aten::min", {b[0]}), m, "one_hot").to_int();
               int64_t hi = item_of(aten_t(m, "aten::max", {b[0]}), m, "one_hot").to_int();
               KILN_USER_CHECK(lo >= 0, "Class values must be non-negative.");
               if (n == -1) n = hi + 1;
               else KILN_USER_CHECK(hi < n, "Class values must be smaller than num_classes.");
             }
             KILN_USER_CHECK(n >= 0, "one_hot(num_classes=-1) needs the largest class value, which is data-dependent "
                                     "while capturing");
             Tensor classes = aten_t(m, "aten::arange", {n}, {{"dtype", Value(DType::Int64)}});
             Tensor eq = aten_t(m, "aten::eq.Tensor", {aten_t(m, "aten::unsqueeze", {b[0], -1}), classes});
             return aten(m, "aten::to.dtype", {eq, Value(DType::Int64)});
           }}});
  t.def_in(kF, "pad", PyKind::NnBuiltin,
           {{"(Tensor input, int[] pad, str mode=\"constant\", float? value=None)", A("aten::pad")}})
      .dynamo_inlines = true;
}

// F.interpolate on the upsample_*.vec ops (and adaptive_avg_pool for 'area').
ValueList interpolate(const Bound& b) {
  Mode m = b.mode();
  const Tensor& x = b.tensor(0);
  int64_t d = x.dim() - 2;
  KILN_USER_CHECK(d >= 1 && d <= 3, "Input Error: Only 3D, 4D and 5D input Tensors supported (got ", x.dim(),
                  "D) for the modes: nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact");
  std::string mode = b.str(3);
  bool linear = mode == "linear" || mode == "bilinear" || mode == "trilinear" || mode == "bicubic";
  if (!linear)
    KILN_USER_CHECK(b.is_none(4), "align_corners option can only be set with the interpolating modes: "
                                  "linear | bilinear | bicubic | trilinear");
  KILN_USER_CHECK(b.is_none(1) != b.is_none(2), b.is_none(1) ? "either size or scale_factor should be defined"
                                                               : "only one of size or scale_factor should be defined");
  KILN_USER_CHECK(!b.boolean(6), "F.interpolate(antialias=True) is not supported by Kiln");
  auto expand = [&](const Value& v, bool floats) -> ValueList {
    ValueList out;
    if (v.is_list()) {
      KILN_USER_CHECK(int64_t(v.to_list().size()) == d, "Input and output must have the same number of spatial dimensions, "
                      "but got input with spatial dimensions of ", shape_text(Shape(x.sizes().begin() + 2, x.sizes().end())),
                      " and output size of ", v.repr(), ".");
      for (const Value& e : v.to_list()) {
        if (floats) out.emplace_back(e.to_double());
        else out.emplace_back(e.to_int());
      }
    } else {
      for (int64_t i = 0; i < d; ++i) {
        if (floats) out.emplace_back(v.to_double());
        else out.emplace_back(v.to_int());
      }
    }
    return out;
  };
  Value size, scales;
  if (!b.is_none(1)) size = Value(expand(b[1], false));
  if (!b.is_none(2)) {
    ValueList s = expand(b[2], true);
    bool recompute = !b.is_none(5) && b.boolean(5);
    if (recompute || mode == "area") {
      ValueList computed;
      for (int64_t i = 0; i < d; ++i)
        computed.push_back(Value(int64_t(std::floor(double(x.size(2 + i)) * s[size_t(i)].to_double()))));
      size = Value(computed);
    }
    if (!recompute) scales = Value(s);
  }
  std::string n = std::to_string(d) + "d";
  auto need = [&](int64_t want) {
    KILN_USER_CHECK(d == want, "Got ", x.dim(), "D input, but ", mode, " mode needs ", want + 2, "D input");
  };
  if (mode == "nearest") return aten(m, "aten::upsample_nearest" + n + ".vec", {b[0], size, scales});
  if (mode == "nearest-exact") return aten(m, "aten::_upsample_nearest_exact" + n + ".vec", {b[0], size, scales});
  if (mode == "area") return aten(m, "aten::adaptive_avg_pool" + n, {b[0], size});
  bool align = !b.is_none(4) && b.boolean(4);
  if (mode == "linear") need(1);
  if (mode == "bilinear") need(2);
  if (mode == "trilinear") need(3);
  if (mode == "linear") return aten(m, "aten::upsample_linear1d.vec", {b[0], size, align, scales});
  if (mode == "bilinear") return aten(m, "aten::upsample_bilinear2d.vec", {b[0], size, align, scales});
  if (mode == "trilinear") return aten(m, "aten::upsample_trilinear3d.vec", {b[0], size, align, scales});
  if (mode == "bicubic") {
    need(2);
    return aten(m, "aten::upsample_bicubic2d.vec", {b[0], size, align, scales});
  }
  KILN_FAIL("Input Error: mode '", mode, "' is not one of nearest | linear | bilinear | bicubic | trilinear | area | "
            "nearest-exact");
}

ValueList pixel_shuffle(const Bound& b, bool up) {
  Mode m = b.mode();
  const Tensor& x = b.tensor(0);
  int64_t r = b.integer(1);
  KILN_USER_CHECK(x.dim() >= 3, "pixel_", up ? "shuffle" : "unshuffle", " expects input to have at least 3 dimensions, but got input with ",
                  x.dim(), " dimension(s)");
  Shape lead(x.sizes().begin(), x.sizes().end() - 3);
  int64_t c = x.size(-3), h = x.size(-2), w = x.size(-1), k = int64_t(lead.size());
  Shape split = lead, out = lead;
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < k; ++i) perm.push_back(i);
  if (up) {
    KILN_USER_CHECK(c % (r * r) == 0, "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                    "upscale_factor, but input.size(-3)=", c, " is not divisible by ", r * r);
    split.insert(split.end(), {c / (r * r), r, r, h, w});
    out.insert(out.end(), {c / (r * r), h * r, w * r});
    perm.insert(perm.end(), {k, k + 3, k + 1, k + 4, k + 2});
  } else {
    KILN_USER_CHECK(h % r == 0 && w % r == 0, "pixel_unshuffle expects height and width to be divisible by downscale_factor");
    split.insert(split.end(), {c, h / r, r, w / r, r});
    out.insert(out.end(), {c * r * r, h / r, w / r});
    perm.insert(perm.end(), {k, k + 2, k + 4, k + 1, k + 3});
  }
  Tensor v = aten_t(m, "aten::reshape", {b[0], Value::int_list(split)});
  Tensor p = aten_t(m, "aten::permute", {v, Value::int_list(perm)});
  return aten(m, "aten::reshape", {aten_t(m, "aten::contiguous", {p}), Value::int_list(out)});
}

// The math of scaled_dot_product_attention. PyTorch 2.11's CPU result is
// contiguous for 3-D and 4-D inputs alike (measured), as matmul's is.
ValueList attention(const Bound& b) {
  Mode m = b.mode();
  const Tensor &q = b.tensor(0), &k = b.tensor(1), &v = b.tensor(2);
  KILN_USER_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2, "scaled_dot_product_attention: expected at least 2-D inputs");
  double scale = b.is_none(6) ? 1.0 / std::sqrt(double(q.size(-1))) : b.real(6);
  Value key = b[1], value = b[2];
  if (b.boolean(7) && q.dim() >= 3 && q.size(-3) != k.size(-3)) {
    KILN_USER_CHECK(q.size(-3) % k.size(-3) == 0, "enable_gqa: query heads must be a multiple of key/value heads");
    int64_t rep = q.size(-3) / k.size(-3);
    auto rep_heads = [&](const Value& x) {
      const Tensor& t = x.to_tensor();
      Tensor u = aten_t(m, "aten::unsqueeze", {x, t.dim() - 2});
      Shape expanded = t.sizes();
      expanded.insert(expanded.end() - 2, rep);
      Tensor ex = aten_t(m, "aten::expand", {u, Value::int_list(expanded)});
      return aten_t(m, "aten::flatten.using_ints", {ex, t.dim() - 3, t.dim() - 2});
    };
    key = rep_heads(key);
    value = rep_heads(value);
  }
  Tensor kt = aten_t(m, "aten::transpose.int", {key, -2, -1});
  Tensor scores = aten_t(m, "aten::mul.Scalar", {aten_t(m, "aten::matmul", {b[0], kt}), scale});
  int64_t L = q.size(-2), S = k.size(-2);
  if (b.boolean(5)) {
    KILN_USER_CHECK(b.is_none(3), "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True");
    Tensor ones = aten_t(m, "aten::ones", {Value::int_list({L, S})}, {{"dtype", Value(DType::Bool)}});
    Tensor keep = aten_t(m, "aten::tril", {ones});
    scores = aten_t(m, "aten::masked_fill.Scalar", {scores, aten_t(m, "aten::logical_not", {keep}),
                                                    -std::numeric_limits<double>::infinity()});
  } else if (!b.is_none(3)) {
    const Tensor& mask = b.tensor(3);
    if (mask.dtype() == DType::Bool)
      scores = aten_t(m, "aten::masked_fill.Scalar", {scores, aten_t(m, "aten::logical_not", {b[3]}),
                                                      -std::numeric_limits<double>::infinity()});
    else
      scores = aten_t(m, "aten::add.Tensor", {scores, b[3]});
  }
  Tensor attn = aten_t(m, "aten::softmax.int", {scores, -1});
  double p = b.real(4);
  if (p > 0) {
    Bound db(b.signature(), ValueList{attn}, m);
    attn = dropout(db, p, true, false, false, false).at(0).to_tensor();
  }
  return aten(m, "aten::matmul", {attn, value});
}

void misc(Table& t) {
  t.def_in(kF, "interpolate", PyKind::PyFunction,
           {{"(Tensor input, Any size=None, Any scale_factor=None, str mode=\"nearest\", bool? align_corners=None, "
             "bool? recompute_scale_factor=None, bool antialias=False)", interpolate}});
  t.def_in(kF, "unfold", PyKind::PyFunction,
           {{"(Tensor input, int[2] kernel_size, int[2] dilation=1, int[2] padding=0, int[2] stride=1)",
             [](const Bound& b) { return aten(b.mode(), "aten::im2col", {b[0], b[1], b[2], b[3], b[4]}); }}});
  t.def_in(kF, "fold", PyKind::PyFunction,
           {{"(Tensor input, int[2] output_size, int[2] kernel_size, int[2] dilation=1, int[2] padding=0, int[2] stride=1)",
             [](const Bound& b) { return aten(b.mode(), "aten::col2im", {b[0], b[1], b[2], b[3], b[4], b[5]}); }}});
  for (bool up : {true, false}) {
    std::string name = up ? "pixel_shuffle" : "pixel_unshuffle";
    const char* text = up ? "(Tensor input, int upscale_factor)" : "(Tensor input, int downscale_factor)";
    auto h = [up](const Bound& b) { return pixel_shuffle(b, up); };
    t.def_in(kF, name, PyKind::TorchBuiltin, {{text, h}});
    t.def(name, kTorch, {{text, h}});
  }
  Handler cosine = [](const Bound& b) {
    Mode m = b.mode();
    Shape s = broadcast_shapes(b.tensor(0).sizes(), b.tensor(1).sizes());
    Tensor x1 = aten_t(m, "aten::expand", {b[0], Value::int_list(s)});
    Tensor x2 = aten_t(m, "aten::expand", {b[1], Value::int_list(s)});
    Value dims = Value::int_list({b.integer(2)});
    auto unit = [&](const Tensor& x) {
      Tensor n = aten_t(m, "aten::clamp_min", {aten_t(m, "aten::norm.ScalarOpt_dim", {x, 2, dims, true}), b[3]});
      return aten_t(m, "aten::div.Tensor", {x, n});
    };
    return aten(m, "aten::sum.dim_IntList", {aten_t(m, "aten::mul.Tensor", {unit(x1), unit(x2)}), dims, false});
  };
  const char* cos_text = "(Tensor x1, Tensor x2, int dim=1, float eps=1e-08)";
  t.def_in(kF, "cosine_similarity", PyKind::TorchBuiltin, {{cos_text, cosine}});
  t.def("cosine_similarity", kTorch, {{cos_text, cosine}});
  Handler pairwise = [](const Bound& b) {
    Mode m = b.mode();
    int64_t last = std::max(b.tensor(0).dim(), b.tensor(1).dim()) - 1;
    Tensor diff = aten_t(m, "aten::add.Scalar", {aten_t(m, "aten::sub.Tensor", {b[0], b[1]}), b[3]});
    return aten(m, "aten::norm.ScalarOpt_dim", {diff, b[2], Value::int_list({last}), b[4]});
  };
  const char* pd_text = "(Tensor x1, Tensor x2, float p=2.0, float eps=1e-06, bool keepdim=False)";
  t.def_in(kF, "pairwise_distance", PyKind::TorchBuiltin, {{pd_text, pairwise}});
  t.def("pairwise_distance", kTorch, {{pd_text, pairwise}});
  t.def_in(kF, "scaled_dot_product_attention", PyKind::NnBuiltin,
           {{"(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0.0, "
             "bool is_causal=False, *, float? scale=None, bool enable_gqa=False)", attention}});
}

// torch.grid_sampler, what F.grid_sample calls (F.affine_grid and
// F.grid_sample themselves are Python, in nn_prelude_vision.cpp): ATen's
// composite runs grid_sampler_2d on 4-D input and grid_sampler_3d otherwise,
// whose checks come before Kiln's refusal of volumetric sampling.
ValueList grid_sampler(const Bound& b) {
  const Tensor &input = b.tensor(0), &grid = b.tensor(1);
  if (input.dim() == 4) return aten(b.mode(), "aten::grid_sampler_2d", {b[0], b[1], b[2], b[3], b[4]});
  check_grid_sampler_common(input, grid);
  check_grid_sampler_rank(input, grid, 5);
  KILN_FAIL("grid_sampler_3d (F.grid_sample on 5-D volumetric input) is not supported by Kiln");
}

void spatial_transformers(Table& t) {
  t.def("affine_grid_generator", kTorch,
        {{"(Tensor theta, int[] size, bool align_corners)", A("aten::affine_grid_generator")}});
  const char* sampler = "(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners)";
  t.def("grid_sampler", kTorch, {{sampler, grid_sampler}});
  t.def("grid_sampler_2d", kTorch, {{sampler, A("aten::grid_sampler_2d")}});
}

}  // namespace

void register_nn_functional(Table& t) {
  convolutions(t);
  pools(t);
  normalizations(t);
  embeddings(t);
  misc(t);
  spatial_transformers(t);
}

}  // namespace kiln::torchapi::detail
