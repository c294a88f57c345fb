// The dedicated extern kernels: GEMM (mm, bmm, addmm and fused epilogues) and
// convolution, on OpenBLAS through core/ops/gemm.h, for float32 and float64.
// Other dtypes return false and run the eager kernels instead (run_extern).
#include <algorithm>
#include <cstdlib>

#include "compiler/loopir/extern_call.h"
#include "core/ops/gemm.h"
#include "core/ops/gemm_onednn.h"
#include "core/tensor/parallel.h"

namespace kiln::loopir::detail {
namespace {

bool blas_dtype(DType d) { return d == DType::Float32 || d == DType::Float64; }

// `out` itself when GEMM can write it (unit column stride, rows apart by at
// least a row, batches apart by at least a matrix), else a contiguous scratch
// copied back by the caller.
bool gemm_writable(const Tensor& out) {
  int64_t r = out.dim();
  int64_t m = out.size(r - 2), n = out.size(r - 1);
  bool ok = (n <= 1 || out.stride(r - 1) == 1) && (m <= 1 || out.stride(r - 2) >= n);
  if (r == 3 && out.size(0) > 1) ok = ok && out.stride(0) >= m * std::max<int64_t>(out.stride(r - 2), n);
  return ok;
}

template <class T>
void gemm_typed(const GemmParams& g, const std::vector<Tensor>& t, const Tensor& dst) {
  const Tensor &a = t[size_t(g.a)], &b = t[size_t(g.b)];
  int64_t r = dst.dim();
  int64_t m = dst.size(r - 2), n = dst.size(r - 1), k = a.size(a.dim() - 1);
  double beta = 0;
  if (g.c >= 0 && g.beta != 0) dst.copy_(t[size_t(g.c)]), beta = g.beta;
  else if (g.c_constant && g.beta != 0) dst.fill_(Scalar(*g.c_constant)), beta = g.beta;
  int64_t ldc = m <= 1 ? std::max<int64_t>(n, 1) : dst.stride(r - 2);
  if (ldc < n) ldc = n;  // m == 1 with any stride: BLAS still wants ldc >= n
  gemm::MatRef<T> am{a.data<T>(), a.stride(r - 2), a.stride(r - 1)};
  gemm::MatRef<T> bm{b.data<T>(), b.stride(r - 2), b.stride(r - 1)};
  if (!g.batched) {
    gemm::gemm<T>(m, n, k, T(g.alpha), am, bm, T(beta), dst.data<T>(), ldc);
    return;
  }
  gemm::gemm_batched<T>(dst.size(0), m, n, k, T(g.alpha), am, a.stride(0), bm, b.stride(0), T(beta), dst.data<T>(),
                        dst.stride(0), ldc);
}

std::string gemm_epilogue_refusal(const GemmParams& g, const std::vector<Tensor>& t, const Tensor& addend,
                                  const Tensor& out) {
  if (const char* off = std::getenv("KILN_NO_GEMM_EPILOGUE"); off && std::string(off) == "1")
    return "KILN_NO_GEMM_EPILOGUE=1";
  if (g.batched || out.dim() != 2) return "not a plain mm";
  for (const Tensor& x : {t[size_t(g.a)], t[size_t(g.b)], out})
    if (x.dtype() != DType::Float32) return "not float32";
  if (gemm::float_backend() != gemm::Backend::OneDNN) return "float32 products run on OpenBLAS, which has no epilogue";
  const int64_t m = out.size(0), n = out.size(1), k = t[size_t(g.a)].size(1);
  // Small products run on one thread of OpenBLAS, where the second pass is cheap.
  if (gemm::is_small(m, n, k)) return "a small product (it runs on OpenBLAS)";
  if (n > 1 && out.stride(1) != 1) return "the output's columns are not contiguous";
  if (addend.defined() && n > 1 && addend.stride(1) != 1) return "the addend's columns are not contiguous";
  if (g.lt->residual && g.lt->residual_scale != 1 && g.lt->residual_scale != -1)
    return "the addend is scaled (oneDNN adds or subtracts it only)";
  return "";
}

// Rows of the patch matrix: (c, kh, kw); columns: output pixels (oh, ow).
template <class T>
void im2col(const T* x, int64_t channels, int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t ho, int64_t wo,
            const std::vector<int64_t>& s, const std::vector<int64_t>& p, const std::vector<int64_t>& d, T* cols) {
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j) {
        T* row = cols + ((c * kh + i) * kw + j) * ho * wo;
        for (int64_t oh = 0; oh < ho; ++oh) {
          int64_t ih = oh * s[0] - p[0] + i * d[0];
          for (int64_t ow = 0; ow < wo; ++ow) {
            int64_t iw = ow * s[1] - p[1] + j * d[1];
            row[oh * wo + ow] = ih >= 0 && ih < h && iw >= 0 && iw < w ? x[(c * h + ih) * w + iw] : T(0);
          }
        }
      }
}

template <class T>
void conv_typed(const ConvParams& c, const Tensor& x, const Tensor& wt, const Tensor& bias, const Tensor& dst) {
  int64_t batch = x.size(0), cin = x.size(1), h = x.size(2), w = x.size(3);
  int64_t cout = wt.size(0), cg = wt.size(1), kh = wt.size(2), kw = wt.size(3);
  int64_t ho = dst.size(2), wo = dst.size(3), og = cout / c.groups;
  const T* xp = x.data<T>();
  const T* wp = wt.data<T>();
  T* out = dst.data<T>();
  const T* bp = bias.defined() ? bias.data<T>() : nullptr;
  int64_t plane = ho * wo;
  const auto &s = c.stride, &p = c.padding, &d = c.dilation;
  if (cg == 1) {
    // Depthwise: one input channel per output channel makes GEMM's K = kh*kw,
    // too small to pay for im2col; a direct loop per output plane is faster.
    parallel_for(0, batch * cout, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t bo = b0; bo < b1; ++bo) {
        int64_t nb = bo / cout, oc = bo % cout, ic = oc / og;
        const T* xin = xp + (nb * cin + ic) * h * w;
        const T* wk = wp + oc * kh * kw;
        T* o = out + bo * plane;
        for (int64_t oh = 0; oh < ho; ++oh)
          for (int64_t ow = 0; ow < wo; ++ow) {
            T acc = bp ? bp[oc] : T(0);
            for (int64_t i = 0; i < kh; ++i) {
              int64_t ih = oh * s[0] - p[0] + i * d[0];
              if (ih < 0 || ih >= h) continue;
              for (int64_t j = 0; j < kw; ++j) {
                int64_t iw = ow * s[1] - p[1] + j * d[1];
                if (iw >= 0 && iw < w) acc += xin[ih * w + iw] * wk[i * kw + j];
              }
            }
            o[oh * wo + ow] = acc;
          }
      }
    });
    return;
  }
  // A 1x1 kernel with stride 1 and no padding reads the input plane as it is:
  // the input is already the patch matrix, so im2col is skipped.
  bool pointwise = kh == 1 && kw == 1 && s[0] == 1 && s[1] == 1 && p[0] == 0 && p[1] == 0;
  std::vector<T> cols(pointwise ? 0 : size_t(cg * kh * kw * plane));
  int64_t kdim = cg * kh * kw;
  gemm::sync_threads();
  for (int64_t nb = 0; nb < batch; ++nb)
    for (int64_t g = 0; g < c.groups; ++g) {
      const T* xin = xp + (nb * cin + g * cg) * h * w;
      T* o = out + (nb * cout + g * og) * plane;
      T beta = 0;
      if (bp) {
        for (int64_t oc = 0; oc < og; ++oc) std::fill(o + oc * plane, o + (oc + 1) * plane, bp[g * og + oc]);
        beta = 1;
      }
      const T* patches = xin;
      if (!pointwise) {
        im2col(xin, cg, h, w, kh, kw, ho, wo, s, p, d, cols.data());
        patches = cols.data();
      }
      gemm::gemm<T>(og, plane, kdim, T(1), {wp + g * og * kdim, kdim, 1}, {patches, plane, 1}, beta, o, plane);
    }
}

}  // namespace

bool run_gemm_epilogue(const GemmParams& g, const std::vector<Tensor>& t, const Tensor& bias, const Tensor& addend,
                       const Tensor& out, std::string* why) {
  std::string refusal = gemm_epilogue_refusal(g, t, addend, out);
  if (refusal.empty() && !gemm::onednn::available()) refusal = gemm::onednn::load_error();
  if (!refusal.empty()) {
    if (why) *why = refusal;
    return false;
  }
  const Tensor &a = t[size_t(g.a)], &b = t[size_t(g.b)];
  const int64_t m = out.size(0), n = out.size(1), k = a.size(1);
  const GemmLtEpilogue& lt = *g.lt;
  gemm::onednn::Epilogue e;
  // The GEMM's own C is in lt (bias or addend) unless it was a number.
  if (g.c_constant) e.shift = float(g.beta * *g.c_constant);
  if (bias.defined()) e.bias = bias.data<float>();
  if (addend.defined()) {
    e.addend = addend.data<float>();
    e.addend_ld = m > 1 ? addend.stride(0) : n;
    e.subtract_addend = lt.residual_scale == -1;
  }
  e.activation = lt.activation == GemmActivation::Relu       ? gemm::onednn::Activation::Relu
                 : lt.activation == GemmActivation::GeluTanh ? gemm::onednn::Activation::GeluTanh
                                                             : gemm::onednn::Activation::None;
  const int64_t ldc = m > 1 ? out.stride(0) : n;
  return gemm::onednn::matmul(m, n, k, float(g.alpha), a.data<float>(), a.stride(0), a.stride(1), b.data<float>(),
                              b.stride(0), b.stride(1), out.data<float>(), ldc, e, num_threads(), why);
}

bool run_gemm(const GemmParams& g, const std::vector<Tensor>& t, const Tensor& out) {
  DType d = out.dtype();
  if (!blas_dtype(d) || t[size_t(g.a)].dtype() != d || t[size_t(g.b)].dtype() != d) return false;
  if (out.numel() == 0) return true;
  Tensor dst = gemm_writable(out) ? out : Tensor::empty(out.sizes(), d);
  if (d == DType::Float32) gemm_typed<float>(g, t, dst);
  else gemm_typed<double>(g, t, dst);
  if (dst.storage() != out.storage()) out.copy_(dst);
  return true;
}

bool run_convolution(const ConvParams& c, const std::vector<Tensor>& t, const Tensor& out) {
  DType d = out.dtype();
  Tensor x = t[size_t(c.input)], w = t[size_t(c.weight)];
  Tensor bias = c.bias >= 0 ? t[size_t(c.bias)] : Tensor();
  if (!blas_dtype(d) || x.dtype() != d || w.dtype() != d || (bias.defined() && bias.dtype() != d)) return false;
  if (x.dim() != out.dim() || (x.dim() != 3 && x.dim() != 4)) return false;
  ConvParams p = c;
  Tensor dst = out;
  if (x.dim() == 3) {  // 1-D as 2-D with a height of 1
    x = x.unsqueeze(2), w = w.unsqueeze(2), dst = dst.unsqueeze(2);
    p.stride.insert(p.stride.begin(), 1);
    p.padding.insert(p.padding.begin(), 0);
    p.dilation.insert(p.dilation.begin(), 1);
  }
  if (p.stride.size() != 2 || p.padding.size() != 2 || p.dilation.size() != 2) return false;
  if (out.numel() == 0) return true;
  x = x.contiguous(), w = w.contiguous();
  if (bias.defined()) bias = bias.contiguous();
  Tensor scratch = dst.is_contiguous() ? dst : Tensor::empty(dst.sizes(), d);
  if (d == DType::Float32) conv_typed<float>(p, x, w, bias, scratch);
  else conv_typed<double>(p, x, w, bias, scratch);
  if (scratch.storage() != dst.storage()) dst.copy_(scratch);
  return true;
}

}  // namespace kiln::loopir::detail
