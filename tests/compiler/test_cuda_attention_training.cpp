// Training's attention ops kept whole on the CUDA path
// (aten::_scaled_dot_product_efficient_attention and its backward, loopir's
// AttentionForward / AttentionBackward, codegen/cuda/cuda_attention_training.h).
// Graphs as nanoGPT makes them: q, k, v strided views of one [B, T, 3C]
// projection ([B, H, T, E] with strides (T*3C, E, 3C, 1), where B and H do not
// merge), the backward's grad_out a view of a [B, T, C] gradient, T = 40 (not
// a multiple of 32: the logsumexp is padded with +inf); no mask, causal, an
// additive bias [1, 1, T, T], [B, 1, T, T] and [T, T]; cross-attention (k, v of
// another length, from a [B, S, 2C] projection), causal among them. Everywhere: the lowering's
// kinds, params and printing, no copies of the views, the CPU run against the
// eager kernels bit for bit, the unsupported cases on the host with their
// reason; the graphs plan every extern on the device and compile with NVRTC
// (one compile per test function: QtTest stops a function after 300 s). With
// a GPU (KILN_REQUIRE_GPU=1 makes its absence a failure): results against the
// eager kernels, the padding exactly +inf, the philox scalars 0, and a replay
// from a CUDA graph with new inputs.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "compiler/codegen/cuda/cuda_api.h"
#include "compiler/loopir/extern_call.h"
#include "compiler/loopir/loop_ir.h"
#include "compiler/loopir/lower.h"
#include "compiler/loopir/print_ir.h"
#include "compiler/pipeline/emitter.h"
#include "compiler/runtime/cuda_graph.h"
#include "attention_plan_emulator.h"
#include "cuda_test_util.h"
#include "loopir_test_util.h"
#include "test_support.h"

using namespace kiln;
using namespace kiln::pipeline;
using runtime::CudaCompiledGraph;
using runtime::CudaCompileOptions;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

enum class Mask { None, Causal, Bias11, BiasB1, Bias2d };

struct Case {
  std::string name;
  DType dtype = DType::Float16;
  Mask mask = Mask::None;
  int64_t B = 2, H = 2, T = 40, E = 32;
  int64_t S = 0;           // keys: T (self-attention from one [B, T, 3C] projection), else k, v from a [B, S, 2C] one
  bool gqa = false;        // key/value with one head: not taken (host)
  bool bias_causal = false;  // a bias and is_causal: not taken (host)
  bool grad_bias = false;    // the bias's gradient asked for: the backward is not taken (host)
};

std::vector<Case> mask_cases(DType d) {
  const std::string n(dtype_abbrev(d));
  Case cross{n + "_cross_bias_b_1", d, Mask::BiasB1};
  cross.S = 72;
  Case cross_causal{n + "_cross_causal", d, Mask::Causal};
  cross_causal.T = 80, cross_causal.S = 33;
  return {{n + "_plain", d, Mask::None}, {n + "_causal", d, Mask::Causal}, {n + "_bias_1_1", d, Mask::Bias11},
          {n + "_bias_b_1", d, Mask::BiasB1}, {n + "_bias_2d", d, Mask::Bias2d}, cross, cross_causal};
}

// q, k, v of one case: views of a [B, T, 3C] projection (k, v of a [B, T, 2E] one for GQA).
struct Qkv {
  Var q, k, v;
};
Qkv split_heads(GraphEmitter& e, Var qkv, Var kv, const Case& c) {
  const int64_t C = c.H * c.E;
  auto head = [&](Var x, int64_t len, int64_t from, int64_t heads) {
    Var part = e.call1("aten::slice.Tensor", {x, int64_t(2), from, from + heads * c.E});
    Var split = e.call1("aten::view.default", {part, std::vector<int64_t>{c.B, len, heads, c.E}});
    return e.call1("aten::transpose.int", {split, int64_t(1), int64_t(2)});
  };
  if (c.S) return {head(qkv, c.T, 0, c.H), head(kv, c.S, 0, c.H), head(kv, c.S, C, c.H)};
  if (c.gqa) return {head(qkv, c.T, 0, c.H), head(qkv, c.T, C, 1), head(qkv, c.T, C + c.E, 1)};
  return {head(qkv, c.T, 0, c.H), head(qkv, c.T, C, c.H), head(qkv, c.T, 2 * C, c.H)};
}

// Appends one case's forward and backward to `e` (its inputs into *inputs), returning its outputs:
// out, lse, seed, offset, dq, dk, dv (dq only when the bias gradient is asked for: then also dbias).
std::vector<Var> add_case(GraphEmitter& e, const Case& c, std::vector<Tensor>* inputs, std::mt19937& rng) {
  const int64_t C = c.H * c.E, width = c.gqa ? C + 2 * c.E : c.S ? C : 3 * C, S = c.S ? c.S : c.T;
  // Inputs in the placeholders' order.
  Tensor x = test::random_f32({c.B, c.T, width}, rng).to(c.dtype);
  inputs->push_back(x);
  Var vx = e.placeholder(c.name + "_qkv", x), vkv;
  if (c.S) {
    Tensor kv = test::random_f32({c.B, c.S, 2 * C}, rng).to(c.dtype);
    inputs->push_back(kv);
    vkv = e.placeholder(c.name + "_kv", kv);
  }
  const Qkv qkv = split_heads(e, vx, vkv, c);
  Tensor gy = test::random_f32({c.B, c.T, C}, rng).to(c.dtype);
  inputs->push_back(gy);
  Var gyv = e.placeholder(c.name + "_gy", gy);
  Var dout = e.call1("aten::transpose.int",
                     {e.call1("aten::view.default", {gyv, std::vector<int64_t>{c.B, c.T, c.H, c.E}}), int64_t(1), int64_t(2)});
  EArg bias = EArg::none();
  if (c.mask == Mask::Bias11 || c.mask == Mask::BiasB1 || c.mask == Mask::Bias2d) {
    Tensor b = (c.mask == Mask::Bias2d ? test::random_f32({c.T, S}, rng)
                                       : test::random_f32({c.mask == Mask::BiasB1 ? c.B : 1, 1, c.T, S}, rng))
                   .to(c.dtype);
    inputs->push_back(b);
    bias = e.placeholder(c.name + "_bias", b);
  }
  const bool causal = c.mask == Mask::Causal || c.bias_causal;
  const double scale = 0.3;
  std::vector<Var> f = e.call("aten::_scaled_dot_product_efficient_attention.default",
                              {qkv.q, qkv.k, qkv.v, bias, true, 0.0, causal}, {{"scale", scale}});
  std::vector<Var> g = e.call("aten::_scaled_dot_product_efficient_attention_backward.default",
                              {dout, qkv.q, qkv.k, qkv.v, bias, f[0], f[1], f[2], f[3], 0.0,
                               Value(ValueList{true, true, true, c.grad_bias}), causal},
                              {{"scale", scale}});
  std::vector<Var> out{f[0], f[1], f[2], f[3], g[0], g[1], g[2]};
  if (c.grad_bias) out.push_back(g[3]);
  return out;
}

Graph cases_graph(const std::vector<Case>& cases, std::vector<Tensor>* inputs, uint32_t seed) {
  std::mt19937 rng(seed);
  inputs->clear();
  Graph g;
  GraphEmitter e(g);
  std::vector<Var> outs;
  for (const Case& c : cases)
    for (Var v : add_case(e, c, inputs, rng)) outs.push_back(v);
  e.output(outs);
  return g;
}


// Every output against the eager kernels': sizes, dtype, the lse padding +inf (normwise_error
// wants inf exactly where the eager op has it), the philox scalars exactly, the rest normwise.
std::string compare(const std::vector<Tensor>& got, const std::vector<Tensor>& want, DType dtype) {
  if (got.size() != want.size()) return "output counts differ";
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i].sizes() != want[i].sizes() || got[i].dtype() != want[i].dtype())
      return "output " + std::to_string(i) + ": sizes or dtype differ";
    const bool lse = got[i].dim() == 3, exact = got[i].dtype() == DType::Int64;
    const double tol = exact ? 0 : lse ? 1e-3 : test::cuda_tolerance(dtype);
    const double e = test::normwise_error(got[i], want[i]);
    if (!(e <= tol)) return "output " + std::to_string(i) + ": error " + std::to_string(e) + " over " + std::to_string(tol);
  }
  return {};
}

loopir::Program lowered(const Graph& g) { return loopir::lower_to_loops(g); }

std::vector<const loopir::ExternCall*> calls_of(const loopir::Program& p, loopir::ExternKind kind) {
  std::vector<const loopir::ExternCall*> out;
  for (const loopir::Kernel& k : p.kernels)
    if (k.kind == loopir::KernelKind::Extern && k.call->kind == kind) out.push_back(k.call.get());
  return out;
}

std::string nvrtc_missing() {
  std::string d = codegen::cuda::nvrtc_describe();
  return d.rfind("unavailable", 0) == 0 ? d : "";
}

// The graph of `cases` compiles for the device with every extern on it.
void compiles_on_the_device(const std::vector<Case>& cases) {
  std::vector<Tensor> inputs;
  Graph g = cases_graph(cases, &inputs, 1);
  CudaCompileOptions o;
  o.compile_only = true, o.keep_text = true, o.use_cache = false;
  auto compiled = CudaCompiledGraph::compile(g, o);
  QVERIFY2(compiled.ok(), compiled.status().message().c_str());
  const std::string& src = test::cuda_stage(**compiled, "cuda_source");
  QVERIFY2((*compiled)->stats().host_externs == 0 && !has(src, "runs on the host"), src.c_str());
  const std::string& ptx = test::cuda_stage(**compiled, "ptx");
  for (const char* entry : {".entry kiln_attn_lse_pad", ".entry kiln_attnb_dkdv_", ".entry kiln_attnb_dq_", "_lse("})
    QVERIFY2(has(ptx, entry), entry);
  const std::string& post = test::cuda_stage(**compiled, "ir_post_fusion");
  QVERIFY2(has(post, "extern_kernels.flash_attention_lse(") && has(post, "extern_kernels.flash_attention_backward("),
           post.c_str());
}

// Runs the graph of `cases` on the GPU against the eager kernels, then replays it from a CUDA graph with new inputs.
void matches_eager_on_the_gpu(const std::vector<Case>& cases, DType dtype) {
  std::vector<Tensor> inputs;
  Graph g = cases_graph(cases, &inputs, 3);
  CudaCompileOptions o;
  o.use_cache = false;
  auto compiled = CudaCompiledGraph::compile(g, o);
  QVERIFY2(compiled.ok(), compiled.status().message().c_str());
  QCOMPARE((*compiled)->stats().host_externs, size_t(0));
  auto got = (*compiled)->run(inputs);
  QVERIFY2(got.ok(), got.status().message().c_str());
  std::string diff = compare(*got, test::aten_outputs(g, inputs), dtype);
  QVERIFY2(diff.empty(), diff.c_str());
  auto exec = runtime::CudaExecution::create(*compiled);
  QVERIFY2(exec.ok(), exec.status().message().c_str());
  QVERIFY((*exec)->capturable());
  auto stream = codegen::cuda::Stream::create();
  QVERIFY2(stream.ok(), stream.status().message().c_str());
  for (uint32_t round = 0; round < 2; ++round) {
    std::vector<Tensor> again;
    Graph same = cases_graph(cases, &again, 10 + round);
    for (size_t k = 0; k < again.size(); ++k) QVERIFY((*exec)->set_input(k, again[k]).ok());
    Status st = (*exec)->replay(*stream);
    QVERIFY2(st.ok(), st.message().c_str());
    QVERIFY(stream->synchronize().ok());
    auto out = (*exec)->outputs();
    QVERIFY2(out.ok(), out.status().message().c_str());
    diff = compare(*out, test::aten_outputs(same, again), dtype);
    QVERIFY2(diff.empty(), ("replay " + std::to_string(round) + ": " + diff).c_str());
  }
}

#define KILN_NEEDS_NVRTC()                                                   \
  if (std::string d = nvrtc_missing(); !d.empty()) {                         \
    if (qgetenv("KILN_ALLOW_NO_NVRTC") == "1") QSKIP(d.c_str());             \
    QFAIL(d.c_str());                                                        \
  }
#define KILN_NEEDS_GPU()                                                     \
  if (std::string why = test::no_gpu_reason(); !why.empty()) {               \
    if (qgetenv("KILN_REQUIRE_GPU") == "1") QFAIL(why.c_str());              \
    QSKIP(why.c_str());                                                      \
  }

}  // namespace

class TestCudaAttentionTraining : public QObject {
  Q_OBJECT
 private slots:
  // The lowering keeps both ops whole with their params, reads q, k, v and grad_out in place.
  void lowering_classifies_and_prints() {
    std::vector<Tensor> inputs;
    Case causal{"c", DType::Float16, Mask::Causal}, bias{"b", DType::Float16, Mask::BiasB1};
    const loopir::Program p = lowered(cases_graph({causal, bias}, &inputs, 1));
    auto fwd = calls_of(p, loopir::ExternKind::AttentionForward), bwd = calls_of(p, loopir::ExternKind::AttentionBackward);
    QCOMPARE(fwd.size(), size_t(2));
    QCOMPARE(bwd.size(), size_t(2));
    QVERIFY(fwd[0]->attention.causal_offset == int64_t(0) && fwd[0]->attention.mask < 0);
    QVERIFY(!fwd[1]->attention.causal_offset && fwd[1]->attention.mask_kind == loopir::AttentionMask::Additive);
    QCOMPARE(fwd[0]->attention.scale, 0.3);
    QCOMPARE(fwd[0]->outputs.size(), size_t(4));  // out, lse, seed, offset: the backward reads them all
    for (const loopir::ExternCall* c : {fwd[0], bwd[0]}) {
      const loopir::BufferView& q = c->tensors[size_t(c->attention.q)];
      QVERIFY2(p.buffer(q.buffer).role == loopir::BufferRole::Input, q.buffer.c_str());  // no copy of the view
      QCOMPARE(q.strides, (std::vector<int64_t>{40 * 192, 32, 192, 1}));
    }
    const loopir::BufferView& dout = bwd[0]->tensors[size_t(bwd[0]->attention.dout)];
    QVERIFY(p.buffer(dout.buffer).role == loopir::BufferRole::Input);
    const std::string text = loopir::print_loop_ir(p);
    QVERIFY2(has(text, "extern_kernels.flash_attention_lse(") && has(text, "scale=0.29999999999999999, causal=0") &&
                 has(text, "extern_kernels.flash_attention_backward(") && has(text, "add_mask="),
             text.c_str());
  }

  // On the CPU the kinds run the eager kernels: the same bits, the padding +inf included.
  void cpu_runs_match_the_eager_kernels_exactly() {
    for (DType d : {DType::Float32, DType::BFloat16}) {
      std::vector<Tensor> inputs;
      Graph g = cases_graph(mask_cases(d), &inputs, 2);
      std::vector<Tensor> got, want;
      try {
        got = loopir::run_loops(lowered(g), inputs), want = test::aten_outputs(g, inputs);
      } catch (const Error& e) {
        QFAIL(e.what());
      }
      QCOMPARE(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        QVERIFY(got[i].sizes() == want[i].sizes() && got[i].dtype() == want[i].dtype());
        const Tensor a = got[i].contiguous(), b = want[i].contiguous();
        QVERIFY2(std::memcmp(a.raw_data(), b.raw_data(), size_t(a.numel()) * a.itemsize()) == 0,
                 ("output " + std::to_string(i) + " differs").c_str());
      }
      const Tensor& lse = got[1];  // [B, H, 64]: rows 40.. are +inf
      QCOMPARE(lse.size(2), int64_t(64));
      QVERIFY(std::isinf(lse.to(DType::Float64).contiguous().data<double>()[63]));
    }
  }

  // The plans, emulated on the host as the kernels index memory, give the eager kernels' results:
  // their buffers, layouts, split batch, bias broadcast, padding and zeros are right.
  void plans_compute_the_eager_results_on_the_host() {
    for (DType d : {DType::Float16, DType::Float32}) {
      std::vector<Tensor> inputs;
      Graph g = cases_graph(mask_cases(d), &inputs, 4);
      const loopir::Program p = lowered(g);
      test::PlanEmulator emu(p, inputs);
      for (size_t k = 0; k < p.kernels.size(); ++k) {
        QVERIFY2(p.kernels[k].kind == loopir::KernelKind::Extern, p.kernels[k].output.c_str());  // no copies
        if (p.kernels[k].call->kind == loopir::ExternKind::AttentionForward) {
          auto plan = codegen::cuda::plan_attention_forward_on_gpu(p, k);
          QVERIFY2(plan.ok(), plan.status().message().c_str());
          QCOMPARE(plan->flash.tensor_cores, d != DType::Float32);
          QCOMPARE(plan->flash.batch_inner, int64_t(2));
          emu.forward(*plan);
        } else {
          auto plan = codegen::cuda::plan_attention_backward_extern_on_gpu(p, k);
          QVERIFY2(plan.ok(), plan.status().message().c_str());
          emu.backward(*plan);
        }
      }
      std::vector<Tensor> got;
      for (const std::string& o : p.outputs) got.push_back(emu.tensor(o));
      const std::string diff = compare(got, test::aten_outputs(g, inputs), d);
      QVERIFY2(diff.empty(), (std::string(dtype_name(d)) + ": " + diff).c_str());
    }
  }

  // What the kernels cannot take stays a host extern with the reason, never wrong numbers.
  void unsupported_cases_run_on_the_host() {
    struct Refused {
      Case c;
      size_t host;
      std::string why;
    };
    Case gqa{"gqa", DType::Float16, Mask::None}, bias_causal{"bias_causal", DType::Float16, Mask::Bias11},
        grad_bias{"grad_bias", DType::Float16, Mask::Bias11};
    gqa.gqa = true, bias_causal.bias_causal = true, grad_bias.grad_bias = true;
    const std::vector<Refused> refused = {
        {gqa, 2, "grouped-query attention (2 query heads, 1 key/value heads)"},
        {bias_causal, 2, "an attention bias together with is_causal"},
        {grad_bias, 1, "the attention bias's gradient"},
    };
    for (const Refused& r : refused) {
      std::vector<Tensor> inputs;
      Graph g = cases_graph({r.c}, &inputs, 1);
      CudaCompileOptions o;
      o.emit_only = true, o.keep_text = true;
      auto compiled = CudaCompiledGraph::compile(g, o);
      QVERIFY2(compiled.ok(), compiled.status().message().c_str());
      const std::string& src = test::cuda_stage(**compiled, "cuda_source");
      QVERIFY2((*compiled)->stats().host_externs == r.host, (r.c.name + ": " + std::to_string((*compiled)->stats().host_externs)).c_str());
      QVERIFY2(has(src, "runs on the host: " + r.why), (r.c.name + "\n" + src).c_str());
      // The host path computes the eager kernels' numbers.
      const std::vector<Tensor> got = loopir::run_loops(lowered(g), inputs), want = test::aten_outputs(g, inputs);
      QVERIFY2(test::compare_outputs({got[0], got[4], got[5], got[6]}, {want[0], want[4], want[5], want[6]}, 0).empty(),
               r.c.name.c_str());
    }
  }

  void float16_compiles_for_the_device() {
    KILN_NEEDS_NVRTC();
    compiles_on_the_device(mask_cases(DType::Float16));
  }
  void bfloat16_compiles_for_the_device() {
    KILN_NEEDS_NVRTC();
    compiles_on_the_device(mask_cases(DType::BFloat16));
  }
  void float32_compiles_for_the_device() {
    KILN_NEEDS_NVRTC();
    compiles_on_the_device(mask_cases(DType::Float32));
  }

  void float16_matches_eager_on_the_gpu() {
    KILN_NEEDS_GPU();
    matches_eager_on_the_gpu(mask_cases(DType::Float16), DType::Float16);
  }
  void bfloat16_matches_eager_on_the_gpu() {
    KILN_NEEDS_GPU();
    matches_eager_on_the_gpu(mask_cases(DType::BFloat16), DType::BFloat16);
  }
  void float32_matches_eager_on_the_gpu() {
    KILN_NEEDS_GPU();
    matches_eager_on_the_gpu(mask_cases(DType::Float32), DType::Float32);
  }
};

QTEST_MAIN(TestCudaAttentionTraining)
#include "test_cuda_attention_training.moc"
