#pragma once
// Runs a program in a fresh VM in this process, capturing what it prints:
// the harness of the tests that compare the subset with CPython or NumPy.
#include <string>
#include <vector>

#include "core/python/vm.h"

namespace kiln::test {

struct Ran {
  kiln::Status status;
  int exit = -1;
  std::string out, err;
};

inline Ran run_python(const std::string& source, std::vector<std::string> argv = {"prog.py"}) {
  Ran r;
  kiln::py::VMOptions o;
  o.out = [&r](std::string_view s) { r.out += s; };
  o.err = [&r](std::string_view s) { r.err += s; };
  o.argv = std::move(argv);
  kiln::py::VM vm(o);
  r.status = vm.run_source(source, o.argv.empty() ? "prog.py" : o.argv[0], &r.exit);
  return r;
}

// The last line of a traceback Kiln wrote (the error itself).
inline std::string last_error_line(const std::string& err) {
  std::string text = err;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text.substr(text.rfind('\n') + 1);
}

}  // namespace kiln::test
