#include "session/session.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "compiler/aot/eager_autograd.h"
#include "compiler/capture/capture.h"
#include "compiler/capture/region_tracer.h"
#include "compiler/loopir/lower.h"
#include "compiler/pipeline/run_region.h"
#include "compiler/pipeline/training_split.h"
#include "compiler/sched/schedule.h"
#include "core/python/vm.h"
#include "core/store/workspace.h"
#include "core/trace/indexed_open.h"
#include "core/trace/reader.h"
#include "core/trace/summary.h"

namespace kiln::session {

const char* compile_status_name(CompileStatus s) {
  switch (s) {
    case CompileStatus::Ok: return "ok";
    case CompileStatus::GraphBreak: return "graph break";
    case CompileStatus::Recompile: return "recompile";
    case CompileStatus::Failed: return "failed";
  }
  return "?";
}

const SessionStage* SessionCompile::stage(std::string_view name) const {
  int i = stage_index(name);
  return i < 0 ? nullptr : &stages[size_t(i)];
}

int SessionCompile::stage_index(std::string_view name) const {
  for (size_t i = 0; i < stages.size(); ++i)
    if (stages[i].name == name) return int(i);
  return -1;
}

std::vector<std::string> Session::frames() const {
  std::vector<std::string> out;
  for (const SessionCompile& c : compiles)
    if (std::find(out.begin(), out.end(), c.frame) == out.end()) out.push_back(c.frame);
  return out;
}

const SessionCompile* Session::find(std::string_view id) const {
  for (const SessionCompile& c : compiles)
    if (c.id == id) return &c;
  // "0/0" finds "0/0_1" (a restarted analysis keeps the frame's compile id).
  for (const SessionCompile& c : compiles)
    if (c.id.starts_with(std::string(id) + "_")) return &c;
  return nullptr;
}

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void count(SessionStage& s) {
  if (!s.graph) return;
  s.nodes = int(s.graph->size());
  s.ops = int(std::count_if(s.graph->nodes.begin(), s.graph->nodes.end(), is_call));
}

// Per node, the scheduler's fused group: a node with a kernel of its own by
// that kernel's group, one inlined into its consumers' kernels by a user's.
std::vector<int> fusion_groups_of(const Graph& g) {
  try {
    sched::ScheduledProgram s = sched::schedule(loopir::lower_to_loops(g));
    std::map<std::string, int> group_of;
    for (size_t gi = 0; gi < s.groups.size(); ++gi)
      for (size_t k : s.groups[gi].kernels)
        if (!s.program.kernels[k].origin.empty()) group_of.emplace(s.program.kernels[k].origin, int(gi));
    std::vector<int> out(g.size(), -1);
    for (NodeId i = 0; i < NodeId(g.size()); ++i)
      if (auto it = group_of.find(g[i].name); it != group_of.end()) out[size_t(i)] = it->second;
    std::vector<std::vector<NodeId>> users = compute_users(g);
    for (NodeId i = NodeId(g.size()) - 1; i >= 0; --i) {
      if (out[size_t(i)] >= 0 || g[i].op != OpKind::CallFunction) continue;
      for (NodeId u : users[size_t(i)])
        if (out[size_t(u)] >= 0) {
          out[size_t(i)] = out[size_t(u)];
          break;
        }
    }
    return out;
  } catch (const std::exception&) {
    return {};  // a graph the loop lowering refuses: no colours, the code stage says why
  }
}

}  // namespace

namespace {

// Turns run_region's stages into a compile's SessionStages, linking each
// graph to the one it was made from (SessionStage::parent).
class RegionStageSink {
 public:
  RegionStageSink(SessionCompile& c, int start);
  void operator()(const pipeline::Stage& s);
  void passes_done(const std::string& group);  // colours the graph code generation reads

 private:
  int chain(const std::string& group) const;
  SessionCompile& c_;
  std::map<std::string, int> chain_;  // per group: the last graph stage
  int joint_ = -1;
};

RegionStageSink::RegionStageSink(SessionCompile& c, int start) : c_(c) {
  if (start >= 0) chain_[""] = start;
}

int RegionStageSink::chain(const std::string& group) const {
  auto it = chain_.find(group);
  return it == chain_.end() ? -1 : it->second;
}

void RegionStageSink::operator()(const pipeline::Stage& s) {
  using Outcome = pipeline::Stage::Outcome;
  if (s.outcome == Outcome::Skipped) {
    // A region without a joint graph says why on its ATen graph; machine code left out, in the status.
    if (s.name == "aot_joint_graph" && chain("") >= 0) c_.stages[size_t(chain(""))].summary += "; no joint graph: " + s.summary;
    else c_.diagnostics_note(s.group, s.summary);
    return;
  }
  if (s.outcome == Outcome::Failed) {
    if (s.name == "codegen") return c_.diagnostics_note(s.group, s.summary);
    if (s.name == "cuda_source") return;  // the CPU code is what runs; the GPU source is a view
    c_.status = CompileStatus::Failed;
    const std::string note = (s.group.empty() ? "" : s.group + ": ") + (s.name == "passes" ? "" : s.name + ": ") + s.summary;
    c_.status_note = c_.status_note.empty() ? note : c_.status_note + "; " + note;
    return;
  }
  SessionStage st;
  st.pass = s.name;
  st.name = s.label();
  st.group = s.group;
  st.seconds = s.seconds;
  st.summary = s.summary;
  if (s.kind == pipeline::StageKind::Code) {
    st.kind = StageKind::Code;
    st.language = s.language;
    st.text = s.text;
    if (st.summary.empty())
      st.summary = std::to_string(std::count(s.text.begin(), s.text.end(), '\n')) + " lines";
    c_.stages.push_back(std::move(st));
    return;
  }
  const int index = int(c_.stages.size());
  if (s.application > 0) {
    // Provenance chains through the snapshots only: an unchanged pass makes no graph,
    // and shows the graph it left alone.
    st.changed = s.changed;
    if (!s.changed) st.summary = "unchanged";
    for (const std::string& p : s.problems) st.summary += " [problem: " + p + "]";
    st.parent = chain(s.group);
    if (s.changed && s.graph) {
      st.graph = s.graph;
      chain_[s.group] = index;
    } else if (st.parent >= 0) {
      st.graph = c_.stages[size_t(st.parent)].graph;
    }
  } else {
    // The pipeline's own steps: each reads the one before it, the halves read the joint graph.
    st.graph = s.graph;
    if (s.name == "aot_forward_graph" || s.name == "aot_backward_graph") {
      st.parent = joint_;
      chain_[s.name == "aot_forward_graph" ? "forward" : "backward"] = index;
    } else {
      st.parent = chain("");
      chain_[""] = index;
      if (s.name == "aot_joint_graph") joint_ = index;
    }
    if (s.name == "dynamo_output_graph") st.summary = "captured by Kiln's Dynamo";
    if (s.name == "to_aten") st.summary = "lowered to ATen ops";
  }
  count(st);
  c_.stages.push_back(std::move(st));
}

void RegionStageSink::passes_done(const std::string& group) {
  // The graph the code generator reads, coloured by the group the scheduler fuses each node into.
  const int last = chain(group);
  if (last >= 0 && c_.stages[size_t(last)].graph)
    c_.stages[size_t(last)].fusion_groups = fusion_groups_of(*c_.stages[size_t(last)].graph);
}

pipeline::RegionOptions region_options(const LoadOptions& o) {
  pipeline::RegionOptions ro;
  using Codegen = pipeline::RegionOptions::Codegen;
  // As kiln-cli stages: machine code up to its kernel limit (LLVM takes about 10 ms a kernel).
  ro.codegen = o.codegen ? Codegen::Auto : Codegen::None;
  ro.cpu.keep_text = true;
  ro.cuda_source = true;
  ro.cpu.use_cache = false;  // the texts are only kept by a fresh compile
  ro.cancel = o.cancel;
  return ro;
}

}  // namespace

void add_region_stages(SessionCompile& c, pipeline::RegionInput input, int start, const LoadOptions& o) {
  RegionStageSink sink(c, start);
  pipeline::RegionOptions ro = region_options(o);
  if (o.codegen) ro.passes_done = [&](const std::string& group, const std::string&, const pipeline::CompileResult&) { sink.passes_done(group); };
  pipeline::run_region(std::move(input), ro, [&](const pipeline::Stage& s) { sink(s); });
}

void SessionCompile::diagnostics_note(const std::string& group, const std::string& message) {
  std::string note = (group.empty() ? "" : group + ": ") + "no code generated: " + message;
  status_note += status_note.empty() ? note : "; " + note;
}

Expected<std::shared_ptr<Session>> load_program(const std::string& path, const LoadOptions& o) {
  const std::optional<pipeline::Partitioner> partitioner = pipeline::partitioner_named(o.partitioner);
  if (!partitioner) return Status::error("unknown partitioner '" + o.partitioner + "' (default or min-cut)");
  auto t0 = Clock::now();
  auto s = std::make_shared<Session>();
  s->kind = Session::Kind::Program;
  s->path = path;
  s->title = std::filesystem::path(path).filename().string();
  s->source_file = path;
  s->source_text = read_file(path);
  auto report = [&](double f, const std::string& what) {
    if (o.progress) o.progress(f, what);
  };
  auto cancelled = [&] { return o.cancel && o.cancel->load(); };
  report(0.02, "running " + s->title);

  // Programs call loss.backward(): the interpreter takes its derivatives from Kiln's formulas.
  static std::once_flag autograd;
  std::call_once(autograd, [] { aot::install_eager_autograd(); });
  py::VMOptions vo;
  vo.out = [s](std::string_view text) { s->program_output += text; };
  vo.err = [s](std::string_view text) { s->program_output += text; };
  vo.time_limit_s = o.time_limit_s;
  vo.allow_read = o.allow_read;
  vo.allow_write = o.allow_write;
  vo.cancel = o.cancel;
  py::VM vm(vo);
  capture::install_capture(vm);
  int code = 0;
  Status st = vm.run_file(path, &code);
  if (cancelled()) return Status::error("cancelled");
  if (code == 3 && !st.ok()) return st;  // a syntax error or a construct outside the subset
  if (!st.ok()) s->diagnostics.push_back("the program stopped early: " + st.to_string());

  // Breaks and recompiles per callable; regions by compile id.
  std::map<std::string, std::vector<std::string>> recompile_reasons;
  for (const capture::CallableReport& r : capture::capture_reports(vm))
    for (const capture::RecompileRecord& rc : r.recompiles) recompile_reasons[rc.compile_id] = rc.reasons;

  auto regions = capture::compiled_regions(vm);
  size_t done = 0;
  for (const auto& [id, region] : regions) {
    report(0.1 + 0.9 * double(done++) / double(std::max<size_t>(regions.size(), 1)), "compiling [" + id + "]");
    SessionCompile c;
    c.id = id;
    c.frame = id.substr(0, id.find('/'));
    auto t1 = Clock::now();
    // The compiled function: the innermost frame of a node's stack, else the break's.
    for (const Node& n : region->graph.nodes)
      if (!n.meta.stack.empty()) {
        c.function = n.meta.stack.back().function;
        c.file = n.meta.stack.back().file;
        c.line = n.meta.stack.back().line;
        break;
      }
    for (const capture::Guard& g : region->guards) {
      SessionGuard sg;
      sg.kind = g.kind_name();
      sg.text = g.text();
      sg.source = g.source ? g.source->str() : "";
      sg.file = g.user_file;
      sg.line = g.user_line;
      if (g.kind == capture::Guard::Kind::TensorMatch) {
        sg.dtype = std::string(dtype_name(g.dtype));
        sg.sizes = g.sizes;
        sg.dynamic = g.dynamic;
      }
      c.guards.push_back(std::move(sg));
    }
    if (region->break_info) {
      const capture::BreakRecord& b = region->break_record;
      c.breaks.push_back({b.reason, b.explanation, b.file, b.line, b.code});
      if (c.function.empty()) c.function = b.function, c.file = b.file;
    }
    std::string plain = id.substr(0, id.find('_'));
    if (auto it = recompile_reasons.find(plain); it != recompile_reasons.end()) c.recompile_reasons = it->second;
    if (!c.breaks.empty()) {
      c.status = CompileStatus::GraphBreak;
      c.status_note = "graph break: " + c.breaks.front().reason;
    } else if (!c.recompile_reasons.empty()) {
      c.status = CompileStatus::Recompile;
      c.status_note = "recompile: " + c.recompile_reasons.front();
    }
    if (!c.recompile_reasons.empty() && c.status == CompileStatus::GraphBreak)
      c.status_note += "; recompile: " + c.recompile_reasons.front();

    add_region_stages(c, pipeline::RegionInput::captured(vm, *region, *partitioner), -1, o);
    if (cancelled()) return Status::error("cancelled");
    c.compile_seconds = since(t1);
    s->compiles.push_back(std::move(c));
  }
  if (s->compiles.empty()) s->diagnostics.push_back("the program compiled nothing (no torch.compile call ran)");
  s->load_seconds = since(t0);
  report(1, "done");
  return s;
}

namespace {

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
int trace_parent(const SessionCompile& c, const std::string& base, const std::string& name) {
  auto find = [&](std::string_view n) { return c.stage_index(n); };
  bool second = name.ends_with("#2");
  if (base == "aot_forward_graph" || base == "aot_backward_graph") {
    int j = find("aot_joint_graph");
    return j >= 0 ? j : find("dynamo_output_graph");
  }
  if (base == "dynamo_output_graph") return -1;
  // Inductor stages of the backward are logged a second time under the same id.
  if (second) return find("aot_backward_graph");
  for (int i = int(c.stages.size()) - 1; i >= 0; --i)
    if (c.stages[size_t(i)].kind == StageKind::Graph && !c.stages[size_t(i)].name.ends_with("#2")) return i;
  return -1;
}

}  // namespace

Expected<std::shared_ptr<Session>> load_trace(const std::string& path, const LoadOptions& o) {
  auto t0 = Clock::now();
  auto s = std::make_shared<Session>();
  s->kind = Session::Kind::Trace;
  s->path = path;
  s->title = std::filesystem::path(path).filename().string();
  if (s->title.empty()) s->title = std::filesystem::path(path).parent_path().filename().string();
  Expected<trace::Trace> t = Status::error("not read");
  if (o.workspace) {
    if (o.progress) o.progress(0.1, "indexing " + s->title);
    t = trace::open_trace_cached(path, o.workspace, &s->from_store);
  } else {
    trace::ReadOptions ro;
    ro.cancel = o.cancel;
    if (o.progress) ro.progress = [&](double f) { o.progress(0.9 * f, "indexing " + s->title); };
    t = trace::open_trace(path, ro);
  }
  if (!t) return t.status();
  auto tr = std::make_shared<trace::Trace>(std::move(*t));
  s->trace = tr;
  for (const trace::Diagnostic& d : tr->diagnostics)
    s->diagnostics.push_back(d.file + ":" + std::to_string(d.line) + ": " + d.message);
  std::map<int, std::string> lines;
  for (const trace::CompileEntry& e : tr->entries) {
    if (e.artifacts.empty() && e.graph_breaks.empty() && !e.metrics) continue;  // "unknown": only timings
    SessionCompile c;
    c.id = e.label;
    c.frame = e.id.frame_id ? std::to_string(*e.id.frame_id) : e.label;
    c.function = e.function();
    c.file = e.function_file();
    c.line = e.function_line();
    c.status = trace_status(e, c.status_note);
    c.recompile_reasons = e.recompile_reasons;
    if (e.metrics && e.metrics->entire_frame_compile_time_s) c.compile_seconds = *e.metrics->entire_frame_compile_time_s;
    if (s->source_file.empty() && !c.file.empty()) s->source_file = c.file;
    for (const trace::GraphBreak& b : e.graph_breaks) {
      std::string code = b.user_stack.empty() ? "" : b.user_stack.back().code;
      c.breaks.push_back({b.reason, b.detail, b.file, b.line, code});
      if (b.file == s->source_file && !code.empty()) lines[b.line] = code;
    }
    for (const trace::StackFrame& f : e.stack)
      if (f.file == s->source_file && !f.code.empty()) lines[f.line] = f.code;
    for (const trace::Artifact& a : e.artifacts) {
      SessionStage st;
      st.name = a.name;
      st.pass = a.base;
      st.artifact = a.name;
      if (trace::is_graph_stage(a.base)) {
        st.kind = StageKind::Graph;
        // Sizes for the tree from the text's lines; the graph itself is parsed when shown.
        if (auto text = tr->payload_text(e, a.name)) {
          trace::GraphCounts gc = trace::count_graph_text(*text);
          st.nodes = gc.nodes;
          st.ops = gc.ops;
        }
        st.parent = trace_parent(c, a.base, a.name);
        c.stages.push_back(std::move(st));
      } else if (a.base == "inductor_output_code" || a.base == "output_code" || a.base == "ir_pre_fusion" ||
                 a.base == "ir_post_fusion" || a.base == "dynamo_cpp_guards_str") {
        auto text = tr->payload_text(e, a.name);
        if (!text) continue;
        if (a.base == "dynamo_cpp_guards_str") {
          // One guard per "+- KIND: text" line of the guard-manager tree.
          std::istringstream in(*text);
          for (std::string line; std::getline(in, line);) {
            size_t p = line.find("+- ");
            if (p == std::string::npos) continue;
            std::string rest = line.substr(p + 3);
            size_t colon = rest.find(':');
            if (colon == std::string::npos || colon == 0) continue;
            std::string kind = rest.substr(0, colon);
            if (kind.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789") != std::string::npos) continue;
            c.guards.push_back(parse_cpp_guard(kind, rest.substr(colon + 1)));
          }
          continue;
        }
        st.kind = StageKind::Code;
        st.language = a.base.starts_with("ir_") ? "text" : "python";
        st.text = std::move(*text);
        st.summary = std::to_string(std::count(st.text.begin(), st.text.end(), '\n')) + " lines";
        c.stages.push_back(std::move(st));
      }
    }
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
  if (!s->source_file.empty()) s->source_text = read_file(s->source_file);
  for (const auto& [line, code] : lines) s->known_lines.push_back({line, code});
  s->load_seconds = since(t0);
  if (o.progress) o.progress(1, "done");
  return s;
}

Expected<std::shared_ptr<Session>> load_session(const std::string& path, const LoadOptions& o) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Status::error(path + ": no such file or folder");
  if (path.ends_with(".pt2"))  // a zip, which the readers would misname
    return Status::error(path + ": a torch.export archive; Kiln reads the TORCH_TRACE log of the run that exported it instead");
  if (is_kiln_repro(path)) return load_kiln_repro(path, o);
  bool is_program = false;
  if (path.ends_with(".py") && std::filesystem::is_regular_file(path, ec)) {
    // A PyTorch minifier file has a `class Repro`; the rest are Kiln programs.
    std::string text = read_file(path);
    is_program = text.find("class Repro") == std::string::npos;
  }
  return is_program ? load_program(path, o) : load_trace(path, o);
}

Expected<std::shared_ptr<const Graph>> stage_graph(const Session& s, const SessionCompile& c, const SessionStage& st) {
  if (st.kind != StageKind::Graph) return Status::error(st.name + " is not a graph");
  if (st.graph) return st.graph;
  if (!s.trace || st.artifact.empty()) return Status::error(st.name + ": no graph");
  const trace::CompileEntry* e = s.trace->find(c.id);
  if (!e) return Status::error(c.id + ": not in the trace");
  return s.trace->graph(*e, st.artifact);
}

}  // namespace kiln::session
