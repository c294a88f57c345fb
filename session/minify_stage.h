#pragma once
// Minifying a stage graph of a session, in-process: what the workbench's
// minifier panel runs on its worker. The candidates still run in child
// processes (minifier/isolation.h), so a compiler crash or hang in one never
// takes the caller down; progress and cancel are minify()'s own callbacks.
#include <atomic>
#include <functional>
#include <string>

#include "core/util/status.h"
#include "minifier/minify.h"
#include "session/session.h"

namespace kiln::session {

struct StageMinifyRequest {
  std::string check = "accuracy";  // accuracy, compile-error, crash, cpu-gpu-mismatch, oracle
  double tolerance = 1e-3;
  int jobs = 2;
  double timeout_s = 60;  // per candidate
  // KILN_INJECT_BUG for the candidates' compiles: "" takes the environment, "none" ignores it.
  std::string inject_bug;
  // oracle: real PyTorch judges each candidate's repro.py through persistent
  // workers started with this Python (minifier/oracle_pool.h), its inputs on
  // torch_device; repro_inject is Inductor's own injected bug (KILN_REPRO_INJECT).
  std::string oracle_python, oracle_worker, torch_device = "cpu", repro_inject;
  std::string out_dir;  // gets repro/, repro.py and the journal minify.db
  // When set, only this node's subgraph is minified: the node as the one
  // output, and what it depends on (the numerics panel's "Minify from here").
  std::string node;
  std::function<void(const minify::Progress&)> progress;  // called on the minifying thread
  const std::atomic<bool>* cancel = nullptr;
};

struct StageMinifyResult {
  minify::MinifyResult run;
  std::string repro_dir, torch_repro;  // empty when cancelled before the first step
  size_t initial_ops = 0, final_ops = 0;
  std::string input;  // what was minified: the trace stage or the graph file written for it
};

// The graph stage `stage` of compile `compile`: a trace stage is read as
// `kiln-cli minify TRACE --compile-id --stage` reads it (inputs from its
// load_args where it has them); a program's stage is written to
// OUT/input_graph.txt first, in print_readable form, and read from there.
Expected<StageMinifyResult> minify_stage(const Session& s, int compile, int stage, const StageMinifyRequest& request);

}  // namespace kiln::session
