// cuBLASLt epilogues (the scheduler's plan_lt_epilogues, GemmLtEpilogue;
// codegen/cuda/cublas_lt.h). Without a GPU: which GEMMs are marked and with
// what, what is refused and why, and that the CPU backend (which ignores the
// mark) still matches eager on the gemm-epilogue fuzz family. With one: the
// family's results through cuBLASLt against the ATen interpreter, and a
// float32 gelu through an exact product (w = I) pinning the tanh formula.
#include "codegen_fuzz_check.h"
#include "compiler/codegen/cuda/cuda_api.h"
#include "compiler/decomp/decompose.h"
#include "compiler/loopir/lower.h"
#include "compiler/pipeline/emitter.h"
#include "compiler/sched/schedule.h"
#include "loopir_test_util.h"
#include "test_support.h"

using namespace kiln;
using namespace kiln::pipeline;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

sched::ScheduledProgram scheduled(const Graph& g) {
  auto decomposed = decomp::decompose(g);
  if (!decomposed) qFatal("decompose: %s", decomposed.status().message().c_str());
  return sched::schedule(loopir::lower_to_loops(*decomposed));
}

const loopir::GemmLtEpilogue* lt_of(const sched::ScheduledProgram& s, size_t which = 0) {
  for (const loopir::Kernel& k : s.program.kernels)
    if (k.kind == loopir::KernelKind::Extern && k.call->kind == loopir::ExternKind::Gemm && k.call->gemm.lt)
      if (which-- == 0) return &*k.call->gemm.lt;
  return nullptr;
}

std::string decisions(const sched::ScheduledProgram& s) {
  std::string out;
  for (const sched::FusionDecision& d : s.decisions) out += d.reason + "\n";
  return out;
}

Tensor ramp(const Shape& s, DType d, double lo, double hi) {
  std::vector<double> v(size_t(shape_numel(s)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = lo + (hi - lo) * double((i * 7919) % v.size()) / double(v.size());
  return Tensor::from_vector(v, s).to(d);
}

// gelu(x @ w1 + b, approximate) @ w2, as the gelu_mlp benchmark with a bias.
Graph mlp(DType d, const std::string& approximate, std::vector<Tensor>* in) {
  Graph g;
  GraphEmitter e(g);
  *in = {ramp({16, 32}, d, -1, 1), ramp({32, 24}, d, -0.3, 0.3), ramp({24}, d, -0.5, 0.5), ramp({24, 8}, d, -0.2, 0.2)};
  Var x = e.placeholder("x", (*in)[0]), w1 = e.placeholder("w1", (*in)[1]), b = e.placeholder("b", (*in)[2]),
      w2 = e.placeholder("w2", (*in)[3]);
  Var h = e.call1("aten::add.Tensor", {e.call1("aten::mm.default", {x, w1}), b});
  h = e.call1("aten::gelu.default", {h}, {{"approximate", Value(approximate)}});
  e.output({e.call1("aten::mm.default", {h, w2})});
  return g;
}

std::string no_gpu_reason() {
  Status st = codegen::cuda::cuda_init();
  return st.ok() ? "" : "no GPU: " + st.message();
}

}  // namespace

class TestCudaGemmEpilogue : public QObject {
  Q_OBJECT

 private slots:
  void gelu_mlp_gets_a_gelu_bias_epilogue() {
    std::vector<Tensor> in;
    sched::ScheduledProgram s = scheduled(mlp(DType::BFloat16, "tanh", &in));
    const loopir::GemmLtEpilogue* lt = lt_of(s);
    QVERIFY2(lt, decisions(s).c_str());
    QVERIFY(lt->activation == loopir::GemmActivation::GeluTanh);
    QVERIFY(lt->bias && lt->bias->buffer == "b" && lt->bias->sizes == std::vector<int64_t>{24});
    QVERIFY(!lt->residual);
    QCOMPARE(QString::fromStdString(lt->summary), QString("gelu tanh + bias"));
    // The epilogue kernel stays (the fallback) and is the next group's; the second mm has nothing after it.
    QCOMPARE(s.program.buffer(lt->output).dtype, DType::BFloat16);
    QVERIFY(!lt_of(s, 1));
    // Where the stage views show extern epilogues: ir_post_fusion's decisions.
    QVERIFY2(has(sched::print_scheduled(s), "epilogue fused into the GEMM call: gelu tanh + bias"), decisions(s).c_str());
  }

  void erf_gelu_stays_a_kernel() {
    for (DType d : {DType::Float32, DType::BFloat16}) {
      std::vector<Tensor> in;
      sched::ScheduledProgram s = scheduled(mlp(d, "none", &in));
      QVERIFY2(!lt_of(s), decisions(s).c_str());
      QVERIFY(!has(decisions(s), "gelu tanh"));
    }
  }

  void residual_relu_and_refusals() {
    Tensor x = ramp({8, 16}, DType::Float16, -1, 1), w = ramp({16, 16}, DType::Float16, -0.5, 0.5),
           r = ramp({8, 16}, DType::Float16, -1, 1);
    // tail(mm(x, w), r) alone, or a chain where each tail feeds the next mm.
    auto graph = [&](const std::vector<std::string>& tails) {
      Graph g;
      GraphEmitter e(g);
      Var v = e.placeholder("x", x), vw = e.placeholder("w", w), vr = e.placeholder("r", r);
      for (const std::string& t : tails) {
        Var h = e.call1("aten::mm.default", {v, vw});
        v = t == "relu_residual" ? e.call1("aten::relu.default", {e.call1("aten::add.Tensor", {h, vr})})
            : t == "minus"       ? e.call1("aten::sub.Tensor", {h, vr})
                                 : e.call1("aten::sigmoid.default", {h});
      }
      e.output({v});
      return scheduled(g);
    };
    sched::ScheduledProgram s = graph({"relu_residual"});
    const loopir::GemmLtEpilogue* lt = lt_of(s);
    QVERIFY2(lt, decisions(s).c_str());
    QVERIFY(lt->activation == loopir::GemmActivation::Relu && lt->residual && lt->residual_scale == 1 && !lt->bias);
    s = graph({"minus"});
    lt = lt_of(s);
    QVERIFY2(lt, decisions(s).c_str());
    QVERIFY(lt->activation == loopir::GemmActivation::None && lt->residual && lt->residual_scale == -1);
    s = graph({"sigmoid"});
    QVERIFY2(!lt_of(s) && has(decisions(s), "cuBLASLt has no epilogue"), decisions(s).c_str());
    // The second tail's output reuses the first's storage, which its GEMM reads: refused.
    s = graph({"relu_residual", "minus", "sigmoid"});
    QVERIFY2(lt_of(s, 0) && !lt_of(s, 1) && has(decisions(s), "shares its storage with"), decisions(s).c_str());
  }

  // The CPU backend ignores the mark: the family matches eager, and the
  // scheduler marks a fair share of it (so the GPU run tests cuBLASLt).
  void family_matches_eager_on_the_cpu() {
    const int graphs = 40;
    int marked = 0;
    for (int k = 0; k < graphs; ++k) {
      const uint32_t seed = 1 + uint32_t(k);
      test::FuzzResult r = test::fuzz_one(seed, "kiln", "none", "gemm-epilogue");
      QVERIFY2(r.outcome == test::FuzzOutcome::Ok, r.report.c_str());
      std::vector<Tensor> unused;
      sched::ScheduledProgram s = scheduled(test::GemmEpilogueGraphGenerator(seed).build(&unused));
      marked += lt_of(s) != nullptr;
    }
    qInfo("%d of %d gemm-epilogue graphs have a cuBLASLt epilogue", marked, graphs);
    QVERIFY(marked >= graphs / 4);
  }

  void family_matches_eager_on_the_gpu() {
    if (std::string why = no_gpu_reason(); !why.empty()) {
      if (qgetenv("KILN_REQUIRE_GPU") == "1") QFAIL(why.c_str());
      QSKIP(why.c_str());
    }
    for (uint32_t seed = 1; seed <= 120; ++seed) {
      test::FuzzResult r = test::fuzz_one(seed, "kiln-cuda", "none", "gemm-epilogue");
      QVERIFY2(r.outcome == test::FuzzOutcome::Ok, r.report.c_str());
    }
  }

  // float32 gelu(x @ I): the product is x exactly, so the epilogue's formula
  // shows: erf's gelu differs from tanh's by up to 4.7e-4 near x = -2.7.
  void float32_gelu_is_the_tanh_formula_on_the_gpu() {
    if (std::string why = no_gpu_reason(); !why.empty()) {
      if (qgetenv("KILN_REQUIRE_GPU") == "1") QFAIL(why.c_str());
      QSKIP(why.c_str());
    }
    const int64_t n = 64;
    std::vector<double> eye(size_t(n * n), 0.0);
    for (int64_t i = 0; i < n; ++i) eye[size_t(i * n + i)] = 1;
    Tensor x = ramp({128, n}, DType::Float32, -6, 6), w = Tensor::from_vector(eye, {n, n}).to(DType::Float32);
    Graph g;
    GraphEmitter e(g);
    Var h = e.call1("aten::mm.default", {e.placeholder("x", x), e.placeholder("w", w)});
    e.output({e.call1("aten::gelu.default", {h}, {{"approximate", Value(std::string("tanh"))}})});
    QVERIFY(lt_of(scheduled(g)));
    std::vector<Tensor> want = test::aten_outputs(g, {x, w});
    auto decomposed = decomp::decompose(g);
    QVERIFY(decomposed.ok());
    runtime::CudaCompileOptions o;
    o.use_cache = false;
    auto compiled = runtime::CudaCompiledGraph::compile(*decomposed, o);
    QVERIFY2(compiled.ok(), compiled.status().message().c_str());
    auto got = (*compiled)->run({x, w});
    QVERIFY2(got.ok(), got.status().message().c_str());
    std::string diff = test::compare_outputs(*got, want, 2e-5);
    QVERIFY2(diff.empty(), diff.c_str());
  }
};

QTEST_MAIN(TestCudaGemmEpilogue)
#include "test_cuda_gemm_epilogue.moc"
