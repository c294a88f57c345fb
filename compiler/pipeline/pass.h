#pragma once
// What every pass is: a named function from a graph to a graph, edited in
// place, that says whether it changed anything. Passes never print, time or
// verify themselves; the pass manager (pass_manager.h) does all of that in one
// place, as MLIR's does.
#include <string>
#include <string_view>
#include <vector>

#include "core/graph/graph.h"

namespace kiln::pipeline {

class ConstantTable;

struct PassResult {
  // The pass manager trusts this flag for "unchanged" (no snapshot) and, when
  // verifying, checks it against the structural hash.
  bool changed = false;
  // One line for the stage list: "removed 4 nodes".
  std::string summary;
};

// What a pass may read or extend besides the graph.
struct PassContext {
  // Tensors that get_attr nodes name (frozen parameters, folded constants);
  // null when the graph has none and no pass may add any.
  ConstantTable* constants = nullptr;
  // Ops that stay whole (Options::keep_whole); the decompose pass reads it.
  const std::vector<std::string>* keep_whole = nullptr;
};

using PassFn = PassResult (*)(Graph& g, const PassContext& ctx);

struct Pass {
  std::string_view name;  // "cse", as --print-after takes it
  PassFn run = nullptr;
  std::string_view description;
};

}  // namespace kiln::pipeline
