// libFuzzer target: the Python-subset interpreter end to end. Arbitrary text
// is lexed, parsed, compiled and disassembled; whatever compiles is also run by
// a fresh VM with torch importable and torch.compile hooked up (capture, eager
// backend), so the interpreter, the torch bindings, the tracer and the guards
// all see fuzzed programs. A program may fail with any Python error; it must
// never crash, hang, overflow the stack or exhaust memory. An input that is a
// ZIP archive (seeded with torch.save files) is given to torch.load instead.
//
// Budgets keep every run short and small: a step budget stops endless loops,
// the VM's recursion limit stops deep recursion, tensors over a few million
// elements are refused, and the heap is capped (see operator new below) so that
// `[0]*10**9` and the like end in a MemoryError instead of a libFuzzer OOM.
#include <sanitizer/allocator_interface.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <string_view>

#include "compiler/aot/eager_autograd.h"
#include "compiler/capture/capture.h"
#include "core/python/code.h"
#include "core/python/compiler.h"
#include "core/python/vm.h"

namespace {

// Live heap bytes a program may add on top of what was live before it ran.
constexpr size_t kHeapBudget = size_t(256) << 20;
size_t heap_limit = 0;  // 0: no program running
size_t unchecked_bytes = 0;
const bool verbose = std::getenv("KILN_FUZZ_VERBOSE") != nullptr;

// Refuses an allocation that would take the heap over the budget. Asking ASan
// for the live total costs a lock, so small allocations are only counted and the
// total is checked once they add up to a megabyte.
void* budgeted_alloc(size_t n) {
  if (heap_limit) {
    unchecked_bytes += n;
    if (n >= (size_t(1) << 20) || unchecked_bytes >= (size_t(1) << 20)) {
      unchecked_bytes = 0;
      if (n > kHeapBudget || __sanitizer_get_current_allocated_bytes() + n > heap_limit) throw std::bad_alloc();
    }
  }
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}

void* budgeted_aligned_alloc(size_t n, std::align_val_t align) {
  if (heap_limit && (n > kHeapBudget || __sanitizer_get_current_allocated_bytes() + n > heap_limit))
    throw std::bad_alloc();
  size_t a = std::max(size_t(align), sizeof(void*));
  if (void* p = std::aligned_alloc(a, (std::max<size_t>(n, 1) + a - 1) / a * a)) return p;
  throw std::bad_alloc();
}

void run_compiled(const kiln::py::CodePtr& code, std::string_view source, const std::string& readable = "") {
  (void)kiln::py::disassemble(*code);
  kiln::py::VMOptions options;
  if (!readable.empty()) options.allow_read = {readable};
  options.out = [](std::string_view) {};
  options.err = [](std::string_view) {};
  options.max_steps = 200'000;
  options.max_tensor_numel = int64_t(1) << 22;
  heap_limit = __sanitizer_get_current_allocated_bytes() + kHeapBudget;
  {
    kiln::py::VM vm(options);
    kiln::aot::install_eager_autograd();
    kiln::capture::install_capture(vm);
    kiln::Status status = vm.run_source(source, "fuzz.py");
    // KILN_FUZZ_VERBOSE=1 shows how a program ended, to tell budgets from real errors.
    if (verbose && !status.ok()) std::fprintf(stderr, "fuzz_python: %s\n", status.to_string().c_str());
  }
  heap_limit = 0;
}

}  // namespace

// Tensor storage comes from aligned_alloc, not operator new: ASan refuses (with
// a null the storage turns into std::bad_alloc) any single block over 256 MiB.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1:max_allocation_size_mb=256"; }
// Undefined behaviour (an overflowing size computation, say) is a finding, not a warning.
extern "C" const char* __ubsan_default_options() { return "halt_on_error=1:print_stacktrace=1"; }

void* operator new(size_t n) { return budgeted_alloc(n); }
void* operator new[](size_t n) { return budgeted_alloc(n); }
void* operator new(size_t n, std::align_val_t a) { return budgeted_aligned_alloc(n, a); }
void* operator new[](size_t n, std::align_val_t a) { return budgeted_aligned_alloc(n, a); }
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  try {
    return budgeted_alloc(n);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { std::free(p); }

// The archive goes to a file of this process's own (torch.load reads paths).
void load_archive(const uint8_t* data, size_t size) {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/fuzz_torch_load_XXXXXX";
    const char* d = mkdtemp(tmpl);
    return std::string(d ? d : "/tmp");
  }();
  const std::string path = dir + "/input.pt";
  if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  const std::string source = "import torch\nx = torch.load('" + path + "')\nprint(x)\n";
  auto code = kiln::py::compile_module(source, "fuzz.py");
  if (code.ok()) run_compiled(*code, source, dir);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size >= 4 && data[0] == 'P' && data[1] == 'K' && data[2] == 3 && data[3] == 4) {
    load_archive(data, size);
    return 0;
  }
  std::string_view source(reinterpret_cast<const char*>(data), size);
  auto code = kiln::py::compile_module(source, "fuzz.py");
  if (code.ok()) run_compiled(*code, source);
  return 0;
}
