// `kiln-cli bench gpu`: the graphs of ../shared/reference/perf/perf_gpu.jsonl,
// at the same sizes, compiled by the CUDA backend (the graph passes, then
// CUDA C++ through NVRTC) and timed on the device with CUDA events: median of
// --reps (default 50) after warm-up, each repetition reading the next of
// several copies of the inputs, so that the inputs do not sit in L2.
//
//   sin_cos          sin(x) + cos(x), x float32[64M]
//   pointwise_chain  ((x*2+1).relu()*y - 0.5).sigmoid()*x, x, y float32[64M]
//   softmax          _softmax(x, -1) of float32[8192, 8192]
//   layer_norm       layer_norm(x, [4096], w, b) of float32[16384, 4096]
//   sum_lastdim      x.sum(-1) of float32[16384, 4096]
//   sum_64m          x.sum() of float32[64M] to a scalar (a split reduction)
//   var_mean         var_mean(x, -1) of float32[16384, 4096]
//   gelu_mlp         gelu(x @ w1, approximate='tanh') @ w2, bfloat16 [8192, 2048] x [2048, 8192] x [8192, 2048]
//   attention        softmax(q @ k^T * 0.125) @ v, float16 [64, 1024, 64]
//   attention_causal the same with a causal mask (masked_fill of triu(ones, 1) with -inf)
//   attention_bf16_gpt  a GPT head: bfloat16 q, k, v [4, 16, 2048, 64], 4-D matmuls, causal
//                    (the attention rows run as one fused flash kernel; TFLOP/s
//                    counts the causal rows' unmasked half, as FlashAttention does)
//   attention_train_bf16_gpt  the GPT head trained: its forward and the
//                    gradients of q, k and v for a given output gradient (the
//                    joint graph), unfused as Kiln trains by default
//                    (KILN_FUSE_ATTENTION=1: after the fuse-attention pass,
//                    the flash forward with the backward recomputed; with
//                    KILN_ATTENTION_BACKWARD=flash too, the flash backward
//                    kernels); ceiling: cuBLAS running the seven
//                    GEMMs of FlashAttention-2's forward and backward alone
//   resnet18         the forward graph of resources/examples/resnet18_infer.py
//                    (eval, batch 16, 3x128x128): convolutions through im2col
//                    and cuBLAS in TF32 (PyTorch's default for convolutions),
//                    the rest generated; each call copies a new batch into the
//                    input buffer, as a caller hands one
//   resnet18_fp32    the same with exact float32 convolutions (allow_tf32 off)
//   resnet18_train   one training step of resources/examples/resnet18_train.py's
//                    model at batch 16, 3x128x128, TF32: forward (batch norm in
//                    training mode), cross-entropy, backward and SGD (momentum
//                    0.9, weight decay 1e-4) as one graph (bench_gpu_train.h);
//                    after each step the new parameters, momentum buffers and
//                    running statistics are copied into the inputs on the device
//   resnet18_train_fp32  the same with exact float32 convolutions
//
// The model row has no ceiling; its figures sit beside the reference run's
// PyTorch eager, Inductor and Inductor reduce-overhead times.
//
// Ceilings, measured in the same run: for the memory-bound graphs a
// device-to-device copy moving the bytes the ideal fused kernel reads and
// writes (half read, half written), so GB/s and ratio_to_ceiling count as the
// reference's copy_ceiling does; for the two matmul graphs cuBLAS running
// their GEMMs alone on the same operands.
//
// scripts/bench_gpu_torch.py runs these graphs through PyTorch eager and
// torch.compile beside this command and prints the side-by-side table.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <random>

#include "app/cli/bench_gpu_model.h"
#include "app/cli/bench_gpu_train.h"
#include "app/cli/bench_util.h"
#include "app/cli/commands.h"
#include "compiler/aot/joint.h"
#include "compiler/codegen/cuda/cublas.h"
#include "compiler/codegen/cuda/cuda_api.h"
#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/emitter.h"
#include "compiler/passes/fuse_attention.h"
#include "compiler/pipeline/pipeline.h"
#include "compiler/pipeline/training_split.h"
#include "compiler/runtime/cuda_graph.h"
#include "core/util/status.h"
#include "core/util/output_text.h"

namespace kiln::cli {

int run_gpu_bench(int reps, const std::string& reference, const std::string& only, const std::string& dump_dir,
                  std::vector<int> row_elements, bool profile, bool json);

namespace {

using namespace kiln::codegen::cuda;
using pipeline::GraphEmitter;
using pipeline::Var;
using Clock = std::chrono::steady_clock;

constexpr double kL2Bytes = 60.0 * (1 << 20);  // H200: 60 MiB (HOPPER.md); rotation covers 3x that

// A GEMM of the graph that the ceiling times alone: operands by input index,
// or -1 for the output of the previous GEMM of the list.
struct GemmShape {
  int64_t batch, m, n, k;
  bool b_transposed;
};

struct Case {
  std::string name, reference_graph;
  Graph graph;
  std::vector<Tensor> inputs;
  double bytes = 0;  // the ideal fused kernel's reads plus writes
  double flops = 0;  // matmul graphs
  std::vector<GemmShape> gemms;  // matmul graphs: the GEMMs cuBLAS times as the ceiling
  DType gemm_dtype = DType::Float32;
  // A model's graph (capture_model_graph): timed with its batch copied in per call, no ceiling.
  bool model = false;
  bool conv_tf32 = true;  // PyTorch's default (torch.backends.cudnn.allow_tf32)
  std::vector<bool> per_call;
  // A training step: (output, input) pairs copied after each call, the state the next call reads.
  std::vector<std::pair<size_t, size_t>> carried;
  std::string build_error;  // the graph could not be made
};

using Builder = std::function<Case()>;

Case pointwise(const std::string& name, bool chain) {
  const int64_t n = int64_t(64) << 20;
  Case c;
  c.name = name;
  c.reference_graph = chain ? "pointwise_chain_64M" : "seed_sin_cos_64M";
  c.inputs.push_back(random_tensor({n}, 1));
  if (chain) c.inputs.push_back(random_tensor({n}, 2));
  GraphEmitter e(c.graph);
  Var x = e.placeholder("x", c.inputs[0]);
  if (!chain) {
    e.output({e.call1("aten::add.Tensor", {e.call1("aten::sin.default", {x}), e.call1("aten::cos.default", {x})})});
    c.bytes = 2.0 * 4 * double(n);
    return c;
  }
  Var y = e.placeholder("y", c.inputs[1]);
  Var v = e.call1("aten::add.Scalar", {e.call1("aten::mul.Scalar", {x, 2.0}), 1.0});
  v = e.call1("aten::mul.Tensor", {e.call1("aten::relu.default", {v}), y});
  v = e.call1("aten::sigmoid.default", {e.call1("aten::sub.Scalar", {v, 0.5})});
  e.output({e.call1("aten::mul.Tensor", {v, x})});
  c.bytes = 3.0 * 4 * double(n);
  return c;
}

Case softmax() {
  Case c;
  c.name = "softmax";
  c.reference_graph = "softmax_8192x8192";
  c.inputs.push_back(random_tensor({8192, 8192}, 3));
  GraphEmitter e(c.graph);
  Var x = e.placeholder("x", c.inputs[0]);
  e.output({e.call1("aten::_softmax.default", {x, int64_t(-1), false})});
  c.bytes = 2.0 * 4 * 8192.0 * 8192.0;
  return c;
}

Case layer_norm() {
  Case c;
  c.name = "layer_norm";
  c.reference_graph = "layernorm_16384x4096";
  c.inputs = {random_tensor({16384, 4096}, 4), random_tensor({4096}, 5), random_tensor({4096}, 6)};
  GraphEmitter e(c.graph);
  Var x = e.placeholder("x", c.inputs[0]), w = e.placeholder("weight", c.inputs[1]), b = e.placeholder("bias", c.inputs[2]);
  std::vector<Var> r = e.call("aten::native_layer_norm.default", {x, std::vector<int64_t>{4096}, w, b, 1e-5});
  e.output({r[0]});
  c.bytes = 4.0 * (2 * 16384.0 * 4096 + 2 * 4096);
  return c;
}

Case row_reduction(bool var_mean) {
  Case c;
  c.name = var_mean ? "var_mean" : "sum_lastdim";
  c.reference_graph = var_mean ? "var_mean_16384x4096" : "sum_lastdim_16384x4096";
  c.inputs.push_back(random_tensor({16384, 4096}, 7));
  GraphEmitter e(c.graph);
  Var x = e.placeholder("x", c.inputs[0]);
  if (var_mean) {
    std::vector<Var> r = e.call("aten::var_mean.correction", {x, std::vector<int64_t>{-1}},
                                {{"correction", int64_t(1)}, {"keepdim", false}});
    e.output({r[0], r[1]});
    c.bytes = 4.0 * (16384.0 * 4096 + 2 * 16384);
  } else {
    e.output({e.call1("aten::sum.dim_IntList", {x, std::vector<int64_t>{-1}})});
    c.bytes = 4.0 * (16384.0 * 4096 + 16384);
  }
  return c;
}

// One long row: the reduction is split over many blocks (cuda_split_reduce.h).
Case sum_64m() {
  const int64_t n = int64_t(64) << 20;
  Case c;
  c.name = "sum_64m";
  c.reference_graph = "sum_64M";
  c.inputs.push_back(random_tensor({n}, 14));
  GraphEmitter e(c.graph);
  Var x = e.placeholder("x", c.inputs[0]);
  e.output({e.call1("aten::sum.default", {x})});
  c.bytes = 4.0 * (double(n) + 1);
  return c;
}

Case gelu_mlp() {
  Case c;
  c.name = "gelu_mlp";
  c.reference_graph = "gelu_mlp_bf16_8192x2048x8192";
  const int64_t m = 8192, d = 2048, h = 8192;
  c.inputs = {random_tensor({m, d}, 8, DType::BFloat16, 1.f), random_tensor({d, h}, 9, DType::BFloat16, 0.03f),
              random_tensor({h, d}, 10, DType::BFloat16, 0.03f)};
  GraphEmitter e(c.graph);
  Var x = e.placeholder("x", c.inputs[0]), w1 = e.placeholder("w1", c.inputs[1]), w2 = e.placeholder("w2", c.inputs[2]);
  Var hidden = e.call1("aten::mm.default", {x, w1});
  Var g = e.call1("aten::gelu.default", {hidden}, {{"approximate", Value(std::string("tanh"))}});
  e.output({e.call1("aten::mm.default", {g, w2})});
  c.flops = 2.0 * 2 * double(m) * double(d) * double(h);
  c.gemms = {{1, m, h, d, false}, {1, m, d, h, false}};
  c.gemm_dtype = DType::BFloat16;
  return c;
}

// softmax(q @ k^T * 0.125 [causal]) @ v over `batch` ([B] with bmm, [B, H] with
// 4-D matmuls), the causal mask as programs write it: masked_fill(triu(ones, 1), -inf).
Case attention(const std::string& name, const std::string& reference, DType dtype, std::vector<int64_t> batch,
               bool causal) {
  Case c;
  c.name = name;
  c.reference_graph = reference;
  const int64_t s = batch.size() == 1 ? 1024 : 2048, d = 64;
  int64_t b = 1;
  for (int64_t x : batch) b *= x;
  std::vector<int64_t> sizes = batch;
  sizes.push_back(s), sizes.push_back(d);
  const Shape shape(sizes.begin(), sizes.end());
  c.inputs = {random_tensor(shape, 11, dtype, 1.f), random_tensor(shape, 12, dtype, 1.f), random_tensor(shape, 13, dtype, 1.f)};
  GraphEmitter e(c.graph);
  Var q = e.placeholder("q", c.inputs[0]), k = e.placeholder("k", c.inputs[1]), v = e.placeholder("v", c.inputs[2]);
  const int64_t r = int64_t(sizes.size());
  const char* mm = batch.size() == 1 ? "aten::bmm.default" : "aten::matmul.default";
  Var kt = e.call1("aten::transpose.int", {k, r - 2, r - 1});
  Var scores = e.call1("aten::mul.Scalar", {e.call1(mm, {q, kt}), 0.125});
  if (causal) {
    Var ones = e.call1("aten::full.default", {std::vector<int64_t>{s, s}, int64_t(1)}, {{"dtype", DType::Bool}});
    Var mask = e.call1("aten::triu.default", {ones, int64_t(1)});
    scores = e.call1("aten::masked_fill.Scalar", {scores, mask, -std::numeric_limits<double>::infinity()});
  }
  Var p = e.call1("aten::_softmax.default", {scores, int64_t(-1), false});
  e.output({e.call1(mm, {p, v})});
  c.flops = 2.0 * 2 * double(b) * double(s) * double(s) * double(d) * (causal ? 0.5 : 1.0);
  c.gemms = {{b, s, s, d, true}, {b, s, d, s, false}};
  c.gemm_dtype = dtype;
  return c;
}

// The GPT head's forward and backward as one joint graph: q, k, v, the output's
// gradient in; the output and the gradients of q, k and v out.
Case attention_train() {
  Case c = attention("attention_train_bf16_gpt", "", DType::BFloat16, {4, 16}, true);
  if (pipeline::attention_fusion_for_training_enabled()) pipeline::fuse_attention(c.graph, {});
  Expected<aot::JointGraph> joint = aot::build_joint(c.graph);
  if (!joint) {
    c.build_error = joint.status().message();
    return c;
  }
  c.graph = std::move(joint->graph);
  c.inputs.push_back(random_tensor(c.inputs[0].sizes(), 14, DType::BFloat16, 1.f));
  // FlashAttention-2's count: the backward is 2.5 forwards (five GEMMs to two), the causal half of each.
  c.flops *= 3.5;
  // Forward S = QK^T, O = PV; backward S again, dP = dO V^T, dV = P^T dO, dQ = dS K, dK = dS^T Q.
  const int64_t b = 64, s = 2048, d = 64;
  c.gemms = {{b, s, s, d, true}, {b, s, d, s, false}, {b, s, s, d, true}, {b, s, s, d, true},
             {b, s, d, s, false}, {b, s, d, s, false}, {b, s, d, s, false}};
  return c;
}

Case resnet18(bool tf32) {
  Case c;
  c.name = tf32 ? "resnet18" : "resnet18_fp32";
  c.reference_graph = tf32 ? "resnet18_eval_b16_128" : "";
  c.model = true;
  c.conv_tf32 = tf32;
  Expected<ModelGraph> m = capture_model_graph("resnet18_infer.py");
  if (!m) {
    c.build_error = m.status().message();
    return c;
  }
  c.graph = std::move(m->graph);
  c.inputs = std::move(m->inputs);
  c.per_call = std::move(m->per_call);
  return c;
}

Case resnet18_train(bool tf32) {
  Case c;
  c.name = tf32 ? "resnet18_train" : "resnet18_train_fp32";
  c.model = true;
  c.conv_tf32 = tf32;
  Expected<ModelGraph> m =
      capture_model_graph("resnet18_train.py", {"--batch", "16", "--size", "128", "--steps", "1"}, {"target"});
  Expected<TrainingStep> step = m ? training_step(*m, m->globals.at("target")) : Expected<TrainingStep>(m.status());
  if (!step) {
    c.build_error = step.status().message();
    return c;
  }
  c.graph = std::move(step->graph);
  c.inputs = std::move(step->inputs);
  c.per_call = std::move(step->per_call);
  c.carried = std::move(step->carried);
  return c;
}

std::vector<std::pair<std::string, Builder>> all_cases() {
  return {{"sin_cos", [] { return pointwise("sin_cos", false); }},
          {"pointwise_chain", [] { return pointwise("pointwise_chain", true); }},
          {"softmax", softmax},
          {"layer_norm", layer_norm},
          {"sum_lastdim", [] { return row_reduction(false); }},
          {"var_mean", [] { return row_reduction(true); }},
          {"sum_64m", sum_64m},
          {"gelu_mlp", gelu_mlp},
          {"attention", [] { return attention("attention", "attention_explicit_fp16_64x1024x64", DType::Float16, {64}, false); }},
          {"attention_causal",
           [] { return attention("attention_causal", "attention_causal_fp16_64x1024x64", DType::Float16, {64}, true); }},
          {"attention_bf16_gpt",
           [] { return attention("attention_bf16_gpt", "attention_causal_bf16_4x16x2048x64", DType::BFloat16, {4, 16}, true); }},
          {"attention_train_bf16_gpt", attention_train},
          {"resnet18", [] { return resnet18(true); }},
          {"resnet18_fp32", [] { return resnet18(false); }},
          {"resnet18_train", [] { return resnet18_train(true); }},
          {"resnet18_train_fp32", [] { return resnet18_train(false); }}};
}

std::map<std::string, nlohmann::json> reference_rows(const std::string& dir) {
  std::map<std::string, nlohmann::json> rows;
  std::ifstream in(dir + "/perf/perf_gpu.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object()) rows[j.value("graph", "")] = j;
  }
  return rows;
}

void check(const Status& st, const std::string& what) {
  if (!st.ok()) throw Error(what + ": " + st.message());
}

// Times `work` on `stream` with CUDA events: `warmup` untimed runs, then the
// median of `reps`. `work(i)` gets the repetition number (for rotation).
double time_on_device(Stream& stream, int reps, const std::function<void(int)>& work, int warmup = 5) {
  Expected<double> ms = median_event_ms(stream, warmup, reps, [&work](int i) {
    work(i);  // throws through check()
    return Status{};
  });
  check(ms.status(), "timing with CUDA events");
  return *ms;
}

struct Measured {
  double ms = 0, ceiling_ms = 0, compile_ms = 0;
  double replay_ms = -1;  // reduce-overhead: the CUDA graph replayed on static inputs; -1 when not capturable
  std::string replay_error;
  double max_error = -1;  // against Kiln's eager CPU kernels; -1: not checked (the matmul graphs)
  size_t kernels = 0, externs = 0;
  int rotation = 1;
  int row_elements = 0;
  std::string ceiling;
  std::vector<runtime::CudaExecution::GroupTime> profile;  // --profile, model rows
};

// How far a backend's output is from eager's: per element, |got - want| /
// max(1, |want|), the worst; or per tensor, ||got - want|| / ||want||.
enum class ErrorNorm { Elementwise, PerTensor };

double output_error(const Tensor& got, const Value& want, ErrorNorm norm) {
  Tensor a = got.to(DType::Float64).contiguous(), b = want.to_tensor().to(DType::Float64).contiguous();
  double worst = 0, diff2 = 0, want2 = 0;
  for (int64_t e = 0; e < a.numel(); ++e) {
    const double w = b.data<double>()[e], d = std::fabs(a.data<double>()[e] - w);
    if (std::isnan(d)) return INFINITY;
    worst = std::max(worst, d / std::max(1.0, std::fabs(w)));
    diff2 += d * d, want2 += w * w;
  }
  if (norm == ErrorNorm::Elementwise) return worst;
  return diff2 == 0 ? 0 : std::sqrt(diff2 / std::max(want2, 1e-300));
}

// The case compiled with `options` (compile time and kernel counts go to
// `m`), its buffers allocated on the device.
std::unique_ptr<runtime::CudaExecution> compile_case(const Case& c, runtime::CudaCompileOptions options, Measured& m) {
  options.inject_bug = "none";
  auto t0 = Clock::now();
  auto compiled = pipeline::compile_to_cuda(c.graph, options);
  m.compile_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  check(compiled.status(), "compile");
  m.kernels = (*compiled)->stats().kernels;
  m.externs = (*compiled)->stats().extern_groups;
  auto exec = runtime::CudaExecution::create(*compiled);
  check(exec.status(), "allocate");
  return std::move(*exec);
}

// A bound on some outputs [first, end) of a check.
struct Bound {
  size_t first = 0, end = SIZE_MAX;
  ErrorNorm norm = ErrorNorm::Elementwise;
  double tolerance = 0;
};

// A fast wrong result is no result: the outputs of the work queued on
// `stream` against Kiln's eager CPU kernels on the case's inputs. Over any
// bound is an Error naming the outputs; returns the worst error of the first bound.
double check_against_eager(const Case& c, runtime::CudaExecution& x, Stream& stream, const std::vector<Bound>& bounds) {
  check(stream.synchronize(), c.name);
  Expected<std::vector<Tensor>> got = x.outputs();
  check(got.status(), "download");
  auto want = pipeline::run_aten_graph(c.graph, std::vector<Value>(c.inputs.begin(), c.inputs.end()));
  check(want.status(), "eager");
  double first_worst = 0;
  for (size_t b = 0; b < bounds.size(); ++b) {
    const Bound& bound = bounds[b];
    double worst = 0;
    std::string where;  // a training step returns hundreds of outputs: name those over
    int listed = 0;
    for (size_t i = bound.first; i < std::min(bound.end, got->size()); ++i) {
      const double e = output_error((*got)[i], (*want)[i], bound.norm);
      worst = std::max(worst, e);
      if (e > bound.tolerance && listed++ < 6) where += (listed > 1 ? ", " : "") + std::to_string(i) + ": " + std::to_string(e);
    }
    if (worst > bound.tolerance)
      throw Error("wrong results: max error " + std::to_string(worst) + " against eager (" +
                  (bound.norm == ErrorNorm::PerTensor ? "per tensor" : "per element") + ", outputs " + where + ")");
    if (b == 0) first_worst = worst;
  }
  return first_worst;
}

double check_against_eager(const Case& c, runtime::CudaExecution& x, Stream& stream, double tolerance) {
  return check_against_eager(c, x, stream, {Bound{0, SIZE_MAX, ErrorNorm::Elementwise, tolerance}});
}

// A model: each call first copies the next batch (one of several copies, so
// it is not in L2) into the graph's input buffer, then launches, or replays
// the CUDA graph (reduce-overhead, where that buffer is the static input).
Measured measure_model(Case& c, int reps, bool profile) {
  Measured m;
  runtime::CudaCompileOptions options;
  options.conv_tf32 = c.conv_tf32;
  std::unique_ptr<runtime::CudaExecution> exec = compile_case(c, options, m);
  runtime::CudaExecution& x = *exec;
  Expected<Stream> stream = Stream::create();
  check(stream.status(), "cuStreamCreate");
  m.rotation = 4;
  std::vector<std::vector<DeviceBuffer>> batches(x.input_count());
  for (size_t k = 0; k < x.input_count(); ++k) {
    check(x.set_input(k, c.inputs[k]), "upload");
    if (!c.per_call[k]) continue;
    for (int r = 0; r < m.rotation; ++r) {
      Expected<DeviceBuffer> b = DeviceBuffer::alloc(x.input_bytes(k));
      check(b.status(), "allocate input copy");
      check(copy_device(b->ptr(), x.input_pointer(k), x.input_bytes(k), &*stream), "copy input");
      batches[k].push_back(std::move(*b));
    }
  }
  check(stream->synchronize(), "copy inputs");
  // A deep float32 network sums in another order on each backend: 1e-3 of
  // max(1, |logit|); TF32 products (10-bit mantissas) 1e-2.
  const double tolerance = c.conv_tf32 ? 1e-2 : 1e-3;
  // A training step changes its inputs: checked on the first step, before the state moves on.
  if (!c.carried.empty()) {
    check(x.launch(&*stream), c.name);
    // TF32 gradients are sums of 65,536 products of 10-bit mantissas: a batch
    // norm bias's gradient (sum(dy), which cancels) is off by 10% per tensor,
    // a conv weight's by 6e-2 per element. So the TF32 step is held to the
    // loss (1e-2) and to no wholesale error (25% per tensor); the exact check
    // of the same kernels is resnet18_train_fp32's, per element at 1e-3.
    if (c.conv_tf32)
      m.max_error = check_against_eager(c, x, *stream, {{0, 1, ErrorNorm::Elementwise, 1e-2},
                                                        {1, SIZE_MAX, ErrorNorm::PerTensor, 0.25}});
    else
      m.max_error = check_against_eager(c, x, *stream, tolerance);
  }
  auto copy_batch = [&](int i) {
    for (size_t k = 0; k < batches.size(); ++k)
      if (!batches[k].empty())
        check(copy_device(x.input_pointer(k), batches[k][size_t(i % m.rotation)].ptr(), x.input_bytes(k), &*stream),
              "copy batch");
  };
  auto carry_state = [&] {
    for (const auto& [output, input] : c.carried) check(x.copy_output_to_input(output, input, &*stream), "carry state");
  };
  m.ms = time_on_device(*stream, reps, [&](int i) {
    copy_batch(i);
    check(x.launch(&*stream), c.name);
    carry_state();
  });
  if (x.capturable()) {
    try {
      m.replay_ms = time_on_device(*stream, reps, [&](int i) {
        copy_batch(i);
        check(x.replay(*stream), c.name + " (CUDA graph)");
        carry_state();
      });
    } catch (const Error& e) {
      m.replay_error = e.what();
    }
  } else {
    m.replay_error = "not capturable: extern kernels run on the host";
  }
  if (c.carried.empty()) m.max_error = check_against_eager(c, x, *stream, tolerance);
  if (profile) {
    Expected<std::vector<runtime::CudaExecution::GroupTime>> groups = x.profile(*stream, 20);
    check(groups.status(), "profile");
    m.profile = std::move(*groups);
  }
  m.ceiling = "none";
  return m;
}

Measured measure(Case& c, int reps, int row_elements, bool profile) {
  if (c.model) return measure_model(c, reps, profile);
  Measured m;
  runtime::CudaCompileOptions options;
  options.row_elements_per_thread = row_elements;
  std::unique_ptr<runtime::CudaExecution> exec = compile_case(c, options, m);
  runtime::CudaExecution& x = *exec;
  Expected<Stream> stream = Stream::create();
  check(stream.status(), "cuStreamCreate");

  // Input copies: enough that one round through them is three times L2.
  double input_bytes = 0;
  for (size_t k = 0; k < x.input_count(); ++k) input_bytes += double(x.input_bytes(k));
  m.rotation = int(std::clamp(std::ceil(3 * kL2Bytes / std::max(input_bytes, 1.0)), 1.0, 8.0));
  std::vector<std::vector<DeviceBuffer>> copies(x.input_count());
  for (size_t k = 0; k < x.input_count(); ++k) {
    check(x.set_input(k, c.inputs[k]), "upload");
    for (int r = 0; r < m.rotation; ++r) {
      Expected<DeviceBuffer> b = DeviceBuffer::alloc(x.input_bytes(k));
      check(b.status(), "allocate input copy");
      check(copy_device(b->ptr(), x.input_pointer(k), x.input_bytes(k), &*stream), "copy input");
      copies[k].push_back(std::move(*b));
    }
  }
  check(stream->synchronize(), "copy inputs");
  m.ms = time_on_device(*stream, reps, [&](int i) {
    for (size_t k = 0; k < copies.size(); ++k) check(x.bind_input(k, copies[k][size_t(i % m.rotation)].ptr()), "bind");
    check(x.launch(&*stream), c.name);
  });

  // mode="reduce-overhead": one CUDA graph launch per call. Static inputs (a
  // captured graph holds its pointers), so L2 may keep some of them: the
  // figure is for launch overhead, not bandwidth.
  if (x.capturable()) {
    for (size_t k = 0; k < copies.size(); ++k) check(x.bind_input(k, copies[k][0].ptr()), "bind");
    try {
      m.replay_ms = time_on_device(*stream, reps, [&](int) { check(x.replay(*stream), c.name + " (CUDA graph)"); });
    } catch (const Error& e) {
      m.replay_error = e.what();
    }
  }

  if (c.gemms.empty()) {
    // A fast wrong kernel is no result: the outputs against Kiln's eager CPU
    // kernels, as max |got - want| / max(1, |want|) over every element (from
    // the CUDA graph's replay when there is one: that checks it too).
    if (m.replay_ms < 0)
      for (size_t k = 0; k < copies.size(); ++k) check(x.bind_input(k, copies[k][0].ptr()), "bind");
    check(m.replay_ms < 0 ? x.launch(&*stream) : x.replay(*stream), c.name);
    m.max_error = check_against_eager(c, x, *stream, 1e-4);
    // The copy ceiling: bytes/2 read and bytes/2 written.
    const size_t half = size_t(c.bytes / 2);
    std::vector<DeviceBuffer> src;
    const int rotation = int(std::clamp(std::ceil(3 * kL2Bytes / double(half)), 1.0, 8.0));
    for (int r = 0; r < rotation; ++r) {
      Expected<DeviceBuffer> b = DeviceBuffer::alloc(half);
      check(b.status(), "allocate");
      check(b->zero(), "memset");
      src.push_back(std::move(*b));
    }
    Expected<DeviceBuffer> dst = DeviceBuffer::alloc(half);
    check(dst.status(), "allocate");
    m.ceiling_ms = time_on_device(*stream, reps, [&](int i) {
      check(copy_device(dst->ptr(), src[size_t(i % rotation)].ptr(), half, &*stream), "copy");
    });
    m.ceiling = "d2d_copy";
    return m;
  }
  // The GEMM ceiling: cuBLAS on the graph's own input copies (the first GEMM's
  // operands are inputs 0 and 1; the second reads a scratch of the first's
  // shape and input 2), no pointwise work between them.
  const size_t es = element_size(c.gemm_dtype);
  std::vector<DeviceBuffer> scratch;
  // Each scratch holds its GEMM's product and the next GEMM's left operand (a chain of shapes that alternate).
  int64_t scratch_elements = 0;
  for (const GemmShape& g : c.gemms) scratch_elements = std::max({scratch_elements, g.batch * g.m * g.n, g.batch * g.m * g.k});
  for (size_t gi = 0; gi < c.gemms.size(); ++gi) {
    Expected<DeviceBuffer> b = DeviceBuffer::alloc(size_t(scratch_elements) * es);
    check(b.status(), "allocate");
    check(b->zero(), "memset");
    scratch.push_back(std::move(*b));
  }
  m.ceiling_ms = time_on_device(*stream, reps, [&](int i) {
    const size_t r = size_t(i % m.rotation);
    for (size_t gi = 0; gi < c.gemms.size(); ++gi) {
      const GemmShape& g = c.gemms[gi];
      GemmCall call;
      call.m = g.m, call.n = g.n, call.k = g.k, call.batch = g.batch, call.dtype = c.gemm_dtype;
      CUdeviceptr a = gi == 0 ? copies[0][r].ptr() : scratch[gi - 1].ptr();
      CUdeviceptr b = gi == 0 ? copies[1][r].ptr() : copies[2][r].ptr();
      call.a = {a, 0, g.k, 1, g.m * g.k};
      call.b = g.b_transposed ? GemmOperand{b, 0, 1, g.k, g.k * g.n} : GemmOperand{b, 0, g.n, 1, g.k * g.n};
      call.c = {scratch[gi].ptr(), 0, g.n, 1, g.m * g.n};
      check(cublas_gemm(call, &*stream), "cuBLAS");
    }
  });
  m.ceiling = "cublas_gemms";
  return m;
}

// --profile: per kind of work (generated kernels; each library op), its total ms and group count.
std::map<std::string, std::pair<double, int>> profile_by_kind(const std::vector<runtime::CudaExecution::GroupTime>& groups) {
  std::map<std::string, std::pair<double, int>> by_kind;
  for (const auto& g : groups) by_kind[g.what].first += g.ms, ++by_kind[g.what].second;
  return by_kind;
}

// Every group in launch order, and the time per kind.
nlohmann::json profile_json(const std::vector<runtime::CudaExecution::GroupTime>& groups) {
  nlohmann::json j = {{"groups", nlohmann::json::array()}, {"by_kind", nlohmann::json::object()}};
  for (const auto& g : groups) j["groups"].push_back({{"group", g.group}, {"what", g.what}, {"ms", g.ms}});
  for (const auto& [what, t] : profile_by_kind(groups)) j["by_kind"][what] = t.first;
  return j;
}

// The time per kind, largest first.
void print_profile(const std::vector<runtime::CudaExecution::GroupTime>& groups) {
  const auto by_kind = profile_by_kind(groups);
  double total = 0;
  std::vector<std::pair<double, std::string>> order;
  for (const auto& [what, t] : by_kind) order.emplace_back(t.first, what), total += t.first;
  std::sort(order.rbegin(), order.rend());
  std::printf("  profile (sum of groups %.4f ms):\n", total);
  for (const auto& [ms, what] : order)
    std::printf("    %-40s %4d x  %9.4f ms  %5.1f%%\n", what.c_str(), by_kind.at(what).second, ms, 100 * ms / total);
}

int dump_sources(const std::vector<Case>& cases, const std::string& dir) {
  for (const Case& c : cases) {
    if (!c.build_error.empty()) {
      std::fprintf(stderr, "%s: skipped: %s\n", c.name.c_str(), c.build_error.c_str());
      continue;
    }
    runtime::CudaCompileOptions options;
    options.compile_only = true;
    options.keep_text = true;
    options.inject_bug = "none";
    options.conv_tf32 = c.conv_tf32;  // as measure_model compiles it (KILN_CONV's implicit kernel needs it for float32)
    auto compiled = pipeline::compile_to_cuda(c.graph, options);
    if (!compiled) {
      std::fprintf(stderr, "%s: %s\n", c.name.c_str(), compiled.status().message().c_str());
      return kExitFailures;
    }
    for (const runtime::CodegenStage& s : (*compiled)->stages()) {
      if (s.name != "cuda_source" && s.name != "ir_post_fusion") continue;
      std::ofstream(dir + "/" + c.name + "." + (s.name == "cuda_source" ? "cu" : "txt")) << s.text;
    }
    std::printf("%-16s %zu kernel(s), %zu extern call(s), NVRTC %.0f ms\n", c.name.c_str(), (*compiled)->stats().kernels,
                (*compiled)->stats().extern_groups, (*compiled)->stats().nvrtc_ms);
  }
  return kExitOk;
}

}  // namespace

int run_gpu_bench(int reps, const std::string& reference, const std::string& only, const std::string& dump_dir,
                  std::vector<int> row_elements, bool profile, bool json) {
  if (row_elements.empty()) row_elements = {runtime::CudaCompileOptions().row_elements_per_thread};
  if (reps == 0) reps = 50;
  std::vector<Case> cases;
  for (auto& [name, build] : all_cases())
    if (only.empty() || only == name) cases.push_back(build());
  if (cases.empty()) {
    std::fprintf(stderr, "kiln-cli: bench gpu: no graph named '%s'\n", only.c_str());
    return kExitUsage;
  }
  // A model graph asked for by name whose program cannot be run is bad input;
  // among all graphs it is one failed row.
  if (!only.empty() && !cases.front().build_error.empty()) {
    std::fprintf(stderr, "kiln-cli: bench gpu: %s: %s\n", only.c_str(), cases.front().build_error.c_str());
    return kExitBadInput;
  }
  if (!dump_dir.empty()) return dump_sources(cases, dump_dir);
  if (Status st = cuda_init(); !st.ok()) {
    std::fprintf(stderr, "kiln-cli: bench gpu needs a GPU: %s\n", st.message().c_str());
    return kExitBadInput;
  }
  Expected<DeviceInfo> info = cuda_device_info();
  auto refs = reference_rows(reference);
  if (!json)
    std::printf("CUDA code generator on %s, CUDA events, median of %d (ref: PyTorch reference run, perf_gpu.jsonl)\n"
                "%-16s %9s %9s %8s %8s %9s %9s %9s  %s\n",
                info ? info->name.c_str() : "?", reps, "name", "ms", "ceil_ms", "ceiling", "GB/s", "TFLOP/s", "ref_ind",
                "ref_eag", "kernels");
  nlohmann::json rows = nlohmann::json::array();
  for (Case& c : cases) {
    nlohmann::json row = {{"name", c.name}};
    const nlohmann::json ref = refs.count(c.reference_graph) ? refs[c.reference_graph] : nlohmann::json::object();
    if (!ref.empty()) {
      row["reference"] = {{"graph", c.reference_graph}, {"inductor_ms", ref.value("default_ms", 0.0)},
                          {"eager_ms", ref.value("eager_ms", 0.0)}};
      if (ref.contains("reduce-overhead_ms")) row["reference"]["inductor_reduce_overhead_ms"] = ref["reduce-overhead_ms"];
    }
    Measured m;
    nlohmann::json sweep = nlohmann::json::array();
    try {
      if (!c.build_error.empty()) throw Error(c.build_error);
      // max-autotune's search, by hand: each launch shape, the fastest kept.
      for (int r : row_elements) {
        Measured t = measure(c, reps, r, profile);
        sweep.push_back({{"row_elements_per_thread", r}, {"ms", t.ms}});
        if (m.ms == 0 || t.ms < m.ms) m = t, m.row_elements = r;
      }
    } catch (const Error& e) {
      row["error"] = e.what();
      row["ms"] = nullptr;  // every row has ms (CLI.md); null: not measured
      if (json) rows.push_back(row);
      else std::printf("%-16s failed: %s\n", c.name.c_str(), e.what());
      continue;
    }
    const double ratio = m.ceiling_ms > 0 ? m.ceiling_ms / m.ms : 0;
    row.update({{"ms", m.ms}, {"ceiling", m.ceiling}, {"ceiling_ms", m.ceiling_ms}, {"ratio_to_ceiling", ratio},
                {"compile_ms", m.compile_ms}, {"kernels", m.kernels}, {"extern_calls", m.externs},
                {"input_rotation", m.rotation}, {"row_elements_per_thread", m.row_elements}});
    if (m.max_error >= 0) {
      row["max_error_vs_eager"] = m.max_error;
      row["max_error_norm"] = !c.carried.empty() && c.conv_tf32 ? "loss only (elementwise)" : "elementwise";
    }
    if (m.replay_ms >= 0) row["reduce_overhead_ms"] = m.replay_ms;
    if (!m.replay_error.empty()) row["reduce_overhead_error"] = m.replay_error;
    if (sweep.size() > 1) row["sweep"] = sweep;
    if (!m.profile.empty()) row["profile"] = profile_json(m.profile);
    if (c.bytes > 0) row["GBps"] = c.bytes / (m.ms * 1e6), row["bytes"] = c.bytes;
    if (c.flops > 0) row["TFLOPs"] = c.flops / (m.ms * 1e9);
    if (json) {
      rows.push_back(row);
      continue;
    }
    char gbps[32] = "-", tflops[32] = "-", ref_ind[32] = "-", ref_eag[32] = "-";
    if (c.bytes > 0) std::snprintf(gbps, sizeof gbps, "%.0f", c.bytes / (m.ms * 1e6));
    if (c.flops > 0) std::snprintf(tflops, sizeof tflops, "%.1f", c.flops / (m.ms * 1e9));
    if (!ref.empty()) {
      std::snprintf(ref_ind, sizeof ref_ind, "%.3f", ref.value("default_ms", 0.0));
      std::snprintf(ref_eag, sizeof ref_eag, "%.3f", ref.value("eager_ms", 0.0));
    }
    char replay[48] = "";
    if (m.replay_ms >= 0) std::snprintf(replay, sizeof replay, ", CUDA graph %.4f ms", m.replay_ms);
    if (c.model) {
      if (!m.profile.empty()) print_profile(m.profile);
      std::printf("%-16s %9.4f %9s %8s %8s %9s %9s %9s  %zu + %zu extern, compile %.0f ms%s; ref reduce-overhead %.3f\n",
                  c.name.c_str(), m.ms, "-", "-", "-", "-", ref_ind, ref_eag, m.kernels, m.externs, m.compile_ms,
                  replay[0] ? replay : (", " + m.replay_error).c_str(), ref.value("reduce-overhead_ms", 0.0));
      continue;
    }
    std::printf("%-16s %9.4f %9.4f %7.0f%% %8s %9s %9s %9s  %zu + %zu extern, compile %.0f ms%s\n", c.name.c_str(), m.ms,
                m.ceiling_ms, 100 * ratio, gbps, tflops, ref_ind, ref_eag, m.kernels, m.externs, m.compile_ms, replay);
  }
  if (json) {
    nlohmann::json doc = {{"rows", rows},
                          {"ceiling", {{"memory", "d2d_copy"}, {"gemm", "cublas_gemms"}, {"cublas", cublas_describe()}}},
                          {"device", info ? info->name : ""},
                          {"reps", reps}};
    std::cout << kiln::json_text(doc, 1) << "\n";
  } else {
    std::printf("ceiling: a device-to-device copy of each row's bytes (half read, half written); the matmul rows against "
                "cuBLAS running their GEMMs alone (%s)\n",
                cublas_describe().c_str());
  }
  return kExitOk;
}

}  // namespace kiln::cli
