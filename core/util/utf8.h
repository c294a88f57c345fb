#pragma once
// UTF-8 encoding shared by the readers and formatters that turn code points
// back into text (Python and JSON string escapes, format fills).
#include <cstddef>
#include <string>

namespace kiln {

// Appends `cp` as UTF-8. Surrogates (U+D800..U+DFFF) are encoded like any other
// code point, so a surrogateescape'd byte round-trips through Kiln's own text.
void append_utf8(std::string& out, char32_t cp);

// The length a UTF-8 sequence announces by its first byte (1 for ASCII and
// for a stray continuation byte, which is not a lead).
inline size_t utf8_lead_length(unsigned char lead) { return lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1; }

}  // namespace kiln
