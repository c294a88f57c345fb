#pragma once
// Derivative formulas keyed by ATen overload, in the manner of PyTorch's
// tools/autograd/derivatives.yaml. Each formula is written once against
// pipeline::Emitter, so the same code builds the backward half of an AOT joint
// graph (GraphEmitter) and runs eager autograd and the numeric checks
// (EagerEmitter). Formulas read only shapes and dtypes from their Vars, never
// data, which keeps them valid on meta tensors.
//
// Tests: tests/compiler/test_derivatives.cpp (float64 finite differences for
// every formula, and the op corpus' PyTorch gradients).
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/pipeline/emitter.h"

namespace kiln::aot {

using pipeline::EArg;
using pipeline::EKwargs;
using pipeline::Emitter;
using pipeline::Var;

// One forward call, as the forward was made: Vars for tensor inputs (Tensor[]
// inputs as EArg::list), constants otherwise, and the forward's outputs with
// Tensor[] results flattened one Var per element.
struct GradCall {
  std::string op;  // "aten::mul.Tensor"
  std::vector<EArg> args;
  EKwargs kwargs;
  std::vector<Var> outputs;
  // The Vars whose gradients are kept (the joint graph's requires-grad
  // values), or null: every floating input. A formula that computes an input's
  // gradient in the same kernel as the others' (grad_input_mask,
  // output_mask) asks for it only when it is kept (GradContext::needs).
  const std::set<int32_t>* kept_gradients = nullptr;
};

// One entry per forward output (flattened) on the way in, one per tensor input
// on the way out; nullopt means "no gradient" (zero, or not differentiable).
using GradList = std::vector<std::optional<Var>>;

// Returns one gradient per tensor input of `call`, in the order tensor_inputs()
// gives, each with the input's shape and dtype. grad_outputs may hold nullopt
// for outputs that got no gradient; all-nullopt gives all-nullopt.
using GradFormula = GradList (*)(Emitter& e, const GradCall& call, const GradList& grad_outputs);

struct DerivativeDef {
  std::string op;
  GradFormula formula = nullptr;
  // Schema argument names that get a gradient ("self", "other", "tensors").
  std::vector<std::string> differentiable_inputs;
  // Whether the backward reads the values of the forward's inputs / outputs.
  // What a partitioner must save (or recompute) for this op; shapes alone
  // never count, as they are known statically.
  bool needs_inputs = false;
  bool needs_outputs = false;
  // Per flattened output: whether a gradient flowing into it reaches the
  // inputs. Empty: every floating-point output does (integer outputs such as
  // indices never do).
  std::vector<bool> differentiable_outputs;
  // For float16/bfloat16 operands the formula runs in float32 and rounds
  // once, as PyTorch's single backward kernel for the op does.
  bool float32_for_reduced = false;
  std::string family;  // file of formulas it lives in, for listings
};

// The formula for an ATen overload ("aten::sin.default"); nullptr when it has
// none (not differentiable, or not written yet).
const DerivativeDef* find_derivative(std::string_view op);

// Every op with a formula, sorted.
std::vector<std::string> differentiable_ops();

// The tensor inputs of `call` in the order formulas return gradients: schema
// order (positional and keyword arguments alike), Tensor[] flattened element by
// element, None entries and omitted optional tensors skipped.
std::vector<Var> tensor_inputs(const GradCall& call);

// Whether flattened output `i` (of dtype `t`) of an op with `def` carries gradient.
bool output_is_differentiable(const DerivativeDef& def, size_t i, DType t);

// Runs the formula of call.op; kiln::Error when the op has none or the
// formula rejects the call (message names the op).
GradList differentiate(Emitter& e, const GradCall& call, const GradList& grad_outputs);

}  // namespace kiln::aot
