#include "app/version.h"

#include <string>

#include "compiler/runtime/backend_info.h"

namespace kiln {

const char* version_string() {
  static const std::string text = [] {
    std::string llvm = llvm_version();
    std::string s = std::string(KILN_VERSION) + " (LLVM " + (llvm.empty() ? "off" : llvm);
#ifdef KILN_HAVE_CUDA
    s += ", CUDA backend built";
#else
    s += ", CUDA backend off";
#endif
    return s + ")";
  }();
  return text.c_str();
}

}  // namespace kiln
