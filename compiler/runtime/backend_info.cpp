#include "compiler/runtime/backend_info.h"

#include <dlfcn.h>

#ifdef KILN_WITH_LLVM
#include <llvm/ADT/StringRef.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/TargetParser/Host.h>
#endif

namespace kiln {

std::string llvm_version() {
#ifdef KILN_WITH_LLVM
  return LLVM_VERSION_STRING;
#else
  return "";
#endif
}

std::string llvm_host_cpu() {
#ifdef KILN_WITH_LLVM
  return llvm::sys::getHostCPUName().str();
#else
  return "";
#endif
}

CudaDriverInfo probe_cuda_driver() {
  CudaDriverInfo info;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = dlerror();
    info.reason = err ? err : "libcuda.so.1 not found";
    return info;
  }
  // Signatures of the driver API entry points (cuda.h), declared here so the
  // build needs no CUDA headers.
  using CuInit = int (*)(unsigned);
  using CuDeviceGetCount = int (*)(int*);
  using CuDeviceGet = int (*)(int*, int);
  using CuDeviceGetName = int (*)(char*, int, int);
  auto cu_init = reinterpret_cast<CuInit>(dlsym(lib, "cuInit"));
  auto cu_count = reinterpret_cast<CuDeviceGetCount>(dlsym(lib, "cuDeviceGetCount"));
  auto cu_get = reinterpret_cast<CuDeviceGet>(dlsym(lib, "cuDeviceGet"));
  auto cu_name = reinterpret_cast<CuDeviceGetName>(dlsym(lib, "cuDeviceGetName"));
  if (!cu_init || !cu_count || !cu_get || !cu_name) {
    info.reason = "libcuda.so.1 lacks the driver API entry points";
  } else if (int rc = cu_init(0); rc != 0) {
    info.reason = "cuInit failed with CUresult " + std::to_string(rc);
  } else if (cu_count(&info.device_count) != 0 || info.device_count == 0) {
    info.reason = "no CUDA device";
  } else {
    int dev = 0;
    char name[256] = {};
    if (cu_get(&dev, 0) == 0 && cu_name(name, sizeof name, dev) == 0) info.device_name = name;
    info.available = true;
  }
  // The handle stays open: a process that found a driver will use it.
  if (!info.available) dlclose(lib);
  return info;
}

}  // namespace kiln
