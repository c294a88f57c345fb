#include "compiler/aot/derivatives.h"

#include <algorithm>

#include "compiler/aot/grad_context.h"
#include "core/ops/registry.h"

namespace kiln::aot {

#define KILN_DERIVATIVE_FAMILY(name) void register_##name##_derivatives(DerivativeTable&);
#include "compiler/aot/derivative_families.def"
#undef KILN_DERIVATIVE_FAMILY

void DerivativeTable::insert(DerivativeDef d) {
  KILN_CHECK(op_registry().find(d.op), "derivative for unregistered op ", d.op);
  KILN_CHECK(!find(d.op), "two derivatives for ", d.op);
  d.family = family_;
  auto at = std::lower_bound(defs_.begin(), defs_.end(), d.op,
                             [](const DerivativeDef& x, const std::string& op) { return x.op < op; });
  defs_.insert(at, std::move(d));
}

const DerivativeDef* DerivativeTable::find(std::string_view op) const {
  auto at = std::lower_bound(defs_.begin(), defs_.end(), op,
                             [](const DerivativeDef& x, std::string_view o) { return x.op < o; });
  return at != defs_.end() && at->op == op ? &*at : nullptr;
}

void DerivativeTable::float32_for_reduced(std::string_view op) {
  auto at = std::find_if(defs_.begin(), defs_.end(), [&](const DerivativeDef& d) { return d.op == op; });
  KILN_CHECK(at != defs_.end(), "float32_for_reduced: no derivative for ", op);
  at->float32_for_reduced = true;
}

std::vector<std::string> DerivativeTable::names() const {
  std::vector<std::string> out;
  for (const DerivativeDef& d : defs_) out.push_back(d.op);
  return out;
}

const DerivativeTable& derivative_table() {
  static const DerivativeTable table = [] {
    DerivativeTable t;
#define KILN_DERIVATIVE_FAMILY(name) \
  t.set_family(#name);               \
  register_##name##_derivatives(t);
#include "compiler/aot/derivative_families.def"
#undef KILN_DERIVATIVE_FAMILY
    return t;
  }();
  return table;
}

const DerivativeDef* find_derivative(std::string_view op) {
  // "aten::sin" names "aten::sin.default", as the op registry allows.
  if (op.find('.') == std::string_view::npos) return derivative_table().find(std::string(op) + ".default");
  return derivative_table().find(op);
}

std::vector<std::string> differentiable_ops() { return derivative_table().names(); }

std::vector<Var> tensor_inputs(const GradCall& call) {
  std::vector<Var> out;
  for (const EArg& a : bind_call(schema_of(call.op), call.args, call.kwargs)) {
    if (a.kind == EArg::Kind::Var && a.var.valid()) out.push_back(a.var);
    if (a.kind == EArg::Kind::VarList)
      for (Var v : a.vars)
        if (v.valid()) out.push_back(v);
  }
  return out;
}

bool output_is_differentiable(const DerivativeDef& def, size_t i, DType t) {
  if (!is_floating(t)) return false;
  return def.differentiable_outputs.empty() || (i < def.differentiable_outputs.size() && def.differentiable_outputs[i]);
}

// Ops that PyTorch 2.11 itself cannot differentiate (derivatives.yaml has no
// entry, so its autograd kernel raises): a program reaching one fails there
// under PyTorch too, with this message, so it is the program's RuntimeError
// and not a gap of Kiln's.
static bool pytorch_leaves_underived(std::string_view op) {
  return op.substr(0, op.find('.')) == "aten::grid_sampler_2d_backward";
}

GradList differentiate(Emitter& e, const GradCall& call, const GradList& grad_outputs) {
  const DerivativeDef* def = find_derivative(call.op);
  if (!def && pytorch_leaves_underived(call.op))
    throw Error("derivative for " + std::string(call.op.substr(0, call.op.find('.'))) + " is not implemented");
  KILN_USER_CHECK(def, "no derivative formula for ", call.op);
  try {
    return def->formula(e, call, grad_outputs);
  } catch (const Error& err) {
    std::string m = err.what();
    if (m.find(call.op) != std::string::npos) throw;
    throw Error("derivative of " + call.op + ": " + m);
  }
}

}  // namespace kiln::aot
