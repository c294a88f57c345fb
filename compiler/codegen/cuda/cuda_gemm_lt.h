#pragma once
// GEMM extern kernels with a cuBLASLt epilogue (the scheduler's
// GemmLtEpilogue): one call writes the epilogue kernel's output, and the
// runtime skips that kernel. When cuBLASLt is missing or refuses the layout,
// nothing is queued and the runtime runs the plain GEMM and the kernel.
#include <functional>
#include <string>

#include "compiler/codegen/cuda/cuda_api.h"
#include "compiler/loopir/loop_ir.h"

namespace kiln::codegen::cuda {

// Whether `k` (a GEMM on the GPU) carries an epilogue cuBLASLt could run.
bool gemm_has_lt_epilogue(const loopir::Kernel& k);

// True when the GEMM and its epilogue were queued on `stream`; false (with
// `why`) when the caller must run the fallback, nothing having been queued.
bool run_gemm_lt_on_gpu(const loopir::Program& p, const loopir::Kernel& k,
                        const std::function<CUdeviceptr(const std::string&)>& pointer, bool tf32, const Stream* stream,
                        std::string* why);

}  // namespace kiln::codegen::cuda
