#include "compiler/codegen/cuda/cuda_gather.h"

#include <algorithm>
#include <set>

#include "compiler/codegen/cuda/cuda_prelude.h"
#include "compiler/codegen/cuda/extern_args.h"

namespace kiln::codegen::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = int64_t(1) << 16;  // the kernels stride over the rest
constexpr const char* kGather = "aten::gather.default";
constexpr const char* kScatterSrc = "aten::scatter.src";
constexpr const char* kScatterValue = "aten::scatter.value";

constexpr const char* kGatherSource = R"KILN(
// ---- gather and scatter along one dim (codegen/cuda/cuda_gather.h) ----
struct KilnGatherArgs {  // every field 8 bytes, as the host writes it
  i64 rank, dim, total, self_size;
  i64 size[8], isz[8];               // the elements walked; the index's sizes
  i64 xs[8], is[8], ss[8], os[8];    // self, index, src, output strides
  double value;                      // scatter.value
  i64 tag;                           // names the kernel in a fault
};
// An index outside [0, self_size): the first one is kept for the host, which
// fails the run with ATen's message instead of returning a made-up number.
__device__ __forceinline__ void kiln_gather_fault(i64* fault, const KilnGatherArgs& a, i64 index) {
  if (atomicCAS((unsigned long long*)fault, 0ull, 1ull) == 0ull) {
    fault[1] = a.tag;
    fault[2] = index;
    __threadfence();
  }
}
// One thread per output element (the index's shape).
template <typename D>
__device__ __forceinline__ void kiln_gather(const typename D::T* x, const i64* idx, typename D::T* out,
                                            const KilnGatherArgs& a, i64* fault) {
  const i64 step = (i64)gridDim.x * blockDim.x;
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < a.total; i += step) {
    i64 rest = i, xo = 0, io = 0, oo = 0;
    for (int d = (int)a.rank - 1; d >= 0; --d) {
      const i64 p = rest % a.size[d];
      rest /= a.size[d];
      io += p * a.is[d];
      oo += p * a.os[d];
      if (d != a.dim) xo += p * a.xs[d];
    }
    const i64 k = idx[io];
    const bool inside = k >= 0 && k < a.self_size;
    if (!inside) kiln_gather_fault(fault, a, k);
    out[oo] = inside ? x[xo + k * a.xs[a.dim]] : D::put(0);
  }
}
// One thread per element j of self: the src (or value) of the last index
// element along dim that names j[dim], else self[j].
// The threads of position 0 along dim check their whole index column.
template <typename D, bool Value>
__device__ __forceinline__ void kiln_scatter(const typename D::T* x, const i64* idx, const typename D::T* src,
                                             typename D::T* out, const KilnGatherArgs& a, i64* fault) {
  const i64 step = (i64)gridDim.x * blockDim.x;
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < a.total; i += step) {
    i64 rest = i, xo = 0, io = 0, so = 0, oo = 0, at = 0;
    bool inside = true;
    for (int d = (int)a.rank - 1; d >= 0; --d) {
      const i64 p = rest % a.size[d];
      rest /= a.size[d];
      xo += p * a.xs[d];
      oo += p * a.os[d];
      if (d == a.dim) {
        at = p;
      } else {
        inside = inside && p < a.isz[d];
        io += p * a.is[d];
        so += p * a.ss[d];
      }
    }
    typename D::T v = x[xo];
    if (inside && at == 0)
      for (i64 k = 0; k < a.isz[a.dim]; ++k) {
        const i64 j = idx[io + k * a.is[a.dim]];
        if (j < 0 || j >= a.self_size) kiln_gather_fault(fault, a, j);
      }
    if (inside)
      for (i64 k = a.isz[a.dim] - 1; k >= 0; --k)
        if (idx[io + k * a.is[a.dim]] == at) {
          v = Value ? D::put((typename D::A)a.value) : src[so + k * a.ss[a.dim]];
          break;
        }
    out[oo] = v;
  }
}
)KILN";

Status unsupported(const std::string& why) { return Status::error("gather/scatter on the GPU: " + why); }

bool copy_geometry(const std::vector<int64_t>& strides, int64_t* into) {
  if (strides.size() > size_t(kGatherMaxRank)) return false;
  std::copy(strides.begin(), strides.end(), into);
  return true;
}

}  // namespace

bool gather_target_on_gpu(const std::string& target) {
  return target == kGather || target == kScatterSrc || target == kScatterValue;
}

Expected<GatherGpuPlan> plan_gather_on_gpu(const loopir::Program& p, size_t kernel) {
  const loopir::Kernel& k = p.kernels.at(kernel);
  if (k.kind != loopir::KernelKind::Extern || !k.call || !gather_target_on_gpu(k.call->target))
    return unsupported(k.output + " is not a gather or scatter extern kernel");
  const loopir::ExternCall& call = *k.call;
  GatherGpuPlan plan;
  plan.kernel = kernel;
  plan.op = call.target == kGather       ? GatherGpuPlan::Op::Gather
            : call.target == kScatterSrc ? GatherGpuPlan::Op::ScatterSrc
                                         : GatherGpuPlan::Op::ScatterValue;
  const bool gather = plan.op == GatherGpuPlan::Op::Gather;
  // gather(self, dim, index, *, sparse_grad); scatter.src(self, dim, index, src); scatter.value(self, dim, index, value).
  const loopir::BufferView* self = tensor_arg(call, 0, "self");
  const loopir::BufferView* index = tensor_arg(call, 2, "index");
  const Arg* dim = call_arg(call, 1, "dim");
  if (!self || !index || !dim || dim->kind != Arg::Kind::Int) return unsupported("self, dim or index");
  const loopir::BufferView* src = nullptr;
  if (plan.op == GatherGpuPlan::Op::ScatterSrc) {
    src = tensor_arg(call, 3, "src");
    if (!src) return unsupported("src is not a tensor");
  } else if (plan.op == GatherGpuPlan::Op::ScatterValue) {
    const Arg* v = call_arg(call, 3, "value");
    if (!v || (v->kind != Arg::Kind::Float && v->kind != Arg::Kind::Int)) return unsupported("the value");
    plan.value = v->kind == Arg::Kind::Float ? v->f : double(v->i);
  }
  plan.output = output_of(call, 0);
  if (plan.output.empty()) return unsupported("nobody reads the result");
  const loopir::Buffer& out = p.buffer(plan.output);
  plan.dtype = out.dtype;
  if (!library_dtype(plan.dtype)) return unsupported("no kernel for " + std::string(dtype_name(plan.dtype)));
  if (p.buffer(self->buffer).dtype != plan.dtype || (src && p.buffer(src->buffer).dtype != plan.dtype))
    return unsupported("self, src and the output differ in dtype");
  if (p.buffer(index->buffer).dtype != DType::Int64) return unsupported("the index is not int64");
  const int64_t rank = int64_t(self->sizes.size());
  if (rank == 0 || rank > kGatherMaxRank) return unsupported("rank " + std::to_string(rank));
  if (int64_t(index->sizes.size()) != rank || (src && int64_t(src->sizes.size()) != rank))
    return unsupported("self, index and src differ in rank");
  plan.rank = rank;
  plan.dim = dim->i < 0 ? dim->i + rank : dim->i;
  if (plan.dim < 0 || plan.dim >= rank) return unsupported("dim " + std::to_string(dim->i));
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t n = index->sizes[size_t(d)];
    if (d != plan.dim && n > self->sizes[size_t(d)]) return unsupported("the index is larger than self");
    if (src && n > src->sizes[size_t(d)]) return unsupported("the index is larger than src");
  }
  const std::vector<int64_t>& walked = gather ? index->sizes : self->sizes;
  if (out.sizes != walked) return unsupported("the output's sizes");
  std::copy(walked.begin(), walked.end(), plan.sizes);
  std::copy(index->sizes.begin(), index->sizes.end(), plan.index_sizes);
  plan.self_size = self->sizes[size_t(plan.dim)];
  copy_geometry(self->strides, plan.self_stride);
  copy_geometry(index->strides, plan.index_stride);
  copy_geometry(out.strides, plan.out_stride);
  if (src) copy_geometry(src->strides, plan.src_stride), plan.src = src->buffer, plan.src_offset = src->offset;
  plan.self = self->buffer, plan.self_offset = self->offset;
  plan.index = index->buffer, plan.index_offset = index->offset;
  plan.out_offset = out.offset;
  const char* kind = gather ? "gather_" : plan.op == GatherGpuPlan::Op::ScatterSrc ? "scatter_src_" : "scatter_value_";
  plan.function = std::string("kiln_") + kind + std::string(dtype_abbrev(plan.dtype));
  return plan;
}

std::string gather_kernels_source(const std::vector<GatherGpuPlan>& plans) {
  std::string instances;
  std::set<std::string> done;
  for (const GatherGpuPlan& p : plans) {
    if (!done.insert(p.function).second) continue;
    const std::string d = dtype_traits(p.dtype);
    const std::string head = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kThreads) + ") " +
                             p.function + "(const " + d + "::T* x, const i64* idx, ";
    if (p.op == GatherGpuPlan::Op::Gather)
      instances += head + d + "::T* out, KilnGatherArgs a, i64* fault) { kiln_gather<" + d + ">(x, idx, out, a, fault); }\n";
    else
      instances += head + "const " + d + "::T* src, " + d + "::T* out, KilnGatherArgs a, i64* fault) { kiln_scatter<" +
                   d + ", " + (p.op == GatherGpuPlan::Op::ScatterValue ? "true" : "false") +
                   ">(x, idx, src, out, a, fault); }\n";
  }
  return instances.empty() ? "" : kGatherSource + instances;
}

Status run_gather_on_gpu(const GatherGpuPlan& p, const GatherPointers& ptr, CUfunction fn, const Stream* stream) {
  if (!ptr.fault) return Status::error(p.function + ": no fault word to report an out-of-range index in");
  int64_t total = 1;
  for (int64_t d = 0; d < p.rank; ++d) total *= p.sizes[d];
  if (total == 0) return {};
  struct Args {  // KilnGatherArgs, field for field
    int64_t rank, dim, total, self_size;
    int64_t size[kGatherMaxRank], isz[kGatherMaxRank];
    int64_t xs[kGatherMaxRank], is[kGatherMaxRank], ss[kGatherMaxRank], os[kGatherMaxRank];
    double value;
    int64_t tag;
  } a{};
  a.rank = p.rank, a.dim = p.dim, a.total = total, a.self_size = p.self_size, a.value = p.value;
  a.tag = int64_t(p.kernel);
  std::copy(p.sizes, p.sizes + kGatherMaxRank, a.size);
  std::copy(p.index_sizes, p.index_sizes + kGatherMaxRank, a.isz);
  std::copy(p.self_stride, p.self_stride + kGatherMaxRank, a.xs);
  std::copy(p.index_stride, p.index_stride + kGatherMaxRank, a.is);
  std::copy(p.src_stride, p.src_stride + kGatherMaxRank, a.ss);
  std::copy(p.out_stride, p.out_stride + kGatherMaxRank, a.os);
  const uint64_t es = element_size(p.dtype);
  CUdeviceptr self = ptr.self + CUdeviceptr(p.self_offset) * es, out = ptr.output + CUdeviceptr(p.out_offset) * es;
  CUdeviceptr index = ptr.index + CUdeviceptr(p.index_offset) * 8;
  CUdeviceptr src = p.src.empty() ? 0 : ptr.src + CUdeviceptr(p.src_offset) * es;
  CUdeviceptr fault = ptr.fault;
  void* gather[] = {&self, &index, &out, &a, &fault};
  void* scatter[] = {&self, &index, &src, &out, &a, &fault};
  Dim3 grid{unsigned(std::clamp<int64_t>((total + kThreads - 1) / kThreads, 1, kMaxBlocks))};
  if (Status st = launch(fn, grid, Dim3{kThreads}, 0, p.op == GatherGpuPlan::Op::Gather ? gather : scatter, stream);
      !st.ok())
    return Status::error(p.function + ": " + st.message());
  return {};
}

std::string gather_fault_message(const loopir::Program& p, const std::vector<GatherGpuPlan>& plans,
                                 const int64_t fault[kGatherFaultWords]) {
  for (const GatherGpuPlan& plan : plans)
    if (int64_t(plan.kernel) == fault[1]) {
      const loopir::Kernel& k = p.kernels[plan.kernel];
      return k.call->target + " (" + k.output + "): index " + std::to_string(fault[2]) +
             " is out of bounds for dimension " + std::to_string(plan.dim) + " with size " +
             std::to_string(plan.self_size);
    }
  return "a gather or scatter kernel reported index " + std::to_string(fault[2]) + " out of bounds";
}

}  // namespace kiln::codegen::cuda
