#pragma once
// Lowering's extern half (not part of the loop IR's interface): which extern
// kind a node becomes, its parameters, and whether a view of a buffer can be
// handed to a library call as a strided tensor. lower.cpp does the graph walk.
#include <functional>
#include <optional>
#include <string>

#include "compiler/loopir/loop_ir.h"

namespace kiln::loopir::detail {

// Sets call.kind and its GemmParams / ConvParams from call.target and
// call.args (tensors already indices into call.tensors, whose sizes are set).
// mm, bmm, addmm and non-transposed 1-D/2-D convolution get dedicated kinds;
// _scaled_dot_product_efficient_attention and its backward become
// AttentionForward / AttentionBackward where the GPU kernels can take them
// (else a Fallback with call.note saying why); everything else (transposed
// convolution included) is a Fallback.
void classify_extern(ExternCall& call);

// The strided view of `buffer` that `to_flat` describes (indices of a tensor
// of `sizes` to a flat element index of the buffer), or nullopt when the
// mapping is not affine with non-negative strides (a reshape of a permuted
// tensor): the caller then copies it into a contiguous buffer first.
std::optional<BufferView> as_strided_view(const Buffer& buffer, const std::vector<int64_t>& sizes,
                                          const std::function<IndexRef(const std::vector<IndexRef>&)>& to_flat);

// The strides meta['val'] gives when they describe a dense, non-overlapping
// layout (what a kernel may write), else row-major ones.
std::vector<int64_t> dense_strides_or_contiguous(const std::vector<int64_t>& sizes,
                                                 const std::vector<int64_t>& strides);

}  // namespace kiln::loopir::detail
