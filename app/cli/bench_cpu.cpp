// `kiln-cli bench cpu`: the graphs of ../shared/reference/perf/perf_cpu.jsonl,
// at the same sizes, compiled by the CPU code generator (CompiledGraph) and
// run beside the same ATen graph on Kiln's eager kernels (run_aten_graph),
// all interleaved in one run so that noise hits every row alike.
//
//   sin_cos          sin(x) + cos(x), x float32[8M]            (GFLOP/s counts sin, cos, add: 3 per element)
//   pointwise_chain  ((x*2+1).relu()*y - 0.5).sigmoid()*x, x, y float32[8M] (7 pointwise ops)
//   softmax          exp(x - amax(x)) / sum(exp(...)) over the last dim of float32[2048, 2048]
//   layer_norm       (x - mean) * rsqrt(var + 1e-5) * w + b over the last dim of float32[2048, 2048]
//                    (mean, biased var as mean of squares of x - mean, as ATen decomposes it)
//   mm_relu          relu(mm(a, b) + 1), a, b float32[512, 512]
//   mm_relu_1024     the same at float32[1024, 1024]
//
// GB/s: bytes the ideal fused kernel reads and writes (each input once, each
// output once) over the compiled time. The ceiling: a parallel memcpy moving
// the same number of bytes (half read, half written) on the same threads in
// the same run; ratio_to_ceiling is its time over the compiled time. The mm
// rows are compute-bound: their ceiling is a bare sgemm of the same size on the
// library that runs the graph's GEMM (gemm::float_backend(), named in the row).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>

#include "app/cli/bench_util.h"
#include "app/cli/commands.h"
#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/emitter.h"
#include "compiler/runtime/compiled_graph.h"
#include "core/ops/gemm.h"
#include "core/tensor/parallel.h"
#include "core/util/status.h"
#include "core/util/output_text.h"

namespace kiln::cli {

int run_cpu_bench(int reps, int threads, const std::string& reference, bool json);

namespace {

using pipeline::GraphEmitter;
using pipeline::Var;
using Clock = std::chrono::steady_clock;

struct Case {
  std::string name, reference_graph;
  Graph graph;
  std::vector<Tensor> inputs;
  double bytes = 0;  // the ideal fused kernel's reads plus writes
  double flops = 0;  // counted for sin_cos only
  int64_t gemm = 0;  // the mm rows: n of the n x n x n product
};

Case sin_cos() {
  Case c{"sin_cos", "seed_sin_cos_8M", {}, {random_tensor({int64_t(8) << 20}, 1)}, 0, 0, false};
  GraphEmitter e(c.graph);
  Var x = e.placeholder("x", c.inputs[0]);
  e.output({e.call1("aten::add.Tensor", {e.call1("aten::sin.default", {x}), e.call1("aten::cos.default", {x})})});
  c.bytes = 2.0 * 4 * double(c.inputs[0].numel());
  c.flops = 3.0 * double(c.inputs[0].numel());
  return c;
}

Case pointwise_chain() {
  const int64_t n = int64_t(8) << 20;
  Case c{"pointwise_chain", "pointwise_chain_8M", {}, {random_tensor({n}, 2), random_tensor({n}, 3)}, 0, 0, false};
  GraphEmitter e(c.graph);
  Var x = e.placeholder("x", c.inputs[0]), y = e.placeholder("y", c.inputs[1]);
  Var v = e.call1("aten::add.Scalar", {e.call1("aten::mul.Scalar", {x, 2.0}), 1.0});
  v = e.call1("aten::mul.Tensor", {e.call1("aten::relu.default", {v}), y});
  v = e.call1("aten::sigmoid.default", {e.call1("aten::sub.Scalar", {v, 0.5})});
  e.output({e.call1("aten::mul.Tensor", {v, x})});
  c.bytes = 3.0 * 4 * double(n);
  return c;
}

Case softmax() {
  Case c{"softmax", "softmax_2048x2048", {}, {random_tensor({2048, 2048}, 4)}, 0, 0, false};
  GraphEmitter e(c.graph);
  Var x = e.placeholder("x", c.inputs[0]);
  Var m = e.call1("aten::amax.default", {x, std::vector<int64_t>{-1}, true});
  Var ex = e.call1("aten::exp.default", {e.call1("aten::sub.Tensor", {x, m})});
  Var s = e.call1("aten::sum.dim_IntList", {ex, std::vector<int64_t>{-1}, true});
  e.output({e.call1("aten::div.Tensor", {ex, s})});
  c.bytes = 2.0 * 4 * double(c.inputs[0].numel());
  return c;
}

Case layer_norm() {
  Case c{"layer_norm", "layernorm_2048x2048", {},
         {random_tensor({2048, 2048}, 5), random_tensor({2048}, 6), random_tensor({2048}, 7)}, 0, 0, false};
  GraphEmitter e(c.graph);
  Var x = e.placeholder("x", c.inputs[0]), w = e.placeholder("weight", c.inputs[1]), b = e.placeholder("bias", c.inputs[2]);
  const std::vector<int64_t> last{-1};
  Var mean = e.call1("aten::mean.dim", {x, last, true});
  Var xc = e.call1("aten::sub.Tensor", {x, mean});
  Var var = e.call1("aten::mean.dim", {e.call1("aten::mul.Tensor", {xc, xc}), last, true});
  Var rstd = e.call1("aten::rsqrt.default", {e.call1("aten::add.Scalar", {var, 1e-5})});
  Var y = e.call1("aten::mul.Tensor", {e.call1("aten::mul.Tensor", {xc, rstd}), w});
  e.output({e.call1("aten::add.Tensor", {y, b})});
  c.bytes = 4.0 * (2 * double(c.inputs[0].numel()) + 2 * 2048);
  return c;
}

Case mm_relu(int64_t n) {
  std::string size = std::to_string(n);
  Case c{n == 512 ? "mm_relu" : "mm_relu_" + size, "mm_relu_" + size, {},
         {random_tensor({n, n}, 8), random_tensor({n, n}, 9)}, 0, 0, n};
  GraphEmitter e(c.graph);
  Var a = e.placeholder("a", c.inputs[0]), b = e.placeholder("b", c.inputs[1]);
  Var mm = e.call1("aten::mm.default", {a, b});
  e.output({e.call1("aten::relu.default", {e.call1("aten::add.Scalar", {mm, 1.0})})});
  c.bytes = 3.0 * 4 * double(n * n);
  c.flops = 2.0 * double(n * n * n);
  return c;
}

// The reference rows of perf_cpu.jsonl for this thread count, by graph name.
std::map<std::string, nlohmann::json> reference_rows(const std::string& dir, int threads) {
  std::map<std::string, nlohmann::json> rows;
  std::ifstream in(dir + "/perf/perf_cpu.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("threads", 0) == threads) rows[j.value("graph", "")] = j;
  }
  return rows;
}

// Moves `bytes` (half read, half written) with memcpy over the thread pool.
struct CopyCeiling {
  std::vector<char> src, dst;
  explicit CopyCeiling(double bytes) : src(size_t(bytes / 2), 1), dst(size_t(bytes / 2), 0) {}
  void run() {
    const int64_t n = int64_t(src.size()), chunk = int64_t(1) << 16;
    parallel_for(0, (n + chunk - 1) / chunk, 1, [&](int64_t b, int64_t e) {
      int64_t lo = b * chunk, hi = std::min(n, e * chunk);
      std::memcpy(dst.data() + lo, src.data() + lo, size_t(hi - lo));
    });
  }
};

struct Measured {
  std::string error;
  double compiled_ms = 0, eager_ms = 0, ceiling_ms = 0, compile_ms = 0;
};

Measured measure(Case& c, int reps) {
  Measured m;
  runtime::CompileOptions o;
  o.use_cache = false;
  o.inject_bug = "none";
  auto t0 = Clock::now();
  auto compiled = runtime::CompiledGraph::compile(c.graph, o);
  m.compile_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (!compiled) {
    m.error = compiled.status().message();
    return m;
  }
  std::vector<Value> eager_in(c.inputs.begin(), c.inputs.end());
  CopyCeiling copy(c.bytes);
  const int64_t n = c.gemm;
  std::vector<float> gemm_out(size_t(n * n));
  std::function<void()> ceiling = [&] { copy.run(); };
  if (n > 0)
    ceiling = [&] {
      gemm::sync_threads();
      const float* a = c.inputs[0].data<float>();
      const float* b = c.inputs[1].data<float>();
      gemm::gemm<float>(n, n, n, 1.f, {a, n, 1}, {b, n, 1}, 0.f, gemm_out.data(), n);
    };
  auto run_compiled = [&] {
    auto r = (*compiled)->run(c.inputs);
    if (!r) throw Error("bench cpu: " + c.name + ": " + r.status().message());
  };
  auto run_eager = [&] {
    auto r = pipeline::run_aten_graph(c.graph, eager_in);
    if (!r) throw Error("bench cpu: " + c.name + " eager: " + r.status().message());
  };
  std::vector<double> compiled_ms, eager_ms, ceiling_ms;
  for (int rep = -2; rep < reps; ++rep) {  // two warm-up rounds: page in buffers, JIT'd code, thread pool
    double a = time_ms(run_compiled), b = time_ms(run_eager), d = time_ms(ceiling);
    if (rep < 0) continue;
    compiled_ms.push_back(a), eager_ms.push_back(b), ceiling_ms.push_back(d);
  }
  m.compiled_ms = median(compiled_ms);
  m.eager_ms = median(eager_ms);
  m.ceiling_ms = median(ceiling_ms);
  return m;
}

}  // namespace

int run_cpu_bench(int reps, int threads, const std::string& reference, bool json) {
  if (reps == 0) reps = 11;
  if (threads > 0) set_num_threads(threads);
  auto refs = reference_rows(reference, num_threads());
  std::vector<Case> cases;
  cases.push_back(sin_cos());
  cases.push_back(pointwise_chain());
  cases.push_back(softmax());
  cases.push_back(layer_norm());
  cases.push_back(mm_relu(512));
  cases.push_back(mm_relu(1024));
  const std::string sgemm = std::string(gemm::backend_name(gemm::float_backend())) + "_sgemm";
  if (!json)
    std::printf("CPU code generator, %d threads, median of %d (ref: PyTorch reference run, perf_cpu.jsonl)\n"
                "GEMM: %s\nParallel loops: %s\n"
                "%-16s %9s %9s %8s %8s %8s %9s %9s %9s  %s\n",
                num_threads(), reps, gemm::describe().c_str(), parallel_backend_name(), "name", "ms", "eager_ms", "speedup", "GB/s", "ceiling", "GFLOP/s", "ref_ind", "ref_eag",
                "compile");
  nlohmann::json rows = nlohmann::json::array();
  double copy_gbps = 0;
  for (Case& c : cases) {
    Measured m;
    try {
      m = measure(c, reps);
    } catch (const Error& e) {  // a graph the runtime cannot run yet (extern kernels) is a row, not the end
      m.error = e.what();
    }
    const nlohmann::json ref = refs.count(c.reference_graph) ? refs[c.reference_graph] : nlohmann::json::object();
    nlohmann::json row = {{"name", c.name}};
    if (!ref.empty()) row["reference"] = {{"graph", c.reference_graph}, {"inductor_ms", ref.value("inductor_ms", 0.0)},
                                          {"eager_ms", ref.value("eager_ms", 0.0)}, {"threads", ref.value("threads", 0)}};
    if (!m.error.empty()) {
      row["error"] = m.error;
      row["ms"] = nullptr;  // every row has ms (CLI.md); null: not measured
      if (json) rows.push_back(row);
      else std::printf("%-16s failed: %s\n", c.name.c_str(), m.error.c_str());
      continue;
    }
    const double gbps = c.bytes / (m.compiled_ms * 1e6);
    const double ratio = m.ceiling_ms / m.compiled_ms;
    if (!c.gemm) copy_gbps = std::max(copy_gbps, c.bytes / (m.ceiling_ms * 1e6));
    row.update({{"ms", m.compiled_ms}, {"eager_ms", m.eager_ms}, {"speedup_vs_eager", m.eager_ms / m.compiled_ms},
                {"GBps", gbps}, {"ratio_to_ceiling", ratio}, {"ceiling", c.gemm ? sgemm : "memcpy"},
                {"ceiling_ms", m.ceiling_ms}, {"compile_ms", m.compile_ms}, {"bytes", c.bytes}});
    if (c.flops > 0) row["GFLOPs"] = c.flops / (m.compiled_ms * 1e6);
    if (json) {
      rows.push_back(row);
      continue;
    }
    char flops[32] = "-";
    if (c.flops > 0) std::snprintf(flops, sizeof flops, "%.2f", c.flops / (m.compiled_ms * 1e6));
    char ref_ind[32] = "-", ref_eag[32] = "-";
    if (!ref.empty()) {
      std::snprintf(ref_ind, sizeof ref_ind, "%.3f", ref.value("inductor_ms", 0.0));
      std::snprintf(ref_eag, sizeof ref_eag, "%.3f", ref.value("eager_ms", 0.0));
    }
    std::printf("%-16s %9.3f %9.3f %7.2fx %8.2f %7.0f%% %9s %9s %9s  %.0f ms%s\n", c.name.c_str(), m.compiled_ms,
                m.eager_ms, m.eager_ms / m.compiled_ms, gbps, 100 * ratio, flops, ref_ind, ref_eag, m.compile_ms,
                c.gemm ? ("  (ceiling: " + sgemm + ")").c_str() : "");
  }
  if (json) {
    nlohmann::json doc = {{"rows", rows},
                          {"ceiling", {{"name", "memcpy"}, {"GBps", copy_gbps}, {"gemm", sgemm}, {"gemm_libraries", gemm::describe()}, {"parallel", parallel_backend_name()}}},
                          {"threads", num_threads()},
                          {"reps", reps}};
    std::cout << kiln::json_text(doc, 1) << "\n";
  } else {
    std::printf("ceiling: parallel memcpy of each row's bytes, up to %.2f GB/s; mm rows against a bare %s of the same size\n",
                copy_gbps, sgemm.c_str());
  }
  return kExitOk;
}

}  // namespace kiln::cli
