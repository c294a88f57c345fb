// `kiln-cli stages TRACE [--compile-id ID] [--stage S]`: Kiln's pipeline on the
// graphs of a TORCH_TRACE log (file or folder) or a TORCH_COMPILE_DEBUG folder.
//
// Which graph: a trace holds Dynamo's torch-level graph and AOTAutograd's ATen
// graphs. Kiln lowers torch-level graphs to ATen only while it runs the program
// (the lowering replays the region on its real inputs), so from a trace it
// starts at the ATen level, with the best graph there is:
//   1. aot_joint_graph (training): Kiln's own partitioner splits it, so the
//      forward and backward are Kiln's, next to PyTorch's sizes for comparison;
//   2. else aot_forward_graph and aot_backward_graph, as PyTorch split them;
//   3. else aot_inference_graph;
//   4. else (TORCH_COMPILE_DEBUG folders) every fx_graph_readable, the graph
//      Inductor was handed.
// --stage picks another one; a torch-level stage is shown and then skipped.
//
// Damage stays local: a graph that does not parse is reported with its file
// and line and the other graphs go on. Exit: 3 when the trace cannot be read,
// the compile id or stage asked for is missing, nothing in it has a graph, or a
// chosen graph does not parse; else 1 when the pipeline failed on a graph;
// else 0.
#include <cstdio>
#include <map>

#include "compiler/pipeline/training_split.h"
#include "app/cli/commands.h"
#include "app/cli/stages.h"
#include "compiler/aot/joint.h"
#include "compiler/aot/partition.h"
#include "core/ops/registry.h"
#include "core/trace/reader.h"
#include "core/trace/trace.h"

namespace kiln::cli {
namespace {

using trace::Artifact;
using trace::CompileEntry;
using trace::Trace;

struct TraceRun {
  const StagesOptions& o;
  const Trace& t;
  bool bad_input = false;
  bool failed = false;
};

std::string record_place(const Trace& t, const Artifact& a) {
  return (a.payload.file < t.files.size() ? t.files[a.payload.file].path : t.path) + ":" + std::to_string(a.line);
}

bool has_graph(const CompileEntry& e) {
  for (const Artifact& a : e.artifacts)
    if (trace::is_graph_stage(a.base)) return true;
  return false;
}

std::string stage_list(const CompileEntry& e) {
  std::string s;
  for (const Artifact& a : e.artifacts)
    if (trace::is_graph_stage(a.base)) s += (s.empty() ? "" : ", ") + a.name;
  return s.empty() ? "no graph stages" : s;
}

// Empty when every call is an op overload ("aten::mm.default") or Python's
// operator on SymInts; else what makes the graph torch-level, for the skip line.
std::string torch_level_call(const Graph& g) {
  for (const Node& n : g.nodes) {
    if (n.op == OpKind::CallMethod) return "method ." + n.target + " (node " + n.name + ")";
    if (n.op == OpKind::CallModule) return "module " + n.target + " (node " + n.name + ")";
    if (n.op == OpKind::CallFunction && n.target.find("::") == std::string::npos && !n.target.starts_with("operator."))
      return n.target + " (node " + n.name + ")";
  }
  return "";
}

// Op overloads the registry lacks: the passes keep them as opaque nodes, but
// nothing can run or derive them, so the user should know.
std::string unknown_ops(const Graph& g) {
  std::map<std::string, std::string> first_node;
  for (const Node& n : g.nodes)
    if (n.op == OpKind::CallFunction && n.target.find("::") != std::string::npos && !op_registry().find(n.target))
      first_node.emplace(n.target, n.name);
  std::string s;
  for (const auto& [op, node] : first_node) s += (s.empty() ? "" : ", ") + op + " (node " + node + ")";
  return s;
}

// PyTorch keeps writes into buffers (batch norm's running stats) in the joint
// graph as `copy_(primals_N, new_value)` nodes that nothing reads. Kiln's
// partitioners keep only what the outputs need, so those writes would vanish;
// instead each becomes a forward output (after the existing ones, as Kiln's
// own lowering returns written inputs), the functional form. Returns how many.
size_t functionalize_input_writes(Graph& g) {
  std::vector<std::vector<NodeId>> users = compute_users(g);
  std::vector<bool> drop(g.size(), false);
  std::vector<Arg> new_values;
  std::vector<std::string> descs;
  for (size_t i = 0; i < g.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.op != OpKind::CallFunction || n.target != "aten::copy_.default" || !users[i].empty() || n.args.size() < 2 ||
        !n.args[0].is_node() || !n.args[1].is_node())
      continue;
    const Node& dst = g[n.args[0].node_id()];
    if (dst.op != OpKind::Placeholder || !dst.name.starts_with("primals_")) continue;
    drop[i] = true;
    new_values.push_back(n.args[1]);
    descs.push_back("InputMutationAOTOutput(mutated_input=" + dst.name + ")");
  }
  Node* out = g.nodes.empty() || g.nodes.back().op != OpKind::Output ? nullptr : &g.nodes.back();
  if (new_values.empty() || !out || out->args.empty() || !out->args[0].is_container()) return 0;
  // Where the forward outputs end: before the gradients, one per primal.
  size_t primals = 0;
  for (const Node& n : g.nodes) primals += n.op == OpKind::Placeholder && n.name.starts_with("primals_");
  std::vector<Arg>& items = out->args[0].items;
  if (items.size() < primals) return 0;
  std::vector<std::string>& out_descs = out->meta.output_descs;
  out_descs.resize(items.size());
  auto at = std::ptrdiff_t(items.size() - primals);
  items.insert(items.begin() + at, new_values.begin(), new_values.end());
  out_descs.insert(out_descs.begin() + at, descs.begin(), descs.end());
  remove_nodes(g, drop);
  return new_values.size();
}

// The trace's joint graph in the shape the partitioners take: placeholders
// primals_* then tangents_*, and one output list of the forward outputs then
// one gradient or None per primal.
Expected<aot::JointGraph> joint_from_trace(const Graph& g, size_t* input_writes) {
  aot::JointGraph j;
  j.graph = g;
  *input_writes = functionalize_input_writes(j.graph);
  for (const Node& n : j.graph.nodes) {
    if (n.op != OpKind::Placeholder) continue;
    if (n.name.starts_with("primals_") && j.num_tangents == 0) {
      ++j.num_primals;
    } else if (n.name.starts_with("tangents_")) {
      ++j.num_tangents;
    } else {
      return Status::error("placeholder '" + n.name + "' is neither primals_N nor tangents_N after the primals");
    }
  }
  Node* out = j.graph.nodes.empty() || j.graph.nodes.back().op != OpKind::Output ? nullptr : &j.graph.nodes.back();
  if (!out || out->args.empty() || (out->args[0].kind != Arg::Kind::List && out->args[0].kind != Arg::Kind::Tuple))
    return Status::error("the output is not a list of forward outputs and gradients");
  const std::vector<Arg>& items = out->args[0].items;
  if (items.size() < j.num_primals)
    return Status::error("the output has " + std::to_string(items.size()) + " entries, fewer than the " +
                         std::to_string(j.num_primals) + " primals' gradients");
  j.num_forward_outputs = items.size() - j.num_primals;
  out->meta.output_descs.resize(items.size());  // the partitioners index it like the items
  for (size_t i = j.num_forward_outputs; i < items.size(); ++i) j.requires_grad.push_back(!items[i].is_none());
  // The backward starts at the first node that reads a tangent (directly or not).
  std::vector<bool> from_tangent(j.graph.size(), false);
  j.first_backward_node = NodeId(j.graph.size() - 1);  // the output, when no node reads a tangent
  bool found = false;
  for (size_t i = 0; i < j.graph.size() && !found; ++i) {
    const Node& n = j.graph.nodes[i];
    if (n.op == OpKind::Placeholder) {
      from_tangent[i] = n.name.starts_with("tangents_");
      continue;
    }
    if (n.op == OpKind::Output) break;
    for_each_input(n, [&](NodeId in) { from_tangent[i] = from_tangent[i] || from_tangent[size_t(in)]; });
    if (from_tangent[i]) {
      j.first_backward_node = NodeId(i);
      found = true;
    }
  }
  // tangent_of_output stays empty: the trace does not say it in a form the
  // parser keeps, and the partitioners do not read it.
  return j;
}

class EntryRun {
 public:
  EntryRun(TraceRun& run, const CompileEntry& e) : r_(run), e_(e), prefix_("[" + e.label + "] ") {}

  // One stage graph: shown, then through the passes (a joint graph through
  // the partitioner first). `role` goes before the pass names when an entry
  // runs several graphs ("forward"; the group of its stages).
  void run_stage(const Artifact& a, const std::string& role) {
    std::string where = record_place(r_.t, a);
    Expected<std::shared_ptr<const Graph>> g = r_.t.graph(e_, a.name);
    if (!g) {
      std::printf("=== %s%s  skipped: does not parse: %s\n", prefix_.c_str(), a.name.c_str(), g.status().to_string().c_str());
      std::fprintf(stderr, "kiln-cli: stages: [%s] %s: %s\n", e_.label.c_str(), a.name.c_str(), g.status().to_string().c_str());
      r_.bad_input = true;
      return;
    }
    const Graph& graph = **g;
    std::string size = describe_size(graph) + " (" + where + ")";
    if (std::string call = torch_level_call(graph); !call.empty()) {
      print_stage(r_.o, prefix_, a.name, a.base, 0, &graph,
                  size + "  skipped: a torch-level graph (" + call +
                      "); Kiln lowers torch-level graphs to ATen only while it runs the program (kiln-cli stages PROGRAM.py)");
      return;
    }
    if (a.base == "aot_joint_graph") return run_joint(a, graph, size, where);
    warn_unknown_ops(graph, where, a.name);
    print_stage(r_.o, prefix_, a.name, a.base, 0, &graph, size);
    if (!print_region(r_.o, prefix_, pipeline::RegionInput::single(graph, role), where + ": [" + e_.label + "] " + a.name))
      r_.failed = true;
  }

  // Skip line for a compile id that has only torch-level graphs.
  void no_aten_graph() {
    std::printf("=== %sto_aten  skipped: the trace has no ATen graph for this compile id (it has: %s), and Kiln "
                "lowers a torch-level graph to ATen only while it runs the program (kiln-cli stages PROGRAM.py)\n",
                prefix_.c_str(), stage_list(e_).c_str());
  }

  // The default choice (file comment).
  void run_default() {
    const Artifact* joint = e_.artifact("aot_joint_graph");
    const Artifact* fw = e_.artifact("aot_forward_graph");
    const Artifact* bw = e_.artifact("aot_backward_graph");
    const Artifact* inference = e_.artifact("aot_inference_graph");
    std::vector<const Artifact*> readable;
    for (const Artifact& a : e_.artifacts)
      if (a.base == "fx_graph_readable") readable.push_back(&a);
    if (const Artifact* dyn = e_.artifact("dynamo_output_graph")) {
      auto g = r_.t.graph(e_, dyn->name);
      std::string note = g ? describe_size(**g) : std::string("does not parse (").append(g.status().to_string()).append(")");
      note.append(" (").append(record_place(r_.t, *dyn)).append(") torch-level");
      if (joint || fw || bw || inference || !readable.empty()) note.append("; the pipeline starts from the trace's ATen graph");
      print_stage(r_.o, prefix_, dyn->name, dyn->base, 0, g ? g->get() : nullptr, note);
    }
    if (joint) return run_stage(*joint, "");
    if (fw || bw) {
      if (fw) run_stage(*fw, bw ? "forward" : "");
      if (bw) run_stage(*bw, fw ? "backward" : "");
      return;
    }
    if (inference) return run_stage(*inference, "");
    for (const Artifact* a : readable) run_stage(*a, readable.size() > 1 ? a->name : "");
    if (readable.empty()) no_aten_graph();
  }

 private:
  void warn_unknown_ops(const Graph& g, const std::string& where, const std::string& stage) const {
    if (std::string unknown = unknown_ops(g); !unknown.empty())
      std::fprintf(stderr, "kiln-cli: stages: %s: [%s] %s: ops Kiln's registry does not have, kept as opaque nodes: %s\n",
                   where.c_str(), e_.label.c_str(), stage.c_str(), unknown.c_str());
  }

  void run_joint(const Artifact& a, const Graph& graph, const std::string& size, const std::string& where) {
    size_t input_writes = 0;
    Expected<aot::JointGraph> joint = joint_from_trace(graph, &input_writes);
    warn_unknown_ops(joint ? joint->graph : graph, where, a.name);
    if (!joint) {
      print_stage(r_.o, prefix_, a.name, a.base, 0, &graph, size);
      std::printf("=== %spartition  skipped: %s; the passes run on the joint graph as it is\n", prefix_.c_str(),
                  joint.status().message().c_str());
      if (!print_region(r_.o, prefix_, pipeline::RegionInput::single(graph), where + ": [" + e_.label + "] " + a.name))
        r_.failed = true;
      return;
    }
    print_stage(r_.o, prefix_, a.name, a.base, 0, &graph,
                size + "; " + std::to_string(joint->num_primals) + " primals, " + std::to_string(joint->num_tangents) + " tangents" +
                    (input_writes ? "; " + std::to_string(input_writes) + " input write(s) (copy_) become forward outputs" : ""));
    // Kiln's own split of PyTorch's joint graph, beside PyTorch's where the trace has it.
    auto pytorch = [this](const pipeline::Stage& s) {
      return s.name == "aot_forward_graph" || s.name == "aot_backward_graph" ? pytorch_size(s.name) : std::string();
    };
    if (!print_region(r_.o, prefix_, pipeline::RegionInput::from_joint(std::move(*joint), *pipeline::partitioner_named(r_.o.partitioner)),
                      where + ": [" + e_.label + "]", pytorch))
      r_.failed = true;
  }

  // "; PyTorch's: 8 nodes, 4 ops" when the trace has PyTorch's own split.
  std::string pytorch_size(std::string_view stage) const {
    if (!e_.artifact(stage)) return "";
    auto g = r_.t.graph(e_, stage);
    return g ? "; PyTorch's: " + describe_size(**g) : "";
  }

  TraceRun& r_;
  const CompileEntry& e_;
  std::string prefix_;
};

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
                   o.stage.c_str(), stage_list(*e).c_str());
      return kExitBadInput;
    }
    entries.push_back(e);
  } else {
    for (const CompileEntry& e : t->entries)
      if (has_graph(e) && (o.stage.empty() || e.artifact(o.stage))) entries.push_back(&e);
  }
  if (entries.empty()) {
    if (o.stage.empty())
      std::fprintf(stderr, "kiln-cli: %s: no compile id has a graph (%zu compile ids, %zu diagnostics)\n", o.input.c_str(),
                   t->entries.size(), t->diagnostics.size());
    else
      std::fprintf(stderr, "kiln-cli: %s: no compile id has the stage '%s'\n", o.input.c_str(), o.stage.c_str());
    return kExitBadInput;
  }

  if (!o.stage.empty() && !trace::is_graph_stage(entries[0]->artifact(o.stage)->base)) {
    std::fprintf(stderr, "kiln-cli: %s: stage '%s' is not a graph (try kiln-cli trace graph --raw to read it)\n",
                 o.input.c_str(), o.stage.c_str());
    return kExitBadInput;
  }

  TraceRun run{o, *t};
  for (const CompileEntry* e : entries) {
    EntryRun er(run, *e);
    if (o.stage.empty()) er.run_default();
    else er.run_stage(*e->artifact(o.stage), "");
  }
  if (run.bad_input) return kExitBadInput;
  return run.failed ? kExitFailures : kExitOk;
}

}  // namespace kiln::cli
