// The fused attention extern kernel on the CPU, in float64: the reference the
// CUDA flash kernel is held to, and what run_loops / run_scheduled compute
// for it. It follows the unfused graph's order of operations (max, exp of the
// difference, sum, divide), so a row whose every score is -inf gives NaN, as
// eager softmax does. For training, the same forward can also give the
// per-row logsumexp, and run_attention_backward gives dq, dk and dv from the
// unfused formula (the reference of the CUDA backward kernels).
#include <cmath>
#include <limits>
#include <vector>

#include "compiler/loopir/extern_call.h"
#include "core/util/status.h"

namespace kiln::loopir::detail {
namespace {

// The operands in float64, contiguous, with their sizes.
struct Operands {
  Tensor q, k, v, mask;
  int64_t B = 0, M = 0, D = 0, N = 0, Dv = 0;
};

Operands operands(const AttentionParams& a, const std::vector<Tensor>& tensors, const char* who) {
  auto as_f64 = [](const Tensor& t) { return t.to(DType::Float64).contiguous(); };
  Operands o;
  o.q = as_f64(tensors.at(size_t(a.q))), o.k = as_f64(tensors.at(size_t(a.k))), o.v = as_f64(tensors.at(size_t(a.v)));
  o.B = o.q.size(0), o.M = o.q.size(1), o.D = o.q.size(2), o.N = o.k.size(1), o.Dv = o.v.size(2);
  KILN_CHECK(o.k.size(0) == o.B && o.v.size(0) == o.B && o.k.size(2) == o.D && o.v.size(1) == o.N, who, ": operand shapes");
  if (a.mask >= 0) o.mask = as_f64(tensors.at(size_t(a.mask))).reshape({o.B, o.M, o.N}).contiguous();
  return o;
}

// Row m of batch entry b's scaled, masked scores into x; fixed[n] is set where
// the score is the mask's fill (no gradient flows to q or k there). Returns the row's max.
double score_row(const AttentionParams& a, const Operands& o, int64_t b, int64_t m, std::vector<double>& x,
                 std::vector<char>* fixed) {
  const double* qr = o.q.data<double>() + (b * o.M + m) * o.D;
  const double* kp = o.k.data<double>();
  const double* mp = o.mask.defined() ? o.mask.data<double>() : nullptr;
  const double inf = std::numeric_limits<double>::infinity();
  double row_max = -inf;
  for (int64_t n = 0; n < o.N; ++n) {
    const double* kr = kp + (b * o.N + n) * o.D;
    double dot = 0;
    for (int64_t d = 0; d < o.D; ++d) dot += qr[d] * kr[d];
    double s = a.scale * dot;
    bool masked = false;
    const double mv = mp ? mp[(b * o.M + m) * o.N + n] : 0.0;
    if (a.causal_offset) {
      if (n > m + *a.causal_offset) s = a.mask_kind == AttentionMask::Boolean ? a.fill : -inf, masked = true;
    } else if (a.mask_kind == AttentionMask::Additive) {
      s += a.mask_scale * mv;
    } else if (a.mask_kind == AttentionMask::Boolean) {
      if ((mv != 0) == a.masked_when_nonzero) s = a.fill, masked = true;
    }
    x[size_t(n)] = s;
    if (fixed) (*fixed)[size_t(n)] = masked;
    row_max = std::isnan(s) || std::isnan(row_max) ? NAN : std::max(row_max, s);
  }
  return row_max;
}

}  // namespace

void run_attention_lse(const AttentionParams& a, const std::vector<Tensor>& tensors, const Tensor& out, const Tensor& lse) {
  const Operands o = operands(a, tensors, "run_attention");
  const int64_t B = o.B, M = o.M, N = o.N, Dv = o.Dv;
  const double* vp = o.v.data<double>();
  Tensor result = Tensor::empty({B, M, Dv}, DType::Float64);
  Tensor lse_result = Tensor::empty({B, M}, DType::Float64);
  double* rp = result.data<double>();
  double* lp = lse_result.data<double>();
  std::vector<double> x(size_t(N), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t m = 0; m < M; ++m) {
      const double row_max = score_row(a, o, b, m, x, nullptr);
      double sum = 0;
      for (int64_t n = 0; n < N; ++n) sum += (x[size_t(n)] = std::exp(x[size_t(n)] - row_max));
      lp[b * M + m] = row_max + std::log(sum);
      double* r = rp + (b * M + m) * Dv;
      for (int64_t d = 0; d < Dv; ++d) r[d] = 0;
      for (int64_t n = 0; n < N; ++n) {
        const double p = x[size_t(n)] / sum;
        const double* vr = vp + (b * N + n) * Dv;
        for (int64_t d = 0; d < Dv; ++d) r[d] += p * vr[d];
      }
    }
  out.copy_(result.reshape(out.sizes()));
  if (lse.defined()) lse.copy_(lse_result.reshape(lse.sizes()));
}

void run_attention(const AttentionParams& a, const std::vector<Tensor>& tensors, const Tensor& out) {
  run_attention_lse(a, tensors, out, Tensor());
}

void run_attention_backward(const AttentionParams& a, const std::vector<Tensor>& tensors, const Tensor& dout,
                            const Tensor& dq, const Tensor& dk, const Tensor& dv) {
  const Operands o = operands(a, tensors, "run_attention_backward");
  const int64_t B = o.B, M = o.M, N = o.N, D = o.D, Dv = o.Dv;
  const Tensor g = dout.to(DType::Float64).contiguous().reshape({B, M, Dv});
  const double* gp = g.data<double>();
  const double* qp = o.q.data<double>();
  const double* kp = o.k.data<double>();
  const double* vp = o.v.data<double>();
  Tensor rq = Tensor::zeros({B, M, D}, DType::Float64), rk = Tensor::zeros({B, N, D}, DType::Float64),
         rv = Tensor::zeros({B, N, Dv}, DType::Float64);
  double* dqp = rq.data<double>();
  double* dkp = rk.data<double>();
  double* dvp = rv.data<double>();
  std::vector<double> p(static_cast<size_t>(N)), dp(static_cast<size_t>(N));
  std::vector<char> fixed(static_cast<size_t>(N));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t m = 0; m < M; ++m) {
      // P = softmax(S) of the row, as the forward computes it.
      const double row_max = score_row(a, o, b, m, p, &fixed);
      double sum = 0;
      for (int64_t n = 0; n < N; ++n) sum += (p[size_t(n)] = std::exp(p[size_t(n)] - row_max));
      for (int64_t n = 0; n < N; ++n) p[size_t(n)] /= sum;
      const double* gr = gp + (b * M + m) * Dv;
      // dV += P^T dO; dP = dO V^T; D = rowsum(P * dP); dS = P * (dP - D).
      double delta = 0;
      for (int64_t n = 0; n < N; ++n) {
        const double* vr = vp + (b * N + n) * Dv;
        double* dvr = dvp + (b * N + n) * Dv;
        double s = 0;
        for (int64_t d = 0; d < Dv; ++d) s += gr[d] * vr[d], dvr[d] += p[size_t(n)] * gr[d];
        dp[size_t(n)] = s;
        delta += p[size_t(n)] * s;
      }
      const double* qr = qp + (b * M + m) * D;
      double* dqr = dqp + (b * M + m) * D;
      for (int64_t n = 0; n < N; ++n) {
        if (fixed[size_t(n)]) continue;  // a masked score is the fill, whatever q and k are
        const double ds = a.scale * p[size_t(n)] * (dp[size_t(n)] - delta);
        const double* kr = kp + (b * N + n) * D;
        double* dkr = dkp + (b * N + n) * D;
        for (int64_t d = 0; d < D; ++d) dqr[d] += ds * kr[d], dkr[d] += ds * qr[d];
      }
    }
  dq.copy_(rq.reshape(dq.sizes()));
  dk.copy_(rk.reshape(dk.sizes()));
  dv.copy_(rv.reshape(dv.sizes()));
}

}  // namespace kiln::loopir::detail
