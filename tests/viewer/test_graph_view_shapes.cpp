// Tensor shapes on the graph's edges, as Netron draws them (issue 25, "shapes
// on edges or nodes"): the text, where it is drawn (readable zoom only, beside
// edges and clear of boxes), nothing for values without meta, and the View
// menu's toggle, remembered in the settings.
#include <QMenuBar>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QtTest/QtTest>

#include "core/trace/reader.h"
#include "session/graph_layout_worker.h"
#include "session/graph_scene.h"
#include "test_support.h"
#include "viewer/graph_view.h"
#include "viewer/workbench.h"
#include "workbench_test_util.h"

using namespace kiln;

namespace {

std::shared_ptr<const Graph> reference_graph(const char* trace, const std::string& stage) {
  auto t = trace::open_trace(test::reference_dir() + "/traces/" + trace);
  if (!t) qFatal("%s", t.status().to_string().c_str());
  auto g = t->graph(t->entries.at(0), stage);
  if (!g) qFatal("%s: %s", stage.c_str(), g.status().to_string().c_str());
  return *g;
}

Val tensor(const char* dtype, std::vector<int64_t> sizes) {
  TensorMeta m;
  m.dtype = dtype;
  for (int64_t s : sizes) m.sizes.push_back(SymInt::of(s));
  return Val::of_tensor(m);
}

// x (f32 1x64x56x56) -> relu -> max over dim 1 (a tuple of values f32 and indices i64)
// -> getitem 1 -> gt (bool); `y` has no meta.
std::shared_ptr<Graph> small_graph(bool with_meta) {
  auto g = std::make_shared<Graph>();
  auto add = [&](OpKind op, const char* name, const char* target, std::vector<NodeId> in, Val v) {
    Node n;
    n.op = op;
    n.name = name;
    n.target = target;
    for (NodeId i : in) n.args.push_back(Arg::node(i));
    if (with_meta) n.meta.val = std::move(v);
    return g->add(n);
  };
  NodeId x = add(OpKind::Placeholder, "x", "x", {}, tensor("float32", {1, 64, 56, 56}));
  NodeId r = add(OpKind::CallFunction, "relu", "aten::relu.default", {x}, tensor("float32", {1, 64, 56, 56}));
  NodeId m = add(OpKind::CallFunction, "max_1", "aten::max.dim", {r},
                 Val::tuple({tensor("float16", {1, 56, 56}), tensor("int64", {1, 56, 56})}));
  Node gi;
  gi.name = "getitem";
  gi.target = "operator.getitem";
  gi.args = {Arg::node(m), Arg::integer(1)};
  if (with_meta) gi.meta.val = tensor("int64", {1, 56, 56});
  NodeId i = g->add(gi);
  NodeId b = add(OpKind::CallFunction, "gt", "aten::gt.Scalar", {i}, tensor("bool", {1, 56, 56}));
  Node out;
  out.op = OpKind::Output;
  out.name = out.target = "output";
  out.args.push_back(Arg::node(b));
  g->add(out);
  return g;
}

bool show_graph(GraphView& v, std::shared_ptr<const Graph> g) {
  QSignalSpy ready(&v, &GraphView::layoutReady);
  v.setGraph(std::move(g));
  return ready.wait(30000);
}

std::vector<GraphView::DrawnLabel> shapes(GraphView& v) {
  v.repaint();
  std::vector<GraphView::DrawnLabel> out;
  for (const auto& l : v.lastPaintLabels())
    if (l.shape) out.push_back(l);
  return out;
}

QStringList texts(const std::vector<GraphView::DrawnLabel>& labels) {
  QStringList t;
  for (const auto& l : labels) t << l.text;
  t.sort();
  return t;
}

// No shape label over a box's text or over another shape label.
QString overlap(GraphView& v) {
  v.repaint();
  const auto& all = v.lastPaintLabels();
  for (size_t i = 0; i < all.size(); ++i)
    for (size_t j = 0; j < all.size(); ++j)
      if (i != j && (all[i].shape || all[j].shape) && all[i].rect.intersects(all[j].rect))
        return all[i].text + " over " + all[j].text;
  return {};
}

}  // namespace

class TestGraphViewShapes : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    test::isolate_settings("kiln_test_graph_view_shapes.kiln");
  }
  void init() { GraphLayoutWorker::instance().clear_cache(); }

  void labelText() {
    QCOMPARE(shape_label(tensor("float32", {1, 64, 56, 56})), std::string("1\u00d764\u00d756\u00d756"));
    QCOMPARE(shape_label(tensor("float16", {2, 3})), std::string("2\u00d73 f16"));
    QCOMPARE(shape_label(tensor("int64", {8})), std::string("8 i64"));
    QCOMPARE(shape_label(tensor("bool", {4, 4})), std::string("4\u00d74 bool"));
    QCOMPARE(shape_label(tensor("bfloat16", {})), std::string("scalar bf16"));
    TensorMeta sym;
    sym.dtype = "float32";
    sym.sizes = {SymInt{0, "s0"}, SymInt::of(3)};
    QCOMPARE(shape_label(Val::of_tensor(sym)), std::string("s0\u00d73"));
    QCOMPARE(shape_label(Val::tuple({tensor("float32", {2}), tensor("int64", {2})})), std::string("2, 2 i64"));
    QCOMPARE(shape_label(Val{}), std::string());
    QCOMPARE(shape_label(Val::of_sym("s0")), std::string());
    QCOMPARE(shape_label(Val::raw("f32[?]")), std::string());
    QCOMPARE(shape_label(Val::tuple({tensor("float32", {2}), Val{}})), std::string());
  }

  // A small graph at the zoom it opens with: every edge says what it carries,
  // clear of the boxes' text; far out, and with the toggle off, nothing.
  void smallGraphEdgesCarryShapes() {
    GraphView v;
    v.resize(900, 650);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    QVERIFY(show_graph(v, small_graph(true)));
    const QString x = QStringLiteral("1\u00d764\u00d756\u00d756");
    const QStringList want = {QStringLiteral("1\u00d756\u00d756 bool"), QStringLiteral("1\u00d756\u00d756 f16, 1\u00d756\u00d756 i64"),
                              QStringLiteral("1\u00d756\u00d756 i64"), x, x};
    QCOMPARE(texts(shapes(v)), want);
    for (const auto& l : shapes(v)) QVERIFY(l.pixel_size >= GraphView::kMinLabelPx);
    QCOMPARE(overlap(v), QString());
    v.setZoom(0.3);
    QVERIFY(shapes(v).empty());
    v.setZoom(1.0);
    QCOMPARE(shapes(v).size(), size_t(5));
    v.setShowShapes(false);
    QVERIFY(shapes(v).empty());
    v.setShowShapes(true);
    QCOMPARE(shapes(v).size(), size_t(5));
  }

  // A dump without meta draws no shapes at all.
  void noMetaNoShapes() {
    GraphView v;
    v.resize(900, 650);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    QVERIFY(show_graph(v, small_graph(false)));
    v.repaint();
    QVERIFY(!v.lastPaintLabels().empty());
    QVERIFY(shapes(v).empty());
  }

  // A real trace stage with `val` meta: s02's forward graph (Linear then relu).
  void referenceStageShowsItsShapes() {
    auto g = reference_graph("s02_linear_relu", "aot_forward_graph");
    GraphView v;
    v.resize(1100, 650);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    QVERIFY(show_graph(v, g));
    const auto drawn = shapes(v);
    const QStringList t = texts(drawn);
    qInfo("%s", qPrintable(t.join(" | ")));
    // x is 10x100, the weight 10x100 and its transpose 100x10, relu's output 10x10, le's mask bool.
    for (const char* want : {"10×100", "100×10", "10×10", "10×10 bool", "10"})
      QVERIFY2(t.contains(QString::fromUtf8(want)), want);
    for (const auto& l : drawn) QVERIFY(l.pixel_size >= GraphView::kMinLabelPx);
    QCOMPARE(overlap(v), QString());
  }

  // View > Tensor shapes: on by default, hides the labels, remembered for the next window.
  void viewMenuToggleIsRemembered() {
    QSettings().remove("view/shapes");
    {
      viewer::Workbench w;
      QAction* toggle = nullptr;
      for (QAction* a : w.findChildren<QAction*>())
        if (a->text().remove('&') == "Tensor shapes") toggle = a;
      QVERIFY(toggle);
      QVERIFY(toggle->isCheckable());
      QVERIFY(toggle->isChecked());
      QVERIFY(w.graphView()->showShapes());
      toggle->trigger();
      QVERIFY(!w.graphView()->showShapes());
      QCOMPARE(QSettings().value("view/shapes").toBool(), false);
    }
    viewer::Workbench again;
    QVERIFY(!again.graphView()->showShapes());
    QSettings().remove("view/shapes");
  }
};

QTEST_MAIN(TestGraphViewShapes)
#include "test_graph_view_shapes.moc"
