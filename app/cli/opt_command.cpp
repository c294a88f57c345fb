// `kiln-cli opt FILE --pass NAME [--pass NAME ...] [--split-input-file]
// [--verify-numerics]`: graph passes one at a time on a graph text, as MLIR's
// mlir-opt runs passes on a file. The result prints in print_readable form, so
// golden tests (tests/golden/passes) check it with LLVM's FileCheck. With
// --split-input-file the file holds several cases separated by `# -----`
// lines, each run alone and printed with the same separator; with
// --verify-numerics each case also runs before and after on random inputs
// through the ATen interpreter, and a difference fails the command (exit 1).
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/cli/commands.h"
#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/constants.h"
#include "compiler/pipeline/pass_manager.h"
#include "core/corpus/conformance.h"
#include "core/graph/parser.h"
#include "core/graph/printer.h"
#include "minifier/repro.h"

namespace kiln::cli {
namespace {

struct OptOptions {
  std::string input;
  std::vector<std::string> passes;
  bool split_input_file = false;
  bool verify_numerics = false;
};

struct Case {
  std::string text;
  int first_line = 1;
};

constexpr const char* kSeparator = "# -----";

std::vector<Case> split_cases(const std::string& text, bool split) {
  std::vector<Case> cases(1);
  if (!split) return {{text, 1}};
  std::istringstream in(text);
  int line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    if (line.rfind(kSeparator, 0) == 0) {
      cases.push_back({"", line_number + 1});
      continue;
    }
    cases.back().text += line + "\n";
  }
  return cases;
}

// Before and after on the same random inputs; "" when they agree.
std::string compare_runs(const Graph& before, const Graph& after, const pipeline::ConstantTable& constants,
                         const std::string& where) {
  // Drawn once per run: a graph that writes its inputs in place would
  // otherwise hand the second run what the first one left.
  auto draw = [&]() -> Expected<std::vector<Value>> {
    Expected<std::vector<Tensor>> inputs = minify::random_inputs(before, 0, where);
    if (!inputs) return inputs.status();
    return std::vector<Value>(inputs->begin(), inputs->end());
  };
  Expected<std::vector<Value>> first = draw(), second = draw();
  if (!first) return first.status().message();
  Expected<std::vector<Value>> want = pipeline::run_aten_graph(before, *first);
  if (!want) return "the input graph does not run: " + want.status().message();
  Expected<std::vector<Value>> got = pipeline::run_with_constants(after, constants, *second);
  if (!got) return "the result does not run: " + got.status().message();
  if (got->size() != want->size())
    return std::to_string(got->size()) + " outputs after, " + std::to_string(want->size()) + " before";
  for (size_t i = 0; i < got->size(); ++i) {
    const Value &g = (*got)[i], &w = (*want)[i];
    if (g.is_tensor() != w.is_tensor()) return "output " + std::to_string(i) + " changed kind";
    if (!g.is_tensor()) continue;
    Comparison c = compare_tensors(g.to_tensor(), w.to_tensor());
    if (!c.ok) return "output " + std::to_string(i) + ": " + c.reason;
  }
  // What each run wrote into its inputs (in place before, by copy_ after functionalize) must agree too.
  for (size_t i = 0; i < first->size() && i < second->size(); ++i) {
    Comparison c = compare_tensors((*second)[i].to_tensor(), (*first)[i].to_tensor());
    if (!c.ok) return "input " + std::to_string(i) + " after the run: " + c.reason;
  }
  return {};
}

int opt(const OptOptions& o) {
  std::ifstream in(o.input, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "kiln-cli: %s: no such file\n", o.input.c_str());
    return kExitBadInput;
  }
  std::stringstream text;
  text << in.rdbuf();
  bool failed = false;
  std::vector<Case> cases = split_cases(text.str(), o.split_input_file);
  for (size_t c = 0; c < cases.size(); ++c) {
    Expected<Graph> parsed = parse_graph_module(cases[c].text, o.input, cases[c].first_line);
    if (!parsed) {
      std::fprintf(stderr, "kiln-cli: %s\n", parsed.status().to_string().c_str());
      return kExitBadInput;
    }
    pipeline::PassManagerOptions pmo;
    pmo.verify_each = true;  // an unchanged pass must leave the graph as it was; provenance checked
    pipeline::PassManager pm(pmo);
    for (const std::string& name : o.passes)
      if (Status s = pm.add(name); !s.ok()) {
        std::fprintf(stderr, "kiln-cli: opt: %s\n", s.message().c_str());
        return kExitUsage;
      }
    Graph g = *parsed;
    pipeline::ConstantTable constants;
    pipeline::PassContext ctx;
    ctx.constants = &constants;
    Status st = pm.run(g, ctx);
    if (c > 0) std::printf("%s\n", kSeparator);
    const std::string where = o.input + ":" + std::to_string(cases[c].first_line);
    if (!st.ok()) {
      std::printf("# failed: %s\n", st.message().c_str());
      std::fprintf(stderr, "kiln-cli: opt: %s: %s\n", where.c_str(), st.message().c_str());
      failed = true;
      continue;
    }
    std::printf("%s", print_graph_module(g).c_str());
    if (o.verify_numerics) {
      if (std::string diff = compare_runs(*parsed, g, constants, where); !diff.empty()) {
        std::printf("# numerics differ: %s\n", diff.c_str());
        std::fprintf(stderr, "kiln-cli: opt: %s: numerics differ after the passes: %s\n", where.c_str(), diff.c_str());
        failed = true;
      }
    }
  }
  std::fflush(stdout);
  return failed ? kExitFailures : kExitOk;
}

}  // namespace

void add_opt_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<OptOptions>();
  CLI::App* sub = app.add_subcommand("opt", "Run graph passes on a graph text and print the result (as mlir-opt)");
  sub->add_option("input", opts->input, "a graph file in print_readable form")->required();
  sub->add_option("--pass", opts->passes, "a pass to run, in order (repeatable): functionalize, decompose, ...")
      ->required();
  sub->add_flag("--split-input-file", opts->split_input_file,
                "the file holds several cases separated by '# -----' lines; each runs alone");
  sub->add_flag("--verify-numerics", opts->verify_numerics,
                "run each case before and after on random inputs and fail when the outputs differ");
  sub->callback([opts, &exit_code] { exit_code = opt(*opts); });
}

}  // namespace kiln::cli
