#pragma once
// The two zips repro files come in: a zipped Kiln repro (any archiver: stored
// or deflated entries) and the files torch.save writes (PyTorch's content
// store keeps each saved storage as one, stored entries). Read with Debian's
// libzip (zip64 included, CRC-32 checked, central directory checked against
// the local headers); encrypted entries, other compression methods and
// entries declaring more than 1 GiB are refused before anything is read.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/status.h"

namespace kiln::minify {

struct ZipEntry {
  std::string name;  // as stored: "repro/graph.txt", "archive/data/0"
  uint16_t method = 0;  // 0 stored, 8 deflated
  uint16_t flags = 0;
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0, size = 0;
  uint64_t index = 0;  // libzip's entry index
};

class ZipArchive {
 public:
  // Reads the whole file (repros are small); errors name the path.
  static Expected<ZipArchive> open(const std::string& path);
  static Expected<ZipArchive> from_bytes(std::string bytes, const std::string& display_name);

  const std::vector<ZipEntry>& entries() const { return entries_; }
  const std::string& path() const { return path_; }
  // The entry with exactly this name, or null.
  const ZipEntry* find(std::string_view name) const;
  // The entry's uncompressed bytes.
  Expected<std::string> read(const ZipEntry& e) const;

 private:
  std::string path_;
  std::string bytes_;
  std::vector<ZipEntry> entries_;
};

// Whether the file starts with a zip signature (a local header or, for an empty
// archive, the end-of-central-directory record).
bool looks_like_zip(const std::string& path);

}  // namespace kiln::minify
