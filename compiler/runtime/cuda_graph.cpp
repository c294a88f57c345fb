#include "compiler/runtime/cuda_graph.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "compiler/codegen/cpu/cpu_codegen.h"
#include "compiler/codegen/cuda/cuda_api.h"
#include "compiler/codegen/cuda/cublas.h"
#include "compiler/codegen/cuda/cuda_conv.h"
#include "compiler/codegen/cuda/cuda_emit.h"
#include "compiler/codegen/cuda/cuda_gemm.h"
#include "compiler/codegen/cuda/cuda_gemm_lt.h"
#include "compiler/codegen/cuda/cuda_split_reduce.h"
#include "compiler/loopir/extern_call.h"
#include "compiler/loopir/lower.h"
#include "compiler/loopir/print_ir.h"
#include "compiler/runtime/compile_cache.h"
#include "compiler/runtime/program_binding.h"
#include "compiler/sched/schedule.h"
#include "core/util/md5.h"

namespace kiln::runtime {

using namespace kiln::codegen::cuda;
using loopir::Buffer;
using loopir::BufferRole;

struct CudaCompiledGraph::Impl {
  sched::ScheduledProgram scheduled;
  CudaSource source;
  std::vector<CodegenStage> stages;
  CudaCompileStats stats;
  bool compile_only = false;
  CudaModule module;
  std::vector<CUfunction> functions;  // per source.kernels
  // Per program kernel: which of the source's extern plans runs it on the GPU
  // (the kind's list and the index in it), or none.
  struct GpuExtern {
    enum class Kind { None, Conv, Attention, Pool, Gather, ConvBackward, AttentionForward, AttentionBackward } kind = Kind::None;
    size_t index = 0;
  };
  std::vector<GpuExtern> gpu_extern;
  std::vector<ConvFunctions> conv_functions;  // per source.convs
  std::vector<CUfunction> gemm_fill_c;        // per program kernel: a GEMM's kernel filling its output with C
  std::vector<CUfunction> attention_functions;  // per source.attentions
  std::vector<CUfunction> pool_functions;       // per source.pools
  std::vector<CUfunction> gather_functions;     // per source.gathers
  std::vector<ConvBackwardFunctions> conv_backward_functions;  // per source.conv_backwards
  std::vector<AttentionForwardFunctions> attention_forward_functions;     // per source.attention_forwards
  std::vector<AttentionBackwardFunctions> attention_backward_functions;   // per source.attention_backwards

  template <class Plan>
  void mark_gpu_externs(const std::vector<Plan>& plans, GpuExtern::Kind kind) {
    for (size_t i = 0; i < plans.size(); ++i) gpu_extern[plans[i].kernel] = {kind, i};
  }
  ProgramBinding binding;  // storage_of: the buffer whose device memory each buffer uses
  bool conv_tf32 = false, matmul_tf32 = false;  // CudaCompileOptions
};

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

size_t span_bytes(const Buffer& b) { return size_t(loopir::storage_span(b)) * element_size(b.dtype); }

// The generated source says everything the cubin depends on but the target.
// NVRTC's version is left out on purpose: naming it means loading NVRTC
// (tens of milliseconds), which a hit must not pay, and any NVRTC's cubin for
// an sm runs on that sm; a new Kiln build (in the key) starts afresh anyway.
CacheKey cubin_cache_key(const std::string& source, int sm) {
  CacheKey key;
  key.layout = md5_hex(source);
  key.options = "cuda-cubin";
  key.target = "sm_" + std::to_string(sm);
  return key;
}

// An extern kernel whose outputs are all empty writes nothing (a dead
// `full([0])` a decomposition left): nothing to run, on either side.
bool writes_nothing(const loopir::Program& p, const loopir::Kernel& k) {
  for (const std::string& o : loopir::extern_outputs(k))
    if (span_bytes(p.buffer(o)) != 0) return false;
  return true;
}

// Convolutions as the emitter planned them (cuda_conv.h), GEMMs as cuBLAS takes them (cuda_gemm.h).
bool extern_on_gpu(const CudaCompiledGraph::Impl& impl, size_t kernel) {
  const loopir::Program& p = impl.scheduled.program;
  const loopir::Kernel& k = p.kernels[kernel];
  return impl.gpu_extern[kernel].kind != CudaCompiledGraph::Impl::GpuExtern::Kind::None || gemm_on_gpu(p, k) ||
         writes_nothing(p, k);
}

// A GEMM marked by the scheduler (GemmLtEpilogue) with its epilogue run by
// cuBLASLt: true when queued, and the next group (the epilogue kernel) is
// then skipped; false leaves the plain GEMM and that kernel to run.
bool lt_epilogue_ran(const CudaCompiledGraph::Impl& impl, size_t kernel, const std::vector<CUdeviceptr>& pointer,
                     const Stream* stream) {
  const loopir::Program& p = impl.scheduled.program;
  const loopir::Kernel& k = p.kernels[kernel];
  if (!gemm_has_lt_epilogue(k) || !gemm_on_gpu(p, k)) return false;
  std::string why;
  auto at = [&](const std::string& b) { return pointer[p.buffer_index(b)]; };
  if (run_gemm_lt_on_gpu(p, k, at, impl.matmul_tf32, stream, &why)) return true;
  static bool said = false;  // once: a benchmark runs the graph many times
  if (const char* v = std::getenv("KILN_CUBLASLT_VERBOSE"); v && std::string(v) == "1" && !std::exchange(said, true))
    std::fprintf(stderr, "kiln-cuda: %s runs its own epilogue kernel: %s\n", k.call->gemm.lt->output.c_str(), why.c_str());
  return false;
}

}  // namespace

CudaCompiledGraph::CudaCompiledGraph(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaCompiledGraph::~CudaCompiledGraph() = default;
const std::vector<CodegenStage>& CudaCompiledGraph::stages() const { return impl_->stages; }
const CudaCompileStats& CudaCompiledGraph::stats() const { return impl_->stats; }
const std::string& CudaCompiledGraph::source_text() const { return impl_->source.text; }

Expected<std::shared_ptr<CudaCompiledGraph>> CudaCompiledGraph::compile(const Graph& source,
                                                                        const CudaCompileOptions& options,
                                                                        const std::map<std::string, Tensor>& constants) {
  auto t_start = Clock::now();
  auto impl = std::make_unique<Impl>();
  impl->compile_only = options.compile_only;
  Expected<Graph> bound = bind_constants(source, constants, impl->binding.bound_inputs);
  if (!bound) return bound.status();
  InjectedBug bug = InjectedBug::None;
  if (options.inject_bug != "none") {
    Expected<InjectedBug> b = options.inject_bug.empty() ? codegen::cpu::injected_bug_from_env()
                                                         : codegen::cpu::parse_injected_bug(options.inject_bug);
    if (!b) return b.status();
    bug = *b;
  }
  int sm = options.sm;
  if (!options.compile_only && !options.emit_only) {
    if (Status st = cuda_init(); !st.ok()) return st;
    Expected<DeviceInfo> info = cuda_device_info();
    if (!info) return info.status();
    sm = info->sm_major * 10 + info->sm_minor;
  }
  CudaCompileStats& st = impl->stats;
  loopir::Program program;
  try {
    auto t0 = Clock::now();
    program = loopir::lower_to_loops(*bound);
    st.lower_ms = ms_since(t0);
    t0 = Clock::now();
    // The flash kernel replaces bmm, softmax, bmm; a constant mask's value tells a causal one.
    sched::ScheduleOptions so;
    so.fuse_attention = true;
    std::map<std::string, const Tensor*> constant_inputs;
    for (size_t i = 0; i < program.inputs.size() && i < impl->binding.bound_inputs.size(); ++i)
      if (impl->binding.bound_inputs[i].defined()) constant_inputs[program.inputs[i]] = &impl->binding.bound_inputs[i];
    so.constant_value = [&constant_inputs](const std::string& b) -> const Tensor* {
      auto it = constant_inputs.find(b);
      return it == constant_inputs.end() ? nullptr : it->second;
    };
    impl->scheduled = sched::schedule(loopir::Program(program), so);
    st.schedule_ms = ms_since(t0);
    t0 = Clock::now();
    LaunchChoice launch;
    launch.row_elements_per_thread = options.row_elements_per_thread;
    launch.split_reductions = options.split_reductions;
    const char* env_conv = std::getenv("KILN_CONV");
    const std::string conv = !options.conv_algorithm.empty() ? options.conv_algorithm
                             : env_conv && *env_conv         ? env_conv
                                                             : "im2col";
    Expected<ConvAlgorithm> algorithm = parse_conv_algorithm(conv);
    if (!algorithm) return algorithm.status();
    launch.conv.algorithm = *algorithm;
    launch.conv.tf32 = options.conv_tf32;
    impl->source = emit_cuda(impl->scheduled, plan_for_cuda(impl->scheduled), bug, launch);
    st.emit_ms = ms_since(t0);
  } catch (const Error& e) {
    return Status::error(e.what());
  }
  if (options.keep_text) {
    impl->stages.push_back({"ir_pre_fusion", loopir::print_loop_ir(program), st.lower_ms});
    impl->stages.push_back({"ir_post_fusion", sched::print_scheduled(impl->scheduled), st.schedule_ms});
    impl->stages.push_back({"cuda_source", impl->source.text, st.emit_ms});
  }
  const loopir::Program& p = impl->scheduled.program;
  using Kind = Impl::GpuExtern::Kind;
  impl->gpu_extern.assign(p.kernels.size(), {});
  impl->mark_gpu_externs(impl->source.convs, Kind::Conv);
  impl->mark_gpu_externs(impl->source.attentions, Kind::Attention);
  impl->mark_gpu_externs(impl->source.pools, Kind::Pool);
  impl->mark_gpu_externs(impl->source.gathers, Kind::Gather);
  impl->mark_gpu_externs(impl->source.conv_backwards, Kind::ConvBackward);
  impl->mark_gpu_externs(impl->source.attention_forwards, Kind::AttentionForward);
  impl->mark_gpu_externs(impl->source.attention_backwards, Kind::AttentionBackward);
  for (const sched::FusedGroup& g : impl->scheduled.groups)
    st.extern_groups += p.kernels[g.kernels.front()].kind == loopir::KernelKind::Extern;
  for (size_t k = 0; k < p.kernels.size(); ++k)
    st.host_externs += p.kernels[k].kind == loopir::KernelKind::Extern && !extern_on_gpu(*impl, k);
  st.kernels = impl->source.kernels.size();
  if (options.emit_only) impl->compile_only = true;
  impl->conv_tf32 = options.conv_tf32;
  impl->matmul_tf32 = options.matmul_tf32;
  // Sized whether or not there is a module: a graph of plain GEMMs has none, and reads null here.
  impl->gemm_fill_c.assign(p.kernels.size(), nullptr);
  const bool has_module = !impl->source.kernels.empty() || !impl->source.library_kernels.empty();
  if (has_module && !options.emit_only) {
    // The stages want the PTX, which the cache does not keep: keep_text compiles.
    CompileCache* cache = options.use_cache && !options.keep_text && !options.compile_only ? default_compile_cache() : nullptr;
    CacheKey key = cubin_cache_key(impl->source.text, sm);
    std::string image;
    if (cache)
      if (std::optional<std::string> hit = cache->lookup(key)) image = std::move(*hit), st.cache_hit = true;
    if (image.empty()) {
      Expected<NvrtcOutput> out = nvrtc_compile(impl->source.text, "kiln_graph.cu", sm, true);
      if (!out) return out.status();
      st.nvrtc_ms = out->ms;
      st.ptx_bytes = out->ptx.size();
      st.cubin_bytes = out->cubin.size();
      if (options.keep_text) impl->stages.push_back({"ptx", out->ptx, out->ms});
      image = out->cubin.empty() ? out->ptx : out->cubin;
      if (cache && !out->cubin.empty())
        (void)cache->store(key, out->cubin, "cubin sm_" + std::to_string(sm) + ", " + std::to_string(st.kernels) + " kernel(s)");
    } else {
      st.cubin_bytes = image.size();
    }
    if (!options.compile_only) {
      auto t0 = Clock::now();
      Expected<CudaModule> m = CudaModule::load(image);
      if (!m) return m.status();
      impl->module = std::move(*m);
      for (const CudaKernel& k : impl->source.kernels) {
        Expected<CUfunction> f = impl->module.function(k.name);
        if (!f) return f.status();
        impl->functions.push_back(*f);
      }
      std::map<std::string, CUfunction> library;
      for (const std::string& name : impl->source.library_kernels) {
        Expected<CUfunction> f = impl->module.function(name);
        if (!f) return f.status();
        library[name] = *f;
      }
      auto helper = [&](const std::string& name) { return name.empty() ? nullptr : library.at(name); };
      for (const ConvGpuPlan& c : impl->source.convs)
        impl->conv_functions.push_back({helper(c.im2col_kernel), helper(c.bias_kernel), helper(c.scatter_kernel),
                                        helper(c.implicit.function), helper(c.implicit.reduce_function)});
      for (const AttentionGpuPlan& a : impl->source.attentions) impl->attention_functions.push_back(helper(a.function));
      for (const PoolGpuPlan& pool : impl->source.pools) impl->pool_functions.push_back(helper(pool.function));
      for (const GatherGpuPlan& g : impl->source.gathers) impl->gather_functions.push_back(helper(g.function));
      for (const ConvBackwardGpuPlan& b : impl->source.conv_backwards)
        impl->conv_backward_functions.push_back(
            {helper(b.geometry.im2col_kernel), helper(b.gather_kernel), helper(b.col2im_kernel), helper(b.bias_kernel)});
      for (const AttentionForwardGpuPlan& f : impl->source.attention_forwards)
        impl->attention_forward_functions.push_back({helper(f.flash.function), helper(f.extras_function)});
      for (const AttentionBackwardExternPlan& b : impl->source.attention_backwards)
        impl->attention_backward_functions.push_back(
            {helper(b.grads.delta_function), helper(b.grads.dkdv_function), helper(b.grads.dq_function)});
      for (size_t k = 0; k < p.kernels.size(); ++k)
        if (p.kernels[k].kind == loopir::KernelKind::Extern && gemm_on_gpu(p, p.kernels[k]))
          impl->gemm_fill_c[k] = helper(gemm_c_kernel(p, p.kernels[k]));
      st.load_ms = ms_since(t0);
    }
  }
  impl->binding.index(impl->scheduled);
  impl->binding.note_none_outputs(*bound);
  // The CPU runtime copies written inputs back after a run; the GPU one does not yet.
  if (!impl->binding.write_slots.empty())
    return Status::error("the graph writes into its inputs (copy_ into " +
                         std::to_string(impl->binding.write_slots.size()) +
                         " graph inputs), which the CUDA backend does not support yet");
  st.total_ms = ms_since(t_start);
  return std::shared_ptr<CudaCompiledGraph>(new CudaCompiledGraph(std::move(impl)));
}

// ---- CudaExecution ------------------------------------------------------------

struct CudaExecution::State {
  std::shared_ptr<const CudaCompiledGraph> graph;
  std::vector<DeviceBuffer> storage;         // per owning buffer
  std::vector<CUdeviceptr> pointer;          // per buffer: where its storage is (an owned buffer or a bound input)
  std::vector<Tensor> host_input;            // per buffer: the host tensor given for an input (outputs returns it)
  std::vector<size_t> given_input_index;     // caller's input k -> index into Program::inputs
  DeviceBuffer conv_workspace;               // im2col's columns, shared by every convolution (they run in turn)
  DeviceBuffer gather_fault;                 // gather/scatter's out-of-range report (cuda_gather.h), when there are any
  DeviceBuffer attention_workspace;          // the attention backwards' row sums D_i, shared (they run in turn)
  std::string host_externs;                  // the extern kernels that run on the host, for messages
  CudaGraph graph_replay;                    // reduce-overhead: the captured launches
  std::vector<SplitLaunch> split;            // per source kernel: its parts (blocks 0: not split)
  std::vector<DeviceBuffer> split_workspace;  // per source kernel: parts and counters, zeroed once

  const CudaCompiledGraph::Impl& impl() const { return graph->impl(); }
  const loopir::Program& program() const { return impl().scheduled.program; }
  Status upload_input(size_t input_index, const Tensor& host);
  Expected<Tensor> download(size_t buffer) const;
  Status run_extern_on_host(size_t group);
  Status run_extern_on_gpu(size_t kernel, const Stream* stream) const;
  Status plan_split_reductions();
};

// The parts follow the device's SM count, fixed for the execution, so a
// result is the same on every launch.
Status CudaExecution::State::plan_split_reductions() {
  const std::vector<CudaKernel>& kernels = impl().source.kernels;
  split.assign(kernels.size(), SplitLaunch{});
  split_workspace.resize(kernels.size());
  int multiprocessors = 0;
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (kernels[i].split_row <= 0 || kernels[i].outer_numel <= 0) continue;
    if (multiprocessors == 0) {
      Expected<DeviceInfo> info = cuda_device_info();
      if (!info) return info.status();
      multiprocessors = info->multiprocessors;
    }
    split[i] = split_launch(kernels[i], multiprocessors);
    Expected<DeviceBuffer> b = DeviceBuffer::alloc(split[i].workspace_bytes);
    if (!b) return b.status();
    if (Status st = b->zero(); !st.ok()) return st;  // the counters start at 0
    split_workspace[i] = std::move(*b);
  }
  return {};
}

Status CudaExecution::State::run_extern_on_gpu(size_t kernel, const Stream* stream) const {
  const CudaCompiledGraph::Impl& im = impl();
  const loopir::Program& p = program();
  const loopir::Kernel& k = p.kernels[kernel];
  auto at = [&](const std::string& buffer) { return pointer[p.buffer_index(buffer)]; };
  const size_t i = im.gpu_extern[kernel].index;
  switch (im.gpu_extern[kernel].kind) {
    case CudaCompiledGraph::Impl::GpuExtern::Kind::Conv: {
      const ConvGpuPlan& plan = im.source.convs[i];
      ConvPointers ptr{at(plan.input), at(plan.weight), plan.bias.empty() ? 0 : at(plan.bias), at(plan.output),
                       conv_workspace.ptr()};
      return run_conv_on_gpu(plan, ptr, im.conv_functions[i], im.conv_tf32, stream);
    }
    case CudaCompiledGraph::Impl::GpuExtern::Kind::Attention: {
      const AttentionGpuPlan& plan = im.source.attentions[i];
      AttentionPointers ptr{at(plan.q), at(plan.k), at(plan.v), plan.mask.empty() ? 0 : at(plan.mask), at(plan.output)};
      return run_attention_on_gpu(plan, ptr, im.attention_functions[i], stream);
    }
    case CudaCompiledGraph::Impl::GpuExtern::Kind::Pool: {
      const PoolGpuPlan& plan = im.source.pools[i];
      PoolPointers ptr{at(plan.input), plan.indices.empty() ? 0 : at(plan.indices), at(plan.output)};
      return run_pool_on_gpu(plan, ptr, im.pool_functions[i], stream);
    }
    case CudaCompiledGraph::Impl::GpuExtern::Kind::Gather: {
      const GatherGpuPlan& plan = im.source.gathers[i];
      GatherPointers ptr{at(plan.self), at(plan.index), plan.src.empty() ? 0 : at(plan.src), at(plan.output),
                         gather_fault.ptr()};
      return run_gather_on_gpu(plan, ptr, im.gather_functions[i], stream);
    }
    case CudaCompiledGraph::Impl::GpuExtern::Kind::ConvBackward: {
      const ConvBackwardGpuPlan& plan = im.source.conv_backwards[i];
      auto maybe = [&](const std::string& b) { return b.empty() ? CUdeviceptr(0) : at(b); };
      ConvBackwardPointers ptr{at(plan.grad_output),     at(plan.geometry.input),  at(plan.geometry.weight),
                               maybe(plan.grad_input),   maybe(plan.grad_weight), maybe(plan.grad_bias),
                               conv_workspace.ptr()};
      return run_conv_backward_on_gpu(plan, ptr, im.conv_backward_functions[i], im.conv_tf32, stream);
    }
    case CudaCompiledGraph::Impl::GpuExtern::Kind::AttentionForward: {
      const AttentionForwardGpuPlan& plan = im.source.attention_forwards[i];
      const AttentionGpuPlan& f = plan.flash;
      auto maybe = [&](const std::string& b) { return b.empty() ? CUdeviceptr(0) : at(b); };
      AttentionPointers ptr{at(f.q), at(f.k), at(f.v), maybe(f.mask), at(f.output)};
      return run_attention_forward_on_gpu(plan, ptr, maybe(plan.lse), maybe(plan.seed), maybe(plan.offset),
                                          im.attention_forward_functions[i], stream);
    }
    case CudaCompiledGraph::Impl::GpuExtern::Kind::AttentionBackward: {
      const AttentionBackwardExternPlan& plan = im.source.attention_backwards[i];
      auto maybe = [&](const std::string& b) { return b.empty() ? CUdeviceptr(0) : at(b); };
      AttentionBackwardPointers ptr;
      ptr.q = at(plan.q), ptr.k = at(plan.k), ptr.v = at(plan.v), ptr.out = at(plan.out), ptr.dout = at(plan.dout);
      ptr.lse = at(plan.lse), ptr.mask = maybe(plan.mask);
      ptr.dq = maybe(plan.dq), ptr.dk = maybe(plan.dk), ptr.dv = maybe(plan.dv);
      ptr.workspace = attention_workspace.ptr();
      return run_attention_backward_on_gpu(plan.grads, ptr, im.attention_backward_functions[i], stream);
    }
    case CudaCompiledGraph::Impl::GpuExtern::Kind::None:
      break;
  }
  if (gemm_on_gpu(p, k)) return run_gemm_on_gpu(p, k, at, im.gemm_fill_c[kernel], im.matmul_tf32, stream);
  return {};  // writes_nothing
}

Status CudaExecution::State::upload_input(size_t input_index, const Tensor& given) {
  const loopir::Program& p = program();
  const ProgramBinding& bind = impl().binding;
  size_t at = bind.input_slots[input_index];
  Expected<Tensor> laid_out = input_in_buffer_layout(input_index, p.buffers[at], given);
  if (!laid_out) return laid_out.status();
  host_input[at] = given;
  size_t n = span_bytes(p.buffers[at]);
  if (n == 0) return {};
  if (Status st = cuda_make_current(); !st.ok()) return st;
  DeviceBuffer& dst = storage[bind.storage_of[at]];
  if (pointer[at] != dst.ptr()) return Status::error("input " + std::to_string(input_index) + " is bound to other memory");
  return dst.upload(storage_base(*laid_out), n);
}

// Straight into a host tensor's storage: the buffer's span is a prefix of its device memory.
Expected<Tensor> CudaExecution::State::download(size_t i) const {
  const loopir::Buffer& b = program().buffers[i];
  Tensor host = buffer_tensor(b);
  size_t n = span_bytes(b);
  if (n == 0) return host;
  if (Status st = cuda_make_current(); !st.ok()) return st;
  // Bound inputs are not DeviceBuffers: copy through a temporary one.
  const DeviceBuffer& own = storage[impl().binding.storage_of[i]];
  if (pointer[i] == own.ptr()) {
    if (Status st = own.download(storage_base(host), n); !st.ok()) return st;
    return host;
  }
  Expected<DeviceBuffer> tmp = DeviceBuffer::alloc(n);
  if (!tmp) return tmp.status();
  if (Status st = copy_device(tmp->ptr(), pointer[i], n); !st.ok()) return st;
  if (Status st = tmp->download(storage_base(host), n); !st.ok()) return st;
  return host;
}

// Library calls with no GPU version run on the host kernels: their buffers make the round trip.
Status CudaExecution::State::run_extern_on_host(size_t group) {
  const loopir::Program& p = program();
  const sched::ScheduledProgram& s = impl().scheduled;
  for (size_t k : s.groups[group].kernels) {
    const loopir::Kernel& K = p.kernels[k];
    std::map<std::string, Tensor> host;
    std::vector<std::string> names = loopir::extern_inputs(K);
    for (const std::string& o : loopir::extern_outputs(K)) names.push_back(o);
    for (const std::string& name : names) {
      if (host.count(name)) continue;
      Expected<Tensor> t = download(p.buffer_index(name));
      if (!t) return t.status();
      host[name] = *t;
    }
    try {
      loopir::run_extern(p, K, [&](const std::string& name) { return host.at(name); });
    } catch (const Error& e) {
      return Status::error(std::string("extern kernel ") + s.groups[group].name + ": " + e.what());
    }
    for (const std::string& o : loopir::extern_outputs(K)) {
      size_t i = p.buffer_index(o);
      size_t n = span_bytes(p.buffers[i]);
      if (n == 0) continue;
      DeviceBuffer& own = storage[impl().binding.storage_of[i]];
      if (pointer[i] != own.ptr()) return Status::error("extern kernel writes bound input " + o);
      if (Status st = own.upload(storage_base(host[o]), n); !st.ok()) return st;
    }
  }
  return {};
}

CudaExecution::CudaExecution(std::unique_ptr<State> s) : s_(std::move(s)) {}
CudaExecution::~CudaExecution() = default;

Expected<std::unique_ptr<CudaExecution>> CudaExecution::create(std::shared_ptr<const CudaCompiledGraph> graph) {
  const CudaCompiledGraph::Impl& impl = graph->impl();
  if (impl.compile_only) return Status::error("kiln-cuda: this graph was compiled with --compile-only and cannot run");
  if (Status st = cuda_make_current(); !st.ok()) return st;
  auto s = std::make_unique<State>();
  s->graph = std::move(graph);
  const loopir::Program& p = impl.scheduled.program;
  const ProgramBinding& bind = impl.binding;
  // One allocation per owning buffer, large enough for every buffer sharing it.
  std::vector<size_t> bytes(p.buffers.size(), 0);
  for (size_t i = 0; i < p.buffers.size(); ++i)
    bytes[bind.storage_of[i]] = std::max(bytes[bind.storage_of[i]], span_bytes(p.buffers[i]));
  s->storage.resize(p.buffers.size());
  s->pointer.assign(p.buffers.size(), 0);
  s->host_input.resize(p.buffers.size());
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    if (bind.storage_of[i] != i) continue;
    Expected<DeviceBuffer> b = DeviceBuffer::alloc(std::max<size_t>(bytes[i], 16));
    if (!b) return b.status();
    s->storage[i] = std::move(*b);
  }
  for (size_t i = 0; i < p.buffers.size(); ++i) s->pointer[i] = s->storage[bind.storage_of[i]].ptr();
  for (size_t k = 0; k < bind.bound_inputs.size(); ++k) {
    if (!bind.bound_inputs[k].defined()) {
      s->given_input_index.push_back(k);
      continue;
    }
    if (Status st = s->upload_input(k, bind.bound_inputs[k]); !st.ok()) return st;
  }
  for (const sched::FusedGroup& g : impl.scheduled.groups)
    for (size_t k : g.kernels)
      if (p.kernels[k].kind == loopir::KernelKind::Extern && !extern_on_gpu(impl, k))
        s->host_externs +=
            (s->host_externs.empty() ? "" : ", ") + p.kernels[k].output + " (" + p.kernels[k].call->target + ")";
  // Allocated once, so that launch() allocates nothing and stays capturable.
  if (Status st = s->plan_split_reductions(); !st.ok()) return st;
  size_t workspace = 0;
  for (const ConvGpuPlan& c : impl.source.convs) workspace = std::max(workspace, c.workspace_bytes());
  for (const ConvBackwardGpuPlan& b : impl.source.conv_backwards) workspace = std::max(workspace, b.workspace_bytes());
  if (workspace > 0) {
    Expected<DeviceBuffer> b = DeviceBuffer::alloc(workspace);
    if (!b) return b.status();
    s->conv_workspace = std::move(*b);
  }
  size_t attention_workspace = 0;
  for (const AttentionBackwardExternPlan& b : impl.source.attention_backwards)
    attention_workspace = std::max(attention_workspace, b.grads.workspace_bytes());
  if (attention_workspace > 0) {
    Expected<DeviceBuffer> b = DeviceBuffer::alloc(attention_workspace);
    if (!b) return b.status();
    s->attention_workspace = std::move(*b);
  }
  if (!impl.source.gathers.empty()) {
    Expected<DeviceBuffer> b = DeviceBuffer::alloc(sizeof(int64_t) * kGatherFaultWords);
    if (!b) return b.status();
    if (Status st = b->zero(); !st.ok()) return st;
    s->gather_fault = std::move(*b);
  }
  return std::unique_ptr<CudaExecution>(new CudaExecution(std::move(s)));
}

size_t CudaExecution::input_count() const { return s_->given_input_index.size(); }

Status CudaExecution::set_input(size_t k, const Tensor& host) {
  if (k >= input_count()) return Status::error("input " + std::to_string(k) + " of " + std::to_string(input_count()));
  return s_->upload_input(s_->given_input_index[k], host);
}

size_t CudaExecution::input_bytes(size_t k) const {
  return span_bytes(s_->program().buffers[s_->impl().binding.input_slots[s_->given_input_index.at(k)]]);
}

CUdeviceptr CudaExecution::input_pointer(size_t k) const {
  return s_->pointer[s_->impl().binding.input_slots[s_->given_input_index.at(k)]];
}

Status CudaExecution::bind_input(size_t k, CUdeviceptr ptr) {
  if (k >= input_count()) return Status::error("input " + std::to_string(k) + " of " + std::to_string(input_count()));
  if (s_->graph_replay.ready())
    return Status::error("input " + std::to_string(k) + " cannot be rebound: a CUDA graph captured the old pointer");
  const ProgramBinding& bind = s_->impl().binding;
  size_t at = bind.input_slots[s_->given_input_index[k]];
  // Buffers sharing the input's storage (views of it) move with it.
  for (size_t i = 0; i < s_->pointer.size(); ++i)
    if (bind.storage_of[i] == bind.storage_of[at]) {
      if (i != at && s_->program().buffers[i].role != BufferRole::Input)
        return Status::error("input " + std::to_string(k) + " shares its storage with computed buffer " +
                             s_->program().buffers[i].name + "; it cannot be rebound");
      s_->pointer[i] = ptr;
    }
  return {};
}

bool CudaExecution::capturable() const { return s_->host_externs.empty(); }

Status CudaExecution::replay(Stream& stream) {
  if (!capturable())
    return Status::error("reduce-overhead: the graph has extern kernels that run on the host (" + s_->host_externs +
                         "); it cannot be captured");
  if (!s_->graph_replay.ready()) {
    // One run outside the capture first, as PyTorch's CUDA graph trees warm
    // up: libraries set themselves up on first use (cublasCreate allocates and
    // synchronizes), which a stream capture forbids. Its results are the call's.
    if (Status st = launch(&stream); !st.ok()) return st;
    if (Status st = stream.synchronize(); !st.ok()) return st;
    if (Status st = s_->graph_replay.capture_begin(stream); !st.ok()) return st;
    Status launched = launch(&stream);
    // End the capture even when a launch failed, so the stream is usable again.
    Status ended = s_->graph_replay.capture_end(stream);
    if (!launched.ok()) return launched;
    if (!ended.ok()) return ended;
    return {};  // the warm-up run above computed this call
  }
  return s_->graph_replay.replay(stream);
}

Status CudaExecution::launch(const Stream* stream) { return launch_groups(stream, {}); }

Expected<std::vector<CudaExecution::GroupTime>> CudaExecution::profile(Stream& stream, int reps) {
  const sched::ScheduledProgram& s = s_->impl().scheduled;
  const size_t groups = s.groups.size();
  std::vector<Event> marks;
  for (size_t g = 0; g <= groups; ++g) {
    Expected<Event> e = Event::create();
    if (!e) return e.status();
    marks.push_back(std::move(*e));
  }
  std::vector<std::vector<double>> times(groups);
  for (int r = 0; r < std::max(reps, 1); ++r) {
    Status st = launch_groups(&stream, [&](size_t g) { return marks[g].record(stream); });
    if (!st.ok()) return st;
    if (Status sync = stream.synchronize(); !sync.ok()) return sync;
    for (size_t g = 0; g < groups; ++g) {
      Expected<float> ms = Event::elapsed_ms(marks[g], marks[g + 1]);
      if (!ms) return ms.status();
      times[g].push_back(*ms);
    }
  }
  std::vector<GroupTime> out;
  const loopir::Program& p = s.program;
  for (size_t g = 0; g < groups; ++g) {
    std::vector<double>& t = times[g];
    std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
    const loopir::Kernel& first = p.kernels[s.groups[g].kernels.front()];
    std::string what = first.kind == loopir::KernelKind::Extern && first.call ? first.call->target : "kernel";
    out.push_back({s.groups[g].name, what, t[t.size() / 2]});
  }
  return out;
}

Status CudaExecution::launch_groups(const Stream* stream, const std::function<Status(size_t)>& before_group) {
  State& st = *s_;
  const CudaCompiledGraph::Impl& impl = st.impl();
  const loopir::Program& p = impl.scheduled.program;
  if (Status rc = cuda_make_current(); !rc.ok()) return rc;
  const sched::ScheduledProgram& s = impl.scheduled;
  size_t next_kernel = 0;
  size_t skip_group = SIZE_MAX;
  for (size_t g = 0; g < s.groups.size(); ++g) {
    if (before_group)
      if (Status rc = before_group(g); !rc.ok()) return rc;
    const loopir::Kernel& first = p.kernels[s.groups[g].kernels.front()];
    if (first.kind == loopir::KernelKind::Extern) {
      bool all_gpu = true;
      for (size_t k : s.groups[g].kernels) all_gpu = all_gpu && extern_on_gpu(impl, k);
      if (all_gpu) {
        for (size_t k : s.groups[g].kernels) {
          if (lt_epilogue_ran(impl, k, st.pointer, stream)) {
            skip_group = g + 1;
            continue;
          }
          if (Status rc = st.run_extern_on_gpu(k, stream); !rc.ok())
            return Status::error("extern kernel " + s.groups[g].name + ": " + rc.message());
        }
        continue;
      }
      if (stream)
        if (Status rc = stream->synchronize(); !rc.ok()) return rc;
      if (Status rc = st.run_extern_on_host(g); !rc.ok()) return rc;
      continue;
    }
    if (next_kernel >= impl.source.kernels.size() || impl.source.kernels[next_kernel].group != g) continue;
    const size_t kernel_index = next_kernel++;
    if (g == skip_group) continue;  // its output came from the GEMM's cuBLASLt epilogue
    const CudaKernel& k = impl.source.kernels[kernel_index];
    CUfunction fn = impl.functions[kernel_index];
    if (k.outer_numel <= 0) continue;
    std::vector<CUdeviceptr> args_ptr;
    for (const std::string& name : k.buffers) args_ptr.push_back(st.pointer[p.buffer_index(name)]);
    int64_t n = k.outer_numel;
    std::vector<void*> args;
    for (CUdeviceptr& a : args_ptr) args.push_back(&a);
    SplitLaunch split = st.split[kernel_index];
    CUdeviceptr split_ws = st.split_workspace[kernel_index].ptr();
    if (split.blocks > 0) args.insert(args.end(), {&split_ws, &split.parts, &split.span});
    args.push_back(&n);
    Dim3 block{unsigned(k.block_threads)};
    const int64_t per_block = int64_t(k.block_threads) * k.elements_per_thread;
    int64_t blocks = split.blocks > 0 ? split.blocks : k.per_row ? n : (n + per_block - 1) / per_block;
    Dim3 grid{unsigned(std::min<int64_t>(std::max<int64_t>(blocks, 1), int64_t(1) << 20))};
    if (Status rc = codegen::cuda::launch(fn, grid, block, 0, args.data(), stream); !rc.ok())
      return Status::error("kernel " + k.name + ": " + rc.message());
  }
  if (before_group) return before_group(s.groups.size());
  return {};
}

Status CudaExecution::copy_output_to_input(size_t output, size_t k, const Stream* stream) {
  const ProgramBinding& bind = s_->impl().binding;
  const loopir::Program& p = s_->program();
  if (k >= input_count()) return Status::error("input " + std::to_string(k) + " of " + std::to_string(input_count()));
  if (output >= bind.output_slots.size())
    return Status::error("output " + std::to_string(output) + " of " + std::to_string(bind.output_slots.size()));
  const size_t from = bind.output_slots[output], to = bind.input_slots[s_->given_input_index[k]];
  const loopir::Buffer &src = p.buffers[from], &dst = p.buffers[to];
  if (src.dtype != dst.dtype || src.sizes != dst.sizes || src.strides != dst.strides || src.offset != dst.offset)
    return Status::error("output " + std::to_string(output) + " (" + src.name + ") and input " + std::to_string(k) +
                         " (" + dst.name + ") differ in dtype or layout");
  if (bind.storage_of[from] == bind.storage_of[to]) return {};  // the output already is the input
  return copy_device(s_->pointer[to], s_->pointer[from], span_bytes(dst), stream);
}

Expected<std::vector<Tensor>> CudaExecution::outputs() const {
  State& st = *s_;
  const loopir::Program& p = st.program();
  if (st.gather_fault.ptr()) {
    // An index out of range left an output with made-up values: the run fails
    // (once: the word is cleared for the next run).
    int64_t fault[kGatherFaultWords] = {};
    if (Status rc = st.gather_fault.download(fault, sizeof fault); !rc.ok()) return rc;
    if (fault[0] != 0) {
      if (Status rc = st.gather_fault.zero(); !rc.ok()) return rc;
      return Status::error(gather_fault_message(p, st.impl().source.gathers, fault));
    }
  }
  std::vector<Tensor> out;
  for (size_t slot : st.impl().binding.output_slots) {
    if (p.buffers[slot].role == BufferRole::Input && st.host_input[slot].defined()) {
      out.push_back(st.host_input[slot]);
      continue;
    }
    Expected<Tensor> t = st.download(slot);
    if (!t) return t.status();
    out.push_back(*t);
  }
  return st.impl().binding.place_outputs(std::move(out));
}

Expected<std::vector<Tensor>> CudaCompiledGraph::run(const std::vector<Tensor>& given) const {
  if (impl_->compile_only) return Status::error("kiln-cuda: this graph was compiled with --compile-only and cannot run");
  if (given.size() != impl_->binding.given_inputs)
    return impl_->binding.all_inputs(given).status();
  // The execution keeps the graph alive through a shared_ptr; this object is
  // owned by one, but a temporary non-owning alias is enough for one run.
  std::shared_ptr<const CudaCompiledGraph> self(std::shared_ptr<const CudaCompiledGraph>{}, this);
  Expected<std::unique_ptr<CudaExecution>> exec = CudaExecution::create(self);
  if (!exec) return exec.status();
  for (size_t k = 0; k < given.size(); ++k)
    if (Status st = (*exec)->set_input(k, given[k]); !st.ok()) return st;
  if (Status st = (*exec)->launch(); !st.ok()) return st;
  return (*exec)->outputs();
}

}  // namespace kiln::runtime
