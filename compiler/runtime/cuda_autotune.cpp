#include "compiler/runtime/cuda_autotune.h"

#include <algorithm>

#include "compiler/codegen/cuda/cuda_api.h"
#include "compiler/runtime/compile_cache.h"
#include "core/util/md5.h"

namespace kiln::runtime {

namespace {

using namespace kiln::codegen::cuda;

constexpr int kChoices[] = {8, 16, 32};

CacheKey choice_key(const CudaCompiledGraph& graph) {
  CacheKey key;
  key.layout = md5_hex(graph.source_text());
  key.options = "cuda-max-autotune;row_elements";
  Expected<DeviceInfo> info = cuda_device_info();
  key.target = info ? info->name + " sm_" + std::to_string(info->sm_major) + std::to_string(info->sm_minor) : "?";
  return key;
}

// Median milliseconds of one launch of `graph` on `inputs`.
Expected<double> time_variant(const std::shared_ptr<CudaCompiledGraph>& graph, const std::vector<Tensor>& inputs) {
  Expected<std::unique_ptr<CudaExecution>> exec = CudaExecution::create(graph);
  if (!exec) return exec.status();
  for (size_t k = 0; k < inputs.size(); ++k)
    if (Status st = (*exec)->set_input(k, inputs[k]); !st.ok()) return st;
  Expected<Stream> stream = Stream::create();
  if (!stream) return stream.status();
  CudaExecution& x = **exec;
  return median_event_ms(*stream, /*warmup=*/3, /*reps=*/10, [&](int) { return x.launch(&*stream); });
}

}  // namespace

Expected<AutotuneResult> autotune_cuda(const VariantCompiler& compile, const CudaCompileOptions& base,
                                       const std::vector<Tensor>& inputs) {
  AutotuneResult result;
  CudaCompileOptions options = base;
  Expected<std::shared_ptr<CudaCompiledGraph>> first = compile(options);
  if (!first) return first.status();
  const CacheKey key = choice_key(**first);
  CompileCache* cache = base.use_cache ? default_compile_cache() : nullptr;
  if (cache)
    if (std::optional<std::string> hit = cache->lookup(key)) {
      const int choice = std::atoi(hit->c_str());
      if (std::find(std::begin(kChoices), std::end(kChoices), choice) != std::end(kChoices)) {
        options.row_elements_per_thread = choice;
        Expected<std::shared_ptr<CudaCompiledGraph>> chosen =
            choice == base.row_elements_per_thread ? first : compile(options);
        if (!chosen) return chosen.status();
        result.graph = *chosen, result.row_elements_per_thread = choice, result.from_cache = true;
        return result;
      }
    }
  // Variants whose source is the same (a graph with no reduction) are one variant.
  std::vector<std::string> seen;
  double best = 0;
  for (int choice : kChoices) {
    options.row_elements_per_thread = choice;
    Expected<std::shared_ptr<CudaCompiledGraph>> variant =
        choice == base.row_elements_per_thread ? first : compile(options);
    if (!variant) return variant.status();
    const std::string& source = (*variant)->source_text();
    if (std::find(seen.begin(), seen.end(), source) != seen.end()) continue;
    seen.push_back(source);
    Expected<double> ms = time_variant(*variant, inputs);
    if (!ms) return ms.status();
    result.timings.emplace_back(choice, *ms);
    if (!result.graph || *ms < best) best = *ms, result.graph = *variant, result.row_elements_per_thread = choice;
  }
  if (cache)
    (void)cache->store(key, std::to_string(result.row_elements_per_thread),
                       "max-autotune choice: row_elements_per_thread=" + std::to_string(result.row_elements_per_thread));
  return result;
}

}  // namespace kiln::runtime
