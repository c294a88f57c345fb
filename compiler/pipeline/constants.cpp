#include "compiler/pipeline/constants.h"

#include "compiler/pipeline/aten_interpreter.h"

namespace kiln::pipeline {

std::string ConstantTable::add(const std::string& base, Tensor t, const Graph& g) {
  for (size_t& k = next_suffix_;; ++k) {
    std::string name = base + std::to_string(k);
    if (tensors_.count(name) || g.find(name) != kNoNode) continue;
    tensors_.emplace(name, std::move(t));
    return name;
  }
}

const Tensor* ConstantTable::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

Expected<std::vector<Value>> run_with_constants(const Graph& g, const ConstantTable& constants,
                                                const std::vector<Value>& inputs) {
  // run_aten_graph binds placeholders in node order wherever they stand, so a
  // get_attr turned placeholder reads its tensor from the interleaved inputs.
  Graph lifted = g;
  std::vector<Value> all_inputs;
  size_t next = 0;
  for (Node& n : lifted.nodes) {
    if (n.op == OpKind::Placeholder) {
      if (next >= inputs.size()) return Status::error("more placeholders than inputs (" + std::to_string(inputs.size()) + ")");
      all_inputs.push_back(inputs[next++]);
    } else if (n.op == OpKind::GetAttr) {
      const Tensor* t = constants.find(n.target);
      if (!t) return Status::error("node " + n.name + ": get_attr of '" + n.target + "', which is no known constant");
      all_inputs.emplace_back(*t);
      n.op = OpKind::Placeholder;
    }
  }
  return run_aten_graph(lifted, all_inputs);
}

}  // namespace kiln::pipeline
