#include "compiler/runtime/cuda_graph.h"

#include <algorithm>
#include <chrono>

#include "compiler/codegen/cpu/cpu_codegen.h"
#include "compiler/codegen/cuda/cuda_api.h"
#include "compiler/codegen/cuda/cuda_emit.h"
#include "compiler/loopir/extern_call.h"
#include "compiler/loopir/lower.h"
#include "compiler/loopir/print_ir.h"
#include "compiler/runtime/program_binding.h"
#include "compiler/sched/schedule.h"

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
  ProgramBinding binding;  // storage_of: the buffer whose device memory each buffer uses
};

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

size_t span_bytes(const Buffer& b) { return size_t(loopir::storage_span(b)) * element_size(b.dtype); }

}  // namespace

CudaCompiledGraph::CudaCompiledGraph(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaCompiledGraph::~CudaCompiledGraph() = default;
const std::vector<CodegenStage>& CudaCompiledGraph::stages() const { return impl_->stages; }
const CudaCompileStats& CudaCompiledGraph::stats() const { return impl_->stats; }

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
  if (!options.compile_only) {
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
    impl->scheduled = sched::schedule(program);
    st.schedule_ms = ms_since(t0);
    t0 = Clock::now();
    impl->source = emit_cuda(impl->scheduled, plan_for_cuda(impl->scheduled), bug);
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
  for (const sched::FusedGroup& g : impl->scheduled.groups)
    st.extern_groups += p.kernels[g.kernels.front()].kind == loopir::KernelKind::Extern;
  st.kernels = impl->source.kernels.size();
  if (!impl->source.kernels.empty()) {
    Expected<NvrtcOutput> out = nvrtc_compile(impl->source.text, "kiln_graph.cu", sm, true);
    if (!out) return out.status();
    st.nvrtc_ms = out->ms;
    st.ptx_bytes = out->ptx.size();
    st.cubin_bytes = out->cubin.size();
    if (options.keep_text) impl->stages.push_back({"ptx", out->ptx, out->ms});
    if (!options.compile_only) {
      auto t0 = Clock::now();
      Expected<CudaModule> m = CudaModule::load(out->cubin.empty() ? out->ptx : out->cubin);
      if (!m) return m.status();
      impl->module = std::move(*m);
      for (const CudaKernel& k : impl->source.kernels) {
        Expected<CUfunction> f = impl->module.function(k.name);
        if (!f) return f.status();
        impl->functions.push_back(*f);
      }
      st.load_ms = ms_since(t0);
    }
  }
  impl->binding.index(impl->scheduled);
  st.total_ms = ms_since(t_start);
  return std::shared_ptr<CudaCompiledGraph>(new CudaCompiledGraph(std::move(impl)));
}

Expected<std::vector<Tensor>> CudaCompiledGraph::run(const std::vector<Tensor>& given) const {
  const Impl& impl = *impl_;
  if (impl.compile_only) return Status::error("kiln-cuda: this graph was compiled with --compile-only and cannot run");
  if (Status st = cuda_make_current(); !st.ok()) return st;
  const loopir::Program& p = impl.scheduled.program;
  const ProgramBinding& bind = impl.binding;
  Expected<std::vector<Tensor>> inputs = bind.all_inputs(given);
  if (!inputs) return inputs.status();

  // Device memory: one allocation per owning buffer, large enough for every buffer sharing it.
  std::vector<size_t> bytes(p.buffers.size(), 0);
  for (size_t i = 0; i < p.buffers.size(); ++i)
    bytes[bind.storage_of[i]] = std::max(bytes[bind.storage_of[i]], span_bytes(p.buffers[i]));
  std::vector<DeviceBuffer> storage(p.buffers.size());
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    if (bind.storage_of[i] != i) continue;
    Expected<DeviceBuffer> b = DeviceBuffer::alloc(std::max<size_t>(bytes[i], 16));
    if (!b) return b.status();
    storage[i] = std::move(*b);
  }
  auto device_of = [&](size_t i) -> DeviceBuffer& { return storage[bind.storage_of[i]]; };

  std::vector<Tensor> host_input(p.buffers.size());
  for (size_t k = 0; k < inputs->size(); ++k) {
    size_t at = bind.input_slots[k];
    Expected<Tensor> laid_out = input_in_buffer_layout(k, p.buffers[at], (*inputs)[k]);
    if (!laid_out) return laid_out.status();
    host_input[at] = (*inputs)[k];
    if (size_t n = span_bytes(p.buffers[at]); n > 0)
      if (Status st = device_of(at).upload(storage_base(*laid_out), n); !st.ok()) return st;
  }

  // Straight into the host tensor's storage: the buffer's span is a prefix of its device memory.
  auto download = [&](size_t i) -> Expected<Tensor> {
    Tensor host = buffer_tensor(p.buffers[i]);
    if (size_t n = span_bytes(p.buffers[i]); n > 0)
      if (Status st = device_of(i).download(storage_base(host), n); !st.ok()) return st;
    return host;
  };

  const sched::ScheduledProgram& s = impl.scheduled;
  size_t next_kernel = 0;
  for (size_t g = 0; g < s.groups.size(); ++g) {
    const loopir::Kernel& first = p.kernels[s.groups[g].kernels.front()];
    if (first.kind == loopir::KernelKind::Extern) {
      // Library calls run on the host kernels for now: their buffers make the round trip.
      for (size_t k : s.groups[g].kernels) {
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
          return Status::error(std::string("extern kernel ") + s.groups[g].name + ": " + e.what());
        }
        for (const std::string& o : loopir::extern_outputs(K)) {
          size_t i = p.buffer_index(o);
          if (size_t n = span_bytes(p.buffers[i]); n > 0)
            if (Status st = device_of(i).upload(storage_base(host[o]), n); !st.ok()) return st;
        }
      }
      continue;
    }
    if (next_kernel >= impl.source.kernels.size() || impl.source.kernels[next_kernel].group != g) continue;
    const CudaKernel& k = impl.source.kernels[next_kernel];
    CUfunction fn = impl.functions[next_kernel++];
    if (k.outer_numel <= 0) continue;
    std::vector<CUdeviceptr> args_ptr;
    for (const std::string& name : k.buffers) args_ptr.push_back(device_of(p.buffer_index(name)).ptr());
    int64_t n = k.outer_numel;
    std::vector<void*> args;
    for (CUdeviceptr& a : args_ptr) args.push_back(&a);
    args.push_back(&n);
    Dim3 block{unsigned(k.block_threads)};
    int64_t blocks = k.per_row ? n : (n + k.block_threads - 1) / k.block_threads;
    Dim3 grid{unsigned(std::min<int64_t>(blocks, int64_t(1) << 20))};
    if (Status st = launch(fn, grid, block, 0, args.data()); !st.ok())
      return Status::error("kernel " + k.name + ": " + st.message());
  }

  std::vector<Tensor> outputs;
  for (size_t slot : bind.output_slots) {
    if (p.buffers[slot].role == BufferRole::Input) {
      outputs.push_back(host_input[slot]);
      continue;
    }
    Expected<Tensor> t = download(slot);
    if (!t) return t.status();
    outputs.push_back(*t);
  }
  return outputs;
}

}  // namespace kiln::runtime
