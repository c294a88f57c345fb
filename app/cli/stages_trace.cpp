// `kiln-cli stages TRACE [--compile-id ID] [--stage S]`: the stages of a
// TORCH_TRACE log (file or folder), a TORCH_COMPILE_DEBUG folder or a PyTorch
// minifier file, as the workbench lists them (session/trace_stages.h): per
// compile id, PyTorch's own stages from the dump ("from the trace"), then
// Kiln's pipeline from the dump's best ATen graph ("kiln ..." stages).
// --stage starts Kiln's pipeline from another of the dump's graphs.
//
// Damage stays local: a graph that does not parse is reported with its file
// and line and the other graphs go on. Exit: 3 when the trace cannot be read,
// the compile id or stage asked for is missing, nothing in it has a graph, or
// a graph Kiln starts from does not parse; else 1 when Kiln's pipeline failed
// on a graph; else 0.
#include <algorithm>
#include <cstdio>

#include "app/cli/commands.h"
#include "app/cli/stages.h"
#include "core/graph/printer.h"
#include "core/trace/reader.h"
#include "core/trace/trace.h"
#include "session/trace_stages.h"

namespace kiln::cli {
namespace {

using trace::Artifact;
using trace::CompileEntry;
using trace::Trace;

bool has_graph(const CompileEntry& e) {
  return std::any_of(e.artifacts.begin(), e.artifacts.end(), [](const Artifact& a) { return a.graph; });
}

std::string graph_stage_list(const CompileEntry& e) {
  std::string s;
  for (const Artifact& a : e.artifacts)
    if (a.graph) s += (s.empty() ? "" : ", ") + a.name;
  return s.empty() ? "no graph stages" : s;
}

bool text_asked(const StagesOptions& o, const std::string& stage) {
  return o.print_after_all || std::find(o.print_after.begin(), o.print_after.end(), stage) != o.print_after.end();
}

// One compile id: PyTorch's stages, then Kiln's. Returns false when a step of
// Kiln's pipeline failed; sets `bad_input` when a graph Kiln starts from does
// not parse.
bool print_entry(const StagesOptions& o, const Trace& t, const CompileEntry& e, pipeline::Partitioner partitioner, bool& bad_input) {
  const std::string prefix = "[" + e.label + "] ";
  session::KilnPlan plan = session::plan_kiln_runs(t, e, o.stage, partitioner);
  session::SessionCompile c;
  c.id = e.label;
  session::add_dump_stages(c, t, e);
  for (const session::SessionStage& st : c.stages) {
    const Artifact* a = e.artifact(st.artifact);
    std::string note = "from the trace: ";
    if (st.kind == session::StageKind::Code) note += st.summary;
    else note += std::to_string(st.nodes) + " nodes, " + std::to_string(st.ops) + " ops";
    if (a) note += " (" + session::record_place(t, *a) + ")";
    for (const session::KilnRun& run : plan.runs)
      if (run.artifact == st.artifact) note += "; " + run.note;
    std::printf("=== %s%s  %s\n", prefix.c_str(), st.name.c_str(), note.c_str());
    if (st.kind == session::StageKind::Code) {
      if (text_asked(o, st.pass)) std::printf("%s\n", st.text.c_str());
    } else if (wants_graph(o, st.pass)) {
      Expected<std::shared_ptr<const Graph>> g = t.graph(e, st.artifact);
      if (g) std::printf("%s\n", print_graph_module(**g).c_str());
      else std::printf("(does not parse: %s)\n", g.status().to_string().c_str());
    }
  }
  const std::string kiln_prefix = prefix + std::string(session::kKilnStagePrefix);
  if (!plan.no_aten_graph.empty()) std::printf("=== %sto_aten  skipped: %s\n", kiln_prefix.c_str(), plan.no_aten_graph.c_str());
  bool ok = true;
  for (session::KilnRun& run : plan.runs) {
    const std::string where = run.where + ": [" + e.label + "] " + run.artifact;
    if (!run.problem.empty()) {
      std::fprintf(stderr, "kiln-cli: stages: %s: %s\n", where.c_str(), run.problem.c_str());
      bad_input = true;
    }
    if (!run.unknown_ops.empty())
      std::fprintf(stderr, "kiln-cli: stages: %s: ops Kiln's registry does not have, kept as opaque nodes: %s\n", where.c_str(),
                   run.unknown_ops.c_str());
    if (!run.input) continue;
    auto pytorch = [&](const pipeline::Stage& s) { return session::pytorch_split_note(c, s); };
    ok &= print_region(o, kiln_prefix, std::move(*run.input), where, pytorch);
  }
  return ok;
}

}  // namespace

int stages_of_trace(const StagesOptions& o) {
  Expected<Trace> t = trace::open_trace(o.input);
  if (!t) {
    std::fprintf(stderr, "kiln-cli: %s\n", t.status().to_string().c_str());
    return kExitBadInput;
  }
  // Damaged records do not stop the run; they are said once, up front.
  for (const trace::Diagnostic& d : t->diagnostics)
    std::fprintf(stderr, "kiln-cli: %s:%d: %s\n", d.file.c_str(), d.line, d.message.c_str());

  std::vector<const CompileEntry*> entries;
  if (!o.compile_id.empty()) {
    const CompileEntry* e = t->find(o.compile_id);
    if (!e) {
      std::string have;
      for (const CompileEntry& x : t->entries) have += (have.empty() ? "" : ", ") + x.label;
      std::fprintf(stderr, "kiln-cli: %s: no compile id '%s' (it has: %s)\n", o.input.c_str(), o.compile_id.c_str(), have.c_str());
      return kExitBadInput;
    }
    if (!o.stage.empty() && !e->artifact(o.stage)) {
      std::fprintf(stderr, "kiln-cli: %s: compile id %s has no stage '%s' (it has: %s)\n", o.input.c_str(), e->label.c_str(),
                   o.stage.c_str(), graph_stage_list(*e).c_str());
      return kExitBadInput;
    }
    entries.push_back(e);
  } else {
    // Every compile id the workbench lists, in the same order.
    for (const CompileEntry& e : t->entries)
      if (session::listed_entry(e) && (o.stage.empty() || e.artifact(o.stage))) entries.push_back(&e);
  }
  if (std::none_of(entries.begin(), entries.end(), [](const CompileEntry* e) { return has_graph(*e); })) {
    if (o.stage.empty())
      std::fprintf(stderr, "kiln-cli: %s: no compile id has a graph (%zu compile ids, %zu diagnostics)\n", o.input.c_str(),
                   t->entries.size(), t->diagnostics.size());
    else
      std::fprintf(stderr, "kiln-cli: %s: no compile id has the stage '%s'\n", o.input.c_str(), o.stage.c_str());
    return kExitBadInput;
  }
  if (!o.stage.empty() && !entries[0]->artifact(o.stage)->graph) {
    std::fprintf(stderr, "kiln-cli: %s: stage '%s' is not a graph (try kiln-cli trace graph --raw to read it)\n",
                 o.input.c_str(), o.stage.c_str());
    return kExitBadInput;
  }

  const pipeline::Partitioner partitioner = *pipeline::partitioner_named(o.partitioner);
  bool bad_input = false, ok = true;
  for (const CompileEntry* e : entries) ok &= print_entry(o, *t, *e, partitioner, bad_input);
  if (bad_input) return kExitBadInput;
  return ok ? kExitOk : kExitFailures;
}

}  // namespace kiln::cli
