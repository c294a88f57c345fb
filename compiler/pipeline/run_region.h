#pragma once
// run_region(): the one place the order of Kiln's pipeline after capture is
// written, as Halide's Lower.cpp writes Halide's. A region, as captured from a
// program or as read from a dump, goes through
//
//   to_aten -> joint graph (autodiff) -> partition into forward and backward
//   -> the graph passes on each half -> lowering to loops and fusion
//   -> machine code (LLVM) and the CUDA source
//
// starting wherever its input starts, and each step reaches the observer as
// one pipeline::Stage (graph, loop IR or code text; time; changed; what it
// skipped or why it failed). `kiln-cli stages`, the workbench and the runtime
// backends call it; nothing else builds joint graphs, calls a partitioner or
// runs the graph pass list. Tests: tests/compiler/test_run_region.cpp.
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compiler/aot/joint.h"
#include "compiler/aot/partition.h"
#include "compiler/pipeline/pipeline.h"
#include "compiler/pipeline/training_split.h"
#include "core/graph/graph.h"
#include "core/util/status.h"

namespace kiln::py {
class VM;
}
namespace kiln::capture {
struct RegionResult;
}

namespace kiln::pipeline {

// Where a region's pipeline starts.
struct RegionInput {
  enum class From {
    Captured,  // a region a program's torch.compile captured: to_aten first (needs the VM)
    Aten,      // an ATen graph: trained through a joint graph when `training` asks for it
    Joint,     // a joint graph (a dump's aot_joint_graph): partitioned, then each half
    Graph,     // one graph through the passes and code generation (a half, an inference graph, a repro)
  } from = From::Graph;
  py::VM* vm = nullptr;                          // Captured
  const capture::RegionResult* region = nullptr;  // Captured
  Graph graph;                                    // Aten, Graph
  aot::JointGraph joint;                          // Joint
  std::string group;                              // Graph: the half it is ("forward", "backward") or ""
  TrainingOptions training;                       // Captured, Aten: requires_grad and grad mode; the partitioner (Joint too)
  ConstantTable constants;                        // tensors behind get_attr nodes

  static RegionInput captured(py::VM& vm, const capture::RegionResult& region, Partitioner partitioner);
  static RegionInput aten(Graph g, TrainingOptions training);
  static RegionInput from_joint(aot::JointGraph j, Partitioner partitioner);
  static RegionInput single(Graph g, std::string group = "");
};

struct RegionOptions {
  PassManagerOptions instrumentation;  // stop_after counts per graph, as before the split
  std::vector<std::string> disabled_passes;
  std::vector<std::string> keep_whole;  // Options::keep_whole
  // Off: no graph passes and no code; the graphs come back as autodiff and
  // the partitioner made them (the runtime's aot_eager and decomp_eager).
  bool graph_passes = true;
  // Code generation after the passes. Loops: lowering and fusion only.
  // Auto: machine code when fusion made at most auto_kernels kernels (LLVM
  // takes about 10 ms a kernel), else a skipped "machine code" stage saying so.
  enum class Codegen { None, Loops, Auto, Machine } codegen = Codegen::Machine;
  size_t auto_kernels = 500;
  // The CPU code generator's: keep_text for the code stages' texts,
  // use_cache (off: the times shown are the compiler's, not a cache lookup's).
  runtime::CompileOptions cpu;
  bool cuda_source = false;  // also the CUDA source of each graph (generated, not compiled: no GPU needed)
  // The region trains on the GPU: attention written out by hand is fused
  // before autodiff (fuse_attention_for_gpu_training, stage "fuse_attention")
  // and the fused op stays whole through the passes of the halves.
  bool gpu_training = false;
  const std::atomic<bool>* cancel = nullptr;  // checked between steps and passes
  // Called when a graph's passes have run, before its code generation, with
  // the size of the graph they started from, describe_size() (kiln-cli stages
  // prints its "result" line).
  std::function<void(const std::string& group, const std::string& input_size, const CompileResult& after)> passes_done;
  // Called as each step begins, before its stage exists: "to_aten",
  // "aot_joint_graph", "partition", then per group (the half, or "") "passes",
  // the code generator's "lower", "llvm_ir", "optimize", "assembly",
  // "object", "link", and "cuda_source". What a progress bar follows: the
  // code stages of a graph only reach the observer once its compile is done.
  std::function<void(const std::string& group, const std::string& step)> on_step;
};

// One graph that went through the passes: an inference graph or a half.
struct RegionPart {
  std::string group;
  CompileResult passes;  // the graph after the passes, its constants and stages
  std::shared_ptr<runtime::CompiledGraph> code;  // Codegen::Machine (or Auto under the limit)
  Status codegen_status;                          // why there is no code, when some was asked for
};

struct RegionRun {
  // The first step that failed (to_aten, the partition, a pass); the stages
  // before it are kept. Code generation failures are per part, not here.
  Status status;
  bool cancelled = false;
  bool trained = false;           // a joint graph was built and split
  std::string inference_because;  // why not, when the input asked for training
  aot::JointGraph joint;          // when trained (or from Joint)
  aot::Partition partition;       // when trained; forward and backward as the partitioner made them
  std::vector<RegionPart> parts;  // in pipeline order: the inference graph, or forward then backward
  std::vector<Stage> stages;      // every stage, in order (what the observer received)
  const RegionPart* part(const std::string& group) const;
};

using StageObserver = std::function<void(const Stage&)>;

RegionRun run_region(RegionInput input, const RegionOptions& options = {}, const StageObserver& observe = {});

// "5 nodes, 3 ops": every node, and the call nodes among them.
std::string describe_size(const Graph& g);

}  // namespace kiln::pipeline
