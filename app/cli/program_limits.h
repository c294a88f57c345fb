#pragma once
// --time-limit, --memory-limit, --allow-read and --allow-write for the commands that run a program
// (run, explain, stages); docs/limits.md says what happens at each limit.
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace kiln::py {
struct VMOptions;
}

namespace kiln::cli {

struct ProgramLimits {
  double time_limit_s = 0;   // 0: none
  std::string memory_limit;  // "2G"; empty: KILN_MEMORY_LIMIT or 3/4 of the machine's memory
  std::vector<std::string> allow_read, allow_write;  // folders for the program's files; none by default
};

void add_limit_options(CLI::App* command, ProgramLimits& limits);

// Sets the memory budget (tensors, and the heap unless `uses_cuda`), the
// VM's time limit, the file folders, and a watchdog for a call that never
// returns to the VM. The options were validated when the command line was parsed.
void apply_limits(const ProgramLimits& limits, const std::string& program, bool uses_cuda, py::VMOptions& options);

}  // namespace kiln::cli
