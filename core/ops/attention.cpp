// The scaled-dot-product-attention kernels F.scaled_dot_product_attention
// dispatches to, with PyTorch 2.11's schemas, as AOT graphs and TORCH_TRACE
// dumps name them: the CPU flash kernel (`_for_cpu`), the memory-efficient one,
// the CUDA flash one and the cuDNN one (2.11's first choice for 16-bit CUDA
// attention, e.g. on an H200), each with its backward.
//
// Numbers: every kernel computes in float64 from its operands and rounds once
// into the output dtype. PyTorch's CPU flash kernel accumulates in float32 over
// key blocks of its own choosing (online softmax), so no float32 order of
// Kiln's would reproduce its bits; the float64 result is the correctly rounded
// one, whose distance to PyTorch's is PyTorch's own rounding error (about
// 1e-7 relative for float32) and never more. The reference tests compare with
// plain matmul + softmax in float64 (tests/core/test_ops_attention.cpp).
//
// Semantics shared by all four: query [B, Hq, L, E], key [B, Hk, S, E],
// value [B, Hk, S, Ev]; scale defaults to 1/sqrt(E); is_causal masks key n
// for query m when n > m (top-left aligned, as PyTorch's kernels do); an
// attention mask / bias broadcastable to [B, Hq, L, S] is added to the scaled
// scores (a bool mask keeps where true and gives -inf elsewhere); when Hq is a
// multiple of Hk, query head h reads key/value head h / (Hq / Hk) (grouped
// query attention). logsumexp[b, h, m] = log(sum_n exp(score[m, n])), the
// statistic the backward kernels recompute probabilities from:
// P = exp(score - logsumexp). A row whose every score is -inf gives NaN, as
// softmax does.
//
// dropout_p > 0 is refused: the CUDA kernels draw their dropout masks from a
// philox stream Kiln cannot reproduce, and the CPU kernel refuses it itself.
#include <cmath>
#include <limits>
#include <vector>

#include "core/ops/kernel_util.h"
#include "core/ops/layout_util.h"
#include "core/tensor/parallel.h"

namespace kiln {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

const char* const kForCpu = "_scaled_dot_product_flash_attention_for_cpu";
const char* const kForCpuBackward = "_scaled_dot_product_flash_attention_for_cpu_backward";
const char* const kEfficient = "_scaled_dot_product_efficient_attention";
const char* const kEfficientBackward = "_scaled_dot_product_efficient_attention_backward";
const char* const kFlash = "_scaled_dot_product_flash_attention";
const char* const kFlashBackward = "_scaled_dot_product_flash_attention_backward";
const char* const kCudnn = "_scaled_dot_product_cudnn_attention";
const char* const kCudnnBackward = "_scaled_dot_product_cudnn_attention_backward";

struct Dims {
  int64_t B = 0, Hq = 0, Hk = 0, L = 0, S = 0, E = 0, Ev = 0;
};

// The checks every kernel makes on query, key and value (messages name the op).
Dims check_qkv(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, bool same_head_dim) {
  KILN_USER_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, op,
                  ": expected 4-D query, key and value ([batch, heads, seq_len, head_dim]), got query ",
                  shape_str(q.sizes()), ", key ", shape_str(k.sizes()), ", value ", shape_str(v.sizes()));
  KILN_USER_CHECK(is_floating(q.dtype()), op, ": expected a floating point query, got ", dtype_name(q.dtype()));
  KILN_USER_CHECK(k.dtype() == q.dtype() && v.dtype() == q.dtype(), op,
                  ": expected query, key and value of one dtype, got ", dtype_name(q.dtype()), ", ",
                  dtype_name(k.dtype()), " and ", dtype_name(v.dtype()));
  Dims d{q.size(0), q.size(1), k.size(1), q.size(2), k.size(2), q.size(3), v.size(3)};
  KILN_USER_CHECK(k.size(0) == d.B && v.size(0) == d.B, op, ": query, key and value batch sizes differ (",
                  d.B, ", ", k.size(0), ", ", v.size(0), ")");
  KILN_USER_CHECK(v.size(1) == d.Hk, op, ": key and value head counts differ (", d.Hk, " and ", v.size(1), ")");
  KILN_USER_CHECK(d.Hk > 0 ? d.Hq % d.Hk == 0 : d.Hq == 0, op, ": query heads (", d.Hq,
                  ") must be a multiple of key/value heads (", d.Hk, ")");
  KILN_USER_CHECK(v.size(2) == d.S, op, ": key and value sequence lengths differ (", d.S, " and ", v.size(2), ")");
  KILN_USER_CHECK(k.size(3) == d.E, op, ": query and key head dims differ (", d.E, " and ", k.size(3), ")");
  if (same_head_dim)
    KILN_USER_CHECK(d.Ev == d.E, op, ": query, key and value must have the same head dim, got ", d.E, " and value ",
                    d.Ev);
  return d;
}

void check_no_dropout(const char* op, double p) {
  KILN_USER_CHECK(p == 0.0, op, ": dropout_p = ", p,
                  " is not supported: Kiln cannot reproduce the dropout mask PyTorch's kernel draws (only dropout_p "
                  "= 0)");
}

// An attention mask / bias: floating (added) or bool (where false: -inf), broadcastable to [B, Hq, L, S].
void check_mask(const char* op, const Tensor& m, const Dims& d, bool allow_bool) {
  if (!m.defined()) return;
  KILN_USER_CHECK(is_floating(m.dtype()) || (allow_bool && m.dtype() == DType::Bool), op,
                  ": expected a floating point", allow_bool ? " or bool" : "", " attention mask, got ",
                  dtype_name(m.dtype()));
  KILN_USER_CHECK(m.dim() <= 4, op, ": attention mask of ", m.dim(), " dims (at most 4)");
  const Shape full{d.B, d.Hq, d.L, d.S};
  for (int64_t i = 0; i < m.dim(); ++i) {
    int64_t s = m.size(m.dim() - 1 - i), want = full[size_t(3 - i)];
    KILN_USER_CHECK(s == want || s == 1, op, ": attention mask of shape ", shape_str(m.sizes()),
                    " does not broadcast to ", shape_str(full));
  }
}

double scale_of(const OpArgs& a, size_t i, const Dims& d) {
  std::optional<double> s = a.opt_real(i);
  return s ? *s : 1.0 / std::sqrt(double(d.E));
}

// The float64 accumulation type PyTorch gives logsumexp: float32, or float64 for float64 operands.
DType lse_dtype(DType t) { return t == DType::Float64 ? DType::Float64 : DType::Float32; }

// Strides of a [B, H, X, Y] tensor laid out as [B, X, H, Y] (ATen's transpose(1, 2) of a contiguous one).
Shape bxhy_strides(int64_t B, int64_t H, int64_t X, int64_t Y) {
  (void)B;
  return Shape{X * H * Y, Y, H * Y, 1};
}

// The operands of one attention problem in float64, contiguous; the mask as a
// float64 view broadcast to [B, Hq, L, S] (stride 0 on broadcast dims).
struct Problem {
  Dims d;
  double scale = 1;
  bool causal = false;
  Tensor q, k, v, mask;
  const double* qp = nullptr;
  const double* kp = nullptr;
  const double* vp = nullptr;
  const double* mp = nullptr;
  Shape ms;  // mask strides over [B, Hq, L, S]

  Problem(const Dims& dims, const Tensor& q0, const Tensor& k0, const Tensor& v0, const Tensor& m0, bool is_causal,
          double sc)
      : d(dims), scale(sc), causal(is_causal) {
    q = q0.to(DType::Float64).contiguous();
    k = k0.to(DType::Float64).contiguous();
    v = v0.to(DType::Float64).contiguous();
    qp = q.data<double>();
    kp = k.data<double>();
    vp = v.data<double>();
    if (m0.defined()) {
      if (m0.dtype() == DType::Bool) {
        Tensor keep = m0.contiguous();
        mask = Tensor::empty(keep.sizes(), DType::Float64);
        const bool* src = keep.data<bool>();
        double* dst = mask.data<double>();
        for (int64_t i = 0; i < keep.numel(); ++i) dst[i] = src[i] ? 0.0 : -kInf;
      } else {
        mask = m0.to(DType::Float64).contiguous();
      }
      mask = mask.expand({d.B, d.Hq, d.L, d.S});
      mp = mask.data<double>();
      ms = mask.strides();
    }
  }

  int64_t kv_head(int64_t h) const { return h / (d.Hq / d.Hk); }

  // The scaled, masked scores of query row m of (b, h) into x[0..S).
  void scores(int64_t b, int64_t h, int64_t m, double* x) const {
    const double* qr = qp + ((b * d.Hq + h) * d.L + m) * d.E;
    const double* kb = kp + (b * d.Hk + kv_head(h)) * d.S * d.E;
    const double* mr = mp ? mp + b * ms[0] + h * ms[1] + m * ms[2] : nullptr;
    for (int64_t n = 0; n < d.S; ++n) {
      if (causal && n > m) {
        x[n] = -kInf;
        continue;
      }
      const double* kr = kb + n * d.E;
      double dot = 0;
      for (int64_t e = 0; e < d.E; ++e) dot += qr[e] * kr[e];
      x[n] = scale * dot + (mr ? mr[n * ms[3]] : 0.0);
    }
  }
};

// out [B, Hq, L, Ev] and lse [B, Hq, L], contiguous float64.
void attention_forward(const Problem& p, double* out, double* lse) {
  const Dims& d = p.d;
  const int64_t work = std::max<int64_t>(1, d.L * d.S * (d.E + d.Ev));
  parallel_for(0, d.B * d.Hq, std::max<int64_t>(1, kParallelGrain / work), [&](int64_t r0, int64_t r1) {
    std::vector<double> x(size_t(d.S));
    for (int64_t bh = r0; bh < r1; ++bh) {
      const int64_t b = bh / d.Hq, h = bh % d.Hq;
      const double* vb = p.vp + (b * d.Hk + p.kv_head(h)) * d.S * d.Ev;
      for (int64_t m = 0; m < d.L; ++m) {
        p.scores(b, h, m, x.data());
        double mx = -kInf;
        for (int64_t n = 0; n < d.S; ++n) mx = std::isnan(x[size_t(n)]) || std::isnan(mx) ? NAN : std::max(mx, x[size_t(n)]);
        double sum = 0;
        for (int64_t n = 0; n < d.S; ++n) sum += (x[size_t(n)] = std::exp(x[size_t(n)] - mx));
        double* o = out + (bh * d.L + m) * d.Ev;
        for (int64_t e = 0; e < d.Ev; ++e) o[e] = 0;
        for (int64_t n = 0; n < d.S; ++n) {
          const double pr = x[size_t(n)] / sum;
          const double* vr = vb + n * d.Ev;
          for (int64_t e = 0; e < d.Ev; ++e) o[e] += pr * vr[e];
        }
        lse[bh * d.L + m] = mx + std::log(sum);
      }
    }
  });
}

// Gradients from grad_out [B, Hq, L, Ev] and lse [B, Hq, L] (contiguous
// float64): dq like q, dk like k, dv like v, and (when dscores is given) the
// gradient of the scores' additive mask, [B, Hq, L, S]. With
// P = exp(score - lse) recomputed, dP = dO V^T and dS = P (dP - rowsum(P dP)):
// dq = scale dS K, dk = scale dS^T Q, dv = P^T dO, dmask = dS.
void attention_backward(const Problem& p, const double* dout, const double* lse, double* dq, double* dk, double* dv,
                        double* dscores) {
  const Dims& d = p.d;
  const int64_t group = d.Hq / d.Hk;
  const int64_t work = std::max<int64_t>(1, group * d.L * d.S * (2 * d.E + 2 * d.Ev));
  std::fill(dq, dq + d.B * d.Hq * d.L * d.E, 0.0);
  std::fill(dk, dk + d.B * d.Hk * d.S * d.E, 0.0);
  std::fill(dv, dv + d.B * d.Hk * d.S * d.Ev, 0.0);
  // One task per (batch, key head): it owns dk and dv of that head and dq of its query heads.
  parallel_for(0, d.B * d.Hk, std::max<int64_t>(1, kParallelGrain / work), [&](int64_t r0, int64_t r1) {
    std::vector<double> pr(size_t(d.S)), ds(size_t(d.S));
    for (int64_t bk = r0; bk < r1; ++bk) {
      const int64_t b = bk / d.Hk, hk = bk % d.Hk;
      const double* kb = p.kp + bk * d.S * d.E;
      const double* vb = p.vp + bk * d.S * d.Ev;
      double* dkb = dk + bk * d.S * d.E;
      double* dvb = dv + bk * d.S * d.Ev;
      for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
        const int64_t bh = b * d.Hq + h;
        for (int64_t m = 0; m < d.L; ++m) {
          p.scores(b, h, m, pr.data());
          const double l = lse[bh * d.L + m];
          const double* go = dout + (bh * d.L + m) * d.Ev;
          double rowsum = 0;
          for (int64_t n = 0; n < d.S; ++n) {
            const double pn = std::exp(pr[size_t(n)] - l);
            pr[size_t(n)] = pn;
            const double* vr = vb + n * d.Ev;
            double dp = 0;
            for (int64_t e = 0; e < d.Ev; ++e) dp += go[e] * vr[e];
            ds[size_t(n)] = dp;
            rowsum += pn * dp;
          }
          const double* qr = p.qp + (bh * d.L + m) * d.E;
          double* dqr = dq + (bh * d.L + m) * d.E;
          double* dsr = dscores ? dscores + (bh * d.L + m) * d.S : nullptr;
          for (int64_t n = 0; n < d.S; ++n) {
            const double pn = pr[size_t(n)];
            const double g = pn * (ds[size_t(n)] - rowsum);
            if (dsr) dsr[n] = g;
            if (pn != 0) {
              double* dvr = dvb + n * d.Ev;
              for (int64_t e = 0; e < d.Ev; ++e) dvr[e] += pn * go[e];
            }
            if (g != 0) {
              const double gs = g * p.scale;
              const double* kr = kb + n * d.E;
              double* dkr = dkb + n * d.E;
              for (int64_t e = 0; e < d.E; ++e) {
                dqr[e] += gs * kr[e];
                dkr[e] += gs * qr[e];
              }
            }
          }
        }
      }
    }
  });
}

// A float64 result copied into a new tensor with the meta's sizes, strides and dtype.
Value materialize(const Tensor& meta, const Tensor& f64) {
  Tensor t = new_strided(meta.sizes(), meta.strides(), meta.dtype(), false);
  t.copy_(f64.reshape(meta.sizes()));
  return Value(std::move(t));
}

// The tensor `full` ([B, Hq, L, S]) summed down to `shape`, which broadcasts to it.
Tensor sum_to(const Tensor& full, const Shape& shape) {
  Tensor t = full;
  const int64_t lead = full.dim() - int64_t(shape.size());
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < full.dim(); ++i)
    if (i < lead || shape[size_t(i - lead)] == 1) dims.push_back(i);
  if (!dims.empty()) t = invoke_tensor("aten::sum.dim_IntList", {t, Value::int_list(dims), true});
  return t.reshape(shape);
}

// Runs the forward: out [B, Hq, L, Ev] and lse [B, Hq, L] as float64 tensors.
std::pair<Tensor, Tensor> run_forward(const Problem& p) {
  const Dims& d = p.d;
  Tensor out = Tensor::empty({d.B, d.Hq, d.L, d.Ev}, DType::Float64);
  Tensor lse = Tensor::empty({d.B, d.Hq, d.L}, DType::Float64);
  attention_forward(p, out.data<double>(), lse.data<double>());
  return {out, lse};
}

struct Grads {
  Tensor dq, dk, dv, dscores;
};

Grads run_backward(const Problem& p, const Tensor& grad_out, const Tensor& lse, bool want_dscores) {
  const Dims& d = p.d;
  KILN_USER_CHECK(grad_out.sizes() == (Shape{d.B, d.Hq, d.L, d.Ev}), "grad_out of shape ",
                  shape_str(grad_out.sizes()), ", expected ", shape_str(Shape{d.B, d.Hq, d.L, d.Ev}));
  Tensor go = grad_out.to(DType::Float64).contiguous();
  Tensor l = lse.to(DType::Float64).contiguous();
  Grads g;
  g.dq = Tensor::empty({d.B, d.Hq, d.L, d.E}, DType::Float64);
  g.dk = Tensor::empty({d.B, d.Hk, d.S, d.E}, DType::Float64);
  g.dv = Tensor::empty({d.B, d.Hk, d.S, d.Ev}, DType::Float64);
  if (want_dscores) g.dscores = Tensor::empty({d.B, d.Hq, d.L, d.S}, DType::Float64);
  attention_backward(p, go.data<double>(), l.data<double>(), g.dq.data<double>(), g.dk.data<double>(),
                     g.dv.data<double>(), want_dscores ? g.dscores.data<double>() : nullptr);
  return g;
}

// logsumexp read by a backward: [B, Hq, >= L] (the efficient kernel pads to a multiple of 32).
Tensor lse_rows(const char* op, const Tensor& lse, const Dims& d) {
  KILN_USER_CHECK(lse.dim() == 3 && lse.size(0) == d.B && lse.size(1) == d.Hq && lse.size(2) >= d.L, op,
                  ": logsumexp of shape ", shape_str(lse.sizes()), ", expected ", shape_str(Shape{d.B, d.Hq, d.L}));
  return lse.narrow(2, 0, d.L);
}

// The gradients' metas: in the kernels' [B, X, H, Y] storage (the CPU and
// efficient backwards), or laid out like their inputs (flash, cuDNN: empty_like).
ValueList bxhy_grad_metas(const Tensor& q, const Tensor& k, const Tensor& v, const Dims& d) {
  return {Tensor::meta_strided(q.sizes(), bxhy_strides(d.B, d.Hq, d.L, d.E), q.dtype()),
          Tensor::meta_strided(k.sizes(), bxhy_strides(d.B, d.Hk, d.S, d.E), k.dtype()),
          Tensor::meta_strided(v.sizes(), bxhy_strides(d.B, d.Hk, d.S, d.Ev), v.dtype())};
}

ValueList grad_metas_like_inputs(const Tensor& q, const Tensor& k, const Tensor& v) {
  return {Tensor::meta_strided(q.sizes(), preserve_strides(q), q.dtype()),
          Tensor::meta_strided(k.sizes(), preserve_strides(k), k.dtype()),
          Tensor::meta_strided(v.sizes(), preserve_strides(v), v.dtype())};
}

// dq, dk, dv written into tensors laid out as the first three metas say.
ValueList materialize_grads(const ValueList& metas, const Grads& g) {
  return {materialize(metas[0].to_tensor(), g.dq), materialize(metas[1].to_tensor(), g.dk),
          materialize(metas[2].to_tensor(), g.dv)};
}

// ---------------------------------------------------------------- _for_cpu
// (query, key, value, dropout_p, is_causal, *, attn_mask, scale) -> (output, logsumexp)

ValueList for_cpu_meta(const OpArgs& a) {
  const Tensor &q = a.tensor(0), &k = a.tensor(1), &v = a.tensor(2);
  Dims d = check_qkv(kForCpu, q, k, v, false);
  check_no_dropout(kForCpu, a.real(3));
  check_mask(kForCpu, a.opt_tensor(5), d, true);
  return {Tensor::meta_strided({d.B, d.Hq, d.L, d.Ev}, bxhy_strides(d.B, d.Hq, d.L, d.Ev), q.dtype()),
          Tensor::meta_strided({d.B, d.Hq, d.L}, Shape{d.L * d.Hq, 1, d.Hq}, lse_dtype(q.dtype()))};
}

ValueList for_cpu(const OpArgs& a) {
  ValueList metas = for_cpu_meta(a);
  if (any_meta(a)) return metas;
  Dims d = check_qkv(kForCpu, a.tensor(0), a.tensor(1), a.tensor(2), false);
  Problem p(d, a.tensor(0), a.tensor(1), a.tensor(2), a.opt_tensor(5), a.boolean(4), scale_of(a, 6, d));
  auto [out, lse] = run_forward(p);
  return {materialize(metas[0].to_tensor(), out), materialize(metas[1].to_tensor(), lse)};
}

// (grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, *, attn_mask, scale) -> (grad_query, grad_key, grad_value)
ValueList for_cpu_backward_meta(const OpArgs& a) {
  const Tensor &q = a.tensor(1), &k = a.tensor(2), &v = a.tensor(3);
  Dims d = check_qkv(kForCpuBackward, q, k, v, false);
  check_no_dropout(kForCpuBackward, a.real(6));
  check_mask(kForCpuBackward, a.opt_tensor(8), d, true);
  lse_rows(kForCpuBackward, a.tensor(5), d);
  return bxhy_grad_metas(q, k, v, d);
}

ValueList for_cpu_backward(const OpArgs& a) {
  ValueList metas = for_cpu_backward_meta(a);
  if (any_meta(a)) return metas;
  Dims d = check_qkv(kForCpuBackward, a.tensor(1), a.tensor(2), a.tensor(3), false);
  Problem p(d, a.tensor(1), a.tensor(2), a.tensor(3), a.opt_tensor(8), a.boolean(7), scale_of(a, 9, d));
  return materialize_grads(metas, run_backward(p, a.tensor(0), lse_rows(kForCpuBackward, a.tensor(5), d), false));
}

// ---------------------------------------------------------------- efficient
// (query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal, *, scale)
//   -> (output, log_sumexp, philox_seed, philox_offset)
// log_sumexp is [B, H, ceil(L / 32) * 32] (the rows past L hold +inf, as the
// CUDA kernel pads them) when compute_log_sumexp, else [B, H, 0]; the philox
// seed and offset are int64 scalars (zero: no dropout is drawn).

int64_t lse_padded(int64_t L) { return (L + 31) / 32 * 32; }

ValueList efficient_meta(const OpArgs& a) {
  const Tensor &q = a.tensor(0), &k = a.tensor(1), &v = a.tensor(2);
  Dims d = check_qkv(kEfficient, q, k, v, false);
  check_mask(kEfficient, a.opt_tensor(3), d, false);
  check_no_dropout(kEfficient, a.real(5));
  const int64_t lse_len = a.boolean(4) ? lse_padded(d.L) : 0;
  return {Tensor::meta_strided({d.B, d.Hq, d.L, d.Ev}, bxhy_strides(d.B, d.Hq, d.L, d.Ev), q.dtype()),
          Tensor::meta({d.B, d.Hq, lse_len}, lse_dtype(q.dtype())), Tensor::meta({}, DType::Int64),
          Tensor::meta({}, DType::Int64)};
}

ValueList efficient(const OpArgs& a) {
  ValueList metas = efficient_meta(a);
  if (any_meta(a)) return metas;
  Dims d = check_qkv(kEfficient, a.tensor(0), a.tensor(1), a.tensor(2), false);
  Problem p(d, a.tensor(0), a.tensor(1), a.tensor(2), a.opt_tensor(3), a.boolean(6), scale_of(a, 7, d));
  auto [out, lse] = run_forward(p);
  const Tensor& lse_meta = metas[1].to_tensor();
  Tensor lse_out = Tensor::full(lse_meta.sizes(), Scalar(kInf), lse_meta.dtype());
  if (lse_meta.size(2) > 0) lse_out.narrow(2, 0, d.L).copy_(lse);
  return {materialize(metas[0].to_tensor(), out), Value(lse_out), Tensor::zeros({}, DType::Int64),
          Tensor::zeros({}, DType::Int64)};
}

// (grad_out_, query, key, value, attn_bias, out, logsumexp, philox_seed, philox_offset, dropout_p,
//  bool[4] grad_input_mask, is_causal, *, scale) -> (grad_query, grad_key, grad_value, grad_bias)
// grad_bias (when attn_bias is given and grad_input_mask[3]) has attn_bias's
// shape, broadcast dims summed; its rows are padded to 16 elements as the
// CUDA kernel allocates them.
ValueList efficient_backward_meta(const OpArgs& a) {
  const Tensor &q = a.tensor(1), &k = a.tensor(2), &v = a.tensor(3), bias = a.opt_tensor(4);
  Dims d = check_qkv(kEfficientBackward, q, k, v, false);
  check_mask(kEfficientBackward, bias, d, false);
  check_no_dropout(kEfficientBackward, a.real(9));
  lse_rows(kEfficientBackward, a.tensor(6), d);
  std::vector<int64_t> mask = a.ints(10, 4);
  ValueList out = bxhy_grad_metas(q, k, v, d);
  out.emplace_back();
  if (bias.defined() && mask[3]) {
    Shape padded = bias.sizes();
    if (!padded.empty()) padded.back() = (padded.back() + 15) / 16 * 16;
    out[3] = Tensor::meta_strided(bias.sizes(), contiguous_strides(padded), bias.dtype());
  }
  return out;
}

ValueList efficient_backward(const OpArgs& a) {
  ValueList metas = efficient_backward_meta(a);
  if (any_meta(a)) return metas;
  Dims d = check_qkv(kEfficientBackward, a.tensor(1), a.tensor(2), a.tensor(3), false);
  const Tensor bias = a.opt_tensor(4);
  Problem p(d, a.tensor(1), a.tensor(2), a.tensor(3), bias, a.boolean(11), scale_of(a, 12, d));
  const bool want_bias = metas[3].is_tensor();
  Grads g = run_backward(p, a.tensor(0), lse_rows(kEfficientBackward, a.tensor(6), d), want_bias);
  ValueList out = materialize_grads(metas, g);
  out.emplace_back();
  if (want_bias) out[3] = materialize(metas[3].to_tensor(), sum_to(g.dscores, bias.sizes()));
  return out;
}

// ---------------------------------------------------------------- CUDA flash
// (query, key, value, dropout_p, is_causal, return_debug_mask, *, scale)
//   -> (output, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, rng_state, unused, debug_attn_mask)
// As PyTorch's meta function gives them: output laid out like query,
// logsumexp float32 [B, H, L], cum_seq_q / cum_seq_k None (dense inputs),
// max_q = L and max_k = S, rng_state int64 [2] and unused int64 [] (uint64 in
// PyTorch, which Kiln has not; zeros, as no dropout is drawn), and the debug
// mask, empty unless return_debug_mask, which the CPU kernel refuses.

int64_t debug_mask_keys(const Dims& d) {
  int64_t blocksize_c = d.E > 64 ? 128 : 256;
  int64_t keys = (d.L + blocksize_c - 1) / blocksize_c;
  if (d.S <= 128) keys = 128;
  else if (d.S <= 256) keys = 256;
  return keys;
}

ValueList flash_meta(const OpArgs& a) {
  const Tensor &q = a.tensor(0), &k = a.tensor(1), &v = a.tensor(2);
  Dims d = check_qkv(kFlash, q, k, v, true);
  check_no_dropout(kFlash, a.real(3));
  Tensor debug = a.boolean(5) ? Tensor::meta({d.B, d.Hq, d.L, debug_mask_keys(d)}, q.dtype())
                              : Tensor::meta({0}, q.dtype());
  return {Tensor::meta_strided(q.sizes(), preserve_strides(q), q.dtype()),
          Tensor::meta({d.B, d.Hq, d.L}, lse_dtype(q.dtype())),
          Value(),
          Value(),
          Value(d.L),
          Value(d.S),
          Tensor::meta({2}, DType::Int64),
          Tensor::meta({}, DType::Int64),
          debug};
}

ValueList flash(const OpArgs& a) {
  ValueList metas = flash_meta(a);
  if (any_meta(a)) return metas;
  KILN_USER_CHECK(!a.boolean(5), kFlash,
                  ": return_debug_mask=True is not supported (the debug mask is the CUDA kernel's own)");
  Dims d = check_qkv(kFlash, a.tensor(0), a.tensor(1), a.tensor(2), true);
  Problem p(d, a.tensor(0), a.tensor(1), a.tensor(2), Tensor(), a.boolean(4), scale_of(a, 6, d));
  auto [out, lse] = run_forward(p);
  ValueList r = metas;
  r[0] = materialize(metas[0].to_tensor(), out);
  r[1] = materialize(metas[1].to_tensor(), lse);
  r[6] = Tensor::zeros({2}, DType::Int64);
  r[7] = Tensor::zeros({}, DType::Int64);
  r[8] = Tensor::empty({0}, a.tensor(0).dtype());
  return r;
}

// (grad_out, query, key, value, out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal,
//  philox_seed, philox_offset, *, scale) -> (grad_query, grad_key, grad_value), each laid out like its input.
ValueList flash_backward_meta(const OpArgs& a) {
  const Tensor &q = a.tensor(1), &k = a.tensor(2), &v = a.tensor(3);
  Dims d = check_qkv(kFlashBackward, q, k, v, true);
  check_no_dropout(kFlashBackward, a.real(10));
  lse_rows(kFlashBackward, a.tensor(5), d);
  return grad_metas_like_inputs(q, k, v);
}

ValueList flash_backward(const OpArgs& a) {
  ValueList metas = flash_backward_meta(a);
  if (any_meta(a)) return metas;
  Dims d = check_qkv(kFlashBackward, a.tensor(1), a.tensor(2), a.tensor(3), true);
  Problem p(d, a.tensor(1), a.tensor(2), a.tensor(3), Tensor(), a.boolean(11), scale_of(a, 14, d));
  return materialize_grads(metas, run_backward(p, a.tensor(0), lse_rows(kFlashBackward, a.tensor(5), d), false));
}

// ---------------------------------------------------------------- cuDNN
// (query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal, return_debug_mask, *, scale)
//   -> (output, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, philox_seed, philox_offset, debug_attn_mask)
// As PyTorch's meta function gives them (and 2.11's AOT dumps annotate them):
// output [B, H, L, Ev] in the query's dim order (alloc_with_matching_layout:
// a [B, L, H, E]-ordered query gives [B, L, H, Ev] storage), logsumexp
// [B, H, L, 1] contiguous float32 (float64 for float64 operands, which cuDNN
// never sees; the CPU kernel keeps the backward exact), computed whether or
// not compute_log_sumexp asks for it (the meta function always allocates it),
// cum_seq_q / cum_seq_k None, max_q = L and max_k = S, philox seed and offset
// int64 scalars (zeros: no dropout is drawn) and debug_attn_mask None. The
// attention bias is additive (floating point, broadcastable to [B, H, L, S]).

// Strides of a new `sizes` tensor laid out in `q`'s dim order (PyTorch's alloc_with_matching_layout).
Shape matching_layout(const Tensor& q, const Shape& sizes) {
  if (q.sizes() == sizes) return preserve_strides(q);
  return infer_dense_strides(sizes, q.strides());
}

ValueList cudnn_meta(const OpArgs& a) {
  const Tensor &q = a.tensor(0), &k = a.tensor(1), &v = a.tensor(2);
  Dims d = check_qkv(kCudnn, q, k, v, false);
  check_mask(kCudnn, a.opt_tensor(3), d, false);
  check_no_dropout(kCudnn, a.real(5));
  const Shape out{d.B, d.Hq, d.L, d.Ev};
  return {Tensor::meta_strided(out, matching_layout(q, out), q.dtype()),
          Tensor::meta({d.B, d.Hq, d.L, 1}, lse_dtype(q.dtype())),
          Value(),
          Value(),
          Value(d.L),
          Value(d.S),
          Tensor::meta({}, DType::Int64),
          Tensor::meta({}, DType::Int64),
          Value()};
}

ValueList cudnn(const OpArgs& a) {
  ValueList metas = cudnn_meta(a);
  if (any_meta(a)) return metas;
  KILN_USER_CHECK(!a.boolean(7), kCudnn,
                  ": return_debug_mask=True is not supported (the debug mask is the CUDA kernel's own)");
  Dims d = check_qkv(kCudnn, a.tensor(0), a.tensor(1), a.tensor(2), false);
  Problem p(d, a.tensor(0), a.tensor(1), a.tensor(2), a.opt_tensor(3), a.boolean(6), scale_of(a, 8, d));
  auto [out, lse] = run_forward(p);
  ValueList r = metas;
  r[0] = materialize(metas[0].to_tensor(), out);
  r[1] = materialize(metas[1].to_tensor(), lse);
  r[6] = Tensor::zeros({}, DType::Int64);
  r[7] = Tensor::zeros({}, DType::Int64);
  return r;
}

// logsumexp as the cuDNN forward gives it, [B, Hq, L, 1] (a [B, Hq, L] one is taken too).
Tensor cudnn_lse_rows(const Tensor& lse, const Dims& d) {
  const bool four = lse.dim() == 4 && lse.size(3) == 1;
  KILN_USER_CHECK(four || lse.dim() == 3, kCudnnBackward, ": logsumexp of shape ", shape_str(lse.sizes()),
                  ", expected ", shape_str(Shape{d.B, d.Hq, d.L, 1}));
  return lse_rows(kCudnnBackward, four ? lse.select(3, 0) : lse, d);
}

// (grad_out, query, key, value, out, logsumexp, philox_seed, philox_offset, attn_bias, cum_seq_q, cum_seq_k,
//  max_q, max_k, dropout_p, is_causal, *, scale) -> (grad_query, grad_key, grad_value), each laid out like
// its input (empty_like: a [B, L, H, E]-ordered query that is not dense gives dense [B, L, H, E] storage).
// attn_bias gets no gradient (derivatives.yaml gives it none); cum_seq_q / cum_seq_k must be None (dense
// inputs) and max_q / max_k the sequence lengths.
ValueList cudnn_backward_meta(const OpArgs& a) {
  const Tensor &q = a.tensor(1), &k = a.tensor(2), &v = a.tensor(3);
  Dims d = check_qkv(kCudnnBackward, q, k, v, false);
  check_mask(kCudnnBackward, a.opt_tensor(8), d, false);
  KILN_USER_CHECK(!a.opt_tensor(9).defined() && !a.opt_tensor(10).defined(), kCudnnBackward,
                  ": cum_seq_q / cum_seq_k are not supported (nested, variable-length inputs); expected None");
  check_no_dropout(kCudnnBackward, a.real(13));
  cudnn_lse_rows(a.tensor(5), d);
  return grad_metas_like_inputs(q, k, v);
}

ValueList cudnn_backward(const OpArgs& a) {
  ValueList metas = cudnn_backward_meta(a);
  if (any_meta(a)) return metas;
  Dims d = check_qkv(kCudnnBackward, a.tensor(1), a.tensor(2), a.tensor(3), false);
  Problem p(d, a.tensor(1), a.tensor(2), a.tensor(3), a.opt_tensor(8), a.boolean(14), scale_of(a, 15, d));
  return materialize_grads(metas, run_backward(p, a.tensor(0), cudnn_lse_rows(a.tensor(5), d), false));
}

}  // namespace

void register_attention_ops(OpRegistry& r) {
  r.add("aten::_scaled_dot_product_flash_attention_for_cpu(Tensor query, Tensor key, Tensor value, "
        "float dropout_p=0., bool is_causal=False, *, Tensor? attn_mask=None, float? scale=None) "
        "-> (Tensor output, Tensor logsumexp)",
        for_cpu_meta, for_cpu);
  r.add("aten::_scaled_dot_product_flash_attention_for_cpu_backward(Tensor grad_out, Tensor query, Tensor key, "
        "Tensor value, Tensor out, Tensor logsumexp, float dropout_p, bool is_causal, *, Tensor? attn_mask=None, "
        "float? scale=None) -> (Tensor grad_query, Tensor grad_key, Tensor grad_value)",
        for_cpu_backward_meta, for_cpu_backward);
  r.add("aten::_scaled_dot_product_efficient_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_bias, "
        "bool compute_log_sumexp, float dropout_p=0., bool is_causal=False, *, float? scale=None) "
        "-> (Tensor output, Tensor log_sumexp, Tensor philox_seed, Tensor philox_offset)",
        efficient_meta, efficient);
  r.add("aten::_scaled_dot_product_efficient_attention_backward(Tensor grad_out_, Tensor query, Tensor key, "
        "Tensor value, Tensor attn_bias, Tensor out, Tensor logsumexp, Tensor philox_seed, Tensor philox_offset, "
        "float dropout_p, bool[4] grad_input_mask, bool is_causal=False, *, float? scale=None) "
        "-> (Tensor, Tensor, Tensor, Tensor)",
        efficient_backward_meta, efficient_backward);
  r.add("aten::_scaled_dot_product_flash_attention(Tensor query, Tensor key, Tensor value, float dropout_p=0., "
        "bool is_causal=False, bool return_debug_mask=False, *, float? scale=None) "
        "-> (Tensor output, Tensor logsumexp, Tensor cum_seq_q, Tensor cum_seq_k, SymInt max_q, SymInt max_k, "
        "Tensor rng_state, Tensor unused, Tensor debug_attn_mask)",
        flash_meta, flash);
  r.add("aten::_scaled_dot_product_flash_attention_backward(Tensor grad_out, Tensor query, Tensor key, Tensor value, "
        "Tensor out, Tensor logsumexp, Tensor cum_seq_q, Tensor cum_seq_k, SymInt max_q, SymInt max_k, "
        "float dropout_p, bool is_causal, Tensor philox_seed, Tensor philox_offset, *, float? scale=None) "
        "-> (Tensor grad_query, Tensor grad_key, Tensor grad_value)",
        flash_backward_meta, flash_backward);
  r.add("aten::_scaled_dot_product_cudnn_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_bias, "
        "bool compute_log_sumexp, float dropout_p=0., bool is_causal=False, bool return_debug_mask=False, *, "
        "float? scale=None) -> (Tensor output, Tensor logsumexp, Tensor cum_seq_q, Tensor cum_seq_k, "
        "SymInt max_q, SymInt max_k, Tensor philox_seed, Tensor philox_offset, Tensor debug_attn_mask)",
        cudnn_meta, cudnn);
  r.add("aten::_scaled_dot_product_cudnn_attention_backward(Tensor grad_out, Tensor query, Tensor key, "
        "Tensor value, Tensor out, Tensor logsumexp, Tensor philox_seed, Tensor philox_offset, Tensor attn_bias, "
        "Tensor cum_seq_q, Tensor cum_seq_k, SymInt max_q, SymInt max_k, float dropout_p, bool is_causal, *, "
        "float? scale=None) -> (Tensor, Tensor, Tensor)",
        cudnn_backward_meta, cudnn_backward);
}

}  // namespace kiln
