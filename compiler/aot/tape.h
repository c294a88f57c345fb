#pragma once
// Reverse mode over recorded Emitter calls. A composite op (linear, matmul,
// group_norm, cross_entropy_loss, ...) takes its derivative from its
// decomposition, as PyTorch's CompositeImplicitAutograd ops do: the formula
// re-emits the decomposition through a RecordingEmitter and back-propagates
// through what was recorded with the primitive ops' own formulas.
#include <vector>

#include "compiler/aot/derivatives.h"

namespace kiln::aot {

// Forwards every call to `inner` (so Vars are the inner emitter's) and keeps
// a record of each one.
class RecordingEmitter : public Emitter {
 public:
  explicit RecordingEmitter(Emitter& inner) : inner_(inner) {}
  std::vector<Var> call(std::string_view op, const std::vector<EArg>& args, const EKwargs& kwargs = {}) override;
  const Tensor& tensor(Var v) const override { return inner_.tensor(v); }
  const std::vector<GradCall>& calls() const { return calls_; }

 private:
  Emitter& inner_;
  std::vector<GradCall> calls_;
};

// Gradients of `wrt` given gradients of `outputs`, through `calls` in reverse;
// gradients reaching one Var from several uses are added. A recorded op
// without a formula is a kiln::Error naming it.
GradList backprop(Emitter& e, const std::vector<GradCall>& calls, const std::vector<Var>& outputs,
                  const GradList& grad_outputs, const std::vector<Var>& wrt);

}  // namespace kiln::aot
