// GEMM epilogues on the CPU (loopir::run_gemm_with_epilogue: oneDNN's matmul
// primitive with post-ops writes the epilogue kernel's output, and the CPU
// runtime skips that kernel). Each planned epilogue (a number, a bias row, an
// addend subtracted, relu, tanh gelu, a transposed operand) is run by the
// call alone against the ATen interpreter, then through CompiledGraph; the
// switch KILN_NO_GEMM_EPILOGUE=1 and the intermediates (which still show the
// product) are checked too.
#include <map>

#include "compiler/decomp/decompose.h"
#include "compiler/loopir/lower.h"
#include "compiler/pipeline/emitter.h"
#include "compiler/runtime/compiled_graph.h"
#include "compiler/sched/schedule.h"
#include "core/ops/gemm.h"
#include "core/ops/gemm_onednn.h"
#include "loopir_test_util.h"
#include "test_support.h"

using namespace kiln;
using namespace kiln::pipeline;

namespace {

// Large enough that the product is not is_small (which stays on OpenBLAS).
constexpr int64_t M = 96, N = 80, K = 72;

struct Case {
  std::string name, summary;
  Graph graph;
  std::vector<Tensor> inputs;
};

Tensor ramp(const Shape& s, double lo, double hi, size_t salt) {
  std::vector<float> v(size_t(shape_numel(s)));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = float(lo + (hi - lo) * double((i * 7919 + salt * 104729) % v.size()) / double(v.size()));
  return Tensor::from_vector(v, s);
}

std::vector<Case> cases() {
  std::vector<Case> out;
  auto add = [&](const std::string& name, const std::string& summary, auto build) {
    Case c{name, summary, Graph(), {}};
    GraphEmitter e(c.graph);
    build(e, c.inputs);
    out.push_back(std::move(c));
  };
  add("relu(a @ b + 1)", "relu + a number", [](GraphEmitter& e, std::vector<Tensor>& in) {
    in = {ramp({M, K}, -1, 1, 1), ramp({K, N}, -1, 1, 2)};
    Var a = e.placeholder("a", in[0]), b = e.placeholder("b", in[1]);
    e.output({e.call1("aten::relu.default", {e.call1("aten::add.Scalar", {e.call1("aten::mm.default", {a, b}), 1.0})})});
  });
  add("gelu_tanh(a @ b + bias)", "gelu tanh + bias", [](GraphEmitter& e, std::vector<Tensor>& in) {
    in = {ramp({M, K}, -1, 1, 3), ramp({K, N}, -0.5, 0.5, 4), ramp({N}, -2, 2, 5)};
    Var a = e.placeholder("a", in[0]), b = e.placeholder("b", in[1]), bias = e.placeholder("bias", in[2]);
    Var h = e.call1("aten::add.Tensor", {e.call1("aten::mm.default", {a, b}), bias});
    e.output({e.call1("aten::gelu.default", {h}, {{"approximate", Value(std::string("tanh"))}})});
  });
  add("a @ b + bias - r", "bias + residual", [](GraphEmitter& e, std::vector<Tensor>& in) {
    in = {ramp({M, K}, -1, 1, 6), ramp({K, N}, -1, 1, 7), ramp({N}, -1, 1, 8), ramp({M, N}, -3, 3, 9)};
    Var a = e.placeholder("a", in[0]), b = e.placeholder("b", in[1]), bias = e.placeholder("bias", in[2]),
        r = e.placeholder("r", in[3]);
    Var h = e.call1("aten::add.Tensor", {e.call1("aten::mm.default", {a, b}), bias});
    e.output({e.call1("aten::sub.Tensor", {h, r})});
  });
  add("relu(addmm(bias, a, w.t()))", "relu + bias", [](GraphEmitter& e, std::vector<Tensor>& in) {
    in = {ramp({M, K}, -1, 1, 10), ramp({N, K}, -1, 1, 11), ramp({N}, -1, 1, 12)};
    Var a = e.placeholder("a", in[0]), w = e.placeholder("w", in[1]), bias = e.placeholder("bias", in[2]);
    Var wt = e.call1("aten::t.default", {w});
    e.output({e.call1("aten::relu.default", {e.call1("aten::addmm.default", {bias, a, wt})})});
  });
  return out;
}

sched::ScheduledProgram scheduled(const Graph& g) {
  auto decomposed = decomp::decompose(g);
  if (!decomposed) qFatal("decompose: %s", decomposed.status().message().c_str());
  return sched::schedule(loopir::lower_to_loops(*decomposed));
}

const loopir::Kernel* gemm_with_epilogue(const sched::ScheduledProgram& s) {
  for (const loopir::Kernel& k : s.program.kernels)
    if (k.kind == loopir::KernelKind::Extern && k.call->kind == loopir::ExternKind::Gemm && k.call->gemm.lt) return &k;
  return nullptr;
}

std::string decisions(const sched::ScheduledProgram& s) {
  std::string out;
  for (const sched::FusionDecision& d : s.decisions) out += d.reason + "\n";
  return out;
}

// Runs only the GEMM call of `s` on buffers of its own; returns the
// epilogue's output, or an undefined tensor with *why when the call refused.
Tensor run_call_alone(const sched::ScheduledProgram& s, const Case& c, std::string* why) {
  const loopir::Program& p = s.program;
  std::map<std::string, Tensor> buffers;
  size_t input = 0;
  for (const loopir::Buffer& b : p.buffers) {
    if (b.role == loopir::BufferRole::Input) buffers[b.name] = c.inputs.at(input++);
    else buffers[b.name] = Tensor::empty_strided(Shape(b.sizes.begin(), b.sizes.end()), Shape(b.strides.begin(), b.strides.end()), b.dtype);
  }
  const loopir::Kernel& k = *gemm_with_epilogue(s);
  if (!loopir::run_gemm_with_epilogue(p, k, [&](const std::string& name) { return buffers.at(name); }, why)) return {};
  return buffers.at(k.call->gemm.lt->output);
}

bool onednn_runs_float32() { return gemm::onednn::available() && gemm::float_backend() == gemm::Backend::OneDNN; }

}  // namespace

class TestCpuGemmEpilogue : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    if (!onednn_runs_float32())
      QSKIP(("float32 products do not run on oneDNN here (" + gemm::describe() + ")").c_str());
  }

  void each_epilogue_runs_in_the_call() {
    for (const Case& c : cases()) {
      sched::ScheduledProgram s = scheduled(c.graph);
      const loopir::Kernel* k = gemm_with_epilogue(s);
      QVERIFY2(k, (c.name + ": no epilogue planned\n" + decisions(s)).c_str());
      QCOMPARE(QString::fromStdString(k->call->gemm.lt->summary), QString::fromStdString(c.summary));
      std::string why;
      Tensor got = run_call_alone(s, c, &why);
      QVERIFY2(got.defined(), (c.name + ": " + why).c_str());
      std::string d = test::compare_outputs({got}, test::aten_outputs(c.graph, c.inputs), 1e-5);
      QVERIFY2(d.empty(), (c.name + ": " + d).c_str());
    }
  }

  void compiled_graphs_match_eager() {
    for (const Case& c : cases()) {
      runtime::CompileOptions o;
      o.use_cache = false;
      o.inject_bug = "none";
      auto compiled = runtime::CompiledGraph::compile(c.graph, o);
      QVERIFY2(compiled.ok(), compiled.ok() ? "" : compiled.status().message().c_str());
      auto got = (*compiled)->run(c.inputs);
      QVERIFY2(got.ok(), got.ok() ? "" : got.status().message().c_str());
      std::string d = test::compare_outputs(*got, test::aten_outputs(c.graph, c.inputs), 1e-5);
      QVERIFY2(d.empty(), (c.name + ": " + d).c_str());
      // Every intermediate is wanted here, so the product is written too.
      auto all = (*compiled)->run_with_intermediates(c.inputs);
      QVERIFY2(all.ok(), all.ok() ? "" : all.status().message().c_str());
      QVERIFY2(all->size() >= 2, c.name.c_str());
    }
  }

  void switched_off_by_the_environment() {
    const Case c = cases().front();
    sched::ScheduledProgram s = scheduled(c.graph);
    qputenv("KILN_NO_GEMM_EPILOGUE", "1");
    std::string why;
    Tensor got = run_call_alone(s, c, &why);
    qunsetenv("KILN_NO_GEMM_EPILOGUE");
    QVERIFY(!got.defined());
    QCOMPARE(QString::fromStdString(why), QString("KILN_NO_GEMM_EPILOGUE=1"));
  }
};

QTEST_MAIN(TestCpuGemmEpilogue)
#include "test_cpu_gemm_epilogue.moc"
