#pragma once
// CPU code generation: Inductor's C++ backend, but through LLVM's IRBuilder,
// O3 pipeline and ORC JIT instead of a C++ compiler, so a graph compiles in
// milliseconds. Each loop group of a ScheduledProgram becomes one function
//
//   void group(char* const* buffers, int64_t outer_begin, int64_t outer_end)
//
// that runs the group's outer points [outer_begin, outer_end): the runtime
// splits the outer range over its thread pool. `buffers[i]` is the base of
// Program::buffers[i] (element 0 of its flat index space). Extern groups get
// no function: the runtime calls them.
//
// LLVM stays inside the .cpp files of this folder. How loops are laid out and
// vectorized: docs/codegen_cpu.md.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compiler/sched/schedule.h"
#include "core/util/status.h"

namespace kiln::codegen::cpu {

using GroupFn = void (*)(char* const* buffers, int64_t outer_begin, int64_t outer_end);

// What KILN_INJECT_BUG asks for (CLI.md): relu miscompiled on purpose, as
// Inductor's inject_relu_bug_TESTING_ONLY, for the minifier's tests.
enum class InjectedBug { None, ReluAccuracy, ReluCompileError, ReluCrash };
// Parses "relu:accuracy" / "relu:compile-error" / "relu:crash" ("" is None); anything else is a Status.
Expected<InjectedBug> parse_injected_bug(const std::string& text);
// From the environment variable; a bad value is a Status naming it.
Expected<InjectedBug> injected_bug_from_env();

struct Options {
  int opt_level = 3;
  // Keep the LLVM IR before and after optimization and the assembly (the
  // stepper's stages); off, the compile skips printing and the assembly pass.
  bool keep_text = false;
  InjectedBug inject_bug = InjectedBug::None;
  // Set from another thread (a closing window, a cancelled panel): compile()
  // returns "cancelled" within milliseconds. LLVM's passes cannot be stopped
  // midway, so with a cancel flag they run on a thread of their own, which
  // skips what passes it can and finishes alone; the process waits for such
  // threads only as it exits.
  const std::atomic<bool>* cancel = nullptr;
  // Called as each step begins ("llvm_ir", "optimize", "assembly", "object",
  // "link"): the steps take seconds on big graphs, and a progress bar that
  // only moves when the compile ends looks stuck.
  std::function<void(const char* step)> on_step;
};

// How one group's loops are split: the outer points the runtime distributes,
// and the work (elements) each one does, which sets the parallel grain.
struct GroupCode {
  bool is_extern = false;
  std::string symbol;
  GroupFn fn = nullptr;
  int64_t outer_numel = 0;
  int64_t work_per_outer = 1;
};

struct CompileTimes {
  double emit_ms = 0, optimize_ms = 0, codegen_ms = 0, link_ms = 0;
};

// Code living in the JIT; destroying the module frees it.
class Module {
 public:
  virtual ~Module() = default;
  std::vector<GroupCode> groups;  // one per ScheduledProgram::groups, in order
  std::string llvm_ir, llvm_ir_optimized, assembly;  // with Options::keep_text
  std::string object;  // the relocatable object: what the compile cache keeps
  CompileTimes times;
};

// Compiles every loop group. What the generator cannot take (a symbolic size,
// an op or dtype it has no rule for, an injected compile error) is a Status.
Expected<std::unique_ptr<Module>> compile(const sched::ScheduledProgram& s, const Options& options);

// Links object code an earlier compile() of the same program produced (the
// compile cache), skipping IR construction and optimization.
Expected<std::unique_ptr<Module>> load_object(const sched::ScheduledProgram& s, std::string object);

// The target the code is generated for: triple, CPU, features, LLVM version.
// Part of the compile cache's key.
std::string target_description();

}  // namespace kiln::codegen::cpu
