#pragma once
// UTF-8 encoding shared by the readers and formatters that turn code points
// back into text (Python and JSON string escapes, format fills), and the code
// point arithmetic of Python's str (which indexes characters, not bytes).
//
// Text that is not valid UTF-8 (a surrogateescape'd byte) is read one byte
// per code point where a sequence breaks, so every byte belongs to exactly one
// code point and offsets always land on a boundary. Lengths, widths, indexes
// and reprs all read text through utf8_decode, so they agree.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

// Appends `cp` as UTF-8. Surrogates (U+D800..U+DFFF) are encoded like any other
// code point, so a surrogateescape'd byte round-trips through Kiln's own text.
void append_utf8(std::string& out, char32_t cp);

// The length a UTF-8 sequence announces by its first byte (1 for ASCII and
// for a stray continuation byte, which is not a lead).
inline size_t utf8_lead_length(unsigned char lead) { return lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1; }

bool is_ascii(std::string_view s);

// The one UTF-8 reader of Kiln's text: decodes the code point at s[pos] into
// `cp` and returns its byte length (1..4). Surrogates read as themselves (3
// bytes; append_utf8 writes them so). A byte that starts no well-formed
// sequence (a stray continuation, a truncated or overlong sequence, a value
// past U+10FFFF) is one code point on its own, U+DC00 + byte, as Python's
// surrogateescape reads it.
size_t utf8_decode(std::string_view s, size_t pos, char32_t& cp);

// The byte length of the code point starting at `pos` (utf8_decode's).
size_t utf8_char_length(std::string_view s, size_t pos);

// The code point starting at `pos` (utf8_decode's).
char32_t utf8_decode_at(std::string_view s, size_t pos);

// Byte offsets of every code point, then s.size(): offsets[i] starts code
// point i, so code points [a, b) are bytes [offsets[a], offsets[b]).
std::vector<size_t> utf8_offsets(std::string_view s);

// The code points as separate strings.
std::vector<std::string> utf8_chars(std::string_view s);

}  // namespace kiln
