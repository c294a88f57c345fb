#pragma once
// What code generators this build and this machine offer: LLVM's version and
// host CPU for the CPU backend, the CUDA driver (loaded with dlopen, never
// linked, so Kiln starts on machines without a GPU) for the GPU backend.
#include <string>

namespace kiln {

std::string llvm_version();    // "19.1.7", or "" when built without LLVM
std::string llvm_host_cpu();   // "znver3", or "" without LLVM

struct CudaDriverInfo {
  bool available = false;
  int device_count = 0;
  std::string device_name;  // first device
  std::string reason;       // why not available
};
// Opens libcuda.so.1 and asks for devices; safe to call where no driver exists.
CudaDriverInfo probe_cuda_driver();

}  // namespace kiln
