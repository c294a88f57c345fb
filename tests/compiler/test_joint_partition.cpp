// The joint graph (compiler/aot/joint.h) and its partitions
// (compiler/aot/partition.h): joint gradients against float64 central
// differences of the forward graph, both partitions against the joint graph
// bit for bit, and the min-cut partitioner saving less than the default one
// by recomputing pointwise ops.
#include <QtTest>

#include <cmath>
#include <functional>
#include <random>

#include <QDir>

#include "compiler/aot/derivatives.h"
#include "compiler/capture/capture.h"
#include "compiler/aot/joint.h"
#include "compiler/aot/partition.h"
#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/emitter.h"
#include "compiler/pipeline/to_aten.h"
#include "core/graph/printer.h"
#include "core/python/vm.h"
#include "core/ops/registry.h"
#include "core/tensor/generator.h"
#include "capture_test_util.h"
#include "test_support.h"

using namespace kiln;
using namespace kiln::aot;
using pipeline::GraphEmitter;
using pipeline::run_aten_graph;

namespace {

Tensor randn(Shape sizes, std::mt19937& rng, DType dt = DType::Float64) {
  std::normal_distribution<double> d;
  std::vector<double> v(size_t(shape_numel(sizes)));
  for (double& x : v) x = d(rng);
  return Tensor::from_vector(v, std::move(sizes)).to(dt);
}

// A forward graph built by `body` over placeholders shaped like `inputs`.
Graph forward_graph(const std::vector<Tensor>& inputs,
                    const std::function<std::vector<Var>(GraphEmitter&, const std::vector<Var>&)>& body) {
  Graph g;
  GraphEmitter e(g);
  std::vector<Var> in;
  for (size_t i = 0; i < inputs.size(); ++i) in.push_back(e.placeholder("arg" + std::to_string(i), inputs[i]));
  e.output(body(e, in));
  return g;
}

std::vector<Value> as_values(const std::vector<Tensor>& ts) {
  std::vector<Value> v;
  for (const Tensor& t : ts) v.push_back(Value(t));
  return v;
}

// Every run draws from the same generator state, so the random ops of a graph
// and of its partitions (dropout's bernoulli) give the same numbers.
void reset_rng() { default_cpu_generator().manual_seed(0); }

std::vector<Value> run(const Graph& g, const std::vector<Value>& in) {
  reset_rng();
  auto r = run_aten_graph(g, in);
  if (!r) qFatal("run_aten_graph: %s\n%s", r.status().message().c_str(), print_graph_module(g).c_str());
  return *r;
}

bool bit_equal(const Value& a, const Value& b) {
  if (a.is_none() || b.is_none()) return a.is_none() && b.is_none();
  if (!a.is_tensor() || !b.is_tensor()) return false;
  Tensor x = a.to_tensor(), y = b.to_tensor();
  return x.sizes() == y.sizes() && x.dtype() == y.dtype() && test::values(x) == test::values(y);
}

Tensor tangent_like(const Node& placeholder, std::mt19937& rng) {
  Shape sizes;
  for (const SymInt& s : placeholder.meta.val.tensor.sizes) sizes.push_back(s.value);
  return randn(sizes, rng, *dtype_from_name(placeholder.meta.val.tensor.dtype));
}

struct JointRun {
  JointGraph joint;
  std::vector<Value> inputs;  // primals then tangents
  std::vector<Value> outputs;
};

// Builds the joint graph and runs it on `primals` and random tangents.
JointRun run_joint(const Graph& fwd, const std::vector<Tensor>& primals, std::mt19937& rng,
                   const JointOptions& options = {}) {
  auto j = build_joint(fwd, options);
  if (!j) qFatal("build_joint: %s", j.status().message().c_str());
  JointRun r{std::move(*j), as_values(primals), {}};
  for (const Node& n : r.joint.graph.nodes)
    if (n.op == OpKind::Placeholder && n.name.rfind("tangents_", 0) == 0) r.inputs.push_back(Value(tangent_like(n, rng)));
  r.outputs = run(r.joint.graph, r.inputs);
  return r;
}

// sum_k <tangent_k, output_k(primals)>: its gradient is what the joint computes.
double pairing(const Graph& fwd, const JointRun& r, const std::vector<Tensor>& primals) {
  std::vector<Value> outs = run(fwd, as_values(primals));
  double s = 0;
  for (size_t k = 0; k < r.joint.num_tangents; ++k) {
    std::vector<double> o = test::values(outs[r.joint.tangent_of_output[k]].to_tensor());
    std::vector<double> t = test::values(r.inputs[r.joint.num_primals + k].to_tensor());
    for (size_t i = 0; i < o.size(); ++i) s += o[i] * t[i];
  }
  return s;
}

// Checks every gradient element against float64 central differences.
QString check_against_finite_differences(const Graph& fwd, const JointRun& r, const std::vector<Tensor>& primals) {
  const double eps = 1e-6;
  for (size_t p = 0; p < primals.size(); ++p) {
    const Value& gv = r.outputs[r.joint.num_forward_outputs + p];
    if (!r.joint.requires_grad[p]) {
      if (!gv.is_none()) return QString("primal %1 does not require grad but got one").arg(p);
      continue;
    }
    if (!gv.is_tensor()) return QString("primal %1 got no gradient").arg(p);
    std::vector<double> grad = test::values(gv.to_tensor());
    std::vector<double> base = test::values(primals[p]);
    for (size_t i = 0; i < base.size(); ++i) {
      std::vector<Tensor> plus = primals, minus = primals;
      std::vector<double> a = base, b = base;
      a[i] += eps;
      b[i] -= eps;
      plus[p] = Tensor::from_vector(a, primals[p].sizes());
      minus[p] = Tensor::from_vector(b, primals[p].sizes());
      double fd = (pairing(fwd, r, plus) - pairing(fwd, r, minus)) / (2 * eps);
      if (std::fabs(fd - grad[i]) > 1e-5 * std::max(1.0, std::fabs(fd)))
        return QString("primal %1 element %2: joint %3, finite difference %4").arg(p).arg(i).arg(grad[i]).arg(fd);
    }
  }
  return {};
}

// Runs the forward then the backward graph and compares with the joint's outputs.
QString check_partition(const Partition& p, const JointRun& r) {
  std::vector<Value> primals(r.inputs.begin(), r.inputs.begin() + std::ptrdiff_t(r.joint.num_primals));
  std::vector<Value> fouts = run(p.forward, primals);
  if (fouts.size() != p.num_forward_outputs + p.saved.size()) return "forward returns the wrong number of values";
  for (size_t k = 0; k < p.num_forward_outputs; ++k)
    if (!bit_equal(fouts[k], r.outputs[k])) return QString("forward output %1 differs").arg(k);
  std::vector<Value> bin(fouts.begin() + std::ptrdiff_t(p.num_forward_outputs), fouts.end());
  bin.insert(bin.end(), r.inputs.begin() + std::ptrdiff_t(r.joint.num_primals), r.inputs.end());
  std::vector<Value> grads = run(p.backward, bin);
  if (grads.size() != r.joint.num_primals) return "backward returns the wrong number of gradients";
  for (size_t k = 0; k < grads.size(); ++k)
    if (!bit_equal(grads[k], r.outputs[r.joint.num_forward_outputs + k])) return QString("gradient %1 differs").arg(k);
  return {};
}

void check_everything(const Graph& fwd, const std::vector<Tensor>& primals, std::mt19937& rng,
                      const JointOptions& options = {}) {
  JointRun r = run_joint(fwd, primals, rng, options);
  std::vector<Value> plain = run(fwd, as_values(primals));
  for (size_t k = 0; k < plain.size(); ++k) QVERIFY2(bit_equal(plain[k], r.outputs[k]), "joint forward output differs");
  QString fd = check_against_finite_differences(fwd, r, primals);
  QVERIFY2(fd.isEmpty(), qPrintable(fd + "\n" + QString::fromStdString(print_graph_module(r.joint.graph))));
  for (const Partition& p : {default_partition(r.joint), min_cut_partition(r.joint)}) {
    QString bad = check_partition(p, r);
    QVERIFY2(bad.isEmpty(), qPrintable(bad + "\n" + QString::fromStdString(print_graph_module(p.forward) + "\n" +
                                                                           print_graph_module(p.backward))));
  }
}

}  // namespace

class TestJointPartition : public QObject {
  Q_OBJECT
 private slots:
  void mlp_with_relu() {
    std::mt19937 rng(1);
    std::vector<Tensor> in = {randn({4, 5}, rng), randn({6, 5}, rng), randn({6}, rng), randn({3, 6}, rng)};
    Graph fwd = forward_graph(in, [](GraphEmitter& e, const std::vector<Var>& x) -> std::vector<Var> {
      Var h = e.call1("aten::addmm.default", {x[2], x[0], e.call1("aten::t.default", {x[1]})});
      Var r = e.call1("aten::relu.default", {h});
      Var y = e.call1("aten::mm.default", {r, e.call1("aten::t.default", {x[3]})});
      return {y, e.call1("aten::sum.default", {e.call1("aten::mul.Tensor", {y, y})})};
    });
    check_everything(fwd, in, rng);
    // Only the weights require grad: the input gets None and no backward work.
    check_everything(fwd, in, rng, JointOptions{{false, true, true, true}});
  }

  void layer_norm_and_gelu() {
    std::mt19937 rng(2);
    std::vector<Tensor> in = {randn({3, 8}, rng), randn({8}, rng), randn({8}, rng)};
    Graph fwd = forward_graph(in, [](GraphEmitter& e, const std::vector<Var>& x) -> std::vector<Var> {
      std::vector<Var> ln = e.call("aten::native_layer_norm.default", {x[0], std::vector<int64_t>{8}, x[1], x[2], 1e-5});
      return {e.call1("aten::gelu.default", {ln[0]}, {{"approximate", "tanh"}})};
    });
    check_everything(fwd, in, rng);
  }

  void log_softmax_and_nll_loss() {
    std::mt19937 rng(3);
    Tensor target = Tensor::from_vector(std::vector<int64_t>{1, 0, 4, 2}, {4});
    std::vector<Tensor> in = {randn({4, 5}, rng), target};
    Graph fwd = forward_graph(in, [](GraphEmitter& e, const std::vector<Var>& x) -> std::vector<Var> {
      Var lp = e.call1("aten::_log_softmax.default", {x[0], 1, false});
      std::vector<Var> nll = e.call("aten::nll_loss_forward.default", {lp, x[1], EArg::none(), 1, -100});
      return {nll[0]};
    });
    JointRun r = run_joint(fwd, in, rng);
    QCOMPARE(r.joint.requires_grad, (std::vector<bool>{true, false}));
    QVERIFY(r.outputs.back().is_none());  // the integer target has no gradient
    check_everything(fwd, in, rng);
  }

  void conv_and_batch_norm() {
    std::mt19937 rng(4);
    std::vector<Tensor> in = {randn({2, 2, 5, 5}, rng), randn({3, 2, 3, 3}, rng), randn({3}, rng), randn({3}, rng),
                              randn({3}, rng)};
    Graph fwd = forward_graph(in, [](GraphEmitter& e, const std::vector<Var>& x) -> std::vector<Var> {
      Var c = e.call1("aten::convolution.default", {x[0], x[1], x[2], std::vector<int64_t>{1, 1},
                                                    std::vector<int64_t>{1, 1}, std::vector<int64_t>{1, 1}, false,
                                                    std::vector<int64_t>{0, 0}, 1});
      std::vector<Var> bn = e.call("aten::_native_batch_norm_legit.no_stats", {c, x[3], x[4], true, 0.1, 1e-5});
      return {e.call1("aten::relu.default", {bn[0]})};
    });
    check_everything(fwd, in, rng);
  }

  // Several outputs: an integer one gets no tangent; a gradient reaching one
  // value from two uses is summed with aten::add.Tensor.
  void non_differentiable_outputs_get_no_tangent() {
    std::mt19937 rng(5);
    std::vector<Tensor> in = {randn({3, 4}, rng)};
    Graph fwd = forward_graph(in, [](GraphEmitter& e, const std::vector<Var>& x) -> std::vector<Var> {
      std::vector<Var> m = e.call("aten::max.dim", {x[0], 1, false});
      Var s = e.call1("aten::sin.default", {x[0]});
      return {m[0], m[1], s};
    });
    JointRun r = run_joint(fwd, in, rng);
    QCOMPARE(r.joint.num_tangents, size_t(2));
    QCOMPARE(r.joint.tangent_of_output, (std::vector<size_t>{0, 2}));
    bool has_add = false;
    for (const Node& n : r.joint.graph.nodes) has_add = has_add || n.target == "aten::add.Tensor";
    QVERIFY(has_add);
    check_everything(fwd, in, rng);
  }

  // Names, descriptors and provenance as AOTAutograd prints them.
  void descriptors_follow_aot_autograd() {
    std::mt19937 rng(6);
    std::vector<Tensor> in = {randn({2, 3}, rng), randn({2, 3}, rng)};
    Graph fwd = forward_graph(in, [](GraphEmitter& e, const std::vector<Var>& x) -> std::vector<Var> {
      return {e.call1("aten::mul.Tensor", {x[0], x[1]})};
    });
    JointRun r = run_joint(fwd, in, rng, JointOptions{{true, false}});
    const Graph& g = r.joint.graph;
    QCOMPARE(QString::fromStdString(g[0].name), QString("primals_1"));
    QCOMPARE(QString::fromStdString(g[0].meta.desc), QString("PlainAOTInput(idx=0)"));
    QCOMPARE(QString::fromStdString(g[2].name), QString("tangents_1"));
    QCOMPARE(QString::fromStdString(g[2].meta.desc), QString("TangentAOTInput(output=PlainAOTOutput(idx=0))"));
    const Node* out = g.output();
    QCOMPARE(out->meta.output_descs, (std::vector<std::string>{"PlainAOTOutput(idx=0)",
                                                               "GradAOTOutput(grad_of=PlainAOTInput(idx=0))", "None"}));
    // One backward mul (the one for primals_2 is dead and removed).
    int muls = 0;
    for (const Node& n : g.nodes) {
      if (n.target != "aten::mul.Tensor") continue;
      ++muls;
      QCOMPARE(n.meta.from, (std::vector<std::string>{"mul"}));
    }
    QCOMPARE(muls, 2);
    std::string text = print_graph_module(g);
    QVERIFY2(text.find("primals_1, primals_2, tangents_1, = fx_pytree.tree_flatten_spec") != std::string::npos,
             text.c_str());
    Partition p = default_partition(r.joint);
    QCOMPARE(p.saved.size(), size_t(1));
    QCOMPARE(QString::fromStdString(p.saved[0].name), QString("primals_2"));
    QCOMPARE(p.forward.output()->meta.output_descs.back(), std::string("SavedForBackwardsAOTOutput(idx=0)"));
    QVERIFY(describe_saved(p).find("primals_2: float64[2, 3] (48 bytes)") != std::string::npos);
  }

  // A chain of pointwise ops: the default partition saves each intermediate
  // the backward reads; the min cut saves the input alone and recomputes.
  // A joint graph as PyTorch writes one for a training-mode module: a buffer
  // update `copy_(primals_2, new)` that nothing reads, and no output
  // descriptions. Both partitioners keep the write in the forward.
  void writes_nothing_reads_stay_in_the_forward() {
    Graph g;
    GraphEmitter e(g);
    Tensor meta = Tensor::meta({4}, DType::Float32);
    Var w = e.placeholder("primals_1", meta);
    Var buffer = e.placeholder("primals_2", meta);
    Var tangent = e.placeholder("tangents_1", meta);
    Var square = e.call1("aten::mul.Tensor", {w, w});
    Var updated = e.call1("aten::add.Scalar", {buffer, 1.0});
    Node write;
    write.op = OpKind::CallFunction;
    write.name = "copy_";
    write.target = "aten::copy_.default";
    write.args = {Arg::node(e.node(buffer)), Arg::node(e.node(updated))};
    e.add_node(std::move(write));
    Var grad = e.call1("aten::mul.Scalar", {e.call1("aten::mul.Tensor", {tangent, w}), 2.0});
    Node out;
    out.op = OpKind::Output;
    out.name = out.target = "output";
    out.args = {Arg::list({Arg::node(e.node(square)), Arg::node(e.node(grad)), Arg::none()})};
    g.add(std::move(out));
    JointGraph j;
    j.graph = g;
    j.num_primals = 2;
    j.num_tangents = 1;
    j.num_forward_outputs = 1;
    j.requires_grad = {true, false};
    j.tangent_of_output = {0};
    for (const Partition& p : {default_partition(j), min_cut_partition(j)}) {
      bool kept = false;
      for (const Node& n : p.forward.nodes)
        kept = kept || (n.target == "aten::copy_.default" && p.forward[n.args.at(0).node_id()].name == "primals_2");
      QVERIFY2(kept, print_graph_module(p.forward).c_str());
      for (const Node& n : p.backward.nodes) QVERIFY(n.target != "aten::copy_.default");
    }
  }

  void min_cut_saves_less_on_pointwise_chains() {
    std::mt19937 rng(7);
    std::vector<Tensor> in = {randn({16, 16}, rng), randn({16, 16}, rng)};
    Graph fwd = forward_graph(in, [](GraphEmitter& e, const std::vector<Var>& x) -> std::vector<Var> {
      Var a = e.call1("aten::sin.default", {x[0]});
      Var b = e.call1("aten::cos.default", {a});
      Var c = e.call1("aten::tanh.default", {b});
      Var m = e.call1("aten::mm.default", {c, x[1]});
      return {e.call1("aten::sum.default", {e.call1("aten::exp.default", {m})})};
    });
    check_everything(fwd, in, rng);
    JointRun r = run_joint(fwd, in, rng);
    Partition d = default_partition(r.joint), mc = min_cut_partition(r.joint);
    QVERIFY2(mc.saved_bytes < d.saved_bytes,
             qPrintable(QString::fromStdString(describe_saved(d) + "--\n" + describe_saved(mc))));
    QVERIFY2(!mc.recomputed.empty(), describe_saved(mc).c_str());
    // mm is must-save territory: its output (read by exp's backward through
    // exp) is never recomputed.
    for (const std::string& n : mc.recomputed) QVERIFY2(n.rfind("mm", 0) != 0, n.c_str());
  }

  // Weights are bytes: after a cast to float16, the min cut saves the half
  // precision value (and recomputes sin from it) rather than the float32
  // input; the default saves both values the backward reads.
  void min_cut_weighs_by_bytes() {
    std::mt19937 rng(8);
    std::vector<Tensor> in = {randn({8, 8}, rng, DType::Float32)};
    Graph fwd = forward_graph(in, [](GraphEmitter& e, const std::vector<Var>& x) -> std::vector<Var> {
      Var h = e.call1("aten::_to_copy.default", {x[0]}, {{"dtype", DType::Float16}});
      Var a = e.call1("aten::sin.default", {h});
      return {e.call1("aten::cos.default", {a})};
    });
    JointRun r = run_joint(fwd, in, rng);
    Partition d = default_partition(r.joint), mc = min_cut_partition(r.joint);
    QVERIFY2(check_partition(d, r).isEmpty(), "default partition differs");
    QVERIFY2(check_partition(mc, r).isEmpty(), "min-cut partition differs");
    QString both = QString::fromStdString(describe_saved(d) + "--\n" + describe_saved(mc));
    QCOMPARE(d.saved_bytes, int64_t(256));
    QCOMPARE(mc.saved_bytes, int64_t(128));
    QCOMPARE(mc.saved.size(), size_t(1));
    QVERIFY2(mc.saved[0].dtype == "float16", qPrintable(both));
    QVERIFY2(mc.recomputed == std::vector<std::string>{"sin"}, qPrintable(both));
  }

  // Every region captured from the example programs, lowered to ATen: its
  // joint graph computes the lowered graph's outputs, and both partitions
  // give exactly the joint's outputs on the region's own inputs.
  void example_regions_partition_exactly() {
    const QString dir = QStringLiteral(KILN_SOURCE_DIR "/resources/examples");
    QStringList failures, skipped;
    int checked = 0;
    std::mt19937 rng(10);
    for (const QString& f : QDir(dir).entryList({"*.py"}, QDir::Files, QDir::Name)) {
      int code = 0;
      std::unique_ptr<py::VM> owner = test::run_captured((dir + "/" + f).toStdString(), code);
      py::VM& vm = *owner;
      if (code != 0) continue;
      for (const auto& [id, region] : capture::compiled_regions(vm)) {
        if (region->op_count == 0) continue;
        QString where = f + " " + QString::fromStdString(id);
        Expected<Graph> g = pipeline::lower_to_aten(vm, *region);
        if (!g) continue;  // test_to_aten covers the lowering
        std::vector<Tensor> primals;
        for (const py::Value& v : region->input_values)
          if (v.is(py::ObjKind::Tensor)) primals.push_back(v.as<py::TensorObj>()->t.clone());
        auto j = build_joint(*g);
        if (!j) {
          std::string m = j.status().message();
          // Limits stated by build_joint: static shapes, tensor inputs only.
          if (m.find("symbolic size") != std::string::npos || m.find("no tensor meta") != std::string::npos) {
            skipped << where + ": " + QString::fromStdString(m);
            continue;
          }
          failures << where + ": " + QString::fromStdString(m);
          continue;
        }
        if (primals.size() != j->num_primals) {
          failures << where + ": input count differs";
          continue;
        }
        JointRun r{std::move(*j), as_values(primals), {}};
        for (const Node& n : r.joint.graph.nodes)
          if (n.op == OpKind::Placeholder && n.name.rfind("tangents_", 0) == 0)
            r.inputs.push_back(Value(tangent_like(n, rng)));
        reset_rng();
        auto outs = run_aten_graph(r.joint.graph, r.inputs);
        if (!outs) {
          failures << where + ": joint does not run: " + QString::fromStdString(outs.status().message());
          continue;
        }
        r.outputs = *outs;
        std::vector<Value> plain = run(*g, as_values(primals));
        for (size_t k = 0; k < plain.size(); ++k)
          if (!bit_equal(plain[k], r.outputs[k])) failures << where + QString(": forward output %1 differs").arg(k);
        for (const Partition& p : {default_partition(r.joint), min_cut_partition(r.joint)})
          if (QString bad = check_partition(p, r); !bad.isEmpty()) failures << where + ": " + bad;
        ++checked;
      }
    }
    for (const QString& s : skipped) qWarning("skipped %s", qPrintable(s));
    qInfo("%d regions checked, %d skipped", checked, int(skipped.size()));
    QVERIFY2(failures.isEmpty(), qPrintable(failures.join("\n")));
    QVERIFY2(checked >= 10, qPrintable(QString("only %1 regions checked").arg(checked)));
  }

  void missing_formula_names_the_op() {
    // Scalar % tensor: differentiable in PyTorch, without a formula here.
    const std::string op = "aten::remainder.Scalar_Tensor";
    QVERIFY2(op_registry().find(op) && !find_derivative(op), "remainder.Scalar_Tensor got a formula: pick another op");
    std::mt19937 rng(9);
    std::vector<Tensor> in = {randn({3}, rng)};
    Graph fwd = forward_graph(in, [&](GraphEmitter& e, const std::vector<Var>& x) -> std::vector<Var> {
      return {e.call1("aten::sin.default", {e.call1(op, {2.0, x[0]})})};
    });
    auto j = build_joint(fwd);
    QVERIFY(!j);
    QVERIFY2(j.status().message().find(op) != std::string::npos, j.status().message().c_str());
    // Off the differentiable path (nothing requires grad), the same graph is fine.
    QVERIFY(build_joint(fwd, JointOptions{{false}}).ok());
  }
};

QTEST_GUILESS_MAIN(TestJointPartition)
#include "test_joint_partition.moc"
