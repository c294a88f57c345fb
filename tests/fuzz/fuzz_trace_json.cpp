// libFuzzer target: a TORCH_TRACE log read and written out as `trace summary
// --json` writes it. Whatever bytes the log holds (not UTF-8, lone surrogate
// escapes, control characters), the writer must give valid JSON, never throw.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "core/trace/reader.h"
#include "core/trace/summary_json.h"
#include "core/util/output_text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  kiln::trace::Trace t = kiln::trace::read_trace_text(std::move(text), "fuzz.log");
  const std::string out = kiln::json_text(kiln::trace::summary_json(t), 1);
  if (nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false).is_discarded()) std::abort();
  (void)kiln::terminal_safe(out);
  return 0;
}
