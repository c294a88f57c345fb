#pragma once
// Random, valid training programs in Kiln's Python subset, for the
// program-level differential fuzzer (kiln-program-fuzz). Each program builds
// an nn.Module tree (parameters, buffers, submodules in ModuleList /
// Sequential / ModuleDict / plain attributes reached by getattr), runs a few
// training steps (zero_grad with and without set_to_none, SGD or Adam, the
// step compiled whole or only the model), and prints every loss, parameter,
// gradient, buffer and optimizer state with show(). The forward mixes what
// breaks compilers at their seams: dropout and other seeded RNG, views and
// in-place ops, buffers updated under no_grad, getattr, data-dependent
// branches (graph breaks), batch-size changes (recompiles), Python state on
// modules. The same seed gives the same program.
#include <cstdint>

#include "program_text.h"

namespace kiln::fuzz {

struct GenOptions {
  int steps = 3;  // training steps per program
};

ProgramText generate_program(uint64_t seed, const GenOptions& options = {});

}  // namespace kiln::fuzz
