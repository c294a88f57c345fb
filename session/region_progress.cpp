#include "session/region_progress.h"

#include <algorithm>

namespace kiln::session {

namespace {

struct StepInfo {
  const char* name;
  double at;  // where the step starts: in the region (before the graphs) or in its graph's share
  const char* what;
};

// Before the graphs split: the region's first tenth.
constexpr StepInfo kRegionSteps[] = {
    {"to_aten", 0.02, "lowering to ATen"},
    {"aot_joint_graph", 0.05, "building the joint graph"},
    {"partition", 0.08, "partitioning forward and backward"},
};

// Each graph (the inference graph, or one half): measured on resnet18_train.py.
constexpr StepInfo kGraphSteps[] = {
    {"passes", 0.0, "graph passes"},
    {"lower", 0.08, "lowering to loops and fusing"},
    {"llvm_ir", 0.12, "emitting LLVM IR"},
    {"optimize", 0.16, "optimizing LLVM IR"},
    {"assembly", 0.5, "emitting assembly"},
    {"object", 0.72, "emitting object code"},
    {"link", 0.92, "linking"},
    {"cuda_source", 0.95, "generating CUDA source"},
};

}  // namespace

void RegionProgress::step(const std::string& group, const std::string& name) {
  for (const StepInfo& s : kRegionSteps)
    if (name == s.name) {
      fraction = std::max(fraction, s.at);
      what = s.what;
      return;
    }
  // The inference graph takes the rest of the region; a half takes half of it.
  const double base = group == "backward" ? 0.55 : 0.1;
  const double span = group == "forward" || group == "backward" ? 0.45 : 0.9;
  for (const StepInfo& s : kGraphSteps)
    if (name == s.name) {
      fraction = std::max(fraction, base + span * s.at);
      what = group.empty() ? std::string(s.what) : group + ": " + s.what;
      return;
    }
  what = group.empty() ? name : group + ": " + name;  // a step this table does not know: named, not placed
}

}  // namespace kiln::session
