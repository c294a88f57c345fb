#include "core/python/unicode_text.h"

#include <unicode/ucasemap.h>
#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>
#include <unicode/uversion.h>

#include <cctype>
#include <memory>
#include <vector>

#include "core/util/status.h"
#include "core/util/utf8.h"

namespace kiln::py::unicode {
namespace {

using CaseMapFn = int32_t (*)(const UCaseMap*, char*, int32_t, const char*, int32_t, UErrorCode*);

struct CaseMapDeleter {
  void operator()(UCaseMap* m) const { ucasemap_close(m); }
};

// Root-locale mappings: CPython's are locale-independent. The title map
// titlecases the whole string as one word: it only ever sees one code point.
UCaseMap* case_map(bool title) {
  static const std::unique_ptr<UCaseMap, CaseMapDeleter> plain = [] {
    UErrorCode err = U_ZERO_ERROR;
    std::unique_ptr<UCaseMap, CaseMapDeleter> m(ucasemap_open("", 0, &err));
    KILN_CHECK(U_SUCCESS(err), "ICU case map: ", u_errorName(err));
    return m;
  }();
  static const std::unique_ptr<UCaseMap, CaseMapDeleter> whole = [] {
    UErrorCode err = U_ZERO_ERROR;
    std::unique_ptr<UCaseMap, CaseMapDeleter> m(
        ucasemap_open("", U_TITLECASE_WHOLE_STRING | U_TITLECASE_NO_LOWERCASE, &err));
    KILN_CHECK(U_SUCCESS(err), "ICU title case map: ", u_errorName(err));
    return m;
  }();
  return title ? whole.get() : plain.get();
}

std::string map_case(CaseMapFn fn, std::string_view in, bool title = false) {
  std::string out(in.size() * 3 + 8, '\0');
  UErrorCode err = U_ZERO_ERROR;
  int32_t n = fn(case_map(title), out.data(), int32_t(out.size()), in.data(), int32_t(in.size()), &err);
  if (err == U_BUFFER_OVERFLOW_ERROR) {
    out.assign(size_t(n), '\0');
    err = U_ZERO_ERROR;
    n = fn(case_map(title), out.data(), int32_t(out.size()), in.data(), int32_t(in.size()), &err);
  }
  // Text that is not UTF-8 (a surrogateescape'd byte) keeps its case.
  if (U_FAILURE(err)) return std::string(in);
  out.resize(size_t(n));
  return out;
}

int32_t fold_case(const UCaseMap* m, char* dest, int32_t cap, const char* src, int32_t len, UErrorCode* err) {
  return ucasemap_utf8FoldCase(m, dest, cap, src, len, err);
}
int32_t to_title(const UCaseMap* m, char* dest, int32_t cap, const char* src, int32_t len, UErrorCode* err) {
  return ucasemap_utf8ToTitle(const_cast<UCaseMap*>(m), dest, cap, src, len, err);
}

std::string encode(char32_t c) {
  std::string s;
  append_utf8(s, c);
  return s;
}

std::u16string to_utf16(std::string_view utf8) {
  std::u16string out(utf8.size() + 1, u'\0');
  int32_t n = 0;
  UErrorCode err = U_ZERO_ERROR;
  u_strFromUTF8WithSub(reinterpret_cast<UChar*>(out.data()), int32_t(out.size()), &n, utf8.data(), int32_t(utf8.size()),
                       0xFFFD, nullptr, &err);
  KILN_CHECK(U_SUCCESS(err), "UTF-8 to UTF-16: ", u_errorName(err));
  out.resize(size_t(n));
  return out;
}

std::string to_utf8(const std::u16string& utf16) {
  std::string out(utf16.size() * 3 + 1, '\0');
  int32_t n = 0;
  UErrorCode err = U_ZERO_ERROR;
  u_strToUTF8WithSub(out.data(), int32_t(out.size()), &n, reinterpret_cast<const UChar*>(utf16.data()),
                     int32_t(utf16.size()), 0xFFFD, nullptr, &err);
  KILN_CHECK(U_SUCCESS(err), "UTF-16 to UTF-8: ", u_errorName(err));
  out.resize(size_t(n));
  return out;
}

const UNormalizer2* normalizer(std::string_view form) {
  UErrorCode err = U_ZERO_ERROR;
  const UNormalizer2* n = form == "NFC"    ? unorm2_getNFCInstance(&err)
                          : form == "NFD"  ? unorm2_getNFDInstance(&err)
                          : form == "NFKC" ? unorm2_getNFKCInstance(&err)
                          : form == "NFKD" ? unorm2_getNFKDInstance(&err)
                                           : nullptr;
  return U_SUCCESS(err) ? n : nullptr;
}

std::string property_short_name(UProperty property, int32_t value) {
  const char* name = u_getPropertyValueName(property, value, U_SHORT_PROPERTY_NAME);
  return name ? name : "";
}

int32_t numeric_type(char32_t c) { return u_getIntPropertyValue(UChar32(c), UCHAR_NUMERIC_TYPE); }

}  // namespace

std::string upper(std::string_view utf8) { return map_case(ucasemap_utf8ToUpper, utf8); }
std::string lower(std::string_view utf8) { return map_case(ucasemap_utf8ToLower, utf8); }
std::string casefold(std::string_view utf8) { return map_case(fold_case, utf8); }
// ASCII code points skip ICU: str.title() over English text stays cheap.
std::string upper_of(char32_t c) { return c < 0x80 ? std::string(1, char(std::toupper(int(c)))) : upper(encode(c)); }
std::string lower_of(char32_t c) { return c < 0x80 ? std::string(1, char(std::tolower(int(c)))) : lower(encode(c)); }
std::string title_of(char32_t c) {
  return c < 0x80 ? std::string(1, char(std::toupper(int(c)))) : map_case(to_title, encode(c), /*title=*/true);
}

bool is_alpha(char32_t c) { return u_isalpha(UChar32(c)); }
bool is_decimal(char32_t c) { return numeric_type(c) == U_NT_DECIMAL; }
bool is_digit(char32_t c) { return numeric_type(c) == U_NT_DECIMAL || numeric_type(c) == U_NT_DIGIT; }
bool is_numeric(char32_t c) { return numeric_type(c) != U_NT_NONE; }
bool is_space(char32_t c) {
  const UCharDirection d = u_charDirection(UChar32(c));
  return d == U_WHITE_SPACE_NEUTRAL || d == U_BLOCK_SEPARATOR || d == U_SEGMENT_SEPARATOR ||
         u_charType(UChar32(c)) == U_SPACE_SEPARATOR;
}
bool is_upper(char32_t c) { return c < 0x80 ? std::isupper(int(c)) != 0 : u_isUUppercase(UChar32(c)); }
bool is_lower(char32_t c) { return c < 0x80 ? std::islower(int(c)) != 0 : u_isULowercase(UChar32(c)); }
bool is_cased(char32_t c) { return c < 0x80 ? std::isalpha(int(c)) != 0 : u_hasBinaryProperty(UChar32(c), UCHAR_CASED); }
bool is_case_ignorable(char32_t c) { return u_hasBinaryProperty(UChar32(c), UCHAR_CASE_IGNORABLE); }

std::string lower_in_context(std::string_view utf8, size_t pos) {
  const char32_t c = utf8_decode_at(utf8, pos);
  if (c != 0x3A3) return lower_of(c);
  // Objects/unicodeobject.c handle_capital_sigma: a cased letter before
  // (skipping case-ignorable ones) and none after.
  auto cased_before = [&] {
    for (size_t i = pos; i > 0;) {
      do --i;
      while (i > 0 && (static_cast<unsigned char>(utf8[i]) & 0xC0) == 0x80);
      const char32_t p = utf8_decode_at(utf8, i);
      if (!is_case_ignorable(p)) return is_cased(p);
    }
    return false;
  };
  auto cased_after = [&] {
    for (size_t i = pos + utf8_char_length(utf8, pos); i < utf8.size(); i += utf8_char_length(utf8, i)) {
      const char32_t n = utf8_decode_at(utf8, i);
      if (!is_case_ignorable(n)) return is_cased(n);
    }
    return false;
  };
  return cased_before() && !cased_after() ? "\u03c2" : "\u03c3";
}

bool is_title(char32_t c) { return u_charType(UChar32(c)) == U_TITLECASE_LETTER; }
bool is_identifier_start(char32_t c) { return u_hasBinaryProperty(UChar32(c), UCHAR_XID_START); }
bool is_identifier_continue(char32_t c) { return u_hasBinaryProperty(UChar32(c), UCHAR_XID_CONTINUE); }

std::optional<std::string> normalize(std::string_view form, std::string_view utf8) {
  const UNormalizer2* n = normalizer(form);
  if (!n) return std::nullopt;
  const std::u16string in = to_utf16(utf8);
  std::u16string out(in.size() * 4 + 8, u'\0');
  UErrorCode err = U_ZERO_ERROR;
  int32_t len = unorm2_normalize(n, reinterpret_cast<const UChar*>(in.data()), int32_t(in.size()),
                                 reinterpret_cast<UChar*>(out.data()), int32_t(out.size()), &err);
  if (err == U_BUFFER_OVERFLOW_ERROR) {
    out.assign(size_t(len), u'\0');
    err = U_ZERO_ERROR;
    len = unorm2_normalize(n, reinterpret_cast<const UChar*>(in.data()), int32_t(in.size()),
                           reinterpret_cast<UChar*>(out.data()), int32_t(out.size()), &err);
  }
  KILN_CHECK(U_SUCCESS(err), "ICU normalize: ", u_errorName(err));
  out.resize(size_t(len));
  return to_utf8(out);
}

std::optional<bool> is_normalized(std::string_view form, std::string_view utf8) {
  const UNormalizer2* n = normalizer(form);
  if (!n) return std::nullopt;
  const std::u16string in = to_utf16(utf8);
  UErrorCode err = U_ZERO_ERROR;
  const UBool yes = unorm2_isNormalized(n, reinterpret_cast<const UChar*>(in.data()), int32_t(in.size()), &err);
  KILN_CHECK(U_SUCCESS(err), "ICU isNormalized: ", u_errorName(err));
  return bool(yes);
}

std::string category(char32_t c) { return property_short_name(UCHAR_GENERAL_CATEGORY, u_charType(UChar32(c))); }

std::optional<std::string> name(char32_t c) {
  char buf[256];
  UErrorCode err = U_ZERO_ERROR;
  const int32_t n = u_charName(UChar32(c), U_UNICODE_CHAR_NAME, buf, int32_t(sizeof buf), &err);
  if (U_FAILURE(err) || n <= 0) return std::nullopt;
  return std::string(buf, size_t(n));
}

std::optional<char32_t> lookup(std::string_view text) {
  const std::string key(text);
  for (UCharNameChoice choice : {U_UNICODE_CHAR_NAME, U_CHAR_NAME_ALIAS}) {
    UErrorCode err = U_ZERO_ERROR;
    const UChar32 c = u_charFromName(choice, key.c_str(), &err);
    if (U_SUCCESS(err)) return char32_t(c);
  }
  return std::nullopt;
}

int combining(char32_t c) { return u_getCombiningClass(UChar32(c)); }

std::string east_asian_width(char32_t c) {
  return property_short_name(UCHAR_EAST_ASIAN_WIDTH, u_getIntPropertyValue(UChar32(c), UCHAR_EAST_ASIAN_WIDTH));
}

std::string bidirectional(char32_t c) {
  // CPython gives unassigned code points no class; ICU its default one.
  if (u_charType(UChar32(c)) == U_UNASSIGNED) return "";
  return property_short_name(UCHAR_BIDI_CLASS, u_charDirection(UChar32(c)));
}

bool mirrored(char32_t c) { return u_isMirrored(UChar32(c)); }

std::optional<int> decimal(char32_t c) {
  if (!is_decimal(c)) return std::nullopt;
  return int(u_getNumericValue(UChar32(c)));
}

std::optional<int> digit(char32_t c) {
  if (!is_digit(c)) return std::nullopt;
  return int(u_getNumericValue(UChar32(c)));
}

std::optional<double> numeric(char32_t c) {
  const double v = u_getNumericValue(UChar32(c));
  if (v == U_NO_NUMERIC_VALUE) return std::nullopt;
  return v;
}

std::string unicode_version() {
  UVersionInfo v;
  u_getUnicodeVersion(v);
  return std::to_string(v[0]) + "." + std::to_string(v[1]) + "." + std::to_string(v[2]);
}

}  // namespace kiln::py::unicode
