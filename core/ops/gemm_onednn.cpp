#include "core/ops/gemm_onednn.h"

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <type_traits>

#include "core/tensor/openmp_runtime.h"
#include "core/util/status.h"

#ifdef KILN_WITH_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_version.h>
#define KILN_STR2(x) #x
#define KILN_STR(x) KILN_STR2(x)
#endif

namespace kiln::gemm::onednn {
namespace {

// Debian's oneDNN threads with OpenMP (libgomp). libgomp reads its wait
// policy once, when it loads, so it is opened through openmp_runtime.h (which
// sets Kiln's default first) before libdnnl brings it in.
struct Library {
  using Sgemm = int (*)(char, char, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                        float, float*, int64_t);
  Sgemm sgemm = nullptr;
  void (*set_threads)(int) = nullptr;
  void* handle = nullptr;
  std::string error, description;
};

// Set in a fork child when the parent had started OpenMP threads: libgomp's
// pool does not survive fork (a child's parallel region waits forever on
// threads it does not have), so the child multiplies on its own thread.
std::atomic<bool> g_team_started{false};
bool g_after_fork = false;
void on_fork_child() { g_after_fork = g_team_started.load(std::memory_order_relaxed); }

Library open_library() {
  Library lib;
#ifdef KILN_WITH_ONEDNN
  const char* soname = "libdnnl.so." KILN_STR(DNNL_VERSION_MAJOR);
  const omp::Runtime* openmp = omp::runtime();
  const std::string wait = openmp ? openmp->wait : omp::load_error();
  void* h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    lib.error = std::string("dlopen ") + soname + ": " + (e ? e : "unknown error");
    return lib;
  }
  // The header's own declarations give the types; dlsym the addresses.
  static_assert(std::is_same_v<decltype(&dnnl_sgemm), dnnl_status_t (*)(char, char, dnnl_dim_t, dnnl_dim_t, dnnl_dim_t,
                                                                        float, const float*, dnnl_dim_t, const float*,
                                                                        dnnl_dim_t, float, float*, dnnl_dim_t)>);
  static_assert(std::is_same_v<dnnl_dim_t, int64_t> && sizeof(dnnl_status_t) == sizeof(int));
  lib.sgemm = reinterpret_cast<Library::Sgemm>(dlsym(h, "dnnl_sgemm"));
  auto version = reinterpret_cast<decltype(&dnnl_version)>(dlsym(h, "dnnl_version"));
  // libgomp came in with libdnnl; dlsym on the handle searches its dependencies.
  lib.set_threads = reinterpret_cast<void (*)(int)>(dlsym(h, "omp_set_num_threads"));
  if (!lib.sgemm || !version || !lib.set_threads) {
    lib.error = std::string(soname) + ": dnnl_sgemm, dnnl_version or omp_set_num_threads missing";
    lib.sgemm = nullptr;
    return lib;
  }
  const dnnl_version_t* v = version();
  lib.handle = h;
  lib.description = "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                    std::to_string(v->patch) + " (OpenMP, " + wait + ")";
  pthread_atfork(nullptr, nullptr, on_fork_child);
#else
  lib.error = "this build has no oneDNN (KILN_ONEDNN=OFF)";
#endif
  return lib;
}

const Library& library() {
  static const Library lib = open_library();
  return lib;
}

}  // namespace

bool available() { return library().sgemm != nullptr; }
const std::string& load_error() { return library().error; }
const std::string& description() { return library().description; }

namespace detail {
void* library_handle() { return library().handle; }

int prepare_threads(int threads) {
  const Library& lib = library();
  if (g_after_fork) threads = 1;
  thread_local int applied = 0;
  if (applied != threads) {
    lib.set_threads(threads);
    applied = threads;
  }
  if (threads > 1) g_team_started.store(true, std::memory_order_relaxed);
  return threads;
}
}  // namespace detail

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc, int threads) {
  const Library& lib = library();
  KILN_CHECK(lib.sgemm, "oneDNN sgemm called without the library: ", lib.error);
  detail::prepare_threads(threads);
  int status = lib.sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  KILN_CHECK(status == 0, "oneDNN sgemm failed with status ", status, " (", m, " x ", k, " x ", n, ")");
}

}  // namespace kiln::gemm::onednn
