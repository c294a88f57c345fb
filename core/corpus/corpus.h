#pragma once
// The op conformance corpus (../shared/reference/opcorpus): ops.json lists
// cases, ops.safetensors holds every tensor they name. Loading resolves tensor
// names to tensors, so a case is ready to call.
#include <map>
#include <string>
#include <vector>

#include "core/ops/schema.h"
#include "core/ops/value.h"
#include "core/util/status.h"

namespace kiln {

struct CorpusCase {
  std::string id;
  std::string op;  // "aten::add.Tensor"
  std::string tag;
  ValueList args;
  KwargList kwargs;
  std::vector<std::string> output_names;
  std::vector<Tensor> outputs;
  std::vector<Tensor> grad_outputs;
  // input tensor name -> expected gradient, for differentiable cases
  std::vector<std::pair<std::string, Tensor>> grad_inputs;
  int line = 0;  // line of the case's "id" in ops.json, for messages
};

struct Corpus {
  std::string dir;
  std::string torch_version;
  std::vector<CorpusCase> cases;
};

// Reads DIR/ops.json and DIR/ops.safetensors. Any damage (missing file, bad
// JSON, unknown argument kind, a tensor name not in the safetensors file) is a
// Status naming the file and, where known, the line.
Expected<Corpus> load_corpus(const std::string& dir);


}  // namespace kiln
