// Each strategy on small graphs, with made-up predicates evaluated in this
// process ("interesting while the graph still holds a sin"), so what is
// tested is the strategy's reduction, not the compiler.
#include <QtTest/QtTest>

#include <algorithm>

#include "minifier/ddmin.h"
#include "minifier/minify.h"
#include "minify_test_util.h"

using namespace kiln;
using namespace kiln::minify;

namespace {

const char* kChain = R"(
class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[8, 16]", w: "f32[8, 16]"):
        mul: "f32[8, 16]" = torch.ops.aten.mul.Tensor(x, w)
        cos: "f32[8, 16]" = torch.ops.aten.cos.default(mul)
        sin: "f32[8, 16]" = torch.ops.aten.sin.default(cos)
        exp: "f32[8, 16]" = torch.ops.aten.exp.default(sin)
        neg: "f32[8, 16]" = torch.ops.aten.neg.default(exp)
        tanh: "f32[8, 16]" = torch.ops.aten.tanh.default(x)
        add: "f32[8, 16]" = torch.ops.aten.add.Tensor(neg, tanh)
        return (add, tanh)
)";

bool has_target(const Candidate& c, const std::string& target) {
  for (const Node& n : c.graph.nodes)
    if (n.op == OpKind::CallFunction && n.target == target) return true;
  return false;
}

// Fails (as an accuracy failure) while `pred` holds.
Evaluator::CheckFn failing_while(std::function<bool(const Candidate&)> pred) {
  return [pred](const Candidate& c) {
    if (pred(c)) return Verdict{Verdict::Outcome::Fail, "accuracy", "accuracy", "made up"};
    return Verdict{Verdict::Outcome::Pass, "", "", ""};
  };
}

Expected<MinifyResult> run(const Candidate& c, std::vector<std::string> strategies, Evaluator::CheckFn check, int jobs = 1) {
  MinifyOptions o;
  o.in_process = true;
  o.check = std::move(check);
  o.strategies = std::move(strategies);
  o.jobs = jobs;
  return minify::minify(c, o);
}

}  // namespace

class TestMinifyStrategies : public QObject {
  Q_OBJECT
 private slots:
  void truncate_cuts_after_the_failing_node() {
    Candidate c = test::candidate_of(kChain);
    auto r = run(c, {"truncate"}, failing_while([](const Candidate& k) { return has_target(k, "aten::sin.default"); }));
    QVERIFY2(r.ok(), r.status().message().c_str());
    // Only what sin reads is left, and sin is the output.
    QCOMPARE(test::op_targets(r->result.graph),
             (std::vector<std::string>{"aten::mul.Tensor", "aten::cos.default", "aten::sin.default"}));
    QCOMPARE(output_items(r->result.graph).size(), size_t(1));
    QCOMPARE(r->steps.size(), size_t(1));
    QCOMPARE(r->steps[0].strategy, std::string("truncate"));
    // Bisection: a handful of evaluations, not one per node.
    QVERIFY(r->stats.oracle_calls <= 6);
  }

  void replace_with_inputs_feeds_recorded_values() {
    // The output is sin: greedily, sin alone, fed with what cos computed.
    Candidate c = test::candidate_of(R"(
class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[8, 16]", w: "f32[8, 16]"):
        mul: "f32[8, 16]" = torch.ops.aten.mul.Tensor(x, w)
        cos: "f32[8, 16]" = torch.ops.aten.cos.default(mul)
        sin: "f32[8, 16]" = torch.ops.aten.sin.default(cos)
        return (sin,)
)");
    auto r = run(c, {"replace-with-inputs"}, failing_while([](const Candidate& k) { return has_target(k, "aten::sin.default"); }));
    QVERIFY2(r.ok(), r.status().message().c_str());
    QCOMPARE(test::op_targets(r->result.graph), std::vector<std::string>{"aten::sin.default"});
    QCOMPARE(r->result.inputs.size(), size_t(1));
    Tensor mul = test::call1("aten::mul.Tensor", {c.inputs[0], c.inputs[1]});
    Tensor cos = test::call1("aten::cos.default", {mul});
    QCOMPARE(test::values(r->result.inputs[0]), test::values(cos));
    QCOMPARE(r->result.graph.nodes[0].name, std::string("cos"));
    QCOMPARE(r->stats.oracle_calls, 2);  // the input, then the greedy candidate
  }

  void replace_with_inputs_by_ddmin() {
    // sin must stay computed and reach an output: mul and cos become inputs,
    // tanh (read by add) too; the path sin -> exp -> neg -> add stays.
    Candidate c = test::candidate_of(kChain);
    auto r = run(c, {"replace-with-inputs"}, failing_while([](const Candidate& k) { return has_target(k, "aten::sin.default"); }));
    QVERIFY2(r.ok(), r.status().message().c_str());
    QCOMPARE(test::op_targets(r->result.graph),
             (std::vector<std::string>{"aten::sin.default", "aten::exp.default", "aten::neg.default", "aten::add.Tensor"}));
  }

  void remove_outputs_keeps_what_fails() {
    Candidate c = test::candidate_of(kChain);
    auto r = run(c, {"remove-outputs"}, failing_while([](const Candidate& k) { return has_target(k, "aten::tanh.default"); }));
    QVERIFY2(r.ok(), r.status().message().c_str());
    // Output 1 (tanh) alone still holds tanh; the rest of the graph went with output 0.
    QCOMPARE(test::op_targets(r->result.graph), std::vector<std::string>{"aten::tanh.default"});
    QCOMPARE(r->result.inputs.size(), size_t(1));  // w was only read by the removed part
  }

  void dead_code_and_unused_inputs() {
    Candidate c = test::candidate_of(R"(
class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[4]", unused: "f32[4]"):
        sin: "f32[4]" = torch.ops.aten.sin.default(x)
        dead: "f32[4]" = torch.ops.aten.cos.default(x)
        return (sin,)
)");
    auto always = failing_while([](const Candidate&) { return true; });
    auto r = run(c, {"dead-code"}, always);
    QVERIFY2(r.ok(), r.status().message().c_str());
    QCOMPARE(test::op_targets(r->result.graph), std::vector<std::string>{"aten::sin.default"});
    QCOMPARE(r->result.inputs.size(), size_t(2));
    r = run(c, {"unused-inputs"}, always);
    QVERIFY2(r.ok(), r.status().message().c_str());
    QCOMPARE(r->result.inputs.size(), size_t(1));
    QCOMPARE(placeholders(r->result.graph).size(), size_t(1));
  }

  void consolidate_inputs_merges_equal_tensors() {
    Candidate c = test::candidate_of(R"(
class GraphModule(torch.nn.Module):
    def forward(self, a: "f32[4]", b: "f32[4]", d: "f32[4]"):
        add: "f32[4]" = torch.ops.aten.add.Tensor(a, b)
        mul: "f32[4]" = torch.ops.aten.mul.Tensor(add, d)
        return (mul,)
)");
    c.inputs[1] = compact_copy(c.inputs[0]);  // b equals a; d differs
    auto r = run(c, {"consolidate-inputs"}, failing_while([](const Candidate&) { return true; }));
    QVERIFY2(r.ok(), r.status().message().c_str());
    QCOMPARE(r->result.inputs.size(), size_t(2));
    const Node& add = r->result.graph[r->result.graph.find("add")];
    QCOMPARE(add.args[0].node_id(), add.args[1].node_id());
  }

  void constant_inputs_become_full() {
    Candidate c = test::candidate_of(R"(
class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[2, 3]", c: "f32[2, 3]"):
        add: "f32[2, 3]" = torch.ops.aten.add.Tensor(x, c)
        return (add,)
)");
    c.inputs[1] = Tensor::full({2, 3}, Scalar(2.5), DType::Float32);
    auto r = run(c, {"constant-inputs"}, failing_while([](const Candidate&) { return true; }));
    QVERIFY2(r.ok(), r.status().message().c_str());
    QCOMPARE(r->result.inputs.size(), size_t(1));
    QCOMPARE(test::op_targets(r->result.graph), (std::vector<std::string>{"aten::full.default", "aten::add.Tensor"}));
    const Node& full = r->result.graph[r->result.graph.find("c")];
    QCOMPARE(full.args[1].f, 2.5);
  }

  void simplify_dtypes_to_float32() {
    Candidate c = test::candidate_of(R"(
class GraphModule(torch.nn.Module):
    def forward(self, x: "f64[4]", y: "f32[4]"):
        add: "f64[4]" = torch.ops.aten.add.Tensor(x, y)
        return (add,)
)");
    auto r = run(c, {"simplify-dtypes"}, failing_while([](const Candidate&) { return true; }));
    QVERIFY2(r.ok(), r.status().message().c_str());
    QCOMPARE(r->result.inputs[0].dtype(), DType::Float32);
    QCOMPARE(r->result.graph[r->result.graph.find("add")].meta.val.tensor.dtype, std::string("float32"));
    // A predicate that needs the float64 input keeps it.
    r = run(c, {"simplify-dtypes"}, failing_while([](const Candidate& k) { return k.inputs[0].dtype() == DType::Float64; }));
    QVERIFY(r.ok());
    QCOMPARE(r->result.inputs[0].dtype(), DType::Float64);
  }

  void shrink_shapes_to_one_element_or_halves() {
    Candidate c = test::candidate_of(kChain);
    auto r = run(c, {"shrink-shapes"}, failing_while([](const Candidate&) { return true; }));
    QVERIFY2(r.ok(), r.status().message().c_str());
    QCOMPARE(r->result.inputs[0].sizes(), (Shape{1, 1}));
    QCOMPARE(r->result.inputs[1].sizes(), (Shape{1, 1}));
    QCOMPARE(r->stats.oracle_calls, 2);  // the input, then the one cut to single elements
    // Failing only with at least 16 columns: the rows of x and w (tied by
    // mul) halve together down to 1, the columns stay.
    r = run(c, {"shrink-shapes"}, failing_while([](const Candidate& k) { return k.inputs[0].sizes()[1] >= 16; }));
    QVERIFY2(r.ok(), r.status().message().c_str());
    QCOMPARE(r->result.inputs[0].sizes(), (Shape{1, 16}));
    QCOMPARE(r->result.inputs[1].sizes(), (Shape{1, 16}));
  }

  void shrink_shapes_respects_spelled_out_sizes() {
    // view spells the sizes out: no cut passes the meta functions, none is evaluated.
    Candidate c = test::candidate_of(R"(
class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[4, 6]"):
        view: "f32[24]" = torch.ops.aten.view.default(x, [24])
        return (view,)
)");
    auto r = run(c, {"shrink-shapes"}, failing_while([](const Candidate&) { return true; }));
    QVERIFY(r.ok());
    QCOMPARE(r->result.inputs[0].sizes(), (Shape{4, 6}));
    QCOMPARE(r->stats.oracle_calls, 1);  // only the input itself
  }

  void localize_finds_the_first_divergent_node() {
    // A real accuracy bug (Kiln's CPU code generator adds 1 to relu) deep in a
    // graph: one recording, then the node alone.
    Candidate c = test::candidate_of(R"(
class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[4, 8]", w: "f32[8, 8]"):
        mm: "f32[4, 8]" = torch.ops.aten.mm.default(x, w)
        sin: "f32[4, 8]" = torch.ops.aten.sin.default(mm)
        relu: "f32[4, 8]" = torch.ops.aten.relu.default(sin)
        exp: "f32[4, 8]" = torch.ops.aten.exp.default(relu)
        sum_1: "f32[4]" = torch.ops.aten.sum.dim_IntList(exp, [1])
        return (sum_1,)
)");
    MinifyOptions o;
    o.in_process = true;
    o.predicate.kind = CheckKind::Accuracy;
    o.predicate.inject_bug = "relu:accuracy";
    o.strategies = {"localize"};
    auto r = minify::minify(c, o);
    QVERIFY2(r.ok(), r.status().message().c_str());
    QCOMPARE(test::op_targets(r->result.graph), std::vector<std::string>{"aten::relu.default"});
    QCOMPARE(r->steps.size(), size_t(1));
    QVERIFY(r->steps[0].description.find("relu") != std::string::npos);
    QCOMPARE(r->stats.reference_runs, 1);
    QVERIFY(r->stats.oracle_calls <= 3);
  }

  void progress_reports_and_cancellation() {
    Candidate c = test::candidate_of(kChain);
    std::atomic<bool> cancel{false};
    std::vector<Progress> seen;
    MinifyOptions o;
    o.in_process = true;
    o.check = failing_while([](const Candidate& k) { return has_target(k, "aten::sin.default"); });
    o.cancel = &cancel;
    o.progress = [&](const Progress& p) {
      seen.push_back(p);
      if (p.step) cancel = true;  // stop after the first accepted step
    };
    auto r = minify::minify(c, o);
    QVERIFY2(r.ok(), r.status().message().c_str());
    QVERIFY(r->cancelled);
    QCOMPARE(r->steps.size(), size_t(1));
    auto step = std::find_if(seen.begin(), seen.end(), [](const Progress& p) { return p.step != nullptr; });
    QVERIFY(step != seen.end());
    QCOMPARE(step->accepted_steps, 1);
    QCOMPARE(step->nodes, op_count(r->result.graph));
    QVERIFY(!step->strategy.empty());
    QVERIFY(seen.back().oracle_calls >= 1);
  }

  void all_strategies_reach_a_fixpoint_with_parallel_jobs() {
    // -j 3 must find what -j 1 finds (first interesting in order).
    Candidate c = test::candidate_of(kChain);
    auto pred = failing_while([](const Candidate& k) { return has_target(k, "aten::exp.default"); });
    auto one = run(c, {}, pred, 1), three = run(c, {}, pred, 3);
    QVERIFY(one.ok() && three.ok());

    QCOMPARE(test::op_targets(one->result.graph), std::vector<std::string>{"aten::exp.default"});
    QCOMPARE(test::op_targets(three->result.graph), test::op_targets(one->result.graph));
    QCOMPARE(three->result.inputs[0].sizes(), one->result.inputs[0].sizes());
  }

  void input_that_does_not_fail_is_an_error() {
    Candidate c = test::candidate_of(kChain);
    auto r = run(c, {}, failing_while([](const Candidate&) { return false; }));
    QVERIFY(!r.ok());
    QVERIFY(r.status().message().find("does not fail") != std::string::npos);
  }
};

QTEST_GUILESS_MAIN(TestMinifyStrategies)
#include "test_minify_strategies.moc"
