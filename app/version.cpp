#include "app/version.h"

#include <string>

#include "compiler/runtime/backend_info.h"

namespace kiln {

const char* version_string() {
  static const std::string text = [] {
    std::string llvm = llvm_version();
    std::string s = std::string(KILN_VERSION) + " (LLVM " + (llvm.empty() ? "off" : llvm);
    // NVRTC and the driver are opened only when a GPU compile asks for them.
    s += ", CUDA backend built; NVRTC and libcuda loaded at run time";
    return s + ")";
  }();
  return text.c_str();
}

}  // namespace kiln
