#pragma once
// Python's str semantics for text outside ASCII, from the Unicode Character
// Database as ICU carries it: case mapping (str.upper, lower, casefold and
// the per-character title/swapcase rules), the classification predicates
// (isalpha, isdigit, isspace, ...), and what unicodedata offers (normalize,
// category, name, combining, ...). ASCII text never comes here: callers keep
// their byte loops for it.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::py::unicode {

// Full case mappings, as CPython's (ß upper is "SS").
std::string upper(std::string_view utf8);
std::string lower(std::string_view utf8);
std::string casefold(std::string_view utf8);
// One code point's full mappings (capitalize, title and swapcase go by them).
std::string upper_of(char32_t c);
std::string lower_of(char32_t c);
std::string title_of(char32_t c);

// CPython's predicates for one code point (Objects/unicodectype.c).
bool is_alpha(char32_t c);    // general category L*
bool is_decimal(char32_t c);  // Numeric_Type=Decimal
bool is_digit(char32_t c);    // Numeric_Type=Decimal or Digit
bool is_numeric(char32_t c);  // any Numeric_Type
bool is_space(char32_t c);    // bidi WS, B or S, or category Zs
bool is_upper(char32_t c);
bool is_lower(char32_t c);
bool is_cased(char32_t c);
bool is_title(char32_t c);    // category Lt
bool is_case_ignorable(char32_t c);
// The lowercase of the code point at byte `pos` of `utf8`, with the final
// sigma rule CPython applies there (Σ ending a word lowers to ς).
std::string lower_in_context(std::string_view utf8, size_t pos);
bool is_identifier_start(char32_t c);     // XID_Start
bool is_identifier_continue(char32_t c);  // XID_Continue

// unicodedata. normalize returns nullopt for an unknown form.
std::optional<std::string> normalize(std::string_view form, std::string_view utf8);
std::optional<bool> is_normalized(std::string_view form, std::string_view utf8);
std::string category(char32_t c);  // "Lu", "Mn", ...
std::optional<std::string> name(char32_t c);
std::optional<char32_t> lookup(std::string_view name);
int combining(char32_t c);
std::string east_asian_width(char32_t c);  // "W", "Na", ...
std::string bidirectional(char32_t c);     // "L", "AN", ...
bool mirrored(char32_t c);
std::optional<int> decimal(char32_t c);
std::optional<int> digit(char32_t c);
std::optional<double> numeric(char32_t c);
// The Unicode version of the database.
std::string unicode_version();

}  // namespace kiln::py::unicode
