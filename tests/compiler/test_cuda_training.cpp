// The extern kernels a training graph keeps, on the GPU: max pooling with
// indices and its backward (codegen/cuda/cuda_pool.h), convolution backward
// (codegen/cuda/cuda_conv_backward.h), gather and scatter along a dim
// (codegen/cuda/cuda_gather.h, cross-entropy's pick and its gradient). Without a GPU every graph must still
// plan on the device (no host extern) and compile with NVRTC; with one (the
// lent GPU machine) each runs against the ATen kernels, plainly and replayed
// from a CUDA graph with new inputs.
#include <random>

#include "compiler/codegen/cuda/cuda_api.h"
#include "compiler/codegen/cuda/cuda_emit.h"
#include "compiler/loopir/lower.h"
#include "compiler/pipeline/emitter.h"
#include "compiler/runtime/cuda_graph.h"
#include "compiler/sched/schedule.h"
#include "cuda_test_util.h"
#include "loopir_test_util.h"
#include "test_support.h"

using namespace kiln;
using namespace kiln::pipeline;
using namespace kiln::codegen::cuda;
using runtime::CudaCompiledGraph;
using runtime::CudaCompileOptions;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

using Ints = std::vector<int64_t>;

struct PoolCase {
  std::string name;
  Ints x, kernel, stride, pad, dil;
  bool ceil = false;
  DType dtype = DType::Float32;
  bool nan = false;  // a NaN in the input: its window picks it
};

std::vector<PoolCase> pool_cases() {
  return {
      {"resnet_stem_3_2_1", {2, 3, 9, 8}, {3, 3}, {2, 2}, {1, 1}, {1, 1}},
      {"overlap_stride1", {1, 2, 6, 7}, {3, 2}, {1, 1}, {1, 0}, {1, 1}},
      {"dilation2", {2, 2, 9, 9}, {2, 2}, {1, 2}, {0, 1}, {2, 2}},
      {"ceil_mode", {2, 3, 7, 7}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, true},
      {"three_d_input", {3, 8, 6}, {2, 2}, {2, 2}, {0, 0}, {1, 1}},
      {"float64", {2, 3, 9, 8}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false, DType::Float64},
      {"float16", {2, 3, 9, 8}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false, DType::Float16},
      {"bfloat16_nan", {2, 3, 9, 8}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false, DType::BFloat16, true},
  };
}

// values, indices = max_pool2d_with_indices(x); grad_x = its backward of gy.
Graph pool_graph(const PoolCase& c, std::vector<Tensor>* inputs, uint32_t seed) {
  std::mt19937 rng(seed);
  Tensor x = test::random_f32(c.x, rng);
  if (c.nan) x.data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
  x = x.to(c.dtype);
  Graph probe;
  GraphEmitter pe(probe);
  std::vector<Var> shape_of = pe.call("aten::max_pool2d_with_indices.default",
                                      {pe.placeholder("x", x), c.kernel, c.stride, c.pad, c.dil, c.ceil});
  pe.output({shape_of[0]});
  const Tensor pooled = test::aten_outputs(probe, {x}).at(0);
  Tensor gy = test::random_f32(Ints(pooled.sizes().begin(), pooled.sizes().end()), rng).to(c.dtype);
  *inputs = {x, gy};
  Graph g;
  GraphEmitter e(g);
  Var vx = e.placeholder("x", x), vgy = e.placeholder("gy", gy);
  std::vector<Var> out = e.call("aten::max_pool2d_with_indices.default", {vx, c.kernel, c.stride, c.pad, c.dil, c.ceil});
  Var gx = e.call1("aten::max_pool2d_with_indices_backward.default",
                   {vgy, vx, c.kernel, c.stride, c.pad, c.dil, c.ceil, out[1]});
  e.output({out[0], out[1], gx});
  return g;
}

struct ConvBackCase {
  std::string name;
  Ints x, w, stride, pad, dil;
  int64_t groups = 1;
  DType dtype = DType::Float32;
  std::vector<bool> mask = {true, true, true};
};

std::vector<ConvBackCase> conv_back_cases() {
  return {
      {"stride2_pad1", {2, 4, 9, 8}, {6, 4, 3, 3}, {2, 2}, {1, 1}, {1, 1}},
      {"stem_7x7", {2, 3, 16, 16}, {8, 3, 7, 7}, {2, 2}, {3, 3}, {1, 1}},
      {"pointwise_1x1", {2, 8, 5, 5}, {4, 8, 1, 1}, {1, 1}, {0, 0}, {1, 1}},
      {"downsample_1x1_stride2", {2, 8, 6, 6}, {4, 8, 1, 1}, {2, 2}, {0, 0}, {1, 1}, 1, DType::Float32, {true, true, false}},
      {"groups2_dilation", {2, 4, 9, 8}, {6, 2, 3, 2}, {2, 1}, {1, 1}, {1, 2}, 2},
      {"depthwise", {2, 6, 7, 7}, {6, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 6},
      {"conv1d", {2, 3, 11}, {5, 3, 4}, {2}, {1}, {1}},
      {"weight_only", {2, 4, 9, 8}, {6, 4, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, DType::Float32, {false, true, false}},
      {"input_only", {2, 4, 9, 8}, {6, 4, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, DType::Float32, {true, false, false}},
      {"float64", {2, 4, 9, 8}, {6, 2, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 2, DType::Float64},
      {"float16", {2, 4, 9, 8}, {6, 4, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, DType::Float16},
      {"bfloat16", {2, 4, 9, 8}, {6, 4, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, DType::BFloat16},
  };
}

Graph conv_back_graph(const ConvBackCase& c, std::vector<Tensor>* inputs, uint32_t seed) {
  std::mt19937 rng(seed);
  Tensor x = test::random_f32(c.x, rng).to(c.dtype), w = test::random_f32(c.w, rng).to(c.dtype);
  Ints out_shape{c.x[0], c.w[0]};
  for (size_t d = 0; d < c.stride.size(); ++d) {
    const int64_t in = c.x[d + 2], k = c.w[d + 2];
    out_shape.push_back((in + 2 * c.pad[d] - c.dil[d] * (k - 1) - 1) / c.stride[d] + 1);
  }
  Tensor gy = test::random_f32(out_shape, rng).to(c.dtype);
  *inputs = {gy, x, w};
  Graph g;
  GraphEmitter e(g);
  Var vgy = e.placeholder("gy", gy), vx = e.placeholder("x", x), vw = e.placeholder("w", w);
  ValueList mask;
  for (bool m : c.mask) mask.push_back(Value(m));
  const Ints out_pad(c.stride.size(), 0);
  std::vector<Var> grads = e.call("aten::convolution_backward.default",
                                  {vgy, vx, vw, Ints{c.w[0]}, c.stride, c.pad, c.dil, false, out_pad, c.groups,
                                   Value(mask)});
  std::vector<Var> wanted;
  for (size_t i = 0; i < 3; ++i)
    if (c.mask[i]) wanted.push_back(grads.at(i));
  e.output(wanted);
  return g;
}

struct GatherCase {
  std::string name;
  Ints self, index, src;
  int64_t dim = 1;
  DType dtype = DType::Float32;
};

std::vector<GatherCase> gather_cases() {
  return {
      {"nll_pick_16x10", {16, 10}, {16, 1}, {16, 1}, 1},
      {"dim0_repeats", {5, 4, 3}, {3, 4, 2}, {4, 4, 2}, 0},  // repeated targets: the last one wins
      {"negative_dim_float64", {3, 6}, {2, 4}, {3, 5}, -1, DType::Float64},
      {"float16", {4, 7}, {4, 3}, {4, 3}, 1, DType::Float16},
      {"bfloat16_4d", {2, 3, 4, 5}, {2, 3, 2, 5}, {2, 3, 2, 5}, 2, DType::BFloat16},
  };
}

// gather(self, dim, index), scatter.src(self, dim, index, src) and scatter.value(self, dim, index, 1.5).
Graph gather_graph(const GatherCase& c, std::vector<Tensor>* inputs, uint32_t seed) {
  std::mt19937 rng(seed);
  Tensor x = test::random_f32(c.self, rng).to(c.dtype), src = test::random_f32(c.src, rng).to(c.dtype);
  const int64_t dim = c.dim < 0 ? c.dim + int64_t(c.self.size()) : c.dim;
  std::vector<int64_t> idx(size_t(shape_numel(c.index)));
  for (int64_t& v : idx) v = std::uniform_int_distribution<int64_t>(0, c.self[size_t(dim)] - 1)(rng);
  Tensor index = Tensor::from_vector(idx, c.index);
  *inputs = {x, index, src};
  Graph g;
  GraphEmitter e(g);
  Var vx = e.placeholder("x", x), vi = e.placeholder("index", index), vs = e.placeholder("src", src);
  e.output({e.call1("aten::gather.default", {vx, c.dim, vi}), e.call1("aten::scatter.src", {vx, c.dim, vi, vs}),
            e.call1("aten::scatter.value", {vx, c.dim, vi, 1.5})});
  return g;
}

double tolerance(DType d) { return test::cuda_tolerance(d); }

const std::string& stage(const CudaCompiledGraph& g, const std::string& name) { return test::cuda_stage(g, name); }

using test::no_gpu_reason;

// Compiles `g` for the device: no extern on the host, each of `entries` in the PTX.
void compiles_on_the_device(const std::string& name, const Graph& g, const std::vector<std::string>& entries) {
  CudaCompileOptions o;
  o.compile_only = true, o.keep_text = true, o.use_cache = false;
  auto compiled = CudaCompiledGraph::compile(g, o);
  QVERIFY2(compiled.ok(), (name + ": " + compiled.status().message()).c_str());
  const std::string& src = stage(**compiled, "cuda_source");
  QVERIFY2((*compiled)->stats().host_externs == 0 && !has(src, "runs on the host"), (name + "\n" + src).c_str());
  for (const std::string& entry : entries)
    QVERIFY2(has(stage(**compiled, "ptx"), ".entry " + entry), (name + ": no " + entry + " in the PTX").c_str());
}

// Runs `g` on the GPU against ATen, then replays it from a CUDA graph with new inputs.
template <class Make>
void matches_aten_on_the_gpu(const std::string& name, Make make, DType dtype) {
  std::vector<Tensor> inputs;
  Graph g = make(&inputs, 3);
  CudaCompileOptions o;
  o.use_cache = false;
  auto compiled = CudaCompiledGraph::compile(g, o);
  QVERIFY2(compiled.ok(), (name + ": " + compiled.status().message()).c_str());
  auto got = (*compiled)->run(inputs);
  QVERIFY2(got.ok(), (name + ": " + got.status().message()).c_str());
  std::string diff = test::compare_outputs(*got, test::aten_outputs(g, inputs), tolerance(dtype));
  QVERIFY2(diff.empty(), (name + ": " + diff).c_str());
  auto exec = runtime::CudaExecution::create(*compiled);
  QVERIFY2(exec.ok(), exec.status().message().c_str());
  QVERIFY2((*exec)->capturable(), name.c_str());
  auto stream = Stream::create();
  QVERIFY2(stream.ok(), stream.status().message().c_str());
  for (uint32_t round = 0; round < 2; ++round) {
    std::vector<Tensor> again;
    Graph same = make(&again, 10 + round);
    for (size_t k = 0; k < again.size(); ++k) QVERIFY((*exec)->set_input(k, again[k]).ok());
    Status st = (*exec)->replay(*stream);
    QVERIFY2(st.ok(), (name + ": " + st.message()).c_str());
    QVERIFY(stream->synchronize().ok());
    auto out = (*exec)->outputs();
    QVERIFY2(out.ok(), out.status().message().c_str());
    diff = test::compare_outputs(*out, test::aten_outputs(same, again), tolerance(dtype));
    QVERIFY2(diff.empty(), (name + " replay " + std::to_string(round) + ": " + diff).c_str());
  }
  qInfo("%s: ok", name.c_str());
}

// Why the device cases cannot run here ("" when they can); a missing NVRTC is a
// failure unless KILN_ALLOW_NO_NVRTC=1, a missing GPU unless KILN_REQUIRE_GPU is unset.
std::string nvrtc_missing() {
  std::string d = nvrtc_describe();
  return d.rfind("unavailable", 0) == 0 ? d : "";
}

}  // namespace

class TestCudaTraining : public QObject {
  Q_OBJECT
 private slots:
  void pools_compile_for_the_device() {
    if (std::string d = nvrtc_missing(); !d.empty()) {
      if (qgetenv("KILN_ALLOW_NO_NVRTC") == "1") QSKIP(d.c_str());
      QFAIL(d.c_str());
    }
    for (const PoolCase& c : pool_cases()) {
      std::vector<Tensor> inputs;
      const std::string d(dtype_abbrev(c.dtype));
      compiles_on_the_device(c.name, pool_graph(c, &inputs, 1),
                             {"kiln_maxpool_forward_" + d, "kiln_maxpool_backward_" + d});
    }
  }

  void conv_backwards_compile_for_the_device() {
    if (std::string d = nvrtc_missing(); !d.empty()) {
      if (qgetenv("KILN_ALLOW_NO_NVRTC") == "1") QSKIP(d.c_str());
      QFAIL(d.c_str());
    }
    for (const ConvBackCase& c : conv_back_cases()) {
      std::vector<Tensor> inputs;
      const std::string d(dtype_abbrev(c.dtype));
      std::vector<std::string> entries;
      if (c.mask[0]) entries.push_back("kiln_conv_col2im_" + d);
      if (c.mask[1]) entries.push_back("kiln_conv_gather_b" + std::to_string(element_size(c.dtype)));
      if (c.mask[2]) entries.push_back("kiln_conv_bias_grad_" + d);
      compiles_on_the_device(c.name, conv_back_graph(c, &inputs, 1), entries);
    }
  }

  void gathers_compile_for_the_device() {
    if (std::string d = nvrtc_missing(); !d.empty()) {
      if (qgetenv("KILN_ALLOW_NO_NVRTC") == "1") QSKIP(d.c_str());
      QFAIL(d.c_str());
    }
    for (const GatherCase& c : gather_cases()) {
      std::vector<Tensor> inputs;
      const std::string d(dtype_abbrev(c.dtype));
      compiles_on_the_device(c.name, gather_graph(c, &inputs, 1),
                             {"kiln_gather_" + d, "kiln_scatter_src_" + d, "kiln_scatter_value_" + d});
    }
  }

  // A transposed convolution's backward is not planned: it keeps the host path and says why.
  void transposed_conv_backward_keeps_the_host_path() {
    std::mt19937 rng(4);
    Tensor gy = test::random_f32({1, 3, 8, 8}, rng), x = test::random_f32({1, 4, 6, 6}, rng);
    Tensor w = test::random_f32({4, 3, 3, 3}, rng);
    Graph g;
    GraphEmitter e(g);
    std::vector<Var> grads = e.call(
        "aten::convolution_backward.default",
        {e.placeholder("gy", gy), e.placeholder("x", x), e.placeholder("w", w), Ints{3}, Ints{1, 1}, Ints{0, 0},
         Ints{1, 1}, true, Ints{0, 0}, int64_t(1), Value(ValueList{Value(true), Value(true), Value(false)})});
    e.output({grads[0], grads[1]});
    CudaCompileOptions o;
    o.emit_only = true, o.keep_text = true;
    auto compiled = CudaCompiledGraph::compile(g, o);
    QVERIFY2(compiled.ok(), compiled.status().message().c_str());
    QCOMPARE((*compiled)->stats().host_externs, size_t(1));
    QVERIFY2(has(stage(**compiled, "cuda_source"), "runs on the host: convolution backward on the GPU: a transposed"),
             stage(**compiled, "cuda_source").c_str());
  }

  void pools_match_aten_on_the_gpu() {
    if (std::string why = no_gpu_reason(); !why.empty()) {
      if (qgetenv("KILN_REQUIRE_GPU") == "1") QFAIL(why.c_str());
      QSKIP(why.c_str());
    }
    for (const PoolCase& c : pool_cases())
      matches_aten_on_the_gpu(
          c.name, [&](std::vector<Tensor>* in, uint32_t seed) { return pool_graph(c, in, seed); }, c.dtype);
  }

  void gathers_match_aten_on_the_gpu() {
    if (std::string why = no_gpu_reason(); !why.empty()) {
      if (qgetenv("KILN_REQUIRE_GPU") == "1") QFAIL(why.c_str());
      QSKIP(why.c_str());
    }
    for (const GatherCase& c : gather_cases())
      matches_aten_on_the_gpu(
          c.name, [&](std::vector<Tensor>* in, uint32_t seed) { return gather_graph(c, in, seed); }, c.dtype);
  }

  // ATen fails on an index outside the dimension; the GPU kernels must too,
  // not hand back zeros (gather) or leave self unchanged (scatter).
  void out_of_range_index_fails_the_run() {
    std::vector<Tensor> inputs;
    Graph g = gather_graph(gather_cases().front(), &inputs, 5);
    CudaCompileOptions o;
    o.emit_only = true, o.keep_text = true;
    auto emitted = CudaCompiledGraph::compile(g, o);
    QVERIFY2(emitted.ok(), emitted.status().message().c_str());
    QVERIFY(has(stage(**emitted, "cuda_source"), "kiln_gather_fault(fault, a, k)"));
    if (std::string why = no_gpu_reason(); !why.empty()) {
      if (qgetenv("KILN_REQUIRE_GPU") == "1") QFAIL(why.c_str());
      QSKIP(why.c_str());
    }
    o.emit_only = false, o.keep_text = false, o.use_cache = false;
    auto compiled = CudaCompiledGraph::compile(g, o);
    QVERIFY2(compiled.ok(), compiled.status().message().c_str());
    for (int64_t bad : {int64_t(10), int64_t(-1)}) {
      std::vector<Tensor> in = inputs;
      in[1] = in[1].clone();
      in[1].data<int64_t>()[7] = bad;
      auto got = (*compiled)->run(in);
      QVERIFY2(!got.ok(), ("index " + std::to_string(bad) + " gave outputs").c_str());
      const std::string want = "index " + std::to_string(bad) + " is out of bounds for dimension 1 with size 10";
      QVERIFY2(has(got.status().message(), want), got.status().message().c_str());
    }
    auto good = (*compiled)->run(inputs);  // a fresh execution: nothing left over
    QVERIFY2(good.ok(), good.status().message().c_str());
  }

  void conv_backwards_match_aten_on_the_gpu() {
    if (std::string why = no_gpu_reason(); !why.empty()) {
      if (qgetenv("KILN_REQUIRE_GPU") == "1") QFAIL(why.c_str());
      QSKIP(why.c_str());
    }
    for (const ConvBackCase& c : conv_back_cases())
      matches_aten_on_the_gpu(
          c.name, [&](std::vector<Tensor>* in, uint32_t seed) { return conv_back_graph(c, in, seed); }, c.dtype);
  }
};

QTEST_MAIN(TestCudaTraining)
#include "test_cuda_training.moc"
