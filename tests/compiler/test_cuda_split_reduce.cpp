// Split reductions on the CUDA backend (codegen/cuda/cuda_split_reduce.h):
// few long rows get many blocks, each reducing a part into a workspace, the
// row's last block combining the parts in order. Without a GPU: which groups
// split, the launch each gets, and that NVRTC compiles the kernels; with one
// (the lent GPU machine): the results against the ATen interpreter, the same
// bits on every launch and on CUDA graph replay, and equal to the unsplit
// kernel's within the reduction tolerance.
#include <cstring>
#include <random>

#include "compiler/codegen/cuda/cuda_api.h"
#include "compiler/codegen/cuda/cuda_emit.h"
#include "compiler/codegen/cuda/cuda_split_reduce.h"
#include "compiler/decomp/decompose.h"
#include "compiler/loopir/lower.h"
#include "compiler/pipeline/emitter.h"
#include "compiler/runtime/cuda_graph.h"
#include "compiler/sched/schedule.h"
#include "loopir_test_util.h"
#include "random_split_graph.h"
#include "test_support.h"

using namespace kiln;
using namespace kiln::pipeline;
using namespace kiln::codegen::cuda;
using runtime::CudaCompiledGraph;
using runtime::CudaCompileOptions;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

CudaSource source_of(const Graph& g, LaunchChoice launch = {}) {
  auto decomposed = decomp::decompose(g);
  if (!decomposed) qFatal("decompose: %s", decomposed.status().message().c_str());
  sched::ScheduledProgram s = sched::schedule(loopir::lower_to_loops(*decomposed));
  return emit_cuda(s, plan_for_cuda(s), InjectedBug::None, launch);
}

// One reduction of `x` (a meta tensor is enough to emit): `op` over `dims`
// ("sum_all": aten::sum.default), and `then` applied to the result if given.
Graph reduction_graph(const Tensor& x, const std::string& op, std::vector<int64_t> dims, bool keepdim = false,
                      const std::string& then = "") {
  Graph g;
  GraphEmitter e(g);
  Var v = e.placeholder("x", x);
  Var r;
  if (op == "sum_all") r = e.call1("aten::sum.default", {v});
  else if (op == "sum") r = e.call1("aten::sum.dim_IntList", {v, dims, keepdim});
  else if (op == "mean") r = e.call1("aten::mean.dim", {v, dims, keepdim});
  else if (op == "var") r = e.call1("aten::var.correction", {v, dims}, {{"correction", int64_t(1)}, {"keepdim", keepdim}});
  else if (op == "argmax") r = e.call1("aten::argmax.default", {v, dims.at(0), keepdim});
  else if (op == "any") r = e.call1("aten::any.dim", {v, dims.at(0), keepdim});
  else if (op == "prod") r = e.call1("aten::prod.dim_int", {v, dims.at(0), keepdim});
  else r = e.call1("aten::" + op + ".default", {v, dims, keepdim});
  if (then == "sub") r = e.call1("aten::sub.Tensor", {v, r});
  if (then == "scale") r = e.call1("aten::add.Scalar", {e.call1("aten::mul.Scalar", {r, 0.5}), 1.0});
  e.output({r});
  return g;
}

const CudaKernel* split_kernel(const CudaSource& src) {
  for (const CudaKernel& k : src.kernels)
    if (k.split_row > 0) return &k;
  return nullptr;
}

std::string nvrtc_problem(const CudaSource& src, const std::string& name) {
  if (nvrtc_describe().rfind("unavailable", 0) == 0) return "";  // checked by nvrtc_or_skip below
  Expected<NvrtcOutput> out = nvrtc_compile(src.text, name + ".cu", 90, true);
  if (!out) return out.status().message() + "\n" + src.text;
  return "";
}

std::string no_gpu_reason() {
  Status st = cuda_init();
  return st.ok() ? "" : "no GPU: " + st.message();
}

double tolerance(DType d) {
  return d == DType::Float64 ? 1e-9 : d == DType::Float16 ? 1e-2 : d == DType::BFloat16 ? 4e-2 : 1e-4;
}

bool same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    Tensor x = a[i].contiguous(), y = b[i].contiguous();
    if (x.sizes() != y.sizes() || x.dtype() != y.dtype()) return false;
    if (std::memcmp(x.raw_data(), y.raw_data(), size_t(x.numel()) * element_size(x.dtype())) != 0) return false;
  }
  return true;
}

struct RunCase {
  std::string name;
  Shape shape;
  DType dtype;
  std::string op;
  std::vector<int64_t> dims;
  bool keepdim = false;
  std::string then;
};

// Long rows of every kind the emitter splits, and two it must not (softmax's
// broadcast back, var's two passes): all checked against the interpreter.
std::vector<RunCase> run_cases() {
  return {
      {"sum_all_4m", {int64_t(1) << 22}, DType::Float32, "sum_all", {}, false, ""},
      {"sum_lastdim_odd", {3, 100003}, DType::Float32, "sum", {-1}, false, ""},
      {"mean_lastdim", {2, int64_t(1) << 20}, DType::Float32, "mean", {-1}, true, ""},
      {"amax_lastdim", {5, 300000}, DType::Float32, "amax", {-1}, false, ""},
      {"amin_firstdim", {262144, 3}, DType::Float32, "amin", {0}, false, ""},
      {"sum_two_dims", {4, 16, 16384}, DType::Float32, "sum", {1, 2}, false, ""},
      {"sum_then_scale", {2, 500000}, DType::Float32, "sum", {-1}, false, "scale"},
      {"sum_bf16", {2, 400000}, DType::BFloat16, "sum", {-1}, false, ""},
      {"mean_f16", {1, 300000}, DType::Float16, "mean", {-1}, false, ""},
      {"sum_f64", {600000}, DType::Float64, "sum", {0}, false, ""},
      {"sum_int32", {2, 300000}, DType::Int32, "sum", {-1}, false, ""},
      {"amax_int32", {3, 200000}, DType::Int32, "amax", {-1}, false, ""},
      {"any_bool", {3, 200000}, DType::Bool, "any", {-1}, false, ""},
      {"prod_near_one", {2, 200000}, DType::Float64, "prod", {-1}, false, ""},
      {"softmax_shape_not_split", {2, 200000}, DType::Float32, "amax", {-1}, true, "sub"},
      {"var_not_split", {2, 200000}, DType::Float32, "var", {-1}, false, ""},
  };
}

Tensor input_for(const RunCase& c, uint32_t seed) {
  std::mt19937 rng(seed);
  if (c.dtype == DType::Bool) {
    // Mostly false, so `any` depends on a few positions in the middle of the row.
    Tensor t = test::random_f32(c.shape, rng, 0.f, 1.f);
    std::vector<double> v = test::values(t);
    for (double& x : v) x = x > 0.99999 ? 1 : 0;
    return Tensor::from_vector(v, c.shape).to(DType::Bool);
  }
  if (c.dtype == DType::Int32) {
    std::vector<double> v = test::values(test::random_f32(c.shape, rng, -5.f, 5.f));
    for (double& x : v) x = std::round(x);
    return Tensor::from_vector(v, c.shape).to(DType::Int32);
  }
  if (c.op == "prod") return test::random_f32(c.shape, rng, 1.f - 1e-5f, 1.f + 1e-5f).to(c.dtype);
  return test::random_f32(c.shape, rng).to(c.dtype);
}

}  // namespace

class TestCudaSplitReduce : public QObject {
  Q_OBJECT
 private slots:
  // The bench row sum_64m: one row of 64M float32, split into whole passes of
  // 8192 positions (256 threads, 8 float4 loads each), on 132 SMs 512 parts.
  void sum_of_64m_is_split() {
    Tensor x = Tensor::meta({int64_t(64) << 20}, DType::Float32);
    CudaSource src = source_of(reduction_graph(x, "sum_all", {}));
    if (qEnvironmentVariableIsSet("KILN_DUMP_CUDA")) qInfo("%s", src.text.c_str());
    QCOMPARE(src.kernels.size(), size_t(1));
    const CudaKernel& k = src.kernels[0];
    QCOMPARE(k.split_row, int64_t(64) << 20);
    QCOMPARE(k.split_step, int64_t(8192));
    QCOMPARE(k.block_threads, kSplitThreads);
    QVERIFY2(has(src.text, "__launch_bounds__(256, 4)") && has(src.text, "u64* __restrict__ kiln_split_ws"),
             src.text.c_str());
    QVERIFY2(has(src.text, "kiln_vload<4>(&x[") && has(src.text, "atomicAdd(&kiln_done[o], 1u)"), src.text.c_str());
    // Parts combine in part order with the sum's own operator, in double.
    QVERIFY2(has(src.text, "acc = KilnSum()(acc, ((volatile double*)kiln_parts_of_row)[q]);"), src.text.c_str());
    QVERIFY2(!has(src.text, "atomicAdd(&buf") && !has(src.text, "atomicAdd((float"), src.text.c_str());
    SplitLaunch l = split_launch(k, 132);
    QCOMPARE(l.span, int64_t(16) * 8192);
    QCOMPARE(l.parts, int64_t(512));
    QCOMPARE(l.blocks, int64_t(512));
    QCOMPARE(l.workspace_bytes, size_t(512 * 8 + 4));
    std::string p = nvrtc_problem(src, "sum_64m");
    QVERIFY2(p.empty(), p.c_str());
  }

  // split_launch: parts are whole passes, none empty, about 4 blocks per SM over all rows.
  void launch_covers_every_row_in_whole_passes() {
    CudaKernel k;
    k.per_row = true;
    for (int64_t rows : {1, 3, 4, 100, 128})
      for (int64_t row : {int64_t(32768), int64_t(100003), int64_t(16) << 20})
        for (int sms : {1, 78, 132}) {
          k.outer_numel = rows, k.split_row = row, k.split_step = 8192;
          SplitLaunch l = split_launch(k, sms);
          const std::string what = std::to_string(rows) + "x" + std::to_string(row) + " on " + std::to_string(sms);
          QVERIFY2(l.span % 8192 == 0 && l.span > 0, what.c_str());
          QVERIFY2(l.parts * l.span >= row && (l.parts - 1) * l.span < row, what.c_str());
          QVERIFY2(l.blocks == rows * l.parts, what.c_str());
          QVERIFY2(l.blocks <= std::max<int64_t>(rows, int64_t(sms) * kSplitBlocksPerSm + rows), what.c_str());
          QCOMPARE(l.workspace_bytes, size_t(rows * l.parts * 8 + rows * 4));
        }
  }

  void which_groups_split() {
    const Tensor rows4 = Tensor::meta({4, int64_t(16) << 20}, DType::Float32);
    struct Expect {
      std::string name;
      Graph g;
      bool split;
    };
    std::vector<Expect> cases = {
        {"sum(-1) of [4, 16M]", reduction_graph(rows4, "sum", {-1}), true},
        {"mean(-1) of [4, 16M]", reduction_graph(rows4, "mean", {-1}), true},
        {"amax(-1) of [4, 16M]", reduction_graph(rows4, "amax", {-1}), true},
        {"amin(0) of [16M, 4]", reduction_graph(Tensor::meta({int64_t(16) << 20, 4}, DType::Float32), "amin", {0}), true},
        {"sum of bfloat16 [2, 1M]", reduction_graph(Tensor::meta({2, 1 << 20}, DType::BFloat16), "sum", {-1}), true},
        // Many rows fill the GPU a block per row already.
        {"sum(-1) of [16384, 4096]", reduction_graph(Tensor::meta({16384, 4096}, DType::Float32), "sum", {-1}), false},
        // Rows shorter than four passes.
        {"sum(-1) of [4, 20000]", reduction_graph(Tensor::meta({4, 20000}, DType::Float32), "sum", {-1}), false},
        // Argmax's parts would need their positions too.
        {"argmax of [4, 16M]", reduction_graph(rows4, "argmax", {-1}), false},
        // The row is walked again after the reduction, or twice before the value is known.
        {"x - amax(x) of [4, 16M]", reduction_graph(rows4, "amax", {-1}, true, "sub"), false},
        {"var(-1) of [4, 16M]", reduction_graph(rows4, "var", {-1}), false},
    };
    for (const Expect& c : cases) {
      CudaSource src = source_of(c.g);
      const CudaKernel* k = split_kernel(src);
      QVERIFY2((k != nullptr) == c.split, (c.name + "\n" + src.text).c_str());
      if (k) QVERIFY2(has(src.text, "if (!kiln_last) continue;"), src.text.c_str());
      std::string p = nvrtc_problem(src, "split");
      QVERIFY2(p.empty(), (c.name + ": " + p).c_str());
    }
    // The mean's division runs once the row is done: after the parts are combined.
    CudaSource mean = source_of(reduction_graph(rows4, "mean", {-1}));
    if (qEnvironmentVariableIsSet("KILN_DUMP_CUDA")) qInfo("%s", mean.text.c_str());
    const size_t group = mean.text.find("// group 0");
    QVERIFY2(group != std::string::npos, mean.text.c_str());
    QVERIFY2(mean.text.find("if (!kiln_last) continue;", group) < mean.text.find("buf1[o] = ", group), mean.text.c_str());
    // LaunchChoice turns splitting off (the A/B the GPU test runs).
    LaunchChoice off;
    off.split_reductions = false;
    QVERIFY(split_kernel(source_of(reduction_graph(rows4, "sum", {-1}), off)) == nullptr);
  }

  // Every graph of the fuzzer's split family emits and compiles; most split.
  void fuzz_family_compiles() {
    if (nvrtc_describe().rfind("unavailable", 0) == 0) {
      if (qgetenv("KILN_ALLOW_NO_NVRTC") == "1") QSKIP(nvrtc_describe().c_str());
      QFAIL(nvrtc_describe().c_str());
    }
    int split = 0;
    const int graphs = 40;
    for (int seed = 1; seed <= graphs; ++seed) {
      std::vector<Tensor> inputs;
      Graph g = test::SplitReductionGraphGenerator(uint32_t(seed)).build(&inputs);
      CudaSource src;
      try {
        src = source_of(g);
      } catch (const Error& e) {
        QFAIL(("seed " + std::to_string(seed) + ": " + e.what()).c_str());
      }
      split += split_kernel(src) != nullptr;
      std::string p = nvrtc_problem(src, "seed" + std::to_string(seed));
      QVERIFY2(p.empty(), ("seed " + std::to_string(seed) + ": " + p).c_str());
    }
    qInfo("%d of %d split-family graphs split", split, graphs);
    QVERIFY2(split >= graphs / 2, std::to_string(split).c_str());
  }

  void split_results_match_aten_on_the_gpu() {
    if (std::string why = no_gpu_reason(); !why.empty()) {
      if (qgetenv("KILN_REQUIRE_GPU") == "1") QFAIL(why.c_str());
      QSKIP(why.c_str());
    }
    Expected<Stream> stream = Stream::create();
    QVERIFY2(stream.ok(), stream.status().message().c_str());
    for (const RunCase& c : run_cases()) {
      Tensor x = input_for(c, 1);
      Graph g = reduction_graph(x, c.op, c.dims, c.keepdim, c.then);
      std::vector<Tensor> want = test::aten_outputs(g, {x});
      auto decomposed = decomp::decompose(g);
      QVERIFY2(decomposed.ok(), decomposed.status().message().c_str());
      const bool expect_split = c.name.find("not_split") == std::string::npos;
      QVERIFY2((split_kernel(source_of(g)) != nullptr) == expect_split, c.name.c_str());
      CudaCompileOptions o;
      o.use_cache = false;
      auto compiled = CudaCompiledGraph::compile(*decomposed, o);
      QVERIFY2(compiled.ok(), (c.name + ": " + compiled.status().message()).c_str());
      auto exec = runtime::CudaExecution::create(*compiled);
      QVERIFY2(exec.ok(), exec.status().message().c_str());
      QVERIFY((*exec)->set_input(0, x).ok());
      // Several launches: the counters go back to 0, the bits stay the same.
      std::vector<Tensor> first;
      for (int round = 0; round < 3; ++round) {
        Status st = (*exec)->launch(&*stream);
        QVERIFY2(st.ok(), (c.name + ": " + st.message()).c_str());
        QVERIFY(stream->synchronize().ok());
        auto got = (*exec)->outputs();
        QVERIFY2(got.ok(), got.status().message().c_str());
        std::string diff = test::compare_outputs(*got, want, tolerance(c.dtype));
        QVERIFY2(diff.empty(), (c.name + " launch " + std::to_string(round) + ": " + diff).c_str());
        if (round == 0) first = *got;
        else QVERIFY2(same_bits(*got, first), (c.name + ": launch " + std::to_string(round) + " differs").c_str());
      }
      // CUDA graph replay, with a new input after the capture.
      Tensor y = input_for(c, 2);
      for (int round = 0; round < 2; ++round) {
        QVERIFY((*exec)->set_input(0, y).ok());
        Status st = (*exec)->replay(*stream);
        QVERIFY2(st.ok(), (c.name + ": " + st.message()).c_str());
        QVERIFY(stream->synchronize().ok());
        auto got = (*exec)->outputs();
        QVERIFY2(got.ok(), got.status().message().c_str());
        std::string diff = test::compare_outputs(*got, test::aten_outputs(g, {y}), tolerance(c.dtype));
        QVERIFY2(diff.empty(), (c.name + " replay " + std::to_string(round) + ": " + diff).c_str());
      }
      // The unsplit kernel agrees within the same tolerance.
      o.split_reductions = false;
      auto unsplit = CudaCompiledGraph::compile(*decomposed, o);
      QVERIFY2(unsplit.ok(), unsplit.status().message().c_str());
      auto plain = (*unsplit)->run({x});
      QVERIFY2(plain.ok(), plain.status().message().c_str());
      std::string diff = test::compare_outputs(first, *plain, tolerance(c.dtype));
      QVERIFY2(diff.empty(), (c.name + " split vs unsplit: " + diff).c_str());
    }
  }
};

QTEST_MAIN(TestCudaSplitReduce)
#include "test_cuda_split_reduce.moc"
