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
#include <string>
#include <vector>

#include "compiler/decomp/decompose.h"
#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/runtime/compiled_graph.h"
#include "compiler/runtime/cuda_graph.h"
#include "core/graph/printer.h"
#include "core/tensor/tensor_repr.h"
#include "attention_graphs.h"
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
};

inline std::string fuzz_stage_text(const std::vector<runtime::CodegenStage>& stages, const std::string& name) {
  for (const runtime::CodegenStage& s : stages)
    if (s.name == name) return s.text;
  return "(no stage " + name + ")";
}

// The graph families: "random" (random_graph.h), "split" (few long rows, random_split_graph.h),
// "attention" (attention_graphs.h's random forms of softmax(q @ k^T) @ v),
// "gemm-epilogue" (mm and its bias / activation / residual tail, random_gemm_epilogue_graph.h),
// "conv" (a convolution and its tail, random_conv_graph.h; on the GPU with
// conv_tf32 on, so float32 is held to 1e-2, and KILN_CONV picks the kernel).
inline bool fuzz_family_known(const std::string& family) {
  return family == "random" || family == "split" || family == "attention" || family == "gemm-epilogue" ||
         family == "conv";
}

// `backend`: "kiln" (the CPU code generator) or "kiln-cuda" (the GPU one; needs a GPU).
inline FuzzResult fuzz_one(uint32_t seed, const std::string& backend = "kiln", const std::string& inject_bug = "none",
                           const std::string& family = "random") {
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
  Expected<std::vector<Tensor>> got = Status::error("no backend " + backend);
  std::function<std::string()> explain;  // the code, printed only for a mismatch
  if (backend == "kiln-cuda") {
    runtime::CudaCompileOptions o;
    o.use_cache = false;
    o.inject_bug = inject_bug;
    // PyTorch's default for convolutions, and what the implicit-GEMM kernel needs for float32.
    o.conv_tf32 = family == "conv";
    auto compiled = runtime::CudaCompiledGraph::compile(*decomposed, o);
    if (!compiled) return fail(decomposed_text + "compile: " + compiled.status().message());
    got = (*compiled)->run(inputs);
    explain = [&] {
      o.keep_text = true;
      o.compile_only = true;
      auto again = runtime::CudaCompiledGraph::compile(*decomposed, o);
      return again ? "post-fusion IR:\n" + fuzz_stage_text((*again)->stages(), "ir_post_fusion") + "CUDA:\n" +
                         fuzz_stage_text((*again)->stages(), "cuda_source")
                   : again.status().message();
    };
  } else {
    runtime::CompileOptions o;
    o.use_cache = false;
    o.inject_bug = inject_bug;
    auto compiled = runtime::CompiledGraph::compile(*decomposed, o);
    if (!compiled) return fail(decomposed_text + "compile: " + compiled.status().message());
    got = (*compiled)->run(inputs);
    explain = [&] {
      o.keep_text = true;
      auto again = runtime::CompiledGraph::compile(*decomposed, o);
      return again ? "post-fusion IR:\n" + fuzz_stage_text((*again)->stages(), "ir_post_fusion") : again.status().message();
    };
  }
  if (!got) return fail("run: " + got.status().message());
  double tol = fuzz_tolerance_of(g);
  if (backend == "kiln-cuda" && family == "conv" && tol > 1e-9) tol = std::max(tol, 1e-2);  // TF32 products
  std::string d = fuzz_compare(*got, want, tol);
  if (d.empty()) return r;
  return fail(decomposed_text + explain() + "\nmismatch: " + d);
}

}  // namespace kiln::test
