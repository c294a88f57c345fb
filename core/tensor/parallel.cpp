#include "core/tensor/parallel.h"

#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <memory>
#include <mutex>

namespace kiln {
namespace {
std::mutex g_mutex;
std::unique_ptr<tbb::global_control> g_control;
int g_threads = 0;
}  // namespace

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
  std::lock_guard lock(g_mutex);
  return g_threads > 0 ? g_threads : int(tbb::info::default_concurrency());
}

void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn) {
  if (end <= begin) return;
  grain = std::max<int64_t>(grain, 1);
  if (end - begin <= grain) {
    fn(begin, end);
    return;
  }
  // Static chunks, one or a few per thread: eager loops are uniform, and a fixed
  // partition keeps each thread streaming through one contiguous block.
  int64_t threads = num_threads();
  int64_t chunks = std::min<int64_t>((end - begin + grain - 1) / grain, threads * 4);
  int64_t step = (end - begin + chunks - 1) / chunks;
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
