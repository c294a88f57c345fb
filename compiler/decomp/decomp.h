#pragma once
// Decompositions: a table from ATen overloads to functions that rewrite one call
// into calls of simpler ops, down to Kiln's closed core set (docs/core_aten.md).
// Each decomposition is written once against Emitter, so the same function
// builds graph nodes (the decompose pass) and runs eagerly (its numeric check).
//
// A decomposition may call ops that are not core themselves (softplus inside
// mish); DecomposingEmitter (decompose.h) applies the table again to those, so
// decompositions stay short and the result is core all the same.
#include <string>
#include <string_view>
#include <vector>

#include "compiler/pipeline/emitter.h"

namespace kiln::decomp {

using pipeline::EArg;
using pipeline::EKwargs;
using pipeline::Emitter;
using pipeline::Var;

// One call as a graph node or a formula made it: `args` positional (Vars for
// tensors, EArg::list for Tensor[], constants otherwise), `kwargs` by name.
struct DecompCall {
  std::string op;  // "aten::gelu.default"
  std::vector<EArg> args;
  EKwargs kwargs;
};

// Returns one Var per tensor output of `op`, in order (Tensor[] outputs flattened),
// or an empty vector when it declines these arguments: the op then stays as it
// is (the adaptive average pools unless they are a mean; the `.default` linear
// upsamplings whose scales disagree with their output size). Malformed
// arguments throw kiln::Error naming the op.
using Decomposition = std::vector<Var> (*)(Emitter&, const DecompCall&);

// "aten::gelu" and "aten::gelu.default" both name the default overload.
const Decomposition* find_decomposition(std::string_view op);
// Whether `op` belongs to the core set: a backend that runs core ops runs every graph decompose() made.
bool is_core(std::string_view op);
// Both sorted, full names ("aten::add.Tensor").
std::vector<std::string> core_ops();
std::vector<std::string> decomposed_ops();

}  // namespace kiln::decomp
