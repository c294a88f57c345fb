// Lowering ATen graphs to the loop IR, checked numerically: every graph is
// built with GraphEmitter, lowered, run by the loop-IR evaluator and compared
// with run_aten_graph (the ATen kernels); the printed IR is checked where the
// index a view folds into matters.
#include <random>

#include "compiler/loopir/lower.h"
#include "compiler/loopir/print_ir.h"
#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/emitter.h"
#include "core/util/status.h"
#include "loopir_test_util.h"
#include "test_support.h"

using namespace kiln;
using namespace kiln::loopir;
using namespace kiln::pipeline;

namespace {

using test::random_f32;

// Lowers `g`, runs both ways and compares within 1e-5 (relative above 1).
// Returns an empty string when they agree, else what differs.
std::string compare_with_aten(const Graph& g, const std::vector<Tensor>& inputs, Program* lowered = nullptr) {
  Program p = lower_to_loops(g);
  std::vector<Tensor> got = run_loops(p, inputs);
  std::string diff = test::compare_outputs(got, test::aten_outputs(g, inputs), 1e-5);
  if (!diff.empty()) return "loops vs aten: " + diff + "\n" + print_loop_ir(p);
  if (lowered) *lowered = std::move(p);
  return {};
}

// CHECK_SAME(graph, &program, input tensors...)
#define CHECK_SAME(g, prog, ...)                                                       \
  do {                                                                                 \
    std::string diff = compare_with_aten(g, std::vector<Tensor>{__VA_ARGS__}, prog);   \
    QVERIFY2(diff.empty(), diff.c_str());                      \
  } while (0)

size_t count_kind(const Program& p, KernelKind kind) {
  size_t n = 0;
  for (const Kernel& k : p.kernels) n += k.kind == kind;
  return n;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

class TestLoopirLower : public QObject {
  Q_OBJECT
 private slots:
  void pointwise_chain() {
    std::mt19937 rng(1);
    Tensor x = random_f32({3, 4}, rng), y = random_f32({3, 4}, rng);
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("x", x), b = e.placeholder("y", y);
    Var s = e.call1("aten::sin.default", {a});
    Var m = e.call1("aten::mul.Tensor", {s, b});
    Var c = e.call1("aten::add.Scalar", {m, 1.5});
    Var t = e.call1("aten::tanh.default", {c});
    Var r = e.call1("aten::relu.default", {e.call1("aten::sub.Tensor", {t, b}, {{"alpha", 2.0}})});
    Var sg = e.call1("aten::sigmoid.default", {e.call1("aten::neg.default", {r})});
    Var q = e.call1("aten::rsqrt.default", {e.call1("aten::add.Scalar", {e.call1("aten::abs.default", {sg}), 1.0})});
    e.output({q});
    Program p;
    CHECK_SAME(g, &p, x, y);
    QCOMPARE(p.kernels.size(), size_t(11));  // one per call node, no fusion
    QCOMPARE(count_kind(p, KernelKind::Reduction), size_t(0));
    std::string text = print_loop_ir(p);
    QVERIFY2(contains(text, "sin = ops.sin(load)"), text.c_str());
    QVERIFY2(contains(text, "buf0.layout = FixedLayout('cpu', torch.float32, size=[3, 4], stride=[4, 1])"), text.c_str());
    QVERIFY2(contains(text, "var_ranges = {p0: 3, p1: 4}"), text.c_str());
    QVERIFY2(contains(text, "index0 = 4*p0 + p1"), text.c_str());
    QVERIFY2(contains(text, "ops.maximum(load, constant)"), text.c_str());  // relu is maximum with 0
    QVERIFY2(contains(text, "ops.store('buf0', get_index_1, sin, None)"), text.c_str());
  }

  void broadcast_add() {
    std::mt19937 rng(2);
    Tensor x = random_f32({4, 1}, rng), y = random_f32({1, 5}, rng);
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("x", x), b = e.placeholder("y", y);
    e.output({e.call1("aten::add.Tensor", {a, b})});
    Program p;
    CHECK_SAME(g, &p, x, y);
    QCOMPARE(p.kernels.size(), size_t(1));
    QCOMPARE(p.kernels[0].ranges, (std::vector<int64_t>{4, 5}));
    std::string text = print_kernel(p, p.kernels[0]);
    // x is read by row only, y by column only: broadcasting is in the index.
    QVERIFY2(contains(text, "index0 = p0\n"), text.c_str());
    QVERIFY2(contains(text, "index1 = p1\n"), text.c_str());
    QVERIFY2(contains(text, "index2 = 5*p0 + p1\n"), text.c_str());
  }

  void permute_add() {
    std::mt19937 rng(3);
    Tensor x = random_f32({3, 4}, rng), y = random_f32({4, 3}, rng);
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("x", x), b = e.placeholder("y", y);
    Var pa = e.call1("aten::permute.default", {a, std::vector<int64_t>{1, 0}});
    e.output({e.call1("aten::add.Tensor", {pa, b})});
    Program p;
    CHECK_SAME(g, &p, x, y);
    QCOMPARE(p.kernels.size(), size_t(1));  // the permute makes no kernel
    std::string text = print_kernel(p, p.kernels[0]);
    QVERIFY2(contains(text, "index0 = p0 + 4*p1\n"), text.c_str());  // x.permute(1, 0)[i, j] = x[j, i]
  }

  // ATen wraps the dims of a 0-d tensor as if it had one: transpose(x, 0, -1)
  // is x itself. The lowering used to index past the empty dim list.
  void transpose_of_a_scalar() {
    Tensor x = Tensor::from_vector(std::vector<float>{2.5f}, {});
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("x", x);
    Var t = e.call1("aten::transpose.int", {a, int64_t(0), int64_t(-1)});
    e.output({e.call1("aten::mul.Scalar", {t, 3.0})});
    Program p;
    CHECK_SAME(g, &p, x);
    QCOMPARE(p.kernels.size(), size_t(1));
  }

  void slice_mul() {
    std::mt19937 rng(4);
    Tensor x = random_f32({6, 5}, rng), y = random_f32({2, 3}, rng);
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("x", x), b = e.placeholder("y", y);
    Var rows = e.call1("aten::slice.Tensor", {a, int64_t(0), int64_t(1), int64_t(5), int64_t(2)});  // rows 1, 3
    Var cols = e.call1("aten::slice.Tensor", {rows, int64_t(1), int64_t(-3), int64_t(5)});          // cols 2..4
    e.output({e.call1("aten::mul.Tensor", {cols, b})});
    Program p;
    CHECK_SAME(g, &p, x, y);
    QCOMPARE(p.kernels.size(), size_t(1));
    std::string text = print_kernel(p, p.kernels[0]);
    // 5*(2*p0 + 1) + (p1 + 2)
    QVERIFY2(contains(text, "index0 = 10*p0 + p1 + 7\n"), text.c_str());
  }

  void select_expand_reshape() {
    std::mt19937 rng(5);
    Tensor x = random_f32({2, 3, 4}, rng), y = random_f32({3}, rng);
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("x", x), b = e.placeholder("y", y);
    // permute then reshape: eager copies, the loop IR only indexes with // and %.
    Var pr = e.call1("aten::permute.default", {a, std::vector<int64_t>{2, 0, 1}});
    Var flat = e.call1("aten::reshape.default", {pr, std::vector<int64_t>{4, 6}});
    Var sel = e.call1("aten::select.int", {a, int64_t(2), int64_t(-1)});  // [2, 3]
    Var yb = e.call1("aten::expand.default", {e.call1("aten::unsqueeze.default", {b, int64_t(0)}), std::vector<int64_t>{2, 3}});
    Var s1 = e.call1("aten::add.Tensor", {sel, yb});
    Var s2 = e.call1("aten::view.default", {s1, std::vector<int64_t>{6}});
    Var out = e.call1("aten::mul.Tensor", {flat, s2});
    e.output({out, pr});  // a returned view is materialized
    Program p;
    CHECK_SAME(g, &p, x, y);
    QCOMPARE(p.kernels.size(), size_t(3));
    std::string text = print_loop_ir(p);
    // x.permute(2, 0, 1).reshape(4, 6)[i, j] is x[j // 3, j % 3, i], at 12*(j//3) + 4*(j%3) + i:
    // the simplifier merges the digits back to 4*j + i.
    QVERIFY2(contains(print_kernel(p, p.kernels[1]), "index0 = p0 + 4*p1\n"), text.c_str());
    QVERIFY2(contains(print_kernel(p, p.kernels[0]), "index0 = 12*p0 + 4*p1 + 3\n"), text.c_str());  // select(2, -1)
  }

  void sum_last_dim() {
    std::mt19937 rng(6);
    Tensor x = random_f32({3, 7}, rng);
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("x", x);
    e.output({e.call1("aten::sum.dim_IntList", {a, std::vector<int64_t>{-1}, false})});
    Program p;
    CHECK_SAME(g, &p, x);
    QCOMPARE(p.kernels.size(), size_t(1));
    const Kernel& k = p.kernels[0];
    QCOMPARE(int(k.kind), int(KernelKind::Reduction));
    QCOMPARE(k.ranges, (std::vector<int64_t>{3}));
    QCOMPARE(k.reduction_ranges, (std::vector<int64_t>{7}));
    std::string text = print_kernel(p, k);
    QVERIFY2(contains(text, "var_ranges = {p0: 3, p1: 7}"), text.c_str());
    QVERIFY2(contains(text, "index0 = 7*p0 + p1\n"), text.c_str());
    QVERIFY2(contains(text, "ops.reduction(torch.float32, torch.float32, 'sum', load)"), text.c_str());
    QVERIFY2(contains(text, "ops.store_reduction('buf0', get_index_1, reduction)"), text.c_str());
  }

  void amax_keepdim_and_sum_all() {
    std::mt19937 rng(7);
    Tensor x = random_f32({4, 5, 3}, rng);
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("x", x);
    Var m = e.call1("aten::amax.default", {a, std::vector<int64_t>{1}, true});
    Var n = e.call1("aten::amin.default", {a, std::vector<int64_t>{0, 2}});
    Var s = e.call1("aten::sum.default", {a});
    e.output({m, n, s});
    Program p;
    CHECK_SAME(g, &p, x);
    QCOMPARE(p.kernels[0].ranges, (std::vector<int64_t>{4, 1, 3}));
    QCOMPARE(p.kernels[0].reduction_ranges, (std::vector<int64_t>{5}));
    QCOMPARE(p.kernels[1].reduction_ranges, (std::vector<int64_t>{4, 3}));
    QVERIFY(p.kernels[2].ranges.empty());
  }

  // prod, argmax/argmin (ties: the first wins; NaN: its position), any/all, mean over two dims.
  void other_reductions() {
    std::mt19937 rng(11);
    Tensor x = random_f32({3, 4, 5}, rng, 0.5f, 1.5f);
    std::vector<float> tied = {1, 3, 3, 0, 2, 2, -1, -1, 5, 0, 0, 5};
    tied[5] = std::nanf("");
    Tensor t = Tensor::from_vector(tied, {3, 4});
    Tensor xi = Tensor::from_vector(std::vector<int64_t>{0, 2, 0, 1, 1, 1, 0, 0, 3, 0, 5, 0}, {3, 4});
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("x", x), b = e.placeholder("t", t), c = e.placeholder("xi", xi);
    Var pr = e.call1("aten::prod.dim_int", {a, int64_t(1)});
    Var pa = e.call1("aten::prod.default", {c});
    Var amx = e.call1("aten::argmax.default", {b, int64_t(1)});
    Var amn = e.call1("aten::argmin.default", {b, int64_t(0), true});
    Var amx_all = e.call1("aten::argmax.default", {a});
    Var an = e.call1("aten::any.dim", {c, int64_t(1)});
    Var al = e.call1("aten::all.dim", {c, int64_t(0), true});
    Var al_all = e.call1("aten::all.default", {e.call1("aten::gt.Scalar", {a, 0.0})});
    Var mn = e.call1("aten::mean.dim", {a, std::vector<int64_t>{0, 2}});
    e.output({pr, pa, amx, amn, amx_all, an, al, al_all, mn});
    Program p;
    CHECK_SAME(g, &p, x, t, xi);
    QCOMPARE(count_kind(p, KernelKind::Extern), size_t(0));  // all of them are loops
    std::string text = print_loop_ir(p);
    QVERIFY2(contains(text, "'prod'") && contains(text, "'argmax'") && contains(text, "'any'"), text.c_str());
  }

  void mean_is_sum_then_div() {
    std::mt19937 rng(8);
    Tensor x = random_f32({6, 4}, rng);
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("x", x);
    e.output({e.call1("aten::mean.dim", {a, std::vector<int64_t>{0}, false})});
    Program p;
    CHECK_SAME(g, &p, x);
    QCOMPARE(p.kernels.size(), size_t(2));
    QCOMPARE(int(p.kernels[0].kind), int(KernelKind::Reduction));
    QCOMPARE(int(p.kernels[1].kind), int(KernelKind::Pointwise));
    QVERIFY(contains(print_kernel(p, p.kernels[1]), "ops.constant(6.0, torch.float32)"));
  }

  void softmax_by_hand() {
    std::mt19937 rng(9);
    Tensor x = random_f32({5, 8}, rng, -6.f, 6.f);
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("x", x);
    Var m = e.call1("aten::amax.default", {a, std::vector<int64_t>{-1}, true});
    Var ex = e.call1("aten::exp.default", {e.call1("aten::sub.Tensor", {a, m})});
    Var s = e.call1("aten::sum.dim_IntList", {ex, std::vector<int64_t>{-1}, true});
    Var sm = e.call1("aten::div.Tensor", {ex, s});
    e.output({sm});
    Program p;
    CHECK_SAME(g, &p, x);
    QCOMPARE(p.kernels.size(), size_t(5));
    QCOMPARE(count_kind(p, KernelKind::Reduction), size_t(2));
    if (qEnvironmentVariableIsSet("KILN_PRINT_IR")) qDebug("%s", print_loop_ir(p).c_str());
    // The keepdim [5, 1] max broadcasts along the row: read by p0 alone.
    std::string sub = print_kernel(p, p.kernels[1]);
    QVERIFY2(contains(sub, "index1 = p0\n"), sub.c_str());
    // And the result sums to one per row.
    std::vector<Tensor> out = run_loops(p, {x});
    std::vector<double> v = test::values(out[0]);
    for (int r = 0; r < 5; ++r) {
      double total = 0;
      for (int c = 0; c < 8; ++c) total += v[size_t(r * 8 + c)];
      QVERIFY(std::fabs(total - 1) < 1e-5);
    }
  }

  void dtypes_compare_where_cast() {
    Tensor xi = Tensor::from_vector<int64_t>({-3, 0, 2, 5, 7, -1}, {2, 3});
    std::mt19937 rng(10);
    Tensor y = random_f32({2, 3}, rng);
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("xi", xi), b = e.placeholder("y", y);
    Var gt = e.call1("aten::gt.Scalar", {a, 1.5});          // int vs float number: compares as float
    Var w = e.call1("aten::where.self", {gt, b, e.call1("aten::neg.default", {b})});
    Var f = e.call1("aten::_to_copy.default", {a}, {{"dtype", DType::Float32}});
    Var d = e.call1("aten::div.Tensor", {a, e.call1("aten::add.Scalar", {a, int64_t(10)})});  // int / int is float
    Var le = e.call1("aten::le.Tensor", {f, b});
    Var mx = e.call1("aten::maximum.default", {w, f});
    e.output({gt, w, f, d, le, mx});
    Program p;
    CHECK_SAME(g, &p, xi, y);
    QVERIFY2(contains(print_loop_ir(p), "ops.to_dtype(load, torch.float32, src_dtype=torch.int64)"),
             print_loop_ir(p).c_str());
  }

  // Inference max pooling (indices unread) is a window max kernel, padding
  // included: ResNet's 3x3 / stride 2 / padding 1, odd sizes so the last
  // window hangs over the edge, a 2x2 without padding, and 1-sided windows.
  void max_pool_values_are_a_window_max() {
    std::mt19937 rng(7);
    struct Shape4 { Shape x, k, s, p; };
    for (const Shape4& c : {Shape4{{2, 3, 9, 7}, {3, 3}, {2, 2}, {1, 1}}, Shape4{{1, 2, 8, 8}, {2, 2}, {2, 2}, {0, 0}},
                            Shape4{{3, 5, 6}, {3, 1}, {1, 1}, {1, 0}}}) {
      Tensor x = random_f32(c.x, rng);
      Graph g;
      GraphEmitter e(g);
      Var vx = e.placeholder("x", x);
      std::vector<Var> mp = e.call("aten::max_pool2d_with_indices.default", {vx, c.k, c.s, c.p});
      e.output({e.call1("aten::relu.default", {mp[0]})});
      Program p;
      CHECK_SAME(g, &p, x);
      QCOMPARE(count_kind(p, KernelKind::Extern), size_t(0));
    }
  }

  // Functionalized in-place writes: copy(self, src) has self's shape and
  // dtype and src's values, broadcast and cast.
  void functional_copy_is_pointwise() {
    std::mt19937 rng(8);
    Tensor self = random_f32({3, 4}, rng), src = random_f32({4}, rng).to(DType::Float64);
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("self", self), b = e.placeholder("src", src);
    e.output({e.call1("aten::copy.default", {a, b})});
    Program p;
    CHECK_SAME(g, &p, self, src);
    QCOMPARE(count_kind(p, KernelKind::Extern), size_t(0));
  }

  void unsupported_op_names_the_node() {
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("x", Tensor::meta({2, 3}, DType::Float32));
    Var b = e.placeholder("w", Tensor::meta({3, 4}, DType::Float32));
    e.output({e.call1("aten::mm.default", {a, b})});
    // mm has no loop lowering: it becomes an extern kernel (test_loopir_extern.cpp).
    QCOMPARE(lower_to_loops(g).kernels.at(0).kind, KernelKind::Extern);
    g[g.find("mm")].target = "aten::no_such_op.default";
    try {
      lower_to_loops(g);
      QFAIL("an unregistered op lowered");
    } catch (const Error& err) {
      std::string msg = err.what();
      QVERIFY2(contains(msg, "'mm'") && contains(msg, "aten::no_such_op.default") && contains(msg, "no loop lowering"),
               msg.c_str());
    }
    // A bad input to the evaluator is a user error too, not a crash.
    Graph g2;
    GraphEmitter e2(g2);
    Var c = e2.placeholder("x", Tensor::meta({2, 3}, DType::Float32));
    e2.output({e2.call1("aten::sin.default", {c})});
    Program p = lower_to_loops(g2);
    QVERIFY_THROWS_EXCEPTION(Error, run_loops(p, {Tensor::zeros({3, 2}, DType::Float32)}));
  }

  // Random chains of pointwise ops over broadcasting inputs, with views, ending
  // in one reduction; compared with the ATen kernels.
  void random_graphs() {
    std::mt19937 rng(20261122);
    const char* unary[] = {"aten::neg.default", "aten::sin.default", "aten::cos.default", "aten::tanh.default",
                           "aten::abs.default", "aten::sigmoid.default", "aten::relu.default", "aten::exp.default",
                           "log", "sqrt", "rsqrt"};
    const char* binary[] = {"aten::add.Tensor", "aten::sub.Tensor", "aten::mul.Tensor", "div",
                            "aten::maximum.default", "aten::minimum.default", "where"};
    int checked = 0;
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
      // Keep the domain safe: log, sqrt, rsqrt and div see |v| + 1.
      auto positive = [&](Var v) { return e.call1("aten::add.Scalar", {e.call1("aten::abs.default", {v}), 1.0}); };
      int steps = 2 + int(rng() % 6);
      Var cur = x;
      for (int s = 0; s < steps; ++s) {
        if (rng() % 2) {
          std::string op = unary[rng() % std::size(unary)];
          if (op == "log" || op == "sqrt" || op == "rsqrt") cur = e.call1("aten::" + op + ".default", {positive(cur)});
          else if (op == "aten::exp.default") cur = e.call1(op, {e.call1("aten::tanh.default", {cur})});
          else cur = e.call1(op, {cur});
        } else {
          std::string op = binary[rng() % std::size(binary)];
          Var other = pick();
          if (op == "div") cur = e.call1("aten::div.Tensor", {cur, positive(other)});
          else if (op == "where") cur = e.call1("aten::where.self", {e.call1("aten::gt.Tensor", {cur, other}), other, cur});
          else if (rng() % 2) cur = e.call1(op, {other, cur});
          else cur = e.call1(op, {cur, other});
        }
        if (rng() % 3 == 0) pool.push_back(cur);
      }
      // cur may have been broadcast to [rows, cols] or stayed smaller; reduce over one of its dims.
      int64_t rank = e.dim(cur);
      std::vector<int64_t> dims = {int64_t(rng() % uint64_t(rank)) - (rng() % 2 ? rank : 0)};
      bool keep = rng() % 2;
      const char* reductions[] = {"aten::sum.dim_IntList", "aten::amax.default", "aten::amin.default", "aten::mean.dim"};
      Var red = e.call1(reductions[rng() % 4], {cur, dims, keep});
      e.output({red, cur});
      std::string diff = compare_with_aten(g, inputs);
      QVERIFY2(diff.empty(), ("trial " + std::to_string(trial) + ": " + diff).c_str());
      ++checked;
    }
    QCOMPARE(checked, 100);
  }
};

QTEST_GUILESS_MAIN(TestLoopirLower)
#include "test_loopir_lower.moc"
