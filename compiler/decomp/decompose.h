#pragma once
// The decompose pass: rewrites an ATen graph so that every call is a core op
// (docs/core_aten.md), applying the decomposition table until nothing is left
// to apply. Each new node remembers the node it came from (meta.from) and that
// node's source stack, so a stage view can walk back from the decomposed graph.
#include <string>
#include <string_view>
#include <vector>

#include "compiler/decomp/decomp.h"
#include "core/graph/graph.h"
#include "core/util/status.h"

namespace kiln::decomp {

// An Emitter that decomposes every call before it reaches `inner`, recursively:
// `inner` sees only core ops, and the non-core calls whose decomposition
// declined their arguments (kept()). Wrapping an EagerEmitter gives a formula's
// fully decomposed numbers; wrapping a GraphEmitter gives its core graph.
class DecomposingEmitter : public Emitter {
 public:
  explicit DecomposingEmitter(Emitter& inner) : inner_(inner) {}
  std::vector<Var> call(std::string_view op, const std::vector<EArg>& args, const EKwargs& kwargs = {}) override;
  const Tensor& tensor(Var v) const override { return inner_.tensor(v); }

  // How many calls were replaced by their decomposition.
  int applied() const { return applied_; }
  // Non-core ops passed on unchanged, in the order met, without repeats.
  const std::vector<std::string>& kept() const { return kept_; }

 private:
  Emitter& inner_;
  int depth_ = 0;
  int applied_ = 0;
  std::vector<std::string> kept_;
};

// The pass. Each call_function node whose target has a decomposition is
// rewritten (its tensor inputs need a static-shape tensor meta['val'], as AOT
// graphs have; else an error names both nodes); every other node (core ops,
// getitems of them, targets Kiln does not know, non-ATen nodes) is copied as
// it is, name included. Returns the input itself when nothing was decomposed.
// `log`, when given, gets one line per decomposed node and one per non-core op
// whose decomposition declined; `decomposed_nodes` the number of input nodes replaced.
Expected<Graph> decompose(const Graph& aten_graph, std::string* log = nullptr, int* decomposed_nodes = nullptr);
// The same, leaving the calls of `keep_whole` (full op names) as they are: a
// backend that runs an op as one kernel of its own (the CUDA backend's fused
// attention) wants it whole, though it has a decomposition.
Expected<Graph> decompose(const Graph& aten_graph, const std::vector<std::string>& keep_whole,
                          std::string* log = nullptr, int* decomposed_nodes = nullptr);

// The call_function targets of `g` that are not core (operator.getitem aside), in graph order, without repeats.
std::vector<std::string> non_core_targets(const Graph& g);

}  // namespace kiln::decomp
