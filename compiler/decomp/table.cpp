// Kiln's core op set (docs/core_aten.md says why each op is in it) and the
// decomposition table built from the family files.
#include <set>

#include "compiler/decomp/decomp_util.h"

namespace kiln::decomp {
namespace {

// PyTorch's core ATen IR as Kiln registers it, less what Kiln decomposes (the
// softmaxes, norms, gelu, elu, addmm, var, repeat, nearest upsampling), plus
// the ops no decomposition pays for (data-dependent shapes, math functions with
// no accurate composition, backward kernels of pooling, padding and upsampling).
const std::set<std::string, std::less<>>& core_set() {
  // clang-format off
  static const std::set<std::string, std::less<>> ops = {
    // Pointwise: unary math
    "aten::abs.default", "aten::acos.default", "aten::acosh.default", "aten::asin.default", "aten::asinh.default",
    "aten::atan.default", "aten::atanh.default", "aten::bitwise_not.default", "aten::ceil.default",
    "aten::cos.default", "aten::cosh.default", "aten::erf.default", "aten::erfc.default", "aten::erfinv.default",
    "aten::exp.default", "aten::expm1.default", "aten::floor.default", "aten::isinf.default", "aten::isnan.default",
    "aten::log.default", "aten::log10.default", "aten::log1p.default", "aten::log2.default",
    "aten::logical_not.default", "aten::neg.default", "aten::reciprocal.default", "aten::round.default",
    "aten::rsqrt.default", "aten::sigmoid.default", "aten::sign.default", "aten::sin.default", "aten::sinh.default",
    "aten::sqrt.default", "aten::tan.default", "aten::tanh.default", "aten::trunc.default",
    // Pointwise: arithmetic
    "aten::add.Scalar", "aten::add.Tensor", "aten::atan2.default", "aten::copysign.Scalar", "aten::copysign.Tensor",
    "aten::div.Scalar", "aten::div.Scalar_mode", "aten::div.Tensor", "aten::div.Tensor_mode", "aten::fmod.Scalar",
    "aten::fmod.Tensor", "aten::hypot.default", "aten::mul.Scalar", "aten::mul.Tensor", "aten::pow.Scalar",
    "aten::pow.Tensor_Scalar", "aten::pow.Tensor_Tensor", "aten::remainder.Scalar", "aten::remainder.Tensor",
    "aten::sub.Scalar", "aten::sub.Tensor",
    // Pointwise: comparison and logic
    "aten::bitwise_and.Scalar", "aten::bitwise_and.Tensor", "aten::bitwise_or.Scalar", "aten::bitwise_or.Tensor",
    "aten::bitwise_xor.Scalar", "aten::bitwise_xor.Tensor", "aten::eq.Scalar", "aten::eq.Tensor", "aten::ge.Scalar",
    "aten::ge.Tensor", "aten::gt.Scalar", "aten::gt.Tensor", "aten::le.Scalar", "aten::le.Tensor",
    "aten::logical_and.default", "aten::logical_or.default", "aten::logical_xor.default", "aten::lt.Scalar",
    "aten::lt.Tensor", "aten::maximum.default", "aten::minimum.default", "aten::ne.Scalar", "aten::ne.Tensor",
    "aten::bitwise_left_shift.Tensor", "aten::bitwise_left_shift.Tensor_Scalar", "aten::bitwise_right_shift.Tensor",
    "aten::bitwise_right_shift.Tensor_Scalar",
    // Pointwise: selection
    "aten::where.self",
    // Pointwise: Inductor's fused multiply-add (a * b + c rounded once has no exact composition)
    "prims::fma.default",
    // Pointwise: activations and clamps
    "aten::clamp.Tensor", "aten::clamp.default", "aten::hardtanh.default", "aten::leaky_relu.default",
    "aten::relu.default",
    // Reductions and scans
    "aten::amax.default", "aten::amin.default", "aten::any.default", "aten::any.dim", "aten::any.dims",
    "aten::argmax.default", "aten::argmin.default", "aten::cumprod.default", "aten::cumsum.default", "aten::max.dim",
    "aten::mean.default", "aten::mean.dim", "aten::min.dim", "aten::prod.default", "aten::prod.dim_int",
    "aten::sum.dim_IntList", "prims::xor_sum.default",
    // Sorting and selection
    "aten::_unique2.default", "aten::kthvalue.default", "aten::median.default", "aten::median.dim",
    "aten::sort.default", "aten::sort.stable", "aten::topk.default", "aten::unique_consecutive.default",
    // Matrix products, and factorizations, triangular solves and inverses
    // (no composition of core ops computes them)
    "aten::_linalg_det.default", "aten::_linalg_eigh.default", "aten::_linalg_slogdet.default", "aten::bmm.default",
    "aten::cholesky_inverse.default", "aten::linalg_cholesky_ex.default",
    "aten::linalg_inv_ex.default", "aten::linalg_lu.default", "aten::linalg_lu_factor_ex.default",
    "aten::linalg_lu_solve.default", "aten::geqrf.default", "aten::linalg_householder_product.default",
    "aten::linalg_matrix_exp.default",
    "aten::linalg_qr.default", "aten::linalg_solve_triangular.default", "aten::lu_unpack.default",
    "aten::mm.default",
    // Convolution
    "aten::col2im.default", "aten::convolution.default", "aten::convolution_backward.default", "aten::im2col.default",
    // Pooling
    "aten::_adaptive_avg_pool2d.default", "aten::_adaptive_avg_pool2d_backward.default",
    "aten::_adaptive_avg_pool3d.default", "aten::_adaptive_avg_pool3d_backward.default",
    "aten::adaptive_avg_pool1d.default", "aten::adaptive_max_pool2d.default",
    "aten::adaptive_max_pool2d_backward.default", "aten::adaptive_max_pool3d.default",
    "aten::adaptive_max_pool3d_backward.default", "aten::avg_pool1d.default", "aten::avg_pool2d.default",
    "aten::avg_pool2d_backward.default", "aten::avg_pool3d.default", "aten::avg_pool3d_backward.default",
    "aten::max_pool2d_with_indices.default", "aten::max_pool2d_with_indices_backward.default",
    "aten::max_pool3d_with_indices.default", "aten::max_pool3d_with_indices_backward.default",
    // Upsampling
    "aten::_upsample_nearest_exact1d_backward.default", "aten::_upsample_nearest_exact2d_backward.default",
    "aten::_upsample_nearest_exact3d_backward.default", "aten::upsample_bilinear2d.vec",
    "aten::upsample_bilinear2d_backward.default", "aten::upsample_linear1d_backward.default",
    "aten::upsample_nearest1d_backward.default", "aten::upsample_nearest2d_backward.default",
    "aten::upsample_nearest3d_backward.default", "aten::upsample_trilinear3d.vec",
    "aten::upsample_trilinear3d_backward.default", "aten::upsample_bicubic2d.default",
    "aten::upsample_bicubic2d_backward.default",
    // Grid sampling (the forward also decomposes where it pays: bilinear and nearest)
    "aten::grid_sampler_2d.default", "aten::grid_sampler_2d_backward.default",
    // Padding
    "aten::constant_pad_nd.default", "aten::reflection_pad1d.default", "aten::reflection_pad1d_backward.default",
    "aten::reflection_pad2d.default", "aten::reflection_pad2d_backward.default", "aten::reflection_pad3d.default",
    "aten::reflection_pad3d_backward.default", "aten::replication_pad1d_backward.default",
    "aten::replication_pad2d.default", "aten::replication_pad2d_backward.default", "aten::replication_pad3d.default",
    "aten::replication_pad3d_backward.default",
    // Normalization
    "aten::native_layer_norm_backward.default",
    // Attention: the backward kernels (recomputing probabilities from
    // logsumexp, the cuDNN one included; the efficient one decomposes too) and
    // the CUDA flash forward (philox state, SymInt lengths)
    "aten::_scaled_dot_product_efficient_attention_backward.default", "aten::_scaled_dot_product_flash_attention.default",
    "aten::_scaled_dot_product_flash_attention_backward.default",
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward.default",
    "aten::_scaled_dot_product_cudnn_attention_backward.default",
    // Embedding
    "aten::embedding.default", "aten::embedding_dense_backward.default",
    // Indexing and scatter
    "aten::gather.default", "aten::index.Tensor", "aten::index_put.default", "aten::index_select.default",
    "aten::masked_select.default", "aten::nonzero.default", "aten::scatter.src", "aten::scatter.value",
    "aten::scatter_add.default", "aten::scatter_reduce.two",
    "aten::as_strided_scatter.default", "aten::diagonal_scatter.default", "aten::select_scatter.default",
    "aten::slice_scatter.default",
    // Views, copies and conversion
    "aten::_to_copy.default", "aten::alias.default", "aten::as_strided.default", "aten::clone.default",
    "aten::copy.default", "aten::diagonal.default", "aten::expand.default", "aten::fill.Scalar",
    "aten::narrow.Tensor", "aten::permute.default", "aten::select.int", "aten::slice.Tensor",
    "aten::split_with_sizes.default", "aten::squeeze.dim", "aten::squeeze.dims",
    "aten::tensor_split.tensor_indices_or_sections", "aten::unsqueeze.default", "aten::view.default",
    // Joining and reordering
    "aten::cat.default", "aten::flip.default",
    // Tensor creation
    "aten::arange.start_step", "aten::empty.memory_format", "aten::empty_strided.default", "aten::full.default",
    "aten::full_like.default", "aten::linspace.default", "aten::scalar_tensor.default",
    // Random draws: kept whole, so every backend draws what eager draws from
    // the generator (a decomposition into rand() < p would draw other numbers)
    "aten::bernoulli.p",
    // ... and Inductor's random prims, drawing what their eager definitions draw
    "prims::inductor_random.default", "prims::inductor_randint.default", "prims::inductor_seed.default",
    "prims::inductor_seeds.default",
  };
  // clang-format on
  return ops;
}

const DecompTable& table() {
  static const DecompTable t = [] {
    DecompTable d;
    add_activation_decomps(d);
    add_pointwise_decomps(d);
    add_normalization_decomps(d);
    add_loss_decomps(d);
    add_reduction_decomps(d);
    add_linalg_decomps(d);
    add_shape_decomps(d);
    add_indexing_decomps(d);
    add_pooling_decomps(d);
    add_grid_sample_decomps(d);
    add_attention_decomps(d);
    return d;
  }();
  return t;
}

}  // namespace

const Decomposition* find_decomposition(std::string_view op) {
  const DecompTable& t = table();
  auto it = t.find(op);
  if (it == t.end()) it = t.find(full_op_name(op));
  return it == t.end() ? nullptr : &it->second;
}

bool is_core(std::string_view op) {
  const auto& s = core_set();
  return s.count(op) || s.count(full_op_name(op));
}

std::vector<std::string> core_ops() { return {core_set().begin(), core_set().end()}; }

std::vector<std::string> decomposed_ops() {
  std::vector<std::string> out;
  for (const auto& [name, _] : table()) out.push_back(name);
  return out;
}

}  // namespace kiln::decomp
