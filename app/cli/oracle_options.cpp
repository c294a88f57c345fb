#include "app/cli/oracle_options.h"

#include <CLI/CLI.hpp>

#include "minifier/predicate.h"

namespace kiln::cli {

void add_oracle_options(CLI::App* sub, OracleOptions& o) {
  sub->add_option("--oracle", o.command, "oracle: shell command; {repro} is the path of a PyTorch repro.py of the graph");
  sub->add_option("--oracle-python", o.python,
                  "oracle: persistent PyTorch workers started with this Python, one per -j slot (torch imported once)");
  sub->add_option("--oracle-worker", o.worker, "oracle: a worker script speaking the protocol of minifier/oracle_pool.h instead of Kiln's");
  sub->add_option("--oracle-memory-mb", o.memory_mb,
                  "oracle: a worker holding more resident memory is restarted (default: the machine's memory / (jobs + 1))")
      ->check(CLI::Range(int64_t(64), int64_t(1) << 30));
  sub->add_option("--oracle-match", o.match, "oracle: interesting when this regex matches its output (default: the failure the input shows)");
  sub->add_flag("--allow-eager-failure", o.allow_eager_failure,
                "oracle: go on when the input fails in PyTorch's eager half (repro.py says which half failed)");
  sub->add_option("--torch-device", o.torch_device, "oracle: device of repro.py's inputs (cpu, cuda)");
  sub->add_option("--torch-check", o.torch_check, "oracle: what repro.py checks (accuracy, compile-error, crash)");
}

std::string apply_oracle_options(const OracleOptions& o, minify::PredicateOptions& p) {
  if (!o.command.empty() && !o.python.empty()) return "--oracle and --oracle-python are two ways to run the oracle: give one";
  if (!o.command.empty()) {
    p.oracle_command = o.command;
    p.oracle_python.clear();
  }
  if (!o.python.empty()) {
    p.oracle_python = o.python;
    p.oracle_command.clear();
  }
  if (!o.worker.empty()) p.oracle_worker = o.worker;
  if (!o.match.empty()) p.oracle_match = o.match;
  if (!o.torch_device.empty()) p.torch_device = o.torch_device;
  if (!o.torch_check.empty()) p.torch_check = o.torch_check;
  if (o.memory_mb > 0) p.oracle_memory_mb = o.memory_mb;
  if (o.allow_eager_failure) p.allow_eager_failure = true;
  if (p.kind == minify::CheckKind::Oracle && p.oracle_python.empty() && p.oracle_command.find("{repro}") == std::string::npos)
    return "--check oracle needs --oracle-python PYTHON (persistent workers) or --oracle CMD with {repro} in it (the path of "
           "the PyTorch repro.py of the graph), e.g. --oracle 'python3 {repro}'";
  if (p.kind != minify::CheckKind::Oracle && o.chooses_oracle()) return "--oracle and --oracle-python go with --check oracle";
  return "";
}

}  // namespace kiln::cli
