#include "compiler/pipeline/training_split.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "compiler/capture/region_tracer.h"
#include "compiler/decomp/decompose.h"
#include "compiler/passes/fuse_attention.h"
#include "compiler/pipeline/pipeline.h"
#include "core/python/object.h"

namespace kiln::pipeline {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

std::optional<Partitioner> partitioner_named(std::string_view name) {
  if (name == "default") return Partitioner::Default;
  if (name == "min-cut") return Partitioner::MinCut;
  return std::nullopt;
}

const char* partitioner_name(Partitioner p) { return p == Partitioner::MinCut ? "min-cut" : "default"; }

Expected<aot::Partition> partition_joint(const aot::JointGraph& joint, Partitioner p, double* seconds) {
  auto t0 = std::chrono::steady_clock::now();
  try {
    aot::Partition part = p == Partitioner::MinCut ? aot::min_cut_partition(joint) : aot::default_partition(joint);
    if (seconds) *seconds = seconds_since(t0);
    return part;
  } catch (const std::exception& e) {
    if (seconds) *seconds = seconds_since(t0);
    return Status::error(e.what());
  }
}

TrainingOptions training_options_of(const capture::RegionResult& region, Partitioner partitioner) {
  TrainingOptions o;
  for (const py::Value& v : region.input_values)
    o.requires_grad.push_back(v.is(py::ObjKind::Tensor) && v.as<py::TensorObj>()->requires_grad);
  o.changes_grad_mode = region.changes_grad_mode();
  o.partitioner = partitioner;
  return o;
}

namespace {
bool any_requires_grad(const TrainingOptions& o) {
  return std::find(o.requires_grad.begin(), o.requires_grad.end(), true) != o.requires_grad.end();
}
}  // namespace

bool TrainingOptions::differentiates() const { return any_requires_grad(*this) && !changes_grad_mode; }

TrainingSplit split_for_training(const Graph& aten, const TrainingOptions& options) {
  TrainingSplit out;
  if (!any_requires_grad(options)) {
    out.inference_because = "no input requires grad (an inference graph)";
    return out;
  }
  if (options.changes_grad_mode) {
    out.inference_because = "grad mode changes inside the region (torch.no_grad); it trains on its torch-level graph";
    return out;
  }
  aot::JointOptions jo;
  jo.requires_grad = options.requires_grad;
  auto t0 = std::chrono::steady_clock::now();
  Expected<aot::JointGraph> joint = [&]() -> Expected<aot::JointGraph> {
    try {
      return aot::build_joint(aten, jo);
    } catch (const std::exception& e) {
      return Status::error(e.what());
    }
  }();
  out.joint_seconds = seconds_since(t0);
  if (!joint) {
    out.inference_because = joint.status().message();
    return out;
  }
  out.joint = std::move(*joint);
  Expected<aot::Partition> part = partition_joint(out.joint, options.partitioner, &out.partition_seconds);
  if (!part) {
    out.partition_status = part.status();
    return out;
  }
  out.partition = std::move(*part);
  return out;
}

bool attention_fusion_for_training_enabled() {
  const char* env = std::getenv("KILN_FUSE_ATTENTION");
  return env && std::string(env) == "1";
}

std::optional<Graph> fuse_attention_for_gpu_training(const Graph& undecomposed, std::string* summary) {
  Graph g = undecomposed;
  PassResult r = fuse_attention(g, PassContext{});
  if (!r.changed) return std::nullopt;
  Expected<Graph> d = decomp::decompose(g, cuda_whole_ops());
  if (!d) return std::nullopt;
  if (summary) *summary = r.summary;
  return std::move(*d);
}

}  // namespace kiln::pipeline
