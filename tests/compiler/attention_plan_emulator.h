#pragma once
// A float64 emulation, on the host, of what the training attention's GPU plans
// (codegen/cuda/cuda_attention_training.h) make the kernels read and write:
// every operand reached through the plan's buffers, offsets, [outer, inner]
// batch strides, row and column strides and the mask's broadcast strides, as
// the kernels index them (kiln_attn_batch). Run on the eager kernels' inputs,
// its outputs must be the eager kernels' (up to rounding): so the plans'
// geometry (which buffer, which layout, the bias's broadcast, the logsumexp's
// padding, the philox zeros) is checked on machines without a GPU, leaving the
// GPU half only the kernels' arithmetic.
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "compiler/codegen/cuda/cuda_attention_training.h"
#include "compiler/loopir/loop_ir.h"

namespace kiln::test {

// Each buffer's storage as float64 elements.
class PlanEmulator {
 public:
  PlanEmulator(const loopir::Program& p, const std::vector<Tensor>& inputs) : p_(p) {
    for (const loopir::Buffer& b : p.buffers)  // NaN: what no plan writes stays visible
      storage_[b.name] = std::vector<double>(size_t(std::max<int64_t>(loopir::storage_span(b), 1)), NAN);
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      const loopir::Buffer& b = p.buffer(p.inputs[i]);
      Tensor s = Tensor::from_vector(storage_[b.name], {int64_t(storage_[b.name].size())});
      s.as_strided(Shape(b.sizes.begin(), b.sizes.end()), Shape(b.strides.begin(), b.strides.end()), b.offset)
          .copy_(inputs.at(i).to(DType::Float64));
      storage_[b.name] = std::vector<double>(s.data<double>(), s.data<double>() + s.numel());
    }
  }

  void forward(const codegen::cuda::AttentionForwardGpuPlan& plan) {
    const codegen::cuda::AttentionGpuPlan& f = plan.flash;
    const double inf = std::numeric_limits<double>::infinity();
    double* o = at(f.output);
    double* lse = plan.lse.empty() ? nullptr : at(plan.lse);
    std::vector<double> x(size_t(f.n));
    for (int64_t bh = 0; bh < f.batch; ++bh)
      for (int64_t m = 0; m < f.m; ++m) {
        double mx = -inf, sum = 0;
        for (int64_t n = 0; n < f.n; ++n) {
          x[size_t(n)] = score(f, f.params, f.mask, f.mask_stride, f.mask_offset, f.mask_inner, bh, m, n, nullptr);
          mx = std::max(mx, x[size_t(n)]);
        }
        for (int64_t n = 0; n < f.n; ++n) sum += (x[size_t(n)] = std::exp(x[size_t(n)] - mx));
        for (int64_t d = 0; d < f.dv; ++d) {
          double acc = 0;
          for (int64_t n = 0; n < f.n; ++n) acc += x[size_t(n)] / sum * read(f.v, f.v_offset, f.v_stride, f.v_inner, f.batch_inner, bh, n, d);
          o[index(f.o_offset, f.o_stride, f.o_inner, f.batch_inner, bh, m, d)] = acc;
        }
        if (f.write_lse) lse[size_t(f.lse_offset + batch(f.batch_inner, bh, f.lse_stride[0], f.lse_inner) + m * f.lse_stride[1])] = mx + std::log(sum);
      }
    if (lse)
      for (int64_t bh = 0; bh < f.batch; ++bh)
        for (int64_t r = f.m; r < plan.lse_padded; ++r)
          lse[size_t(plan.lse_offset + (bh / plan.heads) * plan.lse_stride[0] + (bh % plan.heads) * plan.lse_stride[1] +
                     r * plan.lse_stride[2])] = inf;
    if (!plan.seed.empty()) at(plan.seed)[plan.seed_offset] = 0;
    if (!plan.offset.empty()) at(plan.offset)[plan.offset_offset] = 0;
    round_to_dtype(f.output);
    if (lse) round_to_dtype(plan.lse);
  }

  void backward(const codegen::cuda::AttentionBackwardExternPlan& plan) {
    const codegen::cuda::AttentionBackwardGpuPlan& g = plan.grads;
    const int64_t bi = g.batch_inner;
    auto zero = [&](const std::string& b, int64_t off, const int64_t* s, int64_t inner, int64_t rows, int64_t cols) {
      if (b.empty()) return;
      for (int64_t bh = 0; bh < g.batch; ++bh)
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c) at(b)[index(off, s, inner, bi, bh, r, c)] = 0;
    };
    zero(plan.dq, g.dq_offset, g.dq_stride, g.dq_inner, g.m, g.d);
    zero(plan.dk, g.dk_offset, g.dk_stride, g.dk_inner, g.n, g.d);
    zero(plan.dv, g.dv_offset, g.dv_stride, g.dv_inner, g.n, g.dv);
    for (int64_t bh = 0; bh < g.batch; ++bh)
      for (int64_t m = 0; m < g.m; ++m) {
        double delta = 0;
        for (int64_t d = 0; d < g.dv; ++d)
          delta += read(plan.dout, g.do_offset, g.do_stride, g.do_inner, bi, bh, m, d) * read(plan.out, g.o_offset, g.o_stride, g.o_inner, bi, bh, m, d);
        const double l = at(plan.lse)[size_t(g.lse_offset + batch(bi, bh, g.lse_stride[0], g.lse_inner) + m * g.lse_stride[1])];
        for (int64_t n = 0; n < g.n; ++n) {
          bool fixed = false;
          const double s = score(g, g.params, plan.mask, g.mask_stride, g.mask_offset, g.mask_inner, bh, m, n, &fixed, &plan);
          const double pr = std::exp(s - l);
          double dp = 0;
          for (int64_t d = 0; d < g.dv; ++d)
            dp += read(plan.dout, g.do_offset, g.do_stride, g.do_inner, bi, bh, m, d) * read(plan.v, g.v_offset, g.v_stride, g.v_inner, bi, bh, n, d);
          const double ds = fixed ? 0 : pr * (dp - delta) * g.params.scale;
          if (!plan.dv.empty())
            for (int64_t d = 0; d < g.dv; ++d)
              at(plan.dv)[index(g.dv_offset, g.dv_stride, g.dv_inner, bi, bh, n, d)] += pr * read(plan.dout, g.do_offset, g.do_stride, g.do_inner, bi, bh, m, d);
          for (int64_t d = 0; d < g.d; ++d) {
            if (!plan.dk.empty())
              at(plan.dk)[index(g.dk_offset, g.dk_stride, g.dk_inner, bi, bh, n, d)] += ds * read(plan.q, g.q_offset, g.q_stride, g.q_inner, bi, bh, m, d);
            if (!plan.dq.empty())
              at(plan.dq)[index(g.dq_offset, g.dq_stride, g.dq_inner, bi, bh, m, d)] += ds * read(plan.k, g.k_offset, g.k_stride, g.k_inner, bi, bh, n, d);
          }
        }
      }
    for (const std::string* b : {&plan.dq, &plan.dk, &plan.dv})
      if (!b->empty()) round_to_dtype(*b);
  }

  // Buffer `name` as its sizes, strides and dtype say.
  Tensor tensor(const std::string& name) const {
    const loopir::Buffer& b = p_.buffer(name);
    const std::vector<double>& s = storage_.at(name);
    Tensor t = Tensor::from_vector(s, {int64_t(s.size())});
    return t.as_strided(Shape(b.sizes.begin(), b.sizes.end()), Shape(b.strides.begin(), b.strides.end()), b.offset)
        .contiguous()
        .to(b.dtype);
  }

 private:
  static int64_t batch(int64_t bi, int64_t bh, int64_t outer, int64_t inner) {
    return bi == 1 ? bh * outer : (bh / bi) * outer + (bh % bi) * inner;
  }
  static size_t index(int64_t offset, const int64_t* s, int64_t inner, int64_t bi, int64_t bh, int64_t r, int64_t c) {
    return size_t(offset + batch(bi, bh, s[0], inner) + r * s[1] + c * s[2]);
  }
  double* at(const std::string& b) { return storage_.at(b).data(); }
  double read(const std::string& b, int64_t offset, const int64_t* s, int64_t inner, int64_t bi, int64_t bh, int64_t r,
              int64_t c) {
    return at(b)[index(offset, s, inner, bi, bh, r, c)];
  }
  // The scaled, masked score (m, n) of batch entry bh, as the kernels mask it.
  template <class Plan>
  double score(const Plan& f, const loopir::AttentionParams& a, const std::string& mask, const int64_t* ms,
               int64_t mask_offset, int64_t mask_inner, int64_t bh, int64_t m, int64_t n, bool* fixed,
               const codegen::cuda::AttentionBackwardExternPlan* b = nullptr) {
    const std::string &q = b ? b->q : f_q(f), &k = b ? b->k : f_k(f);
    double dot = 0;
    for (int64_t d = 0; d < f.d; ++d)
      dot += read(q, f.q_offset, f.q_stride, f.q_inner, f.batch_inner, bh, m, d) *
             read(k, f.k_offset, f.k_stride, f.k_inner, f.batch_inner, bh, n, d);
    double s = a.scale * dot;
    if (a.causal_offset && n > m + *a.causal_offset) {
      if (fixed) *fixed = true;
      return -std::numeric_limits<double>::infinity();
    }
    if (!mask.empty())
      s += a.mask_scale * at(mask)[size_t(mask_offset + (bh / mask_inner) * ms[0] + (bh % mask_inner) * ms[1] + m * ms[2] + n * ms[3])];
    return s;
  }
  static const std::string& f_q(const codegen::cuda::AttentionGpuPlan& f) { return f.q; }
  static const std::string& f_k(const codegen::cuda::AttentionGpuPlan& f) { return f.k; }
  static const std::string& f_q(const codegen::cuda::AttentionBackwardGpuPlan&) { static std::string none; return none; }
  static const std::string& f_k(const codegen::cuda::AttentionBackwardGpuPlan&) { static std::string none; return none; }
  void round_to_dtype(const std::string& name) {
    std::vector<double>& s = storage_.at(name);
    const Tensor r = Tensor::from_vector(s, {int64_t(s.size())}).to(p_.buffer(name).dtype).to(DType::Float64);
    s.assign(r.data<double>(), r.data<double>() + r.numel());
  }

  const loopir::Program& p_;
  std::map<std::string, std::vector<double>> storage_;
};

}  // namespace kiln::test
