#pragma once
// What the workbench shows of one opened input, whatever it was: a Kiln
// program compiled here, or a PyTorch dump read by core/trace. Plain structs
// built on a worker (load_session) and then only read by the UI thread, so the
// views never touch the VM or the trace reader. Trace graphs are parsed on
// demand (stage_graph), also on a worker.
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph/graph.h"
#include "core/util/status.h"

namespace kiln {
class Workspace;
namespace trace {
class Trace;
}
namespace pipeline {
struct RegionInput;
struct Stage;
}
}  // namespace kiln

namespace kiln::session {

enum class StageKind { Graph, Code };

struct SessionStage {
  std::string name;     // "aot_forward_graph", "forward cse #6", "backward llvm_ir"
  std::string pass;     // the pass or step alone ("cse"); what the stepper and diff talk about
  std::string group;    // "", "forward", "backward": stages of one group form a provenance chain
  StageKind kind = StageKind::Graph;
  bool changed = true;  // false: the pass ran and left the graph as it was (no snapshot)
  double seconds = 0;
  std::string summary;
  std::string language;  // code stages: "llvm", "asm", "loopir", "python", "cuda"
  std::string text;      // code stages: the text
  // Graph stages of a program hold their graph; trace stages name their artifact
  // and are parsed on first use (stage_graph).
  std::shared_ptr<const Graph> graph;
  std::string artifact;
  // The stage whose nodes this one's NodeMeta::from names (-1: none): provenance
  // runs along these links, which form a tree (the joint graph feeds both halves).
  int parent = -1;
  int nodes = -1, ops = -1;  // -1 until known
  // Per node of `graph`: the fused group the scheduler puts it in (-1: none,
  // e.g. placeholders); empty when the stage was not scheduled.
  std::vector<int> fusion_groups;
};

struct SessionGuard {
  std::string kind;  // TENSOR_MATCH, ...
  std::string text;
  std::string source;  // the guarded value: "L['x']"
  std::string file;    // the user line that made it
  int line = 0;
  // TENSOR_MATCH: what the input signature check compares.
  std::string dtype;
  std::vector<int64_t> sizes;
  std::vector<bool> dynamic;
};

struct SessionBreak {
  std::string reason;
  std::string detail;
  std::string file;
  int line = 0;
  std::string code;
};

enum class CompileStatus { Ok, GraphBreak, Recompile, Failed };
const char* compile_status_name(CompileStatus s);

struct SessionCompile {
  std::string id;     // "0/1", "0/0_1"; for traces the entry label
  std::string frame;  // "0": the frame part of the id ("r1:0" in a multi-rank trace)
  std::string rank;   // "rank 1" in a trace with ranks, else 
  std::string function, file;
  int line = 0;
  CompileStatus status = CompileStatus::Ok;
  std::string status_note;  // "graph break: ...", "recompile: ...", the failure
  std::vector<SessionStage> stages;
  std::vector<SessionGuard> guards;
  std::vector<SessionBreak> breaks;
  std::vector<std::string> recompile_reasons;
  // Dumps: the values the compile made dynamic (a scalar input no
  // EQUALS_MATCH guard says, a dynamic size), from its create_symbol records,
  // by source ("L['scale']" -> "3.0", "L['x'].size()[0]" -> "6"): the call's
  // values, where the input signature check starts.
  std::map<std::string, std::string> input_values;
  double compile_seconds = 0;
  const SessionStage* stage(std::string_view name) const;
  int stage_index(std::string_view name) const;
  void diagnostics_note(const std::string& group, const std::string& message);
};

struct SourceLine {
  int line = 0;
  std::string code;
};

struct Session {
  enum class Kind { Program, Trace } kind = Kind::Program;
  std::string path;
  std::string title;             // file name
  std::string source_file;       // the program (or the traced user file)
  std::string source_text;       // empty when the file is not here (a dump from another machine)
  std::vector<SourceLine> known_lines;  // traces without the file: the lines the dump quotes
  // Dumps: the lines the graphs' `# File: path:LINE in fn, code: ...` comments
  // quote, for every file they name (a model's library file as well as the
  // user's), so a node's line shows even when it is not in source_file.
  std::map<std::string, std::vector<SourceLine>> quoted_lines;
  std::vector<SessionCompile> compiles;
  std::vector<std::string> diagnostics;
  std::string program_output;
  double load_seconds = 0;
  bool from_store = false;  // a trace index reopened from the workspace
  std::shared_ptr<const trace::Trace> trace;  // traces: where stage graphs are parsed from
  std::vector<std::string> frames() const;   // distinct frame ids in first-seen order
  std::vector<std::string> ranks() const;    // distinct SessionCompile::rank in first-seen order ("" included)
  const SessionCompile* find(std::string_view id) const;
};

struct LoadOptions {
  std::function<void(double, const std::string&)> progress;  // fraction, what is happening
  const std::atomic<bool>* cancel = nullptr;
  Workspace* workspace = nullptr;  // traces: reopen from a stored index
  bool codegen = true;             // programs: generate code (LLVM IR, assembly) for every region
  // Programs: how joint graphs split into forward and backward, "default" or
  // "min-cut" (kiln-cli stages --partitioner).
  std::string partitioner = "default";
  // Programs: seconds before TimeoutError (0: none) and the folders they may
  // read / write files in (none by default), as kiln-cli's flags (docs/limits.md).
  double time_limit_s = 0;
  std::vector<std::string> allow_read, allow_write;
  // Traces: also Kiln's pipeline from each compile's ATen graph (trace_stages.h).
  // The workbench shows PyTorch's stages first and adds Kiln's on a second
  // worker job (with_kiln_stages), so a big trace opens at once.
  bool kiln_stages = true;
  // Programs: the program's text, as soon as it is read, before it runs (a
  // view can show it while the program runs and compiles).
  std::function<void(const std::string& text)> source_ready;
};

// A program (.py that is not a PyTorch repro), a Kiln repro, or anything open_trace reads.
Expected<std::shared_ptr<Session>> load_session(const std::string& path, const LoadOptions& options = {});
Expected<std::shared_ptr<Session>> load_program(const std::string& path, const LoadOptions& options = {});
Expected<std::shared_ptr<Session>> load_trace(const std::string& path, const LoadOptions& options = {});
// A Kiln repro (what kiln-cli minify writes: a folder with graph.txt, or its
// .zip): the graph, then Kiln's graph passes and code generator on it, as for
// a program's region (session_repro.cpp).
bool is_kiln_repro(const std::string& path);
Expected<std::shared_ptr<Session>> load_kiln_repro(const std::string& path, const LoadOptions& options = {});
// Before the names of Kiln's stages in a dump's compile, which stand beside
// PyTorch's own ("kiln aot_forward_graph", "kiln forward cse #6").
inline constexpr std::string_view kKilnStagePrefix = "kiln ";

// How a region's stages are named and reported. Kiln's stages of a dump sit
// beside PyTorch's own and carry a prefix ("kiln forward cse #6"); a failure of
// Kiln's pipeline there is noted, and the compile keeps the status PyTorch gave it.
struct RegionStageNaming {
  std::string prefix;       // before every stage name and group: "kiln "
  bool sets_status = true;  // a failed step marks the compile failed
  std::function<std::string(const pipeline::Stage&)> extra_note;  // appended to a stage's summary
};

// Shared by the loaders: run_region() on `input` (compiler/pipeline/run_region.h),
// its stages appended to `c`; provenance of the first graph stage starts at
// stage `start` (-1: none). Failures go to c's status, code left out to its note.
// `progress` hears how far the region has got (region_progress.h), on [0, 1].
void add_region_stages(SessionCompile& c, pipeline::RegionInput input, int start, const LoadOptions& o,
                       const RegionStageNaming& naming = {},
                       const std::function<void(double, const std::string&)>& progress = {});

// A trace session loaded without Kiln's stages, with them: a new session
// (the trace and PyTorch's stages shared), each compile's Kiln stages after
// its own, as load_trace adds them. "cancelled" when o.cancel is set.
Expected<std::shared_ptr<Session>> with_kiln_stages(const Session& s, const LoadOptions& o);

// A PyTorch minifier file (repro.py, minifier_launcher.py): a .py file with a
// `class Repro`. It opens as a dump, not as a program.
bool is_pytorch_repro_file(const std::string& path);

// A stage's graph: the program's snapshot, or the trace artifact parsed (cached
// by the trace). Null with an error for code stages and unparsable payloads.
// Safe to call from one worker at a time.
Expected<std::shared_ptr<const Graph>> stage_graph(const Session& s, const SessionCompile& c, const SessionStage& st);

// The graph the numerics ladder measures for a stage: its own graph, except
// a dump stage whose placeholders are not all tensors of known sizes (a
// dynamic-shape repro's SymInts, a Dynamo graph's torch calls): then the
// graph as `kiln-cli repro run` replays it (minifier/repro.h), and `note`
// says so.
Expected<std::shared_ptr<const Graph>> numerics_graph(const Session& s, const SessionCompile& c, const SessionStage& st,
                                                      std::string* note);

}  // namespace kiln::session
