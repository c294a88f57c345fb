// Constant folding: uniform results become aten::full, small ones get_attr
// constants, big ones stay; nothing reading a placeholder, an uninitialized
// tensor or a mutated graph is folded; the outputs stay the same.
#include "compiler/passes/fold_constants.h"
#include "pass_test_util.h"

using namespace kiln;
using namespace kiln::test;

class TestPassFoldConstants : public QObject {
  Q_OBJECT
 private slots:
  void uniform_results_become_full() {
    Graph g = graph_of("x: \"f32[4]\"",
                       "        full: \"f32[4]\" = torch.ops.aten.full.default([4], 2.0)\n"
                       "        mul: \"f32[4]\" = torch.ops.aten.mul.Scalar(full, 3)\n"
                       "        add: \"f32[4]\" = torch.ops.aten.add.Tensor(x, mul)\n"
                       "        return (add,)\n");
    Graph before = g;
    PassRun r = run_pass("fold-constants", g);
    QVERIFY2(r.status.ok(), r.status.message().c_str());
    QCOMPARE(r.stage.summary, std::string("folded 1 node"));
    KILN_CHECK_LINES(r.printed, {"full_1: \"f32[4][1]cpu\" = torch.ops.aten.full.default([4], 6.0, dtype = torch.float32)",
                                 "add: \"f32[4]\" = torch.ops.aten.add.Tensor(x, full_1)"});
    // The folded chain is gone; the new node names the node it replaced.
    QVERIFY(g.find("full") == kNoNode && g.find("mul") == kNoNode);
    QCOMPARE(g[g.find("full_1")].meta.from, (std::vector<std::string>{"mul"}));
    KILN_VERIFY_EMPTY(compare_random_runs(before, g));
  }

  void small_results_become_constants() {
    Graph g = graph_of("x: \"f32[4]\"",
                       "        arange: \"f32[4]\" = torch.ops.aten.arange.default(4, dtype = torch.float32)\n"
                       "        mul: \"f32[4]\" = torch.ops.aten.mul.Scalar(arange, 2)\n"
                       "        add: \"f32[4]\" = torch.ops.aten.add.Scalar(mul, 1)\n"
                       "        out: \"f32[4]\" = torch.ops.aten.add.Tensor(x, mul)\n"
                       "        out_1: \"f32[4]\" = torch.ops.aten.mul.Tensor(x, add)\n"
                       "        return (out, out_1)\n");
    Graph before = g;
    pipeline::ConstantTable constants;
    PassRun r = run_pass("fold-constants", g, &constants);
    QVERIFY2(r.status.ok(), r.status.message().c_str());
    // mul is read by add (constant) and by out (not), so both are replaced.
    QCOMPARE(r.stage.summary, std::string("folded 2 nodes"));
    KILN_CHECK_LINES(r.printed, {"_folded_constant0: \"f32[4][1]cpu\" = self._folded_constant0",
                                 "_folded_constant1: \"f32[4][1]cpu\" = self._folded_constant1",
                                 "out: \"f32[4]\" = torch.ops.aten.add.Tensor(x, _folded_constant0)",
                                 "out_1: \"f32[4]\" = torch.ops.aten.mul.Tensor(x, _folded_constant1)"});
    QVERIFY(g.find("arange") == kNoNode);
    QCOMPARE(constants.size(), size_t(2));
    KILN_COMPARE_VALUES(*constants.find("_folded_constant0"), {0, 2, 4, 6});
    KILN_COMPARE_VALUES(*constants.find("_folded_constant1"), {1, 3, 5, 7});
    KILN_VERIFY_EMPTY(compare_random_runs(before, g, constants));
  }

  void without_a_table_only_uniform_results_fold() {
    Graph g = graph_of("x: \"f32[4]\"",
                       "        arange: \"f32[4]\" = torch.ops.aten.arange.default(4, dtype = torch.float32)\n"
                       "        mul: \"f32[4]\" = torch.ops.aten.mul.Scalar(arange, 2)\n"
                       "        add: \"f32[4]\" = torch.ops.aten.add.Tensor(x, mul)\n"
                       "        return (add,)\n");
    PassRun r = run_pass("fold-constants", g);
    QVERIFY2(r.status.ok(), r.status.message().c_str());
    QVERIFY(!r.stage.changed);
  }

  void big_tensors_are_folded_only_when_uniform() {
    Graph g = graph_of("x: \"f32[64, 64]\", y: \"f32[2000]\", z: \"f32[300, 300]\"",
                       "        full: \"f32[64, 64]\" = torch.ops.aten.full.default([64, 64], 1.5)\n"
                       "        add: \"f32[64, 64]\" = torch.ops.aten.add.Scalar(full, 1)\n"
                       "        add_1: \"f32[64, 64]\" = torch.ops.aten.add.Tensor(x, add)\n"
                       "        arange: \"f32[2000]\" = torch.ops.aten.arange.default(2000, dtype = torch.float32)\n"
                       "        mul: \"f32[2000]\" = torch.ops.aten.mul.Scalar(arange, 2)\n"
                       "        add_2: \"f32[2000]\" = torch.ops.aten.add.Tensor(y, mul)\n"
                       "        full_1: \"f32[300, 300]\" = torch.ops.aten.full.default([300, 300], 1.0)\n"
                       "        mul_1: \"f32[300, 300]\" = torch.ops.aten.mul.Scalar(full_1, 2)\n"
                       "        add_3: \"f32[300, 300]\" = torch.ops.aten.add.Tensor(z, mul_1)\n"
                       "        return (add_1, add_2, add_3)\n");
    Graph before = g;
    pipeline::ConstantTable constants;
    PassRun r = run_pass("fold-constants", g, &constants);
    QVERIFY2(r.status.ok(), r.status.message().c_str());
    // 4,096 equal elements fold; 2,000 different ones exceed the store limit;
    // 90,000 exceed the evaluation limit.
    QCOMPARE(r.stage.summary, std::string("folded 1 node"));
    KILN_CHECK_LINES(r.printed, {"torch.ops.aten.full.default([64, 64], 2.5, dtype = torch.float32)", "mul: ", "mul_1: "});
    QCOMPARE(constants.size(), size_t(0));
    KILN_VERIFY_EMPTY(compare_random_runs(before, g, constants));
  }

  void frozen_parameters_fold_through_views() {
    Graph g = graph_of("x: \"f32[4, 3]\"",
                       "        weight: \"f32[2, 3]\" = self.weight\n"
                       "        t: \"f32[3, 2]\" = torch.ops.aten.t.default(weight)\n"
                       "        mm: \"f32[4, 2]\" = torch.ops.aten.mm.default(x, t)\n"
                       "        return (mm,)\n");
    Graph before = g;
    pipeline::ConstantTable constants;
    constants.set("weight", arange_f32({2, 3}));
    PassRun r = run_pass("fold-constants", g, &constants);
    QVERIFY2(r.status.ok(), r.status.message().c_str());
    KILN_CHECK_LINES(r.printed, {"_folded_constant0: \"f32[3, 2][2, 1]cpu\" = self._folded_constant0",
                                 "mm: \"f32[4, 2]\" = torch.ops.aten.mm.default(x, _folded_constant0)"});
    QVERIFY(g.find("weight") == kNoNode);
    KILN_COMPARE_VALUES(*constants.find("_folded_constant0"), {0, 3, 1, 4, 2, 5});
    KILN_VERIFY_EMPTY(compare_random_runs(before, g, constants));
  }

  void leaves_inputs_uninitialized_memory_and_mutation_alone() {
    pipeline::ConstantTable constants;
    Graph reads_input = graph_of("x: \"f32[4]\"",
                                 "        mul: \"f32[4]\" = torch.ops.aten.mul.Scalar(x, 2)\n"
                                 "        return (mul,)\n");
    QVERIFY(!run_pass("fold-constants", reads_input, &constants).stage.changed);
    Graph empty = graph_of("x: \"f32[4]\"",
                           "        empty: \"f32[4]\" = torch.ops.aten.empty.memory_format([4])\n"
                           "        zero: \"f32[4]\" = torch.ops.aten.zero.default(empty)\n"
                           "        add: \"f32[4]\" = torch.ops.aten.add.Tensor(x, zero)\n"
                           "        return (add,)\n");
    QVERIFY(!run_pass("fold-constants", empty, &constants).stage.changed);
    // A buffer written in place is no constant, whatever the table says.
    Graph mutated = graph_of("x: \"f32[4]\"",
                             "        buf: \"f32[4]\" = self.buf\n"
                             "        mul: \"f32[4]\" = torch.ops.aten.mul.Scalar(buf, 2)\n"
                             "        add_: \"f32[4]\" = torch.ops.aten.add_.Tensor(buf, x)\n"
                             "        add: \"f32[4]\" = torch.ops.aten.add.Tensor(x, mul)\n"
                             "        return (add,)\n");
    constants.set("buf", arange_f32({4}));
    QVERIFY(!run_pass("fold-constants", mutated, &constants).stage.changed);
    QCOMPARE(constants.size(), size_t(1));
  }
};

QTEST_GUILESS_MAIN(TestPassFoldConstants)
#include "test_pass_fold_constants.moc"
