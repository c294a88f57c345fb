// The graph view widget under the offscreen platform: layout arrives
// asynchronously, scopes collapse and expand, find, clicks, colours, and the
// two open-to-first-paint timings the workbench promises.
#include <QElapsedTimer>
#include <QFontMetricsF>
#include <QHelpEvent>
#include <QImage>
#include <QSignalSpy>
#include <QToolTip>

#include <set>

#include "core/trace/reader.h"
#include "test_support.h"
#include "session/graph_layout_worker.h"
#include "session/graph_scene.h"
#include "viewer/graph_view.h"

using namespace kiln;

namespace {

Node op_node(std::string name, std::string target, std::vector<NodeId> inputs, std::string scope) {
  Node n;
  n.op = OpKind::CallFunction;
  n.target = std::move(target);
  n.name = std::move(name);
  for (NodeId i : inputs) n.args.push_back(Arg::node(i));
  n.meta.scope = std::move(scope);
  n.meta.val = Val::of_tensor({"float32", {SymInt::of(8), SymInt::of(16)}, std::nullopt, "cpu", "", ""});
  return n;
}

// `scopes` module scopes ("blocks.<i>.mlp" or "blocks.<i>.attn"; with a
// `root` of "" they are top-level: "<i>.mlp"), each a chain of diamonds of
// `per_scope` nodes, between an input and an output.
std::shared_ptr<Graph> scoped_graph(int scopes, int per_scope, const std::string& root = "blocks.") {
  auto g = std::make_shared<Graph>();
  Node x;
  x.op = OpKind::Placeholder;
  x.name = x.target = "x";
  x.meta.val = Val::of_tensor({"float32", {SymInt::of(8), SymInt::of(16)}, std::nullopt, "cpu", "", ""});
  NodeId last = g->add(x);
  for (int s = 0; s < scopes; ++s) {
    std::string scope = QString("%1%2.%3").arg(QString::fromStdString(root)).arg(s).arg(s % 2 ? "mlp" : "attn").toStdString();
    for (int k = 0; k < per_scope; k += 4) {
      std::string base = QString("s%1_%2_").arg(s).arg(k).toStdString();
      NodeId a = g->add(op_node(base + "mm", "aten::mm.default", {last}, scope));
      NodeId b = g->add(op_node(base + "relu", "aten::relu.default", {last}, scope));
      NodeId c = g->add(op_node(base + "add", "aten::add.Tensor", {a, b}, scope));
      last = g->add(op_node(base + "sigmoid", "aten::sigmoid.default", {c}, scope));
    }
  }
  Node out;
  out.op = OpKind::Output;
  out.name = out.target = "output";
  out.args.push_back(Arg::tuple({Arg::node(last)}));
  g->add(out);
  return g;
}

// A small graph without scopes: x -> sin -> cos -> add(sin, cos) -> output.
std::shared_ptr<Graph> tiny_graph() {
  auto g = std::make_shared<Graph>();
  Node x;
  x.op = OpKind::Placeholder;
  x.name = x.target = "x";
  x.meta.val = Val::of_tensor({"float32", {SymInt::of(4), SymInt::of(8)}, std::nullopt, "cpu", "", ""});
  NodeId xi = g->add(x);
  NodeId s = g->add(op_node("sin", "aten::sin.default", {xi}, ""));
  NodeId c = g->add(op_node("cos", "aten::cos.default", {s}, ""));
  NodeId a = g->add(op_node("add", "aten::add.Tensor", {s, c}, ""));
  Node out;
  out.op = OpKind::Output;
  out.name = out.target = "output";
  out.args.push_back(Arg::tuple({Arg::node(a)}));
  g->add(out);
  return g;
}

bool wait_layout(QSignalSpy& ready, int timeout_ms = 30000) {
  return ready.count() > 0 || ready.wait(timeout_ms);
}

// setGraph -> layoutReady -> the first painted frame, in milliseconds.
struct OpenTiming {
  qint64 layout_ready_ms = -1, first_paint_ms = -1;
};
OpenTiming open_and_paint(GraphView& v, std::shared_ptr<const Graph> g) {
  QSignalSpy ready(&v, &GraphView::layoutReady);
  OpenTiming t;
  QElapsedTimer timer;
  bool waiting_for_paint = false;
  auto connection = QObject::connect(&v, &GraphView::painted, [&] {
    if (waiting_for_paint && t.first_paint_ms < 0) t.first_paint_ms = timer.elapsed();
  });
  timer.start();
  v.setGraph(std::move(g));
  if (!ready.wait(30000)) return t;
  t.layout_ready_ms = timer.elapsed();
  waiting_for_paint = true;
  (void)QTest::qWaitFor([&] { return t.first_paint_ms >= 0; }, 10000);
  QObject::disconnect(connection);
  return t;
}

int distinct_colors(const QImage& img) {
  std::set<QRgb> colors;
  for (int y = 0; y < img.height(); y += 3)
    for (int x = 0; x < img.width(); x += 3) colors.insert(img.pixel(x, y));
  return int(colors.size());
}

std::shared_ptr<const Graph> reference_graph(const std::string& stage) {
  QElapsedTimer timer;
  timer.start();
  static auto t = trace::open_trace(test::reference_dir() + "/traces/s05_resnet18_train");
  if (!t) qFatal("%s", t.status().to_string().c_str());
  for (const trace::CompileEntry& e : t->entries) {
    if (!e.artifact(stage)) continue;
    auto g = t->graph(e, stage);
    qInfo("%s: opened and parsed in %lld ms (before setGraph)", stage.c_str(), timer.elapsed());
    if (!g) qFatal("%s: %s", stage.c_str(), g.status().to_string().c_str());
    return *g;
  }
  qFatal("no %s in the reference trace", stage.c_str());
}

}  // namespace

class TestGraphView : public QObject {
  Q_OBJECT
 private slots:
  void init() { GraphLayoutWorker::instance().clear_cache(); }

  void smallGraphOpensExpanded() {
    GraphView v;
    v.resize(800, 600);
    v.show();
    QVERIFY(!v.isLayoutReady());
    QSignalSpy ready(&v, &GraphView::layoutReady);
    QSignalSpy progress(&v, &GraphView::layoutProgress);
    auto g = scoped_graph(4, 12);  // 50 nodes: under the threshold
    v.setGraph(g);
    QVERIFY(wait_layout(ready));
    QVERIFY(v.isLayoutReady());
    QCOMPARE(v.visibleBoxCount(), int(g->size()));
    QVERIFY(!v.isScopeCollapsed("blocks.1.mlp"));
    QCOMPARE(progress.last().at(0).toInt(), 100);
    QCOMPARE(v.lastLayoutEngine(), QString("dot"));
    // The screenshot is a picture, not a blank widget.
    QImage img = v.grab().toImage();
    QVERIFY2(distinct_colors(img) > 8, qPrintable(QString("%1 colours").arg(distinct_colors(img))));
  }

  void bigGraphOpensCollapsedAndExpandsOnDoubleClick() {
    GraphView v;
    v.resize(1000, 700);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    auto g = scoped_graph(10, 40);  // 402 nodes: over the threshold
    QSignalSpy ready(&v, &GraphView::layoutReady);
    v.setGraph(g);
    QVERIFY(wait_layout(ready));
    // x, "blocks" (all ten blocks in one box), output.
    QCOMPARE(v.visibleBoxCount(), 3);
    QVERIFY(v.isScopeCollapsed("blocks"));
    QCOMPARE(v.nodeCenter(5), v.nodeCenter(300));  // both inside the "blocks" box

    ready.clear();
    QTest::mouseDClick(&v, Qt::LeftButton, {}, v.nodeCenter(5));
    QVERIFY(wait_layout(ready));
    QVERIFY(!v.isScopeCollapsed("blocks"));
    QVERIFY(v.isScopeCollapsed("blocks.3"));  // one level at a time
    QCOMPARE(v.visibleBoxCount(), 2 + 10);
    QVERIFY(v.nodeCenter(5) != v.nodeCenter(300));

    ready.clear();
    v.expandScope("blocks.3.mlp");  // expands blocks.3 on the way
    QVERIFY(wait_layout(ready));
    QCOMPARE(v.visibleBoxCount(), 2 + 9 + 40);

    ready.clear();
    v.collapseScope("blocks");
    QVERIFY(wait_layout(ready));
    QCOMPARE(v.visibleBoxCount(), 3);
    QVERIFY(v.lastLayoutFromCache());  // seen before

    ready.clear();
    v.expandAll();
    QVERIFY(wait_layout(ready));
    QCOMPARE(v.visibleBoxCount(), int(g->size()));
  }

  void clicksSelectAndSignal() {
    GraphView v;
    v.resize(800, 600);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    QSignalSpy ready(&v, &GraphView::layoutReady);
    QSignalSpy clicked(&v, &GraphView::nodeClicked);
    QSignalSpy doubled(&v, &GraphView::nodeDoubleClicked);
    auto g = tiny_graph();
    v.setGraph(g);
    QVERIFY(wait_layout(ready));
    const NodeId cos = g->find("cos");
    const QPoint at = v.nodeCenter(cos);
    QVERIFY(v.rect().contains(at));
    QTest::mouseClick(&v, Qt::LeftButton, {}, at);
    QCOMPARE(clicked.count(), 1);
    QCOMPARE(clicked.at(0).at(0).value<NodeId>(), cos);
    QCOMPARE(v.selectedNodes(), std::vector<NodeId>{cos});
    QTest::mouseDClick(&v, Qt::LeftButton, {}, at);
    QCOMPARE(doubled.count(), 1);
    QCOMPARE(doubled.at(0).at(0).value<NodeId>(), cos);
    // A click on empty space emits nothing.
    QTest::mouseClick(&v, Qt::LeftButton, {}, QPoint(3, 3));
    QCOMPARE(clicked.count(), 1);
    // A drag pans instead of clicking.
    const QPoint before = v.nodeCenter(cos);
    QTest::mousePress(&v, Qt::LeftButton, {}, QPoint(100, 100));
    QMouseEvent move(QEvent::MouseMove, QPointF(160, 130), v.mapToGlobal(QPointF(160, 130)), Qt::NoButton,
                     Qt::LeftButton, {});
    QApplication::sendEvent(&v, &move);
    QTest::mouseRelease(&v, Qt::LeftButton, {}, QPoint(160, 130));
    QCOMPARE(v.nodeCenter(cos), before + QPoint(60, 30));
    QCOMPARE(clicked.count(), 1);
  }

  void zoomAndFit() {
    GraphView v;
    v.resize(800, 600);
    v.show();
    QSignalSpy ready(&v, &GraphView::layoutReady);
    v.setGraph(tiny_graph());
    QVERIFY(wait_layout(ready));
    const double z = v.zoom();
    QTest::keyClick(&v, Qt::Key_Plus);
    QVERIFY(v.zoom() > z);
    QWheelEvent wheel(QPointF(400, 300), v.mapToGlobal(QPointF(400, 300)), {}, QPoint(0, -240), Qt::NoButton, {},
                      Qt::NoScrollPhase, false);
    QApplication::sendEvent(&v, &wheel);
    QVERIFY(v.zoom() < z);
    QTest::keyClick(&v, Qt::Key_F);
    QCOMPARE(v.zoom(), z);  // the first view of a small graph is the fitted one
    for (NodeId id = 0; id < NodeId(v.graph()->size()); ++id) QVERIFY(v.rect().contains(v.nodeCenter(id)));
  }

  void findByNameTargetOrOp() {
    GraphView v;
    v.resize(800, 600);
    v.show();
    QSignalSpy ready(&v, &GraphView::layoutReady);
    auto g = scoped_graph(10, 40);  // opens collapsed
    v.setGraph(g);
    QVERIFY(wait_layout(ready));
    QVERIFY(v.isScopeCollapsed("blocks"));
    ready.clear();
    QVERIFY(v.find("SIGMOID"));  // case-insensitive, by target
    const NodeId first = v.selectedNodes().at(0);
    QCOMPARE((*g)[first].target, std::string("aten::sigmoid.default"));
    // The match was inside collapsed scopes: they open to show it.
    QVERIFY(wait_layout(ready));
    QVERIFY(!v.isScopeCollapsed("blocks.0.attn"));
    QVERIFY(v.rect().contains(v.nodeCenter(first)));
    QVERIFY(v.find("sigmoid"));  // the next match
    QVERIFY(v.selectedNodes().at(0) > first);
    QVERIFY(v.find("s7_12_relu"));  // by name
    QCOMPARE(v.selectedNodes().at(0), g->find("s7_12_relu"));
    QVERIFY(v.find("placeholder"));  // by op kind
    QCOMPARE(v.selectedNodes().at(0), NodeId(0));
    QVERIFY(!v.find("no such node"));
    QCOMPARE(v.selectedNodes().at(0), NodeId(0));  // a miss keeps the selection
  }

  void coloursMarksAndTooltips() {
    GraphView v;
    v.resize(600, 500);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    QSignalSpy ready(&v, &GraphView::layoutReady);
    auto g = tiny_graph();
    v.setGraph(g, {-1, 0, 0, 1, -1});
    QVERIFY(wait_layout(ready));
    const QPoint sin = v.nodeCenter(g->find("sin"));
    auto pixel_near = [&](QPoint p) { return v.grab().toImage().pixel(p + QPoint(0, 12)); };
    const QRgb by_op = pixel_near(sin);
    v.setColorMode(GraphColorMode::FusionGroup);
    const QRgb by_group = pixel_near(sin);
    QVERIFY(by_op != by_group);
    v.setColorMode(GraphColorMode::Numerics);
    v.setNodeErrors({std::nan(""), 1e-9, 1e-5, 0.5, std::nan("")});
    const QRgb good = pixel_near(sin);
    const QRgb bad = pixel_near(v.nodeCenter(g->find("add")));
    QVERIFY(qRed(bad) > qRed(good) && qGreen(good) > qGreen(bad));
    QCOMPARE(v.colorMode(), GraphColorMode::Numerics);

    const QImage plain = v.grab().toImage();
    v.markNodes({g->find("cos")}, Qt::red);
    QVERIFY(v.grab().toImage() != plain);
    v.clearMarks();
    QCOMPARE(v.grab().toImage(), plain);
    v.selectNodes({g->find("cos")});
    QVERIFY(v.grab().toImage() != plain);
    v.selectNodes({});
    QVERIFY(v.selectedNodes().empty());

    // Hovering a box shows the node; hovering the edge sin -> cos shows the value's shape.
    QHelpEvent on_box(QEvent::ToolTip, sin, v.mapToGlobal(sin));
    QApplication::sendEvent(&v, &on_box);
    QTRY_VERIFY(QToolTip::isVisible());
    QVERIFY(QToolTip::text().contains("aten::sin.default"));
    const QPoint cos = v.nodeCenter(g->find("cos"));
    // The edge sin -> cos is the only one leaving sin's bottom straight down: probe between the boxes.
    bool found = false;
    for (int dy = 0; dy < cos.y() - sin.y() && !found; dy += 2) {
      QPoint p((sin.x() + cos.x()) / 2, sin.y() + dy);
      QHelpEvent on_edge(QEvent::ToolTip, p, v.mapToGlobal(p));
      QApplication::sendEvent(&v, &on_edge);
      found = QToolTip::isVisible() && QToolTip::text().startsWith("sin: f32[8, 16]");
    }
    QVERIFY(found);
  }

  void emptyAndMissingGraphs() {
    GraphView v;
    v.resize(400, 300);
    v.show();
    QSignalSpy ready(&v, &GraphView::layoutReady);
    v.setGraph(std::make_shared<Graph>());
    QVERIFY(wait_layout(ready));
    QCOMPARE(v.visibleBoxCount(), 0);
    QVERIFY(!v.find("anything"));
    v.fitToView();
    QVERIFY(!v.grab().isNull());
    v.setGraph(nullptr);
    QVERIFY(!v.isLayoutReady());
    QCOMPARE(v.visibleBoxCount(), 0);
    v.selectNodes({3});  // ids that do not exist are ignored
    QVERIFY(v.selectedNodes().empty());
    QCOMPARE(v.nodeCenter(0), QPoint());
  }

  void staleRequestsAreReplaced() {
    GraphView v;
    v.resize(600, 500);
    v.show();
    QSignalSpy ready(&v, &GraphView::layoutReady);
    v.setGraph(scoped_graph(40, 40));
    v.setGraph(scoped_graph(3, 8));
    auto last = tiny_graph();
    v.setGraph(last);
    QVERIFY(wait_layout(ready));
    QTest::qWait(200);
    QCOMPARE(ready.count(), 1);  // only the newest graph is ever shown
    QCOMPARE(v.graph(), std::shared_ptr<const Graph>(last));
    QCOMPARE(v.visibleBoxCount(), int(last->size()));
    // Destroying a view with a layout in flight is safe.
    auto* doomed = new GraphView;
    doomed->setGraph(scoped_graph(40, 40));
    delete doomed;
    QTest::qWait(100);
  }

  void resnet18OpensWithinTwoSeconds() {
    for (const char* stage : {"aot_joint_graph", "aot_forward_graph", "aot_backward_graph"}) {
      auto g = reference_graph(stage);
      GraphView v;
      v.resize(1600, 1000);
      v.show();
      QVERIFY(QTest::qWaitForWindowExposed(&v));
      OpenTiming t = open_and_paint(v, g);
      QVERIFY(t.first_paint_ms >= 0);
      qInfo("%s: %zu nodes, %d boxes, %s layout %.0f ms; layoutReady %lld ms, first paint %lld ms", stage, g->size(),
            v.visibleBoxCount(), qPrintable(v.lastLayoutEngine()), v.lastLayoutMs(), t.layout_ready_ms,
            t.first_paint_ms);
      QVERIFY2(t.first_paint_ms < 6000, "target 2 s, 3x for a noisy CI machine");
      QVERIFY(distinct_colors(v.grab().toImage()) > 8);
    }
  }

  // Box widths come from the font's own advances: op names (bold) are never cut
  // short ("permute" once showed as "pe...te"), whatever their letters.
  void boxesFitTheirText() {
    auto g = std::make_shared<Graph>();
    Node x;
    x.op = OpKind::Placeholder;
    x.name = x.target = "x";
    NodeId last = g->add(x);
    for (const char* target : {"aten::permute.default", "aten::convolution.default", "aten::unsqueeze.default",
                               "aten::squeeze.dims", "aten::mm.default", "aten::max_pool2d_with_indices.default"})
      last = g->add(op_node(std::string(target).substr(6, 7), target, {last}, ""));
    QFont plain;
    plain.setPixelSize(11);  // GraphView's font
    QFont bold = plain;
    bold.setBold(true);
    QFontMetricsF title(bold), subtitle(plain);
    TextMetrics m;
    m.char_width = title.averageCharWidth();  // as GraphView sets it; also the width cap's unit
    for (int c = 32; c < 127; ++c) {
      m.title_advance[size_t(c)] = float(title.horizontalAdvance(QChar(c)));
      m.subtitle_advance[size_t(c)] = float(subtitle.horizontalAdvance(QChar(c)));
    }
    GraphScene scene = build_scene(*g, {});
    LayoutInput in = layout_input(*g, scene, m);
    for (size_t i = 0; i < scene.boxes.size(); ++i) {
      BoxText t = box_text(*g, scene.boxes[i]);
      // The painter draws text 6 units in from each side.
      double inner = in.boxes[i].width - 12;
      QVERIFY2(inner >= title.horizontalAdvance(QString::fromStdString(t.title)), t.title.c_str());
      QVERIFY2(inner >= subtitle.horizontalAdvance(QString::fromStdString(t.subtitle)), t.subtitle.c_str());
    }
    // Another font is another layout: the cache must not hand back boxes of the old sizes.
    TextMetrics wider = m;
    wider.title_advance['m'] += 1;
    QVERIFY(scene_layout_key(*g, {}, m) != scene_layout_key(*g, {}, wider));
  }

  // A big graph too wide to read when fitted opens at its top, at a readable
  // zoom, with the first op of the computation on screen (not a corner of inputs).
  void bigGraphFirstViewShowsWhereTheComputationStarts() {
    auto g = reference_graph("aot_joint_graph");
    GraphView v;
    v.resize(760, 520);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    QSignalSpy ready(&v, &GraphView::layoutReady);
    v.setGraph(g);
    QVERIFY(wait_layout(ready));
    QVERIFY2(v.zoom() >= 0.35, qPrintable(QString::number(v.zoom())));
    NodeId first_op = kNoNode;
    for (NodeId id = 0; id < NodeId(g->size()) && first_op == kNoNode; ++id)
      if ((*g)[id].op == OpKind::CallFunction) first_op = id;
    QPoint p = v.nodeCenter(first_op);
    QVERIFY2(QRect(0, 0, v.width(), v.height()).contains(p), qPrintable(QString("%1, %2").arg(p.x()).arg(p.y())));
  }

  void fiveThousandNodesOpenCollapsedWithinOneSecond() {
    auto g = scoped_graph(50, 100, "layer");  // layer0.attn, layer1.mlp, ...
    QVERIFY(g->size() >= 5000);
    GraphView v;
    v.resize(1600, 1000);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    OpenTiming t = open_and_paint(v, g);
    QVERIFY(t.first_paint_ms >= 0);
    qInfo("synthetic: %zu nodes, %d boxes, %s layout %.1f ms%s; layoutReady %lld ms, first paint %lld ms", g->size(),
          v.visibleBoxCount(), qPrintable(v.lastLayoutEngine()), v.lastLayoutMs(),
          v.lastLayoutFromCache() ? " (cached)" : "", t.layout_ready_ms, t.first_paint_ms);
    QVERIFY(!v.lastLayoutFromCache());
    QCOMPARE(v.visibleBoxCount(), 52);  // x, 50 layers, output
    QVERIFY2(t.first_paint_ms < 3000, "target 1 s, 3x for a noisy CI machine");
    // Opening one layer down to its nodes is still quick.
    QSignalSpy ready(&v, &GraphView::layoutReady);
    QElapsedTimer timer;
    timer.start();
    v.expandScope("layer3.mlp");
    QVERIFY(wait_layout(ready));
    qInfo("expanding 'layer3.mlp': %d boxes in %lld ms", v.visibleBoxCount(), timer.elapsed());
    QCOMPARE(v.visibleBoxCount(), 51 + 100);
    // Everything expanded: 5,002 boxes, too many for dot, so the layered engine.
    ready.clear();
    timer.restart();
    v.expandAll();
    QVERIFY(wait_layout(ready));
    const qint64 ready_ms = timer.elapsed();
    v.repaint();
    qInfo("expand all: %d boxes, %s layout %.0f ms, layoutReady %lld ms, painted %lld ms", v.visibleBoxCount(),
          qPrintable(v.lastLayoutEngine()), v.lastLayoutMs(), ready_ms, timer.elapsed());
    QCOMPARE(v.visibleBoxCount(), int(g->size()));
    QCOMPARE(v.lastLayoutEngine(), QString("layered"));
    QVERIFY2(timer.elapsed() < 10000, "a fully expanded 5,000-node graph stays usable");
  }
};

QTEST_MAIN(TestGraphView)
#include "test_graph_view.moc"
