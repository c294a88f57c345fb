#pragma once
// One code generator fuzz case, without Qt, so that the same check runs in
// test_codegen_fuzz (CPU, in CI) and in tools/codegen_fuzz.cpp (the CPU or the
// GPU backend, on the lent GPU machine, which has no Qt): a random graph
// (random_graph.h) is decomposed, compiled and run, and its outputs compared
// with the ATen interpreter's (the eager kernels) on the original graph.
//
// Tolerance: |got - want| <= tol * max(1, |want|), NaN equal to NaN, with tol
// from the least precise floating dtype anywhere in the graph (inputs and
// every node), because the generated code may keep a low-precision
// intermediate in float where eager rounds it: float64 1e-9, float32 1e-4
// (libm and vector libm differ by a few ulp, sums are reassociated, and
// mul+add may contract to an FMA), float16 1e-2, bfloat16 4e-2 (a few
// roundings of 2^-8). Integer and bool outputs must be equal; the generator
// makes them only from values that are exact in both (see random_graph.h).
#include <cmath>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "compiler/aot/joint.h"
#include "compiler/decomp/decompose.h"
#include "compiler/passes/fuse_attention.h"
#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/pipeline.h"
#include "compiler/pipeline/training_split.h"
#include "compiler/runtime/compiled_graph.h"
#include "compiler/runtime/cuda_graph.h"
#include "core/graph/printer.h"
#include "core/tensor/tensor_repr.h"
#include "attention_graphs.h"
#include "attention_train_graphs.h"
#include "random_conv_graph.h"
#include "random_gemm_epilogue_graph.h"
#include "random_graph.h"
#include "random_split_graph.h"

namespace kiln::test {

inline double fuzz_tolerance_of(const Graph& g) {
  double tol = 0;
  for (const Node& n : g.nodes) {
    if (!n.meta.val.is_tensor()) continue;
    const TensorMeta* m = &n.meta.val.tensor;
    double t = m->dtype == "float64"    ? 1e-9
               : m->dtype == "float32"  ? 1e-4
               : m->dtype == "float16"  ? 1e-2
               : m->dtype == "bfloat16" ? 4e-2
                                        : 0;
    tol = std::max(tol, t);
  }
  return tol;
}

inline std::vector<double> fuzz_values(const Tensor& t) {
  Tensor d = t.to(DType::Float64).contiguous();
  return std::vector<double>(d.data<double>(), d.data<double>() + d.numel());
}

// "" when every output agrees (integers and bools exactly; NaN equals NaN and
// an infinity itself), else what differs.
inline std::string fuzz_compare(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double tol) {
  if (got.size() != want.size()) return "output counts differ";
  for (size_t i = 0; i < got.size(); ++i) {
    const std::string which = "output " + std::to_string(i) + " (" + std::string(dtype_name(want[i].dtype())) + ")";
    if (got[i].sizes() != want[i].sizes()) return which + ": sizes " + shape_str(got[i].sizes()) + " vs " + shape_str(want[i].sizes());
    if (got[i].dtype() != want[i].dtype()) return which + ": dtype " + std::string(dtype_name(got[i].dtype()));
    const double t = is_floating(want[i].dtype()) ? tol : 0.0;
    std::vector<double> a = fuzz_values(got[i]), b = fuzz_values(want[i]);
    for (size_t k = 0; k < a.size(); ++k) {
      if (a[k] == b[k] || (std::isnan(a[k]) && std::isnan(b[k]))) continue;
      if (std::fabs(a[k] - b[k]) <= t * std::max(1.0, std::fabs(b[k]))) continue;
      return which + " element " + std::to_string(k) + ": compiled " + std::to_string(a[k]) + ", eager " + std::to_string(b[k]);
    }
  }
  return {};
}

enum class FuzzOutcome { Ok, EagerRejected, Failed };

struct FuzzResult {
  FuzzOutcome outcome = FuzzOutcome::Ok;
  std::string report;
  size_t nodes = 0;
  // attention-train: 1 when fuse-attention fused the form, 0 when it left it unfused; -1 for other families.
  int attention_fused = -1;
};

inline std::string fuzz_stage_text(const std::vector<runtime::CodegenStage>& stages, const std::string& name) {
  for (const runtime::CodegenStage& s : stages)
    if (s.name == name) return s.text;
  return "(no stage " + name + ")";
}

// ---------------------------------------------------------------- attention-train
// Hand-written attention in training (attention_train_graphs.h): the forward
// as is (unfused) and through fuse_attention_for_gpu_training (fused: what a
// region training on the GPU runs), each made a joint graph (build_joint,
// random tangents). The pass must fuse exactly the forms it is documented to
// (a silent non-match is a failure), with the expected is_causal and bias; the
// fused joint graph runs through the backend (kiln: compile_to_cpu, which
// decomposes the fused forward and runs its backward as the extern kernel;
// kiln-cuda: compile_to_cuda, the flash kernels), and on the eager interpreter,
// and both are held to the UNFUSED joint graph run by the interpreter in
// float64 (every floating input, cast and node widened): forward outputs and
// gradients, None where it has None, sizes and dtypes as the unfused joint
// graph in the form's dtype gives them. A form left unfused is the unfused
// joint graph itself: its backend run is held, as the other families are, to
// the interpreter's run of it in its own dtype (its 16-bit roundings of the
// scores, probabilities and their gradients are eager's too, and the float64
// values can be a few bfloat16 ulps away: a softmax over dim 2 of three rows).
//
// Tolerance, |got - want| <= tol * max(1, |want|) per element:
//   float32 1e-4: the fused kernels compute in float32; a row's softmax and
//     its backward's dS = P * (dP - rowsum(dO * O)) are sums of up to 80 terms
//     of O(1), a few float32 ulps each;
//   float16 2e-2 and bfloat16 5e-2: the inputs are exact in float64 but every
//     tensor the graph stores (scores and probabilities when unfused, the
//     output, dO, and dq, dk, dv, which are sums over L or S of products of
//     rounded factors) is rounded to 2^-11 (float16) / 2^-8 (bfloat16)
//     relative; a gradient element of magnitude ~1 made of ~80 such terms
//     drifts by a few percent of the ulp times sqrt(terms). The bounds are the
//     ones the attention forward tolerates (1e-2 / 4e-2) with room for the
//     backward's second rounding, as test_pass_fuse_attention's 16-bit joint
//     check (2e-2) has.
// Measured on the CPU backend, seeds 1-300: at most 6.1e-7 (float32), 4.0e-3
// (float16) and 9.6e-3 (bfloat16) of max(1, |x|), so 160x, 5x and 5x below.
// A graph compiled by `backend` (kiln-cuda: the GPU, else the CPU) and run on
// `inputs`. `passes`: through the graph passes first (compile_to_cuda /
// compile_to_cpu), else compiled as given (a decomposed graph). `compile_error`
// is set when it did not compile; `explain()` gives the code to print for a
// mismatch (the post-fusion loop IR, and the CUDA source).
struct FuzzBackendRun {
  Expected<std::vector<Tensor>> got = Status::error("not run");
  std::string compile_error;
  std::function<std::string()> explain;
};

// Compiles with `o` through `compile` and runs; the CUDA source joins the loop IR in explain().
template <class Options, class Compile>
FuzzBackendRun fuzz_compile_and_run(Options o, Compile compile, const std::vector<Tensor>& inputs) {
  constexpr bool cuda = std::is_same_v<Options, runtime::CudaCompileOptions>;
  FuzzBackendRun r;
  auto compiled = compile(o);
  if (!compiled) {
    r.compile_error = compiled.status().message();
    return r;
  }
  r.got = (*compiled)->run(inputs);
  r.explain = [compile, o]() mutable {
    o.keep_text = true;
    if constexpr (cuda) o.compile_only = true;
    auto again = compile(o);
    if (!again) return again.status().message();
    std::string text = "post-fusion IR:\n" + fuzz_stage_text((*again)->stages(), "ir_post_fusion");
    if constexpr (cuda) text += "CUDA:\n" + fuzz_stage_text((*again)->stages(), "cuda_source");
    return text;
  };
  return r;
}

inline FuzzBackendRun fuzz_run_backend(const Graph& g, const std::string& backend, const std::string& inject_bug,
                                       const std::vector<Tensor>& inputs, bool passes, bool conv_tf32 = false) {
  if (backend == "kiln-cuda") {
    runtime::CudaCompileOptions o;
    o.use_cache = false;
    o.inject_bug = inject_bug;
    o.conv_tf32 = conv_tf32;
    return fuzz_compile_and_run(o, [&g, passes](const runtime::CudaCompileOptions& opts) {
      return passes ? pipeline::compile_to_cuda(g, opts) : runtime::CudaCompiledGraph::compile(g, opts);
    }, inputs);
  }
  runtime::CompileOptions o;
  o.use_cache = false;
  o.inject_bug = inject_bug;
  return fuzz_compile_and_run(o, [&g, passes](const runtime::CompileOptions& opts) {
    return passes ? pipeline::compile_to_cpu(g, opts) : runtime::CompiledGraph::compile(g, opts);
  }, inputs);
}

inline double attention_train_tolerance(DType d) {
  return d == DType::Float16 ? 2e-2 : d == DType::BFloat16 ? 5e-2 : 1e-4;
}

inline size_t fuzz_count_target(const Graph& g, const std::string& target) {
  size_t n = 0;
  for (const Node& x : g.nodes) n += x.target == target;
  return n;
}

inline const Node* fuzz_first_target(const Graph& g, const std::string& target) {
  for (const Node& x : g.nodes)
    if (x.target == target) return &x;
  return nullptr;
}

// "" when `got` has the unfused joint graph's structure (`shape`: the same count,
// None where it has None, the same sizes and dtype) and `want64`'s values within
// tol (the float64 reference, or `shape` itself for a form left unfused).
inline std::string attention_train_compare(const std::vector<Tensor>& got, const std::vector<Value>& shape,
                                           const std::vector<Value>& want64, size_t num_forward, double tol,
                                           const std::string& ref_name) {
  if (got.size() != shape.size() || want64.size() != shape.size())
    return "output counts differ: " + std::to_string(got.size()) + " vs " + std::to_string(shape.size()) + " (float64 " +
           std::to_string(want64.size()) + ")";
  for (size_t i = 0; i < got.size(); ++i) {
    const std::string which = (i < num_forward ? "forward output " + std::to_string(i)
                                               : "gradient of primal " + std::to_string(i - num_forward + 1)) + ": ";
    const bool none = !shape[i].is_tensor();
    if (none != !got[i].defined() || none != !want64[i].is_tensor())
      return which + "None on one side (unfused " + (none ? "None" : "a tensor") + ", got " +
             (got[i].defined() ? "a tensor" : "None") + ")";
    if (none) continue;
    const Tensor want = shape[i].to_tensor(), ref = want64[i].to_tensor();
    if (got[i].sizes() != want.sizes() || ref.sizes() != want.sizes())
      return which + "sizes " + shape_str(got[i].sizes()) + " vs " + shape_str(want.sizes());
    if (got[i].dtype() != want.dtype())
      return which + "dtype " + std::string(dtype_name(got[i].dtype())) + " vs " + std::string(dtype_name(want.dtype()));
    std::vector<double> a = fuzz_values(got[i]), b = fuzz_values(ref);
    for (size_t k = 0; k < a.size(); ++k) {
      if (a[k] == b[k] || (std::isnan(a[k]) && std::isnan(b[k]))) continue;
      if (std::fabs(a[k] - b[k]) <= tol * std::max(1.0, std::fabs(b[k]))) continue;
      return which + "element " + std::to_string(k) + ": got " + std::to_string(a[k]) + ", " + ref_name + " " +
             std::to_string(b[k]) + " (tolerance " + std::to_string(tol) + " of max(1, |x|))";
    }
  }
  return {};
}

inline FuzzResult fuzz_attention_train(uint32_t seed, const std::string& backend, const std::string& inject_bug) {
  FuzzResult r;
  const AttentionTrainForm form = random_attention_train_form(seed);
  AttentionTrainCase c = attention_train_case(form, seed);
  r.nodes = c.graph.size();
  std::string header = "seed " + std::to_string(seed) + " (family attention-train): " + form.describe() + "\n" +
                       print_graph_module(c.graph);
  auto fail = [&](std::string why) {
    r.outcome = FuzzOutcome::Failed;
    r.report = header + why;
    return r;
  };
  // Eager must take the forward, else the generator made a bad graph.
  {
    std::vector<Value> in(c.inputs.begin(), c.inputs.end());
    auto fwd = pipeline::run_aten_graph(c.graph, in);
    if (!fwd) {
      r.outcome = FuzzOutcome::EagerRejected;
      r.report = header + "eager: " + fwd.status().message();
      return r;
    }
  }
  aot::JointOptions jo;
  jo.requires_grad = c.requires_grad;
  auto unfused = aot::build_joint(c.graph, jo);
  if (!unfused) return fail("joint graph of the unfused forward: " + unfused.status().message());
  auto unfused64 = aot::build_joint(c.graph64, jo);
  if (!unfused64) return fail("joint graph of the float64 forward: " + unfused64.status().message());

  // The fused forward, as a region training on the GPU gets it.
  const char* kFwd = "aten::_scaled_dot_product_efficient_attention.default";
  const char* kBwd = "aten::_scaled_dot_product_efficient_attention_backward.default";
  std::string summary;
  std::optional<Graph> fused = pipeline::fuse_attention_for_gpu_training(c.graph, &summary);
  r.attention_fused = fused ? 1 : 0;
  if (form.fusable() && !fused) {
    // Tell a non-match from a decomposition that failed after the rewrite.
    Graph again = c.graph;
    pipeline::PassResult pr = pipeline::fuse_attention(again, pipeline::PassContext{});
    if (!pr.changed) return fail("fuse-attention did not match a form it should fuse");
    auto d = decomp::decompose(again, pipeline::cuda_whole_ops());
    return fail("fuse-attention matched (" + pr.summary + ") but fuse_attention_for_gpu_training gave nothing: " +
                (d ? "an empty result" : "decompose: " + d.status().message()) + "\nafter the pass:\n" +
                print_graph_module(again));
  }
  if (!form.fusable() && fused)
    return fail("fuse-attention fused a form it must leave unfused (" + summary + "):\n" + print_graph_module(*fused));
  if (fused) {
    header += "fused (" + summary + "):\n" + print_graph_module(*fused);
    if (const size_t ops = fuzz_count_target(*fused, kFwd); ops != 1)
      return fail("the fused graph has " + std::to_string(ops) + " fused ops, not 1");
    const Node* op = fuzz_first_target(*fused, kFwd);
    if (op->args.size() < 7 || op->args[6].kind != Arg::Kind::Bool) return fail("the fused op has no is_causal argument");
    if (op->args[6].b != form.causal())
      return fail(std::string("the fused op's is_causal is ") + (op->args[6].b ? "true" : "false") + ", expected " +
                  (form.causal() ? "true" : "false"));
    if (op->args[3].is_none() == form.has_bias())
      return fail(std::string("the fused op's bias is ") + (op->args[3].is_none() ? "None" : "given") + ", expected " +
                  (form.has_bias() ? "a bias" : "None"));
  }
  auto joint = aot::build_joint(fused ? *fused : c.graph, jo);
  if (!joint) return fail("joint graph of the fused forward: " + joint.status().message());
  if (fused && (fuzz_count_target(joint->graph, kFwd) != 1 || fuzz_count_target(joint->graph, kBwd) != 1))
    return fail("the fused joint graph does not call the fused forward and its backward once each:\n" +
                print_graph_module(joint->graph));
  if (!fused && (fuzz_count_target(joint->graph, kFwd) || fuzz_count_target(joint->graph, kBwd)))
    return fail("the unfused joint graph calls the fused op");
  if (joint->num_tangents != unfused->num_tangents || joint->num_forward_outputs != unfused->num_forward_outputs ||
      joint->num_primals != unfused->num_primals || unfused64->num_tangents != unfused->num_tangents)
    return fail("the fused and unfused joint graphs differ in primals, tangents or forward outputs");

  // Joint inputs: primals, then one random tangent per differentiable output (the unfused joint's metas).
  std::mt19937 rng(seed ^ 0x9e3779b9u);
  std::vector<Tensor> in = c.inputs, in64 = c.inputs64;
  for (const Node& n : unfused->graph.nodes) {
    if (n.op != OpKind::Placeholder || n.name.rfind("tangents_", 0) != 0) continue;
    const TensorMeta& m = n.meta.val.tensor;
    std::vector<int64_t> sz;
    for (const SymInt& d : m.sizes) sz.push_back(d.value);
    std::optional<DType> dt = dtype_from_name(m.dtype);
    if (!dt) return fail("tangent " + n.name + " of dtype " + m.dtype);
    Tensor t = random_tensor_of(sz, rng, *dt, -1.f, 1.f);
    in.push_back(t);
    in64.push_back(t.to(DType::Float64));
  }
  if (in.size() != unfused->num_primals + unfused->num_tangents) return fail("could not make the tangents");
  std::vector<Value> vin(in.begin(), in.end()), vin64(in64.begin(), in64.end());
  auto shape = pipeline::run_aten_graph(unfused->graph, vin);
  if (!shape) return fail("eager, the unfused joint graph: " + shape.status().message());
  auto want64 = pipeline::run_aten_graph(unfused64->graph, vin64);
  if (!want64) return fail("eager, the float64 unfused joint graph: " + want64.status().message());
  const double tol = attention_train_tolerance(form.dtype);
  const std::string joint_text = "joint graph run:\n" + print_graph_module(joint->graph);

  const std::vector<Value>& want = fused ? *want64 : *shape;
  const std::string ref_name = fused ? "unfused in float64" : "eager";
  // The fused joint graph on the interpreter: a wrong rewrite shows here, before any code generator.
  if (fused) {
    auto eager_fused = pipeline::run_aten_graph(joint->graph, vin);
    if (!eager_fused) return fail(joint_text + "eager, the fused joint graph: " + eager_fused.status().message());
    std::vector<Tensor> t;
    for (const Value& v : *eager_fused) t.push_back(v.is_tensor() ? v.to_tensor() : Tensor());
    std::string d = attention_train_compare(t, *shape, want, unfused->num_forward_outputs, tol, ref_name);
    if (!d.empty()) return fail(joint_text + "the fused joint graph on eager differs from the unfused one: " + d);
  }

  FuzzBackendRun run = fuzz_run_backend(joint->graph, backend, inject_bug, in, true);
  if (!run.compile_error.empty()) return fail(joint_text + (backend == "kiln-cuda" ? "compile_to_cuda: " : "compile_to_cpu: ") + run.compile_error);
  Expected<std::vector<Tensor>>& got = run.got;
  std::function<std::string()>& explain = run.explain;
  if (!got) return fail(joint_text + "run: " + got.status().message());
  std::string d = attention_train_compare(*got, *shape, want, unfused->num_forward_outputs, tol, ref_name);
  if (d.empty()) return r;
  return fail(joint_text + explain() + "\nmismatch: " + d);
}

// The graph families: "random" (random_graph.h), "split" (few long rows, random_split_graph.h),
// "attention" (attention_graphs.h's random forms of softmax(q @ k^T) @ v),
// "gemm-epilogue" (mm and its bias / activation / residual tail, random_gemm_epilogue_graph.h),
// "conv" (a convolution and its tail, random_conv_graph.h; on the GPU with
// conv_tf32 on, so float32 is held to 1e-2, and KILN_CONV picks the kernel),
// "attention-train" (attention_train_graphs.h: hand-written attention in
// training, fused by fuse-attention, its joint graph against the unfused one's
// in float64; fuzz_attention_train above).
inline bool fuzz_family_known(const std::string& family) {
  return family == "random" || family == "split" || family == "attention" || family == "gemm-epilogue" ||
         family == "conv" || family == "attention-train";
}

// `backend`: "kiln" (the CPU code generator) or "kiln-cuda" (the GPU one; needs a GPU).
inline FuzzResult fuzz_one(uint32_t seed, const std::string& backend = "kiln", const std::string& inject_bug = "none",
                           const std::string& family = "random") {
  if (family == "attention-train") return fuzz_attention_train(seed, backend, inject_bug);
  FuzzResult r;
  std::vector<Tensor> inputs;
  Graph g = family == "split"       ? SplitReductionGraphGenerator(seed).build(&inputs)
            : family == "attention" ? attention_graph(random_attention_form(seed), &inputs, seed)
            : family == "gemm-epilogue" ? GemmEpilogueGraphGenerator(seed).build(&inputs)
            : family == "conv"          ? ConvGraphGenerator(seed).build(&inputs)
                                    : CodegenGraphGenerator(seed).build(&inputs);
  r.nodes = g.size();
  std::vector<Value> in(inputs.begin(), inputs.end());
  auto eager = pipeline::run_aten_graph(g, in);
  if (!eager) {
    r.outcome = FuzzOutcome::EagerRejected;
    r.report = eager.status().message();
    return r;
  }
  std::vector<Tensor> want;
  for (const Value& v : *eager) want.push_back(v.to_tensor());
  std::string header = "seed " + std::to_string(seed) + (family == "random" ? "" : " (family " + family + ")") + "\n" +
                       print_graph_module(g);
  // Small inputs are printed whole: a mismatch often hangs on one value.
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].numel() <= 64) header += "input " + std::to_string(i) + ": " + tensor_repr(inputs[i]) + "\n";
  auto fail = [&](std::string why) {
    r.outcome = FuzzOutcome::Failed;
    r.report = header + why;
    return r;
  };
  auto decomposed = decomp::decompose(g);
  if (!decomposed) return fail("decompose: " + decomposed.status().message());
  const std::string decomposed_text = "decomposed:\n" + print_graph_module(*decomposed);
  // PyTorch's default for convolutions, and what the implicit-GEMM kernel needs for float32.
  FuzzBackendRun run = fuzz_run_backend(*decomposed, backend, inject_bug, inputs, false, family == "conv");
  if (!run.compile_error.empty()) return fail(decomposed_text + "compile: " + run.compile_error);
  Expected<std::vector<Tensor>>& got = run.got;
  std::function<std::string()>& explain = run.explain;
  if (!got) return fail("run: " + got.status().message());
  double tol = fuzz_tolerance_of(g);
  if (backend == "kiln-cuda" && family == "conv" && tol > 1e-9) tol = std::max(tol, 1e-2);  // TF32 products
  std::string d = fuzz_compare(*got, want, tol);
  if (d.empty()) return r;
  return fail(decomposed_text + explain() + "\nmismatch: " + d);
}

}  // namespace kiln::test
