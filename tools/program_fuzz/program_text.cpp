#include "program_text.h"

#include <algorithm>

namespace kiln::fuzz {

std::vector<size_t> ProgramText::removable() const {
  std::vector<size_t> out;
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].removable) out.push_back(i);
  return out;
}

std::string ProgramText::render(const std::vector<size_t>* kept) const {
  std::vector<const Line*> shown;
  for (size_t i = 0; i < lines.size(); ++i) {
    const Line& l = lines[i];
    if (l.removable && kept && !std::binary_search(kept->begin(), kept->end(), i)) continue;
    shown.push_back(&l);
  }
  std::string out;
  auto emit = [&](int indent, const std::string& text) {
    if (!text.empty()) out.append(size_t(indent) * 4, ' ');
    out += text;
    out += '\n';
  };
  for (size_t i = 0; i < shown.size(); ++i) {
    const Line& l = *shown[i];
    emit(l.indent, l.text);
    if (l.text.empty() || l.text.back() != ':') continue;
    // A header whose body was left out entirely still needs a statement.
    size_t next = i + 1;
    while (next < shown.size() && shown[next]->text.empty()) ++next;
    if (next == shown.size() || shown[next]->indent <= l.indent) emit(l.indent + 1, "pass");
  }
  return out;
}

}  // namespace kiln::fuzz
