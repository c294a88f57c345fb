// The scheduler: each graph is built with GraphEmitter, lowered, scheduled,
// and checked for its groups and decisions and numerically (the scheduled
// program, buffer plan applied, against run_aten_graph and against run_loops
// of the unscheduled program).
#include <random>

#include "compiler/loopir/lower.h"
#include "compiler/loopir/print_ir.h"
#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/emitter.h"
#include "compiler/sched/schedule.h"
#include "core/util/status.h"
#include "loopir_test_util.h"
#include "test_support.h"

using namespace kiln;
using namespace kiln::loopir;
using namespace kiln::pipeline;
using namespace kiln::sched;

namespace {

using test::random_f32;

std::string compare(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double tol) {
  return test::compare_outputs(got, want, tol);
}

std::vector<Tensor> aten(const Graph& g, const std::vector<Tensor>& inputs) { return test::aten_outputs(g, inputs); }

// Schedules `g`, checks the scheduled run (groups interleaved per outer point,
// buffer plan applied) against ATen (1e-5) and against the unscheduled loops
// (1e-6), and hands back the schedule.
ScheduledProgram schedule_and_check(const Graph& g, const std::vector<Tensor>& inputs, std::string* diff) {
  Program p = lower_to_loops(g);
  ScheduledProgram s = schedule(p);
  std::vector<Tensor> got = run_scheduled(s, inputs);
  std::string d = compare(got, aten(g, inputs), 1e-5);
  if (d.empty()) d = compare(got, run_loops(p, inputs), 1e-6);
  if (!d.empty()) d.append("\n").append(print_scheduled(s));
  *diff = d;
  return s;
}

#define SCHEDULE(s, g, ...)                                                            \
  std::string diff_##s;                                                                \
  ScheduledProgram s = schedule_and_check(g, std::vector<Tensor>{__VA_ARGS__}, &diff_##s); \
  QVERIFY2(diff_##s.empty(), diff_##s.c_str())

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

bool has_decision(const ScheduledProgram& s, bool accepted, const std::string& part) {
  for (const FusionDecision& d : s.decisions)
    if (d.accepted == accepted && contains(d.reason, part)) return true;
  return false;
}

size_t count_ops(const ExprRef& body, ExprOp op) {
  struct Counter : ExprVisitor {
    ExprOp op;
    size_t n = 0;
    void visit_node(const ExprRef& e) override { n += e->op == op; }
  } c;
  c.op = op;
  c.visit(body);
  return c.n;
}

const Kernel& kernel_writing(const ScheduledProgram& s, const std::string& buffer) {
  for (const Kernel& k : s.program.kernels)
    if (k.output == buffer) return k;
  qFatal("no kernel writes %s", buffer.c_str());
}

}  // namespace

class TestSched : public QObject {
  Q_OBJECT
 private slots:
  void pointwise_chain_is_one_kernel() {
    std::mt19937 rng(1);
    Tensor x = random_f32({3, 4}, rng), y = random_f32({3, 4}, rng);
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("x", x), b = e.placeholder("y", y);
    Var s1 = e.call1("aten::sin.default", {a});
    Var s2 = e.call1("aten::mul.Tensor", {s1, b});
    Var s3 = e.call1("aten::add.Scalar", {s2, 1.5});
    Var s4 = e.call1("aten::tanh.default", {s3});
    Var s5 = e.call1("aten::exp.default", {s4});
    e.output({s5});
    SCHEDULE(s, g, x, y);
    QCOMPARE(s.program.kernels.size(), size_t(1));
    QCOMPARE(s.groups.size(), size_t(1));
    QCOMPARE(s.program.buffers.size(), size_t(3));  // x, y and the output: the 4 intermediates are gone
    QVERIFY2(has_decision(s, true, "inlined buf0 into buf1: pointwise, single consumer"), print_scheduled(s).c_str());
    QVERIFY2(has_decision(s, false, "not inlined buf4: graph output"), print_scheduled(s).c_str());
    // The whole chain is in the one body, reading x and y at the same plain index.
    const ExprRef& body = s.program.kernels[0].body;
    QCOMPARE(count_ops(body, ExprOp::Sin), size_t(1));
    QCOMPARE(count_ops(body, ExprOp::Exp), size_t(1));
    QCOMPARE(count_ops(body, ExprOp::Load), size_t(2));
    std::string text = print_kernel(s.program, s.program.kernels[0]);
    QVERIFY2(contains(text, "index0 = 4*p0 + p1\n") && !contains(text, "index1"), text.c_str());
  }

  // A chain of diamonds (each value read twice by the next step, as a residual
  // block reads x in its norm and its add) doubles an inlined body per step;
  // past a bound the producer is kept in memory, so the code stays linear.
  void diamonds_do_not_multiply_the_code() {
    std::mt19937 rng(3);
    Tensor x = random_f32({4, 8}, rng);
    Graph g;
    GraphEmitter e(g);
    Var v = e.placeholder("x", x);
    for (int i = 0; i < 12; ++i) {
      Var t = e.call1("aten::tanh.default", {e.call1("aten::mul.Scalar", {v, 0.5})});
      v = e.call1("aten::add.Tensor", {e.call1("aten::mul.Tensor", {t, v}), e.call1("aten::sigmoid.default", {v})});
    }
    e.output({v});
    SCHEDULE(s, g, x);
    size_t total = 0;
    for (const Kernel& k : s.program.kernels) total += count_ops(k.body, ExprOp::Load) + count_ops(k.body, ExprOp::Tanh);
    // Fully inlined, the last body would hold 2^12 copies of the first step.
    QVERIFY2(total < 200, (std::to_string(total) + " loads and tanh\n" + print_scheduled(s)).c_str());
    QVERIFY2(has_decision(s, false, "kept materialized"), print_scheduled(s).c_str());
  }

  // One group is one loop nest and one LLVM function: a chain of 100
  // materialized kernels (each a graph output) splits into groups of at most 64.
  void a_fused_group_holds_at_most_64_kernels() {
    std::mt19937 rng(5);
    Tensor x = random_f32({3, 4}, rng);
    Graph g;
    GraphEmitter e(g);
    Var v = e.placeholder("x", x);
    std::vector<Var> outputs;
    for (int i = 0; i < 100; ++i) outputs.push_back(v = e.call1(i % 2 ? "aten::sin.default" : "aten::mul.Scalar",
                                                                 i % 2 ? std::vector<EArg>{v} : std::vector<EArg>{v, 0.5}));
    e.output(outputs);
    SCHEDULE(s, g, x);
    QCOMPARE(s.program.kernels.size(), size_t(100));
    QCOMPARE(s.groups.size(), size_t(2));
    QCOMPARE(s.groups[0].kernels.size(), size_t(64));
    QVERIFY2(has_decision(s, false, "the group would hold 65 kernels (at most 64 in one loop nest)"),
             print_scheduled(s).c_str());
  }

  // The cycle check walks only the groups between the two; past 64 of them
  // fusion is refused, with the reason.
  void fusion_looks_no_further_than_64_groups() {
    std::mt19937 rng(6);
    Tensor x = random_f32({3, 4}, rng), a = random_f32({2, 2}, rng), b = random_f32({2, 2}, rng);
    Graph g;
    GraphEmitter e(g);
    Var vx = e.placeholder("x", x), va = e.placeholder("a", a), vb = e.placeholder("b", b);
    Var first = e.call1("aten::sin.default", {vx});
    std::vector<Var> outputs = {first};
    for (int i = 0; i < 70; ++i) outputs.push_back(e.call1("aten::mm.default", {va, vb}));  // each an extern group
    outputs.push_back(e.call1("aten::add.Scalar", {first, 1.0}));
    e.output(outputs);
    SCHEDULE(s, g, x, a, b);
    QVERIFY2(has_decision(s, false, "over 64 groups run between them (fusion looks no further)"),
             print_scheduled(s).c_str());
  }

  // Two GEMMs before their bias adds (q and k projections): both fold, the
  // second is not skipped because the first moved to its consumer's place.
  void back_to_back_gemms_both_fold_their_bias() {
    std::mt19937 rng(7);
    Tensor x = random_f32({4, 3}, rng), wq = random_f32({3, 5}, rng), wk = random_f32({3, 5}, rng);
    Tensor bq = random_f32({5}, rng), bk = random_f32({5}, rng);
    Graph g;
    GraphEmitter e(g);
    Var vx = e.placeholder("x", x), vwq = e.placeholder("wq", wq), vwk = e.placeholder("wk", wk);
    Var vbq = e.placeholder("bq", bq), vbk = e.placeholder("bk", bk);
    Var q = e.call1("aten::mm.default", {vx, vwq});
    Var k = e.call1("aten::mm.default", {vx, vwk});
    e.output({e.call1("aten::add.Tensor", {q, vbq}), e.call1("aten::add.Tensor", {k, vbk})});
    SCHEDULE(s, g, x, wq, wk, bq, bk);
    size_t folded = 0;
    for (const FusionDecision& d : s.decisions) folded += d.kind == DecisionKind::Epilogue && d.accepted;
    QVERIFY2(folded == 2, print_scheduled(s).c_str());
  }

  void softmax_is_at_most_two_passes() {
    std::mt19937 rng(2);
    Tensor x = random_f32({5, 8}, rng, -6.f, 6.f);
    Graph g = test::softmax_graph(x);
    SCHEDULE(s, g, x);
    if (qEnvironmentVariableIsSet("KILN_PRINT_IR")) qDebug("%s", print_scheduled(s).c_str());
    QVERIFY2(s.groups.size() <= 2, print_scheduled(s).c_str());
    QVERIFY2(count_groups_reading(s, "x") <= 2, print_scheduled(s).c_str());
    // exp(x - max) feeds a reduction and a pointwise op: recomputed in both, not stored.
    QVERIFY2(has_decision(s, true, "inlined buf2 into buf3, buf4: pointwise, 2 consumers"), print_scheduled(s).c_str());
    QVERIFY2(has_decision(s, true, "pointwise epilogue of reduction"), print_scheduled(s).c_str());
    QCOMPARE(s.program.kernels.size(), size_t(3));  // amax, sum, div
  }

  void var_mean_siblings_share_a_pass() {
    std::mt19937 rng(3);
    Tensor x = random_f32({6, 10}, rng);
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("x", x);
    Var s1 = e.call1("aten::sum.dim_IntList", {a, std::vector<int64_t>{1}, false});
    Var s2 = e.call1("aten::sum.dim_IntList", {e.call1("aten::mul.Tensor", {a, a}), std::vector<int64_t>{1}, false});
    Var mean = e.call1("aten::div.Scalar", {s1, 10.0});
    Var var = e.call1("aten::sub.Tensor", {e.call1("aten::div.Scalar", {s2, 10.0}), e.call1("aten::mul.Tensor", {mean, mean})});
    e.output({var, mean});
    SCHEDULE(s, g, x);
    QVERIFY2(has_decision(s, true, "sibling reductions over x"), print_scheduled(s).c_str());
    QCOMPARE(s.groups.size(), size_t(1));
    QVERIFY(s.groups[0].has_reduction);
    QCOMPARE(s.groups[0].outer_numel, int64_t(6));
    QCOMPARE(count_groups_reading(s, "x"), size_t(1));
  }

  void producer_of_two_reductions_is_not_recomputed() {
    std::mt19937 rng(4);
    Tensor x = random_f32({4, 6}, rng);
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("x", x);
    Var ex = e.call1("aten::exp.default", {a});
    Var rows = e.call1("aten::sum.dim_IntList", {ex, std::vector<int64_t>{1}, false});
    Var cols = e.call1("aten::amax.default", {ex, std::vector<int64_t>{0}, false});
    e.output({rows, cols});
    SCHEDULE(s, g, x);
    QVERIFY2(has_decision(s, false, "not inlined buf0: read by 2 reductions (buf1, buf2)"), print_scheduled(s).c_str());
    for (const Kernel& k : s.program.kernels)
      if (k.kind == KernelKind::Reduction) QCOMPARE(count_ops(k.body, ExprOp::Exp), size_t(0));
    QCOMPARE(count_ops(kernel_writing(s, "buf0").body, ExprOp::Exp), size_t(1));
    // The two reductions differ in ranges ([4] x [6] and [6] x [4]) so cannot share a loop nest.
    QVERIFY2(has_decision(s, false, "ranges differ"), print_scheduled(s).c_str());
  }

  void buffer_reuse_in_a_chain() {
    std::mt19937 rng(5);
    Tensor x = random_f32({8, 8}, rng, -0.5f, 0.5f);
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("x", x);
    // Each step reduces x scaled by the previous step's vector along the other
    // axis: it reads the previous result across rows, so each is its own group.
    Var v = e.call1("aten::sum.dim_IntList", {a, std::vector<int64_t>{1}, false});
    for (int i = 0; i < 3; ++i) {
      Var col = e.call1("aten::unsqueeze.default", {v, int64_t(1)});
      v = e.call1("aten::sum.dim_IntList", {e.call1("aten::mul.Tensor", {a, col}), std::vector<int64_t>{0}, false});
    }
    e.output({v});
    SCHEDULE(s, g, x);
    QCOMPARE(s.groups.size(), size_t(4));
    QVERIFY2(has_decision(s, false, "outside its own outer point"), print_scheduled(s).c_str());
    size_t reused = 0;
    for (const BufferAllocation& a : s.allocations) {
      const Buffer& b = s.program.buffer(a.buffer);
      QVERIFY(b.role == BufferRole::Computed);
      if (b.is_output) QVERIFY2(!a.reused && a.storage == a.buffer, a.reason.c_str());
      if (a.reused) {
        ++reused;
        QVERIFY(!s.program.buffer(a.storage).is_output);
        QVERIFY(s.program.buffer(a.storage).role == BufferRole::Computed);
      }
    }
    // buf0 (group 0) is last read by group 1, so group 2's buffer takes it; the output is fresh.
    QVERIFY2(reused == 1, print_scheduled(s).c_str());
    QVERIFY2(contains(print_scheduled(s), "reuses buf0 (freed after group 1"), print_scheduled(s).c_str());
    // The plan's aliasing changes nothing in the results (SCHEDULE ran with it applied).
    std::string same = compare(run_scheduled(s, {x}), run_scheduled(s, {x}, {.apply_buffer_plan = false}), 0);
    QVERIFY2(same.empty(), same.c_str());
  }

  void printer_shows_groups_and_decisions() {
    std::mt19937 rng(6);
    Tensor x = random_f32({4, 5}, rng), y = random_f32({5}, rng);
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("x", x), b = e.placeholder("y", y);
    Var r = e.call1("aten::sum.dim_IntList", {a, std::vector<int64_t>{0}, false});  // [5]
    Var z = e.call1("aten::add.Tensor", {r, b});
    Var w = e.call1("aten::mul.Tensor", {a, e.call1("aten::sin.default", {z})});     // [4, 5] reads z by column
    e.output({w, z});
    SCHEDULE(s, g, x, y);
    std::string text = print_scheduled(s);
    if (qEnvironmentVariableIsSet("KILN_PRINT_IR")) qDebug("%s", text.c_str());
    // z is an output, sin(z) is read by broadcast: both stay materialized, as epilogues of the sum.
    QVERIFY2(contains(text, "group0 buf0_buf1_buf2: FusedSchedulerNode(Reduction, Pointwise, Pointwise)"), text.c_str());
    QVERIFY2(contains(text, "group0.outer_numel = 5"), text.c_str());
    QVERIFY2(contains(text, "decisions:\n"), text.c_str());
    QVERIFY2(contains(text, "+ fused buf1 into the group of buf0: pointwise epilogue of reduction buf0"), text.c_str());
    // w iterates [4, 5] with rows outside: no prefix of 5 points, so it stays apart.
    QVERIFY2(contains(text, "- not fused buf3 with buf2: ranges differ [4, 5] vs [5]"), text.c_str());
    QVERIFY2(contains(text, "buffer plan:\n"), text.c_str());
    QVERIFY2(contains(text, "class buf0_loop_body"), text.c_str());
  }

  // Eval batch norm: rsqrt(var + eps) over channels reads graph inputs only
  // and is short, so each pixel recomputes it instead of a kernel of its own;
  // the same producer over a computed buffer (the sum's) or a long one stays.
  void short_broadcast_producer_of_inputs_is_recomputed() {
    std::mt19937 rng(9);
    Tensor x = random_f32({2, 3, 4, 5}, rng), var = random_f32({3, 1, 1}, rng, 0.1f, 2.f);
    Tensor mean = random_f32({3, 1, 1}, rng);
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("x", x), v = e.placeholder("var", var), m = e.placeholder("mean", mean);
    Var rstd = e.call1("aten::rsqrt.default", {e.call1("aten::add.Scalar", {v, 1e-5})});        // [3, 1, 1]
    Var y = e.call1("aten::mul.Tensor", {e.call1("aten::sub.Tensor", {a, m}), rstd});          // [2, 3, 4, 5]
    Var colsum = e.call1("aten::sum.dim_IntList", {a, std::vector<int64_t>{0, 2, 3}, true});   // [1, 3, 1, 1]
    Var scale = e.call1("aten::rsqrt.default", {e.call1("aten::add.Scalar", {colsum, 100.0})});  // computed: stays
    Var long_chain = v;
    for (int i = 0; i < 5; ++i) long_chain = e.call1("aten::sin.default", {e.call1("aten::add.Scalar", {long_chain, 1.0})});
    Var z = e.call1("aten::mul.Tensor", {e.call1("aten::mul.Tensor", {y, scale}), long_chain});
    e.output({z});
    SCHEDULE(s, g, x, var, mean);
    const std::string text = print_scheduled(s);
    QVERIFY2(has_decision(s, true, "(4 ops, recomputed per point of a broadcast read)"), text.c_str());
    QVERIFY2(has_decision(s, false, "a broadcast read would recompute its"), text.c_str());
    // The rsqrt of the inputs is gone as a kernel; the one of the sum and the 11-op chain are kept.
    size_t small_kernels = 0;
    for (const Kernel& k : s.program.kernels) {
      int64_t points = 1;
      for (int64_t r : k.ranges) points *= r;
      small_kernels += points == 3 && k.kind == KernelKind::Pointwise;
    }
    QCOMPARE(small_kernels, size_t(2));
  }

  // Random graphs: pointwise chains over broadcasting inputs with views,
  // several reductions (some over the same input), outputs in the middle.
  void random_graphs_match_unscheduled() {
    std::mt19937 rng(20261123);
    const char* unary[] = {"aten::neg.default", "aten::sin.default", "aten::tanh.default", "aten::abs.default",
                           "aten::sigmoid.default", "aten::relu.default", "exp"};
    const char* binary[] = {"aten::add.Tensor", "aten::sub.Tensor", "aten::mul.Tensor", "div",
                            "aten::maximum.default", "where"};
    const char* reductions[] = {"aten::sum.dim_IntList", "aten::amax.default", "aten::amin.default", "aten::mean.dim"};
    int checked = 0, fused_groups = 0, inlined = 0, reused = 0;
    for (int trial = 0; trial < 100; ++trial) {
      int rows = 1 + int(rng() % 5), cols = 1 + int(rng() % 6);
      Graph g;
      GraphEmitter e(g);
      std::vector<Tensor> inputs = {random_f32({rows, cols}, rng), random_f32({rows, 1}, rng),
                                    random_f32({cols}, rng), random_f32({cols, rows}, rng)};
      Var x = e.placeholder("x", inputs[0]), col = e.placeholder("c", inputs[1]), row = e.placeholder("r", inputs[2]);
      Var xt = e.call1("aten::permute.default", {e.placeholder("t", inputs[3]), std::vector<int64_t>{1, 0}});
      std::vector<Var> pool = {x, col, row, xt};
      auto pick = [&] { return pool[rng() % pool.size()]; };
      auto positive = [&](Var v) { return e.call1("aten::add.Scalar", {e.call1("aten::abs.default", {v}), 1.0}); };
      std::vector<Var> outs;
      Var cur = x;
      int steps = 3 + int(rng() % 8);
      for (int s = 0; s < steps; ++s) {
        int what = int(rng() % 10);
        if (what < 4) {
          std::string op = unary[rng() % std::size(unary)];
          cur = op == "exp" ? e.call1("aten::exp.default", {e.call1("aten::tanh.default", {cur})}) : e.call1(op, {cur});
        } else if (what < 8) {
          std::string op = binary[rng() % std::size(binary)];
          Var other = pick();
          if (op == "div") cur = e.call1("aten::div.Tensor", {cur, positive(other)});
          else if (op == "where") cur = e.call1("aten::where.self", {e.call1("aten::gt.Tensor", {cur, other}), other, cur});
          else cur = rng() % 2 ? e.call1(op, {other, cur}) : e.call1(op, {cur, other});
        } else {
          // A keepdim reduction, broadcast back by the next binary op (softmax-like), or a sibling pair.
          int64_t rank = e.dim(cur);
          std::vector<int64_t> dims = {int64_t(rng() % uint64_t(rank))};
          Var red = e.call1(reductions[rng() % 4], {cur, dims, true});
          if (rng() % 2) {
            Var sib = e.call1(reductions[rng() % 4], {e.call1("aten::mul.Tensor", {cur, cur}), dims, true});
            red = e.call1("aten::add.Tensor", {red, sib});
          }
          if (rng() % 3 == 0) outs.push_back(red);
          cur = e.call1("aten::sub.Tensor", {cur, red});
        }
        if (rng() % 3 == 0) pool.push_back(cur);
        if (rng() % 5 == 0) outs.push_back(cur);
      }
      outs.push_back(cur);
      e.output(outs);
      Program p = lower_to_loops(g);
      ScheduledProgram s = schedule(p);
      std::string diff = compare(run_scheduled(s, inputs), run_loops(p, inputs), 1e-6);
      QVERIFY2(diff.empty(), ("trial " + std::to_string(trial) + ": " + diff + "\n" + print_loop_ir(p) + "\n" +
                              print_scheduled(s)).c_str());
      QVERIFY(s.program.kernels.size() <= p.kernels.size());
      for (const FusedGroup& grp : s.groups) fused_groups += grp.kernels.size() > 1;
      for (const FusionDecision& d : s.decisions) inlined += d.accepted && d.kind == DecisionKind::Inline;
      for (const BufferAllocation& a : s.allocations) reused += a.reused;
      ++checked;
    }
    QCOMPARE(checked, 100);
    qDebug("random graphs: %d fused groups, %d inlined producers, %d reused buffers", fused_groups, inlined, reused);
    // The generator must exercise every mechanism, or the comparison proves little.
    QVERIFY(fused_groups > 20);
    QVERIFY(inlined > 100);
    QVERIFY(reused > 0);
  }
};

QTEST_GUILESS_MAIN(TestSched)
#include "test_sched.moc"
