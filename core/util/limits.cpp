#include "core/util/limits.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace kiln {

namespace {

int64_t physical_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? int64_t(pages) * int64_t(page) : int64_t(8) << 30;
}

int64_t initial_budget() {
  if (const char* env = std::getenv("KILN_MEMORY_LIMIT"))
    if (auto parsed = parse_byte_size(env); parsed.ok()) return *parsed;
  return physical_memory() / 4 * 3;
}

std::atomic<int64_t>& budget() {
  static std::atomic<int64_t> b{initial_budget()};
  return b;
}

std::atomic<int64_t> live_bytes{0};
std::atomic<int64_t> input_limit{0};

}  // namespace

int64_t input_byte_limit() {
  const int64_t set = input_limit.load(std::memory_order_relaxed);
  return set > 0 ? std::min(set, memory_budget()) : memory_budget();
}
void set_input_byte_limit(int64_t bytes) { input_limit.store(bytes, std::memory_order_relaxed); }

int64_t memory_budget() { return budget().load(std::memory_order_relaxed); }
void set_memory_budget(int64_t bytes) { budget().store(bytes, std::memory_order_relaxed); }

Expected<int64_t> parse_byte_size(std::string_view text) {
  std::string s(text);
  char* end = nullptr;
  const double number = std::strtod(s.c_str(), &end);
  std::string unit(end ? end : "");
  if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
  double scale = 1;
  if (unit == "K" || unit == "k") scale = 1024.0;
  else if (unit == "M" || unit == "m") scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "g") scale = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "t") scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty()) scale = -1;
  if (end == s.c_str() || scale < 0 || !std::isfinite(number) || number <= 0 || number * scale >= 9.2e18)
    return Status::error("'" + s + "' is not a size in bytes (a positive number, optionally with K, M, G or T)");
  return int64_t(number * scale);
}

std::string format_bytes(int64_t bytes) {
  const char* units[] = {"bytes", "KB", "MB", "GB", "TB", "PB", "EB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) v /= 1024, ++u;
  char buf[48];
  if (u == 0) std::snprintf(buf, sizeof buf, "%lld bytes", static_cast<long long>(bytes));
  else std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

Status check_declared_bytes(int64_t bytes, const std::string& what, const SourceLocation& where) {
  if (bytes < 0) return Status::error(what + " declares more bytes than a 64-bit size holds", where);
  const int64_t set = input_limit.load(std::memory_order_relaxed);
  if (set > 0 && bytes > set && set <= memory_budget())
    return Status::error(what + " declares " + format_bytes(bytes) + ", over --max-input-bytes " + format_bytes(set), where);
  if (bytes > memory_budget())
    return Status::error(what + " declares " + format_bytes(bytes) + ", over the memory budget of " +
                             format_bytes(memory_budget()) + " (--memory-limit or KILN_MEMORY_LIMIT raise it)",
                         where);
  return {};
}

const char* MemoryBudgetExceeded::what() const noexcept {
  return "tensor memory past the memory budget (--memory-limit)";
}

std::string out_of_memory_text(const std::bad_alloc& e) {
  const bool budget = dynamic_cast<const MemoryBudgetExceeded*>(&e) != nullptr;
  return budget ? "out of memory (tensors past the memory budget; --memory-limit)" : "out of memory";
}

void charge_tensor_bytes(int64_t bytes) {
  const int64_t now = live_bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  if (now > memory_budget()) {
    live_bytes.fetch_sub(bytes, std::memory_order_relaxed);
    throw MemoryBudgetExceeded();
  }
}

void release_tensor_bytes(int64_t bytes) { live_bytes.fetch_sub(bytes, std::memory_order_relaxed); }
int64_t live_tensor_bytes() { return live_bytes.load(std::memory_order_relaxed); }

void limit_process_heap(int64_t budget) {
  // Kiln's own code, LLVM and the JIT need room beyond the program's data.
  const rlim_t limit = rlim_t(budget) + (rlim_t(2) << 30);
  struct rlimit current {};
  if (getrlimit(RLIMIT_DATA, &current) != 0) return;
  if (current.rlim_max != RLIM_INFINITY && current.rlim_max < limit) return;
  struct rlimit wanted = current;
  wanted.rlim_cur = limit;
  setrlimit(RLIMIT_DATA, &wanted);
}

void start_watchdog(double seconds, std::string message, int exit_code) {
  std::thread([seconds, message = std::move(message), exit_code] {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    std::fflush(stdout);
    std::fputs(message.c_str(), stderr);
    std::fflush(stderr);
    _exit(exit_code);
  }).detach();
}

struct PhaseWatchdog::State {
  std::mutex mutex;
  std::condition_variable wake;
  bool disarmed = false;
  std::thread thread;
};

PhaseWatchdog::PhaseWatchdog(double seconds, std::string message, int exit_code, std::string out) : state_(new State) {
  State* s = state_;
  s->thread = std::thread([s, seconds, message = std::move(message), exit_code, out = std::move(out)] {
    std::unique_lock<std::mutex> lock(s->mutex);
    if (s->wake.wait_for(lock, std::chrono::duration<double>(seconds), [s] { return s->disarmed; })) return;
    std::fputs(out.c_str(), stdout);
    std::fflush(stdout);
    std::fputs(message.c_str(), stderr);
    std::fflush(stderr);
    _exit(exit_code);
  });
}

PhaseWatchdog::~PhaseWatchdog() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->disarmed = true;
  }
  state_->wake.notify_all();
  state_->thread.join();
  delete state_;
}

}  // namespace kiln
