#pragma once
// What the cuBLAS and cuBLASLt calls share: the enum values Kiln passes them
// (from NVIDIA's public headers; no CUDA header is included) and how a
// row-major operand is handed to a column-major library.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "compiler/codegen/cuda/cublas.h"
#include "compiler/codegen/cuda/cuda_api.h"

namespace kiln::codegen::cuda::blas {

inline constexpr int kOpN = 0, kOpT = 1;                                 // cublasOperation_t
inline constexpr int kR32F = 0, kR64F = 1, kR16F = 2, kR16BF = 14;       // cudaDataType

// Where libcublas and libcublasLt are looked for after the loader's own
// search: CUDA_HOME, the usual toolkit folder, pip's nvidia wheels.
inline std::vector<std::string> library_dirs() {
  std::vector<std::string> dirs;
  if (const char* home = std::getenv("CUDA_HOME"); home && *home) dirs.push_back(std::string(home) + "/lib64");
  dirs.push_back("/usr/local/cuda/lib64");
  for (const std::string& d : python_cuda_lib_dirs({"nvidia/cu13/lib", "nvidia/cublas/lib"})) dirs.push_back(d);
  return dirs;
}

// The cudaDataType of `d`; -1 when the libraries have no GEMM for it.
inline int data_type(DType d) {
  switch (d) {
    case DType::Float32: return kR32F;
    case DType::Float64: return kR64F;
    case DType::Float16: return kR16F;
    case DType::BFloat16: return kR16BF;
    default: return -1;
  }
}

// A row-major operand as the library's column-major view of its transpose:
// the operation to apply and the leading dimension; ok is false for an
// operand with neither unit row nor unit column stride.
struct ColumnMajor {
  int op = kOpN;
  int64_t ld = 0;
  bool ok = false;
};

inline ColumnMajor as_column_major(const GemmOperand& x, int64_t rows, int64_t cols) {
  ColumnMajor c;
  // Row-major [rows, cols] with unit column stride is column-major [cols, rows]: no transpose.
  if (x.col_stride == 1 || cols == 1) {
    c.op = kOpN;
    c.ld = std::max({x.row_stride, cols, int64_t(1)});
    c.ok = rows == 1 || x.row_stride >= cols;
  } else if (x.row_stride == 1 || rows == 1) {
    c.op = kOpT;
    c.ld = std::max({x.col_stride, rows, int64_t(1)});
    c.ok = cols == 1 || x.col_stride >= rows;
  }
  return c;
}

}  // namespace kiln::codegen::cuda::blas
