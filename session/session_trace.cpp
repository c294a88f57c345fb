// PyTorch dumps in the workbench: TORCH_TRACE logs, TORCH_COMPILE_DEBUG folders
// and minifier files, read by core/trace into compiles whose stages are
// PyTorch's own, then Kiln's pipeline from the dump's ATen graph
// (trace_stages.h says which one).
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <sstream>

#include "compiler/aot/joint_from_dump.h"
#include "core/ops/registry.h"
#include "minifier/repro.h"
#include "core/store/workspace.h"
#include "core/trace/indexed_open.h"
#include "core/trace/reader.h"
#include "core/trace/summary.h"
#include "core/trace/trace.h"
#include "session/session_internal.h"
#include "session/trace_stages.h"

namespace kiln::session {
namespace {

using Clock = std::chrono::steady_clock;


// One guard of a dynamo_cpp_guards_str tree: "check_tensor(L['x'], Tensor, ...,
// torch.float32, ..., size=[8, 16], stride=[16, 1])  # y = x * 3  # f.py:7 in f".
// Tensor guards keep what the input signature check compares; None sizes are dynamic.
SessionGuard parse_cpp_guard(const std::string& kind, std::string text) {
  SessionGuard g;
  g.kind = kind;
  std::string where;
  if (size_t h = text.find("  # "); h != std::string::npos) {
    size_t last = text.rfind("  # ");
    if (last > h) where = text.substr(last + 4);
    text.resize(h);
  }
  while (!text.empty() && text.front() == ' ') text.erase(0, 1);
  while (!text.empty() && text.back() == ' ') text.pop_back();  // the padding before the comment
  g.text = text;
  // "f.py:7 in f_data_dep"
  if (size_t in = where.find(" in "); in != std::string::npos) where.resize(in);
  if (size_t colon = where.rfind(':'); colon != std::string::npos) {
    g.file = where.substr(0, colon);
    g.line = std::atoi(where.c_str() + colon + 1);
  }
  if (kind != "TENSOR_MATCH" || !text.starts_with("check_tensor(")) return g;
  size_t comma = text.find(',');
  g.source = text.substr(13, comma == std::string::npos ? std::string::npos : comma - 13);
  if (size_t t = text.find(", torch."); t != std::string::npos) {
    size_t end = text.find(',', t + 2);
    g.dtype = text.substr(t + 8, end == std::string::npos ? std::string::npos : end - t - 8);
  }
  if (size_t sz = text.find("size=["); sz != std::string::npos) {
    size_t end = text.find(']', sz);
    std::istringstream in(text.substr(sz + 6, end == std::string::npos ? std::string::npos : end - sz - 6));
    for (std::string item; std::getline(in, item, ',');) {
      while (!item.empty() && item.front() == ' ') item.erase(0, 1);
      bool dynamic = item == "None";
      g.sizes.push_back(dynamic ? 0 : std::atoll(item.c_str()));
      g.dynamic.push_back(dynamic);
    }
  }
  return g;
}

CompileStatus trace_status(const trace::CompileEntry& e, std::string& note) {
  std::string st = trace::entry_status(e);
  if (st == "error") {
    note = e.metrics && e.metrics->fail_reason ? "failed: " + *e.metrics->fail_reason : "failed";
    return CompileStatus::Failed;
  }
  if (st == "break") {
    note = e.graph_breaks.empty() ? "restarted analysis" : "graph break: " + e.graph_breaks.front().reason;
    return CompileStatus::GraphBreak;
  }
  if (!e.recompile_reasons.empty()) {
    note = "recompile: " + e.recompile_reasons.front();
    return CompileStatus::Recompile;
  }
  return CompileStatus::Ok;
}

// The provenance parent of a trace stage: dumps carry no NodeMeta::from, so
// stage_links matches nodes by name along this chain.
// Which earlier stage a dump stage's graph came from, by the stages' roles in
// PyTorch's pipeline (trace::stage_role), so the chain holds for every
// version's names: before_X -> after_X; the joint graph -> the forward and the
// backward; the forward (or the inference graph) -> Inductor's first post-grad
// graph, the backward -> the second ("#2", logged under the same compile id).
int trace_parent(const SessionCompile& c, const std::string& base, const std::string& name) {
  using trace::StageRole;
  auto occurrence_of = [](std::string_view n) { return n.find('#') == std::string_view::npos ? std::string_view("1") : n.substr(n.find('#') + 1); };
  auto role_of = [](const SessionStage& st) { return trace::stage_role(std::string_view(st.name).substr(0, st.name.find('#'))); };
  auto last = [&](auto pred) {
    for (int i = int(c.stages.size()) - 1; i >= 0; --i)
      if (c.stages[size_t(i)].kind == StageKind::Graph && pred(c.stages[size_t(i)])) return i;
    return -1;
  };
  auto last_role = [&](StageRole r) { return last([&](const SessionStage& st) { return role_of(st) == r; }); };
  const StageRole role = trace::stage_role(base);
  const std::string_view occurrence = occurrence_of(name);
  if (role == StageRole::Dynamo) return -1;
  if (role == StageRole::Forward || role == StageRole::Backward) {
    const int joint = last_role(StageRole::Joint);
    return joint >= 0 ? joint : last_role(StageRole::Dynamo);
  }
  // The same step of the same Inductor compile, before it: before_post_grad_graph for after_post_grad_graph.
  if (role != StageRole::Other) {
    const int same = last([&](const SessionStage& st) { return role_of(st) == role && occurrence_of(st.name) == occurrence; });
    if (same >= 0) return same;
  }
  if (role == StageRole::PostGrad) {
    const int from = occurrence == "1" ? std::max(last_role(StageRole::Forward), last_role(StageRole::Inference)) : last_role(StageRole::Backward);
    if (from >= 0) return from;
  }
  return last([](const SessionStage& st) { return st.name.find('#') == std::string::npos; });
}

// FX prints each node's user line above it: "# File: /u/prog.py:7 in
// forward, code: return x.sin()". Those of `file` go to `lines`.
void add_quoted_lines(std::string_view text, const std::string& file, std::map<int, std::string>& lines) {
  const std::string marker = "# File: " + file + ":";
  for (size_t at = text.find(marker); at != std::string_view::npos; at = text.find(marker, at + marker.size())) {
    size_t end = text.find('\n', at);
    std::string_view line = text.substr(at + marker.size(), end == std::string_view::npos ? std::string_view::npos : end - at - marker.size());
    int number = 0;
    size_t digits = 0;
    while (digits < line.size() && digits < 9 && line[digits] >= '0' && line[digits] <= '9') number = number * 10 + (line[digits++] - '0');
    size_t code = line.find(", code: ");
    if (digits == 0 || code == std::string_view::npos || !line.substr(digits).starts_with(" in ")) continue;
    std::string_view quoted = line.substr(code + 8);
    while (!quoted.empty() && (quoted.back() == '\r' || quoted.back() == ' ')) quoted.remove_suffix(1);
    if (!quoted.empty()) lines.emplace(number, std::string(quoted));
  }
}

// Every file's quoted lines: "# File: PATH:LINE in FN, code: CODE".
void add_all_quoted_lines(std::string_view text, std::map<std::string, std::map<int, std::string>>& by_file) {
  static constexpr std::string_view kMarker = "# File: ";
  for (size_t at = text.find(kMarker); at != std::string_view::npos; at = text.find(kMarker, at + kMarker.size())) {
    size_t end = text.find('\n', at);
    std::string_view rest = text.substr(at + kMarker.size(), end == std::string_view::npos ? std::string_view::npos : end - at - kMarker.size());
    const size_t code = rest.find(", code: ");
    if (code == std::string_view::npos) continue;
    const std::string_view head = rest.substr(0, code);
    const size_t in = head.rfind(" in ");
    const size_t colon = in == std::string_view::npos ? std::string_view::npos : head.rfind(':', in);
    if (colon == std::string_view::npos || colon == 0) continue;
    int number = 0;
    size_t digits = colon + 1;
    while (digits < in && digits - colon < 10 && head[digits] >= '0' && head[digits] <= '9') number = number * 10 + (head[digits++] - '0');
    if (digits != in || number <= 0) continue;
    std::string_view quoted = rest.substr(code + 8);
    while (!quoted.empty() && (quoted.back() == '\r' || quoted.back() == ' ')) quoted.remove_suffix(1);
    if (!quoted.empty()) by_file[std::string(head.substr(0, colon))].emplace(number, std::string(quoted));
  }
}

// Empty when every call is an op overload ("aten::mm.default") or Python's
// operator on SymInts; else what makes the graph torch-level. Python's
// operators on tensors (Dynamo's `x / y`) are torch-level.
std::string torch_level_call(const Graph& g) {
  auto on_tensors = [&](const Node& n) {
    bool tensor = n.meta.val.is_tensor();
    for_each_input(n, [&](NodeId in) { tensor = tensor || g[in].meta.val.is_tensor(); });
    return tensor;
  };
  for (const Node& n : g.nodes) {
    if (n.op == OpKind::CallMethod) return "method ." + n.target + " (node " + n.name + ")";
    if (n.op == OpKind::CallModule) return "module " + n.target + " (node " + n.name + ")";
    if (n.op != OpKind::CallFunction || n.target.find("::") != std::string::npos) continue;
    const bool torch_level = !n.target.starts_with("operator.") || (n.target != "operator.getitem" && on_tensors(n));
    if (torch_level) return n.target + " (node " + n.name + ")";
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

// The first of the entry's graphs, in log order, that parses and calls ATen
// ops only (an exported program, a post-grad graph); null when none does.
const trace::Artifact* first_aten_graph(const trace::Trace& t, const trace::CompileEntry& e) {
  for (const trace::Artifact& a : e.artifacts) {
    if (!a.graph) continue;
    Expected<std::shared_ptr<const Graph>> g = t.graph(e, a.name);
    if (g && torch_level_call(**g).empty()) return &a;
  }
  return nullptr;
}

std::string graph_stage_names(const trace::CompileEntry& e) {
  std::string s;
  for (const trace::Artifact& a : e.artifacts)
    if (a.graph) s += (s.empty() ? "" : ", ") + a.name;
  return s;
}

KilnRun plan_run(const trace::Trace& t, const trace::CompileEntry& e, const trace::Artifact& a, const std::string& group,
                 pipeline::Partitioner partitioner) {
  KilnRun r;
  r.artifact = a.name;
  r.where = record_place(t, a);
  Expected<std::shared_ptr<const Graph>> g = t.graph(e, a.name);
  if (!g) {
    r.problem = g.status().to_string();
    r.note = "Kiln's pipeline cannot start here: does not parse: " + r.problem;
    return r;
  }
  const Graph& graph = **g;
  const bool torch_level = !torch_level_call(graph).empty();
  const bool unannotated = std::any_of(graph.nodes.begin(), graph.nodes.end(),
                                       [](const Node& n) { return is_call(n) && n.meta.val.kind == Val::Kind::None; });
  if (torch_level || (unannotated && a.base != "aot_joint_graph")) {
    // A repro's forward() has no annotations and may read SymInts and
    // Repro.__init__'s constants; a Dynamo graph calls torch functions. The
    // minifier's reader makes either a runnable ATen graph (load_args' inputs,
    // SymInts at their recorded values, constants as inputs, a torch-level
    // graph lowered by to_aten), as `kiln-cli repro run` replays it.
    Expected<minify::Repro> read = minify::read_trace_stage(t.path, e.id.str(), a.name);
    if (!read) {
      r.problem = read.status().to_string();
      r.note = "Kiln's pipeline cannot start here: " + r.problem;
      return r;
    }
    r.unknown_ops = unknown_ops(read->graph);
    r.note = read->lowered_from_torch ? "Kiln's pipeline starts here, from its own lowering of this torch-level graph to ATen"
                                      : "Kiln's pipeline starts here";
    r.input = pipeline::RegionInput::single(read->graph, group);
    return r;
  }
  if (a.base != "aot_joint_graph") {
    r.unknown_ops = unknown_ops(graph);
    r.note = "Kiln's pipeline starts here";
    r.input = pipeline::RegionInput::single(graph, group);
    return r;
  }
  size_t input_writes = 0;
  Expected<aot::JointGraph> joint = aot::joint_from_dump(graph, &input_writes);
  r.unknown_ops = unknown_ops(joint ? joint->graph : graph);
  if (!joint) {
    r.note = "Kiln's pipeline starts here, not split (" + joint.status().message() + "): the passes run on the joint graph as it is";
    r.input = pipeline::RegionInput::single(graph, group);
    return r;
  }
  r.note = "Kiln's pipeline starts here: " + std::to_string(joint->num_primals) + " primals, " + std::to_string(joint->num_tangents) +
           " tangents" + (input_writes ? "; " + std::to_string(input_writes) + " input write(s) (copy_) become forward outputs" : "");
  r.input = pipeline::RegionInput::from_joint(std::move(*joint), partitioner);
  return r;
}

// Kiln's stages of one compile, after PyTorch's: each run starts from its dump
// stage, whose summary says so; Kiln's failures are noted, PyTorch's status stays.
void add_kiln_stages(SessionCompile& c, Session& s, const trace::CompileEntry& e, const LoadOptions& o,
                     pipeline::Partitioner partitioner) {
  const trace::Trace& t = *s.trace;
  KilnPlan plan = plan_kiln_runs(t, e, "", partitioner);
  if (!plan.no_aten_graph.empty()) {
    const std::string note = "kiln: " + plan.no_aten_graph;
    c.status_note += c.status_note.empty() ? note : "; " + note;
  }
  RegionStageNaming naming;
  naming.prefix = std::string(kKilnStagePrefix);
  naming.sets_status = false;
  naming.extra_note = [&](const pipeline::Stage& st) { return pytorch_split_note(c, st); };
  for (KilnRun& run : plan.runs) {
    const int start = c.stage_index(run.artifact);
    if (start >= 0) {
      std::string& summary = c.stages[size_t(start)].summary;
      summary += summary.empty() ? run.note : "; " + run.note;
    }
    const std::string place = run.where + ": [" + c.id + "] " + run.artifact + ": ";
    if (!run.problem.empty()) s.diagnostics.push_back(place + run.problem);
    if (!run.unknown_ops.empty())
      s.diagnostics.push_back(place + "ops Kiln's registry does not have, kept as opaque nodes: " + run.unknown_ops);
    if (run.input) add_region_stages(c, std::move(*run.input), start, o, naming);
  }
}

// Kiln's stages of every compile of `s`, progress from `from` to 1.
Status add_all_kiln_stages(Session& s, const LoadOptions& o, pipeline::Partitioner partitioner, double from) {
  for (size_t i = 0; i < s.compiles.size() && s.trace; ++i) {
    if (o.cancel && o.cancel->load()) return Status::error("cancelled");
    SessionCompile& c = s.compiles[i];
    if (o.progress) o.progress(from + (1 - from) * double(i) / double(s.compiles.size()), "Kiln's pipeline on [" + c.id + "]");
    if (const trace::CompileEntry* e = s.trace->find(c.id)) add_kiln_stages(c, s, *e, o, partitioner);
  }
  if (o.cancel && o.cancel->load()) return Status::error("cancelled");
  return Status();
}

}  // namespace

bool listed_entry(const trace::CompileEntry& e) { return !e.artifacts.empty() || !e.graph_breaks.empty() || e.metrics; }

std::string record_place(const trace::Trace& t, const trace::Artifact& a) {
  return (a.payload.file < t.files.size() ? t.files[a.payload.file].path : t.path) + ":" + std::to_string(a.line);
}

void add_dump_stages(SessionCompile& c, const trace::Trace& t, const trace::CompileEntry& e,
                     const std::function<void(std::string_view)>& graph_text) {
  for (const trace::Artifact& a : e.artifacts) {
    SessionStage st;
    st.name = a.name;
    st.pass = a.base;
    st.artifact = a.name;
    if (a.graph) {
      st.kind = StageKind::Graph;
      // Sizes for the tree from the text's lines; the graph itself is parsed when shown.
      if (auto text = t.payload_text(e, a.name)) {
        trace::GraphCounts gc = trace::count_graph_text(*text);
        st.nodes = gc.nodes;
        st.ops = gc.ops;
        if (graph_text) graph_text(*text);
      }
      st.parent = trace_parent(c, a.base, a.name);
      c.stages.push_back(std::move(st));
    } else if (a.base == "ir_pre_fusion" || a.base == "ir_post_fusion" || a.base == "dynamo_cpp_guards_str" ||
               (a.encoding != "json" && a.base.ends_with("_code"))) {
      // Code: Inductor's output code, AOTInductor's wrapper and kernel code (graph_dump records).
      auto text = t.payload_text(e, a.name);
      if (!text) continue;
      if (a.base == "dynamo_cpp_guards_str") {
        for (const trace::CppGuardLine& g : trace::cpp_guard_lines(*text))
          c.guards.push_back(parse_cpp_guard(std::string(g.kind), std::string(g.text)));
        continue;
      }
      st.kind = StageKind::Code;
      // Inductor's output code is Python (C++ kernels inside it too); AOTInductor's
      // wrapper and kernel code is C++ or Triton's Python.
      const bool output_code = a.base == "inductor_output_code" || a.base == "output_code";
      st.language = a.base.starts_with("ir_") ? "text"
                    : !output_code && text->find("#include") != std::string::npos ? "cuda"
                                                                                   : "python";
      st.text = std::move(*text);
      st.summary = std::to_string(std::count(st.text.begin(), st.text.end(), '\n')) + " lines";
      c.stages.push_back(std::move(st));
    }
  }
}

KilnPlan plan_kiln_runs(const trace::Trace& t, const trace::CompileEntry& e, const std::string& stage,
                        pipeline::Partitioner partitioner) {
  KilnPlan plan;
  auto add = [&](const trace::Artifact& a, const std::string& group) { plan.runs.push_back(plan_run(t, e, a, group, partitioner)); };
  if (!stage.empty()) {
    if (const trace::Artifact* a = e.artifact(stage)) add(*a, "");
    return plan;
  }
  const trace::Artifact* joint = e.artifact("aot_joint_graph");
  const trace::Artifact* fw = e.artifact("aot_forward_graph");
  const trace::Artifact* bw = e.artifact("aot_backward_graph");
  const trace::Artifact* inference = e.artifact("aot_inference_graph");
  std::vector<const trace::Artifact*> readable;
  const trace::Artifact* repro = nullptr;
  for (const trace::Artifact& a : e.artifacts) {
    if (a.base == "fx_graph_readable") readable.push_back(&a);
    if (a.base == "repro" && !repro) repro = &a;
  }
  if (joint) {
    add(*joint, "");
  } else if (fw || bw) {
    if (fw) add(*fw, bw ? "forward" : "");
    if (bw) add(*bw, fw ? "backward" : "");
  } else if (inference) {
    add(*inference, "");
  } else if (!readable.empty()) {
    for (const trace::Artifact* a : readable) add(*a, readable.size() > 1 ? a->name : "");
  } else if (repro) {
    add(*repro, "");
  } else if (const trace::Artifact* aten = first_aten_graph(t, e)) {
    // Logs without AOT graphs (export, AOTInductor, a cache hit's post-grad graph): the first ATen one.
    add(*aten, "");
  } else if (const trace::Artifact* dynamo = e.artifact("dynamo_output_graph")) {
    // A compile that stopped before AOTAutograd (or a log of Dynamo alone): Kiln lowers Dynamo's graph itself.
    add(*dynamo, "");
  } else if (std::string graphs = graph_stage_names(e); !graphs.empty()) {
    plan.no_aten_graph = "the trace has no ATen or Dynamo graph for this compile id (it has: " + graphs + ")";
  }
  return plan;
}

std::string pytorch_split_note(const SessionCompile& dump, const pipeline::Stage& s) {
  if (s.application > 0 || (s.name != "aot_forward_graph" && s.name != "aot_backward_graph")) return "";
  const SessionStage* own = dump.stage(s.name);
  if (!own || own->nodes < 0) return "";
  return "; PyTorch's: " + std::to_string(own->nodes) + " nodes, " + std::to_string(own->ops) + " ops";
}

Expected<std::shared_ptr<Session>> with_kiln_stages(const Session& s, const LoadOptions& o) {
  const Expected<pipeline::Partitioner> partitioner = partitioner_of(o);
  if (!partitioner) return partitioner.status();
  auto out = std::make_shared<Session>(s);
  if (Status st = add_all_kiln_stages(*out, o, *partitioner, 0); !st.ok()) return st;
  if (o.progress) o.progress(1, "done");
  return out;
}

Expected<std::shared_ptr<Session>> load_trace(const std::string& path, const LoadOptions& o) {
  const Expected<pipeline::Partitioner> partitioner = partitioner_of(o);
  if (!partitioner) return partitioner.status();
  auto t0 = Clock::now();
  std::shared_ptr<Session> s = new_session(Session::Kind::Trace, path);
  Expected<trace::Trace> t = Status::error("not read");
  if (o.workspace) {
    if (o.progress) o.progress(0.1, "indexing " + s->title);
    t = trace::open_trace_cached(path, o.workspace, &s->from_store);
  } else {
    trace::ReadOptions ro;
    ro.cancel = o.cancel;
    if (o.progress) ro.progress = [&](double f) { o.progress(0.5 * f, "indexing " + s->title); };
    t = trace::open_trace(path, ro);
  }
  if (!t) return t.status();
  auto tr = std::make_shared<trace::Trace>(std::move(*t));
  s->trace = tr;
  for (const trace::Diagnostic& d : tr->diagnostics)
    s->diagnostics.push_back(d.file + ":" + std::to_string(d.line) + ": " + d.message);
  std::map<int, std::string> lines;
  std::map<std::string, std::map<int, std::string>> quoted;
  for (const trace::CompileEntry& e : tr->entries) {
    if (!listed_entry(e)) continue;
    SessionCompile c;
    c.id = e.label;
    // Frames of different ranks stay apart in the tree: "r1:0".
    c.frame = e.id.frame_id ? std::string(trace::rank_part(e.label)) + std::to_string(*e.id.frame_id) : e.label;
    if (e.rank) c.rank = "rank " + std::to_string(*e.rank);
    c.function = e.function();
    c.file = e.function_file();
    c.line = e.function_line();
    c.status = trace_status(e, c.status_note);
    c.recompile_reasons = e.recompile_reasons;
    for (const trace::ShapeEvent& ev : e.shape_events)
      if (ev.kind == "create_symbol" && ev.source.starts_with("L['") && !ev.value.empty()) c.input_values.emplace(ev.source, ev.value);
    if (e.metrics && e.metrics->entire_frame_compile_time_s) c.compile_seconds = *e.metrics->entire_frame_compile_time_s;
    if (s->source_file.empty() && !c.file.empty()) s->source_file = c.file;
    for (const trace::GraphBreak& b : e.graph_breaks) {
      std::string code = b.user_stack.empty() ? "" : b.user_stack.back().code;
      c.breaks.push_back({b.reason, b.detail, b.file, b.line, code});
      if (b.file == s->source_file && !code.empty()) lines[b.line] = code;
    }
    for (const trace::StackFrame& f : e.stack)
      if (f.file == s->source_file && !f.code.empty()) lines[f.line] = f.code;
    // The user's lines that the graphs quote on their nodes.
    add_dump_stages(c, *tr, e, [&](std::string_view text) {
      if (!s->source_file.empty()) add_quoted_lines(text, s->source_file, lines);
      add_all_quoted_lines(text, quoted);
    });
    if (o.cancel && o.cancel->load()) return Status::error("cancelled");
    s->compiles.push_back(std::move(c));
  }
  // An entry with nothing under it would only puzzle: say why instead.
  if (s->compiles.empty()) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec) && std::filesystem::file_size(path, ec) == 0)
      return Status::error(path + ": the file is empty");
    if (!tr->diagnostics.empty()) {
      const trace::Diagnostic& d = tr->diagnostics.front();
      return Status::error(d.file + ":" + std::to_string(d.line) + ": " + d.message +
                           (tr->diagnostics.size() > 1 ? " (and " + std::to_string(tr->diagnostics.size() - 1) + " more problems)" : ""));
    }
    return Status::error(path + ": no compiled graph in it (no dynamo_start, graph or guard records)");
  }
  // A minifier repro is its own source: the graph's lines are in it.
  if (tr->kind == trace::TraceKind::Minifier) s->source_file = path;
  if (!s->source_file.empty()) s->source_text = read_text(s->source_file);
  for (const auto& [line, code] : lines) s->known_lines.push_back({line, code});
  for (const auto& [file, numbered] : quoted)
    for (const auto& [line, code] : numbered) s->quoted_lines[file].push_back({line, code});
  if (o.kiln_stages)
    if (Status st = add_all_kiln_stages(*s, o, *partitioner, 0.5); !st.ok()) return st;
  s->load_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (o.progress) o.progress(1, "done");
  return s;
}


}  // namespace kiln::session
