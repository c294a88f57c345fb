#include "compiler/codegen/cuda/cuda_gemm.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <sstream>

namespace kiln::codegen::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = int64_t(1) << 16;

bool cublas_dtype(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

// Rank 2 or 3 as [B, M, N], the batch 1 (stride 0) for a plain mm.
struct Dims3 {
  int64_t size[3] = {1, 1, 1}, stride[3] = {0, 0, 0};
};
Dims3 as_3d(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  Dims3 d;
  const size_t skip = 3 - sizes.size();
  for (size_t i = 0; i < sizes.size(); ++i) d.size[skip + i] = sizes[i], d.stride[skip + i] = strides[i];
  return d;
}

// C's strides broadcast to the output's [B, M, N] (addmm's self may be a [N]
// row or any shape that broadcasts), or none when it does not broadcast.
std::optional<Dims3> broadcast_c(const loopir::BufferView& c, const Dims3& out) {
  if (c.sizes.size() > 3) return std::nullopt;
  Dims3 d = as_3d(c.sizes, c.strides);
  for (int i = 0; i < 3; ++i) {
    if (d.size[i] == out.size[i]) continue;
    if (d.size[i] != 1) return std::nullopt;
    d.size[i] = out.size[i], d.stride[i] = 0;
  }
  return d;
}

// The bits of `v` in dtype `d`, in the low bytes of a u64 (the fill kernel's parameter).
uint64_t value_bits(double v, DType d) {
  uint64_t bits = 0;
  if (d == DType::Float64) {
    std::memcpy(&bits, &v, sizeof v);
  } else if (d == DType::Float32) {
    float f = float(v);
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    bits = u;
  } else {
    bits = d == DType::Float16 ? Half(float(v)).bits : BFloat16(float(v)).bits;
  }
  return bits;
}

const char* kGemmCSource = R"KILN(
// ---- GEMM extern kernels (cuda_gemm.h): the output filled with C before cuBLAS adds beta * C ----
template <typename T>
__device__ __forceinline__ void kiln_gemm_c_copy(T* out, const T* __restrict__ c, i64 total, i64 rows, i64 cols,
                                                 i64 o0, i64 o1, i64 o2, i64 c0, i64 c1, i64 c2) {
  const i64 step = (i64)gridDim.x * blockDim.x;
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
    const i64 j = i % cols, r = i / cols, m = r % rows, b = r / rows;
    out[b * o0 + m * o1 + j * o2] = c[b * c0 + m * c1 + j * c2];
  }
}
// Only bits move: the value arrives as the dtype's bits in the low bytes.
template <typename T>
__device__ __forceinline__ void kiln_gemm_c_fill(T* out, u64 bits, i64 total, i64 rows, i64 cols, i64 o0, i64 o1,
                                                 i64 o2) {
  const T v = (T)bits;
  const i64 step = (i64)gridDim.x * blockDim.x;
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
    const i64 j = i % cols, r = i / cols, m = r % rows, b = r / rows;
    out[b * o0 + m * o1 + j * o2] = v;
  }
}
)KILN";

// alpha * A @ B into the output; beta and C are the caller's.
GemmCall gemm_call(const loopir::Program& p, const loopir::Kernel& k,
                   const std::function<CUdeviceptr(const std::string&)>& pointer) {
  const loopir::ExternCall& c = *k.call;
  const loopir::Buffer& out = p.buffer(k.output);
  auto operand = [&](const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, int64_t offset,
                     CUdeviceptr ptr) {
    GemmOperand o;
    const size_t r = sizes.size();
    o.ptr = ptr;
    o.offset = offset;
    o.row_stride = strides[r - 2];
    o.col_stride = strides[r - 1];
    o.batch_stride = r == 3 ? strides[0] : 0;
    return o;
  };
  const loopir::BufferView& a = c.tensors[size_t(c.gemm.a)];
  const loopir::BufferView& b = c.tensors[size_t(c.gemm.b)];
  GemmCall g;
  const size_t r = out.sizes.size();
  g.m = out.sizes[r - 2], g.n = out.sizes[r - 1], g.k = a.sizes.back();
  g.batch = r == 3 ? out.sizes[0] : 1;
  g.a = operand(a.sizes, a.strides, a.offset, pointer(a.buffer));
  g.b = operand(b.sizes, b.strides, b.offset, pointer(b.buffer));
  g.c = operand(out.sizes, out.strides, out.offset, pointer(k.output));
  g.dtype = out.dtype;
  g.alpha = c.gemm.alpha;
  return g;
}

const char* storage_type(const std::string& name) {
  return name.ends_with("_b2") ? "unsigned short" : name.ends_with("_b4") ? "unsigned" : "u64";
}

}  // namespace

bool gemm_on_gpu(const loopir::Program& p, const loopir::Kernel& k) {
  const loopir::ExternCall& c = *k.call;
  if (c.kind != loopir::ExternKind::Gemm) return false;
  const DType d = p.buffer(k.output).dtype;
  for (int i : {c.gemm.a, c.gemm.b, c.gemm.c})
    if (i >= 0 && p.buffer(c.tensors[size_t(i)].buffer).dtype != d) return false;
  const loopir::Buffer& out = p.buffer(k.output);
  if (c.gemm.c >= 0 && !broadcast_c(c.tensors[size_t(c.gemm.c)], as_3d(out.sizes, out.strides))) return false;
  return cublas_dtype(d) && cublas_supports(gemm_call(p, k, [](const std::string&) { return CUdeviceptr(0); })).ok();
}

std::string gemm_c_kernel(const loopir::Program& p, const loopir::Kernel& k) {
  const loopir::GemmParams& g = k.call->gemm;
  if (g.c < 0 && !g.c_constant) return "";
  return std::string(g.c >= 0 ? "kiln_gemm_c_copy_b" : "kiln_gemm_c_fill_b") +
         std::to_string(element_size(p.buffer(k.output).dtype));
}

std::string gemm_c_kernels_source(const std::set<std::string>& names) {
  if (names.empty()) return "";
  std::ostringstream os;
  os << kGemmCSource;
  for (const std::string& name : names) {
    const char* t = storage_type(name);
    os << "extern \"C\" __global__ void __launch_bounds__(" << kThreads << ") " << name << "(" << t << "* out, ";
    if (name.starts_with("kiln_gemm_c_copy"))
      os << "const " << t << "* c, i64 total, i64 rows, i64 cols, i64 o0, i64 o1, i64 o2, i64 c0, i64 c1, i64 c2) "
         << "{ kiln_gemm_c_copy(out, c, total, rows, cols, o0, o1, o2, c0, c1, c2); }\n";
    else
      os << "u64 bits, i64 total, i64 rows, i64 cols, i64 o0, i64 o1, i64 o2) "
         << "{ kiln_gemm_c_fill<" << t << ">(out, bits, total, rows, cols, o0, o1, o2); }\n";
  }
  return os.str();
}

Status run_gemm_on_gpu(const loopir::Program& p, const loopir::Kernel& k,
                       const std::function<CUdeviceptr(const std::string&)>& pointer, CUfunction fill_c, bool tf32,
                       const Stream* stream) {
  const loopir::ExternCall& c = *k.call;
  const loopir::Buffer& out = p.buffer(k.output);
  GemmCall g = gemm_call(p, k, pointer);
  g.tf32 = tf32;
  if (c.gemm.c >= 0 || c.gemm.c_constant) {
    if (!fill_c) return Status::error("GEMM with C: the module has no " + gemm_c_kernel(p, k));
    const size_t es = element_size(out.dtype);
    const Dims3 o = as_3d(out.sizes, out.strides);
    CUdeviceptr dst = g.c.ptr + CUdeviceptr(out.offset * int64_t(es));
    int64_t total = o.size[0] * o.size[1] * o.size[2], rows = o.size[1], cols = o.size[2];
    int64_t o0 = o.stride[0], o1 = o.stride[1], o2 = o.stride[2];
    Dims3 cv;
    CUdeviceptr src = 0;
    uint64_t bits = 0;
    std::vector<void*> args = {&dst};
    if (c.gemm.c >= 0) {
      const loopir::BufferView& v = c.tensors[size_t(c.gemm.c)];
      cv = *broadcast_c(v, o);
      src = pointer(v.buffer) + CUdeviceptr(v.offset * int64_t(es));
      args.push_back(&src);
    } else {
      bits = value_bits(*c.gemm.c_constant, out.dtype);
      args.push_back(&bits);
    }
    for (int64_t* x : {&total, &rows, &cols, &o0, &o1, &o2}) args.push_back(x);
    if (c.gemm.c >= 0)
      for (int64_t& x : cv.stride) args.push_back(&x);
    Dim3 grid{unsigned(std::clamp<int64_t>((total + kThreads - 1) / kThreads, 1, kMaxBlocks))};
    if (total > 0)
      if (Status st = launch(fill_c, grid, Dim3{kThreads}, 0, args.data(), stream); !st.ok())
        return Status::error("filling the output with C: " + st.message());
    g.beta = c.gemm.beta;
  }
  return cublas_gemm(g, stream);
}

}  // namespace kiln::codegen::cuda
