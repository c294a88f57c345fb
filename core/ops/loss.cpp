// Loss functions: the pointwise ones (mse, l1, smooth_l1, huber, bce, kl_div)
// build an elementwise loss in the result dtype and reduce it as PyTorch's
// apply_loss_reduction does; nll_loss works on [N, C, S] views of its input;
// cross_entropy composes log_softmax and nll_loss.
#include <cmath>

#include "core/ops/kernel_util.h"
#include "core/ops/reduce_util.h"

namespace kiln {
namespace {

using reduction::LossReduction;

// ---------------------------------------------------------------- pointwise losses

// The dtype of a pointwise loss of self and target: their promotion, which must be floating.
DType loss_dtype(const Tensor& self, const Tensor& target, std::string_view op) {
  DType t = result_type({self, target});
  KILN_USER_CHECK(is_floating(t), op, ": expected floating point inputs, got ", dtype_name(self.dtype()),
                  " and ", dtype_name(target.dtype()));
  return t;
}

// loss[i] = f(ins[i]...) over the broadcast of all inputs, computed in float32
// (double for float64) and rounded to `dtype`. Undefined inputs read as `fill`.
template <class F, class... Ts>
Tensor elementwise_loss(DType dtype, F f, double fill, const Ts&... ins) {
  const DType c = compute_dtype(dtype);
  auto prep = [&](const Tensor& t) { return t.defined() ? t.to(c) : Tensor::scalar_tensor(fill, c); };
  std::array<Tensor, sizeof...(Ts)> v{prep(ins)...};
  Shape shape;
  for (const Tensor& t : v) shape = broadcast_shapes(shape, t.sizes());
  Tensor out = Tensor::empty(shape, c);
  dispatch_float(c, "loss", [&]<class C>() {
    [&]<size_t... I>(std::index_sequence<I...>) {
      map_elements<C, decltype(I, C{})...>(
          out, [&](decltype(I, C{})... x) { return C(f(double(x)...)); }, v[I].expand(shape)...);
    }(std::index_sequence_for<Ts...>{});
  });
  return out.to(dtype);
}

// A pointwise loss op: the elementwise formula, and the schema position of its reduction.
struct PointwiseLoss {
  const char* name;
  int reduction;
};

ValueList pointwise_loss_meta(const OpArgs& a, const PointwiseLoss& l) {
  const Tensor &x = a.tensor(0), &t = a.tensor(1);
  DType dt = loss_dtype(x, t, l.name);
  Shape s = broadcast_shapes(x.sizes(), t.sizes());
  bool none = reduction::loss_reduction(a[size_t(l.reduction)]) == LossReduction::None;
  return one(Tensor::meta(none ? s : Shape{}, dt));
}

template <class Formula>
void add_pointwise_loss(OpRegistry& r, std::string_view schema, PointwiseLoss l, Formula formula) {
  auto meta = [l](const OpArgs& a) { return pointwise_loss_meta(a, l); };
  auto cpu = [l, meta, formula](const OpArgs& a) -> ValueList {
    ValueList m = meta(a);
    if (any_meta(a)) return m;
    Tensor loss = formula(a, m[0].to_tensor().dtype());
    return one(reduction::apply_loss_reduction(loss, reduction::loss_reduction(a[size_t(l.reduction)])));
  };
  r.add(schema, meta, cpu);
}

Tensor mse_formula(const OpArgs& a, DType dt) {
  return elementwise_loss(dt, [](double x, double y) { return (x - y) * (x - y); }, 0, a.tensor(0), a.tensor(1));
}

Tensor l1_formula(const OpArgs& a, DType dt) {
  return elementwise_loss(dt, [](double x, double y) { return std::abs(x - y); }, 0, a.tensor(0), a.tensor(1));
}

Tensor smooth_l1_formula(const OpArgs& a, DType dt) {
  const double beta = a.real(3);
  KILN_USER_CHECK(beta >= 0, "smooth_l1_loss does not support negative values for beta.");
  return elementwise_loss(
      dt,
      [beta](double x, double y) {
        double d = std::abs(x - y);
        return d < beta ? 0.5 * d * d / beta : d - 0.5 * beta;
      },
      0, a.tensor(0), a.tensor(1));
}

Tensor huber_formula(const OpArgs& a, DType dt) {
  const double delta = a.real(3);
  KILN_USER_CHECK(delta > 0, "huber_loss does not support non-positive values for delta.");
  return elementwise_loss(
      dt,
      [delta](double x, double y) {
        double d = std::abs(x - y);
        return d < delta ? 0.5 * d * d : delta * (d - 0.5 * delta);
      },
      0, a.tensor(0), a.tensor(1));
}

// -w * (t * max(log x, -100) + (1 - t) * max(log(1 - x), -100)), with inputs checked to lie in [0, 1].
Tensor bce_formula(const OpArgs& a, DType dt) {
  const Tensor &x = a.tensor(0), &t = a.tensor(1);
  auto in_unit = [](double v) { return v >= 0 && v <= 1; };
  for (auto [tensor, what] : {std::pair{&x, "input"}, std::pair{&t, "target"}}) {
    std::vector<double> v = reduction::as_doubles(*tensor);
    KILN_USER_CHECK(std::all_of(v.begin(), v.end(), in_unit), "all elements of ", what,
                    " should be between 0 and 1");
  }
  return elementwise_loss(
      dt,
      [](double xv, double tv, double w) {
        return w * ((tv - 1) * std::max(std::log1p(-xv), -100.0) - tv * std::max(std::log(xv), -100.0));
      },
      1, x, t, a.opt_tensor(2));
}

// (1 - t) * x - log_weight * log_sigmoid(x), log_weight = 1 + (pos_weight - 1) * t, times weight.
Tensor bce_logits_formula(const OpArgs& a, DType dt) {
  return elementwise_loss(
      dt,
      [](double x, double t, double w, double pw) {
        double log_sigmoid = std::min(x, 0.0) - std::log1p(std::exp(-std::abs(x)));
        return w * ((1 - t) * x - (1 + (pw - 1) * t) * log_sigmoid);
      },
      1, a.tensor(0), a.tensor(1), a.opt_tensor(2), a.opt_tensor(3));
}

// log_target: exp(t) * (t - x); else xlogy(t, t) - t * x.
Tensor kl_div_formula(const OpArgs& a, DType dt) {
  if (a.boolean(3))
    return elementwise_loss(dt, [](double x, double t) { return std::exp(t) * (t - x); }, 0, a.tensor(0), a.tensor(1));
  return elementwise_loss(
      dt,
      [](double x, double t) { return (t == 0 ? 0.0 : t * std::log(t)) - t * x; },
      0, a.tensor(0), a.tensor(1));
}

// mse_loss_backward(grad_output, self, target, reduction): 2 (x - t) g, divided by numel for Mean.
ValueList mse_backward_meta(const OpArgs& a) {
  const Tensor &g = a.tensor(0), &x = a.tensor(1), &t = a.tensor(2);
  Shape s = broadcast_shapes(broadcast_shapes(x.sizes(), t.sizes()), g.sizes());
  return one(Tensor::meta(s, loss_dtype(x, t, "mse_loss_backward")));
}

ValueList mse_backward(const OpArgs& a) {
  ValueList m = mse_backward_meta(a);
  if (any_meta(a)) return m;
  const Tensor& x = a.tensor(1);
  double norm = reduction::loss_reduction(a[3]) == LossReduction::Mean ? 2.0 / double(x.numel()) : 2.0;
  return one(elementwise_loss(
      m[0].to_tensor().dtype(), [norm](double g, double xv, double tv) { return norm * (xv - tv) * g; }, 0,
      a.tensor(0), x, a.tensor(2)));
}

void register_pointwise_losses(OpRegistry& r) {
  add_pointwise_loss(r, "aten::mse_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor",
                     {"mse_loss", 2}, mse_formula);
  add_pointwise_loss(r, "aten::l1_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor",
                     {"l1_loss", 2}, l1_formula);
  add_pointwise_loss(r, "aten::smooth_l1_loss(Tensor self, Tensor target, int reduction=Mean, float beta=1.0) -> Tensor",
                     {"smooth_l1_loss", 2}, smooth_l1_formula);
  add_pointwise_loss(r, "aten::huber_loss(Tensor self, Tensor target, int reduction=Mean, float delta=1.0) -> Tensor",
                     {"huber_loss", 2}, huber_formula);
  add_pointwise_loss(r, "aten::binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean) -> Tensor",
                     {"binary_cross_entropy", 3}, bce_formula);
  add_pointwise_loss(r, "aten::binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, Tensor? pos_weight=None, int reduction=Mean) -> Tensor",
                     {"binary_cross_entropy_with_logits", 4}, bce_logits_formula);
  add_pointwise_loss(r, "aten::kl_div(Tensor self, Tensor target, int reduction=Mean, *, bool log_target=False) -> Tensor",
                     {"kl_div", 2}, kl_div_formula);
  r.add("aten::mse_loss_backward(Tensor grad_output, Tensor self, Tensor target, int reduction) -> Tensor",
        mse_backward_meta, mse_backward);
}

// ---------------------------------------------------------------- nll_loss

// An nll_loss problem seen as input [N, C, S] and target [N, S].
struct NllView {
  int64_t N = 1, C = 1, S = 1;
  Shape none_sizes;  // the shape of the unreduced loss
};

// Calls fn(n, s, t) for each target t = target[n, s] that is not ignore_index,
// once it is known to name a class.
template <class Fn>
void for_each_target(const std::vector<double>& targets, const NllView& v, int64_t ignore_index, Fn fn) {
  for (int64_t n = 0; n < v.N; ++n)
    for (int64_t s = 0; s < v.S; ++s) {
      int64_t t = int64_t(targets[size_t(n * v.S + s)]);
      if (t == ignore_index) continue;
      KILN_USER_CHECK(t >= 0 && t < v.C, "Target ", t, " is out of bounds.");
      fn(n, s, t);
    }
}

void check_nll_weight(const Tensor& weight, int64_t C) {
  KILN_USER_CHECK(!weight.defined() || (weight.dim() == 1 && weight.numel() == C),
                  "weight tensor should be defined either for all ", C,
                  " classes or no classes but got weight tensor of shape: ", shape_str(weight.sizes()));
}

// nll_loss_forward: input [C] with target [], or [N, C] with target [N].
NllView nll_view_1d2d(const Tensor& self, const Tensor& target, const Tensor& weight) {
  KILN_USER_CHECK(self.dim() > 0 && self.dim() <= 2, "input tensor should be 1D or 2D");
  KILN_USER_CHECK(target.dim() <= 1, "0D or 1D target tensor expected, multi-target not supported");
  bool no_batch = self.dim() == 1 && target.dim() == 0;
  KILN_USER_CHECK(no_batch || self.size(0) == target.size(0), "size mismatch (got input: ",
                  shape_str(self.sizes()), ", target: ", shape_str(target.sizes()), ")");
  NllView v;
  v.N = self.dim() == 2 ? self.size(0) : 1;
  v.C = self.size(-1);
  if (self.dim() == 2) v.none_sizes = {v.N};
  check_nll_weight(weight, v.C);
  return v;
}

// nll_loss2d_forward: input [N, C, H, W] with target [N, H, W].
NllView nll_view_2d(const Tensor& self, const Tensor& target, const Tensor& weight) {
  KILN_USER_CHECK(target.dim() == 3, "only batches of spatial targets supported (3D tensors) but got targets of "
                  "dimension: ", target.dim());
  KILN_USER_CHECK(self.dim() == 4, "only batches of spatial inputs supported (4D tensors), but got input of "
                  "dimension: ", self.dim());
  bool match = self.size(0) == target.size(0) && self.size(2) == target.size(1) && self.size(3) == target.size(2);
  KILN_USER_CHECK(match, "input and target batch or spatial sizes don't match: target ", shape_str(target.sizes()),
                  ", input ", shape_str(self.sizes()));
  NllView v{self.size(0), self.size(1), self.size(2) * self.size(3), target.sizes()};
  check_nll_weight(weight, v.C);
  return v;
}

using NllViewFn = NllView (*)(const Tensor&, const Tensor&, const Tensor&);

ValueList nll_forward_meta(const OpArgs& a, NllViewFn view) {
  const Tensor &x = a.tensor(0), &t = a.tensor(1);
  KILN_USER_CHECK(is_floating(x.dtype()), "nll_loss: expected a floating point input, got ", dtype_name(x.dtype()));
  NllView v = view(x, t, a.opt_tensor(2));
  bool none = reduction::loss_reduction(a[3]) == LossReduction::None;
  return {Tensor::meta(none ? v.none_sizes : Shape{}, x.dtype()), Tensor::meta({}, x.dtype())};
}

// Per-element losses -w[t] * x[n, t, s] (0 where ignored) and the summed weight
// of the elements not ignored.
struct NllResult {
  std::vector<double> loss;
  double total_weight = 0;
};

NllResult nll_core(const Tensor& self, const Tensor& target, const Tensor& weight, const NllView& v,
                   int64_t ignore_index) {
  KILN_USER_CHECK(target.dtype() == DType::Int64 || target.dtype() == DType::UInt8,
                  "expected scalar type Long but found ", dtype_name(target.dtype()));
  std::vector<double> x = reduction::as_doubles(self), w = reduction::as_doubles(weight.defined() ? weight : Tensor());
  std::vector<double> tv = reduction::as_doubles(target);
  NllResult r;
  r.loss.assign(size_t(v.N * v.S), 0.0);
  for_each_target(tv, v, ignore_index, [&](int64_t n, int64_t s, int64_t t) {
    double wt = w.empty() ? 1.0 : w[size_t(t)];
    r.loss[size_t(n * v.S + s)] = -x[size_t((n * v.C + t) * v.S + s)] * wt;
    r.total_weight += wt;
  });
  return r;
}

ValueList nll_forward(const OpArgs& a, NllViewFn view) {
  ValueList m = nll_forward_meta(a, view);
  if (any_meta(a)) return m;
  const Tensor &x = a.tensor(0), &t = a.tensor(1), w = a.opt_tensor(2);
  NllView v = view(x, t, w);
  NllResult r = nll_core(x, t, w, v, a.integer(4));
  LossReduction red = reduction::loss_reduction(a[3]);
  const Tensor &out = m[0].to_tensor(), &tw = m[1].to_tensor();
  Tensor total = Tensor::scalar_tensor(red == LossReduction::None ? 0.0 : r.total_weight, DType::Float64);
  Tensor loss;
  if (red == LossReduction::None) {
    loss = Tensor::from_vector(r.loss, out.sizes());
  } else {
    double sum = 0;
    for (double l : r.loss) sum += l;
    if (red == LossReduction::Mean) sum = t.numel() == 0 ? std::nan("") : sum / r.total_weight;
    loss = Tensor::scalar_tensor(sum, DType::Float64);
  }
  return {loss.to(out.dtype()), total.to(tw.dtype())};
}

// nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight):
// grad_input[n, t, s] = -w[t] * g (g / total_weight for Mean) where not ignored.
ValueList nll_backward_meta(const OpArgs& a) { return one(Tensor::meta(a.tensor(1).sizes(), a.tensor(1).dtype())); }

ValueList nll_backward(const OpArgs& a, NllViewFn view) {
  ValueList m = nll_backward_meta(a);
  if (any_meta(a)) return m;
  const Tensor &x = a.tensor(1), &target = a.tensor(2), w = a.opt_tensor(3);
  NllView v = view(x, target, w);
  LossReduction red = reduction::loss_reduction(a[4]);
  std::vector<double> g = reduction::as_doubles(a.tensor(0)), tv = reduction::as_doubles(target), wv = reduction::as_doubles(w);
  double total = a.tensor(6).item().to_double();
  std::vector<double> gi(size_t(x.numel()), 0.0);
  for_each_target(tv, v, a.integer(5), [&](int64_t n, int64_t s, int64_t t) {
    double go = red == LossReduction::None ? g[size_t(n * v.S + s)] : g[0];
    if (red == LossReduction::Mean) go /= total;
    gi[size_t((n * v.C + t) * v.S + s)] = -(wv.empty() ? 1.0 : wv[size_t(t)]) * go;
  });
  return one(Tensor::from_vector(gi, x.sizes()).to(x.dtype()));
}

// nll_loss_nd(self, target, weight, reduction, ignore_index): any input rank, class dim 1.
ValueList nll_nd_args(const OpArgs& a, std::string& op, Shape& out_sizes) {
  const Tensor &x = a.tensor(0), &t = a.tensor(1);
  KILN_USER_CHECK(x.dim() >= 1, "Expected 1 or more dimensions (got ", x.dim(), ")");
  KILN_USER_CHECK(x.dim() == 1 || t.dim() >= 1, "Expected input batch_size (", x.size(0),
                  ") to match target batch_size (", t.numel(), ").");
  KILN_USER_CHECK(x.dim() == 1 || x.size(0) == t.size(0), "Expected input batch_size (", x.size(0),
                  ") to match target batch_size (", t.size(0), ").");
  ValueList args(a.values().begin(), a.values().begin() + 5);
  op = x.dim() <= 2 ? "aten::nll_loss_forward" : "aten::nll_loss2d_forward";
  if (x.dim() <= 2 || x.dim() == 4) return args;
  const int64_t N = x.size(0), C = x.size(1);
  out_sizes = Shape(x.sizes().begin() + 2, x.sizes().end());
  KILN_USER_CHECK(Shape(t.sizes().begin() + 1, t.sizes().end()) == out_sizes, "Expected target size ",
                  shape_str([&] { Shape s = out_sizes; s.insert(s.begin(), N); return s; }()), ", got ",
                  shape_str(t.sizes()));
  out_sizes.insert(out_sizes.begin(), N);
  bool empty = x.numel() == 0;
  args[0] = x.contiguous().reshape({N, C, empty ? 0 : 1, empty ? 0 : -1});
  args[1] = t.contiguous().reshape({N, empty ? 0 : 1, empty ? 0 : -1});
  return args;
}

ValueList nll_nd(const OpArgs& a, bool meta_only) {
  std::string op;
  Shape out_sizes;
  ValueList args = nll_nd_args(a, op, out_sizes);
  Tensor out = (meta_only ? reduction::meta_of(op, args) : invoke(op, args))[0].to_tensor();
  if (!out_sizes.empty() && reduction::loss_reduction(a[3]) == LossReduction::None) out = out.view(out_sizes);
  return one(out);
}

// ---------------------------------------------------------------- cross_entropy

// Views a [N, C, ...] (or [C]) tensor's values as doubles in [N, C, S] order.
struct ClassView {
  int64_t N = 1, C = 1, S = 1;
  std::vector<double> v;
  double at(int64_t n, int64_t c, int64_t s) const { return v[size_t((n * C + c) * S + s)]; }
};

ClassView class_view(const Tensor& t) {
  ClassView cv;
  if (t.dim() == 1) {
    cv.C = t.size(0);
  } else {
    cv.N = t.size(0);
    cv.C = t.size(1);
    cv.S = cv.N * cv.C == 0 ? 0 : t.numel() / (cv.N * cv.C);
  }
  cv.v = reduction::as_doubles(t);
  return cv;
}

// The [N, ...] shape of a per-sample loss of a [N, C, ...] input ([] for [C]).
Shape sample_sizes(const Tensor& t) {
  if (t.dim() == 1) return {};
  Shape s = t.sizes();
  s.erase(s.begin() + 1);
  return s;
}

Tensor reduce_samples(const std::vector<double>& per_sample, const Shape& sizes, LossReduction red, double divisor,
                      DType dt) {
  if (red == LossReduction::None) return Tensor::from_vector(per_sample, sizes).to(dt);
  double sum = 0;
  for (double l : per_sample) sum += l;
  if (red == LossReduction::Mean) sum /= divisor;
  return Tensor::scalar_tensor(sum, DType::Float64).to(dt);
}

// Soft targets: -sum_c(log_softmax(x) * target' * w), target' = target * (1 - ls) + ls / C;
// Mean divides by the number of samples.
Tensor cross_entropy_probs(const Tensor& logp, const Tensor& target, const Tensor& weight, LossReduction red,
                           double ls) {
  KILN_USER_CHECK(is_floating(target.dtype()), "Expected floating point type for target with class "
                  "probabilities, got ", dtype_name(target.dtype()));
  ClassView lp = class_view(logp), tg = class_view(target);
  check_nll_weight(weight, lp.C);
  std::vector<double> w = reduction::as_doubles(weight), per(size_t(lp.N * lp.S), 0.0);
  for (int64_t n = 0; n < lp.N; ++n)
    for (int64_t c = 0; c < lp.C; ++c)
      for (int64_t s = 0; s < lp.S; ++s) {
        double t = tg.at(n, c, s) * (1 - ls) + ls / double(lp.C);
        per[size_t(n * lp.S + s)] -= lp.at(n, c, s) * t * (w.empty() ? 1.0 : w[size_t(c)]);
      }
  double samples = lp.C == 0 ? 0 : double(logp.numel()) / double(lp.C);
  Tensor out = reduce_samples(per, sample_sizes(logp), red, samples, logp.dtype());
  if (red == LossReduction::Mean && logp.numel() == 0) out.fill_(std::nan(""));
  return out;
}

// Hard targets with label smoothing: (1 - ls) * nll + ls / C * smooth, where smooth
// is -sum_c(log_softmax(x) * w) per sample (0 where ignored), averaged by the
// total weight (or count) of the targets not ignored.
Tensor cross_entropy_smoothed(const Tensor& logp, const Tensor& target, const Tensor& weight, LossReduction red,
                              int64_t ignore, double ls) {
  Tensor nll = invoke_tensor("aten::nll_loss_nd", {logp, target, weight.defined() ? Value(weight) : Value(),
                                                   int64_t(red), ignore});
  ClassView lp = class_view(logp);
  std::vector<double> w = reduction::as_doubles(weight), tv = reduction::as_doubles(target), smooth(size_t(lp.N * lp.S), 0.0);
  double divisor = 0;
  for_each_target(tv, NllView{lp.N, lp.C, lp.S, {}}, ignore, [&](int64_t n, int64_t s, int64_t t) {
    for (int64_t c = 0; c < lp.C; ++c) smooth[size_t(n * lp.S + s)] -= lp.at(n, c, s) * (w.empty() ? 1.0 : w[size_t(c)]);
    divisor += w.empty() ? 1.0 : w[size_t(t)];
  });
  Tensor sm = reduce_samples(smooth, sample_sizes(logp), red, divisor, DType::Float64);
  std::vector<double> nv = reduction::as_doubles(nll), sv = reduction::as_doubles(sm);
  for (size_t i = 0; i < nv.size(); ++i) nv[i] = (1 - ls) * nv[i] + sv[i] * (ls / double(lp.C));
  return Tensor::from_vector(nv, nll.sizes()).to(logp.dtype());
}

ValueList cross_entropy_meta(const OpArgs& a) {
  const Tensor& x = a.tensor(0);
  KILN_USER_CHECK(x.dim() >= 1, "cross_entropy: expected an input with at least 1 dim");
  KILN_USER_CHECK(is_floating(x.dtype()), "cross_entropy: expected a floating point input, got ",
                  dtype_name(x.dtype()));
  bool none = reduction::loss_reduction(a[3]) == LossReduction::None;
  return one(Tensor::meta(none ? sample_sizes(x) : Shape{}, x.dtype()));
}

ValueList cross_entropy(const OpArgs& a) {
  if (any_meta(a)) return cross_entropy_meta(a);
  const Tensor &x = a.tensor(0), &t = a.tensor(1), w = a.opt_tensor(2);
  LossReduction red = reduction::loss_reduction(a[3]);
  const int64_t ignore = a.integer(4);
  const double ls = a.real(5);
  KILN_USER_CHECK(ls >= 0.0 && ls <= 1.0, "label_smoothing must be between 0.0 and 1.0. Got: ", ls);
  const int64_t class_dim = x.dim() == 1 ? 0 : 1;
  Tensor logp = invoke_tensor("aten::log_softmax.int", {x, class_dim});
  if (x.sizes() == t.sizes()) {
    KILN_USER_CHECK(ignore < 0, "ignore_index is not supported for floating point target");
    return one(cross_entropy_probs(logp, t, w, red, ls));
  }
  ValueList nll_args{logp, t, w.defined() ? Value(w) : Value(), int64_t(red), ignore};
  if (ls > 0) return one(cross_entropy_smoothed(logp, t, w, red, ignore, ls));
  return one(invoke_tensor("aten::nll_loss_nd", nll_args));
}

void register_nll(OpRegistry& r) {
  struct Variant {
    const char* suffix;
    NllViewFn view;
  };
  for (Variant v : {Variant{"", nll_view_1d2d}, Variant{"2d", nll_view_2d}}) {
    NllViewFn view = v.view;
    std::string name = std::string("aten::nll_loss") + v.suffix;
    r.add(name + "_forward(Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index) -> (Tensor output, Tensor total_weight)",
          [view](const OpArgs& a) { return nll_forward_meta(a, view); },
          [view](const OpArgs& a) { return nll_forward(a, view); });
    r.add(name + "_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index, Tensor total_weight) -> Tensor",
          nll_backward_meta, [view](const OpArgs& a) { return nll_backward(a, view); });
    std::string fwd = name + "_forward";
    auto composite = [fwd](const OpArgs& a) { return ValueList{invoke(fwd, a.values())[0]}; };
    auto composite_meta = [fwd](const OpArgs& a) { return ValueList{reduction::meta_of(fwd, a.values())[0]}; };
    r.add(name + "(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100) -> Tensor",
          composite_meta, composite);
  }
  r.add("aten::nll_loss_nd(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100) -> Tensor",
        [](const OpArgs& a) { return nll_nd(a, true); }, [](const OpArgs& a) { return nll_nd(a, false); });
  r.add("aten::cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100, float label_smoothing=0.0) -> Tensor",
        cross_entropy_meta, cross_entropy);
}

}  // namespace

void register_loss_ops(OpRegistry& r) {
  register_pointwise_losses(r);
  register_nll(r);
}

}  // namespace kiln
