#include "session/source_links.h"

#include <cctype>
#include <filesystem>
#include <set>
#include <utility>
#include <vector>

namespace kiln::session {

namespace {

bool is_name_char(char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; }

// "    name = ..." or "    name: "f32[4]" = ...": the line defines `name`.
bool defines(std::string_view line, std::string_view name) {
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string_view::npos || line.substr(i, name.size()) != name) return false;
  i += name.size();
  if (i < line.size() && is_name_char(line[i])) return false;  // "add_1" is not "add"
  while (i < line.size() && line[i] == ' ') ++i;
  if (i < line.size() && line[i] == ':') return line.find(" = ", i) != std::string_view::npos;
  return i + 1 < line.size() && line[i] == '=' && line[i + 1] != '=';
}

bool same_file(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return false;
  return a == b || std::filesystem::path(a).filename() == std::filesystem::path(b).filename();
}

// A file the view can show: the session's source, or one the dump quotes lines of.
bool showable(const Session& s, const std::string& file) {
  if (same_file(file, s.source_file) && (!s.source_text.empty() || !s.known_lines.empty())) return true;
  return s.quoted_lines.count(file) > 0;
}

std::optional<SourceRef> from_stack(const Session& s, const Node& n) {
  if (n.meta.stack.empty()) return std::nullopt;
  for (auto f = n.meta.stack.rbegin(); f != n.meta.stack.rend(); ++f)
    if (f->line > 0 && showable(s, f->file)) return SourceRef{f->file, f->line};
  const StackFrame& inner = n.meta.stack.back();
  if (inner.line > 0) return SourceRef{inner.file, inner.line};
  return std::nullopt;
}

}  // namespace

int defining_line(std::string_view source, std::string_view name) {
  if (name.empty()) return 0;
  int first = 0, in_forward = 0, number = 0;
  bool forward = false;
  for (size_t at = 0; at <= source.size();) {
    size_t end = source.find('\n', at);
    if (end == std::string_view::npos) end = source.size();
    std::string_view line = source.substr(at, end - at);
    ++number;
    if (line.find("def forward(") != std::string_view::npos) forward = true;
    if (defines(line, name)) {
      if (!first) first = number;
      if (forward && !in_forward) in_forward = number;
    }
    at = end + 1;
  }
  return in_forward ? in_forward : first;
}

bool source_is_graph(const Session& s) {
  if (s.source_text.empty()) return false;
  return s.source_file.ends_with("graph.txt") || s.source_text.find("class Repro") != std::string::npos;
}

std::optional<SourceRef> node_source(const Session& s, const SessionCompile& c, int stage, const std::string& name,
                                     const std::function<std::shared_ptr<const Graph>(int)>& graph_of) {
  const bool by_definition = source_is_graph(s);
  std::set<std::pair<int, std::string>> seen;
  // Breadth first up the stages: the nearest line wins.
  std::vector<std::pair<int, std::string>> todo = {{stage, name}};
  for (size_t k = 0; k < todo.size() && k < 4096; ++k) {
    auto [i, node] = todo[k];
    if (i < 0 || i >= int(c.stages.size()) || !seen.insert(todo[k]).second) continue;
    std::shared_ptr<const Graph> g = graph_of ? graph_of(i) : nullptr;
    const Node* n = nullptr;
    if (g)
      if (NodeId id = g->find(node); id != kNoNode) n = &(*g)[id];
    if (n)
      if (auto ref = from_stack(s, *n)) return ref;
    if (by_definition)
      if (int line = defining_line(s.source_text, node); line > 0) return SourceRef{s.source_file, line};
    const int parent = c.stages[size_t(i)].parent;
    if (parent < 0) continue;
    // Provenance when the stage has it; a dump's stages (none) by name.
    if (n && !n->meta.from.empty())
      for (const std::string& f : n->meta.from) todo.emplace_back(parent, f);
    else
      todo.emplace_back(parent, node);
  }
  return std::nullopt;
}

}  // namespace kiln::session
