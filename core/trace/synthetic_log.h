#pragma once
// A large TORCH_TRACE log for speed tests and `kiln-cli bench trace`: the
// reference logs concatenated, round after round, with every envelope's
// frame_id moved up by 1000 per round so compile ids do not collide.
#include <cstdint>
#include <string>

#include "core/util/status.h"

namespace kiln::trace {

// Adds `offset` to every "frame_id" of the envelopes in `log`; payload lines
// (tab-indented) are left alone, so their md5 still matches.
std::string renumber_frame_ids(std::string_view log, int64_t offset);

// Writes the logs under `reference_dir`/traces/*/ to `out_path` until at least
// `target_bytes` are written (whole logs only). `*written` gets the size.
Status write_concatenated_log(const std::string& reference_dir, const std::string& out_path, uint64_t target_bytes,
                              uint64_t* written = nullptr);

}  // namespace kiln::trace
