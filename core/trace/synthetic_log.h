#pragma once
// Large TORCH_TRACE input for speed tests and `kiln-cli bench trace`: the
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

// `log` with "rank": N as the first field of every envelope (the way
// PyTorch writes it in a distributed run).
std::string with_rank(std::string_view log, int64_t rank);

// A distributed run's folder: `ranks` files named
// dedicated_log_torch_trace_rank_<N>_kiln.log, rank N being reference log
// N mod (number of logs) with its envelopes saying rank N.
Status write_rank_folder(const std::string& reference_dir, const std::string& out_dir, int ranks, uint64_t* written = nullptr);

}  // namespace kiln::trace
