#pragma once
// Helpers the checks share (inside kiln_minifier only). They run kernels and
// the compiler, so they are called in child processes only.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/runtime/compiled_graph.h"
#include "minifier/candidate.h"

namespace kiln::minify {

struct CpuCompile {
  std::shared_ptr<runtime::CompiledGraph> code;
  std::string stage;  // where it failed: a graph pass's name, or "codegen"
  std::string error;  // empty when it compiled
};
// The graph passes, then the CPU code generator (no compile cache: the
// minifier caches verdicts itself, and a cached object would hide a change
// of KILN_INJECT_BUG from the timing figures).
CpuCompile compile_cpu(const Graph& g, const std::string& inject_bug, bool fuse = true);

// The graph run by the ATen interpreter; with `fp64`, floating inputs are
// widened to float64 first and the graph's floating dtype arguments (its own
// casts) become float64 (the reference PyTorch's minifier compares with).
Expected<std::vector<Tensor>> run_eager(const Candidate& c, bool fp64);

// Every call node's value (single tensors only), keyed by node name.
Expected<std::map<std::string, Tensor>> run_eager_all(const Candidate& c, bool fp64);

// torch._dynamo.utils.same() for one tensor: `res` against `ref` (the same
// computation in eager, same dtype) and `fp64` (eager in float64; may be
// undefined). Returns an empty string when they agree, else why not.
std::string compare_tensor(const Tensor& ref, const Tensor& res, const Tensor& fp64, double tol, bool check_non_float);

}  // namespace kiln::minify
