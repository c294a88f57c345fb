#pragma once
// Attention written out by hand becomes one fused attention op before
// autodiff, as Inductor's fuse_attention pattern pass does:
//
//   matmul(softmax(matmul(q, k^T) [* s | / s] [mask], -1), v)
//     -> _scaled_dot_product_efficient_attention(q, k, v, bias, compute_log_sumexp=True,
//                                                0.0, is_causal, scale=s)[0]
//
// Autodiff then differentiates the op to its own backward op, so the forward
// saves q, k, v, the output and the per-row logsumexp instead of the
// [B, H, L, S] scores and probabilities, and the backward recomputes the
// probabilities from the logsumexp. It is for graphs that train on the GPU
// (with KILN_FUSE_ATTENTION=1, pipeline::fuse_attention_for_gpu_training): the
// forward runs as Kiln's flash kernel, the backward as its decomposition into
// GEMMs (or the flash backward kernels). Inference graphs are fused later, on
// the loop IR.
//
// Matched, on 4-D tensors of one floating dtype (float16, bfloat16, float32)
// and the functional ATen graph of a region (before decomposition):
//   * k^T as transpose(k, 2, 3) (any spelling of the last two dims) or permute;
//   * the scale as mul / div by a number, or none;
//   * the mask as masked_fill(x, m, -inf) (a boolean m), add(x, a) (a tensor of
//     the query's dtype) or none. A boolean mask that is tril(ones) negated or
//     triu(ones, 1), as F.scaled_dot_product_attention(is_causal=True) traces,
//     becomes is_causal; any other becomes the additive -inf bias it is
//     equivalent to. A finite fill (-1e9) is not: a fully masked row differs
//     (uniform against softmax of the scores), so it is left as it is;
//   * float casts around the softmax (llama's softmax(x.float()).type_as(q)),
//     computed in float32 throughout as the fused kernel does.
// Every intermediate must have the chain as its only reader (a graph that
// returns the attention weights keeps them), and nothing else may sit in the
// chain (dropout on the probabilities keeps it unfused: its random numbers are
// the graph's). The output is copied to the layout the second matmul gave
// (contiguous), so every reader sees the strides it was traced with.
//
// Test: tests/compiler/test_pass_fuse_attention.cpp.
#include "compiler/pipeline/pass.h"

namespace kiln::pipeline {

PassResult fuse_attention(Graph& g, const PassContext& ctx);

}  // namespace kiln::pipeline
