#pragma once
// The tensors behind a graph's get_attr nodes. FX keeps them as attributes of
// the GraphModule; Kiln's Graph is plain data, so they travel beside it here
// and through the pipeline in PassContext and CompileResult.
#include <map>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/ops/value.h"
#include "core/util/status.h"

namespace kiln::pipeline {

class ConstantTable {
 public:
  // Stores `t` under a fresh name "<base><k>" that neither this table nor
  // `g` uses yet, and returns the name (the get_attr target).
  std::string add(const std::string& base, Tensor t, const Graph& g);
  void set(const std::string& name, Tensor t) { tensors_[name] = std::move(t); }
  const Tensor* find(const std::string& name) const;
  size_t size() const { return tensors_.size(); }
  const std::map<std::string, Tensor>& all() const { return tensors_; }

 private:
  std::map<std::string, Tensor> tensors_;
  size_t next_suffix_ = 0;
};

// run_aten_graph for graphs whose get_attr nodes name tensors of `constants`:
// each such node reads its tensor. An unknown attribute is an error naming it.
Expected<std::vector<Value>> run_with_constants(const Graph& g, const ConstantTable& constants,
                                                const std::vector<Value>& inputs);

}  // namespace kiln::pipeline
