#pragma once
// A torch.compile region run on the GPU (backend kiln-cuda, and kiln /
// inductor when the region's inputs are on a CUDA device): the graph compiled
// by compile_to_cuda, its buffers held on the device between calls.
//
// The interpreter's tensors live in host memory (core/python/torch_device.h),
// so each call uploads its inputs, but an input whose storage is unchanged
// since the last call (same storage and view, same version: a parameter, a
// buffer, a constant input) stays resident and is not copied again. With
// mode="reduce-overhead" the launches are captured once into a CUDA graph and
// replayed, inputs going through the static input buffers, as Inductor's
// cudagraphs do.
#include <memory>
#include <optional>
#include <vector>

#include "core/graph/graph.h"
#include "core/tensor/tensor.h"
#include "core/util/status.h"

namespace kiln::pipeline {

class CudaRegionCode {
 public:
  struct Options {
    bool reduce_overhead = false;  // replay a CUDA graph (reduce-overhead, max-autotune)
    bool autotune = false;         // max-autotune(-no-cudagraphs): runtime/cuda_autotune.h at the first call
    // torch.backends.cudnn.allow_tf32 and torch.backends.cuda.matmul.allow_tf32 when the region was compiled.
    bool conv_tf32 = true, matmul_tf32 = false;
  };
  // torch.compile's mode as these options.
  static Options options_for_mode(const std::string& mode);
  static Expected<std::shared_ptr<CudaRegionCode>> compile(const Graph& g, const Options& options);
  ~CudaRegionCode();
  // Host tensors in (placeholder order), host tensors out; one call at a time.
  Expected<std::vector<Tensor>> run(const std::vector<Tensor>& inputs);
  // Uploads skipped because an input was resident: what the tests check.
  size_t resident_hits() const { return resident_hits_; }
  bool replays() const;  // reduce-overhead, and the graph is capturable
  // max-autotune: the launch shape chosen at the first call (0 before it, or without autotune).
  int tuned_row_elements() const;

  struct State;

 private:
  explicit CudaRegionCode(std::unique_ptr<State> s);
  std::unique_ptr<State> s_;
  size_t resident_hits_ = 0;
};

// Lets programs see the GPU: torch.cuda.is_available() and device("cuda")
// tensors, counted (on first need) as the devices the CUDA driver opens.
// CUDA_VISIBLE_DEVICES="" hides it, as it does from PyTorch.
void install_cuda_device_counter();

}  // namespace kiln::pipeline
