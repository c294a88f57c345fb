#include "core/util/md5.h"

namespace kiln {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

void Md5::reset() { md5_init(&ctx_); }

void Md5::update(const void* data, size_t size) { md5_update(&ctx_, size, static_cast<const uint8_t*>(data)); }

Md5Digest Md5::finish() {
  Md5Digest d;
  md5_digest(&ctx_, d.size(), d.data());  // also resets the context
  return d;
}

Md5Digest md5(std::string_view text) {
  Md5 h;
  h.update(text);
  return h.finish();
}

std::string to_hex(const Md5Digest& digest) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s(32, '0');
  for (size_t i = 0; i < 16; ++i) {
    s[2 * i] = kDigits[digest[i] >> 4];
    s[2 * i + 1] = kDigits[digest[i] & 15];
  }
  return s;
}

std::string md5_hex(std::string_view text) { return to_hex(md5(text)); }

bool parse_md5_hex(std::string_view hex, Md5Digest& out) {
  if (hex.size() != 32) return false;
  for (size_t i = 0; i < 16; ++i) {
    int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = uint8_t(hi * 16 + lo);
  }
  return true;
}

}  // namespace kiln
