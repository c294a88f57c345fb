#pragma once
// The ZIP container of PyTorch's torch.save files (PyTorchStreamWriter): every
// record stored uncompressed, its data aligned to 64 bytes in the file (a
// padding "extra field" in the local header), CRC-32 checked on reading. No
// ZIP64: an archive or record of 4 GiB or more is refused. Reading takes the
// central directory as the truth and checks every offset and size against the
// file, so a damaged or hostile file is an error naming the record, never a
// read outside the buffer.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/status.h"

namespace kiln {

struct ZipRecord {
  std::string name;
  std::span<const std::byte> data;
};

// Writes the records in order to `path` + ".tmp", then renames it over `path`.
Status write_zip_store(const std::string& path, const std::vector<ZipRecord>& records);

struct ZipStore {
  std::vector<std::byte> bytes;  // the whole file
  struct Entry {
    std::string name;
    size_t offset = 0, size = 0;  // of the data, in `bytes`
  };
  std::vector<Entry> entries;

  const Entry* find(std::string_view name) const;
  std::span<const std::byte> data(const Entry& e) const { return {bytes.data() + e.offset, e.size}; }
};

// Reads the whole file (at most `max_bytes`); compressed records are refused by name.
Expected<ZipStore> read_zip_store(const std::string& path, size_t max_bytes);

uint32_t crc32(std::span<const std::byte> data);

}  // namespace kiln
