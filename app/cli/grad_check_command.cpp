// `kiln-cli grad-check [--corpus DIR] [--finite-diff] [--case ID] [--json]`
#include <CLI/CLI.hpp>

#include <cstdio>

#include "app/cli/case_report.h"
#include "app/cli/commands.h"
#include "compiler/aot/derivatives.h"
#include "compiler/aot/grad_check.h"
#include "core/corpus/conformance.h"

namespace kiln::cli {
namespace {

struct Options {
  std::string corpus;
  std::string only;
  bool finite_diff = false;
  bool json = false;
};

int run(const Options& o) {
  if (o.corpus.empty() && !o.finite_diff) {
    std::fprintf(stderr, "kiln-cli grad-check: give --corpus DIR, --finite-diff, or both\n");
    return kExitUsage;
  }
  std::vector<CaseResult> results;
  if (!o.corpus.empty()) {
    auto corpus = load_corpus(o.corpus);
    if (!corpus) {
      std::fprintf(stderr, "kiln-cli: %s\n", corpus.status().to_string().c_str());
      return kExitBadInput;
    }
    for (const CorpusCase& c : corpus->cases) {
      if (!o.only.empty() && c.id != o.only && c.op != o.only) continue;
      results.push_back(aot::grad_check_case(c));
    }
  }
  if (o.finite_diff) {
    for (const std::string& op : aot::differentiable_ops()) {
      if (!o.only.empty() && op != o.only) continue;
      CaseResult r = aot::finite_difference_check(op);
      r.id = "fd:" + op;
      results.push_back(r);
    }
  }
  return report_cases(results, o.json, {{"formulas", aot::differentiable_ops().size()}});
}

}  // namespace

void add_grad_check_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "grad-check", "Check the derivative formulas against the op corpus' gradients and finite differences");
  sub->add_option("--corpus", opts->corpus, "corpus folder (ops.json + ops.safetensors): compare with PyTorch's gradients");
  sub->add_flag("--finite-diff", opts->finite_diff,
                "check every formula against float64 central differences on sample inputs (case ids fd:OP)");
  sub->add_option("--case", opts->only, "run only the case with this id or op name");
  sub->add_flag("--json", opts->json, "print one JSON document");
  sub->callback([opts, &exit_code] { exit_code = run(*opts); });
}

}  // namespace kiln::cli
