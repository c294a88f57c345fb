// Softmax, layer norm, batch norm and group norm (forward, and the backward
// kernels autodiff calls). Statistics are two-pass in double; float16 and
// bfloat16 compute in float32 and round once, as PyTorch's CPU kernels do.
#include <cmath>
#include <limits>

#include "core/ops/kernel_util.h"
#include "core/ops/reduce_util.h"

namespace kiln {
namespace {

using reduction::for_each_lane;

// Calls fn(target): `out` itself when it already has dtype `c`, otherwise a
// temporary of dtype c that is then copied (rounded) into out.
template <class Fn>
void compute_in(const Tensor& out, DType c, Fn fn) {
  if (out.dtype() == c) {
    fn(out);
    return;
  }
  Tensor tmp = Tensor::empty(out.sizes(), c);
  fn(tmp);
  out.copy_(tmp);
}

void check_floating(const Tensor& t, std::string_view op) {
  KILN_USER_CHECK(is_floating(t.dtype()), op, ": expected a floating point tensor, got ", dtype_name(t.dtype()));
}

// Replaces each meta tensor among `metas` (None entries stay None) by a tensor of
// its dtype and shape holding the matching values.
ValueList fill_like(ValueList metas, std::initializer_list<const std::vector<double>*> vals) {
  size_t i = 0;
  for (const std::vector<double>* v : vals) {
    if (metas[i].is_tensor()) {
      const Tensor& m = metas[i].to_tensor();
      metas[i] = Tensor::from_vector(*v, m.sizes()).to(m.dtype());
    }
    ++i;
  }
  return metas;
}

// The dtype of saved statistics: float32 when a 16-bit float input comes with
// float32 parameters ("mixed type" in ATen), else the input's dtype.
DType stats_dtype(const Tensor& input, std::initializer_list<const Tensor*> params) {
  if (!is_reduced_float(input.dtype())) return input.dtype();
  for (const Tensor* p : params)
    if (p->defined() && p->dtype() == DType::Float32) return DType::Float32;
  return input.dtype();
}

// ---------------------------------------------------------------- softmax

// One lane of softmax (or log-softmax) in compute type C, the exponential sum in double.
template <bool Log, class C>
void softmax_lane(const C* x, int64_t sx, C* y, int64_t sy, int64_t n) {
  C m = -std::numeric_limits<C>::infinity();
  for (int64_t k = 0; k < n; ++k) m = std::max(m, x[k * sx]);
  double sum = 0;
  for (int64_t k = 0; k < n; ++k) {
    C e = std::exp(x[k * sx] - m);
    if constexpr (!Log) y[k * sy] = e;
    sum += double(e);
  }
  if constexpr (Log) {
    double shift = double(m) + std::log(sum);
    for (int64_t k = 0; k < n; ++k) y[k * sy] = C(double(x[k * sx]) - shift);
  } else {
    for (int64_t k = 0; k < n; ++k) y[k * sy] = C(double(y[k * sy]) / sum);
  }
}

template <bool Log>
void softmax_into(const Tensor& input, int64_t dim, const Tensor& out) {
  Tensor x = upcast(input);
  compute_in(out, x.dtype(), [&](const Tensor& y) {
    dispatch_float(x.dtype(), Log ? "log_softmax" : "softmax", [&]<class C>() {
      for_each_lane<2>({x, y}, dim, [](char** p, const int64_t* s, int64_t n) {
        softmax_lane<Log>(reinterpret_cast<const C*>(p[0]), s[0], reinterpret_cast<C*>(p[1]), s[1], n);
      });
    });
  });
}

// _softmax(self, dim, half_to_float): half_to_float gives float32 for 16-bit input.
ValueList softmax_meta(const OpArgs& a) {
  const Tensor& x = a.tensor(0);
  check_floating(x, a.op_name());
  wrap_dim(a.integer(1), x.dim());
  DType t = a.boolean(2) && is_reduced_float(x.dtype()) ? DType::Float32 : x.dtype();
  return one(Tensor::meta(x.sizes(), t));
}

template <bool Log>
void softmax_compute(const OpArgs& a, const std::vector<Tensor>& outs) {
  softmax_into<Log>(a.tensor(0), a.integer(1), outs[0]);
}

// softmax.int(self, dim, dtype=None): casts to dtype first.
ValueList softmax_int_meta(const OpArgs& a) {
  const Tensor& x = a.tensor(0);
  DType t = a.opt_dtype(2).value_or(x.dtype());
  KILN_USER_CHECK(is_floating(t), a.op_name(), ": expected a floating point dtype, got ", dtype_name(t));
  wrap_dim(a.integer(1), x.dim());
  return one(Tensor::meta(x.sizes(), t));
}

template <bool Log>
void softmax_int_compute(const OpArgs& a, const std::vector<Tensor>& outs) {
  softmax_into<Log>(a.tensor(0).to(outs[0].dtype()), a.integer(1), outs[0]);
}

// _softmax_backward_data(grad_output, output, dim, input_dtype): the gradient
// has grad's dtype, except a float32 grad of a 16-bit input goes back to it.
ValueList softmax_backward_meta(const OpArgs& a) {
  const Tensor &g = a.tensor(0), &y = a.tensor(1);
  KILN_USER_CHECK(g.sizes() == y.sizes(), a.op_name(), ": grad_output ", shape_str(g.sizes()),
                  " and output ", shape_str(y.sizes()), " differ in shape");
  check_floating(g, a.op_name());
  wrap_dim(a.integer(2), g.dim());
  DType in = a[3].to_dtype();
  DType t = g.dtype() == DType::Float32 && is_reduced_float(in) ? in : g.dtype();
  return one(Tensor::meta(g.sizes(), t));
}

// Softmax: gi = y * (g - sum(g * y)); log-softmax: gi = g - exp(y) * sum(g).
template <bool Log, class C>
void softmax_backward_lane(const C* g, int64_t sg, const C* y, int64_t sy, C* gi, int64_t so, int64_t n) {
  double s = 0;
  for (int64_t k = 0; k < n; ++k) s += Log ? double(g[k * sg]) : double(g[k * sg]) * double(y[k * sy]);
  for (int64_t k = 0; k < n; ++k) {
    double gk = g[k * sg], yk = y[k * sy];
    gi[k * so] = C(Log ? gk - std::exp(yk) * s : yk * (gk - s));
  }
}

template <bool Log>
void softmax_backward_compute(const OpArgs& a, const std::vector<Tensor>& outs) {
  Tensor g = upcast(a.tensor(0));
  Tensor y = a.tensor(1).to(g.dtype());
  compute_in(outs[0], g.dtype(), [&](const Tensor& gi) {
    dispatch_float(g.dtype(), a.op_name(), [&]<class C>() {
      for_each_lane<3>({g, y, gi}, a.integer(2), [](char** p, const int64_t* s, int64_t n) {
        softmax_backward_lane<Log>(reinterpret_cast<const C*>(p[0]), s[0], reinterpret_cast<const C*>(p[1]),
                                   s[1], reinterpret_cast<C*>(p[2]), s[2], n);
      });
    });
  });
}

void register_softmax(OpRegistry& r) {
  add_op_with_outputs(r, "aten::_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", softmax_meta,
                      softmax_compute<false>);
  add_op_with_outputs(r, "aten::_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", softmax_meta,
                      softmax_compute<true>);
  add_op_with_outputs(r, "aten::softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor",
                      softmax_int_meta, softmax_int_compute<false>);
  add_op_with_outputs(r, "aten::log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor",
                      softmax_int_meta, softmax_int_compute<true>);
  add_op_with_outputs(r, "aten::_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor",
                      softmax_backward_meta, softmax_backward_compute<false>);
  add_op_with_outputs(r, "aten::_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor",
                      softmax_backward_meta, softmax_backward_compute<true>);
}

// ---------------------------------------------------------------- layer norm

// input viewed as [M, N] with N the product of normalized_shape.
struct LayerNormShape {
  int64_t M = 1, N = 1;
  Shape stat_sizes;  // input's leading sizes, then 1 per normalized dim
};

LayerNormShape layer_norm_shape(const Tensor& input, const std::vector<int64_t>& normalized,
                                const Tensor& weight, const Tensor& bias) {
  const int64_t nd = int64_t(normalized.size());
  KILN_USER_CHECK(nd >= 1, "Expected normalized_shape to be at least 1-dimensional, i.e., containing at "
                  "least one element, but got normalized_shape = ", shape_str(normalized));
  KILN_USER_CHECK(!weight.defined() || weight.sizes() == normalized, "Expected weight to be of same shape as "
                  "normalized_shape, but got weight of shape ", shape_str(weight.sizes()),
                  " and normalized_shape = ", shape_str(normalized));
  KILN_USER_CHECK(!bias.defined() || bias.sizes() == normalized, "Expected bias to be of same shape as "
                  "normalized_shape, but got bias of shape ", shape_str(bias.sizes()),
                  " and normalized_shape = ", shape_str(normalized));
  const int64_t axis = input.dim() - nd;
  bool match = axis >= 0 && std::equal(normalized.begin(), normalized.end(), input.sizes().begin() + axis);
  KILN_USER_CHECK(match, "Given normalized_shape=", shape_str(normalized), ", expected input with shape [*, ",
                  shape_str(normalized).substr(1), ", but got input of size", shape_str(input.sizes()));
  LayerNormShape s;
  for (int64_t d = 0; d < input.dim(); ++d) {
    (d < axis ? s.M : s.N) *= input.size(d);
    s.stat_sizes.push_back(d < axis ? input.size(d) : 1);
  }
  return s;
}

ValueList layer_norm_meta(const OpArgs& a) {
  const Tensor &x = a.tensor(0), w = a.opt_tensor(2), b = a.opt_tensor(3);
  check_floating(x, "layer_norm");
  LayerNormShape s = layer_norm_shape(x, a.ints(1), w, b);
  DType st = stats_dtype(x, {&w, &b});
  return {Tensor::meta(x.sizes(), x.dtype()), Tensor::meta(s.stat_sizes, st), Tensor::meta(s.stat_sizes, st)};
}

// Normalizes each row of a contiguous [M, N] input: y = (x - mean) * rstd * w + b.
template <class T>
void layer_norm_rows(const T* x, T* y, int64_t M, int64_t N, double eps, const std::vector<double>& w,
                     const std::vector<double>& b, double* mean_out, double* rstd_out) {
  parallel_for(0, M, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(N, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * N;
      T* yr = y + r * N;
      auto [mean, m2] = reduction::row_moments(xr, N);
      double rstd = 1.0 / std::sqrt(std::max(m2 / double(N), 0.0) + eps);
      for (int64_t j = 0; j < N; ++j) {
        double v = (double(reduction::value_of(xr[j])) - mean) * rstd;
        if (!w.empty()) v *= w[size_t(j)];
        if (!b.empty()) v += b[size_t(j)];
        yr[j] = reduction::cast_to<T>(v);
      }
      mean_out[r] = mean;
      rstd_out[r] = rstd;
    }
  });
}

void layer_norm_compute(const OpArgs& a, const std::vector<Tensor>& outs) {
  Tensor x = a.tensor(0).contiguous();
  const Tensor w = a.opt_tensor(2), b = a.opt_tensor(3);
  LayerNormShape s = layer_norm_shape(x, a.ints(1), w, b);
  std::vector<double> mean(size_t(s.M)), rstd(size_t(s.M));
  std::vector<double> wd = reduction::as_doubles(w), bd = reduction::as_doubles(b);
  reduction::dispatch_any_float(x.dtype(), "layer_norm", [&]<class T>() {
    layer_norm_rows(x.data<T>(), outs[0].data<T>(), s.M, s.N, a.real(4), wd, bd, mean.data(), rstd.data());
  });
  outs[1].copy_(Tensor::from_vector(mean, outs[1].sizes()));
  outs[2].copy_(Tensor::from_vector(rstd, outs[2].sizes()));
}

// layer_norm(input, normalized_shape, weight, bias, eps, cudnn_enable): the output of native_layer_norm.
ValueList layer_norm_composite(const OpArgs& a) {
  return {invoke("aten::native_layer_norm", {a[0], a[1], a[2], a[3], a[4]})[0]};
}
ValueList layer_norm_composite_meta(const OpArgs& a) {
  return {reduction::meta_of("aten::native_layer_norm", {a[0], a[1], a[2], a[3], a[4]})[0]};
}

// native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask).
ValueList layer_norm_backward_meta(const OpArgs& a) {
  const Tensor &x = a.tensor(1), w = a.opt_tensor(5), b = a.opt_tensor(6);
  layer_norm_shape(x, a.ints(2), w, b);
  auto mask = a.ints(7, 3);
  ValueList out{Value(), Value(), Value()};
  if (mask[0]) out[0] = Tensor::meta(x.sizes(), x.dtype());
  if (mask[1] && w.defined()) out[1] = Tensor::meta(w.sizes(), w.dtype());
  if (mask[2] && b.defined()) out[2] = Tensor::meta(b.sizes(), b.dtype());
  return out;
}

// Row-wise: xhat = (x - mean) * rstd, gw = g * w;
// dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)); dw = sum_rows(g * xhat); db = sum_rows(g).
ValueList layer_norm_backward(const OpArgs& a) {
  ValueList metas = layer_norm_backward_meta(a);
  if (any_meta(a)) return metas;
  const Tensor& x0 = a.tensor(1);
  LayerNormShape s = layer_norm_shape(x0, a.ints(2), a.opt_tensor(5), a.opt_tensor(6));
  const int64_t M = s.M, N = s.N;
  Tensor g = a.tensor(0).to(DType::Float64).contiguous(), x = x0.to(DType::Float64).contiguous();
  std::vector<double> mean = reduction::as_doubles(a.tensor(3)), rstd = reduction::as_doubles(a.tensor(4)), w = reduction::as_doubles(a.opt_tensor(5));
  std::vector<double> dx(size_t(M * N)), dw(size_t(N), 0.0), db(size_t(N), 0.0);
  const double *gp = g.data<double>(), *xp = x.data<double>();
  parallel_for(0, M, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(N, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      double sg = 0, sgx = 0;
      for (int64_t j = 0; j < N; ++j) {
        double gw = gp[r * N + j] * (w.empty() ? 1.0 : w[size_t(j)]);
        sg += gw;
        sgx += gw * (xp[r * N + j] - mean[size_t(r)]) * rstd[size_t(r)];
      }
      for (int64_t j = 0; j < N; ++j) {
        double gw = gp[r * N + j] * (w.empty() ? 1.0 : w[size_t(j)]);
        double xh = (xp[r * N + j] - mean[size_t(r)]) * rstd[size_t(r)];
        dx[size_t(r * N + j)] = rstd[size_t(r)] * (gw - sg / double(N) - xh * sgx / double(N));
      }
    }
  });
  for (int64_t r = 0; r < M; ++r)
    for (int64_t j = 0; j < N; ++j) {
      dw[size_t(j)] += gp[r * N + j] * (xp[r * N + j] - mean[size_t(r)]) * rstd[size_t(r)];
      db[size_t(j)] += gp[r * N + j];
    }
  return fill_like(std::move(metas), {&dx, &dw, &db});
}

void register_layer_norm(OpRegistry& r) {
  add_op_with_outputs(r, "aten::native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)",
                      layer_norm_meta, layer_norm_compute);
  r.add("aten::layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor",
        layer_norm_composite_meta, layer_norm_composite);
  r.add("aten::native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
        layer_norm_backward_meta, layer_norm_backward);
}

// ---------------------------------------------------------------- batch / group norm

// out[a, c, s] = x[a, c, s] * scale[a * sa + c] + shift[a * sa + c] over contiguous [A, C, S].
template <class T>
void affine_channels(const T* x, T* out, int64_t A, int64_t C, int64_t S, const std::vector<double>& scale,
                     const std::vector<double>& shift, int64_t sa) {
  parallel_for(0, A * C, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(S, 1)), [&](int64_t b, int64_t e) {
    for (int64_t ac = b; ac < e; ++ac) {
      size_t k = size_t((ac / C) * sa + ac % C);
      const double sc = scale[k], sh = shift[k];
      const T* xp = x + ac * S;
      T* op = out + ac * S;
      for (int64_t i = 0; i < S; ++i) op[i] = reduction::cast_to<T>(double(reduction::value_of(xp[i])) * sc + sh);
    }
  });
}

void affine_channels(const Tensor& x, const Tensor& out, int64_t C, const std::vector<double>& scale,
                     const std::vector<double>& shift, int64_t sa) {
  const int64_t A = x.dim() > 0 ? x.size(0) : 1;
  const int64_t S = C > 0 && A > 0 ? x.numel() / (A * C) : 0;
  reduction::dispatch_any_float(x.dtype(), "batch_norm", [&]<class T>() {
    affine_channels(x.data<T>(), out.data<T>(), A, C, S, scale, shift, sa);
  });
}

struct BatchNormArgs {
  Tensor input, weight, bias, running_mean, running_var;
  bool training = false;
  double momentum = 0.1, eps = 1e-5;
};

void check_batch_norm(const BatchNormArgs& b) {
  check_floating(b.input, "batch_norm");
  KILN_USER_CHECK(b.input.dim() >= 2, "batch_norm: expected an input with at least 2 dims, got ",
                  shape_str(b.input.sizes()));
  const int64_t C = b.input.size(1);
  const std::pair<const Tensor*, const char*> params[] = {
      {&b.weight, "weight"}, {&b.bias, "bias"}, {&b.running_mean, "running_mean"}, {&b.running_var, "running_var"}};
  for (auto [t, name] : params)
    KILN_USER_CHECK(!t->defined() || t->numel() == C, name, " should contain ", C, " elements not ", t->numel());
  KILN_USER_CHECK(b.training || b.running_mean.defined(), "running_mean must be defined in evaluation mode");
  KILN_USER_CHECK(b.training || b.running_var.defined(), "running_var must be defined in evaluation mode");
}

ValueList batch_norm_meta_of(const BatchNormArgs& b) {
  check_batch_norm(b);
  DType st = stats_dtype(b.input, {&b.weight, &b.bias, &b.running_mean});
  Shape ss{b.training ? b.input.size(1) : 0};
  return {Tensor::meta(b.input.sizes(), b.input.dtype()), Tensor::meta(ss, st), Tensor::meta(ss, st)};
}

// Training: batch statistics (saved, and folded into the running ones with the
// unbiased variance); evaluation: the running statistics.
void batch_norm_run(const BatchNormArgs& b, const std::vector<Tensor>& outs) {
  Tensor x = b.input.contiguous();
  const int64_t C = x.size(1);
  std::vector<double> mean(static_cast<size_t>(C)), invstd(static_cast<size_t>(C));
  if (b.training) {
    reduction::DimMask mask(size_t(x.dim()), true);
    mask[1] = false;
    reduction::Moments m = reduction::moments(x, mask);
    for (int64_t c = 0; c < C; ++c) {
      double var = m.var(c, 0);
      mean[size_t(c)] = m.mean[size_t(c)];
      invstd[size_t(c)] = (var == 0 && b.eps == 0) ? 0.0 : 1.0 / std::sqrt(var + b.eps);
    }
    auto update = [&](const Tensor& running, auto stat) {
      if (!running.defined()) return;
      std::vector<double> r = reduction::as_doubles(running);
      for (int64_t c = 0; c < C; ++c) r[size_t(c)] = b.momentum * stat(c) + (1 - b.momentum) * r[size_t(c)];
      running.copy_(Tensor::from_vector(r, running.sizes()));
    };
    update(b.running_mean, [&](int64_t c) { return m.mean[size_t(c)]; });
    update(b.running_var, [&](int64_t c) { return m.var(c, 1); });
    outs[1].copy_(Tensor::from_vector(mean, {C}));
    outs[2].copy_(Tensor::from_vector(invstd, {C}));
  } else {
    mean = reduction::as_doubles(b.running_mean);
    std::vector<double> var = reduction::as_doubles(b.running_var);
    for (int64_t c = 0; c < C; ++c) invstd[size_t(c)] = 1.0 / std::sqrt(var[size_t(c)] + b.eps);
  }
  std::vector<double> w = reduction::as_doubles(b.weight), bias = reduction::as_doubles(b.bias), scale(static_cast<size_t>(C)), shift(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) {
    scale[size_t(c)] = invstd[size_t(c)] * (w.empty() ? 1.0 : w[size_t(c)]);
    shift[size_t(c)] = (bias.empty() ? 0.0 : bias[size_t(c)]) - mean[size_t(c)] * scale[size_t(c)];
  }
  affine_channels(x, outs[0], C, scale, shift, 0);
}

// Which schema positions hold each batch-norm argument (-1: absent).
struct BatchNormSig {
  int running_mean = 3, running_var = 4, training = 5, momentum = 6, eps = 7;
};

BatchNormArgs parse_batch_norm(const OpArgs& a, const BatchNormSig& s) {
  BatchNormArgs b;
  b.input = a.tensor(0);
  b.weight = a.opt_tensor(1);
  b.bias = a.opt_tensor(2);
  if (s.running_mean >= 0) b.running_mean = a.opt_tensor(size_t(s.running_mean));
  if (s.running_var >= 0) b.running_var = a.opt_tensor(size_t(s.running_var));
  b.training = s.training >= 0 && a.boolean(size_t(s.training));
  b.momentum = a.real(size_t(s.momentum));
  b.eps = a.real(size_t(s.eps));
  return b;
}

void add_batch_norm(OpRegistry& r, std::string_view schema, BatchNormSig sig) {
  add_op_with_outputs(
      r, schema, [sig](const OpArgs& a) { return batch_norm_meta_of(parse_batch_norm(a, sig)); },
      [sig](const OpArgs& a, const std::vector<Tensor>& outs) { batch_norm_run(parse_batch_norm(a, sig), outs); });
}

// The functional form AOTAutograd traces training batch norm to: the
// running statistics' new values come back as outputs 3 and 4, the inputs
// stay as they were (the caller writes them back).
ValueList batch_norm_functional_meta(const OpArgs& a) {
  BatchNormArgs b = parse_batch_norm(a, {});
  ValueList out = batch_norm_meta_of(b);
  out.push_back(Tensor::meta(b.running_mean.sizes(), b.running_mean.dtype()));
  out.push_back(Tensor::meta(b.running_var.sizes(), b.running_var.dtype()));
  return out;
}
void batch_norm_functional(const OpArgs& a, const std::vector<Tensor>& outs) {
  BatchNormArgs b = parse_batch_norm(a, {});
  outs[3].copy_(b.running_mean);
  outs[4].copy_(b.running_var);
  b.running_mean = outs[3], b.running_var = outs[4];
  batch_norm_run(b, {outs[0], outs[1], outs[2]});
}

// batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled).
ValueList batch_norm_composite(const OpArgs& a) {
  ValueList args(a.values().begin(), a.values().begin() + 8);
  return {invoke("aten::native_batch_norm", args)[0]};
}
ValueList batch_norm_composite_meta(const OpArgs& a) {
  ValueList args(a.values().begin(), a.values().begin() + 8);
  return {reduction::meta_of("aten::native_batch_norm", args)[0]};
}

// native_batch_norm_backward(grad_out, input, weight, running_mean, running_var,
//     save_mean, save_invstd, train, eps, output_mask).
ValueList batch_norm_backward_meta(const OpArgs& a) {
  const Tensor &x = a.tensor(1), w = a.opt_tensor(2);
  auto mask = a.ints(9, 3);
  const int64_t C = x.dim() >= 2 ? x.size(1) : 1;
  DType pt = w.defined() ? w.dtype() : x.dtype();
  ValueList out{Value(), Value(), Value()};
  if (mask[0]) out[0] = Tensor::meta(x.sizes(), x.dtype());
  if (mask[1]) out[1] = Tensor::meta({C}, pt);
  if (mask[2]) out[2] = Tensor::meta({C}, pt);
  return out;
}

// Per channel: sum_g = sum(g), dot = sum((x - mean) * g); training:
// dx = (g - sum_g/n - (x - mean) * invstd^2 * dot/n) * invstd * w; eval: dx = g * invstd * w;
// dw = dot * invstd; db = sum_g.
ValueList batch_norm_backward(const OpArgs& a) {
  ValueList metas = batch_norm_backward_meta(a);
  if (any_meta(a)) return metas;
  const bool train = a.boolean(7);
  Tensor g = a.tensor(0).to(DType::Float64).contiguous(), x = a.tensor(1).to(DType::Float64).contiguous();
  const int64_t N = x.size(0), C = x.size(1), S = x.numel() / std::max<int64_t>(N * C, 1);
  std::vector<double> w = reduction::as_doubles(a.opt_tensor(2)), mean(static_cast<size_t>(C)), invstd(static_cast<size_t>(C));
  if (train) {
    mean = reduction::as_doubles(a.tensor(5));
    invstd = reduction::as_doubles(a.tensor(6));
  } else {
    mean = reduction::as_doubles(a.tensor(3));
    std::vector<double> var = reduction::as_doubles(a.tensor(4));
    for (int64_t c = 0; c < C; ++c) invstd[size_t(c)] = 1.0 / std::sqrt(var[size_t(c)] + a.real(8));
  }
  std::vector<double> sum_g(size_t(C), 0.0), dot(size_t(C), 0.0);
  const double *gp = g.data<double>(), *xp = x.data<double>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s) {
        int64_t i = (n * C + c) * S + s;
        sum_g[size_t(c)] += gp[i];
        dot[size_t(c)] += (xp[i] - mean[size_t(c)]) * gp[i];
      }
  const double cnt = double(N * S);
  std::vector<double> dx(size_t(x.numel())), dw(static_cast<size_t>(C)), db = sum_g;
  for (int64_t i = 0; i < x.numel(); ++i) {
    size_t c = size_t((i / S) % C);
    double wc = w.empty() ? 1.0 : w[c];
    dx[size_t(i)] = train ? (gp[i] - sum_g[c] / cnt - (xp[i] - mean[c]) * invstd[c] * invstd[c] * dot[c] / cnt) *
                                invstd[c] * wc
                          : gp[i] * invstd[c] * wc;
  }
  for (int64_t c = 0; c < C; ++c) dw[size_t(c)] = dot[size_t(c)] * invstd[size_t(c)];
  return fill_like(std::move(metas), {&dx, &dw, &db});
}

// native_group_norm(input, weight, bias, N, C, HxW, group, eps) -> (out, mean [N, G], rstd [N, G]).
struct GroupNormShape {
  int64_t N, C, HxW, G;
};

GroupNormShape group_norm_shape(const OpArgs& a) {
  const Tensor& x = a.tensor(0);
  GroupNormShape s{a.integer(3), a.integer(4), a.integer(5), a.integer(6)};
  KILN_USER_CHECK(s.G > 0 && s.C % s.G == 0, "Expected number of channels in input to be divisible by ",
                  "num_groups, but got input of shape ", shape_str(x.sizes()), " and num_groups=", s.G);
  KILN_USER_CHECK(x.numel() == s.N * s.C * s.HxW, "native_group_norm: input of shape ", shape_str(x.sizes()),
                  " does not hold N * C * HxW = ", s.N, " * ", s.C, " * ", s.HxW, " elements");
  for (int i : {1, 2})
    KILN_USER_CHECK(!a.opt_tensor(static_cast<size_t>(i)).defined() || a.opt_tensor(static_cast<size_t>(i)).numel() == s.C,
                    "Expected weight and bias to have ", s.C, " elements");
  return s;
}

ValueList group_norm_meta(const OpArgs& a) {
  const Tensor &x = a.tensor(0), w = a.opt_tensor(1), b = a.opt_tensor(2);
  check_floating(x, "group_norm");
  GroupNormShape s = group_norm_shape(a);
  DType st = stats_dtype(x, {&w, &b});
  return {Tensor::meta(x.sizes(), x.dtype()), Tensor::meta({s.N, s.G}, st), Tensor::meta({s.N, s.G}, st)};
}

void group_norm_compute(const OpArgs& a, const std::vector<Tensor>& outs) {
  GroupNormShape s = group_norm_shape(a);
  Tensor x = a.tensor(0).contiguous();
  const int64_t rows = s.N * s.G, per_group = s.C / s.G, row_len = per_group * s.HxW;
  std::vector<double> mean(static_cast<size_t>(rows)), rstd(static_cast<size_t>(rows));
  const double eps = a.real(7);
  reduction::dispatch_any_float(x.dtype(), "group_norm", [&]<class T>() {
    const T* xp = x.data<T>();
    parallel_for(0, rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(row_len, 1)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t r = b; r < e; ++r) {
                     auto [m, m2] = reduction::row_moments(xp + r * row_len, row_len);
                     mean[size_t(r)] = m;
                     rstd[size_t(r)] = 1.0 / std::sqrt(std::max(m2 / double(row_len), 0.0) + eps);
                   }
                 });
  });
  std::vector<double> w = reduction::as_doubles(a.opt_tensor(1)), bias = reduction::as_doubles(a.opt_tensor(2));
  std::vector<double> scale(size_t(s.N * s.C)), shift(size_t(s.N * s.C));
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t c = 0; c < s.C; ++c) {
      size_t k = size_t(n * s.C + c), g = size_t(n * s.G + c / per_group);
      scale[k] = rstd[g] * (w.empty() ? 1.0 : w[size_t(c)]);
      shift[k] = (bias.empty() ? 0.0 : bias[size_t(c)]) - mean[g] * scale[k];
    }
  affine_channels(x.view({s.N, s.C, s.HxW}), outs[0].view({s.N, s.C, s.HxW}), s.C, scale, shift, s.C);
  outs[1].copy_(Tensor::from_vector(mean, {s.N, s.G}));
  outs[2].copy_(Tensor::from_vector(rstd, {s.N, s.G}));
}

// group_norm(input, num_groups, weight, bias, eps, cudnn_enabled).
ValueList group_norm_args(const OpArgs& a) {
  const Tensor& x = a.tensor(0);
  KILN_USER_CHECK(x.dim() >= 2, "group_norm: expected an input with at least 2 dims, got ", shape_str(x.sizes()));
  const int64_t N = x.size(0), C = x.size(1);
  const int64_t HxW = N * C == 0 ? 0 : x.numel() / (N * C);
  return {a[0], a[2], a[3], N, C, HxW, a[1], a[4]};
}
ValueList group_norm_composite(const OpArgs& a) {
  return {invoke("aten::native_group_norm", group_norm_args(a))[0]};
}
ValueList group_norm_composite_meta(const OpArgs& a) {
  return {reduction::meta_of("aten::native_group_norm", group_norm_args(a))[0]};
}

void register_batch_group_norm(OpRegistry& r) {
  add_batch_norm(r, "aten::native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
                 {});
  add_batch_norm(r, "aten::_native_batch_norm_legit(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!) running_mean, Tensor(b!) running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
                 {});
  add_batch_norm(r, "aten::_native_batch_norm_legit.no_stats(Tensor input, Tensor? weight, Tensor? bias, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
                 {-1, -1, 3, 4, 5});
  add_batch_norm(r, "aten::_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
                 {3, 4, -1, 5, 6});
  add_op_with_outputs(r, "aten::_native_batch_norm_legit_functional(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor, Tensor running_mean_out, Tensor running_var_out)",
                      batch_norm_functional_meta, batch_norm_functional);
  r.add("aten::batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor",
        batch_norm_composite_meta, batch_norm_composite);
  r.add("aten::native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, Tensor? running_mean, Tensor? running_var, Tensor? save_mean, Tensor? save_invstd, bool train, float eps, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
        batch_norm_backward_meta, batch_norm_backward);
  add_op_with_outputs(r, "aten::native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C, SymInt HxW, int group, float eps) -> (Tensor, Tensor, Tensor)",
                      group_norm_meta, group_norm_compute);
  r.add("aten::group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enabled=True) -> Tensor",
        group_norm_composite_meta, group_norm_composite);
}

}  // namespace

void register_normalization_ops(OpRegistry& r) {
  register_softmax(r);
  register_layer_norm(r);
  register_batch_group_norm(r);
}

}  // namespace kiln
