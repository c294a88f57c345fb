#include "core/trace/file_data.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace kiln::trace {

Expected<std::shared_ptr<const FileData>> FileData::map(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::error(std::string("cannot open: ") + std::strerror(errno), {path, 0});
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::error("not a regular file", {path, 0});
  }
  std::shared_ptr<FileData> f(new FileData());
  if (st.st_size > 0) {
    void* p = ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      return Status::error(std::string("cannot map: ") + std::strerror(e), {path, 0});
    }
    // The reader walks the file front to back once.
    ::madvise(p, size_t(st.st_size), MADV_SEQUENTIAL);
    f->mapping_ = p;
    f->data_ = static_cast<const char*>(p);
    f->size_ = size_t(st.st_size);
  }
  ::close(fd);
  return std::shared_ptr<const FileData>(std::move(f));
}

std::shared_ptr<const FileData> FileData::from_string(std::string text) {
  std::shared_ptr<FileData> f(new FileData());
  f->owned_ = std::move(text);
  f->data_ = f->owned_.data();
  f->size_ = f->owned_.size();
  return f;
}

void FileData::release_before(size_t end) const {
  if (!mapping_) return;
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  end = std::min(end, size_) / page * page;
  if (end) ::madvise(mapping_, end, MADV_DONTNEED);
}

FileData::~FileData() {
  if (mapping_) ::munmap(mapping_, size_);
}

}  // namespace kiln::trace
