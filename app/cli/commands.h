#pragma once
// kiln-cli subcommands. Each registers its options on the CLI11 app and returns
// an exit code per CLI.md: 0 ok, 1 the check found failures, 2 usage, 3 bad input.
#include <string>

namespace CLI {
class App;
}
namespace kiln::trace {
class Trace;
}

namespace kiln::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailures = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitBadInput = 3;


// Adds the subcommand to `app`; `run` is set to the function CLI::App calls.
void add_conformance_command(CLI::App& app, int& exit_code);
void add_bench_command(CLI::App& app, int& exit_code);
void add_trace_command(CLI::App& app, int& exit_code);
int run_trace_provenance(const kiln::trace::Trace& t, const std::string& compile_id, bool json);  // trace_provenance.cpp
void add_run_command(CLI::App& app, int& exit_code);  // run and explain
void add_grad_check_command(CLI::App& app, int& exit_code);
void add_stages_command(CLI::App& app, int& exit_code);
void add_opt_command(CLI::App& app, int& exit_code);  // opt_command.cpp
void add_minify_command(CLI::App& app, int& exit_code);
void add_repro_command(CLI::App& app, int& exit_code);  // repro run
// What `repro run` and `minify` print when reading a file and drawing its
// inputs outlast --timeout (repro_command.cpp).
std::string read_timeout_text(const std::string& command, const std::string& file, double timeout_s);
void add_numerics_command(CLI::App& app, int& exit_code);  // numerics_command.cpp

}  // namespace kiln::cli
