#pragma once
// A Trace index as a compact binary blob, so that a workspace (core/store) can
// hand back a trace opened before without re-reading its log. Only the index
// is kept: payloads stay in the dump's files and are read on demand, and
// parsed graphs are re-parsed on first use.
//
// The blob starts with a magic and a format version; a blob of another version
// or a damaged one decodes to an error, never to a crash or a half-read Trace.
#include <cstdint>
#include <vector>

#include "core/trace/trace.h"
#include "core/util/status.h"

namespace kiln::trace {

// Bumped whenever the encoded fields change; older blobs are then re-indexed.
inline constexpr uint32_t kIndexFormatVersion = 2;  // 2: Artifact::graph, ranks, the trace's chromium events

std::vector<uint8_t> encode_index(const Trace& trace);
Expected<Trace> decode_index(const uint8_t* data, size_t size);
inline Expected<Trace> decode_index(const std::vector<uint8_t>& blob) { return decode_index(blob.data(), blob.size()); }

}  // namespace kiln::trace
