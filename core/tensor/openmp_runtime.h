#pragma once
// libgomp, opened at run time and shared: oneDNN's GEMMs run on its OpenMP
// team, and so do Kiln's own parallel loops (parallel.cpp), so that the
// threads that just finished a GEMM are the ones that run the epilogue after
// it, instead of a second pool (TBB) competing with them for the cores.
// Opened with dlopen, not linked, because libgomp reads its wait policy once,
// when it loads: the default below is set first.
#include <string>

namespace kiln::omp {

struct Runtime {
  // GOMP_parallel(fn, data, num_threads, flags): fn(data) on each thread of a team.
  void (*parallel)(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags) = nullptr;
  int (*thread_num)() = nullptr;
  int (*team_size)() = nullptr;
  std::string wait;  // "GOMP_SPINCOUNT=1000", as the process runs it
};

// Null when libgomp cannot be opened. Sets GOMP_SPINCOUNT first unless the
// user chose OMP_WAIT_POLICY or GOMP_SPINCOUNT.
const Runtime* runtime();
// Why runtime() is null ("" when it is not).
const std::string& load_error();

}  // namespace kiln::omp
