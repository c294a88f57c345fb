#pragma once
// A graph compiled for the GPU: the decomposed ATen graph lowered to loops,
// scheduled, emitted as CUDA C++ (codegen/cuda/cuda_emit.h) and compiled by
// NVRTC. Compiling needs only NVRTC; run() needs the driver and a GPU: it
// uploads the inputs, launches a kernel per group (extern kernels run on the
// host kernels, their buffers copied across), and downloads the outputs.
// This is what backend "kiln-cuda" runs.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/runtime/compiled_graph.h"
#include "core/graph/graph.h"
#include "core/tensor/tensor.h"
#include "core/util/status.h"

namespace kiln::runtime {

struct CudaCompileOptions {
  bool keep_text = false;  // keep the CUDA source and the PTX as stages
  // Compile only (no driver needed): for the target `sm` below. Otherwise
  // the GPU's own compute capability is used and the module is loaded.
  bool compile_only = false;
  int sm = 90;
  // "" takes KILN_INJECT_BUG from the environment; "none" ignores it.
  std::string inject_bug;
};

struct CudaCompileStats {
  double lower_ms = 0, schedule_ms = 0, emit_ms = 0, nvrtc_ms = 0, load_ms = 0, total_ms = 0;
  size_t kernels = 0, extern_groups = 0, ptx_bytes = 0, cubin_bytes = 0;
};

class CudaCompiledGraph {
 public:
  ~CudaCompiledGraph();
  static Expected<std::shared_ptr<CudaCompiledGraph>> compile(const Graph& g, const CudaCompileOptions& options = {},
                                                              const std::map<std::string, Tensor>& constants = {});

  // Host tensors in, host tensors out (placeholder order, constants left out).
  // A graph compiled with compile_only cannot run: that is a Status.
  Expected<std::vector<Tensor>> run(const std::vector<Tensor>& inputs) const;

  // cuda_source and ptx (keep_text), after ir_pre_fusion and ir_post_fusion.
  const std::vector<CodegenStage>& stages() const;
  const CudaCompileStats& stats() const;

  struct Impl;

 private:
  explicit CudaCompiledGraph(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::runtime
