// `kiln-cli bench eager`: eager kernel bandwidth against a memory copy of the
// same size measured in the same run (the ceiling), interleaved so that noise
// hits every row alike; medians are reported.
//
// `kiln-cli bench trace`: bench_trace.cpp.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <cstdlib>
#include <filesystem>
#include <random>

#include <fcntl.h>
#include <unistd.h>

#include "app/cli/bench_trace.h"
#include "app/cli/bench_util.h"
#include "app/cli/commands.h"
#include "core/ops/registry.h"
#include "core/store/workspace.h"
#include "core/tensor/parallel.h"
#include "core/trace/index_codec.h"
#include "core/trace/indexed_open.h"
#include "core/trace/reader.h"
#include "core/trace/synthetic_log.h"
#include "core/util/output_text.h"

namespace kiln::cli {

int run_compile_bench(int reps, bool json);  // bench_compile.cpp
int run_seed_child(const std::string& device);  // bench_compile.cpp
int run_cpu_bench(int reps, int threads, const std::string& reference, bool json);  // bench_cpu.cpp
int run_minify_bench(int reps, int jobs, const std::string& reference, bool json);  // bench_minify.cpp
int run_minify_oracle_bench(const std::string& python, int jobs, const std::string& device, const std::string& only,
                            const std::string& reference, bool json);  // bench_minify_oracle.cpp
int run_scale_bench(int reps, const std::vector<int64_t>& sizes, bool json);  // bench_scale.cpp
int run_gpu_bench(int reps, const std::string& reference, const std::string& only, const std::string& dump_dir,
                  std::vector<int> row_elements, bool profile, bool json);  // bench_gpu.cpp

namespace {

struct Options {
  std::string suite;
  int64_t elements = int64_t(16) << 20;
  int reps = 0;  // 0: the suite's own default
  uint64_t trace_mb = 100;
  std::string reference;
  int threads = 0;
  bool json = false;
  std::string seed_child;  // hidden: bench compile's fresh process for the seed rows
  std::string index_child;  // hidden: bench trace's fresh process indexing one big log
  int ranks = 1000;         // trace: rank files in the folder rows
  uint64_t big_mb = 1024;   // trace: size of the big log
  std::string graph;       // gpu: one graph instead of all
  std::string dump_cuda;   // gpu: write each graph's CUDA source here instead of timing
  std::vector<int> row_elements;  // gpu: launch shapes to try for reductions
  bool profile = false;           // gpu: per-group times of the model rows
  std::vector<int64_t> sizes = {2000, 20000, 200000};  // scale: graph sizes in nodes
  std::string oracle_python;          // minify: real PyTorch as the oracle, persistent workers
  std::string torch_device = "cuda";  // minify --oracle-python: where repro.py runs
};

struct Row {
  std::string name;
  double bytes;  // bytes read plus written
  std::function<void()> run;
  std::vector<double> ms;
};

int run_eager(Options o) {
  if (o.reps == 0) o.reps = 21;
  if (o.threads > 0) set_num_threads(o.threads);
  const int64_t n = o.elements;
  Tensor x = Tensor::empty({n}, DType::Float32), y = Tensor::empty({n}, DType::Float32);
  Tensor dst = Tensor::empty({n}, DType::Float32);
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (int64_t i = 0; i < n; ++i) x.data<float>()[i] = dist(rng), y.data<float>()[i] = dist(rng);
  const double bytes = double(n) * 4;
  auto op = [](const char* name, ValueList args) {
    return [name, args] {
      auto r = call_op(name, args);
      if (!r) throw Error(r.status().message());
    };
  };
  std::vector<Row> rows = {
      {"copy", 2 * bytes, [&] { dst.copy_(x); }, {}},
      {"add", 3 * bytes, op("aten::add.Tensor", {x, y}), {}},
      {"sin", 2 * bytes, op("aten::sin.default", {x}), {}},
      {"sum", bytes, op("aten::sum.default", {x}), {}},
  };
  for (auto& r : rows) r.run();  // warm up: page in buffers, fill the block cache
  for (int rep = 0; rep < o.reps; ++rep)
    for (auto& r : rows) r.ms.push_back(time_ms(r.run));

  double ceiling_gbps = rows[0].bytes / (median(rows[0].ms) * 1e6);
  nlohmann::json out_rows = nlohmann::json::array();
  if (!o.json)
    std::printf("eager kernels, %lld float32 elements, %d threads, median of %d\n%-6s %10s %10s %8s\n",
                (long long)n, num_threads(), o.reps, "name", "ms", "GB/s", "ratio");
  for (auto& r : rows) {
    double ms = median(r.ms);
    double gbps = r.bytes / (ms * 1e6);
    double ratio = gbps / ceiling_gbps;
    if (o.json)
      out_rows.push_back({{"name", r.name}, {"ms", ms}, {"GBps", gbps}, {"ratio_to_ceiling", ratio}});
    else
      std::printf("%-6s %10.3f %10.2f %7.0f%%\n", r.name.c_str(), ms, gbps, 100 * ratio);
  }
  if (o.json) {
    nlohmann::json doc = {{"rows", out_rows},
                          {"ceiling", {{"name", "copy"}, {"GBps", ceiling_gbps}}},
                          {"threads", num_threads()},
                          {"elements", n}};
    std::cout << kiln::json_text(doc, 1) << "\n";
  }
  return kExitOk;
}


// KILN_REFERENCE_DIR, else ../shared/reference (beside the checkout, as CLI.md says).
std::string reference_dir(const Options& o) {
  if (!o.reference.empty()) return o.reference;
  if (const char* env = std::getenv("KILN_REFERENCE_DIR"); env && *env) return env;
  return "../shared/reference";
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("bench", "Benchmarks, as ratios to a ceiling measured in the same run");
  sub->add_option("suite", opts->suite, "which benchmark")->required()->check(CLI::IsMember({"eager", "cpu", "gpu", "trace", "compile", "minify", "scale"}));
  sub->add_option("--elements", opts->elements, "tensor size for the eager suite")->check(CLI::Range(int64_t(1), int64_t(1) << 32));
  sub->add_option("--trace-mb", opts->trace_mb, "log size for the trace suite, in MiB")->check(CLI::Range(uint64_t(1), uint64_t(4096)));
  sub->add_option("--reference", opts->reference, "reference folder (default: KILN_REFERENCE_DIR, else ../shared/reference)");
  sub->add_option("--reps", opts->reps, "timed repetitions (median reported; default 21 for eager and compile, 11 for cpu, 7 for trace, 3 for scale)")->check(CLI::Range(0, 10000));
  sub->add_option("--threads", opts->threads, "threads (default: all hardware threads)")->check(CLI::Range(0, 1024));
  sub->add_flag("--json", opts->json, "print one JSON document");
  sub->add_option("--graph", opts->graph, "gpu: only this graph (sin_cos, softmax, ...); minify --oracle-python: only this case");
  sub->add_option("--dump-cuda", opts->dump_cuda, "gpu: write each graph's CUDA source and fused IR to this folder (no GPU needed)")
      ->check(CLI::ExistingDirectory);
  sub->add_option("--row-elements", opts->row_elements,
                  "gpu: row positions per thread to try for reduction kernels (the fastest is reported; default: the compiler's own choice)")
      ->delimiter(',')
      ->check(CLI::Range(1, 256));
  sub->add_flag("--profile", opts->profile,
               "gpu: also time each kernel and library call of the model rows (CUDA events around each; median of 20)");
  sub->add_option("--sizes", opts->sizes, "scale: graph sizes in nodes, smallest first (default 2000,20000,200000)")
      ->delimiter(',')
      ->check(CLI::Range(int64_t(3), int64_t(10000000)));
  sub->add_option("--oracle-python", opts->oracle_python,
                  "minify: minify with real PyTorch as the oracle, persistent workers started with this Python (--threads: workers, default 4)");
  sub->add_option("--torch-device", opts->torch_device, "minify --oracle-python: device of the repro's inputs (default cuda)");
  sub->add_option("--seed-child", opts->seed_child, "(internal) one seed capture-to-runnable, as JSON")->group("");
  sub->add_option("--index-child", opts->index_child, "(internal) index one log, print time and peak memory as JSON")->group("");
  sub->add_option("--ranks", opts->ranks, "trace: rank files in the multi-rank folder (default 1000; 0 leaves the rows out)")
      ->check(CLI::Range(0, 100000));
  sub->add_option("--big-mb", opts->big_mb, "trace: size of the big log in MiB, indexed in a fresh process (default 1024; 0 leaves it out)")
      ->check(CLI::Range(uint64_t(0), uint64_t(65536)));
  sub->callback([opts, &exit_code] {
    try {
      exit_code = !opts->seed_child.empty() ? run_seed_child(opts->seed_child)
                  : !opts->index_child.empty() ? run_trace_index_child(opts->index_child)
                  : opts->suite == "trace"     ? run_trace_bench({opts->reps, opts->threads, opts->trace_mb, opts->ranks, opts->big_mb,
                                                                  reference_dir(*opts), opts->json})
                  : opts->suite == "compile" ? run_compile_bench(opts->reps, opts->json)
                  : opts->suite == "scale"   ? run_scale_bench(opts->reps, opts->sizes, opts->json)
                  : opts->suite == "minify" && !opts->oracle_python.empty()
                      ? run_minify_oracle_bench(opts->oracle_python, opts->threads, opts->torch_device, opts->graph,
                                                reference_dir(*opts), opts->json)
                  : opts->suite == "minify"  ? run_minify_bench(opts->reps, opts->threads, reference_dir(*opts), opts->json)
                  : opts->suite == "cpu"     ? run_cpu_bench(opts->reps, opts->threads, reference_dir(*opts), opts->json)
                  : opts->suite == "gpu"     ? run_gpu_bench(opts->reps, reference_dir(*opts), opts->graph, opts->dump_cuda, opts->row_elements,
                                                             opts->profile, opts->json)
                                             : run_eager(*opts);
    } catch (const Error& e) {
      std::fprintf(stderr, "kiln-cli: bench: %s\n", e.what());
      exit_code = kExitFailures;
    } catch (const std::filesystem::filesystem_error& e) {  // the temporary folder
      std::fprintf(stderr, "kiln-cli: bench: %s\n", e.what());
      exit_code = kExitFailures;
    }
  });
}

}  // namespace kiln::cli
