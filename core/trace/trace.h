#pragma once
// The model of a real PyTorch compile dump: a TORCH_TRACE log (file or folder
// of per-rank logs), a TORCH_COMPILE_DEBUG folder or a minifier repro file.
//
// A dump is a list of compile entries. For TORCH_TRACE, one entry is one
// compilation of one frame: compile id "frame/frame_compile" (with
// "!N/" in front for compiled autograd), the attempt (Dynamo restarts its
// analysis after some graph breaks; records of every attempt land in the same
// entry and `attempt` is the last one), the stack it was compiled from, each
// stage payload, guards, graph breaks, recompile reasons, metrics, symbolic
// shape events and chromium timings. Compile ids repeat (after
// torch._dynamo.reset(), and in every file of a multi-process folder), so each
// entry also has an occurrence number and a unique label: "0/0", then "0/0#2".
// Records without a compile id (torch.export, repro runs) go to an entry
// labelled "unknown". A stage logged twice in one entry is named "name#2" the
// second time: in training, Inductor compiles the backward graph under the
// forward's compile id, so "inductor_post_grad_graph#2" is the backward's.
//
// A TORCH_COMPILE_DEBUG folder gives one entry per AOT compile ("model__0",
// its forward and backward graph folders together, stages named after the
// files: fx_graph_readable, fx_graph_transformed, ir_pre_fusion,
// ir_post_fusion, output_code, fx_graph_runnable). A minifier file gives one
// entry named after the file, with the Repro class as the stage "repro" and
// its load_args() as the inputs.
//
// Payloads are not parsed by the index: an Artifact holds where its text lies
// (file, byte range, first line) and the text is read on demand.
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/status.h"

namespace kiln {
struct Graph;
}

namespace kiln::trace {

class FileData;
struct TraceCache;

// One thing in the input that could not be read. The reader keeps going.
struct Diagnostic {
  std::string file;
  int line = 0;
  std::string message;
};

enum class PayloadEncoding : uint8_t {
  TabIndented,  // TORCH_TRACE payload lines: each starts with a tab that is not part of the text
  Plain,        // bytes taken as they are (debug-folder files, repro sources, envelope values)
};

// Where a payload's text lies in one of the trace's files.
struct PayloadRef {
  uint32_t file = 0;     // index into Trace::files
  uint64_t offset = 0;   // first byte
  uint64_t length = 0;   // bytes spanned
  int first_line = 0;    // 1-based line of the first byte in its file
  int line_count = 0;
  PayloadEncoding encoding = PayloadEncoding::TabIndented;
};

struct CompileId {
  std::optional<int64_t> compiled_autograd_id;
  std::optional<int64_t> frame_id;
  std::optional<int64_t> frame_compile_id;

  bool known() const { return frame_id || compiled_autograd_id; }
  // PyTorch's spelling: "0/1", "!2/0/1" (compiled autograd), "!2"; "unknown" when absent.
  std::string str() const;
  bool operator==(const CompileId&) const = default;
};

// tlparse's spelling with the attempt: "[0/1]", "[0/1_1]", "[!2/0/1]".
std::string display_id(const CompileId& id, int attempt);

struct StackFrame {
  std::string file;
  int line = 0;
  std::string function;
  std::string code;  // the source line, when the log has it
};

// One payload-carrying record: a stage graph, an artifact, guards, output code.
struct Artifact {
  std::string name;      // unique in its entry: "aot_forward_graph", "inductor_post_grad_graph#2"
  std::string base;      // the record's own name: "inductor_post_grad_graph"
  std::string tag;       // the envelope tag: "artifact", "aot_forward_graph", ...
  std::string encoding;  // "string" or "json" for artifact records, else empty
  std::string filename;  // inductor_output_code: the generated module's path
  int attempt = 0;
  int line = 0;          // the record's line in its file
  PayloadRef payload;
  // The payload is an FX graph (print_readable text, an ExportedProgram, a
  // repro's Repro module), whatever the record is called: PyTorch versions
  // name the same graph differently (inductor_post_grad_graph,
  // after_post_grad_graph, before_recompile_*), so the text decides.
  bool graph = false;
};

struct GraphBreak {
  std::string reason;  // the one-line kind of break ("Data-dependent branching")
  std::string detail;  // the reason as Dynamo wrote it, hints included
  std::string file;    // the user line that broke the graph
  int line = 0;
  std::vector<StackFrame> user_stack;
  int record_line = 0;   // where the log says it
  bool failure = false;  // a failed compile (compilation_metrics.fail_type), not a break record
};

// compilation_metrics: the fields Kiln reads; the whole JSON is kept by reference.
struct CompilationMetrics {
  std::string compile_id, co_name, co_filename;
  std::optional<int64_t> co_firstlineno, cache_size, accumulated_cache_size, guard_count,
      shape_env_guard_count, graph_op_count, graph_node_count, graph_input_count,
      fail_user_frame_lineno;
  std::optional<double> start_time, entire_frame_compile_time_s, backend_compile_time_s,
      inductor_compile_time_s, code_gen_time_s, dynamo_time_before_restart_s;
  std::optional<std::string> fail_type, fail_reason, fail_user_frame_filename;
  std::vector<std::string> restart_reasons;
  int line = 0;
  PayloadRef json;  // the metrics object, Plain
};

// bwd_compilation_metrics, compilation_metrics_runtime and the like.
struct OtherMetrics {
  std::string tag;
  int line = 0;
  PayloadRef json;
};

// create_symbol, guard_added_fast, symbolic_shape_specialization, ...
struct ShapeEvent {
  std::string kind;
  std::string symbol, value, range, source, expr, reason;
  std::string user_file;  // innermost frame of its user stack
  int user_line = 0;
  int line = 0;
  // guard_added: "eval" when export evaluated the guard (a failure of
  // torch.export, as tlparse counts it); where each symbol comes from
  // ("s0" -> "L['x'].size()[0]"), from symbol_to_sources or frame_locals.
  std::string prefix;
  std::vector<std::pair<std::string, std::string>> symbol_sources;
  std::vector<StackFrame> user_stack;  // outermost first
  // expression_created: the method, its arguments; `value` is the result.
  std::string method;
  std::vector<std::string> arguments;
};

// One input of a repro's load_args(): `reader.tensor(buf0, (8, 16), ...)` or
// `reader.symint(6)`. Sizes are kept as text because they may be symbolic ("s77").
struct ReproInput {
  std::string name;  // from the trailing comment: "primals_1"
  std::string kind;  // "tensor", "symint", "const"
  std::vector<std::string> shape, stride;
  std::string dtype = "float32";
  std::string device = "cpu";
  std::string storage_offset = "0";
  bool requires_grad = false;
  bool is_leaf = false;
  std::string storage;        // "buf0"
  std::string storage_bytes;  // may be an expression: "32*s77"
  std::string storage_hash;   // empty when the repro has no saved data
  std::string value;          // symint value
  int line = 0;
};

struct ChromiumEvent {
  std::string name, phase, category;  // phase: "B", "E", "X", "i"
  double ts_us = 0;
  std::optional<double> dur_us;
  std::string fn_name;  // args.fn_name when present
  int line = 0;
};

struct CompileEntry {
  CompileId id;
  int attempt = 0;     // the last attempt seen
  int occurrence = 1;  // this is the n-th entry with the same id
  std::string label;   // unique in the trace: "0/0", "0/0#2", "unknown", "model__0", "repro"
  uint32_t file = 0;   // file of its first record
  std::optional<int64_t> rank;
  int first_line = 0;
  bool started = false;  // saw dynamo_start
  std::vector<StackFrame> stack;  // dynamo_start: outermost frame first, compiled frame last
  std::vector<Artifact> artifacts;
  std::vector<GraphBreak> graph_breaks;
  std::vector<std::string> recompile_reasons;
  std::optional<CompilationMetrics> metrics;
  std::vector<OtherMetrics> other_metrics;
  std::vector<ShapeEvent> shape_events;
  std::vector<PayloadRef> chromium_events;
  std::vector<ReproInput> inputs;  // repro files and debug folders
  std::map<std::string, int64_t, std::less<>> tag_counts;

  const Artifact* artifact(std::string_view name) const;
  // The compiled function and where it starts: the innermost dynamo_start
  // frame, else compilation_metrics.
  std::string function() const;
  std::string function_file() const;
  int function_line() const;
};

enum class TraceKind : uint8_t { TraceLog, CompileDebug, Minifier };

struct SourceFile {
  std::string path;
  uint64_t size = 0;
  // The rank its name gives (dedicated_log_torch_trace_rank_3_x.log): it
  // decides the rank of the file's compiles, as tlparse's multi-rank view does.
  std::optional<int64_t> rank;
};

// "dedicated_log_torch_trace_rank_<N>[_suffix].log" -> N; else none.
std::optional<int64_t> rank_of_log_name(std::string_view file_name);

// "r1:" of a label in a multi-rank trace ("r1:0/0#2"), else "".
std::string_view rank_part(std::string_view label);

// Reading options for the long-running readers (a 100 MB log takes a moment).
struct ReadOptions {
  std::function<void(double)> progress;     // fraction done, 0..1; called every few megabytes
  const std::atomic<bool>* cancel = nullptr;  // polled as often; when set the read stops with an error
};

class Trace {
 public:
  Trace();
  TraceKind kind = TraceKind::TraceLog;
  std::string path;  // what was opened
  std::vector<SourceFile> files;
  std::vector<CompileEntry> entries;
  std::vector<Diagnostic> diagnostics;
  std::map<std::string, int64_t, std::less<>> tag_counts;      // every envelope tag seen
  std::map<std::string, int64_t, std::less<>> unknown_tags;    // the tags Kiln does not model
  // Chromium events with no compile id (a whole-run phase): timings of the
  // trace, not a compile of their own.
  std::vector<PayloadRef> run_chromium_events;
  int64_t records = 0;
  uint64_t bytes = 0;

  // By label ("0/0#2"), then by plain id ("0/0": its first occurrence).
  const CompileEntry* find(std::string_view id) const;

  // The text a payload reference points at (tabs removed for TORCH_TRACE payloads).
  Expected<std::string> text(const PayloadRef& ref) const;
  // The payload of a stage or artifact of an entry; the error names what exists.
  Expected<std::string> payload_text(const CompileEntry& entry, std::string_view stage) const;
  // The compilation_metrics object as JSON text ("" without metrics).
  std::string metrics_json(const CompileEntry& entry) const;
  std::vector<ChromiumEvent> chromium_events(const CompileEntry& entry) const;

  // A stage's payload parsed into Kiln's graph IR (core/graph), parsed on the
  // first call and cached (errors too); the graph is shared, not copied.
  // Errors name the log file and the payload's line there.
  Expected<std::shared_ptr<const Graph>> graph(const CompileEntry& entry, std::string_view stage) const;

  // Readers hand over the file contents they already hold, so reading a payload
  // right after indexing does not map the file again.
  void keep_file_data(uint32_t file, std::shared_ptr<const FileData> data);

 private:
  Expected<std::shared_ptr<const FileData>> file_data(uint32_t file) const;
  std::shared_ptr<TraceCache> cache_;
};

// Whether a payload's opening text (its first few kilobytes; TORCH_TRACE's
// leading tabs allowed) is an FX graph Kiln's graph parser reads: a line
// `class NAME(torch.nn.Module):` (print_readable, a repro's Repro class, after
// imports and comments) or `ExportedProgram:`.
bool looks_like_fx_graph(std::string_view head);

// Where a dumped stage sits in PyTorch's pipeline, from its name in any
// PyTorch version, so stages can be lined up across versions.
enum class StageRole : uint8_t { Other, Dynamo, PreGrad, Joint, Forward, Backward, Inference, PostGrad, OutputCode, Export, Repro };
StageRole stage_role(std::string_view base_name);
const char* stage_role_name(StageRole role);

}  // namespace kiln::trace
