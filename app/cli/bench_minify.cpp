// `kiln-cli bench minify`: the acceptance cases timed. Each reference
// launcher graph (accuracy_cuda, accuracy_cpu) is minified under each of
// Kiln's injected relu bugs with the matching check, -j 2, every candidate in
// its own process. The ceiling is PyTorch's own minifier on the same
// accuracy_cuda graph: 472 s (../shared/reference/minifier/accuracy_cuda/minify.log).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "app/cli/commands.h"
#include "minifier/minify.h"
#include "minifier/repro.h"
#include "core/util/output_text.h"

namespace kiln::cli {

int run_minify_bench(int reps, int jobs, const std::string& reference, bool json) {
  using namespace kiln::minify;
  if (reps <= 0) reps = 3;
  if (jobs <= 0) jobs = 2;
  constexpr double kPytorchMs = 472000;  // PyTorch 2.11's minifier, accuracy_cuda, minify.log
  struct Case {
    const char* file;
    const char* bug;
    CheckKind check;
  };
  const Case cases[] = {
      {"accuracy_cuda", "relu:accuracy", CheckKind::Accuracy},  {"accuracy_cuda", "relu:compile-error", CheckKind::CompileError},
      {"accuracy_cuda", "relu:crash", CheckKind::Crash},        {"accuracy_cpu", "relu:accuracy", CheckKind::Accuracy},
      {"accuracy_cpu", "relu:compile-error", CheckKind::CompileError}, {"accuracy_cpu", "relu:crash", CheckKind::Crash},
  };
  nlohmann::json rows = nlohmann::json::array();
  if (!json)
    std::printf("minify, -j %d, median of %d\n%-36s %8s %8s %7s %6s %9s %8s\n", jobs, reps, "name", "initial", "final", "oracle",
                "cache", "ms", "ratio");
  bool all_ok = true;
  for (const Case& c : cases) {
    const std::string path = reference + "/minifier/" + c.file + "/minifier_launcher.py";
    Expected<Repro> repro = read_repro(path);
    if (!repro) {
      std::fprintf(stderr, "kiln-cli: bench: %s\n", repro.status().to_string().c_str());
      return kExitBadInput;
    }
    std::vector<double> ms;
    MinifyResult last;
    for (int rep = 0; rep < reps; ++rep) {
      MinifyOptions o;
      o.predicate.kind = c.check;
      o.predicate.inject_bug = c.bug;
      o.jobs = jobs;
      auto t0 = std::chrono::steady_clock::now();
      Expected<MinifyResult> r = minify::minify(Candidate{repro->graph, repro->inputs}, o);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      if (!r) {
        std::fprintf(stderr, "kiln-cli: bench: %s %s: %s\n", c.file, c.bug, r.status().message().c_str());
        return kExitFailures;
      }
      last = std::move(*r);
    }
    std::sort(ms.begin(), ms.end());
    const double median = ms[ms.size() / 2];
    std::string name = std::string(c.file) + "_" + c.bug;
    std::replace(name.begin(), name.end(), ':', '_');
    std::replace(name.begin(), name.end(), '-', '_');
    bool single_relu = op_count(last.result.graph) == 1;
    for (const Node& n : last.result.graph.nodes)
      if (n.op == OpKind::CallFunction) single_relu &= n.target == "aten::relu.default";
    all_ok &= single_relu;
    const size_t final_ops = op_count(last.result.graph);
    if (json)
      rows.push_back({{"name", name}, {"ms", median}, {"initial_nodes", last.initial_nodes}, {"final_ops", final_ops},
                      {"oracle_calls", last.stats.oracle_calls}, {"cache_hits", last.stats.cache_hits},
                      {"reference_runs", last.stats.reference_runs}, {"steps", last.steps.size()},
                      {"single_relu", single_relu}, {"ratio_to_ceiling", median / kPytorchMs}, {"meets_target", median < 5000}});
    else
      std::printf("%-36s %8zu %8zu %7d %6d %9.1f %7.4f%%%s\n", name.c_str(), last.initial_nodes, final_ops,
                  last.stats.oracle_calls, last.stats.cache_hits, median, 100 * median / kPytorchMs,
                  single_relu ? "" : "  (not the single relu)");
  }
  if (json) {
    nlohmann::json doc = {{"rows", rows},
                          {"ceiling", {{"name", "pytorch_minifier_accuracy_cuda"}, {"ms", kPytorchMs}, {"oracle_calls", 24}}},
                          {"jobs", jobs},
                          {"reps", reps}};
    std::cout << kiln::json_text(doc, 1) << "\n";
  } else {
    std::printf("ceiling: PyTorch's minifier on accuracy_cuda, %.0f s and 24 queries (minify.log)\n", kPytorchMs / 1000);
  }
  return all_ok ? kExitOk : kExitFailures;
}

}  // namespace kiln::cli
