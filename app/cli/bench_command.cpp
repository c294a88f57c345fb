// `kiln-cli bench eager`: eager kernel bandwidth against a memory copy of the
// same size measured in the same run (the ceiling), interleaved so that noise
// hits every row alike; medians are reported.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>

#include "app/cli/commands.h"
#include "core/ops/registry.h"
#include "core/tensor/parallel.h"

namespace kiln::cli {
namespace {

struct Options {
  std::string suite;
  int64_t elements = int64_t(16) << 20;
  int reps = 21;
  int threads = 0;
  bool json = false;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class F>
double time_ms(F&& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

struct Row {
  std::string name;
  double bytes;  // bytes read plus written
  std::function<void()> run;
  std::vector<double> ms;
};

int run_eager(const Options& o) {
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
    std::cout << doc.dump(1) << "\n";
  }
  return kExitOk;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("bench", "Benchmarks, as ratios to a ceiling measured in the same run");
  sub->add_option("suite", opts->suite, "which benchmark")->required()->check(CLI::IsMember({"eager"}));
  sub->add_option("--elements", opts->elements, "tensor size for the eager suite")->check(CLI::Range(int64_t(1), int64_t(1) << 32));
  sub->add_option("--reps", opts->reps, "timed repetitions (median reported)")->check(CLI::Range(1, 10000));
  sub->add_option("--threads", opts->threads, "threads (default: all hardware threads)")->check(CLI::Range(0, 1024));
  sub->add_flag("--json", opts->json, "print one JSON document");
  sub->callback([opts, &exit_code] {
    try {
      exit_code = run_eager(*opts);
    } catch (const Error& e) {
      std::fprintf(stderr, "kiln-cli: bench: %s\n", e.what());
      exit_code = kExitFailures;
    }
  });
}

}  // namespace kiln::cli
