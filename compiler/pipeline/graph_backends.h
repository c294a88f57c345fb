#pragma once
// Conformance backends that run each corpus case as a one-node ATen graph:
// aot_eager (the graph as the AOT stages build it, run by run_aten_graph) and
// decomp_eager (the same graph after decomposition to the core set). They are
// the first rungs of the ladder eager -> aot_eager -> decomp_eager -> kiln that
// tells a user which layer is wrong.
#include "core/corpus/conformance.h"

namespace kiln::pipeline {

ConformanceBackend aot_eager_backend();
ConformanceBackend decomp_eager_backend();
// kiln: the graph passes, then CPU code generation (compiler/runtime/compiled_graph.h).
ConformanceBackend kiln_backend();
// kiln-cuda: the graph passes, then CUDA code generation through NVRTC, run on
// the GPU (compiler/runtime/cuda_graph.h).
ConformanceBackend kiln_cuda_backend();
// kiln-cuda --compile-only: the same up to NVRTC's cubin for sm_90, with no
// GPU or driver; what was built ("2 kernel(s), 0 extern call(s), ..."), or
// why not.
Expected<std::string> kiln_cuda_compile_case(const CorpusCase& c);

}  // namespace kiln::pipeline
