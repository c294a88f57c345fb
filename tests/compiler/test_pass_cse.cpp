// Common subexpression elimination: what merges (same target, args, kwargs in
// any order, chains in one pass), what never does (random, empty, different
// constants), mutation barriers, and the merged node's provenance.
#include "compiler/passes/common_subexpression_elimination.h"
#include "pass_test_util.h"

using namespace kiln;
using namespace kiln::test;

class TestPassCse : public QObject {
  Q_OBJECT
 private slots:
  void merges_duplicates_and_chains_in_one_pass() {
    Graph g = graph_of("x: \"f32[2, 3]\"",
                       "        sin: \"f32[2, 3]\" = torch.ops.aten.sin.default(x)\n"
                       "        cos: \"f32[2, 3]\" = torch.ops.aten.cos.default(sin)\n"
                       "        sin_1: \"f32[2, 3]\" = torch.ops.aten.sin.default(x)\n"
                       "        cos_1: \"f32[2, 3]\" = torch.ops.aten.cos.default(sin_1)\n"
                       "        sum_1: \"f32[2, 1]\" = torch.ops.aten.sum.dim_IntList(cos, [1], keepdim = True, dtype = torch.float32)\n"
                       "        sum_2: \"f32[2, 1]\" = torch.ops.aten.sum.dim_IntList(cos_1, [1], dtype = torch.float32, keepdim = True)\n"
                       "        add: \"f32[2, 1]\" = torch.ops.aten.add.Tensor(sum_1, sum_2)\n"
                       "        return (add, cos_1)\n");
    Graph before = g;
    PassRun r = run_pass("cse", g);
    QVERIFY2(r.status.ok(), r.status.message().c_str());
    QCOMPARE(r.stage.summary, std::string("merged 3 nodes"));
    KILN_CHECK_LINES(r.printed, {"sin: ", "cos: ", "sum_1: ", "add: \"f32[2, 1]\" = torch.ops.aten.add.Tensor(sum_1, sum_1)",
                                 "return (add, cos)"});
    QVERIFY(absent(r.printed, "sin_1") && absent(r.printed, "sum_2"));
    // The kept node names both nodes it stands for.
    const Node& cos = g[g.find("cos")];
    QCOMPARE(cos.meta.from, (std::vector<std::string>{"cos", "cos_1"}));
    QCOMPARE(g[g.find("x")].meta.from, (std::vector<std::string>{"x"}));
    KILN_VERIFY_EMPTY(compare_random_runs(before, g));
  }

  void different_constants_stay_apart() {
    // 1 and 1.0 give different dtypes for integer tensors; 0.0 and -0.0 differ in sign.
    Graph g = graph_of("x: \"f32[3]\"",
                       "        add: \"f32[3]\" = torch.ops.aten.add.Scalar(x, 1)\n"
                       "        add_1: \"f32[3]\" = torch.ops.aten.add.Scalar(x, 1.0)\n"
                       "        mul: \"f32[3]\" = torch.ops.aten.mul.Scalar(x, 0.0)\n"
                       "        mul_1: \"f32[3]\" = torch.ops.aten.mul.Scalar(x, -0.0)\n"
                       "        sum_1: \"f32[]\" = torch.ops.aten.sum.dim_IntList(x, [0])\n"
                       "        sum_2: \"f32[1]\" = torch.ops.aten.sum.dim_IntList(x, [0], True)\n"
                       "        return (add, add_1, mul, mul_1, sum_1, sum_2)\n");
    PassRun r = run_pass("cse", g);
    QVERIFY2(r.status.ok(), r.status.message().c_str());
    QVERIFY(!r.stage.changed);
  }

  void random_and_uninitialized_ops_never_merge() {
    Graph g = graph_of("x: \"f32[3]\"",
                       "        rand: \"f32[3]\" = torch.ops.aten.rand.default([3])\n"
                       "        rand_1: \"f32[3]\" = torch.ops.aten.rand.default([3])\n"
                       "        empty: \"f32[3]\" = torch.ops.aten.empty.memory_format([3])\n"
                       "        empty_1: \"f32[3]\" = torch.ops.aten.empty.memory_format([3])\n"
                       "        return (rand, rand_1, empty, empty_1)\n");
    PassRun r = run_pass("cse", g);
    QVERIFY(!r.stage.changed);
  }

  void a_write_is_a_barrier() {
    Graph g = graph_of("x: \"f32[3]\"",
                       "        sin: \"f32[3]\" = torch.ops.aten.sin.default(x)\n"
                       "        sin_1: \"f32[3]\" = torch.ops.aten.sin.default(x)\n"
                       "        add_: \"f32[3]\" = torch.ops.aten.add_.Tensor(x, 1)\n"
                       "        sin_2: \"f32[3]\" = torch.ops.aten.sin.default(x)\n"
                       "        rand: \"f32[3]\" = torch.ops.aten.rand.default([3])\n"
                       "        sin_3: \"f32[3]\" = torch.ops.aten.sin.default(x)\n"
                       "        return (sin, sin_1, sin_2, sin_3)\n");
    PassRun r = run_pass("cse", g);
    QVERIFY2(r.status.ok(), r.status.message().c_str());
    // sin_1 merges into sin; sin_2 (after the write) stays; a random op is no barrier, so sin_3 merges into sin_2.
    QCOMPARE(r.stage.summary, std::string("merged 2 nodes"));
    KILN_CHECK_LINES(r.printed, {"add_: ", "sin_2: ", "return (sin, sin, sin_2, sin_2)"});
  }

  void torch_level_calls_are_left_alone() {
    Graph g = graph_of("x: \"f32[3]\"",
                       "        sin: \"f32[3]\" = torch.sin(x)\n"
                       "        sin_1: \"f32[3]\" = torch.sin(x)\n"
                       "        return (sin, sin_1)\n");
    PassRun r = run_pass("cse", g);
    QVERIFY(!r.stage.changed);
  }

  void multi_output_nodes_merge_with_their_getitems() {
    Graph g = graph_of("x: \"f32[4, 3]\"",
                       "        max_1 = torch.ops.aten.max.dim(x, 1)\n"
                       "        getitem: \"f32[4]\" = max_1[0]\n"
                       "        max_2 = torch.ops.aten.max.dim(x, 1)\n"
                       "        getitem_1: \"f32[4]\" = max_2[0]\n"
                       "        getitem_2: \"i64[4]\" = max_2[1]\n"
                       "        return (getitem, getitem_1, getitem_2)\n");
    Graph before = g;
    PassRun r = run_pass("cse", g);
    QVERIFY2(r.status.ok(), r.status.message().c_str());
    QCOMPARE(r.stage.summary, std::string("merged 2 nodes"));
    KILN_CHECK_LINES(r.printed, {"getitem_2: \"i64[4]\" = max_1[1]", "return (getitem, getitem, getitem_2)"});
    KILN_VERIFY_EMPTY(compare_random_runs(before, g));
  }
};

QTEST_GUILESS_MAIN(TestPassCse)
#include "test_pass_cse.moc"
