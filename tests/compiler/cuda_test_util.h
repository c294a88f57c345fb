#pragma once
// What the CUDA back end's tests share: a compiled graph's stage text, why the
// GPU cases cannot run here, the tolerance each dtype is held to against ATen,
// and the normwise error it is measured with.
#include <algorithm>
#include <cmath>
#include <limits>
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

// Max |got - want| over max |want| (both as float64), finite entries; a NaN
// or inf where the other has not the same is infinite.
inline double normwise_error(const Tensor& got, const Tensor& want) {
  const Tensor g = got.to(DType::Float64).contiguous(), w = want.to(DType::Float64).contiguous();
  const double* gp = g.data<double>();
  const double* wp = w.data<double>();
  double err = 0, scale = 0;
  for (int64_t i = 0; i < g.numel(); ++i) {
    if (!std::isfinite(wp[i]) || !std::isfinite(gp[i])) {
      if (!(gp[i] == wp[i] || (std::isnan(gp[i]) && std::isnan(wp[i])))) return std::numeric_limits<double>::infinity();
      continue;
    }
    err = std::max(err, std::abs(gp[i] - wp[i]));
    scale = std::max(scale, std::abs(wp[i]));
  }
  return err / std::max(scale, 1e-30);
}

}  // namespace kiln::test
