#pragma once
// compile(): Kiln's pipeline from a captured graph to what runs, one Stage per
// step (ARCHITECTURE.md, "Stages and the pass manager"). Read pipeline.cpp
// top to bottom to learn the whole compiler, as Halide's Lower.cpp teaches Halide's.
#include <string>
#include <vector>

#include "compiler/pipeline/constants.h"
#include "compiler/pipeline/pass_manager.h"
#include "compiler/runtime/compiled_graph.h"
#include "compiler/runtime/cuda_graph.h"
#include "core/graph/graph.h"
#include "core/util/status.h"

namespace kiln::pipeline {

struct Options {
  PassManagerOptions instrumentation;
  // Pass names (pass_registry()) to leave out of the pipeline.
  std::vector<std::string> disabled_passes;
  // Ops the decompose pass leaves whole: the backend runs each as one kernel.
  std::vector<std::string> keep_whole;
  // Tensors behind the input graph's get_attr nodes.
  ConstantTable constants;
};

struct CompileResult {
  Graph graph;               // the last good stage
  ConstantTable constants;   // the input's plus those the passes made
  std::vector<Stage> stages;  // "input" first, then one per pass application
  // Not ok when a pass failed or verification caught a broken stage; the
  // stages up to and including the broken one are kept for inspection.
  Status status;
  bool stopped = false;  // stop_after cut the pipeline short
};

// The graph passes compile() runs, in order.
std::vector<std::string> graph_pass_pipeline();

CompileResult compile(Graph g, Options options = {});

// Backend kiln: the graph through every graph pass, then the CPU code
// generator. A pass that fails or throws is the Status, as is what the
// generator refuses.
Expected<std::shared_ptr<runtime::CompiledGraph>> compile_to_cpu(Graph g, const runtime::CompileOptions& options = {});

// The ops backend kiln-cuda runs whole, each as one kernel of its own, though
// they have decompositions (the decompose pass leaves them): the fused
// attention the training rewrite makes (compiler/passes/fuse_attention.h).
const std::vector<std::string>& cuda_whole_ops();

// Backend kiln-cuda: the same graph passes, then the CUDA code generator and NVRTC.
Expected<std::shared_ptr<runtime::CudaCompiledGraph>> compile_to_cuda(Graph g,
                                                                      const runtime::CudaCompileOptions& options = {});

}  // namespace kiln::pipeline
