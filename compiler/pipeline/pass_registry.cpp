// The one table of passes (compiler/passes/passes.def).
#include "compiler/passes/canonicalize_views.h"
#include "compiler/passes/common_subexpression_elimination.h"
#include "compiler/passes/dead_code_elimination.h"
#include "compiler/passes/decompose_pass.h"
#include "compiler/passes/fold_constants.h"
#include "compiler/passes/functionalize.h"
#include "compiler/passes/fuse_attention.h"
#include "compiler/passes/simplify_algebra.h"
#include "compiler/pipeline/pass_manager.h"

namespace kiln::pipeline {

const std::vector<Pass>& pass_registry() {
  static const std::vector<Pass> passes = {
#define KILN_PASS(fn, name, description) Pass{name, &fn, description},
#include "compiler/passes/passes.def"
#undef KILN_PASS
  };
  return passes;
}

const Pass* find_pass(std::string_view name) {
  for (const Pass& p : pass_registry())
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace kiln::pipeline
