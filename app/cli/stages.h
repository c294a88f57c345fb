#pragma once
// Shared by the two halves of `kiln-cli stages`: stages_command.cpp (programs
// and graph files) and stages_trace.cpp (TORCH_TRACE logs and debug folders).
#include <functional>
#include <string>
#include <vector>

#include "app/cli/program_limits.h"
#include "compiler/pipeline/run_region.h"
#include "core/graph/graph.h"

namespace kiln::cli {

struct StagesOptions {
  std::string input;
  ProgramLimits limits;  // a program's time and memory (run on .py input)
  bool print_after_all = false;
  std::vector<std::string> print_after;
  int stop_after = -1;
  std::string partitioner = "default";
  std::string compile_id;  // traces only: one compile id instead of all
  std::string stage;       // traces only: this stage instead of the best ATen graph
  // Programs must generate code; a graph from a dump (symbolic sizes, ops
  // Kiln lacks) may not, and then only says why.
  bool codegen_required = false;
  // Machine code (LLVM IR, assembly): "always", "never", or "auto": when the
  // scheduled program has at most kAutoCodegenKernels kernels or a machine
  // code stage is asked for by name.
  std::string codegen = "auto";
  // "cuda": the region trains as on the GPU (attention fused before autodiff, RegionOptions::gpu_training).
  std::string target = "cpu";
};

// LLVM spends about 10 ms per fused kernel at -O3 on this machine (2.5 s for
// the 222 kernels of a 2,000-node chain of diamonds): past this many, `stages`
// shows the loop IR and leaves machine code to --codegen always.
constexpr size_t kAutoCodegenKernels = 500;

bool wants_graph(const StagesOptions& o, const std::string& stage);

// "=== <prefix><label>  <time>  <note>", then the graph when --print-after asks
// for `name`. `label` is what the header shows ("cse #4"); `name` is what
// --print-after matches ("cse").
void print_stage(const StagesOptions& o, const std::string& prefix, const std::string& label, const std::string& name,
                 double seconds, const Graph* g, const std::string& note);

// "5 nodes, 3 ops": every node, and the call nodes among them (as `trace summary` counts).
using pipeline::describe_size;

// Prints run_region()'s stages as `kiln-cli stages` shows them: "=== <prefix><label>
// <time>  <note>", graphs and texts as --print-after asks. failed() once a step
// failed that makes the command fail (its message is on stderr, after `where`).
class StagePrinter {
 public:
  StagePrinter(const StagesOptions& o, std::string prefix, std::string where)
      : o_(o), prefix_(std::move(prefix)), where_(std::move(where)) {}
  void operator()(const pipeline::Stage& s);
  void passes_done(const std::string& group, const std::string& input_size, const pipeline::CompileResult& after);
  bool failed() const { return failed_; }
  // Appended to a graph stage's note (a trace: PyTorch's own graph's size).
  std::function<std::string(const pipeline::Stage&)> extra_note;

 private:
  const StagesOptions& o_;
  std::string prefix_, where_;
  bool failed_ = false;
};

pipeline::RegionOptions region_options(const StagesOptions& o);

// run_region() on `input`, printed; false when a step failed (see StagePrinter).
bool print_region(const StagesOptions& o, const std::string& prefix, pipeline::RegionInput input, const std::string& where = "",
                  const std::function<std::string(const pipeline::Stage&)>& extra_note = {});

// INPUT is a trace (stages_trace.cpp); returns the exit code.
int stages_of_trace(const StagesOptions& o);

}  // namespace kiln::cli
