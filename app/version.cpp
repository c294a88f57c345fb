#include "app/version.h"

#include <string>

#include "compiler/runtime/backend_info.h"

#ifdef KILN_WITH_MIMALLOC
#include <mimalloc.h>

#include <new>

// mimalloc's own operator new is C: when memory runs out it calls abort(),
// as it cannot throw. These replace it (an executable's definitions win over
// every library's) with the standard's behaviour, std::bad_alloc, which the VM
// turns into the program's MemoryError at its line (docs/limits.md). The
// nothrow and delete forms stay mimalloc's: they free what mi_malloc made.
void* operator new(std::size_t n) {
  if (void* p = mi_malloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  if (void* p = mi_malloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t a) {
  if (void* p = mi_malloc_aligned(n, std::size_t(a))) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) {
  if (void* p = mi_malloc_aligned(n, std::size_t(a))) return p;
  throw std::bad_alloc();
}

namespace {
// mimalloc prints its own error when memory runs out; the MemoryError says it, at the program's line.
[[maybe_unused]] const bool allocator_errors_quiet = [] {
  mi_option_disable(mi_option_show_errors);
  return true;
}();
}  // namespace
#endif

namespace kiln {

const char* version_string() {
  static const std::string text = [] {
    std::string llvm = llvm_version();
    std::string s = std::string(KILN_VERSION) + " (LLVM " + (llvm.empty() ? "off" : llvm);
    // NVRTC and the driver are opened only when a GPU compile asks for them.
    s += ", CUDA backend built; NVRTC and libcuda loaded at run time";
#ifdef KILN_WITH_MIMALLOC
    // mi_version() is 209 for 2.0.9; calling it also keeps the library linked.
    const int mi = mi_version();
    s += ", mimalloc " + std::to_string(mi / 100) + "." + std::to_string(mi / 10 % 10) + "." +
         std::to_string(mi % 10);
#endif
    return s + ")";
  }();
  return text.c_str();
}

}  // namespace kiln
