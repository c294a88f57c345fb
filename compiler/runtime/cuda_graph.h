#pragma once
// A graph compiled for the GPU: the decomposed ATen graph lowered to loops,
// scheduled, emitted as CUDA C++ (codegen/cuda/cuda_emit.h) and compiled by
// NVRTC. Compiling needs only NVRTC; run() needs the driver and a GPU: it
// uploads the inputs, launches a kernel per group (GEMMs run on cuBLAS,
// convolutions as im2col + cuBLAS (codegen/cuda/cuda_conv.h) or Kiln's
// implicit-GEMM kernel (cuda_conv_implicit.h, KILN_CONV); other extern
// kernels run on the host kernels, their buffers copied across), and
// downloads the outputs.
// This is what backend "kiln-cuda" runs.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/codegen/cuda/cuda_api.h"
#include "compiler/runtime/compiled_graph.h"
#include "core/graph/graph.h"
#include "core/tensor/tensor.h"
#include "core/util/status.h"

namespace kiln::runtime {

struct CudaCompileOptions {
  bool keep_text = false;  // keep the CUDA source and the PTX as stages
  // Compile only (no driver needed): for the target `sm` below. Otherwise
  // the GPU's own compute capability is used and the module is loaded.
  bool compile_only = false;
  // Stop after the CUDA source (no NVRTC, so no CUDA needed at all): for
  // tools that show the generated code, as the workbench's code view does.
  bool emit_only = false;
  int sm = 90;
  // "" takes KILN_INJECT_BUG from the environment; "none" ignores it.
  std::string inject_bug;
  int row_elements_per_thread = 32;  // codegen::cuda::LaunchChoice
  bool split_reductions = true;      // codegen::cuda::LaunchChoice
  // TF32 for float32 products (about 1e-3 relative): off unless asked, so
  // that a graph computes what the CPU does. Programs get PyTorch's defaults
  // through torch.backends: convolutions on (cudnn.allow_tf32), matmuls off
  // (cuda.matmul.allow_tf32).
  bool conv_tf32 = false;
  bool matmul_tf32 = false;
  // How convolutions run (codegen/cuda/cuda_conv_implicit.h): "im2col"
  // (im2col + cuBLAS), "implicit" (Kiln's implicit-GEMM tensor-core kernel
  // wherever it applies: float16 / bfloat16, float32 with conv_tf32, groups 1)
  // or "auto" (implicit except a 1x1 stride-1 convolution, which cuBLAS reads
  // in place). "" takes KILN_CONV from the environment, im2col when unset.
  std::string conv_algorithm;
  // The SQLite compile cache (default_compile_cache()): the cubin keyed by the
  // CUDA source, the target and NVRTC's version, so a hit skips NVRTC.
  bool use_cache = true;
};

struct CudaCompileStats {
  double lower_ms = 0, schedule_ms = 0, emit_ms = 0, nvrtc_ms = 0, load_ms = 0, total_ms = 0;
  size_t kernels = 0, extern_groups = 0, ptx_bytes = 0, cubin_bytes = 0;
  size_t host_externs = 0;  // extern kernels with no GPU version: they make a launch uncapturable
  bool cache_hit = false;
};

class CudaCompiledGraph {
 public:
  ~CudaCompiledGraph();
  static Expected<std::shared_ptr<CudaCompiledGraph>> compile(const Graph& g, const CudaCompileOptions& options = {},
                                                              const std::map<std::string, Tensor>& constants = {});

  // Host tensors in, host tensors out (placeholder order, constants left out).
  // A graph compiled with compile_only cannot run: that is a Status.
  Expected<std::vector<Tensor>> run(const std::vector<Tensor>& inputs) const;

  // cuda_source and ptx (keep_text), after ir_pre_fusion and ir_post_fusion.
  const std::vector<CodegenStage>& stages() const;
  const CudaCompileStats& stats() const;
  // The generated CUDA source (kept whatever keep_text says; the cache keys hash it).
  const std::string& source_text() const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  explicit CudaCompiledGraph(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A compiled graph's buffers held on the GPU, so that repeated launches pay no
// allocation and no copy: what benchmarks and CUDA graph replay
// (reduce-overhead) use. run() above is create + set_input + launch + outputs.
class CudaExecution {
 public:
  // Allocates every buffer and uploads the constants bound at compile time.
  static Expected<std::unique_ptr<CudaExecution>> create(std::shared_ptr<const CudaCompiledGraph> graph);
  ~CudaExecution();

  size_t input_count() const;  // the caller's inputs (constants left out)
  // Copies the caller's input `k` into its device buffer, in the buffer's layout.
  Status set_input(size_t k, const Tensor& host);
  // Input k's bytes in the buffer's layout, and where the kernels read it.
  size_t input_bytes(size_t k) const;
  codegen::cuda::CUdeviceptr input_pointer(size_t k) const;
  // Makes the kernels read input k from `ptr` (device memory of input_bytes(k)
  // in the buffer's layout, from cuMemAlloc) instead: benchmarks rotate
  // several copies so that inputs do not sit in L2 between launches.
  Status bind_input(size_t k, codegen::cuda::CUdeviceptr ptr);

  // Queues every kernel and library call on `stream` (null: the legacy
  // stream). An extern kernel with no GPU version runs on the host, which
  // synchronizes; such a graph is not capturable.
  Status launch(const codegen::cuda::Stream* stream = nullptr);
  // Where a launch's time goes: each group (a generated kernel, or a library
  // call named by its ATen op) between CUDA events recorded around it, the
  // median over `reps` launches, in launch order. The events serialize what
  // they separate, so the sum exceeds a plain launch's time a little.
  struct GroupTime {
    std::string group, what;  // "buf12_buf13"; "kernel" or the extern's op, "aten::convolution.default"
    double ms = 0;
  };
  Expected<std::vector<GroupTime>> profile(codegen::cuda::Stream& stream, int reps);
  bool capturable() const;
  // mode="reduce-overhead": the first call records launch() on `stream` into
  // a CUDA graph (driver stream capture), every call replays it, one launch
  // for the whole graph. The graph holds the buffer pointers of its capture:
  // inputs go through set_input (static input buffers), and bind_input
  // afterwards is refused.
  Status replay(codegen::cuda::Stream& stream);
  // Queues a device-to-device copy of tensor output `output` (counting the
  // graph's tensor outputs) into input `k`'s buffer, which must have the same
  // dtype, sizes, strides and offset: how a training step's new parameters
  // and optimizer state become the next step's inputs without leaving the
  // device. Works between replays too (the graph's pointers do not move).
  Status copy_output_to_input(size_t output, size_t k, const codegen::cuda::Stream* stream = nullptr);
  // Downloads the outputs (placeholder inputs returned as given).
  Expected<std::vector<Tensor>> outputs() const;

 private:
  struct State;
  explicit CudaExecution(std::unique_ptr<State> s);
  // launch(), calling `before_group(g)` before each group's work is queued
  // and `before_group(groups)` after the last.
  Status launch_groups(const codegen::cuda::Stream* stream, const std::function<Status(size_t)>& before_group);
  std::unique_ptr<State> s_;
};

}  // namespace kiln::runtime
