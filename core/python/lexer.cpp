#include "core/python/lexer.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/python/bigint.h"
#include "core/util/utf8.h"

namespace kiln::py {

namespace {

constexpr std::string_view kKeywords[] = {
    "False", "None",   "True",   "and",      "as",       "assert", "async", "await",
    "break", "class",  "continue", "def",    "del",      "elif",   "else",  "except",
    "finally", "for",  "from",   "global",   "if",       "import", "in",    "is",
    "lambda", "nonlocal", "not", "or",       "pass",     "raise",  "return", "try",
    "while", "with",   "yield"};

// Longest first, so "**=" wins over "**" and "*".
constexpr std::string_view kOps3[] = {"**=", "//=", ">>=", "<<=", "..."};
constexpr std::string_view kOps2[] = {"**", "//", "<<", ">>", "<=", ">=", "==", "!=", "+=", "-=", "*=",
                                      "/=", "%=", "&=", "|=", "^=", "@=", "->", ":="};
constexpr std::string_view kOps1 = "+-*/%@&|^~<>()[]{},:.;=";

bool is_ascii_name_start(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Reads the code point at s[i] (the source is valid UTF-8 by then).
uint32_t code_point_at(std::string_view s, size_t i, size_t* length) {
  auto b = [&](size_t k) { return uint32_t(uint8_t(s[i + k])); };
  uint32_t c = b(0);
  if (c < 0x80) { *length = 1; return c; }
  if ((c >> 5) == 0x6) { *length = 2; return ((c & 0x1F) << 6) | (b(1) & 0x3F); }
  if ((c >> 4) == 0xE) { *length = 3; return ((c & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F); }
  *length = 4;
  return ((c & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
}

// Without a Unicode database: letters of most scripts are allowed in names;
// spaces, punctuation, symbols and emoji blocks are not.
bool is_identifier_code_point(uint32_t cp) {
  if (cp < 0xC0) return cp == 0xAA || cp == 0xB5 || cp == 0xBA;
  if (cp == 0xD7 || cp == 0xF7) return false;
  if (cp >= 0x2000 && cp <= 0x206F) return false;   // general punctuation, zero-width spaces
  if (cp >= 0x20A0 && cp <= 0x20CF) return false;   // currency
  if (cp >= 0x2190 && cp <= 0x2BFF) return false;   // arrows, math operators, shapes, symbols
  if (cp >= 0x3000 && cp <= 0x303F) return false;   // CJK punctuation, ideographic space
  if (cp == 0xFEFF || (cp >= 0xFFF0 && cp <= 0xFFFF)) return false;
  if (cp >= 0x1F000 && cp <= 0x1FAFF) return false; // emoji
  return true;
}

std::string hex4(uint32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", cp);
  return buf;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Line endings become "\n" (CPython reads source in universal-newline mode).
std::string normalize_newlines(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r') {
      out += '\n';
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

bool is_python_keyword(std::string_view word) {
  for (std::string_view k : kKeywords)
    if (k == word) return true;
  return false;
}

Pos advance_pos(Pos p, std::string_view text) {
  for (char c : text) {
    if (c == '\n') {
      ++p.line;
      p.col = 1;
    } else if ((uint8_t(c) & 0xC0) != 0x80) {
      ++p.col;
    }
  }
  return p;
}

std::string describe(const Token& tok) {
  switch (tok.kind) {
    case TokKind::Name: return detail::concat("name '", tok.text, "'");
    case TokKind::Keyword: return detail::concat("keyword '", tok.text, "'");
    case TokKind::Int:
    case TokKind::Float: return detail::concat("number ", tok.text);
    case TokKind::String: return "string literal";
    case TokKind::Op: return detail::concat("'", tok.text, "'");
    case TokKind::Newline: return "end of line";
    case TokKind::Indent: return "indent";
    case TokKind::Dedent: return "dedent";
    case TokKind::End: return "end of file";
  }
  return "token";
}

Lexer::Lexer(std::string_view source, std::string filename, Pos start, bool expression_mode)
    : src_(normalize_newlines(source)),
      filename_(std::move(filename)),
      expression_mode_(expression_mode),
      line_(start.line),
      col_(start.col) {
  if (!expression_mode_ && src_.compare(0, 3, "\xEF\xBB\xBF") == 0) pos_ = 3;  // BOM
  check_utf8_and_nul();
}

void Lexer::fail(Pos where, const std::string& message) const {
  throw Error(message, SourceLocation{filename_, where.line, where.col});
}

void Lexer::check_utf8_and_nul() {
  for (size_t i = pos_; i < src_.size();) {
    uint8_t c = uint8_t(src_[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = n > 0 && i + n <= src_.size();
    for (size_t k = 1; ok && k < n; ++k) ok = (uint8_t(src_[i + k]) & 0xC0) == 0x80;
    if (ok && n > 1) {
      size_t len;
      uint32_t cp = code_point_at(src_, i, &len);
      uint32_t min = n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;
      ok = cp >= min && cp <= 0x10FFFF;
    }
    if (!ok || c == 0) {
      Pos where = advance_pos({line_, col_}, std::string_view(src_).substr(pos_, i - pos_));
      fail(where, !ok ? "SyntaxError: invalid UTF-8 byte in source" : "SyntaxError: source code cannot contain null bytes");
    }
    i += n;
  }
}

void Lexer::advance() {
  char c = src_[pos_++];
  if (c == '\n') {
    ++line_;
    col_ = 1;
  } else if ((uint8_t(c) & 0xC0) != 0x80) {
    ++col_;
  }
}

Token Lexer::make(TokKind kind, size_t start, Pos start_pos) {
  Token t;
  t.kind = kind;
  t.text = std::string_view(src_).substr(start, pos_ - start);
  t.pos = start_pos;
  t.end = here();
  return t;
}

Token Lexer::next() {
  for (;;) {
    if (finished_) return make(TokKind::End, pos_, here());
    if (pending_dedents_ > 0) {
      --pending_dedents_;
      return make(TokKind::Dedent, pos_, here());
    }
    if (at_line_start_ && !expression_mode_ && brackets_.empty()) {
      Token t;
      if (handle_line_start(t)) return t;
    }
    char c = peek();
    if (at_end()) {
      if (!brackets_.empty())
        fail(brackets_.back().pos, std::string("SyntaxError: '") + brackets_.back().open + "' was never closed");
      if (line_has_tokens_ && !expression_mode_) {
        line_has_tokens_ = false;
        return make(TokKind::Newline, pos_, here());
      }
      if (indents_.size() > 1) {
        pending_dedents_ = int(indents_.size()) - 1;
        indents_.erase(indents_.begin() + 1, indents_.end());
        continue;
      }
      finished_ = true;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\f') {
      advance();
      continue;
    }
    if (c == '#') {
      while (!at_end() && peek() != '\n') advance();
      continue;
    }
    if (c == '\\') {
      if (peek(1) == '\n') {
        advance();
        advance();
        if (at_end()) fail(here(), "SyntaxError: unexpected end of file after line continuation character");
        continue;
      }
      fail(here(), "SyntaxError: unexpected character after line continuation character");
    }
    if (c == '\n') {
      if (!brackets_.empty() || expression_mode_) {
        advance();
        continue;
      }
      size_t start = pos_;
      Pos p = here();
      advance();
      Token t = make(TokKind::Newline, start, p);
      at_line_start_ = true;
      line_has_tokens_ = false;
      return t;
    }
    line_has_tokens_ = true;
    if (is_digit(c) || (c == '.' && is_digit(peek(1)))) return lex_number();
    if (is_ascii_name_start(c) || uint8_t(c) >= 0x80) return lex_name_or_string();
    if (c == '\'' || c == '"') return lex_string(pos_, here(), "");
    return lex_op();
  }
}

// Measures the indentation of a new line and turns it into Indent / Dedent.
// Blank and comment-only lines are skipped whole. Returns true with a token.
bool Lexer::handle_line_start(Token& out) {
  for (;;) {
    int tabs8 = 0, tabs1 = 0;
    while (!at_end()) {
      char c = peek();
      if (c == ' ') {
        ++tabs8;
        ++tabs1;
      } else if (c == '\t') {
        tabs8 = (tabs8 / 8 + 1) * 8;
        ++tabs1;
      } else if (c == '\f') {
        tabs8 = tabs1 = 0;
      } else {
        break;
      }
      advance();
    }
    char c = peek();
    if (at_end()) return false;
    if (c == '#' || c == '\n') {
      while (!at_end() && peek() != '\n') advance();
      if (!at_end()) advance();
      continue;
    }
    at_line_start_ = false;
    const IndentLevel& top = indents_.back();
    auto inconsistent = [&] { fail(here(), "SyntaxError: inconsistent use of tabs and spaces in indentation"); };
    if (tabs8 == top.tabs8) {
      if (tabs1 != top.tabs1) inconsistent();
      return false;
    }
    if (tabs8 > top.tabs8) {
      if (tabs1 <= top.tabs1) inconsistent();
      indents_.push_back({tabs8, tabs1});
      out = make(TokKind::Indent, pos_, here());
      return true;
    }
    int dedents = 0;
    while (tabs8 < indents_.back().tabs8) {
      indents_.pop_back();
      ++dedents;
    }
    if (tabs8 != indents_.back().tabs8)
      fail(here(), "SyntaxError: unindent does not match any outer indentation level");
    if (tabs1 != indents_.back().tabs1) inconsistent();
    pending_dedents_ = dedents - 1;
    out = make(TokKind::Dedent, pos_, here());
    return true;
  }
}

Token Lexer::lex_name_or_string() {
  size_t start = pos_;
  Pos start_pos = here();
  while (!at_end()) {
    char c = peek();
    if (is_ascii_name_start(c) || is_digit(c)) {
      advance();
      continue;
    }
    if (uint8_t(c) < 0x80) break;
    size_t len;
    uint32_t cp = code_point_at(src_, pos_, &len);
    if (!is_identifier_code_point(cp)) {
      if (pos_ > start) break;  // the name ends here; the character is reported when lexed alone
      std::string ch = src_.substr(pos_, len);
      if (cp == 0xA0 || cp == 0xFEFF || (cp >= 0x2000 && cp <= 0x200F) || cp == 0x3000)
        fail(here(), "SyntaxError: invalid non-printable character " + hex4(cp));
      fail(here(), "SyntaxError: invalid character '" + ch + "' (" + hex4(cp) + ")");
    }
    for (size_t k = 0; k < len; ++k) advance();
  }
  std::string_view word = std::string_view(src_).substr(start, pos_ - start);
  if ((peek() == '\'' || peek() == '"') && word.size() <= 2) {
    std::string lower;
    for (char c : word) lower += char(c | 0x20);
    if (lower == "r" || lower == "u" || lower == "f" || lower == "b" || lower == "rb" || lower == "br" ||
        lower == "fr" || lower == "rf")
      return lex_string(start, start_pos, word);
  }
  return make(is_python_keyword(word) ? TokKind::Keyword : TokKind::Name, start, start_pos);
}

Token Lexer::lex_string(size_t start, Pos start_pos, std::string_view prefix) {
  bool raw = false, fstring = false;
  for (char c : prefix) {
    c = char(c | 0x20);
    raw |= c == 'r';
    fstring |= c == 'f';
    if (c == 'b') fail(start_pos, "unsupported construct: bytes literal (the subset has no bytes type)");
  }
  char quote = peek();
  bool triple = peek(1) == quote && peek(2) == quote;
  for (int i = 0; i < (triple ? 3 : 1); ++i) advance();
  size_t body_start = pos_;
  Pos body_pos = here();
  auto unterminated = [&] {
    fail(start_pos, std::string("SyntaxError: unterminated ") + (triple ? "triple-quoted " : "") +
                        "string literal (detected at line " + std::to_string(line_) + ")");
  };
  for (;;) {
    if (at_end()) unterminated();
    char c = peek();
    if (c == '\\') {
      advance();
      if (!at_end()) advance();
      continue;
    }
    if (c == '\n' && !triple) unterminated();
    if (c == quote && (!triple || (peek(1) == quote && peek(2) == quote))) break;
    advance();
  }
  size_t body_end = pos_;
  for (int i = 0; i < (triple ? 3 : 1); ++i) advance();
  Token t = make(TokKind::String, start, start_pos);
  t.body = std::string_view(src_).substr(body_start, body_end - body_start);
  t.body_pos = body_pos;
  t.is_raw = raw;
  t.is_fstring = fstring;
  if (!fstring) t.value = decode_string_body(t.body, raw, body_pos, *this);
  return t;
}

Token Lexer::lex_number() {
  size_t start = pos_;
  Pos start_pos = here();
  auto bad = [&](const char* kind) { fail(here(), std::string("SyntaxError: invalid ") + kind + " literal"); };
  // digit ('_'? digit)*; returns whether any digit was read.
  auto digits = [&](int radix, const char* kind) {
    bool any = false;
    for (;;) {
      char c = peek();
      int d = hex_digit(c);
      if (d >= 0 && d < radix && (radix == 16 || is_digit(c))) {
        advance();
        any = true;
      } else if (c == '_' && (any || radix != 10)) {
        advance();
        int n = hex_digit(peek());
        if (n < 0 || n >= radix || (radix != 16 && !is_digit(peek()))) bad(kind);
      } else {
        return any;
      }
    }
  };
  // A number glued to a name ("1abc") is an error, but "1if x else y" is Python.
  auto check_end = [&](const char* kind) {
    char c = peek();
    if (!(is_ascii_name_start(c) || is_digit(c) || uint8_t(c) >= 0x80)) return;
    size_t e = pos_;
    while (e < src_.size() && (is_ascii_name_start(src_[e]) || is_digit(src_[e]))) ++e;
    std::string_view word = std::string_view(src_).substr(pos_, e - pos_);
    for (std::string_view k : {"and", "or", "in", "is", "not", "if", "else", "for"})
      if (word == k) return;
    bad(kind);
  };
  auto text_without_underscores = [&] {
    std::string s;
    for (size_t i = start; i < pos_; ++i)
      if (src_[i] != '_') s += src_[i];
    return s;
  };
  // Past int64 the literal stays text; the VM makes it a big int once per
  // code object. Limits as int() has them, but found before the program runs.
  auto big_int = [&](int radix, size_t digit_count) {
    if (radix == 10 && digit_count > kIntMaxStrDigits)
      fail(start_pos, "SyntaxError: Exceeds the limit (" + std::to_string(kIntMaxStrDigits) +
                          " digits) for integer string conversion: value has " + std::to_string(digit_count) +
                          " digits; use sys.set_int_max_str_digits() to increase the limit - Consider hexadecimal "
                          "for huge integer literals to avoid decimal conversion limits.");
    if (double(digit_count) * std::log2(double(radix)) > double(kMaxBigIntBits))  // as int() counts them
      fail(start_pos, "unsupported construct: integer literal of " + std::to_string(digit_count) +
                          " digits (Kiln's ints have at most 2**20 bits)");
    Token t = make(TokKind::Int, start, start_pos);
    t.big_int_text = text_without_underscores();
    return t;
  };

  char c0 = peek(), c1 = char(peek(1) | 0x20);
  if (c0 == '0' && (c1 == 'x' || c1 == 'o' || c1 == 'b')) {
    int radix = c1 == 'x' ? 16 : c1 == 'o' ? 8 : 2;
    const char* kind = radix == 16 ? "hexadecimal" : radix == 8 ? "octal" : "binary";
    advance();
    advance();
    size_t digits_start = pos_;
    if (!digits(radix, kind)) bad(kind);
    check_end(kind);
    uint64_t v = 0;
    size_t digit_count = 0;
    bool overflow = false;
    for (size_t i = digits_start; i < pos_; ++i) {
      if (src_[i] == '_') continue;
      uint64_t d = uint64_t(hex_digit(src_[i]));
      ++digit_count;
      if (v > (uint64_t(std::numeric_limits<int64_t>::max()) - d) / uint64_t(radix)) overflow = true;
      v = v * uint64_t(radix) + d;
    }
    if (overflow) return big_int(radix, digit_count);
    Token t = make(TokKind::Int, start, start_pos);
    t.int_value = int64_t(v);
    return t;
  }

  bool is_float = false;
  bool int_digits = digits(10, "decimal");
  if (peek() == '.') {
    is_float = true;
    advance();
    if (is_digit(peek())) digits(10, "decimal");
  }
  char e = peek();
  if ((e == 'e' || e == 'E') &&
      (is_digit(peek(1)) || ((peek(1) == '+' || peek(1) == '-') && is_digit(peek(2))))) {
    is_float = true;
    advance();
    if (peek() == '+' || peek() == '-') advance();
    digits(10, "decimal");
  }
  if (peek() == 'j' || peek() == 'J')
    fail(start_pos, "unsupported construct: complex number literal (the subset has no complex numbers)");
  check_end("decimal");
  std::string text = text_without_underscores();
  if (!is_float) {
    (void)int_digits;
    if (text.size() > 1 && text[0] == '0' && text.find_first_not_of('0') != std::string::npos)
      fail(start_pos,
           "SyntaxError: leading zeros in decimal integer literals are not permitted; use an 0o prefix for "
           "octal integers");
    uint64_t v = 0;
    for (char c : text) {
      uint64_t d = uint64_t(c - '0');
      if (v > (uint64_t(std::numeric_limits<int64_t>::max()) - d) / 10) return big_int(10, text.size());
      v = v * 10 + d;
    }
    Token t = make(TokKind::Int, start, start_pos);
    t.int_value = int64_t(v);
    return t;
  }
  double v = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec == std::errc::result_out_of_range) {
    // from_chars leaves v alone on overflow and underflow; Python gives inf and 0.
    size_t epos = text.find_first_of("eE");
    bool negative_exponent = epos != std::string::npos && text[epos + 1] == '-';
    v = negative_exponent ? 0.0 : std::numeric_limits<double>::infinity();
  }
  Token t = make(TokKind::Float, start, start_pos);
  t.float_value = v;
  return t;
}

Token Lexer::lex_op() {
  size_t start = pos_;
  Pos start_pos = here();
  std::string_view rest = std::string_view(src_).substr(pos_);
  size_t len = 0;
  for (std::string_view op : kOps3)
    if (rest.substr(0, 3) == op) len = 3;
  if (!len)
    for (std::string_view op : kOps2)
      if (rest.substr(0, 2) == op) len = 2;
  if (!len && kOps1.find(rest[0]) != std::string_view::npos) len = 1;
  if (!len) {
    size_t n;
    uint32_t cp = code_point_at(src_, pos_, &n);
    if (cp < 0x20 || cp == 0x7F) fail(start_pos, "SyntaxError: invalid non-printable character " + hex4(cp));
    fail(start_pos, "SyntaxError: invalid character '" + src_.substr(pos_, n) + "' (" + hex4(cp) + ")");
  }
  for (size_t i = 0; i < len; ++i) advance();
  char c = rest[0];
  if (len == 1 && (c == '(' || c == '[' || c == '{')) {
    brackets_.push_back({c, start_pos});
  } else if (len == 1 && (c == ')' || c == ']' || c == '}')) {
    if (brackets_.empty()) fail(start_pos, std::string("SyntaxError: unmatched '") + c + "'");
    char open = brackets_.back().open;
    char want = open == '(' ? ')' : open == '[' ? ']' : '}';
    if (c != want)
      fail(start_pos, std::string("SyntaxError: closing parenthesis '") + c +
                          "' does not match opening parenthesis '" + open + "'" +
                          (brackets_.back().pos.line != start_pos.line
                               ? " on line " + std::to_string(brackets_.back().pos.line)
                               : std::string()));
    brackets_.pop_back();
  }
  return make(TokKind::Op, start, start_pos);
}

std::string decode_string_body(std::string_view body, bool raw, Pos where, const Lexer& lexer) {
  if (raw) return std::string(body);
  std::string out;
  out.reserve(body.size());
  size_t i = 0, n = body.size();
  while (i < n) {
    char c = body[i];
    if (c != '\\' || i + 1 >= n) {
      out += c;
      ++i;
      continue;
    }
    size_t escape_start = i;
    auto fail_here = [&](const std::string& message) {
      lexer.fail(advance_pos(where, body.substr(0, escape_start)), message);
    };
    char e = body[i + 1];
    i += 2;
    switch (e) {
      case '\n': break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'v': out += '\v'; break;
      case 'x':
      case 'u':
      case 'U': {
        size_t want = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        uint32_t cp = 0;
        for (size_t k = 0; k < want; ++k) {
          int d = i + k < n ? hex_digit(body[i + k]) : -1;
          if (d < 0)
            fail_here(std::string("SyntaxError: truncated \\") + e + std::string(want, 'X') + " escape");
          cp = cp * 16 + uint32_t(d);
        }
        i += want;
        if (cp > 0x10FFFF) fail_here("SyntaxError: illegal Unicode character in \\U escape");
        append_utf8(out, cp);
        break;
      }
      case 'N':
        fail_here("unsupported construct: \\N{...} escape (Kiln has no Unicode name database)");
        break;
      default:
        if (e >= '0' && e <= '7') {
          uint32_t v = uint32_t(e - '0');
          for (int k = 0; k < 2 && i < n && body[i] >= '0' && body[i] <= '7'; ++k) v = v * 8 + uint32_t(body[i++] - '0');
          append_utf8(out, v);
        } else {
          out += '\\';  // unknown escapes stay as written, as in Python
          out += e;
        }
    }
  }
  return out;
}

}  // namespace kiln::py
