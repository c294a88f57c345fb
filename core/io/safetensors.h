#pragma once
// The safetensors format (https://github.com/huggingface/safetensors): an 8-byte
// little-endian header length N, N bytes of JSON mapping each tensor name to
// {"dtype", "shape", "data_offsets": [begin, end]} (offsets into the data buffer
// that follows the header) plus an optional "__metadata__" object of strings,
// then the data buffer. Reading follows the reference implementation's rules:
// a file it would reject is rejected here too, with a Status naming the file,
// the entry and what is wrong.
#include <cstddef>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/tensor/tensor.h"
#include "core/util/status.h"

namespace kiln {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

struct SafetensorsFile {
  // Each tensor is contiguous with its own storage, in data-offset order.
  NamedTensors tensors;
  std::map<std::string, std::string> metadata;

  // nullptr when there is no tensor of that name.
  const Tensor* find(std::string_view name) const;
};

// Reads tensors straight from the file into their storage (no whole-file copy).
Expected<SafetensorsFile> read_safetensors(const std::string& path);
// The same checks on bytes already in memory; errors name `display_name`.
Expected<SafetensorsFile> parse_safetensors(std::span<const std::byte> bytes,
                                            const std::string& display_name);

// Lays tensors out as the reference implementation does (by descending dtype
// alignment, then by name), so every tensor's bytes are aligned to its itemsize
// and our files are byte-identical to Python's `save_file` for the same input
// (except the order of several metadata keys, which the reference hashes).
// Non-contiguous tensors are written contiguous; empty metadata writes no
// "__metadata__" entry.
Expected<std::vector<std::byte>> serialize_safetensors(
    const NamedTensors& tensors, const std::map<std::string, std::string>& metadata = {});
// Writes `path` + ".tmp" and renames it over `path`, so a failed write leaves
// neither a half-written file nor the temporary behind.
Status write_safetensors(const std::string& path, const NamedTensors& tensors,
                         const std::map<std::string, std::string>& metadata = {});

}  // namespace kiln
