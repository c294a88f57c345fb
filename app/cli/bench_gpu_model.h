#pragma once
// A whole model's inference graph for `kiln-cli bench gpu`: the example
// program runs in Kiln's interpreter, and the first region it compiles (the
// model's forward) is taken as torch.compile would hand it to Inductor:
// lowered to ATen and decomposed, with the tensors of that call as inputs.
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/tensor/tensor.h"
#include "core/util/status.h"

namespace kiln::cli {

struct ModelGraph {
  Graph graph;
  std::vector<Tensor> inputs;
  // Per input: whether a caller passes it anew each call (the batch) rather
  // than a parameter or buffer, which Inductor's CUDA graphs treat as static.
  std::vector<bool> per_call;
};

// `program` is found as given, else under resources/examples/ of the working
// directory or of KILN_SOURCE_DIR.
Expected<ModelGraph> capture_model_graph(const std::string& program);

}  // namespace kiln::cli
