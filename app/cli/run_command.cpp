// `kiln-cli run PROGRAM.py [--backend B] [-- ARGS...]` and `kiln-cli explain PROGRAM.py [--json] [-- ARGS...]` (CLI.md).
//
// Exit codes: what the program's own run gives (0, or 1 for an error it
// raised, as python3 exits), and 3 for a missing file, a syntax error or a
// construct outside Kiln's Python subset.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "app/cli/commands.h"
#include "app/cli/program_limits.h"
#include "compiler/capture/capture.h"
#include "compiler/pipeline/region_backends.h"
#include "core/python/vm.h"
#include "core/util/output_text.h"

namespace kiln::cli {
namespace {

struct RunOptions {
  std::string program;
  std::string backend = "kiln";
  std::vector<std::string> args;  // the program's own, after `--`: its sys.argv[1:]
  bool json = false;
  ProgramLimits limits;
};

capture::CaptureOptions capture_options(const RunOptions& o) {
  capture::CaptureOptions c;
  c.default_backend = o.backend;
  // "none": torch.compile returns its argument, the plain eager run a backend is compared with.
  c.disable_compile = o.backend == "none";
  if (const char* logs = std::getenv("KILN_LOGS")) c.logs = capture::LogConfig::parse(logs);
  if (const char* dir = std::getenv("KILN_TRACE")) c.trace_dir = dir;
  return c;
}

// Backends that run regions through Kiln's later stages (aot_eager, decomp_eager).
void install_backends(py::VM& vm, capture::CaptureOptions& c) {
  c.backend_runner = [&vm](const std::string& backend, const std::string& mode, const std::string& id) {
    return pipeline::region_runner(vm, backend, mode, id);
  };
}

int run_program(py::VM& vm, const RunOptions& o) {
  int code = 0;
  Status st = vm.run_file(o.program, &code);
  // sys.exit(n) ends quietly, as python3 does (argparse's usage errors among them).
  if (!st.ok() && !st.message().starts_with("SystemExit")) std::fprintf(stderr, "kiln-cli: %s\n", st.to_string().c_str());
  return code;
}

int run(const RunOptions& o) {
  py::VMOptions vo;
  apply_limits(o.limits, o.program, o.backend == "kiln-cuda", vo);
  vo.argv.push_back(o.program);
  vo.argv.insert(vo.argv.end(), o.args.begin(), o.args.end());
  py::VM vm(vo);
  capture::CaptureOptions co = capture_options(o);
  install_backends(vm, co);
  capture::install_capture(vm, co);
  int code = run_program(vm, o);
  std::fflush(stdout);
  return code;
}

void print_explain_text(const std::vector<capture::CallableReport>& reports) {
  for (const capture::CallableReport& r : reports) {
    std::printf("=== %s\n", r.name.c_str());
    std::printf("Graph Count: %zu\nGraph Break Count: %d\nOp Count: %d\n", r.graphs.size(), r.graph_break_count(), r.op_count());
    std::printf("Break Reasons:\n");
    for (size_t i = 0; i < r.breaks.size(); ++i)
      std::printf("  Break Reason %zu: %s\n    at %s:%d in %s\n", i + 1, r.breaks[i].reason.c_str(), r.breaks[i].file.c_str(),
                  r.breaks[i].line, r.breaks[i].function.c_str());
    std::printf("Guards:\n");
    for (size_t e = 0; e < r.guards.size(); ++e) {
      std::printf("  Entry %zu:\n", e + 1);
      for (const std::string& g : r.guards[e]) std::printf("    %s\n", g.c_str());
    }
    std::printf("Recompiles:\n");
    for (const capture::RecompileRecord& rc : r.recompiles) {
      std::printf("  [%s] %s\n", rc.compile_id.c_str(), rc.function.c_str());
      for (const std::string& why : rc.reasons) std::printf("    - %s\n", why.c_str());
    }
  }
}

nlohmann::json explain_json(const std::vector<capture::CallableReport>& reports) {
  nlohmann::json fns = nlohmann::json::array();
  for (const capture::CallableReport& r : reports) {
    nlohmann::json breaks = nlohmann::json::array();
    for (const capture::BreakRecord& b : r.breaks) {
      nlohmann::json stack = nlohmann::json::array();
      for (const StackFrame& f : b.stack) stack.push_back({{"file", f.file}, {"line", f.line}, {"function", f.function}, {"code", f.code}});
      breaks.push_back({{"reason", b.reason}, {"file", b.file}, {"line", b.line}, {"function", b.function}, {"stack", stack}});
    }
    // Every node as [op, name, target], the shape tests/data/python/*.explain.json uses.
    nlohmann::json graphs = nlohmann::json::array();
    for (const Graph& g : r.graphs) {
      nlohmann::json nodes = nlohmann::json::array();
      for (const Node& n : g.nodes) nodes.push_back({std::string(op_kind_name(n.op)), n.name, n.target});
      graphs.push_back(nodes);
    }
    nlohmann::json recompiles = nlohmann::json::array();
    for (const capture::RecompileRecord& rc : r.recompiles) recompiles.push_back({{"compile_id", rc.compile_id}, {"reasons", rc.reasons}});
    fns.push_back({{"name", r.name},
                   {"graph_count", r.graphs.size()},
                   {"graph_break_count", r.graph_break_count()},
                   {"op_count", r.op_count()},
                   {"break_reasons", breaks},
                   {"guards", r.guards},
                   {"recompiles", recompiles},
                   {"graphs", graphs}});
  }
  return {{"functions", fns}};
}

int explain(const RunOptions& o) {
  // The program's own output is not part of the report.
  py::VMOptions vo;
  vo.out = [](std::string_view) {};
  apply_limits(o.limits, o.program, false, vo);
  vo.argv.push_back(o.program);
  vo.argv.insert(vo.argv.end(), o.args.begin(), o.args.end());
  py::VM vm(vo);
  RunOptions eager = o;
  eager.backend = "eager";
  capture::CaptureOptions co = capture_options(eager);
  co.explain_fresh_first_call = true;
  capture::install_capture(vm, co);
  int code = run_program(vm, o);
  if (code == kExitBadInput) return code;
  std::vector<capture::CallableReport> reports = capture::capture_reports(vm);
  if (o.json) std::printf("%s\n", kiln::json_text(explain_json(reports), 2).c_str());
  else print_explain_text(reports);
  return code;
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* run_cmd = app.add_subcommand("run", "Run a Python-subset PyTorch program");
  run_cmd->add_option("program", opts->program, "the program (.py)")->required();
  run_cmd->add_option("--backend", opts->backend, "backend for torch.compile inside the program")
      ->check(CLI::IsMember({"none", "eager", "aot_eager", "decomp_eager", "inductor", "kiln", "kiln-cuda"}));
  add_limit_options(run_cmd, opts->limits);
  run_cmd->add_option("args", opts->args, "the program's own arguments (its sys.argv[1:]), after --");
  run_cmd->callback([opts, &exit_code] { exit_code = run(*opts); });

  CLI::App* ex = app.add_subcommand("explain", "torch._dynamo.explain for every compiled callable of a program");
  ex->add_option("program", opts->program, "the program (.py)")->required();
  ex->add_flag("--json", opts->json, "JSON output (CLI.md shape)");
  add_limit_options(ex, opts->limits);
  ex->add_option("args", opts->args, "the program's own arguments (its sys.argv[1:]), after --");
  ex->callback([opts, &exit_code] { exit_code = explain(*opts); });
}

}  // namespace kiln::cli
