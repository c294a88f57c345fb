#include "core/graph/py_lexer.h"

#include "core/util/status.h"
#include "core/util/utf8.h"

namespace kiln::pytext {

namespace {

bool is_name_start(char c) {
  return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (unsigned char)c >= 0x80;
}
bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Longest first, so "**=" wins over "**" and "*".
constexpr std::string_view kOps3[] = {"**=", "//=", ">>=", "<<=", "..."};
constexpr std::string_view kOps2[] = {"**", "//", "<<", ">>", "<=", ">=", "==", "!=", "+=", "-=", "*=",
                                      "/=", "%=", "&=", "|=", "^=", "@=", "->", ":="};
constexpr std::string_view kOps1 = "+-*/%@&|^~<>()[]{},:.;=!";

bool is_string_prefix(std::string_view p) {
  if (p.size() > 2) return false;
  for (char c : p)
    if (c != 'r' && c != 'R' && c != 'b' && c != 'B' && c != 'u' && c != 'U' && c != 'f' && c != 'F') return false;
  return true;
}

uint32_t hex_value(std::string_view digits) {
  uint32_t v = 0;
  for (char c : digits) {
    v *= 16;
    if (c >= '0' && c <= '9') v += uint32_t(c - '0');
    else if (c >= 'a' && c <= 'f') v += uint32_t(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v += uint32_t(c - 'A' + 10);
  }
  return v;
}

}  // namespace

void Lexer::fail(const std::string& message, int line) const { throw Error(message, SourceLocation{"", line}); }

bool Lexer::next(LogicalLine& out, int min_indent) {
  out.tokens.clear();
  out.comment_only = false;
  while (pos_ < src_.size()) {
    size_t line_start = pos_;
    int indent = 0;
    while (pos_ < src_.size() && (src_[pos_] == ' ' || src_[pos_] == '\t' || src_[pos_] == '\f')) {
      indent = src_[pos_] == '\t' ? (indent / 8 + 1) * 8 : indent + 1;
      ++pos_;
    }
    if (pos_ >= src_.size()) return false;
    char c = src_[pos_];
    if (c == '\n' || c == '\r') {
      pos_ += (c == '\r' && pos_ + 1 < src_.size() && src_[pos_ + 1] == '\n') ? 2 : 1;
      ++line_;
      continue;
    }
    out.indent = indent;
    out.line = out.last_line = line_;
    if (c == '#') {
      size_t end = src_.find('\n', pos_);
      if (end == std::string_view::npos) end = src_.size();
      std::string_view text = src_.substr(pos_ + 1, end - pos_ - 1);
      while (!text.empty() && (text.back() == '\r' || text.back() == ' ')) text.remove_suffix(1);
      while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
      out.comment_only = true;
      out.tokens.push_back({Tok::Comment, text, line_});
      pos_ = end;
      return true;
    }
    if (indent < min_indent) {
      pos_ = line_start;
      return false;
    }
    lex_code(out);
    return true;
  }
  return false;
}

void Lexer::lex_code(LogicalLine& out) {
  std::vector<std::pair<char, int>> brackets;  // open bracket and its line
  while (true) {
    if (pos_ >= src_.size()) {
      if (!brackets.empty())
        fail(std::string("unexpected end of text: '") + brackets.back().first + "' is never closed",
             brackets.back().second);
      break;
    }
    char c = src_[pos_];
    if (c == ' ' || c == '\t' || c == '\f' || c == '\r') {
      ++pos_;
      continue;
    }
    if (c == '\n') {
      ++pos_;
      ++line_;
      if (brackets.empty()) break;
      continue;
    }
    if (c == '\\' && pos_ + 1 < src_.size() && (src_[pos_ + 1] == '\n' || src_[pos_ + 1] == '\r')) {
      pos_ += src_[pos_ + 1] == '\r' && pos_ + 2 < src_.size() && src_[pos_ + 2] == '\n' ? 3 : 2;
      ++line_;
      continue;
    }
    if (c == '#') {
      size_t end = src_.find('\n', pos_);
      if (end == std::string_view::npos) end = src_.size();
      std::string_view text = src_.substr(pos_ + 1, end - pos_ - 1);
      while (!text.empty() && (text.back() == '\r' || text.back() == ' ')) text.remove_suffix(1);
      while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
      out.tokens.push_back({Tok::Comment, text, line_});
      pos_ = end;
      continue;
    }
    if (is_name_start(c)) {
      size_t start = pos_;
      while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
      if (pos_ < src_.size() && (src_[pos_] == '\'' || src_[pos_] == '"') &&
          is_string_prefix(src_.substr(start, pos_ - start))) {
        lex_string(out, start);
        continue;
      }
      out.tokens.push_back({Tok::Name, src_.substr(start, pos_ - start), line_});
      continue;
    }
    if (is_digit(c) || (c == '.' && pos_ + 1 < src_.size() && is_digit(src_[pos_ + 1]))) {
      lex_number(out);
      continue;
    }
    if (c == '\'' || c == '"') {
      lex_string(out, pos_);
      continue;
    }
    std::string_view rest = src_.substr(pos_);
    std::string_view op;
    for (auto o : kOps3)
      if (rest.starts_with(o)) op = o;
    if (op.empty())
      for (auto o : kOps2)
        if (rest.starts_with(o)) op = o;
    if (op.empty() && kOps1.find(c) != std::string_view::npos) op = rest.substr(0, 1);
    if (op.empty()) fail(std::string("unexpected character '") + c + "'", line_);
    if (op == "(" || op == "[" || op == "{") {
      brackets.push_back({c, line_});
    } else if (op == ")" || op == "]" || op == "}") {
      char want = c == ')' ? '(' : c == ']' ? '[' : '{';
      if (brackets.empty() || brackets.back().first != want) fail(std::string("unmatched '") + c + "'", line_);
      brackets.pop_back();
    }
    out.tokens.push_back({Tok::Op, src_.substr(pos_, op.size()), line_});
    pos_ += op.size();
  }
  out.last_line = out.tokens.empty() ? out.line : out.tokens.back().line;
}

void Lexer::lex_string(LogicalLine& out, size_t prefix_start) {
  int start_line = line_;
  char quote = src_[pos_];
  bool triple = src_.substr(pos_, 3) == std::string(3, quote);
  pos_ += triple ? 3 : 1;
  while (true) {
    if (pos_ >= src_.size()) fail("unterminated string", start_line);
    char c = src_[pos_];
    if (c == '\\') {
      if (pos_ + 1 < src_.size() && src_[pos_ + 1] == '\n') ++line_;
      pos_ += 2;
      continue;
    }
    if (c == '\n') {
      if (!triple) fail("unterminated string", start_line);
      ++line_;
    }
    if (c == quote && (!triple || src_.substr(pos_, 3) == std::string(3, quote))) {
      pos_ += triple ? 3 : 1;
      break;
    }
    ++pos_;
  }
  out.tokens.push_back({Tok::String, src_.substr(prefix_start, pos_ - prefix_start), start_line});
}

void Lexer::lex_number(LogicalLine& out) {
  size_t start = pos_;
  bool hex = src_.substr(pos_, 2) == "0x" || src_.substr(pos_, 2) == "0X";
  while (pos_ < src_.size()) {
    char c = src_[pos_];
    if (is_name_char(c) || c == '.') {
      ++pos_;
      continue;
    }
    char prev = src_[pos_ - 1];
    if (!hex && (c == '+' || c == '-') && (prev == 'e' || prev == 'E') && pos_ + 1 < src_.size() &&
        is_digit(src_[pos_ + 1])) {
      ++pos_;
      continue;
    }
    break;
  }
  out.tokens.push_back({Tok::Number, src_.substr(start, pos_ - start), line_});
}

std::string decode_string(std::string_view token) {
  size_t q = token.find_first_of("'\"");
  bool raw = false;
  for (char c : token.substr(0, q)) raw |= c == 'r' || c == 'R';
  std::string_view body = token.substr(q);
  size_t quote_len = body.size() >= 6 && body[0] == body[1] && body[1] == body[2] ? 3 : 1;
  body = body.substr(quote_len, body.size() - 2 * quote_len);
  std::string out;
  out.reserve(body.size());
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c != '\\' || i + 1 >= body.size()) {
      out += c;
      continue;
    }
    char e = body[++i];
    if (raw) {
      out += '\\';
      out += e;
      continue;
    }
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case '0': out += '\0'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'v': out += '\v'; break;
      case '\n': break;  // line continuation inside the string
      case 'x':
        append_utf8(out, hex_value(body.substr(i + 1, 2)));
        i += 2;
        break;
      case 'u':
        append_utf8(out, hex_value(body.substr(i + 1, 4)));
        i += 4;
        break;
      case 'U':
        append_utf8(out, hex_value(body.substr(i + 1, 8)));
        i += 8;
        break;
      default: out += e; break;  // \\, \', \"
    }
  }
  return out;
}

}  // namespace kiln::pytext
