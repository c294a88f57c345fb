// The pattern rewriter: captures, literals, keyword arguments, declining,
// where new nodes go and what they name as provenance, sweeps to a fixed
// point, and interior nodes other readers still need.
#include "compiler/passes/pattern_rewriter.h"
#include "compiler/pipeline/provenance.h"
#include "core/graph/verify.h"
#include "pass_test_util.h"

using namespace kiln;
using namespace kiln::pipeline;
using namespace kiln::test;

namespace {

using P = Pattern;

// Applies `rules` as a pass would (provenance reset first); checks the result
// verifies and names only nodes of the input. Returns the printed graph.
std::string rewrite(Graph& g, const std::vector<RewriteRule>& rules, RewriteStats* stats = nullptr, int sweeps = 8) {
  reset_provenance(g);
  Graph before = g;
  RewriteStats s = apply_rewrite_rules(g, rules, nullptr, sweeps);
  if (stats) *stats = s;
  for (const Diagnostic& d : verify(g)) qFatal("%s", d.to_string().c_str());
  for (const Diagnostic& d : check_provenance(before, g)) qFatal("%s", d.to_string().c_str());
  return print_graph_module(g);
}

RewriteRule forward_rule(std::string name, Pattern p, std::string capture) {
  return {std::move(name), std::move(p), [capture](const Match& m, Rewriter& r) { return r.replace_with(m.value(capture)); }};
}

RewriteRule emit_rule(std::string name, Pattern p, std::string op, std::string capture) {
  return {std::move(name), std::move(p), [op, capture](const Match& m, Rewriter& r) {
            GraphEmitter& em = r.emitter();
            return r.replace_with(em.call1(op, {r.var(m.value(capture))}));
          }};
}

}  // namespace

class TestPatternRewriter : public QObject {
  Q_OBJECT
 private slots:
  void a_capture_named_twice_is_one_node() {
    Graph g = graph_of("a: \"f32[3]\", b: \"f32[3]\"",
                       "        sub: \"f32[3]\" = torch.ops.aten.sub.Tensor(a, a)\n"
                       "        sub_1: \"f32[3]\" = torch.ops.aten.sub.Tensor(a, b)\n"
                       "        return (sub, sub_1)\n");
    RewriteStats stats;
    std::string text = rewrite(g, {emit_rule("sub-self", P::call("aten::sub.Tensor", {P::value("x"), P::value("x")}),
                                             "aten::zeros_like.default", "x")},
                               &stats);
    QCOMPARE(stats.applied, size_t(1));
    KILN_CHECK_LINES(text, {"zeros_like: ", "sub_1: ", "return (zeros_like, sub_1)"});
  }

  void literals_match_ints_and_floats_by_value() {
    Graph g = graph_of("x: \"f32[3]\"",
                       "        mul: \"f32[3]\" = torch.ops.aten.mul.Scalar(x, 2)\n"
                       "        mul_1: \"f32[3]\" = torch.ops.aten.mul.Scalar(x, 2.0)\n"
                       "        mul_2: \"f32[3]\" = torch.ops.aten.mul.Scalar(x, 2.5)\n"
                       "        mul_3: \"f32[3]\" = torch.ops.aten.mul.Scalar(x, True)\n"
                       "        return (mul, mul_1, mul_2, mul_3)\n");
    RewriteStats stats;
    std::string text = rewrite(g, {forward_rule("mul-two", P::call("aten::mul.Scalar", {P::value("x"), P::literal(2)}), "x")}, &stats);
    QCOMPARE(stats.per_rule["mul-two"], size_t(2));
    KILN_CHECK_LINES(text, {"return (x, x, mul_2, mul_3)"});
  }

  void scalars_are_captured_and_keyword_arguments_block_a_match() {
    Graph g = graph_of("x: \"f32[3]\", y: \"f32[3]\"",
                       "        add: \"f32[3]\" = torch.ops.aten.add.Tensor(x, y, alpha = 2)\n"
                       "        add_1: \"f32[3]\" = torch.ops.aten.add.Scalar(x, 3.5)\n"
                       "        return (add, add_1)\n");
    std::vector<double> seen;
    RewriteRule any_add{"any-add", P::call("aten::add.Tensor", {P::value("a"), P::value("b")}),
                        [](const Match&, Rewriter&) { return false; }};
    RewriteRule add_scalar{"add-scalar", P::call("aten::add.Scalar", {P::value("a"), P::scalar("c")}),
                           [&seen](const Match& m, Rewriter&) {
                             seen.push_back(m.scalar("c").f);
                             return false;  // declines: nothing changes
                           }};
    RewriteStats stats;
    uint64_t hash = structural_hash(g);
    rewrite(g, {any_add, add_scalar}, &stats);
    QCOMPARE(stats.applied, size_t(0));
    QCOMPARE(seen, (std::vector<double>{3.5}));
    QCOMPARE(structural_hash(g), hash);
  }

  void new_nodes_go_before_the_root_and_name_the_match() {
    Graph g = graph_of("x: \"f32[3]\"",
                       "        log: \"f32[3]\" = torch.ops.aten.log.default(x)\n"
                       "        sin: \"f32[3]\" = torch.ops.aten.sin.default(x)\n"
                       "        exp: \"f32[3]\" = torch.ops.aten.exp.default(log)\n"
                       "        add: \"f32[3]\" = torch.ops.aten.add.Tensor(exp, sin)\n"
                       "        return (add,)\n");
    g[g.find("exp")].meta.scope = "block.act";
    std::string text = rewrite(g, {emit_rule("exp-log", P::call("aten::exp.default", {P::call("aten::log.default", {P::value("x")})}),
                                             "aten::abs.default", "x")});
    // FX names a node after a Python builtin with a suffix (abs_1), as the reference traces' sum_1 shows.
    KILN_CHECK_LINES(text, {"sin: ", "abs_1: \"f32[3][1]cpu\" = torch.ops.aten.abs.default(x)", "add: \"f32[3]\" = torch.ops.aten.add.Tensor(abs_1, sin)"});
    QVERIFY(absent(text, "log"));
    const Node& abs = g[g.find("abs_1")];
    QCOMPARE(abs.meta.from, (std::vector<std::string>{"exp", "log"}));
    QCOMPARE(abs.meta.scope, std::string("block.act"));
  }

  void sweeps_repeat_until_nothing_applies() {
    std::vector<RewriteRule> rules = {
        emit_rule("mul-minus-one", P::call("aten::mul.Scalar", {P::value("x"), P::literal(-1)}), "aten::neg.default", "x"),
        forward_rule("neg-neg", P::call("aten::neg.default", {P::call("aten::neg.default", {P::value("x")})}), "x")};
    const char* body =
        "        neg: \"f32[3]\" = torch.ops.aten.neg.default(x)\n"
        "        mul: \"f32[3]\" = torch.ops.aten.mul.Scalar(neg, -1)\n"
        "        return (mul,)\n";
    // The neg made for `mul` is only a root to match in the next sweep.
    Graph one = graph_of("x: \"f32[3]\"", body);
    KILN_CHECK_LINES(rewrite(one, rules, nullptr, 1), {"neg_1: ", "return (neg_1,)"});
    Graph two = graph_of("x: \"f32[3]\"", body);
    RewriteStats stats;
    KILN_CHECK_LINES(rewrite(two, rules, &stats), {"return (x,)"});
    QCOMPARE(stats.applied, size_t(2));
    QCOMPARE(two.size(), size_t(2));
  }

  void matching_sees_earlier_replacements_in_the_same_sweep() {
    Graph g = graph_of("x: \"f32[3]\"",
                       "        neg: \"f32[3]\" = torch.ops.aten.neg.default(x)\n"
                       "        neg_1: \"f32[3]\" = torch.ops.aten.neg.default(neg)\n"
                       "        neg_2: \"f32[3]\" = torch.ops.aten.neg.default(neg_1)\n"
                       "        neg_3: \"f32[3]\" = torch.ops.aten.neg.default(neg_2)\n"
                       "        return (neg_3, neg)\n");
    RewriteStats stats;
    std::string text = rewrite(g, {forward_rule("neg-neg", P::call("aten::neg.default", {P::call("aten::neg.default", {P::value("x")})}), "x")},
                               &stats, 1);
    // neg_1 -> x; neg_3 = neg(neg(neg_1 -> x)) -> x. `neg` stays: the output reads it.
    QCOMPARE(stats.applied, size_t(2));
    KILN_CHECK_LINES(text, {"neg: ", "return (x, neg)"});
    QCOMPARE(g.size(), size_t(3));
  }

  void a_replacement_the_meta_functions_reject_is_declined() {
    Graph g = graph_of("x: \"f32[3]\"",
                       "        sin: \"f32[3]\" = torch.ops.aten.sin.default(x)\n"
                       "        return (sin,)\n");
    RewriteStats stats;
    uint64_t hash = structural_hash(g);
    rewrite(g, {{"bad", P::call("aten::sin.default", {P::value("x")}), [](const Match& m, Rewriter& r) {
                   GraphEmitter& em = r.emitter();
                   Var x = r.var(m.value("x"));
                   return r.replace_with(em.call1("aten::mm.default", {x, x}));  // mm of vectors: the meta function throws
                 }}},
            &stats);
    QCOMPARE(stats.applied, size_t(0));
    QCOMPARE(structural_hash(g), hash);
  }
};

QTEST_GUILESS_MAIN(TestPatternRewriter)
#include "test_pattern_rewriter.moc"
