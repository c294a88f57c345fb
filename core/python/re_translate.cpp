#include "core/python/re_translate.h"

#include <unicode/uchar.h>

#include <vector>

#include "core/util/utf8.h"

namespace kiln::py::re {
namespace {

// RE2's largest repetition count; Python allows more.
constexpr uint64_t kMaxRepeat = 1000;

constexpr const char* kAsciiSpace = "\\t\\n\\x{b}\\x{c}\\r ";
constexpr const char* kAsciiWord = "0-9A-Za-z_";

struct Stop {};

bool is_python_space(char32_t c) {
  return (c >= 9 && c <= 13) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

// Python's Unicode \w is exactly the letters, the numbers and '_' (checked
// over every code point against CPython 3.11).
bool is_python_word(char32_t c) {
  if (c == '_') return true;
  const int8_t type = u_charType(UChar32(c));
  return (type >= U_UPPERCASE_LETTER && type <= U_OTHER_LETTER) || (type >= U_DECIMAL_DIGIT_NUMBER && type <= U_OTHER_NUMBER);
}

// The code points where `member` is true, as RE2 class items. Written out so
// that a complement (\W, \S) can sit inside a class beside other items,
// which RE2's syntax cannot say otherwise; both sides of a pair come from the
// same tables so that they partition the code points.
std::string class_items(bool (*member)(char32_t), bool want);

const std::string& unicode_word_items(bool negated) {
  static const std::string word = class_items(is_python_word, true), non_word = class_items(is_python_word, false);
  return negated ? non_word : word;
}

const std::string& unicode_space_items(bool negated) {
  static const std::string space = class_items(is_python_space, true), non_space = class_items(is_python_space, false);
  return negated ? non_space : space;
}


bool is_octal(char32_t c) { return c >= '0' && c <= '7'; }
bool is_digit(char32_t c) { return c >= '0' && c <= '9'; }
bool is_hex(char32_t c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_ascii_letter(char32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

std::string hex_escape(char32_t c) {
  static const char* digits = "0123456789abcdef";
  std::string h;
  for (uint32_t v = uint32_t(c); v || h.empty(); v >>= 4) h.insert(h.begin(), digits[v & 15]);
  return "\\x{" + h + "}";
}

std::string class_items(bool (*member)(char32_t), bool want) {
  std::string items;
  auto add = [&](char32_t lo, char32_t hi) { items += hi == lo ? hex_escape(lo) : hex_escape(lo) + "-" + hex_escape(hi); };
  char32_t run_start = 0;
  bool in_run = false;
  for (char32_t c = 0; c <= 0x110000; ++c) {
    const bool inside = c < 0x110000 && !(c >= 0xD800 && c <= 0xDFFF) && member(c) == want;
    if (inside && !in_run) run_start = c, in_run = true;
    if (!inside && in_run) add(run_start, c - 1), in_run = false;
  }
  return items;
}

// A code point as RE2 reads it literally, in or out of a class.
std::string literal(char32_t c) {
  if (c < 0x20 || c == 0x7f) return hex_escape(c);
  if (c < 0x80) {
    const char ch = char(c);
    if (std::string_view("\\.+*?()|[]{}^$-&~#:").find(ch) != std::string_view::npos) return std::string("\\") + ch;
    return std::string(1, ch);
  }
  if (c >= 0xD800 && c <= 0xDFFF) return hex_escape(c);  // RE2 refuses these; reported at compile
  std::string s;
  append_utf8(s, c);
  return s;
}

class Translator {
 public:
  Translator(std::string_view pattern, int64_t flags) {
    for (size_t i = 0; i < pattern.size(); i += utf8_char_length(pattern, i)) p_.push_back(utf8_decode_at(pattern, i));
    t_.flags = flags;
  }

  Translation run() {
    try {
      if ((t_.flags & kLocale)) error("cannot use LOCALE flag with a str pattern", 0);
      body(0);
      if (i_ < p_.size()) error("unbalanced parenthesis", i_);
    } catch (const Stop&) {
      return t_;
    }
    std::string prefix;
    if (t_.flags & kIgnoreCase) prefix += "i";
    if (t_.flags & kDotAll) prefix += "s";
    t_.re2 = (prefix.empty() ? "" : "(?" + prefix + ")") + out_;
    if ((t_.flags & kIgnoreCase) && (t_.flags & kAscii)) t_.ascii_ignore_case = true;
    if (!(t_.flags & kAscii)) t_.flags |= kUnicode;
    return t_;
  }

 private:
  std::u32string p_;
  size_t i_ = 0;
  Translation t_;
  std::string out_;
  bool emitted_ = false;  // anything but global flags so far (Python wants those first)
  bool ascii_ = false, multiline_ = false, verbose_ = false;  // the flags in force here

  [[noreturn]] void error(const std::string& msg, size_t pos) {
    t_.error = msg;
    t_.error_pos = pos;
    throw Stop{};
  }
  [[noreturn]] void refuse(const std::string& what) {
    t_.unsupported = what;
    throw Stop{};
  }

  bool at_end() const { return i_ >= p_.size(); }
  char32_t peek(size_t ahead = 0) const { return i_ + ahead < p_.size() ? p_[i_ + ahead] : 0; }

  void sync_flags() {
    ascii_ = t_.flags & kAscii;
    multiline_ = t_.flags & kMultiline;
    verbose_ = t_.flags & kVerbose;
  }

  // Verbose mode: whitespace and #-comments outside classes are not pattern.
  void skip_verbose() {
    while (verbose_ && !at_end()) {
      const char32_t c = peek();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
        ++i_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n') ++i_;
      } else {
        break;
      }
    }
  }

  // What a parsed piece of pattern can do, for the checks on quantifiers.
  struct Shape {
    bool repeatable = false;  // can take a quantifier
    bool nullable = true;  // can match the empty text
    bool captures = false;  // holds a capturing group
  };

  // A sequence of alternatives up to the matching ')' (depth > 0) or the end.
  Shape body(int depth) {
    sync_flags();
    Shape whole{false, false, false};
    bool sequence_nullable = true;  // every item of this alternative so far
    bool before_last_nullable = true;  // ... before the last item
    Shape last;
    bool quantified = false;  // the last item already has a quantifier
    auto end_alternative = [&] { whole.nullable |= sequence_nullable; };
    while (true) {
      skip_verbose();
      if (at_end()) {
        end_alternative();
        return whole;
      }
      const size_t start = i_;
      const char32_t c = p_[i_++];
      if (c == ')') {
        if (depth == 0) error("unbalanced parenthesis", start);
        --i_;
        end_alternative();
        return whole;
      }
      if (c == '*' || c == '+' || c == '?' || (c == '{' && quantifier_ahead())) {
        if (quantified) error("multiple repeat", start);
        if (!last.repeatable) error("nothing to repeat", start);
        const auto [min, max] = quantifier(c, start);
        // RE2 ends a repetition before an iteration that matches empty; a
        // backtracking engine may take one, and then the groups inside hold
        // the empty text. Only the groups' text can differ: refused.
        if (max > 1 && last.nullable && last.captures)
          refuse("a repeated group that can match the empty text and holds a capturing group (which text the "
                 "group keeps then differs between RE2 and Python's engine)");
        if (min == 0) last.nullable = true;
        sequence_nullable = before_last_nullable && last.nullable;
        quantified = true;
        continue;
      }
      quantified = false;
      if (c != '(') emitted_ = true;  // a group decides: global flags are not an item
      Shape item{true, false, false};
      switch (c) {
        case '|':
          out_ += '|';
          end_alternative();
          sequence_nullable = true;
          item = Shape{false, true, false};
          break;
        case '.': out_ += '.'; break;
        case '^': out_ += multiline_ ? "(?m:^)" : "\\A"; item = Shape{false, true, false}; break;
        case '$':
          if (multiline_) {
            out_ += "(?m:$)";
          } else {
            out_ += "\\z";
            t_.end_dollar = true;
          }
          item = Shape{false, true, false};
          break;
        case '[': char_class(start); break;
        case '(': item = group(start, depth); break;
        case '\\':
          item.repeatable = escape(start);
          item.nullable = !item.repeatable;  // anchors (\b, \A, ...) match empty and take no quantifier
          break;
        default: out_ += literal(c); break;
      }
      before_last_nullable = sequence_nullable;
      sequence_nullable = sequence_nullable && item.nullable;
      whole.captures |= item.captures;
      last = item;
    }
  }

  // At a '{' just read: does a Python quantifier follow ({m}, {m,}, {,n}, {m,n})?
  bool quantifier_ahead() const {
    size_t j = i_;
    bool digits = false;
    while (j < p_.size() && is_digit(p_[j])) ++j, digits = true;
    if (j < p_.size() && p_[j] == ',') {
      ++j;
      while (j < p_.size() && is_digit(p_[j])) ++j;
    } else if (!digits) {
      return false;
    }
    return j < p_.size() && p_[j] == '}';
  }

  uint64_t number() {
    uint64_t v = 0;
    while (!at_end() && is_digit(peek())) {
      v = v * 10 + uint64_t(p_[i_++] - '0');
      if (v > (uint64_t(1) << 32)) v = uint64_t(1) << 32;  // beyond any limit below
    }
    return v;
  }

  // Writes the quantifier starting with `c`; returns its (min, max) counts,
  // max UINT64_MAX when unbounded.
  std::pair<uint64_t, uint64_t> quantifier(char32_t c, size_t start) {
    uint64_t min = c == '+' ? 1 : 0, max = c == '?' ? 1 : UINT64_MAX;
    if (c == '{') {
      const bool has_min = is_digit(peek());
      const uint64_t lo = has_min ? number() : 0;
      uint64_t hi = lo;
      bool unbounded = false;
      if (peek() == ',') {
        ++i_;
        if (is_digit(peek())) {
          hi = number();
        } else {
          unbounded = true;
        }
      }
      ++i_;  // '}'
      if (!unbounded && hi < lo) error("min repeat greater than max repeat", start + 1);
      if (lo > kMaxRepeat || (!unbounded && hi > kMaxRepeat))
        refuse("a repetition count above " + std::to_string(kMaxRepeat) + " (Kiln's regular-expression engine, RE2, stops there)");
      out_ += "{" + std::to_string(lo) + "," + (unbounded ? "" : std::to_string(hi)) + "}";
      min = lo;
      max = unbounded ? UINT64_MAX : hi;
    } else {
      out_ += char(c);
    }
    if (peek() == '?') {
      ++i_;
      out_ += '?';
    } else if (peek() == '+') {
      refuse("possessive quantifiers (RE2 has none)");
    }
    return {min, max};
  }

  // After '(' at `start`.
  Shape group(size_t start, int depth) {
    const bool saved_ascii = ascii_, saved_multiline = multiline_, saved_verbose = verbose_;
    const int64_t saved_flags = t_.flags;
    std::string open = "(";
    if (peek() == '?') {
      ++i_;
      const char32_t k = peek();
      if (k == ':') {
        ++i_;
        open = "(?:";
      } else if (k == 'P') {
        ++i_;
        if (peek() == '<') {
          ++i_;
          open = "(?P<" + group_name(start) + ">";
        } else if (peek() == '=') {
          refuse("backreferences ((?P=name)); RE2 matches without them");
        } else {
          if (at_end()) error("unexpected end of pattern", i_);
          error(std::string("unknown extension ?P") + char(peek() < 0x80 ? char(peek()) : '?'), start + 1);
        }
      } else if (k == '#') {
        while (!at_end() && peek() != ')') ++i_;
        if (at_end()) error("missing ), unterminated comment", start);
        ++i_;
        return Shape{false, true, false};
      } else if (k == '=' || k == '!') {
        refuse("lookahead assertions ((?=...), (?!...)); RE2 matches without them");
      } else if (k == '<') {
        if (peek(1) == '=' || peek(1) == '!') refuse("lookbehind assertions ((?<=...), (?<!...)); RE2 matches without them");
        error(std::string("unknown extension ?<") + (peek(1) < 0x80 && peek(1) ? char(peek(1)) : '?'), start + 1);
      } else if (k == '>') {
        refuse("atomic groups ((?>...)); RE2 has none");
      } else if (k == '(') {
        refuse("conditional groups ((?(id)yes|no)); RE2 has none");
      } else if (k == 'a' || k == 'i' || k == 'L' || k == 'm' || k == 's' || k == 'u' || k == 'x' || k == '-') {
        if (!inline_flags(start, open)) return Shape{false, true, false};  // global flags: nothing to repeat
      } else {
        if (at_end()) error("unexpected end of pattern", i_);
        error(std::string("unknown extension ?") + (k < 0x80 ? char(k) : '?'), start + 1);
      }
    } else {
      ++t_.groups;
    }
    const bool capturing = open == "(" || open.starts_with("(?P<");
    emitted_ = true;
    out_ += open;
    Shape shape = body(depth + 1);
    if (at_end()) error("missing ), unterminated subpattern", start);
    ++i_;
    out_ += ')';
    ascii_ = saved_ascii, multiline_ = saved_multiline, verbose_ = saved_verbose;
    t_.flags = saved_flags;
    shape.repeatable = true;
    shape.captures |= capturing;
    return shape;
  }

  std::string group_name(size_t start) {
    std::u32string name;
    while (!at_end() && peek() != '>') name.push_back(p_[i_++]);
    if (at_end()) error("missing >, unterminated name", start + 4);
    ++i_;
    if (name.empty()) error("missing group name", start + 4);
    std::string utf8;
    for (char32_t c : name) append_utf8(utf8, c);
    bool ascii_identifier = !is_digit(name[0]);
    for (char32_t c : name) ascii_identifier &= c < 0x80 && (is_ascii_letter(c) || is_digit(c) || c == '_');
    if (!ascii_identifier) {
      bool any_non_ascii = false;
      for (char32_t c : name) any_non_ascii |= c >= 0x80;
      if (any_non_ascii) refuse("non-ASCII group names (RE2 names groups in ASCII)");
      error("bad character in group name '" + utf8 + "'", start + 4);
    }
    ++t_.groups;
    if (auto [it, fresh] = t_.group_index.emplace(utf8, t_.groups); !fresh)
      error("redefinition of group name '" + utf8 + "' as group " + std::to_string(t_.groups) + "; was group " +
                std::to_string(it->second),
            start + 4);
    return utf8;
  }

  // After "(?" at a flag letter. Global flags change the whole pattern and
  // return false; scoped ones set `open` and return true.
  bool inline_flags(size_t start, std::string& open) {
    int64_t on = 0, off = 0;
    auto flag_of = [&](char32_t c) -> int64_t {
      switch (c) {
        case 'a': return kAscii;
        case 'i': return kIgnoreCase;
        case 'L': return kLocale;
        case 'm': return kMultiline;
        case 's': return kDotAll;
        case 'u': return kUnicode;
        case 'x': return kVerbose;
        default: return 0;
      }
    };
    while (int64_t f = flag_of(peek())) on |= f, ++i_;
    if (peek() == '-') {
      ++i_;
      if (!flag_of(peek())) error("missing flag", i_);
      while (int64_t f = flag_of(peek())) {
        if (f == kAscii || f == kUnicode || f == kLocale) error("bad inline flags: cannot turn off flags 'a', 'u' and 'L'", i_);
        off |= f, ++i_;
      }
      if (peek() != ':') error("missing :", i_);
    }
    if (on & kLocale) error("bad inline flags: cannot use 'L' flag with a str pattern", i_);
    if ((on & kAscii) && (on & kUnicode)) error("bad inline flags: flags 'a', 'u' and 'L' are incompatible", i_);
    if (peek() == ')') {
      ++i_;
      if (emitted_) error("global flags not at the start of the expression", start);
      t_.flags |= on;
      sync_flags();
      return false;
    }
    if (peek() != ':') error(at_end() ? "missing -, : or )" : "unknown flag", i_);
    ++i_;
    t_.flags = (t_.flags | on) & ~off;
    if ((on & kAscii)) t_.flags &= ~kUnicode;
    if ((on & kUnicode)) t_.flags &= ~kAscii;
    sync_flags();
    if ((t_.flags & kIgnoreCase) && ascii_) t_.ascii_ignore_case = true;
    std::string re2_on, re2_off;
    if (on & kIgnoreCase) re2_on += 'i';
    if (on & kDotAll) re2_on += 's';
    if (off & kIgnoreCase) re2_off += 'i';
    if (off & kDotAll) re2_off += 's';
    open = "(?" + re2_on + (re2_off.empty() ? "" : "-" + re2_off) + ":";
    return true;
  }

  // The class items of \d \s \w under the flags in force.
  std::string digit_items() const { return ascii_ ? "0-9" : "\\p{Nd}"; }
  std::string space_items(bool negated = false) const {
    return ascii_ ? (negated ? "[:^space:]" : kAsciiSpace) : unicode_space_items(negated);
  }
  std::string word_items(bool negated = false) const {
    return ascii_ ? (negated ? "[:^word:]" : kAsciiWord) : unicode_word_items(negated);
  }

  // Escapes that mean the same in and out of classes. Returns false if `c` is not one.
  bool char_escape(char32_t c, size_t start, char32_t& out) {
    switch (c) {
      case 'a': out = 7; return true;
      case 'f': out = 12; return true;
      case 'n': out = 10; return true;
      case 'r': out = 13; return true;
      case 't': out = 9; return true;
      case 'v': out = 11; return true;
      case 'x': out = hex_digits(2, start, "\\x"); return true;
      case 'u': out = hex_digits(4, start, "\\u"); return true;
      case 'U': {
        out = hex_digits(8, start, "\\U");
        if (out > 0x10FFFF) {
          std::string text = "\\U";
          for (size_t j = start + 2; j < i_; ++j) text += char(p_[j]);
          error("bad escape " + text, start);
        }
        return true;
      }
      case 'N': refuse("\\N{name} escapes in patterns");
      default: return false;
    }
  }

  char32_t hex_digits(size_t n, size_t start, const char* what) {
    char32_t v = 0;
    for (size_t k = 0; k < n; ++k) {
      if (!is_hex(peek())) {
        std::string seen = what;
        for (size_t j = start + 2; j < i_; ++j) seen += char(p_[j]);
        error("incomplete escape " + seen, start);
      }
      const char32_t d = p_[i_++];
      v = v * 16 + (is_digit(d) ? d - '0' : (d | 0x20) - 'a' + 10);
    }
    return v;
  }

  std::string bad_escape_text(char32_t c) const {
    std::string s = "\\";
    append_utf8(s, c);
    return s;
  }

  // After '\\' outside a class. Returns whether the item can take a quantifier.
  bool escape(size_t start) {
    if (at_end()) error("bad escape (end of pattern)", start);
    const char32_t c = p_[i_++];
    char32_t ch = 0;
    switch (c) {
      case 'A': out_ += "\\A"; return false;
      case 'Z': out_ += "\\z"; return false;
      case 'b':
      case 'B':
        out_ += c == 'b' ? "\\b" : "\\B";
        if (!ascii_) t_.unicode_word_boundary = true;
        return false;
      case 'd': out_ += ascii_ ? "[0-9]" : "\\p{Nd}"; return true;
      case 'D': out_ += ascii_ ? "[^0-9]" : "\\P{Nd}"; return true;
      case 's': out_ += "[" + space_items() + "]"; return true;
      case 'S': out_ += "[" + space_items(true) + "]"; return true;
      case 'w': out_ += "[" + word_items() + "]"; return true;
      case 'W': out_ += "[" + word_items(true) + "]"; return true;
      default: break;
    }
    if (c == '0') {
      ch = 0;
      for (int k = 0; k < 2 && is_octal(peek()); ++k) ch = ch * 8 + (p_[i_++] - '0');
      out_ += literal(ch);
      return true;
    }
    if (is_digit(c)) {
      if (is_octal(c) && is_octal(peek()) && is_octal(peek(1))) {
        ch = (c - '0') * 64 + (p_[i_] - '0') * 8 + (p_[i_ + 1] - '0');
        i_ += 2;
        if (ch > 0377) error("octal escape value \\" + std::string(1, char(c)) + char(p_[i_ - 2]) + char(p_[i_ - 1]) + " outside of range 0-0o377", start);
        out_ += literal(ch);
        return true;
      }
      refuse("backreferences (\\" + std::string(1, char(c)) + "); RE2 matches without them");
    }
    if (char_escape(c, start, ch)) {
      out_ += literal(ch);
      return true;
    }
    if (c < 0x80 && (is_ascii_letter(c) || is_digit(c))) error("bad escape " + bad_escape_text(c), start);
    out_ += literal(c);
    return true;
  }

  // After '[' at `start`: one class, written out item by item.
  void char_class(size_t start) {
    std::string items;
    bool negate = false;
    if (peek() == '^') ++i_, negate = true;
    bool first = true;
    while (true) {
      if (at_end()) error("unterminated character set", start);
      const size_t item_start = i_;
      char32_t c = p_[i_++];
      if (c == ']' && !first) break;
      first = false;
      std::string spliced;  // a shorthand's items, which cannot start a range
      char32_t lo = c;
      if (c == '\\') {
        if (!class_escape(item_start, lo, spliced)) {
          items += spliced;
          continue;
        }
      }
      if (peek() == '-' && peek(1) != ']' && i_ + 1 < p_.size()) {
        ++i_;
        const size_t hi_start = i_;
        char32_t hi = p_[i_++];
        if (hi == '\\') {
          std::string hi_spliced;
          if (!class_escape(hi_start, hi, hi_spliced)) {
            std::string text;
            for (size_t j = item_start; j < i_; ++j) append_utf8(text, p_[j]);
            error("bad character range " + text, item_start);
          }
        }
        if (hi < lo) {
          std::string text;
          for (size_t j = item_start; j < i_; ++j) append_utf8(text, p_[j]);
          error("bad character range " + text, item_start);
        }
        items += literal(lo) + "-" + literal(hi);
      } else {
        items += literal(lo);
      }
    }
    out_ += std::string(negate ? "[^" : "[") + items + "]";
  }

  // After '\\' inside a class: a character (returns true, in `ch`) or a
  // shorthand's items (returns false, in `spliced`).
  bool class_escape(size_t start, char32_t& ch, std::string& spliced) {
    if (at_end()) error("unterminated character set", start);
    const char32_t c = p_[i_++];
    switch (c) {
      case 'd': spliced = digit_items(); return false;
      case 'D': spliced = ascii_ ? "[:^digit:]" : "\\P{Nd}"; return false;
      case 's': spliced = space_items(); return false;
      case 'w': spliced = word_items(); return false;
      case 'S': spliced = space_items(true); return false;
      case 'W': spliced = word_items(true); return false;
      case 'b': ch = 8; return true;
      default: break;
    }
    if (is_octal(c)) {
      ch = c - '0';
      for (int k = 0; k < 2 && is_octal(peek()); ++k) ch = ch * 8 + (p_[i_++] - '0');
      if (ch > 0377) error("octal escape value outside of range 0-0o377", start);
      return true;
    }
    if (char_escape(c, start, ch)) return true;
    if (c < 0x80 && (is_ascii_letter(c) || is_digit(c))) error("bad escape " + bad_escape_text(c), start);
    ch = c;
    return true;
  }
};

}  // namespace

Translation translate(std::string_view pattern, int64_t flags) { return Translator(pattern, flags).run(); }

}  // namespace kiln::py::re
