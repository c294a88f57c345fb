#pragma once
// Python's regular-expression syntax, rewritten for RE2 (core/python/stdlib_re.cpp).
//
// RE2 matches in linear time with a bounded stack, whatever the pattern and
// text, and for the patterns both accept it prefers the same match as
// Python's backtracking engine (leftmost, then first alternative, greedy or
// lazy as written). What differs is rewritten here: Python's Unicode \d \s \w
// become explicit classes, `^`/`$` become anchors that do not depend on RE2's
// flags, `{,n}` gets its zero, escapes RE2 spells differently are respelled,
// and the verbose flag's whitespace and comments are dropped.
//
// What RE2 cannot do exactly is refused (`unsupported`), never approximated:
// backreferences, lookaround, atomic groups and possessive quantifiers,
// conditionals, repetition counts above RE2's 1000. Two cases depend on the
// text and are checked per match: \b on non-ASCII text (RE2's word boundary is
// ASCII-only, Python's Unicode) and a non-multiline `$` on text ending in a
// newline (Python's `$` also matches before that newline).
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace kiln::py::re {

// Python's flag values (re.IGNORECASE, ...).
enum Flag : int64_t {
  kIgnoreCase = 2,
  kLocale = 4,
  kMultiline = 8,
  kDotAll = 16,
  kUnicode = 32,
  kVerbose = 64,
  kAscii = 256,
};

struct Translation {
  std::string re2;  // the pattern for RE2 (UTF-8)
  int64_t flags = 0;  // the call's flags with the pattern's global inline flags, as Pattern.flags shows them
  int groups = 0;  // capturing groups
  std::map<std::string, int> group_index;  // named groups

  // Python rejects the pattern: re.error(error, pattern, error_pos).
  std::string error;
  size_t error_pos = 0;
  // Python accepts the pattern but RE2 cannot match it exactly: refused.
  std::string unsupported;

  bool unicode_word_boundary = false;  // \b or \B under Unicode rules
  bool ascii_ignore_case = false;  // IGNORECASE|ASCII: RE2 would fold non-ASCII letters too
  bool end_dollar = false;  // a non-multiline `$`
};

// `pattern` is UTF-8; positions in errors count code points, as Python's do.
Translation translate(std::string_view pattern, int64_t flags);

}  // namespace kiln::py::re
