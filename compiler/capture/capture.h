#pragma once
// TorchDynamo for Kiln's interpreter. install_capture() gives a VM working
// torch.compile / torch._dynamo.{explain, reset, list_backends}: a call of a
// compiled function checks the guards of its cache entries, runs a captured
// graph on a hit, and on a miss traces the frame symbolically (fake tensors,
// guards on what the trace read) up to its end or to a graph break; at a break
// the graph so far runs, the breaking instruction runs eagerly, and capture
// resumes at the next instruction as its own frame with its own cache - the
// structure (frame ids, compile ids, resume frames, restarts) of Dynamo's.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/python/vm.h"

namespace kiln::capture {

// KILN_LOGS categories, as TORCH_LOGS names them.
struct LogConfig {
  bool graph_breaks = false, guards = false, recompiles = false, graph_code = false, dynamic = false;
  static LogConfig parse(std::string_view spec);  // "graph_breaks,recompiles,+dynamo"
};

struct RegionResult;
// How a backend runs a finished region on its inputs, returning the graph's
// outputs; a null function runs the torch-level graph with the eager kernels.
using RegionRunner = std::function<std::vector<py::Value>(const RegionResult&, const std::vector<py::Value>&)>;

struct CaptureOptions {
  std::string default_backend = "eager";
  LogConfig logs;
  std::string trace_dir;  // KILN_TRACE: write a TORCH_TRACE-format log there
  int cache_size_limit = 8;
  // As `torch._dynamo.reset(); torch._dynamo.explain(fn)(*args)` at each
  // callable's first call: that call sees only cache entries it made itself.
  bool explain_fresh_first_call = false;
  // torch.compile hands its argument back unchanged, as with
  // torch._dynamo.config.disable = True: the program runs in plain eager mode,
  // the reference every backend is compared with.
  bool disable_compile = false;
  // Makes the runner of one compiled entry for a torch.compile backend
  // ("aot_eager"); may return null. Kept outside capture so that capture does
  // not depend on the later stages.
  std::function<RegionRunner(const std::string& backend, const std::string& mode, const std::string& compile_id)>
      backend_runner;
};

struct BreakRecord {
  std::string reason;       // first line
  std::string explanation;  // detail lines
  std::string file;
  int line = 0;
  std::string function;
  std::string code;  // the source line
  std::vector<StackFrame> stack;  // the user frames at the break, outermost first
};

struct RecompileRecord {
  std::string compile_id;            // "0/1"
  std::string function;
  std::vector<std::string> reasons;  // "0/0: tensor 'x' size mismatch at index 0. expected 4, actual 6"
};

// What one compiled callable did, for `kiln-cli explain` and explain().
struct CallableReport {
  std::string name;
  std::vector<Graph> graphs;              // non-empty captured graphs, in compile order
  std::vector<BreakRecord> breaks;
  std::vector<std::vector<std::string>> guards;  // per compiled entry, guard texts
  std::vector<RecompileRecord> recompiles;
  int op_count() const;  // call_function nodes over all graphs, as torch._dynamo.explain counts
  // As torch._dynamo.explain counts them: one fewer than the graphs (-1 for a
  // callable that compiled none, as PyTorch 2.11 prints). A break with nothing
  // before it compiles no graph, so `breaks` may be shorter.
  int graph_break_count() const { return int(graphs.size()) - 1; }
};

// Hooks capture into `vm` (frame hook and the torch.compile family).
void install_capture(py::VM& vm, CaptureOptions options = {});

// Reports of every compiled callable the program called, in first-call order.
std::vector<CallableReport> capture_reports(py::VM& vm);

struct RegionResult;
// Every cache entry compiled so far with its compile id ("0/1"), in compile order:
// what the later stages (to_aten, autodiff, the stage view) start from.
std::vector<std::pair<std::string, const RegionResult*>> compiled_regions(py::VM& vm);

}  // namespace kiln::capture
