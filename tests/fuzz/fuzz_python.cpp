// libFuzzer target: the Python-subset front end (lexer, parser, scopes,
// compiler) on arbitrary text. Compiling must never crash, hang or overflow the
// stack; a compiled program must also disassemble. Running it is the next
// step: give run_compiled() a VM with VMOptions::max_steps set.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/python/code.h"
#include "core/python/compiler.h"

namespace {

void run_compiled(const kiln::py::CodePtr& code) { (void)kiln::py::disassemble(*code); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view source(reinterpret_cast<const char*>(data), size);
  auto code = kiln::py::compile_module(source, "fuzz.py");
  if (code.ok()) run_compiled(*code);
  return 0;
}
