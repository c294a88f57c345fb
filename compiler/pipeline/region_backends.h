#pragma once
// The torch.compile backends that run captured regions through Kiln's stages:
// aot_eager lowers a region to ATen (to_aten) and runs that graph with the
// eager kernels; decomp_eager runs it after decomposition to the core set.
// A region the lowering cannot take runs as the eager backend does, with one
// warning naming it.
#include <string>

#include "compiler/capture/capture.h"

namespace kiln::pipeline {

// For CaptureOptions::backend_runner: the runner of one compiled entry, or
// null for backends that run the torch-level graph (eager, and for now kiln).
// `mode` is torch.compile's ("reduce-overhead" replays CUDA graphs on the GPU).
capture::RegionRunner region_runner(py::VM& vm, const std::string& backend, const std::string& mode,
                                    const std::string& compile_id);

}  // namespace kiln::pipeline
