#pragma once
// Functionalization: rewrites an ATen graph with mutation into one where every
// op makes a new value, as PyTorch's functionalization does before AOT
// autograd and Inductor see a graph. The pass runs first, so the algebra,
// folding and CSE passes (which skip graphs with mutation) see value
// semantics.
//
//   - An in-place call ("aten::add_.Tensor": a trailing underscore before the
//     overload) becomes its registered functional twin ("aten::add.Tensor";
//     copy_ -> copy, fill_ -> fill, zero_ -> zero), cast back to the written
//     tensor's dtype when the twin promotes; an out= call ("aten::add.out")
//     becomes the functional overload its other arguments fit. Later reads of
//     the written tensor (and of the mutating node, which ATen returns as an
//     alias of it) read the new value.
//   - A write through a view becomes a scatter into the view's base, step by
//     step up the view chain: slice -> slice_scatter, select -> select_scatter,
//     diagonal -> diagonal_scatter, as_strided -> as_strided_scatter, the
//     view/reshape/squeeze family -> a reshape back, transpose/t/permute ->
//     their inverse permutation, an item of split/chunk/unbind -> a slice or
//     select scatter. Later reads of the base, and of every view of it made
//     before the write, replay the view ops on the new base (PyTorch's view
//     replay); a view read again without a write in between is not replayed.
//     Writes through views with no inverse (expand, unfold, movedim) are an
//     error naming the node.
//   - Placeholders and get_attr buffers that get written keep their final
//     value in an explicit `aten::copy_.default(input, final)` right before
//     the output, in graph order. That is AOT autograd's epilogue made
//     visible: the body is functional, the one remaining mutation says what
//     the graph does to its caller's tensors, and running the graph still
//     updates them. Graph inputs are assumed not to alias each other.
//
// Views are known by the op registry's alias annotations (`Tensor(a) self`);
// ops that alias only sometimes (reshape, flatten, contiguous, to) count as
// views when the input's meta says the eager kernel returns a view
// (contiguous input, same dtype). Mutating calls with no functional twin
// (a registered op with a `Tensor(a!)` argument such as
// _native_batch_norm_legit's running stats) are left as they are.
//
// Provenance: a new node's meta.from is the from of the node it stands for
// (the mutating call for twins, scatters and the epilogue; the original view
// for a replayed view). The graph is untouched when nothing writes.
//
// Test: tests/compiler/test_pass_functionalize.cpp.
#include "compiler/pipeline/pass.h"

namespace kiln::pipeline {

PassResult functionalize(Graph& g, const PassContext& ctx);

}  // namespace kiln::pipeline
