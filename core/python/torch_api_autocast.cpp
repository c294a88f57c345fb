// torch.autocast's cast policies (ATen's Autocast dispatch keys). The op
// lists are PyTorch 2.x's, from aten/src/ATen/autocast_mode.h
// (AT_FORALL_LOWER_PRECISION_FP, AT_FORALL_FP32, AT_FORALL_FP32_SET_OPT_DTYPE,
// AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE, AT_FORALL_PROMOTE: the CUDA key)
// and aten/src/ATen/autocast_mode.cpp (TORCH_LIBRARY_IMPL(aten, AutocastCPU)).
// An op is named without its overload: where ATen lists some overloads only
// (norm), the others take an explicit dtype and the policy leaves them be.
//
// ATen applies a policy where an op enters the dispatcher, so an op that is
// not listed runs its decomposition under autocast (einsum on the CPU reaches
// bmm), and a listed op runs with autocast excluded (F.cross_entropy on the
// CPU casts once, to float32, and its log_softmax is not cast again). Kiln
// applies the policies at the same two places: where a torch callable runs
// (torchapi::call, by the callable's ATen name) and where a binding runs an
// ATen op (detail::aten), the latter for the ops a binding composes.
#include <unordered_map>

#include "core/python/torch_api_binding.h"

namespace kiln::torchapi {

namespace {
thread_local AutocastState g_state;
thread_local bool g_call_cuda = false;
thread_local int g_excluded = 0;
}  // namespace

AutocastState& autocast_state() { return g_state; }

AutocastCallDevice::AutocastCallDevice(bool cuda) : saved(g_call_cuda) { g_call_cuda = cuda; }
AutocastCallDevice::~AutocastCallDevice() { g_call_cuda = saved; }

namespace detail {

AutocastExcluded::AutocastExcluded() { ++g_excluded; }
AutocastExcluded::~AutocastExcluded() { --g_excluded; }

namespace {

using Policy = AutocastPolicy;
using PolicyMap = std::unordered_map<std::string_view, Policy>;

const PolicyMap& cuda_policies() {
  static const PolicyMap m = [] {
    PolicyMap m;
    for (const char* op : {"_convolution", "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d",
                           "conv_transpose2d", "conv_transpose3d", "convolution", "prelu", "addmm", "addmv", "addr",
                           "matmul", "einsum", "mm", "mv", "linalg_vecdot", "linear", "addbmm", "baddbmm", "bmm",
                           "chain_matmul", "linalg_multi_dot", "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell",
                           "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
                           "_scaled_dot_product_flash_attention", "scaled_dot_product_attention",
                           "cudnn_convolution", "cudnn_convolution_transpose"})
      m.emplace(op, Policy::LowerPrecision);
    for (const char* op :
         {"acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt",
          "sinh", "tan", "pow", "softplus", "layer_norm", "native_layer_norm", "group_norm", "frobenius_norm",
          "nuclear_norm", "cosine_similarity", "poisson_nll_loss", "cosine_embedding_loss", "nll_loss", "nll_loss2d",
          "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss",
          "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss",
          "multi_margin_loss", "binary_cross_entropy_with_logits", "dist", "pdist", "cdist", "renorm", "logsumexp",
          "upsample_nearest1d", "_upsample_nearest_exact1d", "upsample_nearest2d", "_upsample_nearest_exact2d",
          "upsample_nearest3d", "_upsample_nearest_exact3d", "upsample_linear1d", "upsample_bilinear2d",
          "_upsample_bilinear2d_aa", "upsample_trilinear3d", "upsample_bicubic2d", "_upsample_bicubic2d_aa"})
      m.emplace(op, Policy::Fp32);
    for (const char* op : {"prod", "softmax", "log_softmax", "cumprod", "cumsum", "linalg_vector_norm",
                           "linalg_matrix_norm", "sum"})
      m.emplace(op, Policy::Fp32SetOptDtype);
    m.emplace("norm", Policy::Fp32AppendDtype);
    for (const char* op : {"addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot", "grid_sampler",
                           "index_put", "tensordot", "scatter_add"})
      m.emplace(op, Policy::Promote);
    m.emplace("binary_cross_entropy", Policy::Banned);
    return m;
  }();
  return m;
}

const PolicyMap& cpu_policies() {
  static const PolicyMap m = [] {
    PolicyMap m;
    for (const char* op : {"conv1d", "conv2d", "conv3d", "bmm", "mm", "linalg_vecdot", "baddbmm", "addmm",
                           "_addmm_activation", "addbmm", "linear", "_convolution", "matmul", "conv_tbc",
                           "mkldnn_rnn_layer", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "prelu",
                           "scaled_dot_product_attention", "_native_multi_head_attention"})
      m.emplace(op, Policy::LowerPrecision);
    for (const char* op :
         {"avg_pool3d", "binary_cross_entropy", "grid_sampler", "polar", "prod", "quantile", "nanquantile", "stft",
          "cdist", "grid_sampler_2d", "_grid_sampler_2d_cpu_fallback", "grid_sampler_3d", "trace", "view_as_complex",
          "cholesky", "cholesky_inverse", "cholesky_solve", "inverse", "lu_solve", "orgqr", "ormqr", "pinverse",
          "max_pool3d", "max_unpool2d", "max_unpool3d", "adaptive_avg_pool3d", "reflection_pad1d",
          "reflection_pad2d", "replication_pad1d", "replication_pad2d", "replication_pad3d", "mse_loss",
          "cosine_embedding_loss", "nll_loss", "nll_loss2d", "hinge_embedding_loss", "poisson_nll_loss",
          "smooth_l1_loss", "cross_entropy_loss", "l1_loss", "huber_loss", "margin_ranking_loss", "soft_margin_loss",
          "triplet_margin_loss", "multi_margin_loss", "ctc_loss", "kl_div", "multilabel_margin_loss",
          "binary_cross_entropy_with_logits", "fft_fft", "fft_ifft", "fft_fft2", "fft_ifft2", "fft_fftn",
          "fft_ifftn", "fft_rfft", "fft_irfft", "fft_rfft2", "fft_irfft2", "fft_rfftn", "fft_irfftn", "fft_hfft",
          "fft_ihfft", "linalg_cond", "linalg_matrix_rank", "linalg_solve", "linalg_cholesky", "linalg_svdvals",
          "linalg_eigvals", "linalg_eigvalsh", "linalg_inv", "linalg_householder_product", "linalg_tensorinv",
          "linalg_tensorsolve", "fake_quantize_per_tensor_affine", "geqrf", "_lu_with_info", "qr", "svd",
          "triangular_solve", "fractional_max_pool2d", "fractional_max_pool3d", "adaptive_max_pool3d",
          "multilabel_margin_loss_forward", "linalg_qr", "linalg_cholesky_ex", "linalg_svd", "linalg_eig",
          "linalg_eigh", "linalg_lstsq", "linalg_inv_ex"})
      m.emplace(op, Policy::Fp32);
    for (const char* op : {"stack", "cat", "index_copy"}) m.emplace(op, Policy::Promote);
    return m;
  }();
  return m;
}

// Torch callables whose ATen op has another name.
std::string_view aten_name_of(std::string_view callable) {
  if (callable == "cross_entropy") return "cross_entropy_loss";
  if (callable == "concat" || callable == "concatenate") return "cat";
  return callable;
}

bool eligible(const Value& v) {
  if (!v.is_tensor()) return false;
  const Tensor& t = v.to_tensor();
  return t.defined() && is_floating(t.dtype()) && t.dtype() != DType::Float64;
}

Value cast_to(const Value& v, DType to, Mode mode) {
  if (v.is_list()) {
    ValueList items;
    for (const Value& x : v.to_list()) items.push_back(cast_to(x, to, mode));
    return Value(std::move(items));
  }
  if (!eligible(v) || v.to_tensor().dtype() == to) return v;
  // x.to(dtype), as ATen's cached_cast does: the lowering records it (_to_copy)
  // and autograd carries the gradient back to the source's dtype.
  return aten(mode, "aten::to.dtype", {v, Value(to), false, false, Value()}).at(0);
}

// at::autocast::prioritize over every floating tensor (and tensor list item).
void widest(const Value& v, DType lower, DType& current) {
  if (v.is_list()) {
    for (const Value& x : v.to_list()) widest(x, lower, current);
    return;
  }
  if (!eligible(v)) return;
  DType next = v.to_tensor().dtype();
  if (current == DType::Float32 || next == DType::Float32) current = DType::Float32;
  else if (current != lower || next != lower) throw Error("Unexpected floating ScalarType in at::autocast::prioritize");
}

const char* kBceBanned =
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
    "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
    "safe to autocast.";

}  // namespace

std::optional<AutocastPolicy> autocast_policy(std::string_view name) {
  if (g_excluded > 0) return std::nullopt;
  const bool cuda = g_call_cuda;
  if (!(cuda ? g_state.cuda_enabled : g_state.cpu_enabled)) return std::nullopt;
  if (name.starts_with("aten::")) name.remove_prefix(6);
  if (size_t dot = name.find('.'); dot != std::string_view::npos) {
    // norm's overloads that take a dtype are left as called.
    std::string_view overload = name.substr(dot + 1);
    name = name.substr(0, dot);
    if (name == "norm" && overload != "Scalar" && overload != "ScalarOpt_dim" && overload != "default")
      return std::nullopt;
  }
  const PolicyMap& m = cuda ? cuda_policies() : cpu_policies();
  auto it = m.find(aten_name_of(name));
  if (it == m.end()) return std::nullopt;
  return it->second;
}

void apply_autocast(AutocastPolicy policy, Mode mode, ValueList& values, const std::vector<std::string_view>& names) {
  const DType lower = g_call_cuda ? g_state.cuda_dtype : g_state.cpu_dtype;
  switch (policy) {
    case Policy::Banned: throw Error(kBceBanned);
    case Policy::LowerPrecision:
      for (Value& v : values) v = cast_to(v, lower, mode);
      return;
    case Policy::Fp32:
      for (Value& v : values) v = cast_to(v, DType::Float32, mode);
      return;
    case Policy::Fp32SetOptDtype:
    case Policy::Fp32AppendDtype: {
      // The op computes in float32 when its first argument is eligible and no
      // dtype= was given: the same numbers as its input cast to float32.
      if (values.empty() || !eligible(values[0])) return;
      for (size_t i = 0; i < values.size() && i < names.size(); ++i)
        if (names[i] == "dtype" && !values[i].is_none()) return;
      values[0] = cast_to(values[0], DType::Float32, mode);
      return;
    }
    case Policy::Promote: {
      DType to = lower;
      for (const Value& v : values) widest(v, lower, to);
      for (Value& v : values) v = cast_to(v, to, mode);
      return;
    }
  }
}

}  // namespace detail
}  // namespace kiln::torchapi
