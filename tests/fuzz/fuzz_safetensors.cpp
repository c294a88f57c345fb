// libFuzzer target: any bytes given to the safetensors reader produce tensors
// or a Status, never a crash, hang or leak.
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto bytes = std::as_bytes(std::span<const uint8_t>(data, size));
  auto file = kiln::parse_safetensors(bytes, "fuzz.safetensors");
  if (file.ok())
    for (const auto& [name, t] : file->tensors) (void)t.numel();
  return 0;
}
