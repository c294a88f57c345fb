#include "compiler/passes/decompose_pass.h"

#include "compiler/decomp/decompose.h"

namespace kiln::pipeline {

PassResult decompose_to_core(Graph& g, const PassContext& ctx) {
  int replaced = 0;
  Expected<Graph> r = decomp::decompose(g, ctx.keep_whole ? *ctx.keep_whole : std::vector<std::string>{}, nullptr, &replaced);
  if (!r) throw Error(r.status().message());
  if (replaced == 0) return {false, "unchanged"};
  g = std::move(*r);
  return {true, "decomposed " + std::to_string(replaced) + " node(s) into core ATen ops"};
}

}  // namespace kiln::pipeline
