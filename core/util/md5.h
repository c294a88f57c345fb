#pragma once
// MD5 (RFC 1321), from Debian's nettle. TORCH_TRACE payloads carry the md5 of
// their text, and the trace reader checks every payload while it indexes, so
// this sits on the hot path: updates are cheap for the many short payload
// lines it is fed (nettle's compression function is assembly on x86-64).
// Not for security.
#include <nettle/md5.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln {

using Md5Digest = std::array<uint8_t, 16>;

class Md5 {
 public:
  Md5() { reset(); }
  void reset();
  void update(const void* data, size_t size);
  void update(std::string_view text) { update(text.data(), text.size()); }
  // Pads, returns the digest and leaves the object ready for a new message.
  Md5Digest finish();

 private:
  md5_ctx ctx_;
};

Md5Digest md5(std::string_view text);
std::string md5_hex(std::string_view text);
std::string to_hex(const Md5Digest& digest);
// Accepts exactly 32 hex digits (either case); false for anything else.
bool parse_md5_hex(std::string_view hex, Md5Digest& out);

}  // namespace kiln
