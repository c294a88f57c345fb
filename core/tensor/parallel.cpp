#include "core/tensor/parallel.h"

#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>

#include "core/tensor/openmp_runtime.h"

namespace kiln {
namespace {
std::mutex g_mutex;
std::unique_ptr<tbb::global_control> g_control;
int g_threads = 0;

// TBB does not survive fork: a child of a process whose pool has started
// inherits the pool's bookkeeping without its threads, and may wait on them
// forever. The minifier forks candidates from the workbench, which has run
// kernels on the pool, so such a child runs every loop on its own thread.
std::atomic<bool> g_pool_started{false};
bool g_serial_after_fork = false;
void on_fork_child() { g_serial_after_fork = g_pool_started.load(std::memory_order_relaxed); }
[[maybe_unused]] const int g_atfork_registered = pthread_atfork(nullptr, nullptr, on_fork_child);

// The loops run on libgomp's team, which oneDNN's GEMMs use too (see
// openmp_runtime.h), unless KILN_PARALLEL=tbb or libgomp does not load.
const omp::Runtime* openmp() {
  static const omp::Runtime* const rt = [] {
    const char* choice = std::getenv("KILN_PARALLEL");
    return choice && std::strcmp(choice, "tbb") == 0 ? nullptr : omp::runtime();
  }();
  return rt;
}

// One per thread, on a cache line of its own: the next chunk of its home block.
struct alignas(64) NextChunk {
  std::atomic<int64_t> chunk{0};
};

struct TeamJob {
  const std::function<void(int64_t, int64_t)>* fn = nullptr;
  int64_t begin = 0, end = 0, chunks = 0, step = 0, homes = 0;
  std::unique_ptr<NextChunk[]> next;  // per home block
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  std::exception_ptr error;

  int64_t home_first(int64_t h) const { return chunks * h / homes; }
  // Runs the chunks of home block h not claimed yet; false once the job failed.
  bool drain(int64_t h) {
    const int64_t last = home_first(h + 1);
    for (int64_t c = next[size_t(h)].chunk.fetch_add(1, std::memory_order_relaxed); c < last;
         c = next[size_t(h)].chunk.fetch_add(1, std::memory_order_relaxed)) {
      if (failed.load(std::memory_order_relaxed)) return false;
      const int64_t b = begin + c * step, e = std::min(end, b + step);
      if (b < e) (*fn)(b, e);
    }
    return true;
  }
};

// Thread t of the team starts on the t-th contiguous block of chunks, as TBB's
// static partitioner did, so each thread streams through one block. A thread
// that finishes its block takes the unclaimed chunks of the others' (each
// chunk is claimed once, by an atomic counter per block): on a shared or
// virtualized machine one descheduled thread no longer holds up the whole loop.
// Which thread runs a chunk does not change its result: the chunks' bounds are
// fixed before the region starts.
// An exception cannot leave an OpenMP region: the first is kept and rethrown
// by the caller, and the chunks not yet started are skipped, as TBB cancels
// its task group (a cancelled run stops promptly).
void run_team_share(void* data) {
  TeamJob& job = *static_cast<TeamJob*>(data);
  const omp::Runtime& rt = *openmp();
  const int64_t t = rt.thread_num();
  try {
    // A team smaller than asked for leaves home blocks without a thread: they are taken like any other.
    for (int64_t i = 0; i < job.homes; ++i)
      if (!job.drain((t + i) % job.homes)) break;
  } catch (...) {
    std::lock_guard lock(job.error_mutex);
    if (!job.error) job.error = std::current_exception();
    job.failed.store(true, std::memory_order_relaxed);
  }
}
}  // namespace

const char* parallel_backend_name() { return openmp() ? "OpenMP (libgomp)" : "TBB"; }

void set_num_threads(int n) {
  std::lock_guard lock(g_mutex);
  if (n <= 0) {
    g_control.reset();
    g_threads = 0;
    return;
  }
  g_control = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                    size_t(n));
  g_threads = n;
}

int num_threads() {
  if (g_serial_after_fork) return 1;
  std::lock_guard lock(g_mutex);
  return g_threads > 0 ? g_threads : int(tbb::info::default_concurrency());
}

void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn) {
  if (end <= begin) return;
  grain = std::max<int64_t>(grain, 1);
  if (end - begin <= grain || g_serial_after_fork) {
    fn(begin, end);
    return;
  }
  g_pool_started.store(true, std::memory_order_relaxed);
  // Fixed chunks, a few per thread: eager loops are uniform, and a contiguous
  // home block per thread keeps each thread streaming (run_team_share).
  int64_t threads = num_threads();
  int64_t chunks = std::min<int64_t>((end - begin + grain - 1) / grain, threads * 4);
  int64_t step = (end - begin + chunks - 1) / chunks;
  if (const omp::Runtime* rt = openmp()) {
    TeamJob job;
    job.fn = &fn;
    job.begin = begin;
    job.end = end;
    job.chunks = chunks;
    job.step = step;
    job.homes = std::min<int64_t>(threads, chunks);
    job.next = std::make_unique<NextChunk[]>(size_t(job.homes));
    for (int64_t h = 0; h < job.homes; ++h) job.next[size_t(h)].chunk.store(job.home_first(h), std::memory_order_relaxed);
    // Always the full team: libgomp re-docks its threads when a region asks
    // for another team size than the last (oneDNN asks for all of them).
    rt->parallel(run_team_share, &job, unsigned(threads), 0);
    if (job.error) std::rethrow_exception(job.error);
    return;
  }
  tbb::parallel_for(
      tbb::blocked_range<int64_t>(0, chunks, 1),
      [&](const tbb::blocked_range<int64_t>& r) {
        for (int64_t c = r.begin(); c != r.end(); ++c) {
          int64_t b = begin + c * step;
          int64_t e = std::min(end, b + step);
          if (b < e) fn(b, e);
        }
      },
      tbb::static_partitioner());
}

}  // namespace kiln
