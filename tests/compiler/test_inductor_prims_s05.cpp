// The stage graphs of the ResNet-18 training trace (reference s05, dumped by
// PyTorch 2.11 Inductor on a GPU) through the ATen interpreter: every op they
// call must be one Kiln runs, Inductor's max-pool prims included, with the
// sizes and dtypes the dump records, on meta tensors and on real data.
#include <QtTest/QtTest>

#include <map>
#include <set>

#include "compiler/passes/graph_editor.h"
#include "compiler/pipeline/aten_interpreter.h"
#include "core/graph/graph.h"
#include "core/ops/registry.h"
#include "core/trace/reader.h"
#include "test_support.h"
#include "trace_stage_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

struct Stage {
  std::string label;  // "0/0 inductor_post_grad_graph#2"
  Graph graph;
};

std::vector<Stage> s05_stages() {
  std::string path = test::reference_dir() + "/traces/s05_resnet18_train";
  auto trace = trace::open_trace(path);
  if (!trace) qFatal("cannot open %s: %s", path.c_str(), trace.status().message().c_str());
  std::vector<Stage> out;
  for (const trace::CompileEntry& e : trace->entries)
    for (const trace::Artifact& a : e.artifacts) {
      if (!is_run_stage(a.base)) continue;
      auto g = trace->graph(e, a.name);
      if (!g) qFatal("%s %s: %s", e.label.c_str(), a.name.c_str(), g.status().message().c_str());
      out.push_back({e.label + " " + a.name, **g});
      make_runnable_on_cpu(out.back().graph);
    }
  return out;
}

// The backward graphs take the forward's int8 max-pool offsets and turn them
// into indices themselves; random offsets could point into the padding, so
// those inputs hold the kernel window's centre, which always lies inside the
// input (max pooling allows padding up to half the kernel).
std::map<NodeId, int64_t> max_pool_offset_inputs(const Graph& g) {
  std::map<NodeId, int64_t> centre;
  for (const Node& n : g.nodes) {
    if (n.target != "prims::_low_memory_max_pool_offsets_to_indices.default" || n.args.size() < 2) continue;
    if (n.args[0].kind != Arg::Kind::Node || g[n.args[0].node_id()].op != OpKind::Placeholder) continue;
    int64_t flat = 0;
    for (const Arg& k : n.args[1].items) flat = flat * k.i + k.i / 2;
    centre[n.args[0].node_id()] = flat;
  }
  return centre;
}

std::vector<Value> inputs_for(const Graph& g, bool meta) {
  std::vector<Value> out;
  uint64_t seed = 0x5305;
  std::map<NodeId, int64_t> offsets = max_pool_offset_inputs(g);
  for (NodeId i = 0; i < NodeId(g.size()); ++i) {
    const Node& n = g[i];
    if (n.op != OpKind::Placeholder) continue;
    if (!meta && offsets.count(i)) {
      std::optional<Tensor> m = pipeline::meta_tensor_of(n.meta.val);
      if (!m) qFatal("placeholder %s has no concrete tensor meta", n.name.c_str());
      out.push_back(Tensor::full(m->sizes(), Scalar(offsets[i]), m->dtype()));
    } else if (meta) {
      std::optional<Tensor> m = pipeline::meta_tensor_of(n.meta.val);
      if (!m) qFatal("placeholder %s has no concrete tensor meta", n.name.c_str());
      out.push_back(*m);
    } else {
      out.push_back(input_for(n, seed));
    }
  }
  return out;
}

}  // namespace

class TestInductorPrimsS05 : public QObject {
  Q_OBJECT

 private slots:
  // Every call target of every stage graph is an op the interpreter runs.
  void everyTargetIsRunnable() {
    std::vector<Stage> stages = s05_stages();
    QVERIFY(stages.size() >= 5);  // joint, forward, backward, two post-grad graphs
    std::set<std::string> missing;
    for (const Stage& s : stages)
      for (const Node& n : s.graph.nodes) {
        if (n.op != OpKind::CallFunction || n.target == "operator.getitem") continue;
        if (!op_registry().find(n.target) && !pipeline::inplace_functional_twin(n.target) &&
            !pipeline::is_out_overload(n.target))
          missing.insert(n.target);
      }
    QVERIFY2(missing.empty(), qPrintable("not runnable:" + report({missing.begin(), missing.end()})));
  }

  // Every stage graph runs on meta tensors, and every node's size and dtype are the dump's.
  void metaRunMatchesDump() {
    std::vector<std::string> problems;
    size_t checked = 0;
    for (const Stage& s : s05_stages()) {
      std::vector<NodeId> returned;
      Graph w = returning_every_value(s.graph, returned);
      // The interpreter writes an in-place op's result with Tensor::copy_,
      // which meta tensors do not take (it throws out of run_aten_graph), so
      // here the buffer updates at the graph's end run their functional twin.
      for (Node& n : w.nodes)
        if (n.op == OpKind::CallFunction)
          if (auto twin = pipeline::inplace_functional_twin(n.target)) n.target = *twin;
      auto out = pipeline::run_aten_graph(w, inputs_for(w, true));
      if (!out) {
        problems.push_back(s.label + ": " + std::to_string(calls_before_failure(w, out.status().message())) + "/" +
                           std::to_string(call_count(w)) + " calls ran; " + out.status().message());
        continue;
      }
      QCOMPARE(out->size(), returned.size());
      for (size_t k = 0; k < returned.size(); ++k) {
        const Node& n = s.graph[returned[k]];
        std::optional<Tensor> want = pipeline::meta_tensor_of(n.meta.val);
        if (!want) continue;
        const Value& got = (*out)[k];
        ++checked;
        if (!got.is_tensor() || got.to_tensor().sizes() != want->sizes() || got.to_tensor().dtype() != want->dtype())
          problems.push_back(s.label + " " + n.name + " (" + n.target + "): got " +
                             (got.is_tensor() ? std::string(dtype_name(got.to_tensor().dtype())) + shape_str(got.to_tensor().sizes())
                                              : std::string("no tensor")) +
                             ", the dump says " + std::string(dtype_name(want->dtype())) + shape_str(want->sizes()));
      }
    }
    QVERIFY2(problems.empty(), qPrintable(report(problems)));
    QVERIFY(checked > 1000);
  }

  // The same graphs on real data: every node runs, every result is finite,
  // and Inductor's post-grad graphs compute what the AOT graphs they come from
  // do (same inputs, same outputs). About 2 s on two cores.
  void realRun() {
    std::vector<std::string> problems, summary;
    std::map<std::string, std::vector<Value>> results;
    for (const Stage& s : s05_stages()) {
      QElapsedTimer timer;
      timer.start();
      auto out = pipeline::run_aten_graph(s.graph, inputs_for(s.graph, false));
      size_t total = call_count(s.graph);
      if (!out) {
        problems.push_back(s.label + ": " + std::to_string(calls_before_failure(s.graph, out.status().message())) +
                           "/" + std::to_string(total) + " calls ran; " + out.status().message());
        continue;
      }
      summary.push_back(s.label + ": " + std::to_string(total) + "/" + std::to_string(total) + " calls ran in " +
                        std::to_string(timer.elapsed()) + " ms");
      for (const Value& v : *out) {
        if (!v.is_tensor() || !is_floating(v.to_tensor().dtype())) continue;
        for (double x : test::values(v.to_tensor()))
          if (!std::isfinite(x)) {
            problems.push_back(s.label + ": an output holds a value that is not finite");
            break;
          }
      }
      results[s.label] = std::move(*out);
    }
    qInfo("%s", qPrintable(report(summary)));
    QVERIFY2(problems.empty(), qPrintable(report(problems)));
    QCOMPARE(summary.size(), size_t(5));

    // The inputs depend only on the placeholders' metas, which the pairs share.
    const std::pair<std::string, std::string> pairs[] = {
        {"0/0 aot_forward_graph", "0/0 inductor_post_grad_graph"},
        {"0/0 aot_backward_graph", "0/0 inductor_post_grad_graph#2"}};
    for (const auto& [aot, post] : pairs) {
      QVERIFY2(results.count(aot) && results.count(post), (aot + " / " + post).c_str());
      const std::vector<Value>& a = results[aot];
      const std::vector<Value>& b = results[post];
      QCOMPARE(a.size(), b.size());
      size_t compared = 0;
      for (size_t k = 0; k < a.size(); ++k) {
        if (!a[k].is_tensor() || !b[k].is_tensor()) continue;
        const Tensor& x = a[k].to_tensor();
        const Tensor& y = b[k].to_tensor();
        QCOMPARE(x.sizes(), y.sizes());
        QCOMPARE(x.dtype(), y.dtype());
        std::vector<double> vx = test::values(x), vy = test::values(y);
        double scale = 0, worst = 0;
        for (double v : vx) scale = std::max(scale, std::fabs(v));
        for (size_t e = 0; e < vx.size(); ++e) worst = std::max(worst, std::fabs(vx[e] - vy[e]));
        QVERIFY2(worst <= 1e-5 * std::max(scale, 1.0),
                 qPrintable(QString("%1 output %2: differs from %3 by %4 (largest value %5)")
                                .arg(QString::fromStdString(post)).arg(k).arg(QString::fromStdString(aot))
                                .arg(worst).arg(scale)));
        ++compared;
      }
      QVERIFY(compared > 10);
    }
  }
};

QTEST_GUILESS_MAIN(TestInductorPrimsS05)
#include "test_inductor_prims_s05.moc"
