#include "app/cli/program_limits.h"

#include <CLI/CLI.hpp>

#include <cstdio>

#include "core/python/vm.h"
#include "core/util/limits.h"

namespace kiln::cli {

void add_limit_options(CLI::App* command, ProgramLimits& limits) {
  command->add_option("--time-limit", limits.time_limit_s, "seconds the program may run before TimeoutError (default: no limit)")
      ->check(CLI::PositiveNumber);
  command->add_option("--memory-limit", limits.memory_limit,
                      "bytes the program may hold (K/M/G suffixes) before MemoryError (default: KILN_MEMORY_LIMIT, else "
                      "three quarters of the machine's memory)")
      ->check([](const std::string& text) {
        auto parsed = parse_byte_size(text);
        return parsed.ok() ? std::string() : parsed.status().message();
      });
  command->add_option("--allow-read", limits.allow_read, "a folder the program may read files from (repeatable; default: none)")
      ->check(CLI::ExistingDirectory);
  command->add_option("--allow-write", limits.allow_write, "a folder the program may write (and read) files in (repeatable; default: none)")
      ->check(CLI::ExistingDirectory);
}

void apply_limits(const ProgramLimits& limits, const std::string& program, bool uses_cuda, py::VMOptions& options) {
  if (!limits.memory_limit.empty()) set_memory_budget(*parse_byte_size(limits.memory_limit));
  options.allow_read = limits.allow_read;
  options.allow_write = limits.allow_write;
  if (!uses_cuda) limit_process_heap(memory_budget());
  if (limits.time_limit_s > 0) {
    options.time_limit_s = limits.time_limit_s;
    // The VM raises TimeoutError at the program's line between instructions;
    // a builtin or a tensor kernel that never returns is stopped from outside.
    char text[512];
    std::snprintf(text, sizeof text,
                  "kiln-cli: %s: TimeoutError: the program ran past its time limit of %g s (--time-limit) inside one call "
                  "that did not return to the interpreter (a builtin or a tensor kernel)\n",
                  program.c_str(), limits.time_limit_s);
    start_watchdog(limits.time_limit_s + 2.0, text, 1);
  }
}

}  // namespace kiln::cli
