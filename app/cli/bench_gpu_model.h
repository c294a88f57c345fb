#pragma once
// A whole model's graph for `kiln-cli bench gpu`: the example program runs in
// Kiln's interpreter, and the first region it compiles (the model's forward)
// is taken as torch.compile would hand it to Inductor: lowered to ATen and
// decomposed, with the tensors of that call as inputs.
#include <map>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/tensor/tensor.h"
#include "core/util/status.h"

namespace kiln::cli {

struct ModelGraph {
  Graph graph;  // decomposed
  Graph aten;   // before decomposition (what a joint graph is built from)
  std::vector<Tensor> inputs;
  std::vector<bool> is_parameter;  // per input
  // Per input: whether a caller passes it anew each call (the batch) rather
  // than a parameter or buffer, which Inductor's CUDA graphs treat as static.
  std::vector<bool> per_call;
  // Global tensors of the program after it ran, by name (capture_model_graph's `globals`).
  std::map<std::string, Tensor> globals;
};

// `program` is found as given, else under resources/examples/ of the working
// directory or of KILN_SOURCE_DIR; `args` are its sys.argv[1:]; `globals`
// names tensors the program leaves in its module (a batch's labels) to return.
Expected<ModelGraph> capture_model_graph(const std::string& program, const std::vector<std::string>& args = {},
                                         const std::vector<std::string>& globals = {});

}  // namespace kiln::cli
