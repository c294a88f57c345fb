// The CUDA driver API through dlopen. Signatures and enum values come from
// CUDA 13's cuda.h; where cuda.h #defines a name to a versioned symbol
// (cuMemAlloc -> cuMemAlloc_v2) the versioned one is what libcuda exports and
// what is looked up here.
#include <algorithm>

#include <utility>

#include "compiler/codegen/cuda/cuda_api.h"

namespace kiln::codegen::cuda {
namespace {

// cuda.h enum values used below.
constexpr CUresult kSuccess = 0;
constexpr int kAttrMultiprocessors = 16;            // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
constexpr int kAttrCcMajor = 75;                    // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrCcMinor = 76;                    // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
constexpr int kAttrMaxSharedOptin = 97;             // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
constexpr int kFuncAttrMaxDynamicShared = 8;        // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
constexpr int kJitErrorLogBuffer = 5;               // CU_JIT_ERROR_LOG_BUFFER
constexpr int kJitErrorLogBufferSize = 6;           // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
constexpr unsigned kStreamNonBlocking = 1;          // CU_STREAM_NON_BLOCKING
constexpr int kCaptureModeGlobal = 0;               // CU_STREAM_CAPTURE_MODE_GLOBAL
constexpr unsigned kDefaultStaticSharedLimit = 48 * 1024;

struct Driver {
  CUresult (*GetErrorName)(CUresult, const char**) = nullptr;
  CUresult (*GetErrorString)(CUresult, const char**) = nullptr;
  CUresult (*Init)(unsigned) = nullptr;
  CUresult (*DriverGetVersion)(int*) = nullptr;
  CUresult (*DeviceGetCount)(int*) = nullptr;
  CUresult (*DeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*DeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*DeviceGetAttribute)(int*, int, CUdevice) = nullptr;
  CUresult (*DeviceTotalMem)(std::size_t*, CUdevice) = nullptr;
  CUresult (*DevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*CtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*MemAlloc)(CUdeviceptr*, std::size_t) = nullptr;
  CUresult (*MemFree)(CUdeviceptr) = nullptr;
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void*, std::size_t) = nullptr;
  CUresult (*MemcpyDtoH)(void*, CUdeviceptr, std::size_t) = nullptr;
  CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, std::size_t, CUstream) = nullptr;
  CUresult (*MemsetD8)(CUdeviceptr, unsigned char, std::size_t) = nullptr;
  CUresult (*ModuleLoadDataEx)(CUmodule*, const void*, unsigned, int*, void**) = nullptr;
  CUresult (*ModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*ModuleUnload)(CUmodule) = nullptr;
  CUresult (*FuncSetAttribute)(CUfunction, int, int) = nullptr;
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           CUstream, void**, void**) = nullptr;
  CUresult (*StreamCreate)(CUstream*, unsigned) = nullptr;
  CUresult (*StreamDestroy)(CUstream) = nullptr;
  CUresult (*StreamSynchronize)(CUstream) = nullptr;
  CUresult (*StreamBeginCapture)(CUstream, int) = nullptr;
  CUresult (*StreamEndCapture)(CUstream, CUgraph*) = nullptr;
  CUresult (*GraphInstantiateWithFlags)(CUgraphExec*, CUgraph, unsigned long long) = nullptr;
  CUresult (*GraphLaunch)(CUgraphExec, CUstream) = nullptr;
  CUresult (*GraphExecDestroy)(CUgraphExec) = nullptr;
  CUresult (*GraphDestroy)(CUgraph) = nullptr;
  CUresult (*EventCreate)(CUevent*, unsigned) = nullptr;
  CUresult (*EventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*EventSynchronize)(CUevent) = nullptr;
  CUresult (*EventElapsedTime)(float*, CUevent, CUevent) = nullptr;
  CUresult (*EventDestroy)(CUevent) = nullptr;
};

// What cuda_init() found, computed once for the process.
struct State {
  Status status;
  Driver d;
  std::string path;
  int version = 0;
  CUdevice device = 0;
  CUcontext context = nullptr;
};

std::string error_name(const Driver& d, CUresult rc) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (d.GetErrorName) d.GetErrorName(rc, &name);
  if (d.GetErrorString) d.GetErrorString(rc, &text);
  std::string s = name ? name : "CUresult " + std::to_string(rc);
  if (text) s += std::string(" (") + text + ")";
  return s;
}

Status load_driver(State& s) {
  auto lib = load_cuda_library("CUDA driver", nullptr, {"libcuda.so.1", "libcuda.so"}, {});
  if (!lib) return lib.status();
  s.path = lib->path;
  void* h = lib->handle;
  Driver& d = s.d;
  std::string missing;
  bind_symbol(h, "cuGetErrorName", d.GetErrorName, missing);
  bind_symbol(h, "cuGetErrorString", d.GetErrorString, missing);
  bind_symbol(h, "cuInit", d.Init, missing);
  bind_symbol(h, "cuDriverGetVersion", d.DriverGetVersion, missing);
  bind_symbol(h, "cuDeviceGetCount", d.DeviceGetCount, missing);
  bind_symbol(h, "cuDeviceGet", d.DeviceGet, missing);
  bind_symbol(h, "cuDeviceGetName", d.DeviceGetName, missing);
  bind_symbol(h, "cuDeviceGetAttribute", d.DeviceGetAttribute, missing);
  bind_symbol(h, "cuDeviceTotalMem_v2", d.DeviceTotalMem, missing);
  bind_symbol(h, "cuDevicePrimaryCtxRetain", d.DevicePrimaryCtxRetain, missing);
  bind_symbol(h, "cuCtxSetCurrent", d.CtxSetCurrent, missing);
  bind_symbol(h, "cuMemAlloc_v2", d.MemAlloc, missing);
  bind_symbol(h, "cuMemFree_v2", d.MemFree, missing);
  bind_symbol(h, "cuMemcpyHtoD_v2", d.MemcpyHtoD, missing);
  bind_symbol(h, "cuMemcpyDtoH_v2", d.MemcpyDtoH, missing);
  bind_symbol(h, "cuMemcpyDtoDAsync_v2", d.MemcpyDtoDAsync, missing);
  bind_symbol(h, "cuMemsetD8_v2", d.MemsetD8, missing);
  bind_symbol(h, "cuModuleLoadDataEx", d.ModuleLoadDataEx, missing);
  bind_symbol(h, "cuModuleGetFunction", d.ModuleGetFunction, missing);
  bind_symbol(h, "cuModuleUnload", d.ModuleUnload, missing);
  bind_symbol(h, "cuFuncSetAttribute", d.FuncSetAttribute, missing);
  bind_symbol(h, "cuLaunchKernel", d.LaunchKernel, missing);
  bind_symbol(h, "cuStreamCreate", d.StreamCreate, missing);
  bind_symbol(h, "cuStreamDestroy_v2", d.StreamDestroy, missing);
  bind_symbol(h, "cuStreamSynchronize", d.StreamSynchronize, missing);
  bind_symbol(h, "cuStreamBeginCapture_v2", d.StreamBeginCapture, missing);
  bind_symbol(h, "cuStreamEndCapture", d.StreamEndCapture, missing);
  bind_symbol(h, "cuGraphInstantiateWithFlags", d.GraphInstantiateWithFlags, missing);
  bind_symbol(h, "cuGraphLaunch", d.GraphLaunch, missing);
  bind_symbol(h, "cuGraphExecDestroy", d.GraphExecDestroy, missing);
  bind_symbol(h, "cuGraphDestroy", d.GraphDestroy, missing);
  bind_symbol(h, "cuEventCreate", d.EventCreate, missing);
  bind_symbol(h, "cuEventRecord", d.EventRecord, missing);
  bind_symbol(h, "cuEventSynchronize", d.EventSynchronize, missing);
  bind_symbol(h, "cuEventDestroy_v2", d.EventDestroy, missing);
  // cuda.h 13 maps cuEventElapsedTime to a _v2 that drivers before 12.8 lack;
  // the old symbol has the same signature, so either will do.
  std::string no_v2;
  bind_symbol(h, "cuEventElapsedTime_v2", d.EventElapsedTime, no_v2);
  if (!d.EventElapsedTime) bind_symbol(h, "cuEventElapsedTime", d.EventElapsedTime, missing);
  if (!missing.empty())
    return Status::error("CUDA driver at " + s.path + " lacks " + missing +
                         " (a driver for CUDA 12 or newer is needed)");
  return {};
}

const State& state() {
  static const State loaded = [] {
    State s;
    s.status = load_driver(s);
    if (!s.status.ok()) return s;
    const Driver& d = s.d;
    auto fail = [&](const char* call, CUresult rc) {
      s.status = Status::error(std::string(call) + ": " + error_name(d, rc) + " [driver " + s.path + "]");
      return s;
    };
    // cuInit reports a missing or mismatched kernel module and "no device"
    // (CUDA_ERROR_NO_DEVICE) itself; its name says which.
    if (CUresult rc = d.Init(0); rc != kSuccess) return fail("cuInit", rc);
    if (CUresult rc = d.DriverGetVersion(&s.version); rc != kSuccess) return fail("cuDriverGetVersion", rc);
    int count = 0;
    if (CUresult rc = d.DeviceGetCount(&count); rc != kSuccess) return fail("cuDeviceGetCount", rc);
    if (count == 0) {
      s.status = Status::error("CUDA driver loaded from " + s.path + " but it reports no device");
      return s;
    }
    if (CUresult rc = d.DeviceGet(&s.device, 0); rc != kSuccess) return fail("cuDeviceGet", rc);
    // The primary context is the one PyTorch and the runtime API share, so
    // buffers can be exchanged with them; it is retained for the process.
    if (CUresult rc = d.DevicePrimaryCtxRetain(&s.context, s.device); rc != kSuccess)
      return fail("cuDevicePrimaryCtxRetain", rc);
    return s;
  }();
  return loaded;
}

// The driver calls below assume cuda_init() succeeded; the public entry points
// check that first, so a null function pointer is never called.
const Driver& drv() { return state().d; }

Status check(CUresult rc, const char* call) {
  if (rc == kSuccess) return {};
  return Status::error(std::string(call) + ": " + error_name(drv(), rc));
}

}  // namespace

Status cuda_init() {
  const State& s = state();
  if (!s.status.ok()) return s.status;
  // The current context is a per-thread setting of the driver.
  thread_local bool current = false;
  if (!current) {
    if (Status st = check(s.d.CtxSetCurrent(s.context), "cuCtxSetCurrent"); !st.ok()) return st;
    current = true;
  }
  return {};
}

Status cuda_make_current() { return cuda_init(); }

std::string cuda_describe() {
  const State& s = state();
  if (!s.status.ok()) return "unavailable: " + s.status.message();
  return "CUDA driver " + std::to_string(s.version / 1000) + "." + std::to_string(s.version % 1000 / 10) +
         " from " + s.path;
}

Expected<DeviceInfo> cuda_device_info() {
  if (Status st = cuda_init(); !st.ok()) return st;
  const State& s = state();
  const Driver& d = s.d;
  DeviceInfo info;
  char name[256] = {};
  if (Status st = check(d.DeviceGetName(name, int(sizeof name), s.device), "cuDeviceGetName"); !st.ok()) return st;
  info.name = name;
  std::pair<int, int*> attrs[] = {{kAttrCcMajor, &info.sm_major},
                                  {kAttrCcMinor, &info.sm_minor},
                                  {kAttrMultiprocessors, &info.multiprocessors},
                                  {kAttrMaxSharedOptin, &info.max_shared_per_block_optin}};
  for (auto [attr, out] : attrs)
    if (Status st = check(d.DeviceGetAttribute(out, attr, s.device), "cuDeviceGetAttribute"); !st.ok()) return st;
  std::size_t total = 0;
  if (Status st = check(d.DeviceTotalMem(&total, s.device), "cuDeviceTotalMem_v2"); !st.ok()) return st;
  info.total_memory = std::int64_t(total);
  info.driver_version = s.version;
  return info;
}

// ---- DeviceBuffer -----------------------------------------------------------

Expected<DeviceBuffer> DeviceBuffer::alloc(std::size_t bytes) {
  if (Status st = cuda_init(); !st.ok()) return st;
  DeviceBuffer b;
  // cuMemAlloc rejects 0 bytes; an empty tensor still deserves a buffer object.
  if (bytes == 0) return b;
  if (Status st = check(drv().MemAlloc(&b.ptr_, bytes), "cuMemAlloc_v2"); !st.ok())
    return Status::error(st.message() + " allocating " + std::to_string(bytes) + " bytes");
  b.bytes_ = bytes;
  return b;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, 0)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  // The moved-from object frees what this one held, when it goes.
  std::swap(ptr_, other.ptr_);
  std::swap(bytes_, other.bytes_);
  return *this;
}

// Errors on release cannot be reported from a destructor; a failing free
// means the context is already gone, at process exit.
DeviceBuffer::~DeviceBuffer() {
  if (ptr_) drv().MemFree(ptr_);
  ptr_ = 0;
}

Status DeviceBuffer::upload(const void* host, std::size_t bytes) {
  if (bytes > bytes_)
    return Status::error("upload of " + std::to_string(bytes) + " bytes into a buffer of " + std::to_string(bytes_));
  if (bytes == 0) return {};
  if (Status st = check(drv().MemcpyHtoD(ptr_, host, bytes), "cuMemcpyHtoD_v2"); !st.ok()) return st;
  // From pageable memory cuMemcpyHtoD returns once the bytes are staged, before
  // the DMA into device memory is done, and kernels on a non-blocking Stream do
  // not wait for the legacy stream it runs on: without this wait a kernel could
  // read the buffer half written (the kiln-cuda program fuzzer saw dropout's
  // noise, uploaded after its host kernel, read stale about once in 2000 runs).
  return check(drv().StreamSynchronize(nullptr), "cuStreamSynchronize");
}

Status DeviceBuffer::download(void* host, std::size_t bytes) const {
  if (bytes > bytes_)
    return Status::error("download of " + std::to_string(bytes) + " bytes from a buffer of " + std::to_string(bytes_));
  if (bytes == 0) return {};
  return check(drv().MemcpyDtoH(host, ptr_, bytes), "cuMemcpyDtoH_v2");
}

Status DeviceBuffer::zero() {
  if (bytes_ == 0) return {};
  return check(drv().MemsetD8(ptr_, 0, bytes_), "cuMemsetD8_v2");
}

Status copy_device(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes, const Stream* stream) {
  if (Status st = cuda_init(); !st.ok()) return st;
  if (bytes == 0) return {};
  return check(drv().MemcpyDtoDAsync(dst, src, bytes, stream ? stream->handle() : nullptr), "cuMemcpyDtoDAsync_v2");
}

// ---- CudaModule -------------------------------------------------------------

Expected<CudaModule> CudaModule::load(const std::string& image) {
  if (Status st = cuda_init(); !st.ok()) return st;
  // The JIT's own log says which PTX line it rejected; without it the error is
  // only CUDA_ERROR_INVALID_PTX.
  char log[8192] = {};
  int options[] = {kJitErrorLogBuffer, kJitErrorLogBufferSize};
  void* values[] = {log, reinterpret_cast<void*>(std::uintptr_t(sizeof log))};
  CudaModule m;
  if (Status st = check(drv().ModuleLoadDataEx(&m.module_, image.c_str(), 2, options, values), "cuModuleLoadDataEx");
      !st.ok())
    return Status::error(log[0] ? st.message() + ":\n" + log : st.message());
  return m;
}

CudaModule::CudaModule(CudaModule&& other) noexcept : module_(std::exchange(other.module_, nullptr)) {}

CudaModule& CudaModule::operator=(CudaModule&& other) noexcept {
  std::swap(module_, other.module_);
  return *this;
}

CudaModule::~CudaModule() {
  if (module_) drv().ModuleUnload(module_);
  module_ = nullptr;
}

Expected<CUfunction> CudaModule::function(const std::string& name) const {
  if (!module_) return Status::error("function(" + name + ") on an empty CudaModule");
  CUfunction fn = nullptr;
  if (Status st = check(drv().ModuleGetFunction(&fn, module_, name.c_str()), "cuModuleGetFunction"); !st.ok())
    return Status::error(st.message() + " for kernel '" + name + "'");
  return fn;
}

// ---- launch -----------------------------------------------------------------

Status launch(CUfunction fn, Dim3 grid, Dim3 block, unsigned shared_bytes, void** args, const Stream* stream) {
  if (Status st = cuda_init(); !st.ok()) return st;
  if (!fn) return Status::error("launch of a null kernel");
  const Driver& d = drv();
  if (shared_bytes > kDefaultStaticSharedLimit)
    if (Status st = check(d.FuncSetAttribute(fn, kFuncAttrMaxDynamicShared, int(shared_bytes)), "cuFuncSetAttribute");
        !st.ok())
      return st;
  return check(d.LaunchKernel(fn, grid.x, grid.y, grid.z, block.x, block.y, block.z, shared_bytes,
                              stream ? stream->handle() : nullptr, args, nullptr),
               "cuLaunchKernel");
}

// ---- Stream and Event -------------------------------------------------------

Expected<Stream> Stream::create() {
  if (Status st = cuda_init(); !st.ok()) return st;
  Stream s;
  if (Status st = check(drv().StreamCreate(&s.stream_, kStreamNonBlocking), "cuStreamCreate"); !st.ok()) return st;
  return s;
}

Stream::Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  std::swap(stream_, other.stream_);
  return *this;
}

Stream::~Stream() {
  if (stream_) drv().StreamDestroy(stream_);
  stream_ = nullptr;
}

Status Stream::synchronize() const {
  if (Status st = cuda_init(); !st.ok()) return st;
  return check(drv().StreamSynchronize(stream_), "cuStreamSynchronize");
}

Expected<Event> Event::create() {
  if (Status st = cuda_init(); !st.ok()) return st;
  Event e;
  if (Status st = check(drv().EventCreate(&e.event_, 0), "cuEventCreate"); !st.ok()) return st;
  return e;
}

Event::Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  std::swap(event_, other.event_);
  return *this;
}

Event::~Event() {
  if (event_) drv().EventDestroy(event_);
  event_ = nullptr;
}

Status Event::record(const Stream& stream) {
  if (!event_) return Status::error("record on an empty Event");
  return check(drv().EventRecord(event_, stream.handle()), "cuEventRecord");
}

Status Event::synchronize() const {
  if (!event_) return Status::error("synchronize on an empty Event");
  return check(drv().EventSynchronize(event_), "cuEventSynchronize");
}

Expected<float> Event::elapsed_ms(const Event& start, const Event& end) {
  if (!start.event_ || !end.event_) return Status::error("elapsed_ms on an empty Event");
  if (Status st = end.synchronize(); !st.ok()) return st;
  float ms = 0;
  if (Status st = check(drv().EventElapsedTime(&ms, start.event_, end.event_), "cuEventElapsedTime"); !st.ok())
    return st;
  return ms;
}

Expected<double> median_event_ms(const Stream& stream, int warmup, int reps, const std::function<Status(int)>& work) {
  Expected<Event> start = Event::create(), end = Event::create();
  if (!start) return start.status();
  if (!end) return end.status();
  for (int i = 0; i < warmup; ++i)
    if (Status st = work(i); !st.ok()) return st;
  if (Status st = stream.synchronize(); !st.ok()) return st;
  std::vector<double> ms;
  for (int i = 0; i < std::max(reps, 1); ++i) {
    if (Status st = start->record(stream); !st.ok()) return st;
    if (Status st = work(warmup + i); !st.ok()) return st;
    if (Status st = end->record(stream); !st.ok()) return st;
    Expected<float> t = Event::elapsed_ms(*start, *end);
    if (!t) return t.status();
    ms.push_back(*t);
  }
  std::nth_element(ms.begin(), ms.begin() + ptrdiff_t(ms.size() / 2), ms.end());
  return ms[ms.size() / 2];
}

// ---- CudaGraph --------------------------------------------------------------

CudaGraph::CudaGraph(CudaGraph&& other) noexcept
    : graph_(std::exchange(other.graph_, nullptr)), exec_(std::exchange(other.exec_, nullptr)) {}

CudaGraph& CudaGraph::operator=(CudaGraph&& other) noexcept {
  std::swap(graph_, other.graph_);
  std::swap(exec_, other.exec_);
  return *this;
}

CudaGraph::~CudaGraph() { reset(); }

void CudaGraph::reset() {
  if (exec_) drv().GraphExecDestroy(exec_);
  if (graph_) drv().GraphDestroy(graph_);
  exec_ = nullptr;
  graph_ = nullptr;
}

Status CudaGraph::capture_begin(Stream& stream) {
  if (Status st = cuda_init(); !st.ok()) return st;
  // Capturing the legacy stream is not allowed; an empty Stream object is one.
  if (!stream.handle()) return Status::error("graph capture needs a created Stream, not the default stream");
  reset();  // a second capture replaces the first graph
  return check(drv().StreamBeginCapture(stream.handle(), kCaptureModeGlobal), "cuStreamBeginCapture_v2");
}

Status CudaGraph::capture_end(Stream& stream) {
  if (Status st = cuda_init(); !st.ok()) return st;
  if (Status st = check(drv().StreamEndCapture(stream.handle(), &graph_), "cuStreamEndCapture"); !st.ok()) return st;
  return check(drv().GraphInstantiateWithFlags(&exec_, graph_, 0), "cuGraphInstantiateWithFlags");
}

Status CudaGraph::replay(Stream& stream) {
  if (!exec_) return Status::error("replay of a CudaGraph that was not captured");
  return check(drv().GraphLaunch(exec_, stream.handle()), "cuGraphLaunch");
}

}  // namespace kiln::codegen::cuda
