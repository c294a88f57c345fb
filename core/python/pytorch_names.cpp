// Which names PyTorch 2.11 has in its main namespaces (data/pytorch_names.inc,
// written by PyTorch): a missing attribute PyTorch has is Kiln's gap, refused
// with exit 3; one PyTorch lacks too is the program's own AttributeError.
#include "core/python/pytorch_names.h"

#include <map>
#include <set>
#include <string>

namespace kiln::py {

namespace {

using Table = std::map<std::string, std::set<std::string, std::less<>>, std::less<>>;

const Table& table() {
  static const Table t = [] {
    Table out;
    auto add = [&out](const char* ns, const char* names) {
      auto& set = out[ns];
      std::string_view s(names);
      while (!s.empty()) {
        size_t sp = s.find(' ');
        if (sp != 0) set.emplace(s.substr(0, sp == std::string_view::npos ? s.size() : sp));
        if (sp == std::string_view::npos) break;
        s.remove_prefix(sp + 1);
      }
    };
#define KILN_PYTORCH_NAMES(ns, names) add(ns, names);
#include "core/python/data/pytorch_names.inc"
#undef KILN_PYTORCH_NAMES
    return out;
  }();
  return t;
}

}  // namespace

std::optional<bool> pytorch_has(std::string_view ns, std::string_view name) {
  auto it = table().find(ns);
  if (it == table().end()) return std::nullopt;
  return it->second.count(name) > 0;
}

}  // namespace kiln::py
