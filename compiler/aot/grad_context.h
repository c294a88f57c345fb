#pragma once
// What a derivative formula works with: the forward call's arguments bound to
// the op's schema (defaults filled in, read by name as in derivatives.yaml),
// the output gradients, and one slot per tensor input. Setting a slot reduces
// a broadcast gradient to the input's shape and casts it to the input's dtype,
// so no formula repeats that bookkeeping.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/aot/derivatives.h"
#include "core/ops/schema.h"

namespace kiln::aot {

// `args` and `kwargs` matched to `schema`: one EArg per schema argument, with
// defaults for omitted ones (None for omitted optionals). kiln::Error for
// missing, unknown or surplus arguments.
std::vector<EArg> bind_call(const Schema& schema, const std::vector<EArg>& args, const EKwargs& kwargs);
const Schema& schema_of(std::string_view op);
// The schema argument name of each tensor input, in tensor_inputs() order.
std::vector<std::string> tensor_input_names(const GradCall& call);

class GradContext {
 public:
  GradContext(Emitter& e, const GradCall& call, const GradList& grad_outputs);

  Emitter& e;
  const GradCall& call;

  // ---- the forward's arguments, by schema name ----
  const EArg& arg(std::string_view name) const;
  bool is_none(std::string_view name) const;
  Var var(std::string_view name) const;
  std::optional<Var> opt_var(std::string_view name) const;
  std::vector<Var> vars(std::string_view name) const;  // a Tensor[] argument
  const Value& value(std::string_view name) const;     // a constant argument
  int64_t integer(std::string_view name) const;
  std::optional<int64_t> opt_integer(std::string_view name) const;
  double real(std::string_view name) const;
  std::optional<double> opt_real(std::string_view name) const;
  bool boolean(std::string_view name) const;
  // int[N] arguments; a single int broadcasts to N as the schema allows.
  std::vector<int64_t> ints(std::string_view name) const;
  std::optional<std::vector<int64_t>> opt_ints(std::string_view name) const;
  std::string str(std::string_view name) const;
  std::optional<std::string> opt_str(std::string_view name) const;
  // Every argument, bound and in schema order (for re-emitting the call).
  const std::vector<EArg>& bound() const { return bound_; }

  // ---- the forward's outputs and their gradients ----
  Var out(size_t i = 0) const;
  size_t num_outputs() const { return outputs_.size(); }
  std::optional<Var> grad(size_t i) const;
  // The gradient of output 0, or zeros shaped like it when only another
  // output got one.
  Var grad() const;
  Var grad_or_zeros(size_t i) const;
  bool any_grad() const;

  // ---- the input gradients ----
  // Whether `name` is present and floating point, so that it takes a gradient
  // (and, in a joint graph, requires one: GradCall::kept_gradients).
  bool needs(std::string_view name) const;
  // Sets the gradient of tensor argument `name` (ignored when it needs none).
  void set(std::string_view name, Var g);
  void set(std::string_view name, std::optional<Var> g);
  // One gradient per element of Tensor[] argument `name` (None elements skipped).
  void set_list(std::string_view name, const GradList& gs);
  // The gradient of the i-th tensor input in tensor_inputs() order.
  void set_flat(size_t i, Var g);
  // Sets every input gradient by back-propagating through `forward`, the op's
  // decomposition re-emitted on the emitter it is given (a recording one).
  // It returns Vars standing for the op's outputs, in order.
  void via(const std::function<std::vector<Var>(Emitter&)>& forward);
  GradList result() const { return result_; }

 private:
  size_t index_of(std::string_view name) const;
  Var fit_to_input(Var g, Var input) const;

  void upcast();

  const Schema& schema_;
  std::vector<EArg> bound_;           // what formulas read (float32 when upcast)
  std::vector<EArg> given_;           // as called: what gradients are fitted to
  GradList grads_;
  std::vector<Var> outputs_;          // as formulas see them
  std::vector<Var> inputs_;           // tensor inputs as called, flattened
  std::vector<Var> work_inputs_;      // the same as formulas see them
  std::vector<size_t> first_slot_;    // per schema argument: its first slot in inputs_
  GradList result_;
};

// A formula body: reads the context and sets input gradients.
template <auto Body>
GradList run_formula(Emitter& e, const GradCall& call, const GradList& grad_outputs) {
  GradContext x(e, call, grad_outputs);
  if (x.any_grad()) Body(x);
  return x.result();
}

enum Saves : unsigned { kSavesNothing = 0, kSavesInputs = 1, kSavesOutputs = 2, kSavesBoth = 3 };

class DerivativeTable {
 public:
  // Registers Body as the formula of `op` (a duplicate is a bug in Kiln).
  template <auto Body>
  void add(std::string op, std::vector<std::string> inputs, Saves saves,
           std::vector<bool> differentiable_outputs = {}) {
    DerivativeDef d;
    d.op = std::move(op);
    d.formula = &run_formula<Body>;
    d.differentiable_inputs = std::move(inputs);
    d.needs_inputs = saves & kSavesInputs;
    d.needs_outputs = saves & kSavesOutputs;
    d.differentiable_outputs = std::move(differentiable_outputs);
    insert(std::move(d));
  }
  // Marks `op`'s formula to run in float32 for float16/bfloat16 operands
  // (where PyTorch's backward is one kernel accumulating in float32).
  void float32_for_reduced(std::string_view op);
  void set_family(std::string family) { family_ = std::move(family); }
  const DerivativeDef* find(std::string_view op) const;
  std::vector<std::string> names() const;

 private:
  void insert(DerivativeDef d);
  std::vector<DerivativeDef> defs_;  // sorted by op
  std::string family_;
};

const DerivativeTable& derivative_table();

}  // namespace kiln::aot
