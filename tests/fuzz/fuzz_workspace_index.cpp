// libFuzzer target: the decoder of trace indexes stored in a workspace. A
// stored blob may be damaged (a flipped byte on disk, a truncated write);
// decoding must end in a Status or a trace that the summary writer handles.
// Input: first byte even, the rest is a blob as stored; odd, the rest is a
// trace log, whose index is encoded and then damaged at one byte the input
// picks, so damage lands inside well-formed indexes too.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/trace/index_codec.h"
#include "core/trace/reader.h"
#include "core/trace/summary_json.h"
#include "core/util/output_text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  std::vector<uint8_t> blob;
  if (data[0] % 2 == 0) {
    blob.assign(data + 1, data + size);
  } else {
    const size_t at = size_t(data[1]) << 8 | data[2];
    std::string text(reinterpret_cast<const char*>(data + 3), size - 3);
    blob = kiln::trace::encode_index(kiln::trace::read_trace_text(std::move(text), "fuzz.log"));
    if (!blob.empty()) blob[at % blob.size()] ^= uint8_t(data[0] | 1);
  }
  auto t = kiln::trace::decode_index(blob);
  if (t.ok()) (void)kiln::json_text(kiln::trace::summary_json(*t));
  return 0;
}
