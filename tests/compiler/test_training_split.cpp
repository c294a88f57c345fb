// split_for_training (compiler/pipeline/training_split.h): the one decision
// whether a region trains through a joint graph, and the split with the
// partitioner asked for. kiln-cli stages, the workbench and the runtime all
// take it from here, so its reasons are what each of them shows.
#include <QtTest>

#include <random>

#include "compiler/aot/derivatives.h"
#include "compiler/pipeline/emitter.h"
#include "compiler/pipeline/training_split.h"
#include "core/ops/registry.h"
#include "loopir_test_util.h"
#include "test_support.h"

using namespace kiln;
using namespace kiln::pipeline;
using kiln::pipeline::Var;

namespace {

// x [4, 3] @ w [3, 5], relu, exp: a value the min-cut partitioner recomputes
// in the backward (the relu) where the default one saves it.
Graph linear_relu_exp() {
  Graph g;
  GraphEmitter e(g);
  std::mt19937 rng(1);
  Var x = e.placeholder("x", test::random_f32({4, 3}, rng)), w = e.placeholder("w", test::random_f32({3, 5}, rng));
  e.output({e.call1("aten::exp.default", {e.call1("aten::relu.default", {e.call1("aten::mm.default", {x, w})})})});
  return g;
}

}  // namespace

class TestTrainingSplit : public QObject {
  Q_OBJECT
 private slots:
  void partitioner_names() {
    QVERIFY(partitioner_named("default") == Partitioner::Default);
    QVERIFY(partitioner_named("min-cut") == Partitioner::MinCut);
    QVERIFY(!partitioner_named("mincut"));
    QCOMPARE(std::string(partitioner_name(Partitioner::MinCut)), std::string("min-cut"));
  }

  void no_input_requiring_grad_is_inference() {
    TrainingSplit s = split_for_training(linear_relu_exp(), {{false, false}});
    QVERIFY(!s.trains());
    QCOMPARE(s.inference_because, std::string("no input requires grad (an inference graph)"));
  }

  void a_region_that_changes_grad_mode_trains_on_its_torch_level_graph() {
    TrainingOptions o;
    o.requires_grad = {false, true};
    o.changes_grad_mode = true;
    TrainingSplit s = split_for_training(linear_relu_exp(), o);
    QVERIFY(!s.trains());
    QVERIFY2(s.inference_because.find("grad mode changes inside the region") != std::string::npos, s.inference_because.c_str());
  }

  void both_partitioners_split_the_same_joint_graph() {
    TrainingOptions o;
    o.requires_grad = {false, true};
    TrainingSplit plain = split_for_training(linear_relu_exp(), o);
    QVERIFY2(plain.trains(), plain.inference_because.c_str());
    QCOMPARE(plain.joint.num_primals, size_t(2));
    o.partitioner = Partitioner::MinCut;
    TrainingSplit min_cut = split_for_training(linear_relu_exp(), o);
    QVERIFY(min_cut.trains());
    QCOMPARE(min_cut.joint.graph.size(), plain.joint.graph.size());
    // The min-cut partitioner saves no more than the default one, and here recomputes something.
    QVERIFY(min_cut.partition.saved_bytes <= plain.partition.saved_bytes);
    QVERIFY(!min_cut.partition.recomputed.empty());
    QVERIFY(plain.partition.recomputed.empty());
  }

  void a_refused_joint_graph_says_why() {
    const std::string op = "aten::remainder.Scalar_Tensor";  // no derivative formula in Kiln
    QVERIFY2(op_registry().find(op) && !aot::find_derivative(op), "pick another op without a formula");
    Graph g;
    GraphEmitter e(g);
    std::mt19937 rng(2);
    Var x = e.placeholder("x", test::random_f32({3}, rng));
    e.output({e.call1("aten::sin.default", {e.call1(op, {2.0, x})})});
    TrainingSplit s = split_for_training(g, {{true}});
    QVERIFY(!s.trains());
    QVERIFY2(s.inference_because.find(op) != std::string::npos, s.inference_because.c_str());
  }
};

QTEST_GUILESS_MAIN(TestTrainingSplit)
#include "test_training_split.moc"
