#pragma once
// How far one region's pipeline has got, for a progress bar: run_region's
// steps as they begin (pipeline::RegionOptions::on_step) placed on [0, 1] by
// what they usually cost. LLVM's optimization and code emission are most of
// a compile (ResNet-18's training step: 4 of its 5 seconds), so they get most
// of the bar; a training region's two halves get half each. Tests:
// tests/session/test_region_progress.cpp.
#include <string>

namespace kiln::session {

struct RegionProgress {
  double fraction = 0;  // never goes back
  std::string what;     // the step under way: "forward: optimizing LLVM IR"
  // A step of `group` ("", "forward", "backward") begins.
  void step(const std::string& group, const std::string& name);
};

}  // namespace kiln::session
