#pragma once
// Kiln's own TORCH_TRACE log (KILN_TRACE=dir): the records PyTorch's
// trace_structured() writes for a Dynamo compile, in its format, so that
// `kiln-cli trace`, the workbench and tlparse read a Kiln run like a PyTorch
// one. One file per run, `dir/dedicated_log_kiln_rank_0_<time>_<pid>.log`;
// each record is a glog prefix, a JSON envelope carrying frame_id /
// frame_compile_id / attempt, and for some a payload of tab-indented lines
// whose md5 the envelope gives (torch/_logging/_internal.py).
//
// Records per compile, in the order PyTorch writes them:
//   recompile_reasons (artifact)  before dynamo_start, with the new compile id
//   dynamo_start                  the stack the frame was compiled from
//   dynamo_graph_break_reason     (artifact) at a break; attempt 0 when the break restarts analysis
//   dynamo_output_graph           print_readable text; metadata {"sizes": {...}}
//   dynamo_guards, dynamo_cpp_guards_str
//   compilation_metrics           ends the compile
// Filenames in stacks are interned through {"str": [file, id]} records.
//
// Every record is appended and flushed on its own, so a run that crashes
// leaves a log that reads up to the last complete record. A destination that
// cannot be written is a warning, never an error: the program runs untraced.
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/capture/capture.h"
#include "compiler/capture/guard.h"
#include "core/graph/graph.h"

namespace kiln::py {
struct Frame;
}

namespace kiln::capture {

// The compile a record belongs to, as the envelope spells it.
struct TraceCompileId {
  int frame_id = 0;
  int frame_compile_id = 0;
  int attempt = 0;  // 1 after Dynamo restarted its analysis (Kiln's "_1" suffix)
  std::string str() const;  // "0/1", without the attempt, as compilation_metrics.compile_id
};

// The frame being compiled: its code object's name, file and first line. For a
// resume frame, the name is "torch_dynamo_resume_in_f_at_N" and the line N.
struct CompiledFrame {
  std::string name;
  std::string file;
  int first_line = 0;
};

// What compilation_metrics says. Unset optionals are written as null, as
// PyTorch writes fields it did not measure.
struct CompileMetrics {
  TraceCompileId id;
  CompiledFrame frame;
  const Graph* graph = nullptr;   // the captured graph; null when none was made (no ops, failure)
  std::optional<int> guard_count;  // unset for a failed compile, which installs no guards
  int cache_size = 0;             // entries the frame's cache held before this compile
  int accumulated_cache_size = 0;
  std::vector<std::string> restart_reasons;      // the break that restarted analysis, reason and detail
  std::optional<std::string> recompile_reason;   // the first guard failure ("0/0: tensor 'x' ...")
  std::optional<std::string> fail_type, fail_reason, fail_user_frame_filename;
  std::optional<int> fail_user_frame_lineno;
  bool has_guarded_code = true;
  // Timings: when unset, taken from the clock between dynamo_start and compilation_metrics.
  std::optional<double> start_time_s;  // seconds since the epoch
  std::optional<double> entire_frame_compile_time_s;
  std::optional<double> dynamo_time_before_restart_s;
};

class TraceWriter {
 public:
  using WarningSink = std::function<void(const std::string&)>;  // one line, no newline; default: stderr

  // A writer for the log in `dir` (created if missing). Null, after one warning
  // naming the folder and why, when the folder or the file cannot be made.
  static std::unique_ptr<TraceWriter> open(const std::string& dir, WarningSink warn = {});
  // The same for $KILN_TRACE; null without a warning when it is unset or empty.
  static std::unique_ptr<TraceWriter> from_env(WarningSink warn = {});

  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  const std::string& path() const { return path_; }
  // False once a write failed (after its warning); later records are dropped.
  bool ok() const { return file_ != nullptr; }

  // `callers`: the frames that called the compiled one, outermost first (python_callers()).
  void dynamo_start(const TraceCompileId& id, const std::vector<StackFrame>& callers, const CompiledFrame& frame);
  void output_graph(const TraceCompileId& id, const Graph& graph);
  void guards(const TraceCompileId& id, const std::vector<Guard>& guards);
  // The break's own frame comes from `record`; `callers` are the frames above it.
  void graph_break(const TraceCompileId& id, const BreakRecord& record, const std::vector<StackFrame>& callers);
  // Guard failures of the cache entries, most recent first, each "0/1: why".
  void recompile_reasons(const TraceCompileId& id, const std::vector<std::string>& reasons);
  void compilation_metrics(const CompileMetrics& metrics);

 private:
  TraceWriter(std::string path, std::FILE* file, WarningSink warn);
  struct Pending {  // what dynamo_start saw, for compilation_metrics
    int64_t start_wall_us = 0, start_steady_us = 0, overhead_start_us = 0;
    std::vector<StackFrame> stack;  // callers, then the compiled frame
    int frame_key = 0;
  };

  // One record: the envelope {tag: metadata, ids..., "has_payload": md5} and the payload.
  void write_record(const char* site, const std::string& tag, const std::string& metadata_json, const TraceCompileId* id,
            const std::optional<std::string>& payload);
  std::string stack_json(const std::vector<StackFrame>& stack);  // writes str records for new filenames
  int intern(const std::string& filename);
  void fail(const std::string& why);

  std::string path_;
  std::FILE* file_ = nullptr;
  WarningSink warn_;
  bool wrote_ = false;
  std::map<std::string, int> strings_;
  std::map<std::pair<int, int>, Pending> pending_;
  int frame_key_ = 0;            // compiles started in this run (compilation_metrics.frame_key)
  int64_t overhead_us_ = 0;      // time spent writing records
  std::set<std::string> break_texts_;  // distinct breaks so far (num_graph_breaks)
};

// The Python frames above `frame` (its parent chain), outermost first, each at
// the line it is executing: the caller part of a dynamo_start or break stack.
std::vector<StackFrame> python_callers(const py::Frame& frame);

}  // namespace kiln::capture
