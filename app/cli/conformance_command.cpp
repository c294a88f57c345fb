// `kiln-cli conformance --corpus DIR [--backend B] [--json]`
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

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
};

ConformanceBackend make_backend(const std::string& name) {
  if (name == "eager-f64") return eager_f64_backend();
  if (name == "aot_eager") return pipeline::aot_eager_backend();
  if (name == "decomp_eager") return pipeline::decomp_eager_backend();
  return eager_backend();
}

int run(const Options& o) {
  auto corpus = load_corpus(o.corpus);
  if (!corpus) {
    std::fprintf(stderr, "kiln-cli: %s\n", corpus.status().to_string().c_str());
    return kExitBadInput;
  }
  ConformanceBackend backend = make_backend(o.backend);
  int passed = 0, failed = 0, skipped = 0;
  nlohmann::json cases = nlohmann::json::array();
  for (const CorpusCase& c : corpus->cases) {
    if (!o.only.empty() && c.id != o.only && c.op != o.only) continue;
    CaseResult r = run_case(c, backend);
    (r.status == CaseStatus::Pass ? passed : r.status == CaseStatus::Fail ? failed : skipped)++;
    if (o.json) {
      cases.push_back({{"id", r.id}, {"op", r.op}, {"status", case_status_name(r.status)},
                       {"max_abs", r.max_abs}, {"max_rel", r.max_rel}, {"reason", r.reason}});
    } else {
      std::printf("%s %s %s max_abs=%.3g max_rel=%.3g%s%s\n", std::string(case_status_name(r.status)).c_str(),
                  r.id.c_str(), r.op.c_str(), r.max_abs, r.max_rel, r.reason.empty() ? "" : " ",
                  r.reason.c_str());
    }
  }
  if (o.json) {
    nlohmann::json doc = {{"passed", passed}, {"failed", failed}, {"skipped", skipped},
                          {"backend", o.backend}, {"cases", cases}};
    std::cout << doc.dump(1) << "\n";
  } else {
    std::printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  }
  return failed ? kExitFailures : kExitOk;
}

}  // namespace

void add_conformance_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("conformance", "Run an op corpus through a backend and compare with PyTorch");
  sub->add_option("--corpus", opts->corpus, "corpus folder (ops.json + ops.safetensors)")->required();
  sub->add_option("--backend", opts->backend,
                  "eager: the eager kernels; eager-f64: the eager kernels in float64 (the accuracy reference); "
                  "aot_eager: each case as an ATen graph; decomp_eager: that graph decomposed to core ATen ops")
      ->check(CLI::IsMember({"eager", "eager-f64", "aot_eager", "decomp_eager"}));
  sub->add_option("--case", opts->only, "run only the case with this id or op name");
  sub->add_flag("--json", opts->json, "print one JSON document");
  sub->callback([opts, &exit_code] { exit_code = run(*opts); });
}

}  // namespace kiln::cli
