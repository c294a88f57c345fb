#include "compiler/passes/op_properties.h"

#include <algorithm>
#include <array>
#include <string>

#include "core/graph/spelling.h"
#include "core/ops/registry.h"

namespace kiln::pipeline {

namespace {

// "aten::add_.Tensor" -> "add_"; "torch.nn.functional.dropout" -> "dropout".
std::string_view base_name(std::string_view target) {
  if (size_t colon = target.find("::"); colon != std::string_view::npos) {
    std::string_view rest = target.substr(colon + 2);
    return rest.substr(0, rest.find('.'));
  }
  size_t dot = target.rfind('.');
  return dot == std::string_view::npos ? target : target.substr(dot + 1);
}

std::string_view overload_name(std::string_view target) {
  size_t colon = target.find("::");
  if (colon == std::string_view::npos) return {};
  std::string_view rest = target.substr(colon + 2);
  size_t dot = rest.find('.');
  return dot == std::string_view::npos ? std::string_view{} : rest.substr(dot + 1);
}

bool is_aten(std::string_view target) { return target.starts_with("aten::"); }

template <size_t N>
bool one_of(std::string_view s, const std::array<std::string_view, N>& names) {
  return std::find(names.begin(), names.end(), s) != names.end();
}

bool named_inplace(std::string_view base) {
  if (base.size() > 4 && base.starts_with("__") && base.ends_with("__")) return base.starts_with("__i");
  return base.size() > 1 && base.back() == '_';
}

}  // namespace

bool writes_an_input(const Node& n) {
  if (n.op != OpKind::CallFunction || !is_aten(n.target)) return false;
  if (const OpDef* def = op_registry().find(n.target)) {
    for (const Argument& a : def->schema.args)
      if (a.is_write) return true;
    return false;
  }
  std::string_view overload = overload_name(n.target);
  return named_inplace(base_name(n.target)) || overload == "out" || overload.ends_with("_out");
}

bool is_random_op(std::string_view target) {
  static constexpr std::array<std::string_view, 31> kRandom{
      "rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like",
      "bernoulli", "bernoulli_", "dropout", "native_dropout", "feature_dropout", "alpha_dropout",
      "feature_alpha_dropout", "_fused_dropout", "normal", "normal_", "uniform", "uniform_",
      "exponential", "exponential_", "geometric_", "cauchy_", "log_normal_", "poisson",
      "multinomial", "random_", "rrelu", "rrelu_with_noise", "_standard_gamma", "binomial"};
  return one_of(base_name(target), kRandom);
}

bool is_uninitialized_op(std::string_view target) {
  static constexpr std::array<std::string_view, 6> kEmpty{
      "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "empty_permuted"};
  return is_aten(target) && one_of(base_name(target), kEmpty);
}

bool has_side_effects(const Node& n) {
  switch (n.op) {
    case OpKind::Placeholder:
    case OpKind::Output:
    case OpKind::CallMethod:
    case OpKind::CallModule: return true;
    case OpKind::GetAttr: return false;
    case OpKind::CallFunction: break;
  }
  if (n.target == "operator.getitem") return false;
  // prims are functional (the minifier left an unused max-pool prim behind
  // for want of this), except Inductor's random prims, which draw numbers.
  if (n.target.starts_with("prims::inductor_")) return true;
  if (!is_aten(n.target) && !n.target.starts_with("prims::")) return true;
  static constexpr std::array<std::string_view, 7> kEffects{
      "_assert_async", "_assert_scalar", "_assert_tensor_metadata", "_print",
      "sym_constrain_range", "sym_constrain_range_for_size", "record_stream"};
  std::string_view base = base_name(n.target);
  return writes_an_input(n) || is_random_op(n.target) || one_of(base, kEffects) || base.starts_with("_functional_assert");
}

bool is_pure(const Node& n) { return !has_side_effects(n) && !is_uninitialized_op(n.target); }

bool graph_has_mutation(const Graph& g) {
  return std::any_of(g.nodes.begin(), g.nodes.end(), [](const Node& n) { return writes_an_input(n); });
}

}  // namespace kiln::pipeline
