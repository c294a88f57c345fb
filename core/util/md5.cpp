#include "core/util/md5.h"

#include <algorithm>
#include <cstring>

namespace kiln {
namespace {

inline uint32_t rotl(uint32_t x, int c) { return (x << c) | (x >> (32 - c)); }

inline uint32_t load_le32(const uint8_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}

// The four round functions, written so the compiler keeps them branch-free.
inline uint32_t f_fn(uint32_t x, uint32_t y, uint32_t z) { return z ^ (x & (y ^ z)); }
inline uint32_t g_fn(uint32_t x, uint32_t y, uint32_t z) { return y ^ (z & (x ^ y)); }
inline uint32_t h_fn(uint32_t x, uint32_t y, uint32_t z) { return x ^ y ^ z; }
inline uint32_t i_fn(uint32_t x, uint32_t y, uint32_t z) { return y ^ (x | ~z); }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

void Md5::reset() {
  state_[0] = 0x67452301u;
  state_[1] = 0xefcdab89u;
  state_[2] = 0x98badcfeu;
  state_[3] = 0x10325476u;
  total_ = 0;
  buffered_ = 0;
}

// The 64 steps are unrolled through a macro: a loop with table lookups for the
// shift amounts runs about half as fast, and trace indexing hashes every byte.
#define KILN_MD5_STEP(fn, a, b, c, d, k, s, t) \
  a += fn(b, c, d) + w[k] + t;                 \
  a = rotl(a, s) + b;

void Md5::compress(const uint8_t* block) {
  uint32_t w[16];
  for (int i = 0; i < 16; ++i) w[i] = load_le32(block + 4 * i);
  uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3];

  KILN_MD5_STEP(f_fn, a, b, c, d, 0, 7, 0xd76aa478u)
  KILN_MD5_STEP(f_fn, d, a, b, c, 1, 12, 0xe8c7b756u)
  KILN_MD5_STEP(f_fn, c, d, a, b, 2, 17, 0x242070dbu)
  KILN_MD5_STEP(f_fn, b, c, d, a, 3, 22, 0xc1bdceeeu)
  KILN_MD5_STEP(f_fn, a, b, c, d, 4, 7, 0xf57c0fafu)
  KILN_MD5_STEP(f_fn, d, a, b, c, 5, 12, 0x4787c62au)
  KILN_MD5_STEP(f_fn, c, d, a, b, 6, 17, 0xa8304613u)
  KILN_MD5_STEP(f_fn, b, c, d, a, 7, 22, 0xfd469501u)
  KILN_MD5_STEP(f_fn, a, b, c, d, 8, 7, 0x698098d8u)
  KILN_MD5_STEP(f_fn, d, a, b, c, 9, 12, 0x8b44f7afu)
  KILN_MD5_STEP(f_fn, c, d, a, b, 10, 17, 0xffff5bb1u)
  KILN_MD5_STEP(f_fn, b, c, d, a, 11, 22, 0x895cd7beu)
  KILN_MD5_STEP(f_fn, a, b, c, d, 12, 7, 0x6b901122u)
  KILN_MD5_STEP(f_fn, d, a, b, c, 13, 12, 0xfd987193u)
  KILN_MD5_STEP(f_fn, c, d, a, b, 14, 17, 0xa679438eu)
  KILN_MD5_STEP(f_fn, b, c, d, a, 15, 22, 0x49b40821u)

  KILN_MD5_STEP(g_fn, a, b, c, d, 1, 5, 0xf61e2562u)
  KILN_MD5_STEP(g_fn, d, a, b, c, 6, 9, 0xc040b340u)
  KILN_MD5_STEP(g_fn, c, d, a, b, 11, 14, 0x265e5a51u)
  KILN_MD5_STEP(g_fn, b, c, d, a, 0, 20, 0xe9b6c7aau)
  KILN_MD5_STEP(g_fn, a, b, c, d, 5, 5, 0xd62f105du)
  KILN_MD5_STEP(g_fn, d, a, b, c, 10, 9, 0x02441453u)
  KILN_MD5_STEP(g_fn, c, d, a, b, 15, 14, 0xd8a1e681u)
  KILN_MD5_STEP(g_fn, b, c, d, a, 4, 20, 0xe7d3fbc8u)
  KILN_MD5_STEP(g_fn, a, b, c, d, 9, 5, 0x21e1cde6u)
  KILN_MD5_STEP(g_fn, d, a, b, c, 14, 9, 0xc33707d6u)
  KILN_MD5_STEP(g_fn, c, d, a, b, 3, 14, 0xf4d50d87u)
  KILN_MD5_STEP(g_fn, b, c, d, a, 8, 20, 0x455a14edu)
  KILN_MD5_STEP(g_fn, a, b, c, d, 13, 5, 0xa9e3e905u)
  KILN_MD5_STEP(g_fn, d, a, b, c, 2, 9, 0xfcefa3f8u)
  KILN_MD5_STEP(g_fn, c, d, a, b, 7, 14, 0x676f02d9u)
  KILN_MD5_STEP(g_fn, b, c, d, a, 12, 20, 0x8d2a4c8au)

  KILN_MD5_STEP(h_fn, a, b, c, d, 5, 4, 0xfffa3942u)
  KILN_MD5_STEP(h_fn, d, a, b, c, 8, 11, 0x8771f681u)
  KILN_MD5_STEP(h_fn, c, d, a, b, 11, 16, 0x6d9d6122u)
  KILN_MD5_STEP(h_fn, b, c, d, a, 14, 23, 0xfde5380cu)
  KILN_MD5_STEP(h_fn, a, b, c, d, 1, 4, 0xa4beea44u)
  KILN_MD5_STEP(h_fn, d, a, b, c, 4, 11, 0x4bdecfa9u)
  KILN_MD5_STEP(h_fn, c, d, a, b, 7, 16, 0xf6bb4b60u)
  KILN_MD5_STEP(h_fn, b, c, d, a, 10, 23, 0xbebfbc70u)
  KILN_MD5_STEP(h_fn, a, b, c, d, 13, 4, 0x289b7ec6u)
  KILN_MD5_STEP(h_fn, d, a, b, c, 0, 11, 0xeaa127fau)
  KILN_MD5_STEP(h_fn, c, d, a, b, 3, 16, 0xd4ef3085u)
  KILN_MD5_STEP(h_fn, b, c, d, a, 6, 23, 0x04881d05u)
  KILN_MD5_STEP(h_fn, a, b, c, d, 9, 4, 0xd9d4d039u)
  KILN_MD5_STEP(h_fn, d, a, b, c, 12, 11, 0xe6db99e5u)
  KILN_MD5_STEP(h_fn, c, d, a, b, 15, 16, 0x1fa27cf8u)
  KILN_MD5_STEP(h_fn, b, c, d, a, 2, 23, 0xc4ac5665u)

  KILN_MD5_STEP(i_fn, a, b, c, d, 0, 6, 0xf4292244u)
  KILN_MD5_STEP(i_fn, d, a, b, c, 7, 10, 0x432aff97u)
  KILN_MD5_STEP(i_fn, c, d, a, b, 14, 15, 0xab9423a7u)
  KILN_MD5_STEP(i_fn, b, c, d, a, 5, 21, 0xfc93a039u)
  KILN_MD5_STEP(i_fn, a, b, c, d, 12, 6, 0x655b59c3u)
  KILN_MD5_STEP(i_fn, d, a, b, c, 3, 10, 0x8f0ccc92u)
  KILN_MD5_STEP(i_fn, c, d, a, b, 10, 15, 0xffeff47du)
  KILN_MD5_STEP(i_fn, b, c, d, a, 1, 21, 0x85845dd1u)
  KILN_MD5_STEP(i_fn, a, b, c, d, 8, 6, 0x6fa87e4fu)
  KILN_MD5_STEP(i_fn, d, a, b, c, 15, 10, 0xfe2ce6e0u)
  KILN_MD5_STEP(i_fn, c, d, a, b, 6, 15, 0xa3014314u)
  KILN_MD5_STEP(i_fn, b, c, d, a, 13, 21, 0x4e0811a1u)
  KILN_MD5_STEP(i_fn, a, b, c, d, 4, 6, 0xf7537e82u)
  KILN_MD5_STEP(i_fn, d, a, b, c, 11, 10, 0xbd3af235u)
  KILN_MD5_STEP(i_fn, c, d, a, b, 2, 15, 0x2ad7d2bbu)
  KILN_MD5_STEP(i_fn, b, c, d, a, 9, 21, 0xeb86d391u)

  state_[0] += a;
  state_[1] += b;
  state_[2] += c;
  state_[3] += d;
}

#undef KILN_MD5_STEP

void Md5::update(const void* data, size_t size) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  total_ += size;
  if (buffered_ > 0) {
    size_t take = std::min(size, sizeof(buffer_) - buffered_);
    std::memcpy(buffer_ + buffered_, p, take);
    buffered_ += take;
    p += take;
    size -= take;
    if (buffered_ < sizeof(buffer_)) return;
    compress(buffer_);
    buffered_ = 0;
  }
  for (; size >= 64; p += 64, size -= 64) compress(p);
  if (size > 0) {
    std::memcpy(buffer_, p, size);
    buffered_ = size;
  }
}

Md5Digest Md5::finish() {
  uint64_t bits = total_ * 8;
  static const uint8_t kPad[64] = {0x80};
  size_t pad = buffered_ < 56 ? 56 - buffered_ : 120 - buffered_;
  update(kPad, pad);
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = uint8_t(bits >> (8 * i));
  update(length, 8);
  Md5Digest out;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) out[size_t(4 * i + j)] = uint8_t(state_[i] >> (8 * j));
  reset();
  return out;
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
