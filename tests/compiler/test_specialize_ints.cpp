// specialize_int_inputs (compiler/passes/specialize_ints.h): a dynamic-shape
// graph's SymInt placeholders become their recorded values, the integer
// arithmetic on them folds, and what is left is an ATen graph with constants.
#include "compiler/passes/specialize_ints.h"
#include "pass_test_util.h"

using namespace kiln;
using kiln::pipeline::specialize_int_inputs;

class TestSpecializeInts : public QObject {
  Q_OBJECT
 private slots:
  void folds_arithmetic_into_the_ops() {
    Graph g = test::graph_of("s0, x",
                             "        mul = s0 * 2\n"
                             "        sub = mul - 1\n"
                             "        floordiv = sub // 2\n"
                             "        lt = floordiv < 4\n"
                             "        view = torch.ops.aten.view.default(x, [mul, 4]);  x = None\n"
                             "        slice_1 = torch.ops.aten.slice.Tensor(view, 0, 0, floordiv);  view = None\n"
                             "        return (slice_1, lt)\n");
    const NodeId s0 = g.find("s0");
    QVERIFY(specialize_int_inputs(g, {{s0, 3}}).ok());
    QCOMPARE(g.find("s0"), kNoNode);
    for (const char* folded : {"mul", "sub", "floordiv", "lt"}) QCOMPARE(g.find(folded), kNoNode);
    const Node& view = g[g.find("view")];
    QCOMPARE(view.args[1].items[0].kind, Arg::Kind::Int);
    QCOMPARE(view.args[1].items[0].i, int64_t(6));
    QCOMPARE(g[g.find("slice_1")].args[3].i, int64_t(2));  // (6 - 1) // 2
    const Arg& returned = g.output()->args[0];
    QCOMPARE(returned.items[1].kind, Arg::Kind::Bool);
    QCOMPARE(returned.items[1].b, true);
    QCOMPARE(count_nodes(g, OpKind::Placeholder), size_t(1));
  }

  void python_floor_semantics_and_overflow() {
    Graph g = test::graph_of("s0, x",
                             "        neg = -s0\n"
                             "        floordiv = neg // 2\n"
                             "        mod = neg % 4\n"
                             "        view = torch.ops.aten.view.default(x, [floordiv, mod]);  x = None\n"
                             "        return (view,)\n");
    QVERIFY(specialize_int_inputs(g, {{g.find("s0"), 3}}).ok());
    const Node& view = g[g.find("view")];
    QCOMPARE(view.args[1].items[0].i, int64_t(-2));  // -3 // 2
    QCOMPARE(view.args[1].items[1].i, int64_t(1));   // -3 % 4

    Graph big = test::graph_of("s0, x",
                               "        mul = s0 * s0\n"
                               "        view = torch.ops.aten.view.default(x, [mul]);  x = None\n"
                               "        return (view,)\n");
    // 2^62 squared overflows: the product is not folded, and the graph cannot drop s0.
    QVERIFY(!specialize_int_inputs(big, {{big.find("s0"), int64_t(1) << 62}}).ok());
  }

  // int / int is a float, math.ceil of it an int again (an upsample repro
  // sizes its iota so); the float feeds an op as a scalar.
  void true_division_and_ceil() {
    Graph g = test::graph_of("s0, x",
                             "        sub = s0 - 1\n"
                             "        truediv = sub / 2\n"
                             "        ceil = math_ceil(truediv);  truediv = None\n"
                             "        scale = s0 / 4\n"
                             "        iota = torch.ops.prims.iota.default(ceil, start = 0, step = 1, dtype = torch.int64, "
                             "device = device(type='cpu'), requires_grad = False)\n"
                             "        mul = torch.ops.aten.mul.Tensor(x, scale)\n"
                             "        return (iota, mul)\n");
    QVERIFY(specialize_int_inputs(g, {{g.find("s0"), 6}}).ok());
    QCOMPARE(g[g.find("iota")].args[0].kind, Arg::Kind::Int);
    QCOMPARE(g[g.find("iota")].args[0].i, int64_t(3));  // ceil((6 - 1) / 2)
    QCOMPARE(g[g.find("mul")].args[1].kind, Arg::Kind::Float);
    QCOMPARE(g[g.find("mul")].args[1].f, 1.5);
  }

  // The graph asking a dynamic dimension's size of an input folds too.
  void sym_size_of_an_input() {
    Graph g = test::graph_of("s0, x",
                             "        sym_size_int = torch.ops.aten.sym_size.int(x, -1)\n"
                             "        sub = sym_size_int - 1\n"
                             "        view = torch.ops.aten.view.default(x, [s0, sub, 2]);  x = None\n"
                             "        return (view,)\n");
    QVERIFY(specialize_int_inputs(g, {{g.find("s0"), 2}}, {{g.find("x"), {2, 6}}}).ok());
    QCOMPARE(g.find("sym_size_int"), kNoNode);
    QCOMPARE(g[g.find("view")].args[1].items[1].i, int64_t(5));
  }

  void refuses_what_is_not_a_placeholder() {
    Graph g = test::graph_of("x", "        sin = torch.ops.aten.sin.default(x)\n        return (sin,)\n");
    QVERIFY(!specialize_int_inputs(g, {{g.find("sin"), 3}}).ok());
  }
};

QTEST_GUILESS_MAIN(TestSpecializeInts)
#include "test_specialize_ints.moc"
