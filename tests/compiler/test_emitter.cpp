// One computation written against Emitter gives the same numbers eagerly and
// as an ATen graph run by run_aten_graph; multi-output ops go through getitem.
#include <QtTest>

#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/emitter.h"
#include "test_support.h"

using namespace kiln;
using namespace kiln::pipeline;

namespace {

// softmax(x * y + 1) along the last dim, and the two halves of x.
std::vector<Var> compute(Emitter& e, Var x, Var y) {
  Var xy = e.call1("aten::mul.Tensor", {x, y});
  Var shifted = e.call1("aten::add.Scalar", {xy, 1.0});
  Var sm = e.call1("aten::_softmax", {shifted, int64_t(-1), false});
  std::vector<Var> halves = e.call("aten::split.Tensor", {x, int64_t(2), int64_t(0)});
  return {sm, halves.at(1)};
}

}  // namespace

class TestEmitter : public QObject {
  Q_OBJECT
 private slots:
  void graph_and_eager_agree() {
    Tensor x = test::arange_f32({4, 3}, -1.f, 0.25f), y = test::arange_f32({4, 3}, 0.5f, -0.1f);
    EagerEmitter eager;
    std::vector<Var> want = compute(eager, eager.input(x), eager.input(y));

    Graph g;
    GraphEmitter ge(g);
    Var gx = ge.placeholder("x", x), gy = ge.placeholder("y", y);
    std::vector<Var> outs = compute(ge, gx, gy);
    ge.output(outs);
    QCOMPARE(g[ge.node(outs[0])].target, std::string("aten::_softmax.default"));  // the overload is named in full
    QCOMPARE(g[ge.node(outs[1])].target, std::string("operator.getitem"));
    QCOMPARE(ge.sizes(outs[1]), (Shape{2, 3}));

    auto got = run_aten_graph(g, {Value(x), Value(y)});
    QVERIFY2(got.ok(), got.ok() ? "" : got.status().message().c_str());
    QCOMPARE(got->size(), size_t(2));
    for (size_t i = 0; i < 2; ++i) {
      std::vector<double> a = test::values((*got)[i].to_tensor()), b = test::values(eager.tensor(want[i]));
      QCOMPARE(a.size(), b.size());
      for (size_t k = 0; k < a.size(); ++k) QVERIFY(std::fabs(a[k] - b[k]) < 1e-6);
    }
  }

  void names_follow_fx() {
    Graph g;
    GraphEmitter ge(g);
    Var x = ge.placeholder("x", Tensor::meta({2}, DType::Float32));
    Var a = ge.call1("aten::sin.default", {x});
    Var b = ge.call1("aten::sin.default", {a});
    QCOMPARE(g[ge.node(a)].name, std::string("sin"));
    QCOMPARE(g[ge.node(b)].name, std::string("sin_1"));
  }

  void bad_calls_name_the_op() {
    Graph g;
    GraphEmitter ge(g);
    Var x = ge.placeholder("x", Tensor::meta({2, 3}, DType::Float32));
    try {
      ge.call1("aten::mm.default", {x, x});
      QFAIL("mm of 2x3 by 2x3 was accepted");
    } catch (const Error& e) {
      QVERIFY2(std::string(e.what()).find("mm") != std::string::npos, e.what());
    }
    auto r = run_aten_graph(g, {});
    QVERIFY(!r.ok());
  }
};

QTEST_GUILESS_MAIN(TestEmitter)
#include "test_emitter.moc"
