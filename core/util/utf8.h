#pragma once
// UTF-8 encoding shared by the readers and formatters that turn code points
// back into text (Python and JSON string escapes, format fills).
#include <string>

namespace kiln {

// Appends `cp` as UTF-8. Surrogates (U+D800..U+DFFF) are encoded like any other
// code point, so a surrogateescape'd byte round-trips through Kiln's own text.
void append_utf8(std::string& out, char32_t cp);

}  // namespace kiln
