#pragma once
// Budgets that keep Kiln's memory and time bounded whatever its input
// declares or a program does. The memory budget is checked before a reader
// allocates what a file declares (a repro's storages, a graph's placeholder
// shapes) and by the tensor allocator on every allocation; the time budget
// by the Python VM and a watchdog for a call that never returns to it.
#include <cstdint>
#include <new>
#include <string>
#include <string_view>

#include "core/util/status.h"

namespace kiln {

// Bytes; KILN_MEMORY_LIMIT (with K/M/G suffixes) or three quarters of the
// machine's physical memory until set_memory_budget() changes it.
int64_t memory_budget();
void set_memory_budget(int64_t bytes);

// "512M", "2G", "1.5G", "4096" (K, M, G, T: powers of 1024).
Expected<int64_t> parse_byte_size(std::string_view text);
// "21.7 GB" (powers of 1024, as parse_byte_size reads them).
std::string format_bytes(int64_t bytes);

// What an input file may declare (a repro's storages, a graph's placeholder
// shapes) before anything is allocated: --max-input-bytes; 0 (the default)
// means the memory budget.
int64_t input_byte_limit();
void set_input_byte_limit(int64_t bytes);

// An error naming `what` at `where` when `bytes` is over the input limit
// (--max-input-bytes, else the memory budget), or negative (a declared size
// that overflowed).
Status check_declared_bytes(int64_t bytes, const std::string& what, const SourceLocation& where = {});

// Thrown by the tensor allocator past the budget: a bad_alloc, so the Python
// VM raises MemoryError at the program's line and the minifier's jobs count
// it as out of memory.
class MemoryBudgetExceeded : public std::bad_alloc {
 public:
  const char* what() const noexcept override;
};
// "out of memory", naming the memory budget when that is what ran out.
std::string out_of_memory_text(const std::bad_alloc& e);
// Live tensor storage bytes; the allocator adds and subtracts.
void charge_tensor_bytes(int64_t bytes);    // throws MemoryBudgetExceeded
void release_tensor_bytes(int64_t bytes);
int64_t live_tensor_bytes();

// Also bounds the process's heap (RLIMIT_DATA) at the budget plus room for
// Kiln itself, so lists and strings a program grows end in MemoryError, not
// the kernel's OOM killer. Not for processes that use CUDA (the driver maps
// large regions up front).
void limit_process_heap(int64_t budget);

// After `seconds` of wall time (plus a grace period for the VM to raise
// TimeoutError itself) prints `message` on stderr and exits with `exit_code`:
// for a builtin or a kernel that never returns to the interpreter.
void start_watchdog(double seconds, std::string message, int exit_code);

// The same for one phase (reading a repro and drawing its inputs, which can
// take minutes for what a file declares): disarmed, and its thread joined,
// when it goes out of scope, so a process that forks afterwards (the
// minifier) has one thread again.
class PhaseWatchdog {
 public:
  // `out` is printed on stdout first (a command's --json document, so a
  // reader of stdout gets a verdict too).
  PhaseWatchdog(double seconds, std::string message, int exit_code, std::string out = {});
  ~PhaseWatchdog();
  PhaseWatchdog(const PhaseWatchdog&) = delete;
  PhaseWatchdog& operator=(const PhaseWatchdog&) = delete;

 private:
  struct State;
  State* state_;
};

}  // namespace kiln
