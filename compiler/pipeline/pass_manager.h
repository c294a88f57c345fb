#pragma once
// Runs passes over a graph and owns all the instrumentation, as MLIR's
// PassManager does: a Stage snapshot after each pass application that changed
// something ("unchanged" is recorded without a snapshot), time per pass,
// verification after each pass (structure, the pass's own change flag against
// the structural hash, and node provenance), printing after all or after named
// passes, and stopping after the first N applications to bisect a miscompile
// to one pass application. Passes themselves never print, time or verify.
//
// Tests: tests/compiler/test_pass_manager.cpp.
#include <atomic>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/pipeline/pass.h"
#include "core/graph/graph.h"
#include "core/util/status.h"

namespace kiln::pipeline {

enum class StageKind { Graph, Code };

// One step of the pipeline as the stage views show it: a graph pass, or any
// other step of run_region() (run_region.h): to_aten, the joint graph, the
// partition, lowering, scheduling, code generation. The one stage type the
// CLI, the workbench and the tests read.
struct Stage {
  std::string name;                    // the step ("cse", "aot_joint_graph", "llvm_ir"), or "input"
  std::string group;                   // "", "forward", "backward": which half of a training region
  StageKind kind = StageKind::Graph;
  int application = 0;                 // 1-based count of pass applications; 0 for stages no pass made
  bool changed = false;                // false: "unchanged", no snapshot
  std::shared_ptr<const Graph> graph;  // the snapshot after this step; null when unchanged
  // Code stages: loop IR, LLVM IR, assembly, CUDA source (when kept);
  // aot_forward_graph: the saved tensors, one per line.
  std::string text;
  std::string language;                // code stages: "loopir", "llvm", "asm", "cuda"
  double seconds = 0;
  std::string summary;                 // the step's one line: "removed 4 nodes"
  std::vector<std::string> problems;   // what verification found wrong after this step
  // A step that did not run: why (a region with no joint graph, machine
  // code left out), or how it failed. Such a stage has no graph and no text.
  enum class Outcome { Done, Skipped, Failed } outcome = Outcome::Done;
  // "forward cse #6", "backward llvm_ir", "aot_joint_graph": what views and
  // --print-after headers show.
  std::string label() const;
};

#ifdef NDEBUG
inline constexpr bool kVerifyByDefault = false;
#else
inline constexpr bool kVerifyByDefault = true;
#endif

struct PassManagerOptions {
  // After every pass: verify() the graph, check the pass's "changed" flag
  // against the structural hash, and check provenance against the previous stage.
  bool verify_each = kVerifyByDefault;
  bool print_after_all = false;
  std::vector<std::string> print_after;  // pass names
  bool print_only_on_change = false;     // skip printing for "unchanged" applications
  // Run only the first N pass applications (counted over every run() of this
  // manager); negative: all of them.
  int stop_after = -1;
  std::ostream* print_to = nullptr;  // where printing goes; null: std::cerr
  // Checked before each pass application: once set, run() stops with "cancelled".
  const std::atomic<bool>* cancel = nullptr;
  // Called with each stage as it is recorded (run_region's observers see
  // passes as they finish, not when the pipeline ends).
  std::function<void(const Stage&)> on_stage;
};

class PassManager {
 public:
  explicit PassManager(PassManagerOptions options = {});

  void add(const Pass& pass) { passes_.push_back(pass); }
  // A pass of pass_registry() by name; an error listing the known names otherwise.
  Status add(std::string_view name);
  const std::vector<Pass>& passes() const { return passes_; }

  // Records `g` as a stage that no pass made (the pipeline's input, a graph
  // another stage produced).
  void record(std::string name, const Graph& g);
  // Runs the passes in order on `g`. An error (a pass threw, or verification
  // failed) stops the run; the failing stage is recorded with its graph and
  // problems, and `g` is left as the last good stage.
  Status run(Graph& g, const PassContext& ctx = {});

  const std::vector<Stage>& stages() const { return stages_; }
  std::vector<Stage> take_stages() { return std::move(stages_); }
  int applications() const { return applications_; }
  // True once stop_after kept a pass from running.
  bool stopped() const { return stopped_; }

 private:
  Status apply(const Pass& pass, std::shared_ptr<const Graph>& current, const PassContext& ctx);
  void print(const Stage& stage);

  PassManagerOptions options_;
  std::vector<Pass> passes_;
  std::vector<Stage> stages_;
  int applications_ = 0;
  bool stopped_ = false;
};

// Every pass Kiln has, in the order of compiler/passes/passes.def.
const std::vector<Pass>& pass_registry();
const Pass* find_pass(std::string_view name);

}  // namespace kiln::pipeline
