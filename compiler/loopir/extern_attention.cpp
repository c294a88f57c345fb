// The fused attention extern kernel on the CPU, in float64: the reference the
// CUDA flash kernel is held to, and what run_loops / run_scheduled compute
// for it. It follows the unfused graph's order of operations (max, exp of the
// difference, sum, divide), so a row whose every score is -inf gives NaN, as
// eager softmax does.
#include <cmath>
#include <limits>
#include <vector>

#include "compiler/loopir/extern_call.h"
#include "core/util/status.h"

namespace kiln::loopir::detail {

void run_attention(const AttentionParams& a, const std::vector<Tensor>& tensors, const Tensor& out) {
  auto as_f64 = [](const Tensor& t) { return t.to(DType::Float64).contiguous(); };
  const Tensor q = as_f64(tensors.at(size_t(a.q))), k = as_f64(tensors.at(size_t(a.k))),
               v = as_f64(tensors.at(size_t(a.v)));
  const int64_t B = q.size(0), M = q.size(1), D = q.size(2), N = k.size(1), Dv = v.size(2);
  KILN_CHECK(k.size(0) == B && v.size(0) == B && k.size(2) == D && v.size(1) == N, "run_attention: operand shapes");
  Tensor mask;
  if (a.mask >= 0) {
    mask = as_f64(tensors.at(size_t(a.mask))).reshape({B, M, N}).contiguous();
  }
  const double* qp = q.data<double>();
  const double* kp = k.data<double>();
  const double* vp = v.data<double>();
  const double* mp = mask.defined() ? mask.data<double>() : nullptr;
  Tensor result = Tensor::empty({B, M, Dv}, DType::Float64);
  double* rp = result.data<double>();
  std::vector<double> x(size_t(N), 0.0);
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t m = 0; m < M; ++m) {
      const double* qr = qp + (b * M + m) * D;
      double row_max = -inf;
      for (int64_t n = 0; n < N; ++n) {
        const double* kr = kp + (b * N + n) * D;
        double dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += qr[d] * kr[d];
        double s = a.scale * dot;
        const double mv = mp ? mp[(b * M + m) * N + n] : 0.0;
        if (a.causal_offset) {
          if (n > m + *a.causal_offset) s = a.mask_kind == AttentionMask::Boolean ? a.fill : -inf;
        } else if (a.mask_kind == AttentionMask::Additive) {
          s += a.mask_scale * mv;
        } else if (a.mask_kind == AttentionMask::Boolean) {
          if ((mv != 0) == a.masked_when_nonzero) s = a.fill;
        }
        x[size_t(n)] = s;
        row_max = std::isnan(s) || std::isnan(row_max) ? NAN : std::max(row_max, s);
      }
      double sum = 0;
      for (int64_t n = 0; n < N; ++n) sum += (x[size_t(n)] = std::exp(x[size_t(n)] - row_max));
      double* o = rp + (b * M + m) * Dv;
      for (int64_t d = 0; d < Dv; ++d) o[d] = 0;
      for (int64_t n = 0; n < N; ++n) {
        const double p = x[size_t(n)] / sum;
        const double* vr = vp + (b * N + n) * Dv;
        for (int64_t d = 0; d < Dv; ++d) o[d] += p * vr[d];
      }
    }
  out.copy_(result.reshape(out.sizes()));
}

}  // namespace kiln::loopir::detail
