#pragma once
// The eager and compiled kernels' thread pool: libgomp's OpenMP team, shared
// with oneDNN's GEMMs (openmp_runtime.h), or TBB when KILN_PARALLEL=tbb or
// libgomp does not load. Work below `grain` elements stays on the calling
// thread: spawning costs more than it saves for small tensors.
#include <cstdint>
#include <functional>

namespace kiln {

inline constexpr int64_t kParallelGrain = 32768;

// Limits eager kernels to n threads (n <= 0: all hardware threads). Process-wide.
void set_num_threads(int n);
int num_threads();
// "OpenMP (libgomp)" or "TBB", for --version and the benchmarks.
const char* parallel_backend_name();

// Calls fn(b, e) over disjoint subranges covering [begin, end), in parallel when
// the range is longer than grain.
void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn);

}  // namespace kiln
