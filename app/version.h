#pragma once
namespace kiln {
// "0.1.0 (LLVM 19.1.7, CUDA ..., mimalloc 2.0.9)": what this build was made with.
const char* version_string();
}  // namespace kiln
