#pragma once
// A tokenizer for the Python that FX prints, one logical line at a time (a
// bracket spans physical lines, as in Python). Internal to the graph parser.
// Tokens are views into the source text, which must outlive them.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::pytext {

enum class Tok : uint8_t { Name, Number, String, Op, Comment };

struct Token {
  Tok kind;
  std::string_view text;  // String: with quotes and prefix; Comment: after '#', trimmed
  int line;               // 1-based, in the lexed text
};

struct LogicalLine {
  int indent = 0;
  int line = 0;                 // of the first physical line
  int last_line = 0;            // of the last physical line
  bool comment_only = false;    // a line holding only a comment, in tokens[0]
  std::vector<Token> tokens;    // inline comments included, in order
};

class Lexer {
 public:
  Lexer(std::string_view src, size_t offset, int line) : src_(src), pos_(offset), line_(line) {}
  // Reads the next logical line, skipping blank ones. Returns false at the end
  // of the text, or, leaving it unread, when the next code line is indented
  // less than `min_indent` (comment lines are returned whatever their indent).
  // Bad input (an unterminated string or bracket, a stray character) throws
  // kiln::Error whose location holds the line.
  bool next(LogicalLine& out, int min_indent);
  size_t offset() const { return pos_; }
  int line() const { return line_; }

 private:
  void lex_code(LogicalLine& out);
  void lex_string(LogicalLine& out, size_t prefix_start);
  void lex_number(LogicalLine& out);
  [[noreturn]] void fail(const std::string& message, int line) const;

  std::string_view src_;
  size_t pos_;
  int line_;
};

// The value of a string token ('a\n', "it's", r'x', '''doc''').
std::string decode_string(std::string_view token);

}  // namespace kiln::pytext
