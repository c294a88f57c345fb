// Attention fusion (sched/attention.cpp) and its flash kernel on the GPU
// (codegen/cuda/cuda_attention.h). Without a GPU: every form of
// tests/compiler/attention_graphs.h is fused or refused as it should be, the
// fused program run by the scheduler's interpreter (the float64 reference
// kernel) equals the eager graph, and the CUDA module compiles with NVRTC for
// sm_90. With one (the lent machine; KILN_REQUIRE_GPU=1 makes its absence a
// failure) the flash kernels run against the eager graph, plainly and
// replayed from a CUDA graph.
#include <random>

#include "attention_graphs.h"
#include "compiler/codegen/cuda/cuda_api.h"
#include "compiler/loopir/lower.h"
#include "compiler/pipeline/run_region.h"
#include "compiler/runtime/compiled_graph.h"
#include "compiler/runtime/cuda_graph.h"
#include "compiler/sched/schedule.h"
#include "cuda_test_util.h"
#include "loopir_test_util.h"
#include "test_support.h"

using namespace kiln;
using namespace kiln::codegen::cuda;
using runtime::CudaCompiledGraph;
using runtime::CudaCompileOptions;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

double tolerance(DType d) { return d == DType::Float16 ? 1e-2 : d == DType::BFloat16 ? 4e-2 : 1e-4; }

// The graph after Kiln's passes (decomposition, constant folding: the causal
// mask becomes a constant), as the CUDA backend gets it.
pipeline::CompileResult passes(const Graph& g) {
  pipeline::RegionOptions ro;
  ro.codegen = pipeline::RegionOptions::Codegen::None;
  pipeline::RegionRun run = pipeline::run_region(pipeline::RegionInput::single(g), ro);
  if (!run.status.ok() || run.parts.empty()) qFatal("passes failed: %s", run.status.message().c_str());
  return run.parts.at(0).passes;
}

struct Scheduled {
  sched::ScheduledProgram s;
  std::vector<Tensor> inputs;  // Program::inputs' tensors: the given ones and the bound constants
};

Scheduled schedule_fused(const pipeline::CompileResult& r, const std::vector<Tensor>& given) {
  std::vector<Tensor> bound;
  Expected<Graph> g = runtime::bind_constants(r.graph, r.constants.all(), bound);
  if (!g.ok()) qFatal("bind_constants: %s", g.status().message().c_str());
  loopir::Program p = loopir::lower_to_loops(*g);
  Scheduled out;
  size_t next = 0;
  std::map<std::string, const Tensor*> constants;
  for (size_t i = 0; i < bound.size(); ++i) {
    out.inputs.push_back(bound[i].defined() ? bound[i] : given.at(next++));
    if (bound[i].defined()) constants[p.inputs.at(i)] = &bound[i];
  }
  sched::ScheduleOptions o;
  o.fuse_attention = true;
  o.constant_value = [&](const std::string& b) -> const Tensor* {
    auto it = constants.find(b);
    return it == constants.end() ? nullptr : it->second;
  };
  out.s = sched::schedule(std::move(p), o);
  // The bound tensors move with `out`; the lookup is done.
  return out;
}

const sched::FusionDecision* attention_decision(const sched::ScheduledProgram& s) {
  for (const sched::FusionDecision& d : s.decisions)
    if (d.kind == sched::DecisionKind::Attention) return &d;
  return nullptr;
}

const std::string& stage(const CudaCompiledGraph& g, const std::string& name) { return test::cuda_stage(g, name); }

using test::no_gpu_reason;

}  // namespace

class TestCudaAttention : public QObject {
  Q_OBJECT
 private slots:
  // Each form fused (or refused with its reason), and the fused program equal to eager.
  void forms_fuse_and_match_eager_on_the_cpu() {
    for (const test::AttentionForm& f : test::attention_forms()) {
      std::vector<Tensor> inputs;
      Graph g = test::attention_graph(f, &inputs, 1);
      Scheduled sc = schedule_fused(passes(g), inputs);
      const std::string text = sched::print_scheduled(sc.s);
      if (qEnvironmentVariableIsSet("KILN_DUMP_ATTENTION")) qInfo("%s\n%s", f.name.c_str(), text.c_str());
      const sched::FusionDecision* d = attention_decision(sc.s);
      QVERIFY2(d, (f.name + ": no attention decision\n" + text).c_str());
      const std::string refusal = test::attention_refusal(f);
      QVERIFY2(d->accepted == refusal.empty(), (f.name + ": " + d->reason).c_str());
      if (!refusal.empty()) {
        QVERIFY2(has(d->reason, refusal), (f.name + ": " + d->reason).c_str());
      } else {
        QVERIFY2(has(d->reason, "into flash attention"), (f.name + ": " + d->reason).c_str());
        const bool causal = test::attention_causal(f);
        QVERIFY2(has(d->reason, "causal mask") == causal, (f.name + ": " + d->reason).c_str());
        // The fused extern and no reduction left (a 4-D output's view may keep a copy;
        // a causal mask's kernels are gone with it).
        size_t fused = 0, reductions = 0;
        for (const loopir::Kernel& k : sc.s.program.kernels) {
          fused += k.kind == loopir::KernelKind::Extern && k.call->kind == loopir::ExternKind::Attention;
          reductions += k.kind == loopir::KernelKind::Reduction;
          if (causal) QVERIFY2(k.kind != loopir::KernelKind::Extern || k.call->kind != loopir::ExternKind::Fallback,
                               (f.name + ": " + k.output + " left\n" + text).c_str());
        }
        QVERIFY2(fused == 1 && reductions == 0, (f.name + "\n" + text).c_str());
      }
      std::vector<Tensor> got = sched::run_scheduled(sc.s, sc.inputs);
      std::string diff = test::compare_outputs(got, test::aten_outputs(g, inputs), tolerance(f.dtype));
      QVERIFY2(diff.empty(), (f.name + ": " + diff + "\n" + text).c_str());
    }
  }

  // The fuzzer's random forms (kiln-codegen-fuzz --family attention runs them on the GPU):
  // fused whenever nothing is refused, and the fused program equal to eager.
  void random_forms_fuse_and_match_eager_on_the_cpu() {
    int fused = 0;
    for (uint32_t seed = 1; seed <= 60; ++seed) {
      test::AttentionForm f = test::random_attention_form(seed);
      std::vector<Tensor> inputs;
      Graph g = test::attention_graph(f, &inputs, seed);
      Scheduled sc = schedule_fused(passes(g), inputs);
      const sched::FusionDecision* d = attention_decision(sc.s);
      QVERIFY2(d && d->accepted, (f.name + ": " + (d ? d->reason : "no decision") + "\n" + sched::print_scheduled(sc.s)).c_str());
      fused += d->accepted;
      std::vector<Tensor> got = sched::run_scheduled(sc.s, sc.inputs);
      std::string diff = test::compare_outputs(got, test::aten_outputs(g, inputs), tolerance(f.dtype));
      QVERIFY2(diff.empty(), (f.name + " (" + std::string(dtype_name(f.dtype)) + ", " + std::to_string(f.batch.size() + 2) +
                              "-D, m " + std::to_string(f.m) + ", n " + std::to_string(f.n) + ", d " + std::to_string(f.d) +
                              ", dv " + std::to_string(f.dv) + ", scale " + f.scale + ", mask '" + f.mask +
                              "'): " + diff + "\n" + d->reason).c_str());
    }
    QCOMPARE(fused, 60);
  }

  // The CPU backend keeps bmm, softmax, bmm (no fuse_attention): its BLAS is what it has.
  void cpu_schedule_does_not_fuse() {
    std::vector<Tensor> inputs;
    Graph g = test::attention_graph(test::attention_forms()[0], &inputs, 1);
    sched::ScheduledProgram s = sched::schedule(loopir::lower_to_loops(passes(g).graph));
    QVERIFY(attention_decision(s) == nullptr);
  }

  void flash_kernels_compile_with_nvrtc() {
    if (std::string d = nvrtc_describe(); d.rfind("unavailable", 0) == 0) {
      if (qgetenv("KILN_ALLOW_NO_NVRTC") == "1") QSKIP(d.c_str());
      QFAIL(d.c_str());
    }
    for (const test::AttentionForm& f : test::attention_forms()) {
      if (!test::attention_refusal(f).empty()) continue;
      std::vector<Tensor> inputs;
      pipeline::CompileResult r = passes(test::attention_graph(f, &inputs, 1));
      CudaCompileOptions o;
      o.compile_only = true, o.keep_text = true, o.use_cache = false, o.sm = 90;
      auto compiled = CudaCompiledGraph::compile(r.graph, o, r.constants.all());
      QVERIFY2(compiled.ok(), (f.name + ": " + compiled.status().message()).c_str());
      const std::string& src = stage(**compiled, "cuda_source");
      QVERIFY2(!has(src, "runs on the host") && (*compiled)->stats().host_externs == 0, (f.name + "\n" + src).c_str());
      const bool tc = f.dtype != DType::Float32 && f.d % 16 == 0 && f.dv % 16 == 0;
      const std::string entry = std::string(".entry kiln_attn_") + (tc ? "tc_" : "simple_");
      QVERIFY2(has(stage(**compiled, "ptx"), entry), (f.name + ": no " + entry).c_str());
      if (tc) QVERIFY2(has(stage(**compiled, "ptx"), "mma.sync.aligned.m16n8k16"), f.name.c_str());
      const bool causal = test::attention_causal(f);
      QVERIFY2((has(src, "_m1(KilnAttnArgs") || has(src, "_m1_w")) == causal, (f.name + "\n" + src.substr(src.size() - 300)).c_str());
    }
  }

  void flash_kernels_match_eager_on_the_gpu() {
    if (std::string why = no_gpu_reason(); !why.empty()) {
      if (qgetenv("KILN_REQUIRE_GPU") == "1") QFAIL(why.c_str());
      QSKIP(why.c_str());
    }
    for (const test::AttentionForm& f : test::attention_forms()) {
      std::vector<Tensor> inputs;
      Graph g = test::attention_graph(f, &inputs, 3);
      pipeline::CompileResult r = passes(g);
      CudaCompileOptions o;
      o.use_cache = false;
      auto compiled = CudaCompiledGraph::compile(r.graph, o, r.constants.all());
      QVERIFY2(compiled.ok(), (f.name + ": " + compiled.status().message()).c_str());
      auto got = (*compiled)->run(inputs);
      QVERIFY2(got.ok(), (f.name + ": " + got.status().message()).c_str());
      std::string diff = test::compare_outputs(*got, test::aten_outputs(g, inputs), tolerance(f.dtype));
      QVERIFY2(diff.empty(), (f.name + ": " + diff).c_str());
      // Replayed from a CUDA graph with new inputs: the same kernel, the same numbers.
      auto exec = runtime::CudaExecution::create(*compiled);
      QVERIFY2(exec.ok(), exec.status().message().c_str());
      auto stream = Stream::create();
      QVERIFY2(stream.ok(), stream.status().message().c_str());
      std::vector<Tensor> again;
      Graph same = test::attention_graph(f, &again, 11);
      for (size_t k = 0; k < again.size(); ++k) QVERIFY((*exec)->set_input(k, again[k]).ok());
      Status st = (*exec)->replay(*stream);
      QVERIFY2(st.ok(), (f.name + ": " + st.message()).c_str());
      QVERIFY(stream->synchronize().ok());
      auto out = (*exec)->outputs();
      QVERIFY2(out.ok(), out.status().message().c_str());
      diff = test::compare_outputs(*out, test::aten_outputs(same, again), tolerance(f.dtype));
      QVERIFY2(diff.empty(), (f.name + " replay: " + diff).c_str());
      qInfo("%s: ok", f.name.c_str());
    }
  }
};

QTEST_MAIN(TestCudaAttention)
#include "test_cuda_attention.moc"
