#pragma once
// Dead code elimination: removes every node whose value nothing reads, unless
// it has effects beyond its value (op_properties.h: mutations, out= ops,
// random ops, assertions, anything that is not an ATen op). Placeholders and
// the output always stay, so the signature does not change.
//
// Test: tests/compiler/test_pass_dce.cpp.
#include "compiler/pipeline/pass.h"

namespace kiln::pipeline {

PassResult eliminate_dead_code(Graph& g, const PassContext& ctx);

}  // namespace kiln::pipeline
