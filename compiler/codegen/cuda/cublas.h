#pragma once
// cuBLAS, loaded with dlopen like the driver (cuda_api.h), for the GEMM extern
// kernels of the GPU backend and the benchmark's GEMM ceiling. Row-major
// operands as Kiln's buffers hold them; the column-major swap is done here.
#include <cstdint>
#include <string>

#include "compiler/codegen/cuda/cuda_api.h"
#include "core/tensor/dtype.h"
#include "core/util/status.h"

namespace kiln::codegen::cuda {

// One row-major matrix of a (batched) GEMM: element (b, i, j) is at
// ptr + (offset + b * batch_stride + i * row_stride + j * col_stride) elements.
// One of row_stride / col_stride must be 1 (or the dimension 1).
struct GemmOperand {
  CUdeviceptr ptr = 0;
  int64_t offset = 0;
  int64_t row_stride = 0, col_stride = 1, batch_stride = 0;
};

// C[b] = alpha * A[b] @ B[b] + beta * C[b]; A is m x k, B is k x n, C is m x n,
// all of `dtype` (float32, float64, float16 or bfloat16; half types accumulate
// in float, as ATen's matmul does; float32 without TF32, as torch's default
// "highest" precision).
struct GemmCall {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  GemmOperand a, b, c;
  DType dtype = DType::Float32;
  double alpha = 1, beta = 0;
  // float32 multiplied as TF32 on the tensor cores (accumulating in float32):
  // what PyTorch does for convolutions by default (torch.backends.cudnn.allow_tf32)
  // and for matmuls when torch.backends.cuda.matmul.allow_tf32 is set.
  bool tf32 = false;
};

// Whether cuBLAS can take these operands as they are (no copy): a Status saying why not.
Status cublas_supports(const GemmCall& call);
Status cublas_gemm(const GemmCall& call, const Stream* stream = nullptr);

// "cuBLAS 13.0.0 from <path>", or "unavailable: <why>".
std::string cublas_describe();

}  // namespace kiln::codegen::cuda
