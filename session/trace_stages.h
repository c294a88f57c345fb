#pragma once
// A PyTorch dump's compile as a list of stages: PyTorch's own (every graph and
// code artifact the dump has, named as the log names them), then Kiln's
// pipeline from the best ATen graph of the dump (its stages named "kiln ...",
// beside PyTorch's). load_trace builds the workbench's list with it and
// `kiln-cli stages TRACE` prints the same list, so both show the same stages
// under the same names (tests/session/test_stage_lists.cpp).
//
// Which graph Kiln starts from: Kiln lowers torch-level graphs to ATen only
// while it runs the program (the lowering replays the region on real inputs),
// so from a dump it starts at the ATen level, with the best graph there is:
//   1. aot_joint_graph (training): Kiln's partitioner splits it, so Kiln's
//      forward and backward stand next to PyTorch's;
//   2. else aot_forward_graph and aot_backward_graph, as PyTorch split them;
//   3. else aot_inference_graph;
//   4. else every fx_graph_readable (TORCH_COMPILE_DEBUG folders: the graph
//      Inductor was handed);
//   5. else a minifier file's graph;
//   6. else the first of its graphs, in log order, that is ATen-level (an
//      exported program, a post-grad graph of an AOTInductor or cache-hit log).
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/pipeline/run_region.h"
#include "session/session.h"

namespace kiln::trace {
class Trace;
struct CompileEntry;
struct Artifact;
}  // namespace kiln::trace

namespace kiln::session {

// Whether load_trace lists the compile id: one with only timings is not.
bool listed_entry(const trace::CompileEntry& e);

// PyTorch's stages of `e`, appended to c.stages: graph stages sized from their
// text (parsed when shown) and code stages with their text; the guards of a
// dynamo_cpp_guards_str go to c.guards. `graph_text`, when given, sees each
// graph payload's text as it is read (the loader takes its quoted lines).
void add_dump_stages(SessionCompile& c, const trace::Trace& t, const trace::CompileEntry& e,
                     const std::function<void(std::string_view)>& graph_text = {});

// "log:LINE" of an artifact's record.
std::string record_place(const trace::Trace& t, const trace::Artifact& a);

// One graph of the dump that Kiln's pipeline runs from.
struct KilnRun {
  std::string artifact;  // the dump's stage it starts from
  std::string where;     // its record, "log:LINE"
  std::optional<pipeline::RegionInput> input;  // absent: Kiln's pipeline does not run from it (`note` says why)
  std::string note;         // said on the dump's stage: where Kiln starts, or why it does not
  std::string problem;      // the graph does not parse: the reader's message (bad input)
  std::string unknown_ops;  // ops the registry lacks, kept as opaque nodes: "aten::foo.default (node foo), ..."
};

struct KilnPlan {
  std::vector<KilnRun> runs;
  // A compile that has graphs, none of them ATen-level: why Kiln's pipeline does not run.
  std::string no_aten_graph;
};

// The default choice (file comment), or the dump's stage `stage` when given.
KilnPlan plan_kiln_runs(const trace::Trace& t, const trace::CompileEntry& e, const std::string& stage,
                        pipeline::Partitioner partitioner);

// "; PyTorch's: 8 nodes, 4 ops" for Kiln's forward or backward half when
// `dump` (PyTorch's stages, add_dump_stages) has PyTorch's own; else "".
std::string pytorch_split_note(const SessionCompile& dump, const pipeline::Stage& s);

}  // namespace kiln::session
