#include "compiler/passes/decompose_pass.h"

#include "compiler/decomp/decompose.h"

namespace kiln::pipeline {

PassResult decompose_to_core(Graph& g, const PassContext&) {
  int replaced = 0;
  Expected<Graph> r = decomp::decompose(g, nullptr, &replaced);
  if (!r) throw Error(r.status().message());
  if (replaced == 0) return {false, "unchanged"};
  g = std::move(*r);
  return {true, "decomposed " + std::to_string(replaced) + " node(s) into core ATen ops"};
}

}  // namespace kiln::pipeline
