// String literals: adjacent literals join, and f-string bodies split into text
// and replacement fields. A field's expression is lexed and parsed by a nested
// Parser that starts at the field's position, so its nodes carry exact
// positions in the file (Python 3.11 rules: no backslash or '#' inside fields).
#include "core/python/parser_impl.h"

namespace kiln::py::detail {

// Positions inside an f-string body, computed incrementally: fields are visited
// left to right, so each character is counted once.
struct Parser::BodyCursor {
  std::string_view body;
  size_t offset = 0;
  Pos pos;
  Pos at(size_t target) {
    if (target > offset) {
      pos = advance_pos(pos, body.substr(offset, target - offset));
      offset = target;
    }
    return pos;
  }
};

namespace {

void add_literal(std::vector<ExprPtr>& parts, const std::string& text, Pos pos) {
  if (text.empty()) return;
  if (!parts.empty()) {
    if (auto* c = parts.back()->as<Constant>()) {
      c->value.s += text;
      return;
    }
  }
  auto c = std::make_unique<Constant>(pos);
  c->value.kind = Const::Kind::Str;
  c->value.s = text;
  parts.push_back(std::move(c));
}

}  // namespace

ExprPtr Parser::parse_strings() {
  Pos p = peek().pos;
  std::vector<ExprPtr> parts;
  bool any_field = false;
  while (peek().kind == TokKind::String) {
    Token t = take();
    if (!t.is_fstring) {
      add_literal(parts, t.value, t.pos);
      continue;
    }
    BodyCursor cur{t.body, 0, t.body_pos};
    size_t before = parts.size();
    parse_fstring_parts(t, 0, false, parts, cur);
    for (size_t i = before; i < parts.size(); ++i) any_field |= parts[i]->kind == ExprKind::FormattedValue;
  }
  if (!any_field) {
    auto c = std::make_unique<Constant>(p);
    c->value.kind = Const::Kind::Str;
    if (!parts.empty()) c->value.s = std::move(parts[0]->as<Constant>()->value.s);
    return done(std::move(c));
  }
  auto j = std::make_unique<JoinedStr>(p);
  j->values = std::move(parts);
  return done(std::move(j));
}

// Text and fields of body[i..]. In a format spec (`in_spec`), stops at the '}'
// that closes the enclosing field and returns its index; else returns the end.
size_t Parser::parse_fstring_parts(const Token& t, size_t i, bool in_spec, std::vector<ExprPtr>& parts,
                                   BodyCursor& cur) {
  std::string_view body = t.body;
  size_t n = body.size();
  size_t segment = i;  // start of the literal text not yet added
  auto flush = [&](size_t end) {
    if (end <= segment) return;
    Pos where = cur.at(segment);
    add_literal(parts, decode_string_body(body.substr(segment, end - segment), t.is_raw, where, lexer_), where);
  };
  while (i < n) {
    char c = body[i];
    if (c == '\\' && !t.is_raw) {
      if (i + 1 < n && body[i + 1] == 'N')
        unsupported(cur.at(i), "\\N{...} escape", "Kiln has no Unicode name database");
      i += (i + 1 < n && body[i + 1] != '{' && body[i + 1] != '}') ? 2 : 1;
      continue;
    }
    if (c == '{') {
      if (!in_spec && i + 1 < n && body[i + 1] == '{') {
        flush(i + 1);
        i += 2;
        segment = i;
        continue;
      }
      flush(i);
      i = parse_fstring_field(t, i + 1, parts, cur);
      segment = i;
      continue;
    }
    if (c == '}') {
      if (in_spec) {
        flush(i);
        return i;
      }
      if (i + 1 < n && body[i + 1] == '}') {
        flush(i + 1);
        i += 2;
        segment = i;
        continue;
      }
      fail(cur.at(i), "f-string: single '}' is not allowed");
    }
    ++i;
  }
  if (in_spec) fail(cur.at(n), "f-string: expecting '}'");
  flush(n);
  return n;
}

// A replacement field whose expression starts at body[i] (just after '{').
// Returns the index just past its closing '}'.
size_t Parser::parse_fstring_field(const Token& t, size_t i, std::vector<ExprPtr>& parts, BodyCursor& cur) {
  std::string_view body = t.body;
  size_t n = body.size();
  Pos open_pos = cur.at(i - 1);
  DepthGuard guard(*this, open_pos);
  auto expecting_brace = [&] { fail(open_pos, "f-string: expecting '}'"); };

  // Find where the expression ends: at depth 0, '}', '!' (not "!="), ':' or a
  // lone '=' (the f"{x=}" form).
  size_t k = i, end = std::string_view::npos;
  int depth = 0;
  while (end == std::string_view::npos) {
    if (k >= n) expecting_brace();
    char c = body[k];
    if (c == '\'' || c == '"') {
      bool triple = k + 2 < n && body[k + 1] == c && body[k + 2] == c;
      size_t close = body.find(triple ? std::string_view(&body[k], 3) : std::string_view(&body[k], 1), k + (triple ? 3 : 1));
      if (close == std::string_view::npos) fail(cur.at(k), "f-string: unterminated string");
      k = close + (triple ? 3 : 1);
      continue;
    }
    if (c == '\\') fail(cur.at(k), "f-string expression part cannot include a backslash");
    if (c == '#') fail(cur.at(k), "f-string expression part cannot include '#'");
    if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if (c == ')' || c == ']') {
      if (depth > 0) --depth;
    } else if (c == '}') {
      if (depth == 0) end = k;
      else --depth;
    } else if (depth == 0 && c == '!') {
      if (k + 1 < n && body[k + 1] == '=') ++k;
      else end = k;
    } else if (depth == 0 && c == ':') {
      end = k;
    } else if (depth == 0 && c == '=') {
      if (k + 1 < n && body[k + 1] == '=') ++k;
      else if (k == i || std::string_view("=!<>").find(body[k - 1]) == std::string_view::npos) end = k;
    }
    if (end == std::string_view::npos) ++k;
  }

  std::string_view text = body.substr(i, end - i);
  Pos expr_pos = cur.at(i);
  if (text.find_first_not_of(" \t\n\f") == std::string_view::npos)
    fail(expr_pos, "f-string: empty expression not allowed");
  Lexer sub(text, lexer_.filename(), expr_pos, /*expression_mode=*/true);
  Parser inner(sub, depth_);
  auto field = std::make_unique<FormattedValue>(expr_pos);
  field->value = inner.parse_fstring_expression();

  k = end;
  bool self_documenting = false;
  if (body[k] == '=') {
    self_documenting = true;
    ++k;
    while (k < n && (body[k] == ' ' || body[k] == '\t' || body[k] == '\n')) ++k;
    add_literal(parts, std::string(body.substr(i, k - i)), expr_pos);
  }
  if (k < n && body[k] == '!') {
    char conv = k + 1 < n ? body[k + 1] : '\0';
    if (conv != 's' && conv != 'r' && conv != 'a')
      fail(cur.at(k), "f-string: invalid conversion character: expected 's', 'r', or 'a'");
    field->conversion = conv;
    k += 2;
    if (k >= n || (body[k] != ':' && body[k] != '}')) expecting_brace();
  }
  if (k < n && body[k] == ':') {
    ++k;
    auto spec = std::make_unique<JoinedStr>(cur.at(k));
    k = parse_fstring_parts(t, k, /*in_spec=*/true, spec->values, cur);
    field->format_spec = done(std::move(spec));
  }
  if (k >= n || body[k] != '}') expecting_brace();
  if (self_documenting && !field->conversion && !field->format_spec) field->conversion = 'r';
  parts.push_back(done(std::move(field)));
  return k + 1;
}

}  // namespace kiln::py::detail
