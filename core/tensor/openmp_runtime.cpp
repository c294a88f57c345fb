#include "core/tensor/openmp_runtime.h"

#include <dlfcn.h>

#include <cstdlib>

namespace kiln::omp {
namespace {

// After each parallel region libgomp's idle threads spin before they sleep:
// by default 300,000 polls (7.5 ms of CPU per idle thread on the 2-core dev
// machine). 1,000 polls (tens of microseconds) still cover the waits at
// barriers inside one GEMM and do not hold cores a busy machine's other
// processes need; docs/performance.md has the measurements behind the choice.
constexpr const char* kSpinCount = "1000";

struct Loaded {
  Runtime runtime;
  std::string error;
  bool ok = false;
};

Loaded load() {
  Loaded l;
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  if (!policy && !spin) setenv("GOMP_SPINCOUNT", kSpinCount, 0), spin = kSpinCount;
  // (A child process inherits the variable, and reports it as its own.)
  l.runtime.wait = policy ? std::string("OMP_WAIT_POLICY=") + policy : "";
  if (spin) l.runtime.wait += (l.runtime.wait.empty() ? "" : ", ") + std::string("GOMP_SPINCOUNT=") + spin;
  void* h = dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    const char* e = dlerror();
    l.error = std::string("dlopen libgomp.so.1: ") + (e ? e : "unknown error");
    return l;
  }
  l.runtime.parallel = reinterpret_cast<decltype(l.runtime.parallel)>(dlsym(h, "GOMP_parallel"));
  l.runtime.thread_num = reinterpret_cast<int (*)()>(dlsym(h, "omp_get_thread_num"));
  l.runtime.team_size = reinterpret_cast<int (*)()>(dlsym(h, "omp_get_num_threads"));
  if (!l.runtime.parallel || !l.runtime.thread_num || !l.runtime.team_size) {
    l.error = "libgomp.so.1: GOMP_parallel, omp_get_thread_num or omp_get_num_threads missing";
    return l;
  }
  l.ok = true;
  return l;
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

}  // namespace

const Runtime* runtime() { return loaded().ok ? &loaded().runtime : nullptr; }
const std::string& load_error() { return loaded().error; }

}  // namespace kiln::omp
