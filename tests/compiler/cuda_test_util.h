#pragma once
// What the CUDA back end's tests share: a compiled graph's stage text, why the
// GPU cases cannot run here, and the tolerance each dtype is held to against ATen.
#include <string>

#include "compiler/codegen/cuda/cuda_api.h"
#include "compiler/runtime/cuda_graph.h"

namespace kiln::test {

inline const std::string& cuda_stage(const runtime::CudaCompiledGraph& g, const std::string& name) {
  static const std::string none = "(no stage)";
  for (const runtime::CodegenStage& s : g.stages())
    if (s.name == name) return s.text;
  return none;
}

// "" when a GPU answers, else why not.
inline std::string no_gpu_reason() {
  Status st = codegen::cuda::cuda_init();
  return st.ok() ? "" : "no GPU: " + st.message();
}

// Against ATen's kernels: half types round every product, float32 reorders sums.
inline double cuda_tolerance(DType d) {
  return d == DType::Float64 ? 1e-9 : d == DType::Float16 ? 1e-2 : d == DType::BFloat16 ? 4e-2 : 1e-4;
}

}  // namespace kiln::test
