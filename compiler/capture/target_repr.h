#pragma once
// str() of a Dynamo graph node's callable target, as FX's print_tabular and
// torch._dynamo.explain's "Ops per Graph" show it: torch.abs is "<built-in
// method abs of type object at 0x...>", operator.add "<built-in function add>",
// F.relu "<function relu at 0x...>". Targets that are strings in FX
// (placeholders, methods, modules, output) print as themselves.
#include <string>

#include "core/graph/graph.h"

namespace kiln::capture {

std::string target_repr(const Node& n);

}  // namespace kiln::capture
