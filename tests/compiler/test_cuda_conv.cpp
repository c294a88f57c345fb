// Convolution extern kernels on the GPU (codegen/cuda/cuda_conv.h): im2col
// into a workspace, a cuBLAS GEMM per group, a bias kernel; and the
// implicit-GEMM kernel (cuda_conv_implicit.h) that KILN_CONV=implicit picks.
// Without a GPU the graphs must still compile (the module carries the im2col
// or implicit kernels and NVRTC accepts it: a syntax error in the generated
// source fails here); with one (the lent GPU machine) every case runs on both
// paths against the ATen kernels, through a plain run and CUDA graph replay.
#include <cmath>
#include <random>
#include <set>
#include <sstream>

#include "compiler/codegen/cuda/cuda_api.h"
#include "compiler/codegen/cuda/cuda_emit.h"
#include "compiler/codegen/cuda/cuda_prelude.h"
#include "compiler/decomp/decompose.h"
#include "compiler/loopir/lower.h"
#include "compiler/pipeline/emitter.h"
#include "compiler/runtime/cuda_graph.h"
#include "compiler/sched/schedule.h"
#include "core/graph/printer.h"
#include "cuda_test_util.h"
#include "loopir_test_util.h"
#include "random_conv_graph.h"
#include "test_support.h"

using namespace kiln;
using namespace kiln::pipeline;
using namespace kiln::codegen::cuda;
using runtime::CudaCompiledGraph;
using runtime::CudaCompileOptions;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

CudaSource source_of(const Graph& g, const LaunchChoice& launch = {}) {
  sched::ScheduledProgram s = sched::schedule(loopir::lower_to_loops(g));
  return emit_cuda(s, plan_for_cuda(s), InjectedBug::None, launch);
}

LaunchChoice implicit_choice() {
  LaunchChoice l;
  l.conv.algorithm = ConvAlgorithm::Implicit;
  l.conv.tf32 = true;
  return l;
}

struct ConvCase {
  std::string name;
  std::vector<int64_t> x, w;
  bool bias;
  std::vector<int64_t> stride, pad, dil;
  int64_t groups;
  DType dtype = DType::Float32;
  std::string layout = "contiguous";  // "channels_last": the input a permuted view; "slice": a channel slice
  std::string im2col;                  // the im2col kernel the module must carry ("" for a direct 1x1)
};

std::vector<ConvCase> conv_cases() {
  return {
      {"stride2_pad1_bias", {2, 4, 9, 8}, {6, 4, 3, 3}, true, {2, 2}, {1, 1}, {1, 1}, 1, DType::Float32, "contiguous",
       "kiln_conv_im2col_b4_i32"},
      {"groups2_dilation", {2, 4, 9, 8}, {6, 2, 3, 2}, false, {2, 1}, {1, 1}, {1, 2}, 2, DType::Float32, "contiguous",
       "kiln_conv_im2col_b4_i32"},
      {"pointwise_1x1", {2, 8, 5, 5}, {4, 8, 1, 1}, true, {1, 1}, {0, 0}, {1, 1}, 1, DType::Float32, "contiguous", ""},
      {"pointwise_1x1_stride2", {2, 8, 5, 5}, {4, 8, 1, 1}, false, {2, 2}, {0, 0}, {1, 1}, 1, DType::Float32,
       "contiguous", "kiln_conv_im2col_b4_i32"},
      {"depthwise", {2, 6, 7, 7}, {12, 1, 3, 3}, true, {2, 2}, {1, 1}, {1, 1}, 6, DType::Float32, "contiguous",
       "kiln_conv_im2col_b4_i32"},
      {"conv1d", {2, 3, 11}, {5, 3, 4}, true, {2}, {1}, {1}, 1, DType::Float32, "contiguous", "kiln_conv_im2col_b4_i32"},
      {"channels_last_input", {2, 4, 9, 8}, {6, 4, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 1, DType::Float32,
       "channels_last", "kiln_conv_im2col_b4_i32"},
      {"channels_last_1x1", {2, 8, 5, 5}, {4, 8, 1, 1}, false, {1, 1}, {0, 0}, {1, 1}, 1, DType::Float32,
       "channels_last", ""},
      {"channel_slice", {2, 4, 9, 8}, {5, 4, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 1, DType::Float32, "slice",
       "kiln_conv_im2col_b4_i32"},
      {"float64", {2, 4, 9, 8}, {6, 2, 3, 3}, true, {2, 2}, {1, 1}, {1, 1}, 2, DType::Float64, "contiguous",
       "kiln_conv_im2col_b8_i32"},
      {"float16", {2, 4, 9, 8}, {6, 4, 3, 3}, true, {2, 2}, {1, 1}, {1, 1}, 1, DType::Float16, "contiguous",
       "kiln_conv_im2col_b2_i32"},
      {"bfloat16", {2, 4, 9, 8}, {6, 4, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 1, DType::BFloat16, "contiguous",
       "kiln_conv_im2col_b2_i32"},
      // Ragged everywhere (no size a multiple of a tile), uneven stride, padding and dilation.
      {"ragged_stride_dilation_padding", {3, 5, 13, 11}, {7, 5, 3, 3}, true, {3, 2}, {2, 1}, {2, 2}, 1,
       DType::Float32, "contiguous", "kiln_conv_im2col_b4_i32"},
      {"pointwise_1x1_ragged", {3, 9, 7, 5}, {11, 9, 1, 1}, true, {1, 1}, {0, 0}, {1, 1}, 1, DType::Float32,
       "contiguous", ""},
      // ResNet's stem: 7x7, stride 2, padding 3, three input channels (K = 147).
      {"stem_7x7", {2, 3, 37, 41}, {64, 3, 7, 7}, false, {2, 2}, {3, 3}, {1, 1}, 1, DType::Float32, "contiguous",
       "kiln_conv_im2col_b4_i32"},
      // 130 channels and 646 pixels: partial tiles on both sides of the output.
      {"multi_tile_bias", {2, 16, 19, 17}, {130, 16, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 1, DType::Float32,
       "contiguous", "kiln_conv_im2col_b4_i32"},
      // A deep K over few outputs (ResNet's last stage): the implicit kernel splits K.
      {"split_k", {1, 256, 4, 4}, {40, 256, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 1, DType::Float32, "contiguous",
       "kiln_conv_im2col_b4_i32"},
      {"float16_ragged", {3, 5, 13, 11}, {7, 5, 3, 3}, true, {2, 2}, {1, 1}, {1, 1}, 1, DType::Float16, "contiguous",
       "kiln_conv_im2col_b2_i32"},
      {"bfloat16_1x1_stride2", {2, 24, 9, 9}, {33, 24, 1, 1}, false, {2, 2}, {0, 0}, {1, 1}, 1, DType::BFloat16,
       "contiguous", "kiln_conv_im2col_b2_i32"},
      {"float16_split_k", {1, 128, 5, 5}, {24, 128, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 1, DType::Float16,
       "contiguous", "kiln_conv_im2col_b2_i32"},
      {"bfloat16_stem_channels_last", {2, 3, 23, 21}, {16, 3, 7, 7}, true, {2, 2}, {3, 3}, {1, 1}, 1,
       DType::BFloat16, "channels_last", "kiln_conv_im2col_b2_i32"},
  };
}

// Where the implicit kernel takes a case: tensor-core dtypes, one group.
bool implicit_takes(const ConvCase& c) { return c.dtype != DType::Float64 && c.groups == 1; }

// The depth of the case's GEMM, C / groups * KH * KW.
int64_t conv_depth(const ConvCase& c) {
  int64_t k = c.w[1];
  for (size_t d = 2; d < c.w.size(); ++d) k *= c.w[d];
  return k;
}

// The case's graph and inputs: x, w and (always, used or not) b.
// `w_scale` bounds the weights (TF32 runs keep the output near 1 so that a
// fixed tolerance measures rounding, not the depth of the sum).
Graph conv_graph(const ConvCase& c, std::vector<Tensor>* inputs, uint32_t seed, float w_scale = 2.f) {
  std::mt19937 rng(seed);
  std::vector<int64_t> xs = c.x;
  if (c.layout == "channels_last") std::rotate(xs.begin() + 1, xs.begin() + 2, xs.end());  // [N, H, W, C]
  if (c.layout == "slice") xs[1] += 2;
  Tensor x = test::random_f32(xs, rng).to(c.dtype), w = test::random_f32(c.w, rng, -w_scale, w_scale).to(c.dtype);
  Tensor b = test::random_f32({c.w[0]}, rng).to(c.dtype);
  *inputs = {x, w, b};
  Graph g;
  GraphEmitter e(g);
  Var vx = e.placeholder("x", x), vw = e.placeholder("w", w), vb = e.placeholder("b", b);
  if (c.layout == "channels_last") {
    std::vector<int64_t> perm = c.x.size() == 4 ? std::vector<int64_t>{0, 3, 1, 2} : std::vector<int64_t>{0, 2, 1};
    vx = e.call1("aten::permute.default", {vx, perm});
  }
  if (c.layout == "slice") vx = e.call1("aten::slice.Tensor", {vx, int64_t(1), int64_t(1), c.x[1] + 1});
  std::vector<int64_t> out_pad(c.stride.size(), 0);
  e.output({e.call1("aten::convolution.default", {vx, vw, c.bias ? EArg(vb) : EArg::none(), c.stride, c.pad, c.dil,
                                                  false, out_pad, c.groups})});
  return g;
}

double tolerance(DType d) { return test::cuda_tolerance(d); }

const std::string& stage(const CudaCompiledGraph& g, const std::string& name) { return test::cuda_stage(g, name); }

using test::no_gpu_reason;

// conv -> batch norm (eval) -> relu -> max pool 3/2/1 -> adaptive avg pool ->
// flatten -> linear: a ResNet stem and head, decomposed as the backend gets it.
Graph resnet_like_graph(std::vector<Tensor>* inputs) {
  std::mt19937 rng(7);
  Tensor x = test::random_f32({2, 3, 16, 16}, rng), w = test::random_f32({8, 3, 7, 7}, rng, -0.2f, 0.2f);
  Tensor gamma = test::random_f32({8}, rng), beta = test::random_f32({8}, rng), mean = test::random_f32({8}, rng);
  Tensor var = test::random_f32({8}, rng, 0.5f, 2.f);
  Tensor fc_w = test::random_f32({10, 8}, rng), fc_b = test::random_f32({10}, rng);
  *inputs = {x, w, gamma, beta, mean, var, fc_w, fc_b};
  Graph g;
  GraphEmitter e(g);
  Var vx = e.placeholder("x", x), vw = e.placeholder("w", w), vg = e.placeholder("gamma", gamma);
  Var vbeta = e.placeholder("beta", beta), vm = e.placeholder("mean", mean), vv = e.placeholder("var", var);
  Var vfw = e.placeholder("fc_w", fc_w), vfb = e.placeholder("fc_b", fc_b);
  Var c = e.call1("aten::convolution.default", {vx, vw, EArg::none(), std::vector<int64_t>{2, 2},
                                                std::vector<int64_t>{3, 3}, std::vector<int64_t>{1, 1}, false,
                                                std::vector<int64_t>{0, 0}, int64_t(1)});
  Var bn = e.call("aten::_native_batch_norm_legit_no_training.default", {c, vg, vbeta, vm, vv, 0.1, 1e-5}).at(0);
  Var r = e.call1("aten::relu.default", {bn});
  Var mp = e.call("aten::max_pool2d_with_indices.default", {r, std::vector<int64_t>{3, 3}, std::vector<int64_t>{2, 2},
                                                            std::vector<int64_t>{1, 1}, std::vector<int64_t>{1, 1}, false})
               .at(0);
  Var ap = e.call1("aten::_adaptive_avg_pool2d.default", {mp, std::vector<int64_t>{1, 1}});
  Var flat = e.call1("aten::view.default", {ap, std::vector<int64_t>{2, 8}});
  Var fc = e.call1("aten::addmm.default", {vfb, flat, e.call1("aten::t.default", {vfw})});
  e.output({fc});
  return g;
}

// A case against ATen on the GPU, with `o`: a plain run, then replayed from a
// CUDA graph twice with new inputs after capture. "" when every output agrees.
std::string run_on_gpu(const ConvCase& c, const CudaCompileOptions& o, double tol, float w_scale,
                       const std::string& kernel) {
  const std::string name = c.name + (kernel.empty() ? "" : " (" + kernel + ")");
  std::vector<Tensor> inputs;
  Graph g = conv_graph(c, &inputs, 3, w_scale);
  std::vector<Tensor> want = test::aten_outputs(g, inputs);
  auto compiled = CudaCompiledGraph::compile(g, o);
  if (!compiled.ok()) return name + ": " + compiled.status().message();
  auto got = (*compiled)->run(inputs);
  if (!got.ok()) return name + ": " + got.status().message();
  if (std::string diff = test::compare_outputs(*got, want, tol); !diff.empty()) return name + ": " + diff;
  auto exec = runtime::CudaExecution::create(*compiled);
  if (!exec.ok()) return name + ": " + exec.status().message();
  if (!(*exec)->capturable()) return name + ": not capturable";
  auto stream = Stream::create();
  if (!stream.ok()) return stream.status().message();
  for (uint32_t round = 0; round < 2; ++round) {
    std::vector<Tensor> again;
    Graph same = conv_graph(c, &again, 10 + round, w_scale);
    for (size_t k = 0; k < again.size(); ++k)
      if (Status st = (*exec)->set_input(k, again[k]); !st.ok()) return name + ": " + st.message();
    if (Status st = (*exec)->replay(*stream); !st.ok()) return name + ": " + st.message();
    if (Status st = stream->synchronize(); !st.ok()) return name + ": " + st.message();
    auto out = (*exec)->outputs();
    if (!out.ok()) return name + ": " + out.status().message();
    if (std::string diff = test::compare_outputs(*out, test::aten_outputs(same, again), tol); !diff.empty())
      return name + " replay " + std::to_string(round) + ": " + diff;
  }
  return "";
}

}  // namespace

class TestCudaConv : public QObject {
  Q_OBJECT
 private slots:
  void conv_graphs_compile_with_im2col() {
    if (std::string d = nvrtc_describe(); d.rfind("unavailable", 0) == 0) {
      if (qgetenv("KILN_ALLOW_NO_NVRTC") == "1") QSKIP(d.c_str());
      QFAIL(d.c_str());
    }
    for (const ConvCase& c : conv_cases()) {
      std::vector<Tensor> inputs;
      Graph g = conv_graph(c, &inputs, 1);
      CudaCompileOptions o;
      o.compile_only = true, o.keep_text = true, o.use_cache = false, o.conv_algorithm = "im2col";
      auto compiled = CudaCompiledGraph::compile(g, o);
      QVERIFY2(compiled.ok(), (c.name + ": " + compiled.status().message()).c_str());
      const CudaCompiledGraph& cg = **compiled;
      const std::string& src = stage(cg, "cuda_source");
      const std::string& ptx = stage(cg, "ptx");
      QVERIFY2(cg.stats().extern_groups == 1 && cg.stats().host_externs == 0, (c.name + "\n" + src).c_str());
      CudaSource emitted = source_of(g);
      QCOMPARE(emitted.convs.size(), size_t(1));
      QVERIFY2(!has(src, "runs on the host"), (c.name + "\n" + src).c_str());
      if (c.im2col.empty()) {
        QVERIFY2(emitted.convs[0].direct && !has(src, "kiln_conv_im2col_b"), (c.name + "\n" + src).c_str());
      } else {
        QVERIFY2(has(src, "void __launch_bounds__(256) " + c.im2col + "("), (c.name + "\n" + src).c_str());
        QVERIFY2(has(ptx, ".entry " + c.im2col), (c.name + ": no entry in the PTX").c_str());
      }
      const std::string bias = "kiln_conv_bias_" + std::string(dtype_abbrev(c.dtype));
      QVERIFY2(has(ptx, ".entry " + bias) == c.bias, (c.name + ": " + bias + " entry").c_str());
    }
  }

  // KILN_CONV=implicit's modules: every case compiles with NVRTC (no GPU
  // needed), the implicit kernel in the PTX with tensor-core mma, no im2col
  // or bias kernel beside it; the cases it does not take keep im2col.
  void conv_graphs_compile_with_implicit_gemm() {
    if (std::string d = nvrtc_describe(); d.rfind("unavailable", 0) == 0) {
      if (qgetenv("KILN_ALLOW_NO_NVRTC") == "1") QSKIP(d.c_str());
      QFAIL(d.c_str());
    }
    size_t split = 0;
    for (const ConvCase& c : conv_cases()) {
      std::vector<Tensor> inputs;
      Graph g = conv_graph(c, &inputs, 1);
      CudaCompileOptions o;
      o.compile_only = true, o.keep_text = true, o.use_cache = false, o.conv_algorithm = "implicit";
      o.conv_tf32 = true;
      auto compiled = CudaCompiledGraph::compile(g, o);
      QVERIFY2(compiled.ok(), (c.name + ": " + compiled.status().message()).c_str());
      const std::string& src = stage(**compiled, "cuda_source");
      const std::string& ptx = stage(**compiled, "ptx");
      QVERIFY2((*compiled)->stats().host_externs == 0, (c.name + "\n" + src).c_str());
      CudaSource emitted = source_of(g, implicit_choice());
      QCOMPARE(emitted.convs.size(), size_t(1));
      const ConvGpuPlan& plan = emitted.convs[0];
      QVERIFY2(plan.implicit.function.empty() != implicit_takes(c), (c.name + "\n" + src).c_str());
      if (!implicit_takes(c)) {
        QVERIFY2(!has(src, "kiln_conv_igemm"), (c.name + "\n" + src).c_str());
        continue;
      }
      QVERIFY2(has(ptx, ".entry " + plan.implicit.function), (c.name + ": no entry in the PTX").c_str());
      const std::string mma = c.dtype == DType::Float32 ? "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
                              : c.dtype == DType::Float16 ? "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
                                                          : "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32";
      QVERIFY2(has(ptx, mma), (c.name + ": no " + mma).c_str());
      QVERIFY2(!has(src, "kiln_conv_im2col_b") && !has(src, "kiln_conv_bias_"), (c.name + "\n" + src).c_str());
      QCOMPARE(plan.workspace_bytes(), implicit_conv_workspace_bytes(plan));
      if (plan.implicit.splits > 1) {
        ++split;
        QVERIFY2(has(ptx, ".entry " + plan.implicit.reduce_function), (c.name + ": no split-K sum").c_str());
        QVERIFY(plan.workspace_bytes() > 0);
      }
    }
    QVERIFY2(split >= 2, "the split-K cases did not split");
  }

  // Every tile the planner may pick, for each dtype, split and not, with and
  // without bias, 32- and 64-bit indices: one NVRTC module.
  void every_implicit_tile_compiles() {
    if (std::string d = nvrtc_describe(); d.rfind("unavailable", 0) == 0) {
      if (qgetenv("KILN_ALLOW_NO_NVRTC") == "1") QSKIP(d.c_str());
      QFAIL(d.c_str());
    }
    std::vector<ConvGpuPlan> plans;
    for (DType d : {DType::Float32, DType::Float16, DType::BFloat16})
      for (const ImplicitConvTile& t : implicit_conv_tiles())
        for (int variant = 0; variant < 2; ++variant) {
          ConvCase c{"tile", {2, 6, 9, 7}, {5, 6, 3, 3}, variant == 0, {1, 1}, {1, 1}, {1, 1}, 1, d, "contiguous", ""};
          const std::string forced = std::to_string(t.bm) + "x" + std::to_string(t.bn) + (variant ? "x2" : "");
          qputenv("KILN_CONV_TILE", forced.c_str());
          std::vector<Tensor> inputs;
          CudaSource emitted = source_of(conv_graph(c, &inputs, 1), implicit_choice());
          qunsetenv("KILN_CONV_TILE");
          QCOMPARE(emitted.convs.size(), size_t(1));
          ConvGpuPlan plan = emitted.convs[0];
          QVERIFY2(plan.implicit.tile.bm == t.bm && plan.implicit.tile.bn == t.bn, (forced + "\n" + emitted.text).c_str());
          QCOMPARE(plan.implicit.splits, int64_t(variant ? 2 : 1));
          plans.push_back(plan);
          if (variant == 0 && t.bm == 32 && t.bn == 32) {  // the same kernel with 64-bit indices
            plan.implicit.wide_index = true;
            plan.implicit.function += "_i64";
            plans.push_back(plan);
          }
        }
    const std::string src = std::string(kCudaPrelude) + kCudaTensorCoreHelpers + implicit_conv_kernels_source(plans);
    Expected<NvrtcOutput> out = nvrtc_compile(src, "implicit_tiles.cu", 90, true, {"--ptxas-options=-v"});
    QVERIFY2(out.ok(), out.status().message().c_str());
    // ptxas's report for sm_90: no kernel spills (registers printed for the record).
    std::istringstream log(out->log);
    std::string line, entry;
    size_t reports = 0;
    while (std::getline(log, line)) {
      if (size_t at = line.find("Compiling entry function '"); at != std::string::npos)
        entry = line.substr(at + 26, line.find('\'', at + 26) - at - 26);
      if (line.find("bytes spill stores") != std::string::npos)
        QVERIFY2(has(line, " 0 bytes spill stores, 0 bytes spill loads"), (entry + ": " + line).c_str());
      if (size_t at = line.find("Used "); at != std::string::npos && !entry.empty()) {
        qInfo("%s: %s", entry.c_str(), line.substr(at).c_str());
        ++reports;
      }
    }
    QVERIFY2(reports > 0, out->log.c_str());
    std::set<std::string> names;
    for (const ConvGpuPlan& p : plans) {
      names.insert(p.implicit.function);
      if (!p.implicit.reduce_function.empty()) names.insert(p.implicit.reduce_function);
    }
    for (const std::string& n : names) QVERIFY2(has(out->ptx, ".entry " + n), n.c_str());
    QCOMPARE(names.size(), size_t(3 * 7 * 2 + 3 + 3));  // + 64-bit variants + one sum kernel per dtype
  }

  // Random geometries of the fuzzer's conv family (random_conv_graph.h),
  // planned for the implicit kernel and compiled by NVRTC: no planner
  // refusal, no host extern, and a kernel wherever the kernel applies.
  // KILN_CONV_RANDOM_GRAPHS sets how many (each is an NVRTC compile).
  void random_convs_compile_with_implicit_gemm() {
    if (std::string d = nvrtc_describe(); d.rfind("unavailable", 0) == 0) {
      if (qgetenv("KILN_ALLOW_NO_NVRTC") == "1") QSKIP(d.c_str());
      QFAIL(d.c_str());
    }
    const int graphs = qEnvironmentVariableIsSet("KILN_CONV_RANDOM_GRAPHS") ? qEnvironmentVariableIntValue("KILN_CONV_RANDOM_GRAPHS") : 24;
    int implicit = 0;
    for (int k = 0; k < graphs; ++k) {
      std::vector<Tensor> inputs;
      Graph g = test::ConvGraphGenerator(100 + uint32_t(k)).build(&inputs);
      auto decomposed = decomp::decompose(g);
      QVERIFY2(decomposed.ok(), decomposed.status().message().c_str());
      CudaCompileOptions o;
      o.compile_only = true, o.keep_text = true, o.use_cache = false, o.conv_algorithm = "implicit", o.conv_tf32 = true;
      auto compiled = CudaCompiledGraph::compile(*decomposed, o);
      QVERIFY2(compiled.ok(), (std::to_string(k) + ": " + compiled.status().message()).c_str());
      const std::string& src = stage(**compiled, "cuda_source");
      QVERIFY2((*compiled)->stats().host_externs == 0, src.c_str());
      implicit += has(stage(**compiled, "ptx"), ".entry kiln_conv_igemm_");
    }
    QVERIFY2(graphs < 4 || implicit >= 2, "the implicit kernel took fewer than 2 random convolutions");
  }

  // The switch: KILN_CONV when the option is empty, the option over it, and a
  // bad name or KILN_CONV_TILE said as such; exact float32 keeps im2col.
  void conv_algorithm_switch() {
    const ConvCase c = conv_cases().front();  // float32, 3x3, bias
    std::vector<Tensor> inputs;
    Graph g = conv_graph(c, &inputs, 1);
    auto function = [&](const CudaCompileOptions& o) -> std::string {
      auto compiled = CudaCompiledGraph::compile(g, o);
      if (!compiled.ok()) return "error: " + compiled.status().message();
      return has((*compiled)->source_text(), "kiln_conv_igemm_f32_") ? "implicit" : "im2col";
    };
    CudaCompileOptions o;
    o.emit_only = true, o.conv_tf32 = true;
    qputenv("KILN_CONV", "implicit");
    QCOMPARE(function(o), std::string("implicit"));
    o.conv_algorithm = "im2col";
    QCOMPARE(function(o), std::string("im2col"));
    o.conv_algorithm = "auto";
    QCOMPARE(function(o), std::string("implicit"));
    o.conv_algorithm = "";
    o.conv_tf32 = false;
    QCOMPARE(function(o), std::string("im2col"));
    o.conv_tf32 = true;
    qputenv("KILN_CONV", "fastest");
    QVERIFY(has(function(o), "error: convolution algorithm 'fastest'"));
    qunsetenv("KILN_CONV");
    QCOMPARE(function(o), std::string("im2col"));
    // auto leaves a 1x1 stride-1 convolution to cuBLAS.
    const ConvCase pointwise = conv_cases()[2];
    QCOMPARE(pointwise.name, std::string("pointwise_1x1"));
    LaunchChoice l = implicit_choice();
    l.conv.algorithm = ConvAlgorithm::Auto;
    QVERIFY(source_of(conv_graph(pointwise, &inputs, 1), l).convs.at(0).implicit.function.empty());
    QVERIFY(!source_of(conv_graph(pointwise, &inputs, 1), implicit_choice()).convs.at(0).implicit.function.empty());
    qputenv("KILN_CONV_TILE", "48x48");
    const std::string text = source_of(g, implicit_choice()).text;
    qunsetenv("KILN_CONV_TILE");
    QVERIFY2(has(text, "runs on the host: implicit-GEMM convolution: KILN_CONV_TILE=48x48"), text.c_str());
  }

  // A layout cuBLAS cannot take without a copy keeps the host path, and says why.
  void unsupported_convs_keep_the_host_path() {
    std::mt19937 rng(2);
    Tensor x = test::random_f32({1, 4, 6, 6}, rng), w = test::random_f32({3, 6, 6, 4}, rng);  // [OC, KH, KW, C]
    Graph g;
    GraphEmitter e(g);
    Var vw = e.call1("aten::permute.default", {e.placeholder("w", w), std::vector<int64_t>{0, 3, 1, 2}});
    e.output({e.call1("aten::convolution.default", {e.placeholder("x", x), vw, EArg::none(), std::vector<int64_t>{1, 1},
                                                    std::vector<int64_t>{0, 0}, std::vector<int64_t>{1, 1}, false,
                                                    std::vector<int64_t>{0, 0}, int64_t(1)})});
    CudaCompileOptions o;
    o.emit_only = true, o.keep_text = true;
    auto compiled = CudaCompiledGraph::compile(g, o);
    QVERIFY2(compiled.ok(), compiled.status().message().c_str());
    QCOMPARE((*compiled)->stats().host_externs, size_t(1));
    const std::string& src = stage(**compiled, "cuda_source");
    QVERIFY2(has(src, "runs on the host: convolution on the GPU: the weight's (C, KH, KW)"), src.c_str());
  }

  void convs_match_aten_on_the_gpu() {
    if (std::string why = no_gpu_reason(); !why.empty()) {
      if (qgetenv("KILN_REQUIRE_GPU") == "1") QFAIL(why.c_str());
      QSKIP(why.c_str());
    }
    CudaCompileOptions o;
    o.use_cache = false, o.conv_algorithm = "im2col";
    for (const ConvCase& c : conv_cases()) {
      std::string failure = run_on_gpu(c, o, tolerance(c.dtype), 2.f, "");
      QVERIFY2(failure.empty(), failure.c_str());
    }
  }

  // Every case again with KILN_CONV=implicit's choice and TF32 on: the
  // implicit-GEMM kernel where it applies (the others keep im2col, checked).
  // Weights in +-1/sqrt(K): outputs near 1, so TF32's 2^-11 roundings stay
  // far inside 1e-2 whatever the depth, and a missed or doubled tap does not.
  void implicit_convs_match_aten_on_the_gpu() {
    if (std::string why = no_gpu_reason(); !why.empty()) {
      if (qgetenv("KILN_REQUIRE_GPU") == "1") QFAIL(why.c_str());
      QSKIP(why.c_str());
    }
    CudaCompileOptions o;
    o.use_cache = false, o.conv_algorithm = "implicit", o.conv_tf32 = true;
    for (const ConvCase& c : conv_cases()) {
      const double tol = c.dtype == DType::Float32 ? 1e-2 : tolerance(c.dtype);
      const float w_scale = float(1.0 / std::sqrt(double(conv_depth(c))));
      std::vector<Tensor> inputs;
      CudaSource emitted = source_of(conv_graph(c, &inputs, 3), implicit_choice());
      QCOMPARE(emitted.convs.size(), size_t(1));
      const std::string& function = emitted.convs[0].implicit.function;
      QVERIFY2(function.empty() != implicit_takes(c), (c.name + ": " + function).c_str());
      std::string failure = run_on_gpu(c, o, tol, w_scale, function);
      QVERIFY2(failure.empty(), failure.c_str());
    }
  }

  // The planner picks small tiles for these small cases: every tile (and a
  // split K of 3 parts) forced on one case with partial tiles on both sides,
  // for float32 (TF32) and bfloat16.
  void every_implicit_tile_matches_aten_on_the_gpu() {
    if (std::string why = no_gpu_reason(); !why.empty()) {
      if (qgetenv("KILN_REQUIRE_GPU") == "1") QFAIL(why.c_str());
      QSKIP(why.c_str());
    }
    CudaCompileOptions o;
    o.use_cache = false, o.conv_algorithm = "implicit", o.conv_tf32 = true;
    // 130 channels, 2 x 17 x 15 pixels, K = 16 * 9 (9 float32 tiles, 5 half ones), stride 1, padding 1.
    for (DType d : {DType::Float32, DType::BFloat16})
      for (const ImplicitConvTile& t : implicit_conv_tiles())
        for (const char* split : {"", "x3"}) {
          ConvCase c{"tile", {2, 16, 17, 15}, {130, 16, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 1, d, "contiguous", ""};
          const std::string forced = std::to_string(t.bm) + "x" + std::to_string(t.bn) + split;
          c.name = std::string(dtype_name(d)) + " KILN_CONV_TILE=" + forced;
          qputenv("KILN_CONV_TILE", forced.c_str());
          std::string failure = run_on_gpu(c, o, d == DType::Float32 ? 1e-2 : tolerance(d),
                                           float(1.0 / std::sqrt(double(conv_depth(c)))), forced);
          qunsetenv("KILN_CONV_TILE");
          QVERIFY2(failure.empty(), failure.c_str());
        }
  }

  // What a ResNet stem and head leave as extern kernels once decomposed (printed
  // for the record): the convolution and the linear run on the GPU.
  void resnet_like_graph_externs() {
    std::vector<Tensor> inputs;
    Graph g = resnet_like_graph(&inputs);
    auto decomposed = decomp::decompose(g);
    QVERIFY2(decomposed.ok(), decomposed.status().message().c_str());
    sched::ScheduledProgram s = sched::schedule(loopir::lower_to_loops(*decomposed));
    CudaSource emitted = emit_cuda(s, plan_for_cuda(s));
    if (qEnvironmentVariableIsSet("KILN_DUMP_CUDA"))
      qInfo("%s\n%s", print_graph_module(*decomposed).c_str(), sched::print_scheduled(s).c_str());
    CudaCompileOptions o;
    o.emit_only = true;
    auto compiled = CudaCompiledGraph::compile(*decomposed, o);
    QVERIFY2(compiled.ok(), compiled.status().message().c_str());
    size_t convs = 0, fallbacks_writing = 0;
    for (const loopir::Kernel& k : s.program.kernels) {
      if (k.kind != loopir::KernelKind::Extern) continue;
      convs += k.call->kind == loopir::ExternKind::Convolution;
      bool writes = false;
      for (const std::string& o : loopir::extern_outputs(k))
        writes = writes || loopir::storage_span(s.program.buffer(o)) > 0;
      fallbacks_writing += k.call->kind == loopir::ExternKind::Fallback && writes;
      qInfo("extern %s: %s (%s)", k.output.c_str(), std::string(loopir::extern_kind_name(k.call->kind)).c_str(),
            k.call->target.c_str());
    }
    qInfo("extern groups %zu, on the host %zu", (*compiled)->stats().extern_groups, (*compiled)->stats().host_externs);
    QCOMPARE(convs, size_t(1));
    QCOMPARE(emitted.convs.size(), size_t(1));
    // addmm (the head's linear) runs on cuBLAS with its bias copied in first;
    // the dead `full([0])`s of the batch norm decomposition write nothing. Only
    // fallbacks that write something stay on the host (max_pool2d_with_indices
    // while it has no loop lowering).
    QVERIFY2(has(emitted.text, "kiln_gemm_c_copy_b4("), emitted.text.c_str());
    QCOMPARE((*compiled)->stats().host_externs, fallbacks_writing);
    if (std::string why = no_gpu_reason(); !why.empty()) QSKIP(("the run: " + why).c_str());
    CudaCompileOptions run_options;
    run_options.use_cache = false;
    auto runnable = CudaCompiledGraph::compile(*decomposed, run_options);
    QVERIFY2(runnable.ok(), runnable.status().message().c_str());
    auto got = (*runnable)->run(inputs);
    QVERIFY2(got.ok(), got.status().message().c_str());
    std::string diff = test::compare_outputs(*got, test::aten_outputs(g, inputs), 1e-3);
    QVERIFY2(diff.empty(), diff.c_str());
  }

  // A GEMM with C (addmm's bias broadcast over rows, or a number) fills the
  // output with C by a kernel of the module, then cuBLAS adds beta * C.
  void gemm_with_c_runs_on_cublas() {
    for (DType d : {DType::Float32, DType::Float16}) {
      std::mt19937 rng(5);
      Tensor bias = test::random_f32({6}, rng).to(d), a = test::random_f32({5, 7}, rng).to(d);
      Tensor b = test::random_f32({7, 6}, rng).to(d), m = test::random_f32({5, 6}, rng).to(d);
      std::vector<Tensor> inputs = {bias, a, b, m};
      Graph g;
      GraphEmitter e(g);
      Var vbias = e.placeholder("bias", bias), va = e.placeholder("a", a), vb = e.placeholder("b", b);
      Var vm = e.placeholder("m", m);
      Var addmm = e.call1("aten::addmm.default", {vbias, va, vb}, {{"beta", 0.5}, {"alpha", 2.0}});
      Var plus_matrix = e.call1("aten::add.Tensor", {e.call1("aten::mm.default", {va, vb}), vm});
      Var plus_number = e.call1("aten::add.Scalar", {e.call1("aten::mm.default", {va, vb}), 1.5});
      e.output({addmm, plus_matrix, plus_number});
      CudaSource emitted = source_of(g);
      if (qEnvironmentVariableIsSet("KILN_DUMP_CUDA")) qInfo("%s", emitted.text.c_str());
      const std::string bytes = std::to_string(element_size(d));
      // A half-precision `mm + 1.5` rounds the product before adding, so the
      // scheduler does not fold the number into the GEMM there: no fill kernel.
      QVERIFY2(has(emitted.text, "kiln_gemm_c_copy_b" + bytes + "(") &&
                   (d != DType::Float32 || has(emitted.text, "kiln_gemm_c_fill_b" + bytes + "(")),
               emitted.text.c_str());
      CudaCompileOptions o;
      o.compile_only = true, o.use_cache = false;
      auto compiled = CudaCompiledGraph::compile(g, o);
      QVERIFY2(compiled.ok(), compiled.status().message().c_str());
      QCOMPARE((*compiled)->stats().extern_groups, size_t(3));
      QCOMPARE((*compiled)->stats().host_externs, size_t(0));
      if (std::string why = no_gpu_reason(); !why.empty()) {
        if (qgetenv("KILN_REQUIRE_GPU") == "1") QFAIL(why.c_str());
        QSKIP(("the run: " + why).c_str());
      }
      o.compile_only = false;
      auto runnable = CudaCompiledGraph::compile(g, o);
      QVERIFY2(runnable.ok(), runnable.status().message().c_str());
      auto got = (*runnable)->run(inputs);
      QVERIFY2(got.ok(), got.status().message().c_str());
      std::string diff = test::compare_outputs(*got, test::aten_outputs(g, inputs), tolerance(d));
      QVERIFY2(diff.empty(), (std::string(dtype_name(d)) + ": " + diff).c_str());
    }
  }
};

QTEST_MAIN(TestCudaConv)
#include "test_cuda_conv.moc"
