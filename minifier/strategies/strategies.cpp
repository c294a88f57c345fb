#include "minifier/strategies/strategies.h"

namespace kiln::minify {

namespace {

using Factory = std::unique_ptr<Strategy> (*)();
struct Entry {
  const char* name;
  Factory make;
};
// Run order: the cheap, large cuts first (localize one divergent node, probe
// each kind of op alone with an oracle, cut the graph after the failing
// node, feed it recorded values), then the
// clean-ups, then the per-element shrinking that only pays on a small graph.
constexpr Entry kStrategies[] = {
    {"localize", make_localize},
    {"probe-ops", make_probe_ops},
    {"truncate", make_truncate},
    {"replace-with-inputs", make_replace_with_inputs},
    {"remove-outputs", make_remove_outputs},
    {"dead-code", make_dead_code},
    {"unused-inputs", make_unused_inputs},
    {"consolidate-inputs", make_consolidate_inputs},
    {"constant-inputs", make_constant_inputs},
    {"simplify-dtypes", make_simplify_dtypes},
    {"shrink-shapes", make_shrink_shapes},
};

}  // namespace

std::vector<std::unique_ptr<Strategy>> default_strategies() {
  std::vector<std::unique_ptr<Strategy>> out;
  for (const Entry& e : kStrategies) out.push_back(e.make());
  return out;
}

std::unique_ptr<Strategy> make_strategy(const std::string& name) {
  for (const Entry& e : kStrategies)
    if (name == e.name) return e.make();
  return nullptr;
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> out;
  for (const Entry& e : kStrategies) out.push_back(e.name);
  return out;
}

}  // namespace kiln::minify
