#pragma once
// The decomposition pass: every node whose op has a decomposition
// (compiler/decomp) is replaced by core ATen ops, recursively, with provenance.
// Until autodiff and partitioning join the pipeline it runs first, on the
// lowered forward graph.
//
// Test: tests/compiler/test_decompositions.cpp (the decompositions and this pass's graph form).
#include "compiler/pipeline/pass.h"

namespace kiln::pipeline {

PassResult decompose_to_core(Graph& g, const PassContext& ctx);

}  // namespace kiln::pipeline
