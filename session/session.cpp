#include "session/session.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "compiler/aot/eager_autograd.h"
#include "compiler/capture/capture.h"
#include "compiler/capture/graph_region.h"
#include "compiler/capture/region_tracer.h"
#include "compiler/loopir/lower.h"
#include "compiler/passes/graph_editor.h"
#include "compiler/pipeline/run_region.h"
#include "compiler/pipeline/training_split.h"
#include "compiler/sched/schedule.h"
#include "core/python/vm.h"
#include "core/trace/trace.h"
#include "minifier/repro.h"
#include "session/region_progress.h"
#include "session/session_internal.h"

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

std::vector<std::string> Session::ranks() const {
  std::vector<std::string> out;
  for (const SessionCompile& c : compiles)
    if (std::find(out.begin(), out.end(), c.rank) == out.end()) out.push_back(c.rank);
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
  RegionStageSink(SessionCompile& c, int start, const RegionStageNaming& naming);
  void operator()(const pipeline::Stage& s);
  void passes_done(const std::string& group);  // colours the graph code generation reads

 private:
  int chain(const std::string& group) const;
  std::string group_name(const std::string& group) const;
  void fail(const std::string& note);
  SessionCompile& c_;
  const RegionStageNaming& naming_;
  std::map<std::string, int> chain_;  // per group: the last graph stage
  // The stage the region starts from: the first graph of every group reads it
  // (a dump's joint graph feeds both halves of Kiln's split).
  int start_ = -1;
  int joint_ = -1;
};

RegionStageSink::RegionStageSink(SessionCompile& c, int start, const RegionStageNaming& naming)
    : c_(c), naming_(naming), start_(start), joint_(start) {}

int RegionStageSink::chain(const std::string& group) const {
  auto it = chain_.find(group);
  return it == chain_.end() ? start_ : it->second;
}

std::string RegionStageSink::group_name(const std::string& group) const {
  if (naming_.prefix.empty()) return group;
  std::string prefix = naming_.prefix.substr(0, naming_.prefix.find_last_not_of(' ') + 1);
  return group.empty() ? prefix : prefix + " " + group;
}

void RegionStageSink::fail(const std::string& note) {
  if (naming_.sets_status) c_.status = CompileStatus::Failed;
  c_.status_note = c_.status_note.empty() ? note : c_.status_note + "; " + note;
}

void RegionStageSink::operator()(const pipeline::Stage& s) {
  using Outcome = pipeline::Stage::Outcome;
  if (s.outcome == Outcome::Skipped) {
    // A region without a joint graph says why on its ATen graph; machine code left out, in the status.
    if (s.name == "aot_joint_graph" && chain("") >= 0) c_.stages[size_t(chain(""))].summary += "; no joint graph: " + s.summary;
    else c_.diagnostics_note(group_name(s.group), s.summary);
    return;
  }
  if (s.outcome == Outcome::Failed) {
    if (s.name == "codegen") return c_.diagnostics_note(group_name(s.group), s.summary);
    if (s.name == "cuda_source") return;  // the CPU code is what runs; the GPU source is a view
    const std::string group = group_name(s.group);
    return fail((group.empty() ? "" : group + ": ") + (s.name == "passes" ? "" : s.name + ": ") + s.summary);
  }
  SessionStage st;
  st.pass = s.name;
  st.name = naming_.prefix + s.label();
  st.group = group_name(s.group);
  st.seconds = s.seconds;
  st.summary = s.summary;
  if (naming_.extra_note) st.summary += naming_.extra_note(s);
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

void add_region_stages(SessionCompile& c, pipeline::RegionInput input, int start, const LoadOptions& o,
                       const RegionStageNaming& naming, const std::function<void(double, const std::string&)>& progress) {
  RegionStageSink sink(c, start, naming);
  pipeline::RegionOptions ro = region_options(o);
  RegionProgress done_so_far;
  if (progress)
    ro.on_step = [&](const std::string& group, const std::string& step) {
      done_so_far.step(group, step);
      progress(done_so_far.fraction, done_so_far.what);
    };
  if (o.codegen) ro.passes_done = [&](const std::string& group, const std::string&, const pipeline::CompileResult&) { sink.passes_done(group); };
  pipeline::run_region(std::move(input), ro, [&](const pipeline::Stage& s) { sink(s); });
}

void SessionCompile::diagnostics_note(const std::string& group, const std::string& message) {
  std::string note = (group.empty() ? "" : group + ": ") + "no code generated: " + message;
  status_note += status_note.empty() ? note : "; " + note;
}

Expected<pipeline::Partitioner> partitioner_of(const LoadOptions& o) {
  if (std::optional<pipeline::Partitioner> p = pipeline::partitioner_named(o.partitioner)) return *p;
  return Status::error("unknown partitioner '" + o.partitioner + "' (default or min-cut)");
}

std::shared_ptr<Session> new_session(Session::Kind kind, const std::string& path) {
  auto s = std::make_shared<Session>();
  s->kind = kind;
  s->path = path;
  const std::filesystem::path p(path);
  s->title = p.filename().string().empty() ? p.parent_path().filename().string() : p.filename().string();
  return s;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Expected<std::shared_ptr<Session>> load_program(const std::string& path, const LoadOptions& o) {
  const Expected<pipeline::Partitioner> partitioner = partitioner_of(o);
  if (!partitioner) return partitioner.status();
  auto t0 = Clock::now();
  std::shared_ptr<Session> s = new_session(Session::Kind::Program, path);
  s->source_file = path;
  s->source_text = read_text(path);
  if (o.source_ready) o.source_ready(s->source_text);
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
  // Running the program is the first part (its length unknown); each region's
  // compile moves the bar along its share by the steps it reaches.
  const double share = 0.85 / double(std::max<size_t>(regions.size(), 1));
  for (const auto& [id, region] : regions) {
    const double from = 0.15 + share * double(done++);
    report(from, "compiling [" + id + "]");
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

    add_region_stages(c, pipeline::RegionInput::captured(vm, *region, *partitioner), -1, o, {},
                      [&](double f, const std::string& what) { report(from + share * f, "compiling [" + id + "]: " + what); });
    if (cancelled()) return Status::error("cancelled");
    c.compile_seconds = since(t1);
    s->compiles.push_back(std::move(c));
  }
  if (s->compiles.empty()) s->diagnostics.push_back("the program compiled nothing (no torch.compile call ran)");
  s->load_seconds = since(t0);
  report(1, "done");
  return s;
}

bool is_pytorch_repro_file(const std::string& path) {
  std::error_code ec;
  return path.ends_with(".py") && std::filesystem::is_regular_file(path, ec) &&
         read_text(path).find("class Repro") != std::string::npos;
}

Expected<std::shared_ptr<Session>> load_session(const std::string& path, const LoadOptions& o) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Status::error(path + ": no such file or folder");
  if (path.ends_with(".pt2"))  // a zip, which the readers would misname
    return Status::error(path + ": a torch.export archive; Kiln reads the TORCH_TRACE log of the run that exported it instead");
  if (is_kiln_repro(path)) return load_kiln_repro(path, o);
  const bool is_program = path.ends_with(".py") && !is_pytorch_repro_file(path);
  return is_program ? load_program(path, o) : load_trace(path, o);
}

Expected<std::shared_ptr<const Graph>> stage_graph(const Session& s, const SessionCompile& c, const SessionStage& st) {
  if (st.kind != StageKind::Graph) return Status::error(st.name + " is not a graph");
  if (st.graph) return st.graph;
  // A pass that left a dump's graph as it was shows that graph, parsed on use.
  if (!st.changed && st.parent >= 0 && size_t(st.parent) < c.stages.size() && &c.stages[size_t(st.parent)] != &st)
    return stage_graph(s, c, c.stages[size_t(st.parent)]);
  if (!s.trace || st.artifact.empty()) return Status::error(st.name + ": no graph");
  const trace::CompileEntry* e = s.trace->find(c.id);
  if (!e) return Status::error(c.id + ": not in the trace");
  return s.trace->graph(*e, st.artifact);
}

Expected<std::shared_ptr<const Graph>> numerics_graph(const Session& s, const SessionCompile& c, const SessionStage& st,
                                                      std::string* note) {
  Expected<std::shared_ptr<const Graph>> g = stage_graph(s, c, st);
  if (!g) return g;
  const bool plain = !capture::is_torch_level(**g) && std::all_of((*g)->nodes.begin(), (*g)->nodes.end(), [](const Node& n) {
    return n.op != OpKind::Placeholder || pipeline::meta_tensor_of(n.meta.val);
  });
  const trace::CompileEntry* e = s.trace && !st.artifact.empty() ? s.trace->find(c.id) : nullptr;
  if (plain || !e) return g;
  Expected<minify::Repro> read = minify::read_trace_stage(s.trace->path, e->id.str(), st.artifact);
  if (!read) return read.status();
  if (note) {
    *note = "measured the stage as kiln-cli repro run replays it";
    if (read->lowered_from_torch) *note += ", lowered to ATen by Kiln";
    if (!read->specialized.empty()) *note += ", its SymInts at the values the file recorded";
  }
  return std::make_shared<const Graph>(std::move(read->graph));
}

}  // namespace kiln::session
