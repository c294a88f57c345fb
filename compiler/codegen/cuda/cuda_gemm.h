#pragma once
// GEMM extern kernels (mm, bmm, addmm, a folded epilogue) on cuBLAS. cuBLAS
// computes alpha * A @ B + beta * C with C the output itself, so a GEMM with
// a C (addmm's bias, broadcast; or a number) first has a small kernel of the
// graph's module fill the output with C. Everything is queued on one stream.
#include <functional>
#include <set>
#include <string>

#include "compiler/codegen/cuda/cublas.h"
#include "compiler/codegen/cuda/cuda_api.h"
#include "compiler/loopir/loop_ir.h"

namespace kiln::codegen::cuda {

// Whether extern kernel `k` is a GEMM cuBLAS runs: one dtype cuBLAS has
// throughout (operands, C and output).
bool gemm_on_gpu(const loopir::Program& p, const loopir::Kernel& k);

// The kernel filling the output with C before the call ("kiln_gemm_c_copy_b4"),
// or "" when the GEMM has no C.
std::string gemm_c_kernel(const loopir::Program& p, const loopir::Kernel& k);
// CUDA source for those kernels, appended after the prelude.
std::string gemm_c_kernels_source(const std::set<std::string>& names);

// Queues the GEMM of `k` on `stream`; `pointer` gives a buffer's storage base,
// `fill_c` the module's gemm_c_kernel (null when there is none).
Status run_gemm_on_gpu(const loopir::Program& p, const loopir::Kernel& k,
                       const std::function<CUdeviceptr(const std::string&)>& pointer, CUfunction fill_c, bool tf32,
                       const Stream* stream);

}  // namespace kiln::codegen::cuda
