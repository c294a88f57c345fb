#pragma once
// Whether a region trains through a joint graph, and if so the joint graph
// and its split into forward and backward: run_region()'s step between to_aten
// and the graph passes (run_region.h), the one place the joint graph is built
// and a partitioner chosen and called. Callers go through run_region().
// Tests: tests/compiler/test_training_split.cpp.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/aot/joint.h"
#include "compiler/aot/partition.h"
#include "core/util/status.h"

namespace kiln::capture {
struct RegionResult;
}

namespace kiln::pipeline {

enum class Partitioner { Default, MinCut };
std::optional<Partitioner> partitioner_named(std::string_view name);  // "default", "min-cut"
const char* partitioner_name(Partitioner p);

// The partitioner on `joint`; an exception (a joint graph it misreads) is the Status.
Expected<aot::Partition> partition_joint(const aot::JointGraph& joint, Partitioner p, double* seconds = nullptr);

struct TrainingOptions {
  std::vector<bool> requires_grad;  // per placeholder of the ATen graph
  // The region enters or leaves no_grad: autodiff of the whole graph would
  // differentiate what the no_grad block computed, so it trains on its
  // torch-level graph instead (what the runtime does).
  bool changes_grad_mode = false;
  Partitioner partitioner = Partitioner::Default;
  // Some input requires grad and grad mode stays as it is: autodiff of the whole graph applies.
  bool differentiates() const;
};

// A captured region's options: its inputs' requires_grad as the program
// made them (parameters do, plain inputs do not) and whether it changes grad
// mode. What kiln-cli stages and the workbench show; the runtime also asks
// whether grad mode is on when the region runs.
TrainingOptions training_options_of(const capture::RegionResult& region, Partitioner partitioner);

struct TrainingSplit {
  // Why there is no joint graph ("no input requires grad (an inference
  // graph)", build_joint's refusal); empty when there is one.
  std::string inference_because;
  // A joint graph the partitioner failed on; ok otherwise.
  Status partition_status;
  aot::JointGraph joint;
  aot::Partition partition;
  double joint_seconds = 0, partition_seconds = 0;
  bool trains() const { return inference_because.empty() && partition_status.ok(); }
};

TrainingSplit split_for_training(const Graph& aten, const TrainingOptions& options);

// A graph about to train on the GPU, before decomposition, through the
// fuse-attention pass (compiler/passes/fuse_attention.h), then decomposed with
// the fused op kept whole (cuda_whole_ops()): what autodiff then reads. Nullopt
// when nothing was fused; `summary` gets the pass's line.
std::optional<Graph> fuse_attention_for_gpu_training(const Graph& undecomposed, std::string* summary = nullptr);

// Whether regions that train on the GPU go through it: KILN_FUSE_ATTENTION=1.
// Off by default: on an H200 a GPT head's training step (bf16, 4x16x2048x64)
// takes 8.2 ms fused (the flash forward, the backward recomputed as GEMMs)
// against 2.3 ms unfused, and 34.8 ms with Kiln's CUDA-core flash backward
// kernels; the fused graph saves O(L) per row instead of the O(L^2) scores.
bool attention_fusion_for_training_enabled();

}  // namespace kiln::pipeline
