#include "viewer/graph_view_bench.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QTimer>
#include <QWheelEvent>
#include <QWindow>

#include <algorithm>
#include <functional>
#include <vector>

#include "viewer/graph_view.h"

namespace kiln {
namespace {

Node call(std::string name, std::string target, std::vector<NodeId> inputs, std::string scope, int64_t channels) {
  Node n;
  n.op = OpKind::CallFunction;
  n.name = std::move(name);
  n.target = std::move(target);
  for (NodeId i : inputs) n.args.push_back(Arg::node(i));
  n.meta.scope = std::move(scope);
  n.meta.val = Val::of_tensor({"float32", {SymInt::of(16), SymInt::of(channels), SymInt::of(32), SymInt::of(32)},
                               std::nullopt, "cpu", "", ""});
  return n;
}

bool wait_for(const std::function<bool()>& done, int timeout_ms) {
  QElapsedTimer t;
  t.start();
  while (!done() && t.elapsed() < timeout_ms) QApplication::processEvents(QEventLoop::AllEvents | QEventLoop::WaitForMoreEvents, 20);
  return done();
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(q * double(v.size() - 1) + 0.5))];
}

// One frame per step: an input event as a user makes it, then a synchronous paint.
std::vector<double> scripted_frames(GraphView& v) {
  std::vector<double> ms;
  QElapsedTimer t;
  int painted = 0;
  auto counter = QObject::connect(&v, &GraphView::painted, [&] { ++painted; });
  auto frame = [&](const std::function<void()>& step) {
    step();
    const int before = painted;
    t.start();
    v.repaint();
    const double elapsed = double(t.nsecsElapsed()) / 1e6;
    if (painted == before) qFatal("bench-view: repaint() painted nothing (is the view exposed?)");
    ms.push_back(elapsed);
  };
  const QPointF centre(v.width() / 2.0, v.height() / 2.0);
  auto wheel = [&](int notches) {
    QWheelEvent e(centre, v.mapToGlobal(centre), {}, QPoint(0, 120 * notches), Qt::NoButton, {}, Qt::NoScrollPhase, false);
    QApplication::sendEvent(&v, &e);
  };
  auto drag = [&](QPointF delta, int steps) {
    QPointF at = centre;
    QMouseEvent press(QEvent::MouseButtonPress, at, v.mapToGlobal(at), Qt::LeftButton, Qt::LeftButton, {});
    QApplication::sendEvent(&v, &press);
    for (int i = 0; i < steps; ++i)
      frame([&] {
        at += delta;
        QMouseEvent move(QEvent::MouseMove, at, v.mapToGlobal(at), Qt::NoButton, Qt::LeftButton, {});
        QApplication::sendEvent(&v, &move);
      });
    QMouseEvent release(QEvent::MouseButtonRelease, at, v.mapToGlobal(at), Qt::LeftButton, Qt::NoButton, {});
    QApplication::sendEvent(&v, &release);
  };
  auto key = [&](int k) {
    QKeyEvent press(QEvent::KeyPress, k, {});
    QApplication::sendEvent(&v, &press);
  };
  // Drags move along the graph (down its ranks, a little sideways), as one reads it.
  frame([] {});  // the view as it opened
  for (int i = 0; i < 12; ++i) frame([&] { wheel(-1); });  // zoom out, notch by notch
  drag(QPointF(2, -12), 30);                                 // pan zoomed out
  frame([&] { key(Qt::Key_F); });                            // fit the whole graph
  for (int i = 0; i < 20; ++i) frame([&] { wheel(1); });    // zoom in to the labels
  drag(QPointF(-2, -10), 40);                                // pan close up
  for (int i = 0; i < 20; ++i) frame([&] { key(i % 4 ? Qt::Key_Down : Qt::Key_Right); });
  for (int i = 0; i < 16; ++i) frame([&] { wheel(-1); });   // and out again
  drag(QPointF(1, 12), 30);                                  // pan back up, zoomed out
  QObject::disconnect(counter);
  return ms;
}

QString report(const char* phase, const GraphView& v, qint64 open_ms, const std::vector<double>& ms) {
  const double median = percentile(ms, 0.5), p95 = percentile(ms, 0.95), worst = percentile(ms, 1.0);
  return QString("%1: %2 boxes, %3 layout %4 ms, first paint %5 ms; %6 frames: median %7 ms, p95 %8 ms, max %9 ms; "
                 "%10 fps at the median, %11 fps at p95")
      .arg(phase)
      .arg(v.visibleBoxCount())
      .arg(v.lastLayoutEngine())
      .arg(v.lastLayoutMs(), 0, 'f', 0)
      .arg(open_ms)
      .arg(ms.size())
      .arg(median, 0, 'f', 2)
      .arg(p95, 0, 'f', 2)
      .arg(worst, 0, 'f', 2)
      .arg(median > 0 ? 1000 / median : 0, 0, 'f', 0)
      .arg(p95 > 0 ? 1000 / p95 : 0, 0, 'f', 0);
}

}  // namespace

std::shared_ptr<Graph> bench_graph(int nodes) {
  auto g = std::make_shared<Graph>();
  Node x;
  x.op = OpKind::Placeholder;
  x.name = x.target = "x";
  x.meta.val = Val::of_tensor({"float32", {SymInt::of(16), SymInt::of(64), SymInt::of(32), SymInt::of(32)},
                               std::nullopt, "cpu", "", ""});
  NodeId last = g->add(x);
  // A block: conv, norm, relu, conv, norm, add (the block's input), relu: 7 ops.
  static const char* const kBlock[][2] = {{"conv1", "aten::convolution.default"}, {"bn1", "aten::native_batch_norm.default"},
                                          {"relu", "aten::relu.default"}, {"conv2", "aten::convolution.default"},
                                          {"bn2", "aten::native_batch_norm.default"}, {"", "aten::add.Tensor"},
                                          {"relu", "aten::relu.default"}};
  const int blocks_per_stage = 12;
  int made = 1;
  for (int block = 0; made + 8 < nodes; ++block) {
    const std::string scope = "stage" + std::to_string(block / blocks_per_stage) + "." + std::to_string(block % blocks_per_stage);
    const int64_t channels = 64 << std::min(3, block / blocks_per_stage % 4);
    const NodeId input = last;
    for (const auto& [module, target] : kBlock) {
      std::vector<NodeId> in{last};
      if (std::string(target) == "aten::add.Tensor") in.push_back(input);
      std::string name = std::string(target).substr(6, std::string(target).find('.') - 6) + "_" + std::to_string(made);
      last = g->add(call(name, target, in, *module ? scope + "." + module : scope, channels));
      ++made;
    }
  }
  while (made + 1 < nodes) last = g->add(call("neg_" + std::to_string(made++), "aten::neg.default", {last}, "", 64));
  Node out;
  out.op = OpKind::Output;
  out.name = out.target = "output";
  out.args.push_back(Arg::tuple({Arg::node(last)}));
  g->add(out);
  return g;
}

QString run_view_bench(int nodes, int width, int height) {
  GraphView v;
  v.resize(width, height);
  v.show();
  // Painting needs an exposed window (offscreen too).
  wait_for([&] { return v.windowHandle() && v.windowHandle()->isExposed(); }, 5000);
  auto g = bench_graph(nodes);
  QStringList lines;
  lines << QString("bench-view: %1 nodes in a %2x%3 view").arg(g->size()).arg(width).arg(height);
  auto open = [&](const std::function<void()>& start) -> qint64 {
    bool ready = false, painted = false;
    auto c1 = QObject::connect(&v, &GraphView::layoutReady, [&] { ready = true; });
    auto c2 = QObject::connect(&v, &GraphView::painted, [&] { painted = ready; });
    QElapsedTimer t;
    t.start();
    start();
    const bool ok = wait_for([&] { return painted; }, 120000);
    QObject::disconnect(c1);
    QObject::disconnect(c2);
    return ok ? t.elapsed() : -1;
  };
  qint64 open_ms = open([&] { v.setGraph(g); });
  lines << report("as opened", v, open_ms, scripted_frames(v));
  open_ms = open([&] { v.expandAll(); });
  lines << report("all expanded", v, open_ms, scripted_frames(v));
  return lines.join('\n');
}

}  // namespace kiln
