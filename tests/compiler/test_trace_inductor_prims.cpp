// The stage graphs of real PyTorch 2.11 dumps that call the prims and ops
// added for minifier repros (prims::fma in s03's backward, prims::xor_sum and
// Inductor's random prims in the minifier's storage-hash graphs,
// prims::prepare_softmax_online in the CUDA accuracy run): through the ATen
// interpreter every node runs, with the sizes and dtypes the dump records,
// and where the dump also holds the AOT graph a post-grad graph comes from,
// both compute the same numbers (the decomposed softmax backward with its fma,
// the online softmax) on the same inputs. Graphs with symbolic sizes, and the
// storage-hash AOT graphs (they call aten::randint.low, which Kiln does not
// register yet; their post-grad graphs call Inductor's randint instead), are
// left out; the test says how many.
#include <QtTest/QtTest>

#include <map>
#include <set>

#include "core/tensor/generator.h"
#include "core/trace/reader.h"
#include "test_support.h"
#include "trace_stage_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

bool is_new_target(std::string_view t) {
  for (std::string_view p : {"prims::fma.", "prims::xor_sum.", "prims::prepare_softmax_online.", "prims::inductor_",
                             "aten::__lshift__.", "aten::__rshift__.", "aten::bitwise_left_shift.",
                             "aten::bitwise_right_shift.", "aten::upsample_bicubic2d"})
    if (t.starts_with(p)) return true;
  return false;
}

bool draws(const Graph& g) {
  for (const Node& n : g.nodes)
    if (n.target.starts_with("prims::inductor_")) return true;
  return false;
}

// prims::convert_element_type runs as _to_copy, as the minifier's candidates run it.
void convert_element_type_to_copy(Graph& g) {
  for (Node& n : g.nodes) {
    if (n.target != "prims::convert_element_type.default" || n.args.size() != 2 || !n.kwargs.empty()) continue;
    n.target = "aten::_to_copy.default";
    n.kwargs = {{"dtype", n.args[1]}};
    n.args.resize(1);
  }
}

// A Python number as `self` of add/sub/mul.Tensor (`sub.Tensor(1, x)` in
// tanh's backward), which PyTorch wraps into a 0-d tensor and the registry
// does not: the number moves to `other` of the .Scalar overload (rsub for sub).
void number_self_to_scalar_overload(Graph& g) {
  for (Node& n : g.nodes) {
    if (n.op != OpKind::CallFunction || n.args.size() != 2 || !n.kwargs.empty()) continue;
    Arg::Kind k = n.args[0].kind;
    if (k != Arg::Kind::Int && k != Arg::Kind::Float) continue;
    std::swap(n.args[0], n.args[1]);
    if (n.target == "aten::sub.Tensor") n.target = "aten::rsub.Scalar";
    else if (n.target == "aten::add.Tensor" || n.target == "aten::mul.Tensor") n.target.replace(n.target.size() - 6, 6, "Scalar");
    else std::swap(n.args[0], n.args[1]);
  }
}

bool concrete_inputs(const Graph& g) {
  for (const Node& n : g.nodes)
    if (n.op == OpKind::Placeholder && !pipeline::meta_tensor_of(n.meta.val)) return false;
  return true;
}

bool calls(const Graph& g, std::string_view target) {
  for (const Node& n : g.nodes)
    if (n.target == target) return true;
  return false;
}

struct Stage {
  std::string key;    // "<trace folder> <compile label>"
  std::string label;  // key + " " + artifact name
  std::string name;   // "inductor_post_grad_graph#2"
  Graph graph;
};

// Every runnable stage of the four dumps; `only_new` keeps those calling a new op.
std::vector<Stage> stages(bool only_new, size_t* left_out = nullptr) {
  std::vector<Stage> out;
  for (const char* folder : {"traces/s03_graph_breaks", "minifier/accuracy_cpu/trace", "minifier/accuracy_cuda/trace",
                             "minifier/compile_error_cpu/trace"}) {
    auto trace = trace::open_trace(reference_dir() + "/" + folder);
    if (!trace) qFatal("cannot open %s: %s", folder, trace.status().message().c_str());
    for (const trace::CompileEntry& e : trace->entries)
      for (const trace::Artifact& a : e.artifacts) {
        if (!is_run_stage(a.base) && a.base != "aot_inference_graph") continue;
        auto g = trace->graph(e, a.name);
        if (!g) qFatal("%s %s: %s", e.label.c_str(), a.name.c_str(), g.status().message().c_str());
        bool has_new = false;
        for (const Node& n : (*g)->nodes) has_new |= n.op == OpKind::CallFunction && is_new_target(n.target);
        if (only_new && !has_new) continue;
        if (!concrete_inputs(**g) || calls(**g, "aten::randint.low")) {
          if (left_out) ++*left_out;
          continue;
        }
        std::string key = std::string(folder) + " " + e.label;
        out.push_back({key, key + " " + a.name, a.name, **g});
        make_runnable_on_cpu(out.back().graph);
        convert_element_type_to_copy(out.back().graph);
        number_self_to_scalar_overload(out.back().graph);
      }
  }
  return out;
}

std::vector<Value> inputs_for(const Graph& g, bool meta) {
  std::vector<Value> out;
  uint64_t seed = 0x5303;
  for (const Node& n : g.nodes) {
    if (n.op != OpKind::Placeholder) continue;
    if (!meta) {
      out.push_back(input_for(n, seed));
      continue;
    }
    std::optional<Tensor> m = pipeline::meta_tensor_of(n.meta.val);
    if (!m) qFatal("placeholder %s has no concrete tensor meta", n.name.c_str());
    out.push_back(*m);
  }
  return out;
}

// Placeholders with the same sizes and dtypes, in order: the same inputs fit both graphs.
bool same_inputs(const Graph& a, const Graph& b) {
  std::vector<Value> x = inputs_for(a, true), y = inputs_for(b, true);
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i].to_tensor().sizes() != y[i].to_tensor().sizes() || x[i].to_tensor().dtype() != y[i].to_tensor().dtype())
      return false;
  return true;
}

}  // namespace

class TestTraceInductorPrims : public QObject {
  Q_OBJECT

 private slots:
  // The dumps hold every op this test is about, and all their targets run.
  void everyTargetIsRunnable() {
    std::set<std::string> seen, missing;
    size_t left_out = 0;
    std::vector<Stage> all = stages(true, &left_out);
    for (const Stage& s : all)
      for (const Node& n : s.graph.nodes) {
        if (n.op != OpKind::CallFunction || n.target == "operator.getitem") continue;
        if (is_new_target(n.target)) seen.insert(n.target);
        if (!op_registry().find(n.target) && !pipeline::inplace_functional_twin(n.target) &&
            !pipeline::is_out_overload(n.target))
          missing.insert(n.target);
      }
    qInfo("%zu stage graphs (%zu left out); new ops seen:%s", all.size(), left_out,
          qPrintable(report({seen.begin(), seen.end()})));
    for (const char* op : {"prims::fma.default", "prims::xor_sum.default", "prims::prepare_softmax_online.default",
                           "prims::inductor_seeds.default", "prims::inductor_lookup_seed.default",
                           "prims::inductor_randint.default"})
      QVERIFY2(seen.count(op), op);
    QVERIFY2(missing.empty(), qPrintable("not runnable:" + report({missing.begin(), missing.end()})));
  }

  // On meta tensors every node's size and dtype are the dump's; on data every node runs.
  void metaAndRealRuns() {
    std::vector<std::string> problems;
    size_t checked = 0, ran = 0;
    for (const Stage& s : stages(true)) {
      std::vector<NodeId> returned;
      Graph w = returning_every_value(s.graph, returned);
      auto meta = pipeline::run_aten_graph(w, inputs_for(w, true));
      if (!meta) {
        problems.push_back(s.label + " (meta): " + std::to_string(calls_before_failure(w, meta.status().message())) +
                           "/" + std::to_string(call_count(w)) + " calls ran; " + meta.status().message());
        continue;
      }
      for (size_t k = 0; k < returned.size(); ++k) {
        const Node& n = s.graph[returned[k]];
        std::optional<Tensor> want = pipeline::meta_tensor_of(n.meta.val);
        if (!want) continue;
        const Value& got = (*meta)[k];
        ++checked;
        if (!got.is_tensor() || got.to_tensor().sizes() != want->sizes() || got.to_tensor().dtype() != want->dtype())
          problems.push_back(s.label + " " + n.name + " (" + n.target + "): got " +
                             (got.is_tensor() ? std::string(dtype_name(got.to_tensor().dtype())) +
                                                    shape_str(got.to_tensor().sizes())
                                              : std::string("no tensor")) +
                             ", the dump says " + std::string(dtype_name(want->dtype())) + shape_str(want->sizes()));
      }
      default_cpu_generator().manual_seed(0);
      auto real = pipeline::run_aten_graph(w, inputs_for(w, false));
      if (!real) {
        problems.push_back(s.label + ": " + std::to_string(calls_before_failure(w, real.status().message())) + "/" +
                           std::to_string(call_count(w)) + " calls ran; " + real.status().message());
        continue;
      }
      ++ran;
    }
    QVERIFY2(problems.empty(), qPrintable(report(problems)));
    QVERIFY(checked > 20);
    QVERIFY(ran >= 5);
  }

  // A post-grad graph computes what the AOT graph it was made from computes.
  void postGradMatchesAot() {
    std::vector<Stage> all = stages(false);
    std::map<std::string, std::vector<const Stage*>> by_key;
    for (const Stage& s : all) by_key[s.key].push_back(&s);
    size_t compared = 0;
    for (const Stage& post : all) {
      if (!post.name.starts_with("inductor_post_grad_graph") || draws(post.graph)) continue;
      bool has_new = false;
      for (const Node& n : post.graph.nodes) has_new |= is_new_target(n.target);
      if (!has_new) continue;
      const bool second = post.name.ends_with("#2");
      const Stage* aot = nullptr;
      for (const Stage* s : by_key[post.key])
        if ((second ? s->name.starts_with("aot_backward_graph")
                    : s->name.starts_with("aot_forward_graph") || s->name.starts_with("aot_inference_graph")) &&
            same_inputs(s->graph, post.graph))
          aot = s;
      if (!aot) continue;
      auto a = pipeline::run_aten_graph(aot->graph, inputs_for(aot->graph, false));
      auto b = pipeline::run_aten_graph(post.graph, inputs_for(post.graph, false));
      QVERIFY2(a.ok() && b.ok(), qPrintable(QString::fromStdString(post.label)));
      QCOMPARE(a->size(), b->size());
      for (size_t k = 0; k < a->size(); ++k) {
        if (!(*a)[k].is_tensor()) continue;
        const Tensor &x = (*a)[k].to_tensor(), &y = (*b)[k].to_tensor();
        QCOMPARE(x.sizes(), y.sizes());
        std::vector<double> vx = values(x), vy = values(y);
        double scale = 1, worst = 0;
        for (double v : vx) scale = std::max(scale, std::fabs(v));
        for (size_t e = 0; e < vx.size(); ++e) worst = std::max(worst, std::fabs(vx[e] - vy[e]));
        QVERIFY2(worst <= 1e-5 * scale, qPrintable(QString("%1 output %2 differs from %3 by %4")
                                                       .arg(QString::fromStdString(post.label)).arg(k)
                                                       .arg(QString::fromStdString(aot->name)).arg(worst)));
      }
      qInfo("%s matches %s", post.label.c_str(), aot->name.c_str());
      ++compared;
    }
    QVERIFY(compared >= 1);
  }
};

QTEST_GUILESS_MAIN(TestTraceInductorPrims)
#include "test_trace_inductor_prims.moc"
