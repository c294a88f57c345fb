// `kiln-cli conformance --corpus DIR [--backend B] [--json]`
#include <CLI/CLI.hpp>

#include <cstdio>

#include "app/cli/case_report.h"
#include "app/cli/commands.h"
#include "compiler/pipeline/graph_backends.h"
#include "core/corpus/conformance.h"

namespace kiln::cli {
namespace {

struct Options {
  std::string corpus;
  std::string backend = "eager";
  std::string only;
  bool json = false;
  bool compile_only = false;
};

ConformanceBackend make_backend(const std::string& name) {
  if (name == "eager-f64") return eager_f64_backend();
  if (name == "aot_eager") return pipeline::aot_eager_backend();
  if (name == "kiln") return pipeline::kiln_backend();
  if (name == "kiln-cuda") return pipeline::kiln_cuda_backend();
  if (name == "decomp_eager") return pipeline::decomp_eager_backend();
  return eager_backend();
}

int run(const Options& o) {
  auto corpus = load_corpus(o.corpus);
  if (!corpus) {
    std::fprintf(stderr, "kiln-cli: %s\n", corpus.status().to_string().c_str());
    return kExitBadInput;
  }
  if (o.compile_only && o.backend != "kiln-cuda") {
    std::fprintf(stderr, "kiln-cli: --compile-only applies to --backend kiln-cuda only\n");
    return kExitBadInput;
  }
  ConformanceBackend backend = make_backend(o.backend);
  std::vector<CaseResult> results;
  for (const CorpusCase& c : corpus->cases) {
    if (!o.only.empty() && c.id != o.only && c.op != o.only) continue;
    if (!o.compile_only) {
      results.push_back(run_case(c, backend));
      continue;
    }
    // Nothing runs, so nothing is compared: a pass says the kernels were
    // generated and NVRTC compiled them, and the reason says so.
    Expected<std::string> built = pipeline::kiln_cuda_compile_case(c);
    CaseResult r{c.id, c.op, built ? CaseStatus::Pass : CaseStatus::Fail, 0, 0,
                 built ? "compile-only: " + *built : built.status().message()};
    results.push_back(std::move(r));
  }
  return report_cases(results, o.json, {{"backend", o.compile_only ? "kiln-cuda --compile-only" : o.backend}});
}

}  // namespace

void add_conformance_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("conformance", "Run an op corpus through a backend and compare with PyTorch");
  sub->add_option("--corpus", opts->corpus, "corpus folder (ops.json + ops.safetensors)")->required();
  sub->add_option("--backend", opts->backend,
                  "eager: the eager kernels; eager-f64: the eager kernels in float64 (the accuracy reference); "
                  "aot_eager: each case as an ATen graph; decomp_eager: that graph decomposed to core ATen ops; "
                  "kiln: compiled for the CPU; kiln-cuda: compiled for the GPU")
      ->check(CLI::IsMember({"eager", "eager-f64", "aot_eager", "decomp_eager", "kiln", "kiln-cuda"}));
  sub->add_flag("--compile-only", opts->compile_only,
                "kiln-cuda only: generate the CUDA kernels and compile them with NVRTC for sm_90, without a GPU");
  sub->add_option("--case", opts->only, "run only the case with this id or op name");
  sub->add_flag("--json", opts->json, "print one JSON document");
  sub->callback([opts, &exit_code] { exit_code = run(*opts); });
}

}  // namespace kiln::cli
