// Big graphs in the graph view (issue 25, problem 3): module scopes for dumps
// and for Kiln's own programs, opened collapsed; collapse all; landmarks when
// fitted; labels at every zoom and never under kMinLabelPx; small graphs not
// opening as blank boxes; names shortened from the front, full on hover.
#include <QHelpEvent>
#include <QSignalSpy>
#include <QToolTip>
#include <QtTest/QtTest>

#include <filesystem>

#include "core/trace/reader.h"
#include "session/graph_layout_worker.h"
#include "session/graph_scene.h"
#include "session/session.h"
#include "test_support.h"
#include "viewer/graph_view.h"
#include "viewer/graph_view_bench.h"

using namespace kiln;

namespace {

std::shared_ptr<const Graph> reference_graph(const std::string& stage) {
  static auto t = trace::open_trace(test::reference_dir() + "/traces/s05_resnet18_train");
  if (!t) qFatal("%s", t.status().to_string().c_str());
  auto g = t->graph(t->entries.at(0), stage);
  if (!g) qFatal("%s: %s", stage.c_str(), g.status().to_string().c_str());
  return *g;
}

// resnet18_train.py's joint graph as the workbench gets it (Kiln's own capture and AOT).
std::shared_ptr<const Graph> program_joint_graph() {
  static std::shared_ptr<const Graph> joint;
  if (joint) return joint;
  session::LoadOptions o;
  o.codegen = false;
  auto s = session::load_program(std::string(KILN_SOURCE_DIR) + "/resources/examples/resnet18_train.py", o);
  if (!s) qFatal("%s", s.status().to_string().c_str());
  for (const session::SessionCompile& c : (*s)->compiles)
    for (const session::SessionStage& st : c.stages)
      if (st.name == "aot_joint_graph" && st.graph) return joint = st.graph;
  qFatal("no aot_joint_graph");
}

bool show_graph(GraphView& v, std::shared_ptr<const Graph> g) {
  QSignalSpy ready(&v, &GraphView::layoutReady);
  v.setGraph(std::move(g));
  return ready.wait(30000);
}

bool relayout(GraphView& v, const std::function<void()>& change) {
  QSignalSpy ready(&v, &GraphView::layoutReady);
  change();
  return ready.wait(30000);
}

const std::vector<GraphView::DrawnLabel>& paint(GraphView& v) {
  v.repaint();
  return v.lastPaintLabels();
}

double smallest(const std::vector<GraphView::DrawnLabel>& labels) {
  double px = 1e9;
  for (const auto& l : labels) px = std::min(px, l.pixel_size);
  return px;
}

int count_labels(const std::vector<GraphView::DrawnLabel>& labels, bool scope) {
  return int(std::count_if(labels.begin(), labels.end(), [&](const auto& l) { return l.scope == scope; }));
}

bool has_label_starting(const std::vector<GraphView::DrawnLabel>& labels, const QString& prefix) {
  return std::any_of(labels.begin(), labels.end(), [&](const auto& l) { return l.text.startsWith(prefix); });
}

}  // namespace

class TestGraphViewBig : public QObject {
  Q_OBJECT
 private slots:
  void init() { GraphLayoutWorker::instance().clear_cache(); }

  // Scopes for dumps: the reference joint graph (1,422 nodes) opens as its
  // top-level modules, each a box whose name and op count can be read.
  void dumpJointGraphOpensCollapsedIntoScopes() {
    auto g = reference_graph("aot_joint_graph");
    QCOMPARE(g->size(), size_t(1422));
    GraphView v;
    v.resize(1100, 650);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    qint64 first_paint = -1;
    QElapsedTimer timer;
    bool ready = false;
    connect(&v, &GraphView::layoutReady, this, [&] { ready = true; });
    connect(&v, &GraphView::painted, this, [&] {
      if (ready && first_paint < 0) first_paint = timer.elapsed();
    });
    timer.start();
    v.setGraph(g);
    QTRY_VERIFY_WITH_TIMEOUT(first_paint >= 0, 30000);
    qInfo("joint graph: %d boxes, %s layout %.0f ms, first paint %lld ms", v.visibleBoxCount(),
          qPrintable(v.lastLayoutEngine()), v.lastLayoutMs(), first_paint);
    QVERIFY2(first_paint < 3000, "target 1 s, 3x for a noisy CI machine");
    QVERIFY2(v.visibleBoxCount() < 30, qPrintable(QString::number(v.visibleBoxCount())));
    QVERIFY(v.isScopeCollapsed("layer1"));
    const auto& labels = paint(v);
    for (const char* s : {"conv1", "bn1", "layer1", "layer2", "layer3", "layer4", "fc"})
      QVERIFY2(has_label_starting(labels, QString(s) + " · "), s);  // "layer1 · 260 ops"
    QVERIFY(smallest(labels) >= GraphView::kMinLabelPx);
    // One level down: layer1's blocks.
    QVERIFY(relayout(v, [&] { v.expandScope("layer1"); }));
    QVERIFY(v.isScopeCollapsed("layer1.0"));
    QVERIFY(has_label_starting(paint(v), "layer1.0") || v.zoom() * 11 >= GraphView::kMinLabelPx);
  }

  // Scopes for Kiln's own programs: resnet18_train.py's joint graph (546 nodes)
  // carries the module paths of its capture and opens collapsed.
  void programJointGraphHasModuleScopes() {
    auto g = program_joint_graph();
    const std::set<std::string> scopes = scope_paths(*g);
    for (const char* s : {"conv1", "layer1", "layer1.0", "layer1.0.conv1", "layer2.0.downsample.0", "fc"})
      QVERIFY2(scopes.count(s), s);
    GraphView v;
    v.resize(1000, 650);
    v.show();
    QVERIFY(show_graph(v, g));
    QVERIFY2(v.visibleBoxCount() < 60, qPrintable(QString::number(v.visibleBoxCount())));
    QVERIFY(v.isScopeCollapsed("layer3"));
  }

  // "Collapse all scopes" folds an expanded program graph back to its top levels.
  void collapseAllFoldsBackToTheTopLevels() {
    auto g = program_joint_graph();
    GraphView v;
    v.resize(1000, 650);
    v.show();
    QVERIFY(show_graph(v, g));
    const int collapsed = v.visibleBoxCount();
    QVERIFY(relayout(v, [&] { v.expandAll(); }));
    QCOMPARE(v.visibleBoxCount(), int(g->size()));
    QVERIFY(relayout(v, [&] { v.collapseAll(); }));
    QCOMPARE(v.visibleBoxCount(), collapsed);
    QVERIFY(collapsed < int(g->size()) / 5);
  }

  // Landmarks: the whole joint graph expanded and fitted shows where each
  // top-level module lies, in labels that can be read.
  void fittedExpandedGraphHasLandmarks() {
    GraphView v;
    v.resize(1100, 650);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    QVERIFY(show_graph(v, reference_graph("aot_joint_graph")));
    QVERIFY(relayout(v, [&] { v.expandAll(); }));
    v.fitToView();
    const auto& labels = paint(v);
    qInfo("fitted: %d boxes at zoom %.3f, %zu labels", v.visibleBoxCount(), v.zoom(), labels.size());
    if (qEnvironmentVariableIsSet("KILN_SCREENSHOT_DIR"))  // docs/images/workbench_bigraph_fitted.png
      v.grab().save(qEnvironmentVariable("KILN_SCREENSHOT_DIR") + "/workbench_bigraph_fitted.png");
    int layers = 0;
    for (const char* s : {"layer1", "layer2", "layer3", "layer4"}) layers += has_label_starting(labels, QString(s) + " · ");
    QVERIFY2(layers >= 3, qPrintable(QString("%1 of the four layers labelled").arg(layers)));
    QVERIFY(smallest(labels) >= GraphView::kMinLabelPx);
  }

  // Four wheel notches out from the first view still leave readable labels;
  // zooming back in brings the node names back.
  void labelsSurviveZoomingOut() {
    GraphView v;
    v.resize(1100, 650);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    QVERIFY(show_graph(v, reference_graph("aot_forward_graph")));
    QVERIFY(relayout(v, [&] { v.expandAll(); }));
    v.setZoom(0.8);
    const int names_close = count_labels(paint(v), false);
    QVERIFY(names_close > 10);
    const QPointF c(v.width() / 2.0, v.height() / 2.0);
    for (int i = 0; i < 4; ++i) {
      QWheelEvent wheel(c, v.mapToGlobal(c), {}, QPoint(0, -120), Qt::NoButton, {}, Qt::NoScrollPhase, false);
      QApplication::sendEvent(&v, &wheel);
    }
    QVERIFY(v.zoom() < 0.4);
    const auto& far = paint(v);
    QVERIFY2(count_labels(far, false) > 10, "node titles at the smallest readable size");
    QVERIFY(count_labels(far, true) > 0);  // and the scopes' regions
    QVERIFY(smallest(far) >= GraphView::kMinLabelPx);
    for (int i = 0; i < 4; ++i) {
      QWheelEvent wheel(c, v.mapToGlobal(c), {}, QPoint(0, 120), Qt::NoButton, {}, Qt::NoScrollPhase, false);
      QApplication::sendEvent(&v, &wheel);
    }
    QCOMPARE(count_labels(paint(v), false), names_close);
  }

  // A small graph too tall to fit readably opens at a readable zoom, not as blank boxes.
  void smallTallGraphOpensReadable() {
    auto g = std::make_shared<Graph>();
    Node x;
    x.op = OpKind::Placeholder;
    x.name = x.target = "x";
    NodeId last = g->add(x);
    for (int i = 0; i < 40; ++i) {
      Node n;
      n.name = "relu_" + std::to_string(i);
      n.target = "aten::relu.default";
      n.args.push_back(Arg::node(last));
      last = g->add(n);
    }
    // The graph's height at zoom 1, then a view that fits it at zoom 0.37 (where text used to vanish).
    double height = 0;
    {
      GraphView probe;
      probe.resize(800, 600);
      probe.show();
      QVERIFY(show_graph(probe, g));
      probe.setZoom(1.0);
      height = probe.nodeCenter(last).y() - probe.nodeCenter(0).y() + 100;
    }
    GraphView v;
    v.resize(800, int(0.37 * height));
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    QVERIFY(show_graph(v, g));
    const auto& labels = paint(v);
    QVERIFY2(count_labels(labels, false) >= 5, qPrintable(QString("%1 labels at zoom %2").arg(labels.size()).arg(v.zoom())));
    QVERIFY(smallest(labels) >= GraphView::kMinLabelPx);
  }

  // Dynamo's long input names read as module paths shortened from the front;
  // the tooltip has the full name.
  void namesShortenedFromTheFront() {
    auto g = reference_graph("dynamo_output_graph");
    const std::string full = "l_self_modules_layer2_modules_0_modules_downsample_modules_1_buffers_num_batches_tracked_";
    const NodeId id = g->find(full);
    QVERIFY(id != kNoNode);
    GraphView v;
    v.resize(1100, 650);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    QVERIFY(show_graph(v, g));
    if (v.isScopeCollapsed("layer2")) QVERIFY(relayout(v, [&] { v.expandAll(); }));
    v.setZoom(1.0);
    v.selectNodes({id});  // scrolls it into view
    const QPoint at = v.nodeCenter(id);
    QVERIFY(v.rect().contains(at));
    const auto& labels = paint(v);
    const GraphView::DrawnLabel* name = nullptr;
    for (const auto& l : labels)
      if (l.rect.contains(at + QPoint(0, 6)) && !l.scope) name = &l;
    QVERIFY(name);
    QVERIFY2(name->text.startsWith(QStringLiteral("…")) && name->text.endsWith("1.num_batches_tracked"),
             qPrintable(name->text));
    QHelpEvent hover(QEvent::ToolTip, at, v.mapToGlobal(at));
    QApplication::sendEvent(&v, &hover);
    QTRY_VERIFY(QToolTip::isVisible());
    QVERIFY2(QToolTip::text().contains(QString::fromStdString(full)), qPrintable(QToolTip::text()));
  }

  // Every graph stage of every reference trace, at the zoom it opens with:
  // something is labelled, and no label is under kMinLabelPx; shape labels
  // included, and none of them over a box's text or another shape.
  void noLabelUnder8pxAtAnyStagesFirstView() {
    int stages = 0, with_shapes = 0;
    for (const auto& dir : std::filesystem::directory_iterator(test::reference_dir() + "/traces")) {
      auto t = trace::open_trace(dir.path().string());
      if (!t) continue;
      for (const trace::CompileEntry& e : t->entries)
        for (const trace::Artifact& a : e.artifacts) {
          if (!a.graph) continue;
          auto g = t->graph(e, a.name);
          if (!g || (*g)->size() == 0) continue;
          GraphView v;
          v.resize(1100, 650);
          v.show();
          QVERIFY(QTest::qWaitForWindowExposed(&v));
          QVERIFY(show_graph(v, *g));
          const auto& labels = paint(v);
          const QString what = QString("%1 %2 %3: %4 labels, smallest %5 px at zoom %6")
                                   .arg(dir.path().filename().c_str(), e.label.c_str(), a.name.c_str())
                                   .arg(labels.size()).arg(smallest(labels)).arg(v.zoom());
          QVERIFY2(!labels.empty(), qPrintable(what));
          QVERIFY2(smallest(labels) >= GraphView::kMinLabelPx, qPrintable(what));
          with_shapes += std::any_of(labels.begin(), labels.end(), [](const auto& l) { return l.shape; });
          for (const auto& a : labels)
            for (const auto& b : labels)
              if (a.shape && &a != &b)
                QVERIFY2(!a.rect.intersects(b.rect), qPrintable(what + ": " + a.text + " over " + b.text));
          ++stages;
        }
    }
    qInfo("%d graph stages checked, %d with shapes on their edges", stages, with_shapes);
    QVERIFY(stages > 20);
    QVERIFY2(with_shapes > stages / 2, "most dumps carry their values' meta");
  }

  // The --bench-view graph: its size, and the benchmark runs and reports.
  void benchViewReports() {
    auto g = bench_graph(2000);
    QCOMPARE(int(g->size()), 2000);
    QVERIFY(scope_paths(*g).count("stage0.0.conv1"));
    const QString report = run_view_bench(2000, 900, 600);
    qInfo("%s", qPrintable(report));
    QVERIFY(report.contains("all expanded: 2000 boxes"));
    QVERIFY(report.contains("fps at p95"));
  }
};

QTEST_MAIN(TestGraphViewBig)
#include "test_graph_view_big.moc"
