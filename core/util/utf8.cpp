#include "core/util/utf8.h"

namespace kiln {

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

bool is_ascii(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

size_t utf8_decode(std::string_view s, size_t pos, char32_t& cp) {
  const auto byte = [&](size_t k) { return char32_t(static_cast<unsigned char>(s[pos + k])); };
  const char32_t lead = byte(0);
  const size_t n = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
  const auto broken = [&] {
    cp = 0xDC00 + lead;
    return size_t(1);
  };
  if (n == 1) {
    cp = lead;
    return 1;
  }
  if (n == 0 || pos + n > s.size()) return broken();
  char32_t v = lead & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    if ((byte(k) & 0xC0) != 0x80) return broken();
    v = (v << 6) | (byte(k) & 0x3F);
  }
  static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (v < kMin[n] || v > 0x10FFFF) return broken();
  cp = v;
  return n;
}

size_t utf8_char_length(std::string_view s, size_t pos) {
  char32_t cp;
  return utf8_decode(s, pos, cp);
}

char32_t utf8_decode_at(std::string_view s, size_t pos) {
  char32_t cp;
  utf8_decode(s, pos, cp);
  return cp;
}

std::vector<size_t> utf8_offsets(std::string_view s) {
  std::vector<size_t> offsets;
  offsets.reserve(s.size() + 1);
  for (size_t pos = 0; pos < s.size(); pos += utf8_char_length(s, pos)) offsets.push_back(pos);
  offsets.push_back(s.size());
  return offsets;
}

std::vector<std::string> utf8_chars(std::string_view s) {
  std::vector<std::string> out;
  for (size_t pos = 0; pos < s.size();) {
    const size_t n = utf8_char_length(s, pos);
    out.emplace_back(s.substr(pos, n));
    pos += n;
  }
  return out;
}

}  // namespace kiln
