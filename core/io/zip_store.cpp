#include "core/io/zip_store.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

namespace kiln {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr size_t kAlignment = 64;  // PyTorchStreamWriter's kFieldAlignment
constexpr uint16_t kPaddingId = 0x4246;  // "FB", the id PyTorch's padding field uses

void put16(std::vector<std::byte>& out, uint16_t v) {
  out.push_back(std::byte(v & 0xff));
  out.push_back(std::byte(v >> 8));
}
void put32(std::vector<std::byte>& out, uint32_t v) {
  put16(out, uint16_t(v & 0xffff));
  put16(out, uint16_t(v >> 16));
}
void put_str(std::vector<std::byte>& out, std::string_view s) {
  for (char c : s) out.push_back(std::byte(c));
}
uint16_t get16(std::span<const std::byte> b, size_t at) {
  return uint16_t(uint16_t(b[at]) | uint16_t(b[at + 1]) << 8);
}
uint32_t get32(std::span<const std::byte> b, size_t at) { return uint32_t(get16(b, at)) | uint32_t(get16(b, at + 2)) << 16; }

}  // namespace

uint32_t crc32(std::span<const std::byte> data) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xffffffffu;
  for (std::byte b : data) c = table[(c ^ uint32_t(b)) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

const ZipStore::Entry* ZipStore::find(std::string_view name) const {
  for (const Entry& e : entries)
    if (e.name == name) return &e;
  return nullptr;
}

Status write_zip_store(const std::string& path, const std::vector<ZipRecord>& records) {
  constexpr size_t kMax = std::numeric_limits<uint32_t>::max();
  std::vector<std::byte> out, central;
  for (const ZipRecord& r : records) {
    if (r.data.size() >= kMax || out.size() >= kMax)
      return Status::error("torch.save: '" + path + "' would need ZIP64 (4 GiB or more), which Kiln does not write");
    const uint32_t crc = crc32(r.data), size = uint32_t(r.data.size()), offset = uint32_t(out.size());
    const size_t header_end = out.size() + 30 + r.name.size();
    // The padding field's own 4-byte header plus whatever aligns the data.
    size_t pad = (kAlignment - (header_end + 4) % kAlignment) % kAlignment;
    put32(out, kLocalSig);
    put16(out, 20);  // version needed
    put16(out, 0);   // flags
    put16(out, 0);   // stored
    put16(out, 0);   // time
    put16(out, 0);  // date: none, as PyTorch writes
    put32(out, crc);
    put32(out, size);
    put32(out, size);
    put16(out, uint16_t(r.name.size()));
    put16(out, uint16_t(4 + pad));
    put_str(out, r.name);
    put16(out, kPaddingId);
    put16(out, uint16_t(pad));
    out.insert(out.end(), pad, std::byte{'Z'});
    out.insert(out.end(), r.data.begin(), r.data.end());

    put32(central, kCentralSig);
    put16(central, 20);  // version made by
    put16(central, 20);
    put16(central, 0);
    put16(central, 0);
    put16(central, 0);
    put16(central, 0);
    put32(central, crc);
    put32(central, size);
    put32(central, size);
    put16(central, uint16_t(r.name.size()));
    put16(central, 0);  // extra
    put16(central, 0);  // comment
    put16(central, 0);  // disk
    put16(central, 0);  // internal attributes
    put32(central, 0);  // external attributes
    put32(central, offset);
    put_str(central, r.name);
  }
  const uint32_t central_at = uint32_t(out.size());
  out.insert(out.end(), central.begin(), central.end());
  put32(out, kEndSig);
  put16(out, 0);
  put16(out, 0);
  put16(out, uint16_t(records.size()));
  put16(out, uint16_t(records.size()));
  put32(out, uint32_t(central.size()));
  put32(out, central_at);
  put16(out, 0);

  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return Status::error("torch.save: cannot create '" + tmp + "': " + std::strerror(errno));
  const bool ok = std::fwrite(out.data(), 1, out.size(), f) == out.size() && std::fflush(f) == 0 && ::fsync(fileno(f)) == 0;
  const int err = errno;
  if (std::fclose(f) != 0 || !ok) {
    std::filesystem::remove(tmp);
    return Status::error("torch.save: write to '" + tmp + "' failed: " + std::strerror(err));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp);
    return Status::error("torch.save: cannot rename '" + tmp + "' to '" + path + "': " + ec.message());
  }
  return Status();
}

Expected<ZipStore> read_zip_store(const std::string& path, size_t max_bytes) {
  std::error_code ec;
  const uintmax_t file_size = std::filesystem::file_size(path, ec);
  if (ec) return Status::error(path + ": cannot read: " + ec.message());
  if (file_size > max_bytes)
    return Status::error(path + ": " + std::to_string(file_size) + " bytes, more than the " + std::to_string(max_bytes) +
                         " this run may load");
  ZipStore z;
  z.bytes.resize(size_t(file_size));
  std::ifstream in(path, std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(z.bytes.data()), std::streamsize(file_size)))
    return Status::error(path + ": cannot read");
  std::span<const std::byte> b(z.bytes);
  auto bad = [&](const std::string& why) { return Status::error(path + ": not a torch.save archive: " + why); };
  if (b.size() < 22) return bad("too short for a ZIP file");
  // The end record: the last 22 bytes unless a comment follows it.
  size_t end = b.size() - 22;
  const size_t lowest = b.size() > 22 + 65535 ? b.size() - 22 - 65535 : 0;
  while (get32(b, end) != kEndSig) {
    if (end == lowest) return bad("no ZIP end record");
    --end;
  }
  const size_t count = get16(b, end + 10), central_size = get32(b, end + 12), central_at = get32(b, end + 16);
  if (get16(b, end + 8) == 0xffff || central_at == 0xffffffffu) return bad("ZIP64 archives are not read by Kiln");
  if (central_at > end || central_size > end - central_at) return bad("central directory outside the file");
  size_t at = central_at;
  for (size_t i = 0; i < count; ++i) {
    if (at + 46 > central_at + central_size || get32(b, at) != kCentralSig) return bad("damaged central directory entry " + std::to_string(i));
    const uint16_t method = get16(b, at + 10);
    const uint32_t crc = get32(b, at + 16), csize = get32(b, at + 20), usize = get32(b, at + 24);
    const size_t name_len = get16(b, at + 28), extra_len = get16(b, at + 30), comment_len = get16(b, at + 32);
    const size_t local = get32(b, at + 42);
    if (at + 46 + name_len > central_at + central_size) return bad("damaged central directory entry " + std::to_string(i));
    std::string name(reinterpret_cast<const char*>(b.data() + at + 46), name_len);
    at += 46 + name_len + extra_len + comment_len;
    if (method != 0) return bad("record '" + name + "' is compressed (method " + std::to_string(method) + "); Kiln reads stored records only");
    if (csize != usize) return bad("record '" + name + "' has different stored and original sizes");
    if (local + 30 > central_at || get32(b, local) != kLocalSig) return bad("record '" + name + "' has no local header");
    const size_t data_at = local + 30 + get16(b, local + 26) + get16(b, local + 28);
    if (data_at > central_at || usize > central_at - data_at) return bad("record '" + name + "' runs past the data");
    ZipStore::Entry e{name, data_at, usize};
    if (crc32(z.data(e)) != crc) return bad("record '" + name + "' fails its CRC-32 check");
    z.entries.push_back(std::move(e));
  }
  return z;
}

}  // namespace kiln
