#include "core/trace/text_util.h"

#include <charconv>
#include <map>
#include <set>

namespace kiln::trace {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  for (;;) {
    size_t eol = text.find('\n', pos);
    std::string_view line = text.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back(line);
    if (eol == std::string_view::npos) break;
    pos = eol + 1;
  }
  return out;
}

std::string plural(size_t n, std::string_view one, std::string_view many) {
  std::string s = std::to_string(n);
  s += ' ';
  s += n == 1 ? one : many;
  return s;
}

std::string_view trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r' || s[b] == '\n')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r' || s[e - 1] == '\n')) --e;
  return s.substr(b, e - b);
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

namespace {

// "/path/file.py:12" -> file, line.
bool split_location(std::string_view loc, std::string& file, int& line) {
  size_t colon = loc.rfind(':');
  if (colon == std::string_view::npos) return false;
  int n = 0;
  auto [p, ec] = std::from_chars(loc.data() + colon + 1, loc.data() + loc.size(), n);
  if (ec != std::errc() || p != loc.data() + loc.size()) return false;
  file = std::string(loc.substr(0, colon));
  line = n;
  return true;
}

// '  File "/path/file.py", line 4, in f' (Python's traceback format).
bool parse_traceback_line(std::string_view s, StackFrame& f) {
  s = trim(s);
  if (!starts_with(s, "File \"")) return false;
  size_t q = s.find('"', 6);
  if (q == std::string_view::npos) return false;
  f.file = std::string(s.substr(6, q - 6));
  std::string_view rest = s.substr(q + 1);
  size_t ln = rest.find(", line ");
  if (ln == std::string_view::npos) return false;
  rest = rest.substr(ln + 7);
  int n = 0;
  auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), n);
  if (ec != std::errc()) return false;
  f.line = n;
  rest = rest.substr(size_t(p - rest.data()));
  if (starts_with(rest, ", in ")) f.function = std::string(rest.substr(5));
  return true;
}

}  // namespace

GraphBreak parse_graph_break_text(std::string_view text) {
  GraphBreak gb;
  std::vector<std::string_view> lines = split_lines(text);
  static constexpr std::string_view kAt = "Graph break in user code at ";
  static constexpr std::string_view kReason = "Graph Break Reason: ";
  static constexpr std::string_view kTraceback = "User code traceback:";
  static constexpr std::string_view kEncountered = "Encountered graph break when attempting to trace";
  size_t reason_line = lines.size(), traceback_line = lines.size();
  for (size_t i = 0; i < lines.size(); ++i) {
    if (starts_with(lines[i], kAt)) split_location(trim(lines[i].substr(kAt.size())), gb.file, gb.line);
    else if (reason_line == lines.size() && starts_with(lines[i], kReason)) reason_line = i;
    else if (traceback_line == lines.size() && lines[i] == kTraceback) traceback_line = i;
  }
  if (reason_line == lines.size()) {
    gb.detail = std::string(trim(text));
    for (std::string_view l : lines)
      if (!trim(l).empty()) {
        gb.reason = std::string(trim(l));
        break;
      }
    return gb;
  }
  // The detail runs from the reason line to the traceback.
  std::string detail(lines[reason_line].substr(kReason.size()));
  size_t end = traceback_line > reason_line ? traceback_line : lines.size();
  for (size_t i = reason_line + 1; i < end; ++i) {
    detail += '\n';
    detail += lines[i];
  }
  gb.detail = std::string(trim(detail));
  // "Encountered graph break when attempting to trace CALL: ...:" only says
  // which instruction; the kind of break is the next non-blank line.
  std::vector<std::string_view> dl = split_lines(gb.detail);
  size_t pick = 0;
  if (!dl.empty() && starts_with(dl[0], kEncountered))
    for (pick = 1; pick < dl.size() && trim(dl[pick]).empty(); ++pick) {
    }
  gb.reason = pick < dl.size() ? std::string(trim(dl[pick])) : gb.detail;
  for (size_t i = traceback_line + 1; i < lines.size(); ++i) {
    StackFrame f;
    if (!parse_traceback_line(lines[i], f)) {
      if (trim(lines[i]).empty()) break;
      continue;
    }
    if (i + 1 < lines.size() && !starts_with(trim(lines[i + 1]), "File \"") && !trim(lines[i + 1]).empty())
      f.code = std::string(trim(lines[++i]));
    gb.user_stack.push_back(std::move(f));
  }
  if (gb.file.empty() && !gb.user_stack.empty()) gb.file = gb.user_stack.back().file, gb.line = gb.user_stack.back().line;
  return gb;
}

void assign_labels(Trace& t) {
  // Several ranks: each compile id is its rank's ("r1:0/0"), numbered within the rank.
  std::set<int64_t> ranks;
  for (const CompileEntry& e : t.entries)
    if (e.rank) ranks.insert(*e.rank);
  const bool multi_rank = ranks.size() > 1;
  std::map<std::string, int> seen;
  for (CompileEntry& e : t.entries) {
    std::string base = e.label.empty() ? e.id.str() : e.label;
    size_t hash = base.find('#');
    if (hash != std::string::npos) base.resize(hash);
    if (multi_rank && e.rank && rank_part(base).empty()) {
      std::string prefixed = "r";
      prefixed += std::to_string(*e.rank);
      prefixed += ':';
      base = prefixed.append(base);
    }
    e.occurrence = ++seen[base];
    e.label = e.occurrence == 1 ? base : base + "#" + std::to_string(e.occurrence);
  }
}

}  // namespace kiln::trace
