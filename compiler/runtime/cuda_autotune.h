#pragma once
// mode="max-autotune" for the CUDA backend: a graph compiled with each launch
// shape in a small search space (row positions per thread of the reduction
// kernels: 8, 16, 32), every distinct variant timed on the call's own inputs
// with CUDA events, the fastest kept. The choice is stored in the compile
// cache under the graph's default CUDA source and the GPU's name, so a later
// process (or a recompile) skips the search.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compiler/runtime/cuda_graph.h"
#include "core/graph/graph.h"
#include "core/tensor/tensor.h"
#include "core/util/status.h"

namespace kiln::runtime {

struct AutotuneResult {
  std::shared_ptr<CudaCompiledGraph> graph;  // the fastest variant
  int row_elements_per_thread = 0;
  bool from_cache = false;
  // Per variant timed: its launch shape and median milliseconds (empty from the cache).
  std::vector<std::pair<int, double>> timings;
};

// `compile` makes a variant from options (compile_to_cuda: the graph passes,
// then this file's CudaCompiledGraph::compile); `base` holds the other options.
using VariantCompiler = std::function<Expected<std::shared_ptr<CudaCompiledGraph>>(const CudaCompileOptions&)>;
Expected<AutotuneResult> autotune_cuda(const VariantCompiler& compile, const CudaCompileOptions& base,
                                       const std::vector<Tensor>& inputs);

}  // namespace kiln::runtime
