#pragma once
// The bytes of one input file, memory-mapped (a 100 MB log is indexed in one
// pass without copying it) or held in memory (tests, empty files).
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "core/util/status.h"

namespace kiln::trace {

class FileData {
 public:
  static Expected<std::shared_ptr<const FileData>> map(const std::string& path);
  static std::shared_ptr<const FileData> from_string(std::string text);
  ~FileData();
  FileData(const FileData&) = delete;
  FileData& operator=(const FileData&) = delete;

  std::string_view text() const { return {data_, size_}; }

  // Drops the mapped pages of [0, end) from this process's memory; they are
  // read back from the file (or the page cache) when touched again. Indexing a
  // multi-gigabyte log this way holds a window of it, not all of it. A no-op
  // for text held in memory.
  void release_before(size_t end) const;

 private:
  FileData() = default;
  const char* data_ = nullptr;
  size_t size_ = 0;
  void* mapping_ = nullptr;  // non-null when mmap'ed
  std::string owned_;
};

}  // namespace kiln::trace
