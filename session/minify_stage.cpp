#include "session/minify_stage.h"

#include <filesystem>
#include <fstream>

#include "core/graph/printer.h"
#include "minifier/journal.h"
#include "minifier/minify_outputs.h"
#include "minifier/repro.h"

namespace kiln::session {

namespace fs = std::filesystem;

Expected<StageMinifyResult> minify_stage(const Session& s, int compile, int stage, const StageMinifyRequest& request) {
  if (compile < 0 || size_t(compile) >= s.compiles.size()) return Status::error("no compile " + std::to_string(compile));
  const SessionCompile& c = s.compiles[size_t(compile)];
  if (stage < 0 || size_t(stage) >= c.stages.size()) return Status::error("no stage " + std::to_string(stage) + " in " + c.id);
  const SessionStage& st = c.stages[size_t(stage)];
  if (st.kind != StageKind::Graph) return Status::error(st.name + " is code, not a graph");

  minify::PredicateOptions p;
  Expected<minify::CheckKind> kind = minify::check_from_name(request.check);
  if (!kind) return kind.status();
  if (*kind == minify::CheckKind::Oracle && request.oracle_python.empty())
    return Status::error("the oracle check needs the Python that runs PyTorch (python3, a virtual environment's python)");
  p.kind = *kind;
  p.tolerance = request.tolerance;
  p.inject_bug = request.inject_bug;
  if (p.kind == minify::CheckKind::Oracle) {
    p.oracle_python = request.oracle_python;
    p.oracle_worker = request.oracle_worker;
    p.torch_device = request.torch_device;
    p.torch_check = "accuracy";
    p.repro_inject = request.repro_inject;
  }

  std::error_code ec;
  fs::create_directories(request.out_dir, ec);
  if (ec) return Status::error("cannot make " + request.out_dir + ": " + ec.message());
  StageMinifyResult out;
  Expected<minify::Repro> repro = Status::error("");
  if (s.kind == Session::Kind::Trace) {
    out.input = s.path + " " + c.id + " " + st.artifact;
    repro = minify::read_trace_stage(s.path, c.id, st.artifact);
  } else {
    if (!st.graph) return Status::error(st.name + " has no graph");
    out.input = (fs::path(request.out_dir) / "input_graph.txt").string();
    std::ofstream f(out.input, std::ios::binary);
    f << print_graph_module(*st.graph);
    if (!f.flush()) return Status::error("cannot write " + out.input);
    f.close();
    repro = minify::read_repro(out.input);
  }
  if (!repro) return repro.status();
  Expected<minify::Candidate> start = minify::candidate_of(*repro, /*runs_in_kiln=*/p.kind != minify::CheckKind::Oracle);
  if (!start) return start.status();
  if (!request.node.empty()) {
    NodeId id = start->graph.find(request.node);
    if (id == kNoNode || start->graph[id].op != OpKind::CallFunction)
      return Status::error("no call node " + request.node + " in " + st.name);
    minify::set_outputs(start->graph, {Arg::node(id)});
    minify::prune(*start);
    out.input += " (the subgraph of " + request.node + ")";
  }
  out.initial_ops = minify::op_count(start->graph);

  Expected<std::unique_ptr<minify::Journal>> journal =
      minify::Journal::open((fs::path(request.out_dir) / "minify.db").string());
  if (!journal) return journal.status();
  minify::MinifyOptions mo;
  mo.predicate = p;
  mo.jobs = request.jobs;
  mo.limits.timeout_s = request.timeout_s;
  mo.journal = journal->get();
  mo.input_name = out.input;
  mo.cancel = request.cancel;
  mo.progress = request.progress;
  Expected<minify::MinifyResult> r = minify::minify(std::move(*start), mo);
  if (!r) return r.status();
  out.run = std::move(*r);
  out.final_ops = minify::op_count(out.run.result.graph);
  // Cancelled after some steps: the smaller graph still fails as the input
  // did, so it is written as kiln-cli minify writes it on SIGTERM.
  if (out.run.cancelled && out.run.steps.empty()) return out;
  Expected<minify::MinifyOutputs> written = minify::write_minify_outputs(request.out_dir, out.run, p);
  if (!written) return written.status();
  out.repro_dir = written->repro_dir;
  out.torch_repro = written->torch_repro;
  return out;
}

}  // namespace kiln::session
