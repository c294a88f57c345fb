#include "compiler/passes/simplify_algebra.h"

#include "compiler/passes/op_properties.h"

namespace kiln::pipeline {

namespace {

using P = Pattern;

// `op(x, identity)` -> x, when that keeps the root's type.
RewriteRule identity_rule(const std::string& op, double identity) {
  return {"identity:" + op, P::call(op, {P::value("x"), P::literal(identity)}),
          [](const Match& m, Rewriter& r) { return r.same_type_as_root(m.value("x")) && r.replace_with(m.value("x")); }};
}

std::vector<RewriteRule> make_rules() {
  std::vector<RewriteRule> rules;
  for (const char* op : {"aten::mul.Tensor", "aten::mul.Scalar", "aten::div.Tensor", "aten::div.Scalar"})
    rules.push_back(identity_rule(op, 1));
  for (const char* op : {"aten::add.Tensor", "aten::add.Scalar", "aten::sub.Tensor", "aten::sub.Scalar"})
    rules.push_back(identity_rule(op, 0));
  rules.push_back({"neg-neg", P::call("aten::neg.default", {P::call("aten::neg.default", {P::value("x")})}),
                   [](const Match& m, Rewriter& r) { return r.same_type_as_root(m.value("x")) && r.replace_with(m.value("x")); }});
  for (const char* op : {"aten::mul.Tensor", "aten::mul.Scalar"}) {
    rules.push_back({std::string("mul-minus-one:") + op, P::call(op, {P::value("x"), P::literal(-1)}),
                     [](const Match& m, Rewriter& r) {
                       if (!r.same_type_as_root(m.value("x"))) return false;
                       GraphEmitter& em = r.emitter();
                       return r.replace_with(em.call1("aten::neg.default", {r.var(m.value("x"))}));
                     }});
  }
  rules.push_back({"neg-sub", P::call("aten::neg.default", {P::call("aten::sub.Tensor", {P::value("a"), P::value("b")})}),
                   [](const Match& m, Rewriter& r) {
                     GraphEmitter& em = r.emitter();
                     Var a = r.var(m.value("a")), b = r.var(m.value("b"));
                     if (!a.valid() || !b.valid()) return false;
                     Var swapped = em.call1("aten::sub.Tensor", {b, a});
                     return r.same_type_as_root(em.node(swapped)) && r.replace_with(swapped);
                   }});
  return rules;
}

}  // namespace

const std::vector<RewriteRule>& algebraic_rules() {
  static const std::vector<RewriteRule> rules = make_rules();
  return rules;
}

PassResult simplify_algebra(Graph& g, const PassContext& ctx) {
  if (graph_has_mutation(g)) return {};
  RewriteStats stats = apply_rewrite_rules(g, algebraic_rules(), ctx.constants);
  if (stats.applied == 0) return {};
  std::string summary;
  for (const auto& [rule, count] : stats.per_rule)
    summary += (summary.empty() ? "" : ", ") + rule + " x" + std::to_string(count);
  return {true, summary};
}

}  // namespace kiln::pipeline
