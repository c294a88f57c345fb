// Dead code elimination: dead chains go in one sweep, effects stay, the
// signature stays, and "unchanged" means unchanged.
#include "compiler/passes/dead_code_elimination.h"
#include "pass_test_util.h"

using namespace kiln;
using namespace kiln::test;

class TestPassDce : public QObject {
  Q_OBJECT
 private slots:
  void removes_dead_chains_in_one_sweep() {
    Graph g = graph_of("x: \"f32[4]\", unused: \"f32[4]\"",
                       "        sin: \"f32[4]\" = torch.ops.aten.sin.default(x)\n"
                       "        cos: \"f32[4]\" = torch.ops.aten.cos.default(sin)\n"
                       "        exp: \"f32[4]\" = torch.ops.aten.exp.default(cos)\n"
                       "        neg: \"f32[4]\" = torch.ops.aten.neg.default(x)\n"
                       "        return (neg,)\n");
    Graph before = g;
    PassRun r = run_pass("dce", g);
    QVERIFY2(r.status.ok(), r.status.message().c_str());
    QVERIFY(r.stage.changed);
    QCOMPARE(r.stage.summary, std::string("removed 3 nodes"));
    QCOMPARE(g.size(), size_t(4));  // both placeholders, neg, output
    QVERIFY(g.find("unused") != kNoNode);
    QVERIFY(g.find("sin") == kNoNode && g.find("exp") == kNoNode);
    KILN_VERIFY_EMPTY(compare_random_runs(before, g));
  }

  void keeps_side_effects_and_what_they_read() {
    // In-place, out= and copy_ (by name: not registered), a registered op with
    // a write in its schema, random ops, assertions, torch-level calls, methods.
    Graph g = graph_of("x: \"f32[4]\", w: \"f32[3]\", b: \"f32[3]\", rm: \"f32[3]\", rv: \"f32[3]\", y: \"f32[2, 3, 4]\"",
                       "        sin: \"f32[4]\" = torch.ops.aten.sin.default(x)\n"
                       "        add_: \"f32[4]\" = torch.ops.aten.add_.Tensor(x, sin)\n"
                       "        cos: \"f32[4]\" = torch.ops.aten.cos.default(x)\n"
                       "        copy_: \"f32[4]\" = torch.ops.aten.copy_.default(x, cos)\n"
                       "        exp: \"f32[4]\" = torch.ops.aten.exp.default(x)\n"
                       "        exp_1: \"f32[4]\" = torch.ops.aten.exp.out(x, out = exp)\n"
                       "        rand: \"f32[4]\" = torch.ops.aten.rand.default([4])\n"
                       "        native_dropout = torch.ops.aten.native_dropout.default(x, 0.5, True)\n"
                       "        _assert_async = torch.ops.aten._assert_async.msg(x, 'bad')\n"
                       "        bn = torch.ops.aten._native_batch_norm_legit.default(y, w, b, rm, rv, True, 0.1, 1e-05)\n"
                       "        tsin: \"f32[4]\" = torch.sin(x)\n"
                       "        relu: \"f32[4]\" = x.relu()\n"
                       "        neg: \"f32[4]\" = torch.ops.aten.neg.default(x)\n"
                       "        return (neg,)\n");
    size_t size = g.size();
    PassRun r = run_pass("dce", g);
    QVERIFY2(r.status.ok(), r.status.message().c_str());
    QVERIFY(!r.stage.changed);
    QVERIFY(!r.stage.graph);
    QCOMPARE(g.size(), size);
    QCOMPARE(r.printed, std::string("// -----// dce (application 1): unchanged //----- //\n"));
  }

  // prims are functional: an unused one goes (the minifier kept a dead
  // max-pool prim); Inductor's random prims draw numbers and stay.
  void removes_unused_prims_but_not_random_ones() {
    Graph g = graph_of("x: \"f32[1, 1, 4, 4]\", seeds: \"i64[2]\"",
                       "        pool = torch.ops.prims._low_memory_max_pool_with_offsets.default(x, [2, 2], [2, 2], [0, 0], [1, 1], False)\n"
                       "        seed: \"i64[]\" = torch.ops.prims.inductor_lookup_seed.default(seeds, 0)\n"
                       "        rnd: \"f32[4]\" = torch.ops.prims.inductor_random.default([4], seed, 'rand')\n"
                       "        neg: \"f32[1, 1, 4, 4]\" = torch.ops.aten.neg.default(x)\n"
                       "        return (neg,)\n");
    PassRun r = run_pass("dce", g);
    QVERIFY2(r.status.ok(), r.status.message().c_str());
    QVERIFY(g.find("pool") == kNoNode);
    QVERIFY(g.find("rnd") != kNoNode);
    QVERIFY(g.find("seed") != kNoNode);
  }

  void removes_unused_get_attr_empty_and_getitem() {
    Graph g = graph_of("x: \"f32[4]\"",
                       "        c = self.weight\n"
                       "        empty: \"f32[4]\" = torch.ops.aten.empty.memory_format([4])\n"
                       "        max_1 = torch.ops.aten.max.dim(x, 0)\n"
                       "        getitem: \"f32[]\" = max_1[0]\n"
                       "        return (x,)\n");
    PassRun r = run_pass("dce", g);
    QVERIFY2(r.status.ok(), r.status.message().c_str());
    QCOMPARE(r.stage.summary, std::string("removed 4 nodes"));
    QCOMPARE(g.size(), size_t(2));
  }

  void keeps_a_pure_node_an_effect_reads() {
    Graph g = graph_of("x: \"f32[4]\"",
                       "        sin: \"f32[4]\" = torch.ops.aten.sin.default(x)\n"
                       "        view: \"f32[4]\" = torch.ops.aten.view.default(sin, [4])\n"
                       "        add_: \"f32[4]\" = torch.ops.aten.add_.Tensor(view, 1)\n"
                       "        return (x,)\n");
    PassRun r = run_pass("dce", g);
    QVERIFY(!r.stage.changed);
    QVERIFY(g.find("sin") != kNoNode && g.find("view") != kNoNode);
  }

  void entry_function_reports_like_the_manager() {
    Graph g = graph_of("x: \"f32[4]\"",
                       "        sin: \"f32[4]\" = torch.ops.aten.sin.default(x)\n"
                       "        return (x,)\n");
    pipeline::PassResult first = pipeline::eliminate_dead_code(g, {});
    QVERIFY(first.changed);
    uint64_t hash = structural_hash(g);
    pipeline::PassResult second = pipeline::eliminate_dead_code(g, {});
    QVERIFY(!second.changed);
    QCOMPARE(structural_hash(g), hash);
  }
};

QTEST_GUILESS_MAIN(TestPassDce)
#include "test_pass_dce.moc"
