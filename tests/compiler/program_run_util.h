#pragma once
// What the tests of programs with compiled regions share: a program run in a
// fresh VM with eager autograd and torch.compile's backends wired as
// `kiln-cli run` wires them, what it printed kept.
#include <functional>
#include <string>

#include "compiler/aot/eager_autograd.h"
#include "compiler/capture/capture.h"
#include "compiler/pipeline/region_backends.h"
#include "core/python/vm.h"

namespace kiln::test {

struct ProgramRun {
  std::string out, err;
  int code = 0;
  Status status;
};

// `backend`: torch.compile's default backend inside the program; "none"
// makes torch.compile return its argument (plain eager).
// `after`, when given, sees the VM once the program has run (capture's reports).
inline ProgramRun run_program(const std::string& source, const std::string& backend,
                              const std::function<void(py::VM&)>& after = {}) {
  ProgramRun r;
  py::VMOptions options;
  options.out = [&r](std::string_view s) { r.out += s; };
  options.err = [&r](std::string_view s) { r.err += s; };
  py::VM vm(options);
  aot::install_eager_autograd();
  capture::CaptureOptions co;
  co.default_backend = backend == "none" ? "eager" : backend;
  co.disable_compile = backend == "none";
  co.backend_runner = [&vm](const std::string& b, const std::string& m, const std::string& id) {
    return pipeline::region_runner(vm, b, m, id);
  };
  capture::install_capture(vm, co);
  r.status = vm.run_source(source, "test.py", &r.code);
  if (after) after(vm);
  return r;
}

// run_program, with the status's message as the error text when the program wrote none.
inline ProgramRun run_program_reporting(const std::string& source, const std::string& backend) {
  ProgramRun r = run_program(source, backend);
  if (r.err.empty() && !r.status.ok()) r.err = r.status.message();
  return r;
}

}  // namespace kiln::test
