#pragma once
// Synthetic TORCH_TRACE logs for the trace tests: glog lines with JSON
// envelopes and tab-indented payloads whose md5 matches, written as PyTorch
// writes them, with our own content.
#include <string>

#include "core/util/md5.h"

namespace kiln::test {

inline const std::string kLogPrefix = "V1122 00:25:49.640000 785 torch/_dynamo/x.py:12] ";
inline const std::string kLogIds = "\"frame_id\": 0, \"frame_compile_id\": 0, \"attempt\": 0";

inline std::string log_record(const std::string& envelope) { return kLogPrefix + envelope + "\n"; }

inline std::string payload_lines(const std::string& payload) {
  std::string out;
  size_t pos = 0;
  for (;;) {
    size_t eol = payload.find('\n', pos);
    out += '\t';
    out.append(payload, pos, eol == std::string::npos ? std::string::npos : eol - pos);
    out += '\n';
    if (eol == std::string::npos) break;
    pos = eol + 1;
  }
  return out;
}

// `{"<tag>": <meta>, <ids>, "has_payload": "<md5>"}` and the payload lines.
inline std::string log_record_with_payload(const std::string& tag, const std::string& meta, const std::string& payload,
                                           const std::string& ids = kLogIds) {
  return log_record("{\"" + tag + "\": " + meta + ", " + ids + ", \"has_payload\": \"" + md5_hex(payload) + "\"}") +
         payload_lines(payload);
}

}  // namespace kiln::test
