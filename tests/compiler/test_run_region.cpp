// run_region() (compiler/pipeline/run_region.h): the pipeline's order, written
// once. What each entry point runs, in which order, what a skipped or failed
// step says, that the code it generates computes what the interpreter does,
// and that cancel stops it between steps.
#include <QtTest>

#include <atomic>
#include <random>

#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/emitter.h"
#include "compiler/pipeline/run_region.h"
#include "compiler/runtime/compiled_graph.h"
#include "loopir_test_util.h"
#include "nn_test_util.h"
#include "test_support.h"

using namespace kiln;
using namespace kiln::pipeline;
using kiln::pipeline::Var;

namespace {

// x [4, 3] @ w [3, 5], relu, exp.
Graph linear_relu_exp(std::vector<Tensor>* inputs = nullptr) {
  Graph g;
  GraphEmitter e(g);
  std::mt19937 rng(3);
  Tensor xt = test::random_f32({4, 3}, rng), wt = test::random_f32({3, 5}, rng);
  if (inputs) *inputs = {xt, wt};
  Var x = e.placeholder("x", xt), w = e.placeholder("w", wt);
  e.output({e.call1("aten::exp.default", {e.call1("aten::relu.default", {e.call1("aten::mm.default", {x, w})})})});
  return g;
}

// "aot_joint_graph", "forward cse", "backward llvm_ir": the stages' labels without pass numbers.
QStringList labels(const RegionRun& run) {
  QStringList out;
  for (const Stage& s : run.stages) out << QString::fromStdString((s.group.empty() ? "" : s.group + " ") + s.name);
  return out;
}

// softmax(q @ k^T * 0.25) @ v on [1, 2, 6, 4] tensors, as to_aten lowers hand-written attention.
Graph attention_4d() {
  Graph g;
  GraphEmitter e(g);
  std::mt19937 rng(5);
  Var q = e.placeholder("q", test::random_f32({1, 2, 6, 4}, rng)), k = e.placeholder("k", test::random_f32({1, 2, 6, 4}, rng)),
      v = e.placeholder("v", test::random_f32({1, 2, 6, 4}, rng));
  Var s = e.call1("aten::mul.Scalar", {e.call1("aten::matmul.default", {q, e.call1("aten::transpose.int", {k, int64_t(-2), int64_t(-1)})}), 0.25});
  e.output({e.call1("aten::matmul.default", {e.call1("aten::softmax.int", {s, int64_t(-1)}), v})});
  return g;
}

bool calls(const Graph& g, const std::string& target) {
  for (const Node& n : g.nodes)
    if (n.target == target) return true;
  return false;
}

RegionOptions loops_only() {
  RegionOptions o;
  o.codegen = RegionOptions::Codegen::Loops;
  return o;
}

}  // namespace

class TestRunRegion : public QObject {
  Q_OBJECT
 private slots:
  void training_region_runs_every_step_in_order() {
    TrainingOptions t;
    t.requires_grad = {false, true};
    std::vector<Stage> seen;
    RegionRun run = run_region(RegionInput::aten(linear_relu_exp(), t), loops_only(), [&](const Stage& s) { seen.push_back(s); });
    QVERIFY2(run.status.ok(), run.status.message().c_str());
    QVERIFY(run.trained);
    const QStringList l = labels(run);
    // The observer saw what the run kept, as it happened.
    QCOMPARE(seen.size(), run.stages.size());
    const QStringList expected_order = {"aot_joint_graph", "aot_forward_graph", "forward functionalize", "forward dce",
                                        "forward ir_post_fusion", "forward machine code", "aot_backward_graph",
                                        "backward decompose", "backward ir_pre_fusion", "backward machine code"};
    qsizetype at = -1;
    for (const QString& name : expected_order) {
      const qsizetype next = l.indexOf(name, at + 1);
      QVERIFY2(next > at, qPrintable(name + " after position " + QString::number(at) + " in: " + l.join(", ")));
      at = next;
    }
    QCOMPARE(run.parts.size(), size_t(2));
    QCOMPARE(run.parts[0].group, std::string("forward"));
    // The forward stage carries the partitioner's list of saved tensors.
    const Stage& forward = run.stages[size_t(l.indexOf("aot_forward_graph"))];
    QVERIFY(!forward.text.empty());
    QCOMPARE(forward.text, aot::describe_saved(run.partition));
    // Loop IR only: machine code is a skipped step that says so.
    for (const Stage& s : run.stages)
      if (s.name == "machine code") QVERIFY(s.outcome == Stage::Outcome::Skipped && !s.summary.empty());
  }

  // Training as on the GPU: attention fused before autodiff, kept whole through the halves' passes.
  void gpu_training_fuses_attention_before_the_joint_graph() {
    RegionOptions o = loops_only();
    o.gpu_training = true;
    RegionRun run = run_region(RegionInput::aten(attention_4d(), TrainingOptions{{true, true, true}}), o);
    QVERIFY2(run.status.ok(), run.status.message().c_str());
    const QStringList l = labels(run);
    QVERIFY2(l.indexOf("fuse_attention") == 0 && l.indexOf("aot_joint_graph") == 1, qPrintable(l.join(", ")));
    QVERIFY(calls(run.partition.forward, "aten::_scaled_dot_product_efficient_attention.default"));
    QVERIFY(calls(run.partition.backward, "aten::_scaled_dot_product_efficient_attention_backward.default"));
    const RegionPart* forward = run.part("forward");
    QVERIFY(forward && calls(forward->passes.graph, "aten::_scaled_dot_product_efficient_attention.default"));
    // Off: the CPU's training, unfused; and an inference graph is never rewritten.
    RegionRun cpu = run_region(RegionInput::aten(attention_4d(), TrainingOptions{{true, true, true}}), loops_only());
    QVERIFY(!labels(cpu).contains("fuse_attention"));
    QVERIFY(!calls(cpu.partition.forward, "aten::_scaled_dot_product_efficient_attention.default"));
    RegionRun inference = run_region(RegionInput::aten(attention_4d(), TrainingOptions{{false, false, false}}), o);
    QVERIFY(!labels(inference).contains("fuse_attention"));
  }

  void inference_skips_the_joint_graph_and_says_why() {
    RegionRun run = run_region(RegionInput::aten(linear_relu_exp(), TrainingOptions{{false, false}}), loops_only());
    QVERIFY(run.status.ok());
    QVERIFY(!run.trained);
    QCOMPARE(run.stages.front().name, std::string("aot_joint_graph"));
    QVERIFY(run.stages.front().outcome == Stage::Outcome::Skipped);
    QVERIFY2(run.inference_because.find("no input requires grad") != std::string::npos, run.inference_because.c_str());
    QCOMPARE(run.parts.size(), size_t(1));
    QCOMPARE(run.parts[0].group, std::string());
  }

  void machine_code_matches_the_interpreter() {
    std::vector<Tensor> inputs;
    Graph g = linear_relu_exp(&inputs);
    RegionOptions o;
    o.cpu.use_cache = false;
    o.cpu.keep_text = true;
    RegionRun run = run_region(RegionInput::single(g), o);
    QVERIFY2(run.status.ok(), run.status.message().c_str());
    const RegionPart* part = run.part("");
    QVERIFY(part && part->code);
    QVERIFY(labels(run).contains("llvm_ir_optimized") && labels(run).contains("assembly"));
    for (const Stage& s : run.stages)
      if (s.kind == StageKind::Code) QVERIFY2(!s.text.empty(), s.name.c_str());
    auto got = part->code->run(inputs);
    QVERIFY2(got.ok(), got.status().message().c_str());
    std::vector<Value> args(inputs.begin(), inputs.end());
    auto want = run_aten_graph(g, args);
    QVERIFY2(want.ok(), want.status().message().c_str());
    const std::string mismatch = test::close_report((*got)[0], test::values((*want)[0].to_tensor()), 1e-5, 1e-6);
    QVERIFY2(mismatch.empty(), mismatch.c_str());
  }

  void auto_codegen_leaves_large_graphs_at_loop_ir() {
    RegionOptions o;
    o.codegen = RegionOptions::Codegen::Auto;
    o.auto_kernels = 0;
    RegionRun run = run_region(RegionInput::single(linear_relu_exp()), o);
    QVERIFY(run.status.ok());
    const QStringList l = labels(run);
    QVERIFY2(l.contains("ir_post_fusion") && !l.contains("llvm_ir") && l.last() == "machine code", qPrintable(l.join(", ")));
    QVERIFY2(run.stages.back().summary.find("over 0") != std::string::npos, run.stages.back().summary.c_str());
    QVERIFY(!run.parts[0].code);
  }

  void a_joint_graph_is_partitioned_then_each_half_compiled() {
    TrainingOptions t;
    t.requires_grad = {true, true};
    RegionRun trained = run_region(RegionInput::aten(linear_relu_exp(), t), loops_only());
    QVERIFY(trained.trained);
    RegionRun run = run_region(RegionInput::from_joint(trained.joint, Partitioner::MinCut), loops_only());
    QVERIFY2(run.status.ok(), run.status.message().c_str());
    QCOMPARE(labels(run).first(), QString("aot_forward_graph"));
    QVERIFY(run.stages.front().summary.starts_with("min-cut partition"));
    QCOMPARE(run.parts.size(), size_t(2));
  }

  void without_graph_passes_only_the_split_runs() {
    TrainingOptions t;
    t.requires_grad = {true, false};
    RegionOptions o;
    o.graph_passes = false;
    o.codegen = RegionOptions::Codegen::None;
    RegionRun run = run_region(RegionInput::aten(linear_relu_exp(), t), o);
    QVERIFY(run.trained);
    QCOMPARE(labels(run), (QStringList{"aot_joint_graph", "aot_forward_graph", "aot_backward_graph"}));
    QCOMPARE(run.parts.size(), size_t(2));
    QCOMPARE(run.parts[1].passes.graph.size(), run.partition.backward.size());
  }

  void cancel_stops_between_steps() {
    std::atomic<bool> cancel = false;
    RegionOptions o = loops_only();
    o.cancel = &cancel;
    TrainingOptions t;
    t.requires_grad = {true, true};
    // Cancelled once the joint graph is shown: nothing after it runs.
    RegionRun run = run_region(RegionInput::aten(linear_relu_exp(), t), o, [&](const Stage& s) {
      if (s.name == "aot_joint_graph") cancel = true;
    });
    QVERIFY(run.cancelled);
    QCOMPARE(run.status.message(), std::string("cancelled"));
    QCOMPARE(labels(run), QStringList{"aot_joint_graph"});
    // Cancelled during the passes: the pass manager stops before the next application.
    cancel = false;
    RegionRun mid = run_region(RegionInput::single(linear_relu_exp()), o, [&](const Stage& s) {
      if (s.name == "decompose") cancel = true;
    });
    QVERIFY(mid.cancelled);
    QCOMPARE(labels(mid), (QStringList{"functionalize", "decompose"}));
  }

  void a_failing_partition_is_a_failed_stage() {
    aot::JointGraph broken;  // no graph at all: the partitioner refuses it
    RegionRun run = run_region(RegionInput::from_joint(broken, Partitioner::Default), loops_only());
    QVERIFY(!run.status.ok());
    QVERIFY2(run.status.message().starts_with("partition: "), run.status.message().c_str());
    QCOMPARE(run.stages.size(), size_t(1));
    QVERIFY(run.stages[0].outcome == Stage::Outcome::Failed);
  }
};

QTEST_GUILESS_MAIN(TestRunRegion)
#include "test_run_region.moc"
