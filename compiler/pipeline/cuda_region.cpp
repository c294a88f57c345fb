#include "compiler/pipeline/cuda_region.h"

#include "compiler/codegen/cuda/cuda_api.h"
#include "compiler/pipeline/pipeline.h"
#include "compiler/runtime/cuda_autotune.h"
#include "compiler/runtime/cuda_graph.h"
#include "core/python/autograd.h"
#include "core/python/torch_api.h"

namespace kiln::pipeline {

namespace ag = py::autograd;

namespace {

// What was last uploaded into an input's device buffer.
struct Resident {
  std::shared_ptr<Storage> storage;  // held, so that its address cannot be reused by another tensor
  Shape sizes, strides;
  int64_t offset = 0;
  DType dtype = DType::Float32;
  uint64_t version = 0;

  bool holds(const Tensor& t) const {
    return storage && t.storage() == storage && t.sizes() == sizes && t.strides() == strides &&
           t.storage_offset() == offset && t.dtype() == dtype && ag::storage_version(storage.get()) == version;
  }
};

// Stops watching what `r` held: its device copy is no longer trusted.
void forget(std::optional<Resident>& r) {
  if (r) ag::unwatch_storage(r->storage.get());
  r.reset();
}

}  // namespace

struct CudaRegionCode::State {
  std::optional<Graph> untuned;  // max-autotune: the graph whose variants the first call times
  runtime::CudaCompileOptions options;
  int tuned_row_elements = 0;
  std::shared_ptr<runtime::CudaCompiledGraph> graph;
  std::unique_ptr<runtime::CudaExecution> exec;
  codegen::cuda::Stream stream;
  bool reduce_overhead = false;
  std::vector<std::optional<Resident>> resident;

  ~State() {
    for (std::optional<Resident>& r : resident) forget(r);
  }
};

CudaRegionCode::CudaRegionCode(std::unique_ptr<State> s) : s_(std::move(s)) {}
CudaRegionCode::~CudaRegionCode() = default;

CudaRegionCode::Options CudaRegionCode::options_for_mode(const std::string& mode) {
  Options o;
  // As torch.compile documents its modes: max-autotune also uses CUDA graphs.
  o.reduce_overhead = mode == "reduce-overhead" || mode == "max-autotune";
  o.autotune = mode == "max-autotune" || mode == "max-autotune-no-cudagraphs";
  return o;
}

Expected<std::shared_ptr<CudaRegionCode>> CudaRegionCode::compile(const Graph& g, const Options& o) {
  runtime::CudaCompileOptions options;
  options.conv_tf32 = o.conv_tf32;
  options.matmul_tf32 = o.matmul_tf32;
  Expected<std::shared_ptr<runtime::CudaCompiledGraph>> code = compile_to_cuda(g, options);
  if (!code) return code.status();
  auto s = std::make_unique<State>();
  s->graph = *code;
  s->options = options;
  if (o.autotune) s->untuned = g;
  Expected<std::unique_ptr<runtime::CudaExecution>> exec = runtime::CudaExecution::create(s->graph);
  if (!exec) return exec.status();
  s->exec = std::move(*exec);
  Expected<codegen::cuda::Stream> stream = codegen::cuda::Stream::create();
  if (!stream) return stream.status();
  s->stream = std::move(*stream);
  s->reduce_overhead = o.reduce_overhead;
  s->resident.resize(s->exec->input_count());
  return std::shared_ptr<CudaRegionCode>(new CudaRegionCode(std::move(s)));
}

bool CudaRegionCode::replays() const { return s_->reduce_overhead && s_->exec->capturable(); }
int CudaRegionCode::tuned_row_elements() const { return s_->tuned_row_elements; }

Expected<std::vector<Tensor>> CudaRegionCode::run(const std::vector<Tensor>& inputs) {
  State& s = *s_;
  if (inputs.size() != s.resident.size())
    return Status::error("kiln-cuda: the graph takes " + std::to_string(s.resident.size()) + " inputs, given " +
                         std::to_string(inputs.size()));
  if (s.untuned) {
    const Graph g = std::move(*s.untuned);
    s.untuned.reset();
    // The default variant is compile()'s own graph: not compiled twice.
    auto variant = [&](const runtime::CudaCompileOptions& o) -> Expected<std::shared_ptr<runtime::CudaCompiledGraph>> {
      if (o.row_elements_per_thread == s.options.row_elements_per_thread) return s.graph;
      return compile_to_cuda(g, o);
    };
    Expected<runtime::AutotuneResult> tuned = runtime::autotune_cuda(variant, s.options, inputs);
    if (!tuned) return tuned.status();
    if (tuned->graph != s.graph) {
      Expected<std::unique_ptr<runtime::CudaExecution>> exec = runtime::CudaExecution::create(tuned->graph);
      if (!exec) return exec.status();
      for (std::optional<Resident>& r : s.resident) forget(r);
      s.graph = tuned->graph;
      s.exec = std::move(*exec);
    }
    s.tuned_row_elements = tuned->row_elements_per_thread;
  }
  for (size_t k = 0; k < inputs.size(); ++k) {
    std::optional<Resident>& r = s.resident[k];
    if (r && r->holds(inputs[k])) {
      ++resident_hits_;
      continue;
    }
    forget(r);
    if (Status st = s.exec->set_input(k, inputs[k]); !st.ok()) return st;
    const Tensor& t = inputs[k];
    if (!t.storage()) continue;
    ag::watch_storage(t.storage().get());
    r = Resident{t.storage(), t.sizes(), t.strides(), t.storage_offset(), t.dtype(), ag::storage_version(t.storage().get())};
  }
  Status ran = replays() ? s.exec->replay(s.stream) : s.exec->launch(&s.stream);
  if (!ran.ok()) return ran;
  if (Status st = s.stream.synchronize(); !st.ok()) return st;
  return s.exec->outputs();
}

void install_cuda_device_counter() {
  // Kiln runs on the one device cuda_init() makes current.
  torchapi::set_cuda_device_counter([] { return codegen::cuda::cuda_init().ok() ? 1 : 0; });
}

}  // namespace kiln::pipeline
