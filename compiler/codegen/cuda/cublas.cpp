// cuBLAS through dlopen. Enum values are those of CUDA 13's library_types.h
// and cublas_api.h; the entry points are the _v2 / Ex ones every cuBLAS since
// 11 exports.
#include "compiler/codegen/cuda/cublas.h"


#include <algorithm>
#include <mutex>
#include <vector>

#include "compiler/codegen/cuda/cublas_layout.h"

namespace kiln::codegen::cuda {
namespace {

using namespace blas;

using Handle = void*;
constexpr int kSuccess = 0;
constexpr int kCompute32F = 68, kCompute32FFastTF32 = 77, kCompute64F = 70;                            // cublasComputeType_t
constexpr int kGemmDefault = -1;                                              // CUBLAS_GEMM_DEFAULT

struct Cublas {
  Status status;
  std::string path;
  int version = 0;
  int (*Create)(Handle*) = nullptr;
  int (*SetStream)(Handle, CUstream) = nullptr;
  int (*GetVersion)(Handle, int*) = nullptr;
  int (*GemmStridedBatchedEx)(Handle, int, int, int, int, int, const void*, const void*, int, int, long long,
                              const void*, int, int, long long, const void*, void*, int, int, long long, int, int,
                              int) = nullptr;
  Handle handle = nullptr;
  std::mutex mutex;  // a handle is not safe to share between threads mid-call
};

Cublas& cublas() {
  static Cublas* loaded = [] {
    auto* c = new Cublas;  // never destroyed: the driver may be gone at exit
    if (Status st = cuda_init(); !st.ok()) {
      c->status = st;
      return c;
    }
    auto lib = load_cuda_library("cuBLAS", "KILN_CUBLAS_LIBRARY", {"libcublas.so.13", "libcublas.so.12", "libcublas.so"},
                                 library_dirs());
    if (!lib) {
      c->status = lib.status();
      return c;
    }
    c->path = lib->path;
    std::string missing;
    bind_symbol(lib->handle, "cublasCreate_v2", c->Create, missing);
    bind_symbol(lib->handle, "cublasSetStream_v2", c->SetStream, missing);
    bind_symbol(lib->handle, "cublasGetVersion_v2", c->GetVersion, missing);
    bind_symbol(lib->handle, "cublasGemmStridedBatchedEx", c->GemmStridedBatchedEx, missing);
    if (!missing.empty()) {
      c->status = Status::error("cuBLAS at " + c->path + " lacks " + missing);
      return c;
    }
    if (int rc = c->Create(&c->handle); rc != kSuccess) {
      c->status = Status::error("cublasCreate_v2 failed with status " + std::to_string(rc) + " (" + c->path + ")");
      return c;
    }
    c->GetVersion(c->handle, &c->version);
    return c;
  }();
  return *loaded;
}




bool fits_int(int64_t v) { return v >= 0 && v <= INT32_MAX; }

}  // namespace

Status cublas_supports(const GemmCall& g) {
  if (data_type(g.dtype) < 0) return Status::error("cuBLAS GEMM: no " + std::string(dtype_name(g.dtype)) + " GEMM");
  if (!fits_int(g.m) || !fits_int(g.n) || !fits_int(g.k) || !fits_int(g.batch))
    return Status::error("cuBLAS GEMM: sizes beyond 32 bits");
  ColumnMajor a = as_column_major(g.a, g.m, g.k), b = as_column_major(g.b, g.k, g.n);
  if (!a.ok || !b.ok) return Status::error("cuBLAS GEMM: an operand with neither unit row nor unit column stride");
  if (!(g.c.col_stride == 1 && (g.c.row_stride >= g.n || g.m == 1)))
    return Status::error("cuBLAS GEMM: the result must have unit column stride");
  return {};
}

Status cublas_gemm(const GemmCall& g, const Stream* stream) {
  if (Status st = cublas_supports(g); !st.ok()) return st;
  Cublas& c = cublas();
  if (!c.status.ok()) return c.status;
  if (Status st = cuda_make_current(); !st.ok()) return st;
  if (g.m == 0 || g.n == 0 || g.batch == 0) return {};
  const size_t es = element_size(g.dtype);
  const int type = data_type(g.dtype);
  const bool f64 = g.dtype == DType::Float64;
  const int compute = f64 ? kCompute64F : g.tf32 && g.dtype == DType::Float32 ? kCompute32FFastTF32 : kCompute32F;
  // C^T = B^T A^T in column-major: cuBLAS's "A" is our B, its m is our n.
  ColumnMajor a = as_column_major(g.a, g.m, g.k), b = as_column_major(g.b, g.k, g.n);
  const int64_t ldc = std::max({g.c.row_stride, g.n, int64_t(1)});
  double alpha64 = g.alpha, beta64 = g.beta;
  float alpha32 = float(g.alpha), beta32 = float(g.beta);
  const void* alpha = f64 ? static_cast<const void*>(&alpha64) : &alpha32;
  const void* beta = f64 ? static_cast<const void*>(&beta64) : &beta32;
  std::lock_guard<std::mutex> lock(c.mutex);
  if (int rc = c.SetStream(c.handle, stream ? stream->handle() : nullptr); rc != kSuccess)
    return Status::error("cublasSetStream_v2 failed with status " + std::to_string(rc));
  int rc = c.GemmStridedBatchedEx(c.handle, b.op, a.op, int(g.n), int(g.m), int(g.k), alpha,
                                  reinterpret_cast<const void*>(g.b.ptr + g.b.offset * es), type, int(b.ld),
                                  g.b.batch_stride, reinterpret_cast<const void*>(g.a.ptr + g.a.offset * es), type,
                                  int(a.ld), g.a.batch_stride, beta, reinterpret_cast<void*>(g.c.ptr + g.c.offset * es),
                                  type, int(ldc), g.c.batch_stride, int(g.batch), compute, kGemmDefault);
  if (rc != kSuccess)
    return Status::error("cublasGemmStridedBatchedEx failed with status " + std::to_string(rc) + " (" +
                         std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k) + ", batch " +
                         std::to_string(g.batch) + ", " + std::string(dtype_name(g.dtype)) + ")");
  return {};
}

std::string cublas_describe() {
  Cublas& c = cublas();
  if (!c.status.ok()) return "unavailable: " + c.status.message();
  return "cuBLAS " + std::to_string(c.version / 10000) + "." + std::to_string(c.version / 100 % 100) + "." +
         std::to_string(c.version % 100) + " from " + c.path;
}

}  // namespace kiln::codegen::cuda
