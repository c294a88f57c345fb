#pragma once
// Runs a program with capture installed and its output discarded, so a test can
// read the regions it compiled (capture::compiled_regions) from the VM.
#include <memory>
#include <string>

#include "compiler/aot/eager_autograd.h"
#include "compiler/capture/capture.h"
#include "core/python/vm.h"

namespace kiln::test {

// `code` is the program's exit code; the VM owns the compiled regions.
inline std::unique_ptr<py::VM> run_captured(const std::string& path, int& code, Status* status = nullptr) {
  py::VMOptions options;
  options.out = [](std::string_view) {};
  options.err = [](std::string_view) {};
  auto vm = std::make_unique<py::VM>(options);
  aot::install_eager_autograd();
  capture::install_capture(*vm);
  code = 0;
  Status st = vm->run_file(path, &code);
  if (status) *status = st;
  return vm;
}

}  // namespace kiln::test
