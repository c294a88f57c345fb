#pragma once
// NVRTC and the CUDA driver API, loaded with dlopen on first use. Kiln is built
// and started on machines with no CUDA at all, so nothing here includes a CUDA
// header or links libcuda/libnvrtc: every entry point returns a Status naming
// what is missing instead of failing to load or crashing. docs/cuda_runtime.md
// says where the libraries are looked for. Tested by tests/compiler/test_cuda_api.cpp.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/util/status.h"

// The driver's opaque handle types, with cuda.h's own tag names so a handle from
// code that does include cuda.h converts without a cast.
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
struct CUgraph_st;
struct CUgraphExec_st;

namespace kiln::codegen::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = std::uint64_t;
using CUcontext = CUctx_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;
using CUstream = CUstream_st*;
using CUevent = CUevent_st*;
using CUgraph = CUgraph_st*;
using CUgraphExec = CUgraphExec_st*;

// A shared library found by the search in docs/cuda_runtime.md; the handle is
// never closed (drivers do not support being unloaded).
struct LoadedLibrary {
  void* handle = nullptr;
  std::string path;  // the file actually mapped, resolved from the soname
};
// Opens the first loadable of: the file named by env `override_env` (when set,
// and then nothing else), each `sonames` entry in every KILN_CUDA_LIBRARY_PATH
// folder, each soname through the dynamic loader, each soname in `extra_dirs`.
// `what` names the library in the error ("NVRTC not found: ...").
Expected<LoadedLibrary> load_cuda_library(const std::string& what, const char* override_env,
                                          const std::vector<std::string>& sonames,
                                          const std::vector<std::string>& extra_dirs);
// `symbol` in the opened library `lib`, or null with its name added to
// `missing` ("a, b"), so that a loader reports every absent entry point at once.
void* library_symbol(void* lib, const char* symbol, std::string& missing);
template <class Fn>
bool bind_symbol(void* lib, const char* symbol, Fn& fn, std::string& missing) {
  fn = reinterpret_cast<Fn>(library_symbol(lib, symbol, missing));
  return fn != nullptr;
}
// Existing folders `<site-packages>/<subdir>` for the usual Python prefixes
// (VIRTUAL_ENV, CONDA_PREFIX, the parent of each PATH bin folder, ~/.local,
// /usr/local, /usr, /opt/conda, PYTHONPATH),
// where pip's nvidia-* wheels install the toolkit libraries.
std::vector<std::string> python_cuda_lib_dirs(const std::vector<std::string>& subdirs);

// ---- NVRTC ----------------------------------------------------------------

struct NvrtcOutput {
  std::string ptx;    // empty when NVRTC produced none
  std::string cubin;  // ELF image; empty unless asked for
  std::string log;    // warnings of a successful compile
  double ms = 0;      // wall time of create + compile + fetch
};
// Compiles one CUDA C++ translation unit for compute capability `sm` (90 = 9.0):
// to a cubin for sm_<sm> when `want_cubin`, else to PTX for compute_<sm>. Uses
// -std=c++17 and nothing else (no fast math) unless `extra_options` say so. A
// compile error is a Status holding NVRTC's log ("name(line): error: ...").
// Thread-safe: each call owns its nvrtcProgram.
Expected<NvrtcOutput> nvrtc_compile(const std::string& source, const std::string& name, int sm,
                                    bool want_cubin,
                                    const std::vector<std::string>& extra_options = {});
// "NVRTC 13.0 from /usr/local/cuda/lib64/libnvrtc.so.13", or "unavailable: <why>".
std::string nvrtc_describe();

// ---- Driver ---------------------------------------------------------------

// Loads libcuda, runs cuInit, picks device 0 and makes its primary context
// current on the calling thread. Idempotent and cheap after the first call; the
// first failure is remembered and returned again. The context is per thread in
// the driver: a thread other than the initialising one calls cuda_make_current()
// (or cuda_init(), the same thing) before using anything below. Every
// constructor below does so itself.
Status cuda_init();
Status cuda_make_current();
// "CUDA driver 13.0 from /usr/lib/x86_64-linux-gnu/libcuda.so.1", or "unavailable: <why>".
std::string cuda_describe();

struct DeviceInfo {
  std::string name;
  int sm_major = 0, sm_minor = 0;
  int multiprocessors = 0;
  int max_shared_per_block_optin = 0;  // bytes a kernel may opt in to
  std::int64_t total_memory = 0;       // bytes
  int driver_version = 0;              // 13000 for CUDA 13.0
};
Expected<DeviceInfo> cuda_device_info();

class Stream;

// Device memory, freed on destruction. Copies are synchronous: a download sees
// every earlier launch on the legacy stream finished, and an upload has landed
// in device memory when it returns (it waits for the legacy stream's DMA), so
// kernels on any Stream may read it; after a launch on a Stream, synchronize it
// before a download.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  static Expected<DeviceBuffer> alloc(std::size_t bytes);
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  CUdeviceptr ptr() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  Status upload(const void* host, std::size_t bytes);
  Status download(void* host, std::size_t bytes) const;
  Status zero();

 private:
  CUdeviceptr ptr_ = 0;
  std::size_t bytes_ = 0;
};

// A loaded cubin or PTX image (PTX is JIT-compiled by the driver; its JIT log
// ends up in the error). Unloaded on destruction.
class CudaModule {
 public:
  CudaModule() = default;
  static Expected<CudaModule> load(const std::string& image);
  CudaModule(CudaModule&& other) noexcept;
  CudaModule& operator=(CudaModule&& other) noexcept;
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;
  ~CudaModule();

  // Valid while this module lives.
  Expected<CUfunction> function(const std::string& name) const;

 private:
  CUmodule module_ = nullptr;
};

class Stream {
 public:
  Stream() = default;
  // A non-blocking stream: it never waits on the legacy default stream, which
  // graph capture in global mode would reject anyway.
  static Expected<Stream> create();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();

  CUstream handle() const { return stream_; }
  Status synchronize() const;

 private:
  CUstream stream_ = nullptr;
};

class Event {
 public:
  Event() = default;
  static Expected<Event> create();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();

  CUevent handle() const { return event_; }
  Status record(const Stream& stream);
  Status synchronize() const;
  // Milliseconds between two recorded events; waits for `end`.
  static Expected<float> elapsed_ms(const Event& start, const Event& end);

 private:
  CUevent event_ = nullptr;
};

// What the benchmarks and max-autotune time by: `warmup` untimed calls of
// `work`, then the median over `reps` of the milliseconds between CUDA events
// recorded on `stream` around it. `work(i)` gets the call's number (for
// rotating inputs) and queues its work on `stream`; its error stops the timing.
Expected<double> median_event_ms(const Stream& stream, int warmup, int reps, const std::function<Status(int)>& work);

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};
// `args` points at one pointer per kernel parameter, each to that parameter's
// value (cuLaunchKernel's convention). Dynamic shared memory above the 48 KiB
// default is opted in to here, so callers need not know about that limit.
// A null `stream` means the legacy default stream.
Status launch(CUfunction fn, Dim3 grid, Dim3 block, unsigned shared_bytes, void** args,
              const Stream* stream = nullptr);

// Device-to-device copy of `bytes`, queued on `stream` (null: the legacy stream).
Status copy_device(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes, const Stream* stream = nullptr);

// Records the work issued on a stream between capture_begin and capture_end
// into an executable graph, then replays it with one launch.
class CudaGraph {
 public:
  CudaGraph() = default;
  CudaGraph(CudaGraph&& other) noexcept;
  CudaGraph& operator=(CudaGraph&& other) noexcept;
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;
  ~CudaGraph();

  Status capture_begin(Stream& stream);  // global capture mode
  Status capture_end(Stream& stream);    // ends capture and instantiates
  Status replay(Stream& stream);
  bool ready() const { return exec_ != nullptr; }

 private:
  void reset();
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

}  // namespace kiln::codegen::cuda
