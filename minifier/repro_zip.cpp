#include "minifier/repro_zip.h"

#include <zlib.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

namespace kiln::minify {
namespace {

constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kEndOfCentralDirectory = 0x06054b50;
constexpr uint32_t kZip64End = 0x06064b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr size_t kEndRecordSize = 22;
constexpr size_t kMaxComment = 0xffff;
// A repro's entries are a few MB at most; a header claiming more is damage,
// and inflating it blindly would let a tiny file demand any amount of memory.
constexpr uint64_t kMaxEntryBytes = uint64_t(1) << 30;

// Little-endian fields at checked offsets: every read past the end is an error
// rather than a read of whatever follows the buffer.
class Cursor {
 public:
  Cursor(std::string_view bytes, const std::string& name) : bytes_(bytes), name_(name) {}
  uint64_t u(size_t at, int width) const {
    if (at > bytes_.size() || bytes_.size() - at < size_t(width)) fail("truncated (a record runs past the end of the file)");
    uint64_t v = 0;
    for (int k = width - 1; k >= 0; --k) v = (v << 8) | uint8_t(bytes_[at + size_t(k)]);
    return v;
  }
  uint16_t u16(size_t at) const { return uint16_t(u(at, 2)); }
  uint32_t u32(size_t at) const { return uint32_t(u(at, 4)); }
  uint64_t u64(size_t at) const { return u(at, 8); }
  std::string_view slice(uint64_t at, uint64_t n) const {
    if (at > bytes_.size() || bytes_.size() - at < n) fail("truncated (an entry runs past the end of the file)");
    return bytes_.substr(size_t(at), size_t(n));
  }
  [[noreturn]] void fail(const std::string& what) const { throw Error("not a readable zip: " + what, {name_, 0}); }
  size_t size() const { return bytes_.size(); }

 private:
  std::string_view bytes_;
  const std::string& name_;
};

// The zip64 extra field (id 1) holds, in this order, whichever of the three
// 32-bit fields were saturated.
void apply_zip64_extra(const Cursor& c, size_t extra, size_t extra_len, ZipEntry& e, bool size_sat, bool csize_sat,
                       bool offset_sat) {
  size_t at = extra, end = extra + extra_len;
  while (at + 4 <= end) {
    uint16_t id = c.u16(at), len = c.u16(at + 2);
    size_t field = at + 4;
    if (id == 1) {
      if (size_sat) e.size = c.u64(field), field += 8;
      if (csize_sat) e.compressed_size = c.u64(field), field += 8;
      if (offset_sat) e.local_header_offset = c.u64(field);
      return;
    }
    at = field + len;
  }
  c.fail("entry '" + e.name + "' has 32-bit fields marked zip64 but no zip64 extra field");
}

std::vector<ZipEntry> read_central_directory(const Cursor& c) {
  if (c.size() < kEndRecordSize) c.fail("shorter than an end-of-central-directory record");
  // The end record sits before a comment of up to 64 KiB: search backwards.
  size_t lowest = c.size() > kEndRecordSize + kMaxComment ? c.size() - kEndRecordSize - kMaxComment : 0;
  size_t end = std::string::npos;
  for (size_t at = c.size() - kEndRecordSize + 1; at-- > lowest;) {
    if (c.u32(at) == kEndOfCentralDirectory) {
      end = at;
      break;
    }
  }
  if (end == std::string::npos) c.fail("no end-of-central-directory record");
  uint64_t count = c.u16(end + 10);
  uint64_t dir_size = c.u32(end + 12);
  uint64_t dir_offset = c.u32(end + 16);
  if ((count == 0xffff || dir_size == 0xffffffff || dir_offset == 0xffffffff) && end >= 20 &&
      c.u32(end - 20) == kZip64Locator) {
    uint64_t z64 = c.u64(end - 20 + 8);
    if (c.u32(size_t(std::min<uint64_t>(z64, c.size()))) != kZip64End) c.fail("the zip64 locator points at no zip64 record");
    count = c.u64(size_t(z64) + 32);
    dir_size = c.u64(size_t(z64) + 40);
    dir_offset = c.u64(size_t(z64) + 48);
  }
  if (dir_offset > c.size() || c.size() - dir_offset < dir_size) c.fail("the central directory lies past the end of the file");
  std::vector<ZipEntry> out;
  size_t at = size_t(dir_offset);
  for (uint64_t k = 0; k < count; ++k) {
    if (c.u32(at) != kCentralHeader) c.fail("central directory entry " + std::to_string(k) + " has a bad signature");
    ZipEntry e;
    e.flags = c.u16(at + 8);
    e.method = c.u16(at + 10);
    e.crc32 = c.u32(at + 16);
    e.compressed_size = c.u32(at + 20);
    e.size = c.u32(at + 24);
    size_t name_len = c.u16(at + 28), extra_len = c.u16(at + 30), comment_len = c.u16(at + 32);
    e.local_header_offset = c.u32(at + 42);
    e.name = std::string(c.slice(at + 46, name_len));
    bool size_sat = e.size == 0xffffffff, csize_sat = e.compressed_size == 0xffffffff,
         offset_sat = e.local_header_offset == 0xffffffff;
    if (size_sat || csize_sat || offset_sat)
      apply_zip64_extra(c, at + 46 + name_len, extra_len, e, size_sat, csize_sat, offset_sat);
    out.push_back(std::move(e));
    at += 46 + name_len + extra_len + comment_len;
  }
  return out;
}

std::string inflate_raw(std::string_view in, uint64_t size, const std::string& what) {
  std::string out(size_t(size), '\0');
  z_stream z{};
  // Negative window bits: a raw deflate stream, as zip stores it (no zlib header).
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) throw Error(what + ": zlib could not start inflating");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = uInt(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  int rc = inflate(&z, Z_FINISH);
  uint64_t produced = z.total_out;
  inflateEnd(&z);
  if (rc != Z_STREAM_END || produced != size)
    throw Error(what + ": damaged deflate data (" + (rc == Z_STREAM_END ? "wrong size" : "zlib error " + std::to_string(rc)) + ")");
  return out;
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
  try {
    z.entries_ = read_central_directory(Cursor(z.bytes_, z.path_));
  } catch (const Error& e) {
    return e.to_status();
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
  try {
    Cursor c(bytes_, path_);
    if (e.flags & 1) throw Error(what + ": encrypted zip entries are not supported", {path_, 0});
    if (e.size > kMaxEntryBytes || e.compressed_size > kMaxEntryBytes)
      throw Error(what + ": entry of " + std::to_string(e.size) + " bytes is too large for a repro", {path_, 0});
    size_t at = size_t(std::min<uint64_t>(e.local_header_offset, bytes_.size()));
    if (c.u32(at) != kLocalHeader) c.fail("entry '" + e.name + "' points at no local header");
    // The local header's own name and extra lengths can differ from the
    // central directory's (torch.save pads the extra field to align data).
    uint64_t data = at + 30 + uint64_t(c.u16(at + 26)) + c.u16(at + 28);
    std::string_view raw = c.slice(data, e.compressed_size);
    std::string out;
    if (e.method == 0) {
      if (e.compressed_size != e.size) throw Error(what + ": stored entry with differing sizes", {path_, 0});
      out = std::string(raw);
    } else if (e.method == 8) {
      out = inflate_raw(raw, e.size, what);
    } else {
      throw Error(what + ": compression method " + std::to_string(e.method) + " is not supported (only stored and deflate)",
                  {path_, 0});
    }
    uint32_t crc = uint32_t(crc32(0L, reinterpret_cast<const Bytef*>(out.data()), uInt(out.size())));
    if (crc != e.crc32) throw Error(what + ": CRC mismatch (the archive is damaged)", {path_, 0});
    return out;
  } catch (const Error& err) {
    return err.to_status();
  }
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
