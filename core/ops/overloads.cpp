#include "core/ops/overloads.h"

#include <algorithm>

#include "core/ops/registry.h"

namespace kiln {

bool is_overload_packet(std::string_view target) {
  const size_t ns = target.find("::");
  return ns != std::string_view::npos && target.find('.', ns) == std::string_view::npos;
}

std::vector<std::string> registered_overloads(std::string_view op) {
  const std::string base = std::string(op) + ".";
  std::vector<std::string> names;
  for (const OpDef* def : op_registry().all())
    if (std::string name = def->schema.full_name(); name.starts_with(base)) names.push_back(std::move(name));
  std::stable_partition(names.begin(), names.end(), [&](const std::string& n) { return n == base + "default"; });
  return names;
}

}  // namespace kiln
