#pragma once
// A graph compiled for the CPU: the decomposed ATen graph lowered to loops,
// scheduled, generated through LLVM and linked in the JIT; run() allocates the
// buffers, runs every group over the thread pool (extern kernels through their
// library calls) and returns the outputs. This is what backend "kiln" runs.
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/tensor/tensor.h"
#include "core/util/status.h"

namespace kiln::runtime {

struct CompileOptions {
  bool fuse = true;        // off: every kernel its own group (for per-node intermediates)
  bool keep_text = false;  // keep LLVM IR before/after optimization and the assembly
  bool use_cache = true;   // the SQLite compile cache (default_compile_cache())
  int opt_level = 3;
  // "" takes KILN_INJECT_BUG from the environment; "none" ignores it.
  std::string inject_bug;
  // Set from another thread: LLVM skips its remaining optional passes and the
  // compile ends as "cancelled" (codegen::cpu::Options::cancel).
  const std::atomic<bool>* cancel = nullptr;
  // Called as each step begins: "lower", then codegen::cpu::Options::on_step's.
  std::function<void(const char* step)> on_step;
};

// One stage of the compile, for the stepper: ir_pre_fusion, ir_post_fusion,
// llvm_ir, llvm_ir_optimized, assembly.
struct CodegenStage {
  std::string name;
  std::string text;  // empty unless CompileOptions::keep_text
  double ms = 0;  // the step that made it (the assembly: object and assembly emission)
};

struct CompileStats {
  double lower_ms = 0, schedule_ms = 0, emit_ms = 0, optimize_ms = 0, codegen_ms = 0, link_ms = 0, total_ms = 0;
  bool cache_hit = false;
  size_t kernels = 0, groups = 0, object_bytes = 0;
};

// The graph with each get_attr node turned into a placeholder whose tensor
// is bound at compile time (in `bound`, per placeholder in order; undefined
// for the caller's inputs). Shared by the CPU and CUDA runtimes.
Expected<Graph> bind_constants(const Graph& source, const std::map<std::string, Tensor>& constants,
                               std::vector<Tensor>& bound);

// Lowering and scheduling without machine code: the ir_pre_fusion and
// ir_post_fusion stages (their text with keep_text) and the lower/schedule
// times, kernel and group counts. What `kiln-cli stages` shows of a program
// too large to send through LLVM by default.
struct LoopStages {
  std::vector<CodegenStage> stages;
  CompileStats stats;
};
Expected<LoopStages> schedule_loops(const Graph& g, const CompileOptions& options = {},
                                    const std::map<std::string, Tensor>& constants = {});

class CompiledGraph {
 public:
  ~CompiledGraph();
  // `g` is a decomposed ATen graph with meta vals and concrete sizes (what
  // the pipeline's last stage gives). Anything the lowering or the generator
  // cannot take is a Status naming the node.
  // `constants` holds the tensors behind get_attr nodes (by target), as the
  // pipeline's constant folding leaves them; they become inputs bound here.
  static Expected<std::shared_ptr<CompiledGraph>> compile(const Graph& g, const CompileOptions& options = {},
                                                          const std::map<std::string, Tensor>& constants = {});

  // The graph's outputs for these inputs (placeholder order, constants left
  // out). Inputs whose
  // sizes or dtypes differ from the compiled ones are a Status; other strides
  // are copied to the compiled layout first.
  Expected<std::vector<Tensor>> run(const std::vector<Tensor>& inputs) const;

  // Every value a graph node computes that exists as a buffer (with fuse off,
  // every lowered node), keyed by node name: the per-node numerics the GUI and
  // the minifier compare with an fp64 eager run.
  Expected<std::map<std::string, Tensor>> run_with_intermediates(const std::vector<Tensor>& inputs) const;

  const std::vector<CodegenStage>& stages() const;
  const CompileStats& stats() const;

  struct Impl;

 private:
  explicit CompiledGraph(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::runtime
