#pragma once
// cuBLASLt through dlopen, as cublas.h loads cuBLAS: one GEMM with its
// epilogue (bias, relu, gelu tanh, beta * C) in the same call, for the GEMMs
// the scheduler marked (GemmLtEpilogue). Row-major operands as Kiln holds them.
#include <string>

#include "compiler/codegen/cuda/cublas.h"

namespace kiln::codegen::cuda {

enum class LtActivation { None, Relu, GeluTanh };

// D = activation(alpha * A @ B + beta * C + bias), D in gemm.c (its own
// buffer, not C's), all of gemm.dtype; accumulated and the epilogue applied
// in float32, rounded once.
struct LtGemmCall {
  GemmCall gemm;        // batch 1; beta scales `c`
  GemmOperand c;        // the addend (ptr 0: none), unit column stride
  CUdeviceptr bias = 0;  // N elements, unit stride (0: none)
  LtActivation activation = LtActivation::None;
};

// True when queued on `stream`; false, with `why`, when cuBLASLt is not
// there, is turned off (KILN_NO_CUBLASLT=1) or has no algorithm for this
// layout and epilogue: then nothing was queued and the caller runs its fallback.
bool cublas_lt_gemm(const LtGemmCall& call, const Stream* stream, std::string* why);

// "cuBLASLt 13.0.0 from <path>", or "unavailable: <why>".
std::string cublas_lt_describe();

}  // namespace kiln::codegen::cuda
