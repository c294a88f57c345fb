#pragma once
namespace kiln {
// "0.1.0 (LLVM 19.1.7, CUDA off)": what this build was made with.
const char* version_string();
}  // namespace kiln
