#pragma once
// Tokenizer for Kiln's Python subset. Tokens come one at a time (next()), so a
// syntax error early in a file is reported before a lexical error further down,
// as CPython does. Bad input throws kiln::Error("SyntaxError: ...") located at
// file:line:column; the parser converts it to a Status at its boundary.
//
// Columns are 1-based and count Unicode code points (a tab is one column).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/status.h"

namespace kiln::py {

struct Pos {
  int line = 0;
  int col = 0;
};

enum class TokKind : uint8_t {
  Name,     // identifier (soft keywords such as `match` included)
  Keyword,  // reserved word: def, if, None, True, ...
  Int,
  Float,
  String,   // one string literal; adjacent literals are joined by the parser
  Op,       // operator or delimiter: "(", "**=", "->", ...
  Newline,  // end of a logical line
  Indent,
  Dedent,
  End,
};

struct Token {
  TokKind kind = TokKind::End;
  std::string_view text;  // the source text of the token (strings: prefix and quotes included)
  Pos pos;                // first character
  Pos end;                // just past the last character
  // Int / Float
  int64_t int_value = 0;
  // An Int past int64: its text without underscores, base prefix kept
  // ("0xffff_ffff_ffff_ffff_f" -> "0xfffffffffffffffff"); empty otherwise.
  std::string big_int_text;
  double float_value = 0;
  // String
  bool is_fstring = false;
  bool is_raw = false;
  std::string value;      // decoded text (not for f-strings, whose body the parser splits)
  std::string_view body;  // raw text between the quotes
  Pos body_pos;           // position of body[0]

  bool is_op(std::string_view s) const { return kind == TokKind::Op && text == s; }
  bool is_keyword(std::string_view s) const { return kind == TokKind::Keyword && text == s; }
};

// "'('", "name 'x'", "end of line", ...: how error messages name a token.
std::string describe(const Token& tok);

class Lexer {
 public:
  // `expression_mode` lexes the inside of an f-string replacement field: no
  // indentation and no Newline tokens, as if inside brackets. `start` is where
  // `source` begins in the file.
  Lexer(std::string_view source, std::string filename, Pos start = {1, 1}, bool expression_mode = false);

  Token next();
  const std::string& filename() const { return filename_; }
  // The source with line endings normalised to "\n"; tokens point into it.
  const std::string& text() const { return src_; }

  [[noreturn]] void fail(Pos where, const std::string& message) const;

 private:
  struct IndentLevel {
    int tabs8;  // width with tabs to multiples of 8
    int tabs1;  // width with tabs as one column: must order the lines the same way
  };

  bool handle_line_start(Token& out);
  Token lex_name_or_string();
  Token lex_string(size_t start, Pos start_pos, std::string_view prefix);
  Token lex_number();
  Token lex_op();
  Token make(TokKind kind, size_t start, Pos start_pos);

  char peek(size_t ahead = 0) const { return pos_ + ahead < src_.size() ? src_[pos_ + ahead] : '\0'; }
  bool at_end() const { return pos_ >= src_.size(); }
  void advance();  // one byte, keeping line and column
  Pos here() const { return {line_, col_}; }
  void check_utf8_and_nul();

  std::string src_;
  std::string filename_;
  bool expression_mode_;
  size_t pos_ = 0;
  int line_;
  int col_;
  bool at_line_start_ = true;
  bool line_has_tokens_ = false;  // a Newline is due before the next line / the end
  int pending_dedents_ = 0;
  std::vector<IndentLevel> indents_{{0, 0}};
  struct Bracket {
    char open;
    Pos pos;
  };
  std::vector<Bracket> brackets_;
  bool finished_ = false;
};

// Decodes the escape sequences of a (non-raw) string body. `where` locates body[0]
// for errors; `lexer` reports them.
std::string decode_string_body(std::string_view body, bool raw, Pos where, const Lexer& lexer);

bool is_python_keyword(std::string_view word);

// The position just past `text` when it starts at `p`.
Pos advance_pos(Pos p, std::string_view text);

}  // namespace kiln::py
