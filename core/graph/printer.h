#pragma once
// Writes a Graph as PyTorch's GraphModule.print_readable() does (torch/fx/
// graph.py's python_code with verbose=True): the class line, the forward
// signature with "f32[4, 8][8, 1]cpu" annotations, one statement per node with
// ";  x = None" after each value's last use, "# File: ..." summaries when the
// source frame changes, the return, then nested submodule classes.
// parse_graph_module (parser.h) reads this text back.
#include <string>

#include "core/graph/annotation.h"
#include "core/graph/graph.h"

namespace kiln {

struct PrintOptions {
  // True: print_readable's form (annotations, "# File:" summaries). False:
  // GraphModule.code's form, as in minifier repro.py files.
  bool verbose = true;
  // The ";  x = None" statements FX adds after a value's last use.
  bool delete_statements = true;
};

std::string print_graph_module(const Graph& g, const PrintOptions& options = {});

// One argument as FX writes it: "[1, 0]", "torch.float32", "device(type='cuda', index=0)", "1e-05".
std::string print_arg(const Graph& g, const Arg& a);

}  // namespace kiln
