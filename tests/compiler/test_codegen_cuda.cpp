// The CUDA code generator without a GPU: the source it emits for hand-made
// and random graphs (tests/compiler/random_graph.h) must compile with NVRTC
// for sm_90, and read as the issue asks (a kernel per group, named after what
// it computes, block reductions for rows).
#include <random>

#include "compiler/codegen/cuda/cuda_api.h"
#include "compiler/codegen/cuda/cuda_emit.h"
#include "compiler/loopir/lower.h"
#include "compiler/pipeline/emitter.h"
#include "compiler/sched/schedule.h"
#include "loopir_test_util.h"
#include "random_graph.h"
#include "test_support.h"

using namespace kiln;
using namespace kiln::pipeline;
using namespace kiln::codegen::cuda;

namespace {

CudaSource source_of(const Graph& g) {
  sched::ScheduledProgram s = sched::schedule(loopir::lower_to_loops(g));
  return emit_cuda(s, plan_for_cuda(s));
}

// "" when NVRTC compiles `src` to a cubin for sm_90, else its log.
std::string nvrtc_problem(const CudaSource& src, const std::string& name) {
  Expected<NvrtcOutput> out = nvrtc_compile(src.text, name + ".cu", 90, true);
  if (!out) return out.status().message() + "\n" + src.text;
  for (const CudaKernel& k : src.kernels)
    if (out->ptx.find(".entry " + k.name) == std::string::npos) return "no entry " + k.name + " in the PTX";
  return "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// NVRTC is part of the build machine (CUDA at /usr/local/cuda); a machine
// without it fails here unless told to skip.
bool nvrtc_or_skip_reason(std::string* reason) {
  std::string d = nvrtc_describe();
  if (d.rfind("unavailable", 0) != 0) return true;
  *reason = d;
  return false;
}

}  // namespace

class TestCodegenCuda : public QObject {
  Q_OBJECT
 private slots:
  void softmax_is_one_kernel_with_block_reductions() {
    std::mt19937 rng(1);
    Tensor x = test::random_f32({64, 2048}, rng);
    CudaSource src = source_of(test::softmax_graph(x));
    if (qEnvironmentVariableIsSet("KILN_DUMP_CUDA")) qInfo("%s", src.text.c_str());
    QCOMPARE(src.kernels.size(), size_t(1));
    const CudaKernel& k = src.kernels[0];
    // 2048 positions, about 32 per thread (LaunchChoice's default): 64 threads, 4 at a time in float4s.
    QVERIFY2(k.per_row && k.outer_numel == 64 && k.block_threads == 64, src.text.c_str());
    QVERIFY2(has(src.text, "kiln_vload<4>(&x[") && has(src.text, "kiln_vstore<4>("), src.text.c_str());
    // The row is read once: exp(x - max) for the sum and the division come from registers.
    QVERIFY2(src.text.find("kiln_vload<4>") == src.text.rfind("kiln_vload<4>(&x["), src.text.c_str());
    QVERIFY2(has(k.name, "amax") && has(k.name, "div"), k.name.c_str());
    QVERIFY2(has(src.text, "kiln_block_reduce(acc, KilnFMax()") && has(src.text, "kiln_block_reduce(acc, KilnSum()"),
             src.text.c_str());
    QVERIFY2(has(src.text, "reuses exp computed by"), src.text.c_str());
    std::string reason;
    if (!nvrtc_or_skip_reason(&reason)) {
      if (qgetenv("KILN_ALLOW_NO_NVRTC") == "1") QSKIP(reason.c_str());
      QFAIL(reason.c_str());
    }
    std::string p = nvrtc_problem(src, "softmax");
    QVERIFY2(p.empty(), p.c_str());
  }

  void pointwise_kernels_move_16_bytes_and_share_sincos() {
    std::mt19937 rng(2);
    Tensor x = test::random_f32({1000}, rng);
    Graph g;
    GraphEmitter e(g);
    Var v = e.placeholder("x", x);
    e.output({e.call1("aten::add.Tensor", {e.call1("aten::sin.default", {v}), e.call1("aten::cos.default", {v})})});
    CudaSource src = source_of(g);
    QCOMPARE(src.kernels.size(), size_t(1));
    QCOMPARE(src.kernels[0].elements_per_thread, 4);
    QVERIFY2(has(src.text, "kiln_vload<4>(x + base") && has(src.text, "kiln_vstore<4>("), src.text.c_str());
    QVERIFY2(has(src.text, "sincosf(") && !has(src.text, "= sinf(") && !has(src.text, "= cosf("), src.text.c_str());
    QVERIFY2(has(src.text, "the last n % 4 elements"), src.text.c_str());
    std::string reason;
    if (!nvrtc_or_skip_reason(&reason)) {
      if (qgetenv("KILN_ALLOW_NO_NVRTC") == "1") QSKIP(reason.c_str());
      QFAIL(reason.c_str());
    }
    std::string p = nvrtc_problem(src, "sin_cos");
    QVERIFY2(p.empty(), p.c_str());
  }

  // Inputs named like the generated code's locals (the row index r, the
  // output position o, w, a temporary t6, a keyword) compile: NVRTC once read
  // `r[o]` with r the int row index (found by the gemm-epilogue fuzz family).
  void inputs_named_like_locals_compile() {
    std::mt19937 rng(3);
    Graph g;
    GraphEmitter e(g);
    Var r = e.placeholder("r", test::random_f32({22, 11}, rng));
    Var w = e.placeholder("w", test::random_f32({22, 11}, rng));
    Var o = e.placeholder("o", test::random_f32({22, 11}, rng));
    Var t6 = e.placeholder("t6", test::random_f32({22, 11}, rng));
    Var kw = e.placeholder("float", test::random_f32({22, 11}, rng));
    Var s = e.call1("aten::add.Tensor", {e.call1("aten::sigmoid.default", {r}), w});
    Var m = e.call1("aten::amax.default", {e.call1("aten::mul.Tensor", {s, o}), std::vector<int64_t>{1}, true});
    e.output({e.call1("aten::sub.Tensor", {e.call1("aten::add.Tensor", {s, t6}), e.call1("aten::add.Tensor", {m, kw})})});
    CudaSource src = source_of(g);
    if (qEnvironmentVariableIsSet("KILN_DUMP_CUDA")) qInfo("%s", src.text.c_str());
    QVERIFY2(has(src.text, "in_r") && has(src.text, "in_o") && has(src.text, "in_w") && has(src.text, "in_t6"),
             src.text.c_str());
    std::string reason;
    if (!nvrtc_or_skip_reason(&reason)) {
      if (qgetenv("KILN_ALLOW_NO_NVRTC") == "1") QSKIP(reason.c_str());
      QFAIL(reason.c_str());
    }
    std::string p = nvrtc_problem(src, "locals");
    QVERIFY2(p.empty(), p.c_str());
  }

  void every_dtype_and_reduction_compiles() {
    std::string reason;
    if (!nvrtc_or_skip_reason(&reason)) {
      if (qgetenv("KILN_ALLOW_NO_NVRTC") == "1") QSKIP(reason.c_str());
      QFAIL(reason.c_str());
    }
    // Random graphs: pointwise ops, reductions, views, broadcasts, casts, 7 dtypes.
    const int graphs = qEnvironmentVariableIntValue("KILN_CUDA_FUZZ_GRAPHS") > 0
                           ? qEnvironmentVariableIntValue("KILN_CUDA_FUZZ_GRAPHS") : 150;
    int kernels = 0;
    for (int seed = 1; seed <= graphs; ++seed) {
      std::vector<Tensor> inputs;
      Graph g = test::CodegenGraphGenerator(uint32_t(seed)).build(&inputs);
      CudaSource src;
      try {
        src = source_of(g);
      } catch (const Error& e) {
        QFAIL(("seed " + std::to_string(seed) + ": " + e.what()).c_str());
      }
      kernels += int(src.kernels.size());
      std::string p = nvrtc_problem(src, "seed" + std::to_string(seed));
      QVERIFY2(p.empty(), ("seed " + std::to_string(seed) + ": " + p).c_str());
    }
    QVERIFY(kernels >= graphs / 2);
  }
};

QTEST_MAIN(TestCodegenCuda)
#include "test_codegen_cuda.moc"
