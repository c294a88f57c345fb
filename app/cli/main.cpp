// kiln-cli: the headless entry point (CLI.md is the contract). Links no Qt Widgets.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string_view>

#include "app/cli/commands.h"
#include "app/version.h"
#include "compiler/aot/eager_autograd.h"
#include "compiler/codegen/cpu/cpu_codegen.h"
#include "compiler/pipeline/cuda_region.h"
#include "core/ops/gemm.h"
#include "core/tensor/parallel.h"
#include "core/util/output_text.h"

int main(int argc, char** argv) {
  // The commands that print what they read from files escape control bytes
  // (a crafted trace must not drive the terminal); `run` and `explain` print
  // the program's own output unchanged, as python3 does.
  if (argc > 1) {
    const std::string_view command = argv[1];
    if (command == "trace" || command == "stages" || command == "minify" || command == "repro") kiln::make_stdio_terminal_safe();
  }
  CLI::App app{"Kiln: a workbench for debugging tensor-graph compilers (headless)", "kiln-cli"};
  app.require_subcommand(1);
  // A function, so that only --version opens the GEMM libraries to name them.
  app.set_version_flag("--version", [] {
    return std::string("kiln-cli ") + kiln::version_string() + "\nGEMM: " + kiln::gemm::describe() +
           "\nParallel loops: " + kiln::parallel_backend_name();
  });
  int exit_code = kiln::cli::kExitOk;
  // A mistyped KILN_INJECT_BUG would otherwise surface only as per-region
  // warnings, with the program running uncompiled: refuse it up front.
  if (auto bug = kiln::codegen::cpu::injected_bug_from_env(); !bug) {
    std::fprintf(stderr, "kiln-cli: %s\n", bug.status().message().c_str());
    return kiln::cli::kExitBadInput;
  }
  // Programs that call backward() run Kiln's derivative formulas.
  kiln::aot::install_eager_autograd();
  kiln::pipeline::install_cuda_device_counter();
  kiln::cli::add_conformance_command(app, exit_code);
  kiln::cli::add_bench_command(app, exit_code);
  kiln::cli::add_trace_command(app, exit_code);
  kiln::cli::add_run_command(app, exit_code);
  kiln::cli::add_grad_check_command(app, exit_code);
  kiln::cli::add_stages_command(app, exit_code);
  kiln::cli::add_opt_command(app, exit_code);
  kiln::cli::add_minify_command(app, exit_code);
  kiln::cli::add_repro_command(app, exit_code);
  kiln::cli::add_numerics_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kiln::cli::kExitUsage;
  }
  return exit_code;
}
