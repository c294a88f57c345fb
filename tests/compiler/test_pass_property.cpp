// Property: for randomly generated ATen graphs of pointwise, reduction, view
// and factory ops (seeded, small shapes), compile() with every pass enabled
// and verification on gives the same outputs as the graph before any pass,
// and so does every prefix of the pipeline (--stop-after N).
#include <map>

#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/emitter.h"
#include "compiler/pipeline/pipeline.h"
#include "pass_test_util.h"

using namespace kiln;
using namespace kiln::pipeline;
using namespace kiln::test;

namespace {

struct Call {
  std::string op;
  std::vector<EArg> args;
  EKwargs kwargs;
};

// Builds one random graph through GraphEmitter, so every node has a correct meta['val'].
class RandomGraph {
 public:
  explicit RandomGraph(uint32_t seed) : rng_(seed), em_(g_) {}

  Graph build() {
    Shape base = random_shape();
    int inputs = pick(1, 3);
    for (int i = 0; i < inputs; ++i) {
      Shape s = base;
      for (int64_t& d : s)
        if (chance(0.25)) d = 1;  // broadcasts against the others
      DType dtype = chance(0.15) ? DType::Float64 : DType::Float32;
      values_.push_back(em_.placeholder("x", Tensor::meta(s, dtype)));
    }
    int ops = pick(4, 16);
    for (int tries = 0; int(calls_.size()) < ops && tries < 200; ++tries) step();
    std::vector<Var> outs{values_.back()};
    for (int k = pick(0, 2); k > 0; --k) outs.push_back(any());
    em_.output(outs);
    return std::move(g_);
  }

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  template <class T>
  const T& one_of(const std::vector<T>& v) { return v[size_t(pick(0, int(v.size()) - 1))]; }
  Var any() { return values_[size_t(pick(0, int(values_.size()) - 1))]; }
  Var recent() { return values_[size_t(pick(std::max(0, int(values_.size()) - 3), int(values_.size()) - 1))]; }

  Shape random_shape() {
    Shape s(size_t(pick(1, 3)));
    for (int64_t& d : s) d = pick(1, 4);
    return s;
  }

  // Emits `c`; false (and nothing added) when the meta functions reject it.
  bool add_call(const Call& c) {
    try {
      values_.push_back(em_.call1(c.op, c.args, c.kwargs));
    } catch (const Error&) {
      return false;
    }
    calls_.push_back(c);
    return true;
  }

  void step() {
    Var a = chance(0.6) ? recent() : any();
    Tensor t = em_.tensor(a);  // a copy: the emitter's next call may move its metas
    int64_t rank = t.dim();
    int64_t d = rank == 0 ? 0 : pick(0, int(rank) - 1);
    switch (pick(0, 11)) {
      case 0:
        add_call({one_of<std::string>({"aten::sin.default", "aten::cos.default", "aten::tanh.default", "aten::neg.default",
                                   "aten::abs.default", "aten::relu.default", "aten::sigmoid.default", "aten::exp.default"}),
              {a}, {}});
        break;
      case 1:
        add_call({one_of<std::string>({"aten::add.Tensor", "aten::mul.Tensor", "aten::sub.Tensor", "aten::maximum.default"}),
              {a, any()}, {}});
        break;
      case 2:
        add_call({one_of<std::string>({"aten::add.Scalar", "aten::mul.Scalar", "aten::sub.Scalar", "aten::div.Scalar"}),
              {a, one_of<EArg>({EArg(int64_t(0)), EArg(int64_t(1)), EArg(int64_t(-1)), EArg(2.0), EArg(0.5), EArg(1.0)})}, {}});
        break;
      case 3:
        add_call({one_of<std::string>({"aten::sum.dim_IntList", "aten::amax.default", "aten::mean.dim"}),
              {a, std::vector<int64_t>{d}, chance(0.5)}, {}});
        break;
      case 4: {  // view / reshape / _unsafe_view to another factorization
        int64_t n = t.numel();
        std::vector<int64_t> shape{n};
        for (int64_t f = 2; f <= n; ++f)
          if (n % f == 0 && chance(0.5)) {
            shape = {f, n / f};
            break;
          }
        if (chance(0.3)) shape.push_back(1);
        if (!add_call({one_of<std::string>({"aten::view.default", "aten::_unsafe_view.default", "aten::reshape.default"}), {a, shape}, {}}))
          add_call({"aten::reshape.default", {a, shape}, {}});
        break;
      }
      case 5:
        if (rank == 2 && chance(0.5)) add_call({"aten::t.default", {a}, {}});
        else add_call({"aten::transpose.int", {a, d, rank == 0 ? int64_t(0) : int64_t(pick(0, int(rank) - 1)) - (chance(0.5) ? rank : 0)}, {}});
        break;
      case 6: {
        std::vector<int64_t> perm(static_cast<size_t>(rank));
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng_);
        add_call({"aten::permute.default", {a, perm}, {}});
        break;
      }
      case 7: {
        std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
        for (int64_t& s : sizes)
          if (s == 1 && chance(0.7)) s = pick(1, 3);
        if (chance(0.3)) sizes.insert(sizes.begin(), 2);
        add_call({"aten::expand.default", {a, sizes}, {}});
        break;
      }
      case 8:
        add_call({"aten::unsqueeze.default", {a, int64_t(pick(0, int(rank)))}, {}});
        break;
      case 9:  // constants for folding: uniform, or not
        if (chance(0.5)) {
          add_call({"aten::full.default", {std::vector<int64_t>(t.sizes().begin(), t.sizes().end()), one_of<EArg>({EArg(1.0), EArg(0.0), EArg(2.5)})},
                {{"dtype", EArg(t.dtype())}}});
        } else if (add_call({"aten::arange.default", {t.numel()}, {{"dtype", EArg(t.dtype())}}})) {
          add_call({"aten::view.default", {values_.back(), std::vector<int64_t>(t.sizes().begin(), t.sizes().end())}, {}});
        }
        break;
      case 10:  // the same call again, for CSE
        if (!calls_.empty()) add_call(one_of(calls_));
        break;
      case 11:  // a no-op view, or neg(neg(x))
        if (chance(0.5)) add_call({"aten::view.default", {a, std::vector<int64_t>(t.sizes().begin(), t.sizes().end())}, {}});
        else if (add_call({"aten::neg.default", {a}, {}})) add_call({"aten::neg.default", {values_.back()}, {}});
        break;
    }
  }

  std::mt19937 rng_;
  Graph g_;
  GraphEmitter em_;
  std::vector<Var> values_;
  std::vector<Call> calls_;
};

}  // namespace

class TestPassProperty : public QObject {
  Q_OBJECT
 private slots:
  void passes_keep_the_outputs_of_random_graphs() {
    const int kGraphs = 400;
    std::map<std::string, int> changed_by;
    size_t nodes_before = 0, nodes_after = 0;
    for (int seed = 1; seed <= kGraphs; ++seed) {
      Graph g = RandomGraph(uint32_t(seed)).build();
      std::mt19937 rng(uint32_t(seed) * 7919u);
      std::vector<Value> inputs = random_inputs(g, rng);
      std::string name = "graph " + std::to_string(seed) + ":\n" + print_graph_module(g);

      Options options;
      options.instrumentation.verify_each = true;
      CompileResult r = compile(g, options);
      if (!r.status.ok()) QFAIL(qPrintable(QString::fromStdString(name + r.status.message())));
      std::string why = compare_runs(g, r.graph, inputs, r.constants);
      if (!why.empty()) QFAIL(qPrintable(QString::fromStdString(name + "after\n" + print_graph_module(r.graph) + why)));
      for (const Stage& s : r.stages)
        if (s.application > 0 && s.changed) ++changed_by[s.name];
      nodes_before += g.size();
      nodes_after += r.graph.size();

      // Every prefix of the pipeline is a correct program too.
      options.instrumentation.stop_after = int(rng() % graph_pass_pipeline().size());
      CompileResult prefix = compile(g, options);
      QVERIFY(prefix.status.ok());
      why = compare_runs(g, prefix.graph, inputs, prefix.constants);
      if (!why.empty()) QFAIL(qPrintable(QString::fromStdString(name + "stop-after " + std::to_string(options.instrumentation.stop_after) + ": " + why)));
    }
    // The generator must give every pass work, or this test proves little;
    // it makes no writes, so functionalize must leave every graph alone (its
    // own random graphs of writes are in test_pass_functionalize).
    for (const std::string& pass : graph_pass_pipeline()) {
      qInfo("%s changed %d of %d graphs", pass.c_str(), changed_by[pass], kGraphs);
      if (pass == "functionalize")
        QCOMPARE(changed_by[pass], 0);
      else
        QVERIFY2(changed_by[pass] >= kGraphs / 10, pass.c_str());
    }
    qInfo("nodes: %zu before, %zu after", nodes_before, nodes_after);
    QVERIFY(nodes_after < nodes_before);
  }
};

QTEST_GUILESS_MAIN(TestPassProperty)
#include "test_pass_property.moc"
