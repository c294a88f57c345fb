// cuBLASLt through dlopen. The enum values are those of NVIDIA's public
// cublasLt.h (unchanged from CUDA 11 to 13); only the entry points every
// cuBLASLt since 11 exports are used.
#include "compiler/codegen/cuda/cublas_lt.h"


#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "compiler/codegen/cuda/cublas_layout.h"

namespace kiln::codegen::cuda {
namespace {

using namespace blas;

using Handle = void*;
using Desc = void*;
using Layout = void*;
using Pref = void*;
constexpr int kSuccess = 0;
constexpr int kCompute32F = 68, kCompute32FFastTF32 = 77;            // cublasComputeType_t
constexpr int kDescTransA = 3, kDescTransB = 4, kDescEpilogue = 7, kDescBiasPointer = 8;  // cublasLtMatmulDescAttributes_t
constexpr uint32_t kEpiDefault = 1, kEpiRelu = 2, kEpiBias = 4, kEpiGelu = 32;            // cublasLtEpilogue_t
constexpr int kPrefMaxWorkspace = 1, kPrefAlignA = 5, kPrefAlignB = 6, kPrefAlignC = 7, kPrefAlignD = 8;
// PyTorch gives cuBLASLt 32 MiB on Hopper; less keeps some split-K kernels out.
constexpr uint64_t kWorkspaceBytes = uint64_t(32) << 20;
// cublasLtMatmulHeuristicResult_t is 96 bytes (algo 64, workspaceSize at 64);
// room for a larger one in a later cuBLASLt.
constexpr size_t kHeuristicBytes = 1024, kAlgoBytes = 64, kWorkspaceOffset = 64;

struct Lt {
  Status status;
  std::string path;
  size_t version = 0;
  int (*Create)(Handle*) = nullptr;
  size_t (*GetVersion)() = nullptr;
  int (*DescCreate)(Desc*, int, int) = nullptr;
  int (*DescDestroy)(Desc) = nullptr;
  int (*DescSet)(Desc, int, const void*, size_t) = nullptr;
  int (*LayoutCreate)(Layout*, int, uint64_t, uint64_t, int64_t) = nullptr;
  int (*LayoutDestroy)(Layout) = nullptr;
  int (*PrefCreate)(Pref*) = nullptr;
  int (*PrefDestroy)(Pref) = nullptr;
  int (*PrefSet)(Pref, int, const void*, size_t) = nullptr;
  int (*Heuristic)(Handle, Desc, Layout, Layout, Layout, Layout, Pref, int, void*, int*) = nullptr;
  int (*Matmul)(Handle, Desc, const void*, const void*, Layout, const void*, Layout, const void*, const void*, Layout,
                void*, Layout, const void*, void*, size_t, CUstream) = nullptr;
  Handle handle = nullptr;
  DeviceBuffer workspace;  // allocated on first use: never inside a stream capture (the warm-up run comes first)
  // Per layout, epilogue and alignment: the heuristic's algorithm, or none (refused).
  std::map<std::vector<int64_t>, std::optional<std::vector<unsigned char>>> algos;
  std::mutex mutex;
};

Lt& lt() {
  static Lt* loaded = [] {
    auto* c = new Lt;  // never destroyed: the driver may be gone at exit
    if (const char* off = std::getenv("KILN_NO_CUBLASLT"); off && std::string(off) == "1") {
      c->status = Status::error("turned off by KILN_NO_CUBLASLT=1");
      return c;
    }
    if (Status st = cuda_init(); !st.ok()) {
      c->status = st;
      return c;
    }
    auto lib = load_cuda_library("cuBLASLt", "KILN_CUBLASLT_LIBRARY",
                                 {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}, library_dirs());
    if (!lib) {
      c->status = lib.status();
      return c;
    }
    c->path = lib->path;
    std::string missing;
    bind_symbol(lib->handle, "cublasLtCreate", c->Create, missing);
    bind_symbol(lib->handle, "cublasLtGetVersion", c->GetVersion, missing);
    bind_symbol(lib->handle, "cublasLtMatmulDescCreate", c->DescCreate, missing);
    bind_symbol(lib->handle, "cublasLtMatmulDescDestroy", c->DescDestroy, missing);
    bind_symbol(lib->handle, "cublasLtMatmulDescSetAttribute", c->DescSet, missing);
    bind_symbol(lib->handle, "cublasLtMatrixLayoutCreate", c->LayoutCreate, missing);
    bind_symbol(lib->handle, "cublasLtMatrixLayoutDestroy", c->LayoutDestroy, missing);
    bind_symbol(lib->handle, "cublasLtMatmulPreferenceCreate", c->PrefCreate, missing);
    bind_symbol(lib->handle, "cublasLtMatmulPreferenceDestroy", c->PrefDestroy, missing);
    bind_symbol(lib->handle, "cublasLtMatmulPreferenceSetAttribute", c->PrefSet, missing);
    bind_symbol(lib->handle, "cublasLtMatmulAlgoGetHeuristic", c->Heuristic, missing);
    bind_symbol(lib->handle, "cublasLtMatmul", c->Matmul, missing);
    if (!missing.empty()) {
      c->status = Status::error("cuBLASLt at " + c->path + " lacks " + missing);
      return c;
    }
    if (int rc = c->Create(&c->handle); rc != kSuccess) {
      c->status = Status::error("cublasLtCreate failed with status " + std::to_string(rc) + " (" + c->path + ")");
      return c;
    }
    c->version = c->GetVersion();
    return c;
  }();
  return *loaded;
}



// The largest power of two (up to 256) dividing the address: the alignment the heuristic may count on.
uint32_t alignment(CUdeviceptr p) {
  uint32_t a = 256;
  while (a > 1 && p % a != 0) a /= 2;
  return a;
}

// Frees the descriptors of one call however it returns.
struct Descriptors {
  Lt& lt;
  Desc desc = nullptr;
  Layout a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  Pref pref = nullptr;
  ~Descriptors() {
    for (Layout l : {a, b, c, d})
      if (l) lt.LayoutDestroy(l);
    if (desc) lt.DescDestroy(desc);
    if (pref) lt.PrefDestroy(pref);
  }
};

}  // namespace

bool cublas_lt_gemm(const LtGemmCall& call, const Stream* stream, std::string* why) {
  auto refuse = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  const GemmCall& g = call.gemm;
  const int type = g.dtype == DType::Float64 ? -1 : data_type(g.dtype);
  if (type < 0) return refuse("no cuBLASLt epilogue for " + std::string(dtype_name(g.dtype)));
  if (g.batch != 1) return refuse("a batched GEMM");
  if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.m > INT32_MAX || g.n > INT32_MAX || g.k > INT32_MAX)
    return refuse("sizes cuBLASLt does not take");
  Lt& c = lt();
  if (!c.status.ok()) return refuse("cuBLASLt unavailable: " + c.status.message());
  if (Status st = cuda_make_current(); !st.ok()) return refuse(st.message());
  ColumnMajor a = as_column_major(g.a, g.m, g.k), b = as_column_major(g.b, g.k, g.n);
  if (!a.ok || !b.ok) return refuse("an operand with neither unit row nor unit column stride");
  if (!(g.c.col_stride == 1 && (g.c.row_stride >= g.n || g.m == 1))) return refuse("the result's layout");
  const bool has_c = call.c.ptr != 0;
  if (has_c && !(call.c.col_stride == 1 && (call.c.row_stride >= g.n || g.m == 1))) return refuse("the addend's layout");
  const size_t es = element_size(g.dtype);
  const CUdeviceptr pa = g.b.ptr + CUdeviceptr(g.b.offset * int64_t(es));  // cuBLASLt's A is our B (C^T = B^T A^T)
  const CUdeviceptr pb = g.a.ptr + CUdeviceptr(g.a.offset * int64_t(es));
  const CUdeviceptr pd = g.c.ptr + CUdeviceptr(g.c.offset * int64_t(es));
  const CUdeviceptr pc = has_c ? call.c.ptr + CUdeviceptr(call.c.offset * int64_t(es)) : pd;
  const int64_t ldd = std::max({g.c.row_stride, g.n, int64_t(1)});
  const int64_t ldc = has_c ? std::max({call.c.row_stride, g.n, int64_t(1)}) : ldd;
  uint32_t epilogue = call.activation == LtActivation::Relu       ? kEpiRelu
                      : call.activation == LtActivation::GeluTanh ? kEpiGelu
                                                                  : kEpiDefault;
  if (call.bias) epilogue = epilogue == kEpiDefault ? kEpiBias : (epilogue | kEpiBias);
  const int compute = g.tf32 && g.dtype == DType::Float32 ? kCompute32FFastTF32 : kCompute32F;
  const uint32_t align[4] = {alignment(pa), alignment(pb), alignment(pc), alignment(pd)};
  std::lock_guard<std::mutex> lock(c.mutex);
  if (!c.workspace.ptr()) {
    Expected<DeviceBuffer> w = DeviceBuffer::alloc(kWorkspaceBytes);
    if (!w) return refuse("cuBLASLt workspace: " + w.status().message());
    c.workspace = std::move(*w);
  }
  Descriptors d{c};
  auto failed = [&](const char* what, int rc) { return refuse(std::string(what) + " failed with status " + std::to_string(rc)); };
  if (int rc = c.DescCreate(&d.desc, compute, kR32F); rc != kSuccess) return failed("cublasLtMatmulDescCreate", rc);
  const int32_t ta = b.op, tb = a.op;
  c.DescSet(d.desc, kDescTransA, &ta, sizeof ta);
  c.DescSet(d.desc, kDescTransB, &tb, sizeof tb);
  c.DescSet(d.desc, kDescEpilogue, &epilogue, sizeof epilogue);
  if (call.bias) {
    const void* bias = reinterpret_cast<const void*>(call.bias);
    if (int rc = c.DescSet(d.desc, kDescBiasPointer, &bias, sizeof bias); rc != kSuccess)
      return failed("setting the bias pointer", rc);
  }
  // Layouts as stored, before the op: cuBLASLt's A (our B) is n x k, its B (our A) k x m, C and D n x m.
  const uint64_t rows_a = ta == kOpN ? g.n : g.k, cols_a = ta == kOpN ? g.k : g.n;
  const uint64_t rows_b = tb == kOpN ? g.k : g.m, cols_b = tb == kOpN ? g.m : g.k;
  if (int rc = c.LayoutCreate(&d.a, type, rows_a, cols_a, b.ld); rc != kSuccess) return failed("layout A", rc);
  if (int rc = c.LayoutCreate(&d.b, type, rows_b, cols_b, a.ld); rc != kSuccess) return failed("layout B", rc);
  if (int rc = c.LayoutCreate(&d.c, type, g.n, g.m, ldc); rc != kSuccess) return failed("layout C", rc);
  if (int rc = c.LayoutCreate(&d.d, type, g.n, g.m, ldd); rc != kSuccess) return failed("layout D", rc);
  const std::vector<int64_t> key = {g.m, g.n, g.k, ta, tb, b.ld, a.ld, ldc, ldd, type, compute, int64_t(epilogue),
                                    align[0], align[1], align[2], align[3], call.bias ? int64_t(alignment(call.bias)) : 0,
                                    has_c};
  auto found = c.algos.find(key);
  if (found == c.algos.end()) {
    if (int rc = c.PrefCreate(&d.pref); rc != kSuccess) return failed("cublasLtMatmulPreferenceCreate", rc);
    c.PrefSet(d.pref, kPrefMaxWorkspace, &kWorkspaceBytes, sizeof kWorkspaceBytes);
    const int attrs[4] = {kPrefAlignA, kPrefAlignB, kPrefAlignC, kPrefAlignD};
    for (int i = 0; i < 4; ++i) c.PrefSet(d.pref, attrs[i], &align[i], sizeof align[i]);
    alignas(16) unsigned char result[kHeuristicBytes] = {};
    int count = 0;
    int rc = c.Heuristic(c.handle, d.desc, d.a, d.b, d.c, d.d, d.pref, 1, result, &count);
    std::optional<std::vector<unsigned char>> algo;
    uint64_t needs = 0;
    if (rc == kSuccess && count > 0) {
      std::memcpy(&needs, result + kWorkspaceOffset, sizeof needs);
      if (needs <= kWorkspaceBytes) algo = std::vector<unsigned char>(result, result + kAlgoBytes);
    }
    found = c.algos.emplace(key, std::move(algo)).first;
  }
  if (!found->second)
    return refuse("cuBLASLt's heuristic has no algorithm for this layout and epilogue (" + std::to_string(g.m) + "x" +
                  std::to_string(g.n) + "x" + std::to_string(g.k) + ", " + std::string(dtype_name(g.dtype)) + ")");
  const float alpha = float(g.alpha), beta = has_c ? float(g.beta) : 0.f;
  int rc = c.Matmul(c.handle, d.desc, &alpha, reinterpret_cast<const void*>(pa), d.a, reinterpret_cast<const void*>(pb),
                    d.b, &beta, reinterpret_cast<const void*>(pc), d.c, reinterpret_cast<void*>(pd), d.d,
                    found->second->data(), reinterpret_cast<void*>(c.workspace.ptr()), kWorkspaceBytes,
                    stream ? stream->handle() : nullptr);
  if (rc != kSuccess) {
    found->second.reset();  // do not ask again: the fallback runs from now on
    return failed("cublasLtMatmul", rc);
  }
  return true;
}

std::string cublas_lt_describe() {
  Lt& c = lt();
  if (!c.status.ok()) return "unavailable: " + c.status.message();
  return "cuBLASLt " + std::to_string(c.version / 10000) + "." + std::to_string(c.version / 100 % 100) + "." +
         std::to_string(c.version % 100) + " from " + c.path;
}

}  // namespace kiln::codegen::cuda
