#include "minifier/repro_zip.h"

#include <zip.h>

#include <fstream>
#include <memory>
#include <sstream>

namespace kiln::minify {
namespace {

constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kEndOfCentralDirectory = 0x06054b50;
// Repros are small; a declared size past this is a damaged or hostile archive,
// refused before anything is allocated for it.
constexpr uint64_t kMaxEntryBytes = uint64_t(1) << 30;

struct ArchiveCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
struct FileCloser {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};
using Archive = std::unique_ptr<zip_t, ArchiveCloser>;

std::string message_of(zip_error_t* e) {
  std::string m = zip_error_strerror(e);
  if (zip_error_code_zip(e) == ZIP_ER_CRC) m = "CRC mismatch (the archive is damaged)";
  return m;
}

// libzip reads from a source over our copy of the bytes (kept alive by the
// ZipArchive), so entries are read on demand and nothing touches the file again.
Expected<Archive> open_archive(const std::string& bytes, const std::string& name) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* src = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
  if (!src) {
    std::string m = message_of(&error);
    zip_error_fini(&error);
    return Status::error("not a readable zip: " + m, {name, 0});
  }
  // ZIP_CHECKCONS: the central directory must agree with the local headers,
  // so a truncated or spliced archive is an error here, not a wrong read later.
  zip_t* z = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &error);
  if (!z) {
    zip_source_free(src);
    std::string m = message_of(&error);
    zip_error_fini(&error);
    return Status::error("not a readable zip: " + m, {name, 0});
  }
  zip_error_fini(&error);
  return Archive(z);
}

}  // namespace

Expected<ZipArchive> ZipArchive::open(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::error("cannot open '" + path + "'", {path, 0});
  std::ostringstream ss;
  ss << f.rdbuf();
  return from_bytes(std::move(ss).str(), path);
}

Expected<ZipArchive> ZipArchive::from_bytes(std::string bytes, const std::string& display_name) {
  ZipArchive z;
  z.path_ = display_name;
  z.bytes_ = std::move(bytes);
  Expected<Archive> a = open_archive(z.bytes_, z.path_);
  if (!a) return a.status();
  const zip_int64_t n = zip_get_num_entries(a->get(), 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(a->get(), zip_uint64_t(i), 0, &st) != 0)
      return Status::error("not a readable zip: " + message_of(zip_get_error(a->get())), {z.path_, 0});
    ZipEntry e;
    e.name = st.name ? st.name : "";
    e.method = uint16_t(st.comp_method);
    e.flags = st.encryption_method != ZIP_EM_NONE ? 1 : 0;
    e.crc32 = st.crc;
    e.compressed_size = st.comp_size;
    e.size = st.size;
    e.index = uint64_t(i);
    z.entries_.push_back(std::move(e));
  }
  return z;
}

const ZipEntry* ZipArchive::find(std::string_view name) const {
  for (const ZipEntry& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

Expected<std::string> ZipArchive::read(const ZipEntry& e) const {
  const std::string what = path_ + "/" + e.name;
  if (e.flags & 1) return Status::error(what + ": encrypted zip entries are not supported", {path_, 0});
  if (e.size > kMaxEntryBytes || e.compressed_size > kMaxEntryBytes)
    return Status::error(what + ": entry of " + std::to_string(e.size) + " bytes is too large for a repro", {path_, 0});
  if (e.method != ZIP_CM_STORE && e.method != ZIP_CM_DEFLATE)
    return Status::error(what + ": compression method " + std::to_string(e.method) +
                             " is not supported (only stored and deflate)",
                         {path_, 0});
  Expected<Archive> a = open_archive(bytes_, path_);
  if (!a) return a.status();
  std::unique_ptr<zip_file_t, FileCloser> f(zip_fopen_index(a->get(), e.index, 0));
  if (!f) return Status::error(what + ": " + message_of(zip_get_error(a->get())), {path_, 0});
  std::string out(size_t(e.size), '\0');
  zip_int64_t got = out.empty() ? 0 : zip_fread(f.get(), out.data(), out.size());
  if (got < 0) return Status::error(what + ": " + message_of(zip_file_get_error(f.get())), {path_, 0});
  // One byte more must be the end: libzip checks the CRC when it reaches it.
  char extra;
  zip_int64_t more = zip_fread(f.get(), &extra, 1);
  if (more < 0) return Status::error(what + ": " + message_of(zip_file_get_error(f.get())), {path_, 0});
  if (uint64_t(got) != e.size || more != 0)
    return Status::error(what + ": damaged entry (its data does not match its declared size)", {path_, 0});
  return out;
}

bool looks_like_zip(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char sig[4] = {};
  if (!f.read(sig, 4)) return false;
  uint32_t v = uint32_t(uint8_t(sig[0])) | uint32_t(uint8_t(sig[1])) << 8 | uint32_t(uint8_t(sig[2])) << 16 |
               uint32_t(uint8_t(sig[3])) << 24;
  return v == kLocalHeader || v == kEndOfCentralDirectory;
}

}  // namespace kiln::minify
