// libFuzzer target: the TORCH_TRACE indexer on arbitrary text. Damage becomes
// diagnostics; nothing may crash, hang or leak.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/trace/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  kiln::trace::Trace t = kiln::trace::read_trace_text(std::move(text), "fuzz.log");
  (void)t;
  return 0;
}
